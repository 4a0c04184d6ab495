/**
 * The warm language service of the compiler tools: one for the process, over
 * two in-memory files, svc's public spec ({@link publicSpec}) and the snippet
 * being checked. Imports from `'svc'` resolve to the spec, never to svc's
 * sources. The spec, the standard library and the packages' declarations are
 * parsed once; a check re-parses the snippet only (the type checker is
 * rebuilt for each new snippet, which is what a warm check costs).
 */
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { publicSpec, REPO_ROOT } from '../../grammar/spec.ts';
import { CompilerFiles } from './files.ts';

/** Where the snippet and the spec live for the compiler: a folder of the package that is never written (the files are in memory). */
const DIR = join(REPO_ROOT, '.svc-mcp');
/** The spec as a file of that folder: a declaration found in it is one of svc's own. */
export const SPEC_FILE = join(DIR, 'svc-spec.d.ts');

/**
 * The compiler options of a checked module: those `svc init` writes into a
 * new project's tsconfig.json (standard decorators, NodeNext, strict).
 */
function checkOptions(): ts.CompilerOptions {
  // @types/node is a devDependency of svc: where svc is installed in an app it may be missing.
  const hasNodeTypes = ts.resolveTypeReferenceDirective('node', join(DIR, '__types__.ts'), {}, ts.sys).resolvedTypeReferenceDirective !== undefined;
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: hasNodeTypes ? ['node'] : [],
    strict: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    skipLibCheck: true,
    noEmit: true,
  };
}

/**
 * A language service over two in-memory files, the spec and the snippet.
 * What it reads from disk goes through {@link CompilerFiles}: the files the
 * spec's own program needs (learnt while that program is built, before any
 * snippet is in it), read once; nothing else of the machine.
 */
class SnippetService {
  readonly ls: ts.LanguageService;
  private snippet = join(DIR, 'snippet.ts');
  private readonly texts = new Map<string, { text: string; version: number }>();
  private readonly disk = new Map<string, ts.IScriptSnapshot | undefined>();

  constructor(spec: string) {
    const options = checkOptions();
    const files = new CompilerFiles(dirname(ts.getDefaultLibFilePath(options)));
    this.texts.set(SPEC_FILE, { text: spec, version: 1 });
    const cache = ts.createModuleResolutionCache(DIR, (f) => f, options);
    const host: ts.LanguageServiceHost = {
      getCompilationSettings: () => options,
      // Until the files are locked, the program is the spec's alone: what it reads is what may be read.
      getScriptFileNames: () => (files.isLocked ? [SPEC_FILE, this.snippet] : [SPEC_FILE]),
      getScriptVersion: (f) => String(this.texts.get(f)?.version ?? 0),
      getScriptSnapshot: (f) => {
        const mem = this.texts.get(f);
        if (mem) return ts.ScriptSnapshot.fromString(mem.text);
        if (!this.disk.has(f)) {
          const text = files.readFile(f);
          // Not remembered when absent: a client could fill the map with names.
          if (text === undefined) return undefined;
          this.disk.set(f, ts.ScriptSnapshot.fromString(text));
        }
        return this.disk.get(f);
      },
      getCurrentDirectory: () => DIR,
      getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
      fileExists: (f) => this.texts.has(f) || files.fileExists(f),
      readFile: (f) => this.texts.get(f)?.text ?? files.readFile(f),
      directoryExists: (d) => d === DIR || files.directoryExists(d),
      getDirectories: (d) => files.getDirectories(d),
      realpath: (p) => (this.texts.has(p) ? p : files.realpath(p)),
      useCaseSensitiveFileNames: () => ts.sys.useCaseSensitiveFileNames,
      // `svc` is the spec's ambient module, never svc's own sources (which `import 'svc'` finds inside the package).
      resolveModuleNameLiterals: (literals, containing, _ref, opts, sf) =>
        literals.map((l) =>
          l.text === 'svc' || l.text.startsWith('svc/')
            ? { resolvedModule: undefined }
            : ts.resolveModuleName(l.text, containing, opts, host, cache, undefined, ts.getModeForUsageLocation(sf, l, opts)),
        ),
    };
    this.ls = ts.createLanguageService(host, ts.createDocumentRegistry());
    // The spec's program, built on the disk as it is; then only what it read stays readable.
    this.ls.getProgram();
    files.lock();
  }

  /** Make `code` the snippet (named `filename`) and return the program that has it. */
  load(code: string, filename: string): { program: ts.Program; sf: ts.SourceFile; file: string } {
    const file = join(DIR, filename);
    if (file !== this.snippet) {
      this.texts.delete(this.snippet);
      this.snippet = file;
    }
    const prev = this.texts.get(file);
    if (!prev || prev.text !== code) this.texts.set(file, { text: code, version: (prev?.version ?? 0) + 1 });
    const program = this.ls.getProgram();
    const sf = program?.getSourceFile(file);
    if (!program || !sf) throw new Error('the language service has no program for the snippet');
    return { program, sf, file };
  }
}

let service: Promise<SnippetService> | undefined;

/**
 * The language service of this thread, made at the first call (a failed
 * build is not kept: the next call tries again).
 *
 * @example
 * const { program, sf } = (await snippetService()).load(code, 'snippet.ts');
 */
export function snippetService(): Promise<SnippetService> {
  service ??= publicSpec()
    .then((spec) => new SnippetService(spec))
    .catch((error: unknown) => {
      service = undefined;
      throw error;
    });
  return service;
}

/**
 * The language service the tools share, once made (for tests: the same
 * instance on every call means checks stay warm).
 *
 * @example
 * await validateSvc({ code });
 * const ls = await languageService(); // same object on every call
 */
export async function languageService(): Promise<ts.LanguageService> {
  return (await snippetService()).ls;
}
