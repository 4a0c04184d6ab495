/**
 * The compiler tools of the tool server — `validate_svc`, `check_syntax`,
 * `get_ast`, `lint_svc` — acting on one TypeScript svc module with the
 * TypeScript compiler API. Imports from `'svc'` resolve to the generated
 * public spec ({@link publicSpec}), never to svc's sources.
 *
 * One language service stays warm for the process: the spec, the standard
 * library and the packages' declarations are parsed once; a check re-parses
 * the snippet only (the type checker is rebuilt for each new snippet, which
 * is what a warm check costs).
 *
 * The svc checks (run by `validateSvc` and `lintSvc`), by rule name:
 * - `svc/walker-without-entry` (warning): a non-abstract class extending
 *   `Walker` with no `@entry` method of its own or of a base class in the
 *   module, and no node class of the module with an ability naming it —
 *   spawned, it does nothing.
 * - `svc/unknown-field` (error): `this.x` (or `v.x` on a value of one of the
 *   module's node, edge or walker classes) where `x` is neither a field of
 *   the class's `static has` nor a property, accessor or method it declares
 *   or inherits (from its bases or from svc's `Walker`/`Node`/`Edge`).
 * - `svc/undeclared-field` (error): `this.x` where `x` is a field of
 *   `static has` the class does not declare (`declare x: string`).
 * - `svc/field-not-in-has` (warning): `declare x` on a node, edge or walker
 *   class when `x` is not in `static has`: a walker never gets it from the
 *   request, a node or edge never stores it.
 * - `svc/field-initializer` (error): a node or edge field of `static has`
 *   given a class-field initializer (`title = ''`): the own property hides
 *   the stored field, writes are never committed (svc refuses such an app
 *   at start).
 * - `await-graph-op` (warning, also a lint rule): a node method's promise
 *   (`here.connect(…)`, `out(…)`) used as a value without `await`.
 * - An import of another module (`./helpers.ts`), of a subpath of svc
 *   (`svc/testing`), of a package or of any path is a warning, not an error:
 *   one module is checked, against `'svc'` alone; what it imports from there
 *   is not type-checked. Nothing of the machine is read for it: the compiler
 *   reads the spec, TypeScript's lib files and the declarations the spec is
 *   made of (typebox, Node's types), nothing else (tools/compiler-files.ts) —
 *   `import … from '/etc/…'` is "not checked" whether the file exists or not.
 * - `svc/ability-type` (error): `@entry(X)` / `@exit(X)` where `X` is not a
 *   node, edge or walker class (nor a thunk `() => X` returning one, nor the
 *   name of one); or is one of the wrong side — a walker's abilities react to
 *   node classes, a node's to walker classes; or the decorated method is not
 *   on a walker or node class. A class *name* (`@entry('Todo')`) that no
 *   class of the module has is a warning: another module may declare it.
 * - `svc/public-spawns-private` (warning): inside a *public context* — the
 *   body of a walker class with `static access = 'pub'`, the body of a hook
 *   walker (its name starts with `_`: hooks run before every route, for
 *   anonymous callers too), or the handler of `fn({ access: 'pub' }, …)` —
 *   a call `….spawn(X, …)` or `spawn(X, …)` whose first argument is a walker
 *   class of the module, or its name, whose access is not `'pub'`. A spawn
 *   does not check access: an anonymous caller would run the private walker
 *   (on the shared guest graph).
 * - `svc/access-value` (error): `static access` on a walker whose value is
 *   not `'pub'`, `'priv'` or `'protect'` (the router would treat it as
 *   private without a word); a warning when it is not a literal, or when it
 *   is on a node or edge class (where svc never reads it).
 */
import { dirname, join, posix } from 'node:path';
import ts from 'typescript';
import { publicSpec, REPO_ROOT } from '../grammar/spec.ts';
import { checkSize, ToolInputError, type ToolResult } from '../types.ts';
import { CompilerFiles } from './compiler-files.ts';

/** Where the snippet and the spec live for the compiler: a folder of the package that is never written (the files are in memory). */
const DIR = join(REPO_ROOT, '.svc-mcp');
const SPEC_FILE = join(DIR, 'svc-spec.d.ts');

/**
 * One problem: 1-based line and column.
 *
 * @example
 * const p: Problem = { line: 3, col: 22, message: "Property 'nope' does not exist on type 'Root'." };
 */
export interface Problem {
  line: number;
  col: number;
  message: string;
  /** `TS2339` for a TypeScript diagnostic, the rule for an svc check (`svc/unknown-field`): what `explain_error` takes too. */
  code?: string;
}

/**
 * One lint finding; `severity` only on compiler (syntax) errors.
 *
 * @example
 * const v: Violation = { line: 2, col: 1, message: 'use let or const instead of var', rule: 'no-var' };
 */
export interface Violation extends Problem {
  rule: string;
  severity?: 'error';
}

/** What an svc check found, at a position of the snippet. */
interface Finding {
  start: number;
  rule: string;
  severity: 'error' | 'warning';
  message: string;
}

// ---- the warm language service --------------------------------------------

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

function snippetService(): Promise<SnippetService> {
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

let warmed = false;

/**
 * Whether this thread's language service is built and has checked a module
 * (a call now pays no warm-up).
 *
 * @example await warmUp(); isWarm() // true
 */
export function isWarm(): boolean {
  return warmed;
}

/**
 * Build the spec and the language service and check a small module, so
 * that the first real call is warm (the first check costs seconds). Call it
 * when the tool server starts.
 *
 * @example
 * void warmUp().catch((e) => log.warn(e));
 */
export async function warmUp(): Promise<void> {
  await validateSvc({ code: "import { Walker } from 'svc';\nexport class W extends Walker {}\n" });
}

// ---- validate_svc -------------------------------------------------------------

const FILENAME = /^(?:[\w.-]+\/)*[\w-][\w.-]*\.(?:ts|mts|cts|tsx)$/;

/**
 * Type-check an svc module against svc's public spec and run the svc checks
 * (listed in this file's header). `errors` are TypeScript's errors and the
 * svc checks' errors; `warnings` the svc checks' warnings. `valid` when
 * there are no errors. Lines and columns are 1-based. Throws
 * `ToolInputError` for code over 100 KB or a bad `filename` (a relative
 * `.ts`/`.mts`/`.cts`/`.tsx` path without `..`).
 *
 * @example
 * await validateSvc({ code: "import { Walker } from 'svc';\nexport class W extends Walker {}\n" });
 * // { valid: true, errors: [], warnings: [{ line: 2, col: 14, message: 'W has no @entry ability: …' }] }
 */
export async function validateSvc(args: { code: string; filename?: string }): Promise<ToolResult> {
  const { code, filename = 'snippet.ts' } = args ?? {};
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  if (typeof filename !== 'string' || !FILENAME.test(filename) || filename.endsWith('.d.ts') || filename.split('/').includes('..') || filename === posix.basename(SPEC_FILE)) {
    throw new ToolInputError('filename must be a relative .ts, .mts, .cts or .tsx path such as app.ts');
  }
  const svc = await snippetService();
  const { program, sf, file } = svc.load(code, filename);
  // TypeScript first: the svc checks then read types the full check has already resolved.
  const diagnostics = [...svc.ls.getSyntacticDiagnostics(file), ...svc.ls.getSemanticDiagnostics(file)];
  warmed = true;
  const findings = safeSvcChecks(sf, program);
  // Where an svc check explains a missing property, TypeScript's own error there is the same problem said less well.
  const explained = new Set(findings.filter((f) => f.rule === 'svc/unknown-field' || f.rule === 'svc/undeclared-field').map((f) => f.start));
  const errors: Problem[] = [];
  const warnings: Problem[] = [];
  for (const d of diagnostics) {
    // 2339: no such property; 2551: no such property, did you mean …
    if ((d.code === 2339 || d.code === 2551) && d.start !== undefined && explained.has(d.start)) continue;
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const p = { ...at(sf, d.start ?? 0), message, code: `TS${d.code}` };
    // 2307 (cannot find module): another module of the app, a subpath of svc, a package or a path is outside what is
    // checked (nothing but svc's spec and the declarations it is made of is read). Node's own modules are all known.
    const module = d.code === 2307 ? /'([^']+)'/.exec(message)?.[1] : undefined;
    if (module !== undefined && !module.startsWith('node:')) {
      warnings.push({ ...p, message: `${module} is not checked: validate_svc checks one module against 'svc'; what it imports from ${module} is typed any` });
      continue;
    }
    (d.category === ts.DiagnosticCategory.Error ? errors : warnings).push(p);
  }
  for (const f of findings) (f.severity === 'error' ? errors : warnings).push({ ...at(sf, f.start), message: f.message, code: f.rule });
  // A missing await is the commonest svc mistake and type-checks: say so here too, not only in lint_svc.
  for (const f of unawaitedGraphOps(sf, program.getTypeChecker())) warnings.push({ ...at(sf, f.start), message: f.message, code: f.rule });
  const byPosition = (a: Problem, b: Problem) => a.line - b.line || a.col - b.col;
  return { valid: errors.length === 0, errors: errors.sort(byPosition), warnings: warnings.sort(byPosition) };
}

function at(sf: ts.SourceFile, pos: number): { line: number; col: number } {
  const { line, character } = sf.getLineAndCharacterOfPosition(Math.min(pos, sf.text.length));
  return { line: line + 1, col: character + 1 };
}

// ---- the svc checks -------------------------------------------------------------

type Kind = 'walker' | 'node' | 'edge';

interface ClassFacts {
  decl: ts.ClassDeclaration;
  name: string;
  kind: Kind | undefined;
  /** The fields of `static has`; undefined when they cannot be known (a schema typed `any`). */
  fields: Map<string, ts.Type> | undefined;
  access: ts.Expression | undefined;
}

const ACCESS = ['pub', 'priv', 'protect'];
const ACCESS_HINT: Record<string, string> = { public: 'pub', private: 'priv', protected: 'protect' };
const SCHEMA_TYPES: Record<string, string> = { TString: 'string', TNumber: 'number', TInteger: 'number', TBoolean: 'boolean', TNull: 'null', TArray: 'unknown[]', TObject: 'Record<string, unknown>' };

/** What the svc checks need of a program: the checker and svc's own declarations in the spec. */
class Facts {
  readonly checker: ts.TypeChecker;
  readonly classes = new Map<ts.ClassDeclaration, ClassFacts>();
  readonly byName = new Map<string, ClassFacts>();

  constructor(readonly sf: ts.SourceFile, program: ts.Program) {
    this.checker = program.getTypeChecker();
    const visit = (n: ts.Node): void => {
      if (ts.isClassDeclaration(n) && n.name) {
        const facts = this.classFacts(n);
        this.classes.set(n, facts);
        if (!this.byName.has(facts.name)) this.byName.set(facts.name, facts);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }

  /** The name of the svc declaration a symbol is (through imports), if it is one. */
  svcName(symbol: ts.Symbol | undefined): string | undefined {
    if (!symbol) return undefined;
    const s = symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol;
    return s.declarations?.some((d) => d.getSourceFile().fileName === SPEC_FILE) ? s.name : undefined;
  }

  /** Node, edge or walker: what svc class an instance type derives from. */
  kindOf(type: ts.Type | undefined, seen = new Set<ts.Type>()): Kind | undefined {
    if (!type || seen.has(type)) return undefined;
    seen.add(type);
    const name = this.svcName(type.getSymbol());
    if (name === 'Walker') return 'walker';
    if (name === 'Node' || name === 'Root') return 'node';
    if (name === 'Edge' || name === 'GenericEdge') return 'edge';
    if (!type.isClassOrInterface()) return undefined;
    for (const base of this.checker.getBaseTypes(type)) {
      const k = this.kindOf(base, seen);
      if (k) return k;
    }
    return undefined;
  }

  instanceType(decl: ts.ClassDeclaration): ts.Type | undefined {
    const symbol = decl.name && this.checker.getSymbolAtLocation(decl.name);
    return symbol && this.checker.getDeclaredTypeOfSymbol(symbol);
  }

  private classFacts(decl: ts.ClassDeclaration): ClassFacts {
    const symbol = this.checker.getSymbolAtLocation(decl.name as ts.Identifier);
    const kind = this.kindOf(this.instanceType(decl));
    let fields: Map<string, ts.Type> | undefined = new Map();
    const has = symbol && this.checker.getTypeOfSymbol(symbol).getProperty('has');
    if (has) {
      const schema = this.checker.getTypeOfSymbol(has);
      const props = schema.getProperty('properties');
      if (schema.flags & ts.TypeFlags.Any || !props) fields = undefined;
      else for (const p of this.checker.getTypeOfSymbol(props).getProperties()) fields.set(p.name, this.checker.getTypeOfSymbol(p));
    }
    const accessMember = decl.members.find((m) => ts.isPropertyDeclaration(m) && isStatic(m) && m.name.getText() === 'access') as ts.PropertyDeclaration | undefined;
    return { decl, name: (decl.name as ts.Identifier).text, kind, fields, access: accessMember?.initializer };
  }

  /** The svc class an ability's type argument names, or why it names none. */
  abilityTarget(arg: ts.Expression): { facts?: ClassFacts; kind?: Kind | 'svc-walker'; name: string } | 'not-a-class' | 'unknown-name' | 'unresolved' {
    if (ts.isStringLiteralLike(arg)) {
      const facts = this.byName.get(arg.text);
      if (facts) return { facts, kind: facts.kind, name: arg.text };
      const builtIn: Record<string, Kind> = { Node: 'node', Root: 'node', Edge: 'edge', GenericEdge: 'edge', Walker: 'walker' };
      const k = builtIn[arg.text];
      return k ? { kind: k, name: arg.text } : 'unknown-name';
    }
    let expr: ts.Expression = arg;
    if (ts.isArrowFunction(expr) || ts.isFunctionExpression(expr)) {
      const body = expr.body;
      const returned = ts.isBlock(body) ? body.statements.find(ts.isReturnStatement)?.expression : body;
      if (!returned) return 'not-a-class';
      expr = returned;
    }
    const type = this.checker.getTypeAtLocation(expr);
    if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return 'unresolved';
    const instance = type.getConstructSignatures()[0]?.getReturnType();
    if (!instance) return 'not-a-class';
    const decl = instance.getSymbol()?.declarations?.find(ts.isClassDeclaration);
    const facts = decl && this.classes.get(decl);
    return { ...(facts ? { facts } : {}), kind: this.kindOf(instance), name: expr.getText(this.sf) };
  }

  /** `entry` or `exit` when the decorator is svc's. */
  abilityKind(dec: ts.Decorator): 'entry' | 'exit' | undefined {
    const call = dec.expression;
    if (!ts.isCallExpression(call)) return undefined;
    const callee = ts.isPropertyAccessExpression(call.expression) ? call.expression.name : call.expression;
    const name = this.svcName(this.checker.getSymbolAtLocation(callee));
    return name === 'entry' || name === 'exit' ? name : undefined;
  }

  /** The access a walker class declares, as a literal; 'priv' when none; undefined when it is not a literal. */
  accessOf(facts: ClassFacts): string | undefined {
    if (!facts.access) return 'priv';
    const e = unwrap(facts.access);
    return ts.isStringLiteralLike(e) ? e.text : undefined;
  }
}

function isStatic(m: ts.ClassElement): boolean {
  return (ts.getModifiers(m as ts.HasModifiers) ?? []).some((x) => x.kind === ts.SyntaxKind.StaticKeyword);
}

function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e) || ts.isTypeAssertionExpression(e)) e = e.expression;
  return e;
}

/** The methods with svc `@entry`/`@exit` decorators of a class. */
function abilities(facts: Facts, decl: ts.ClassDeclaration): { method: ts.MethodDeclaration; kind: 'entry' | 'exit'; dec: ts.Decorator }[] {
  const out: { method: ts.MethodDeclaration; kind: 'entry' | 'exit'; dec: ts.Decorator }[] = [];
  for (const m of decl.members) {
    if (!ts.isMethodDeclaration(m)) continue;
    for (const dec of ts.getDecorators(m) ?? []) {
      const kind = facts.abilityKind(dec);
      if (kind) out.push({ method: m, kind, dec });
    }
  }
  return out;
}

/**
 * The svc checks, where a check that fails on unusual code is reported as a
 * warning naming the failure (TypeScript's diagnostics still come back).
 */
function safeSvcChecks(sf: ts.SourceFile, program: ts.Program): Finding[] {
  try {
    return svcChecks(new Facts(sf, program));
  } catch (error) {
    return [{ start: 0, rule: 'svc/internal', severity: 'warning', message: `the svc checks failed on this module (${error instanceof Error ? error.message : String(error)}); only TypeScript's diagnostics are reported` }];
  }
}

/** Every svc check over the snippet (see this file's header). */
function svcChecks(facts: Facts): Finding[] {
  return [...checkAbilities(facts), ...checkWalkersHaveEntry(facts), ...checkFields(facts), ...checkAccess(facts), ...checkPublicSpawns(facts)];
}

function checkAbilities(facts: Facts): Finding[] {
  const out: Finding[] = [];
  for (const [decl, cls] of facts.classes) {
    for (const { kind, dec } of abilities(facts, decl)) {
      const call = dec.expression as ts.CallExpression;
      if (cls.kind !== 'walker' && cls.kind !== 'node') {
        out.push({ start: dec.getStart(), rule: 'svc/ability-type', severity: 'error', message: `@${kind} on ${cls.name}: abilities run on walker and node classes only, and ${cls.name} is ${cls.kind === 'edge' ? 'an edge' : 'neither'}` });
        continue;
      }
      const want: Kind = cls.kind === 'walker' ? 'node' : 'walker';
      for (const arg of call.arguments) {
        const target = facts.abilityTarget(arg);
        const label = arg.getText(facts.sf);
        const start = arg.getStart();
        if (target === 'unresolved') continue;
        if (target === 'unknown-name') {
          out.push({ start, rule: 'svc/ability-type', severity: 'warning', message: `@${kind}(${label}) on ${cls.name}: no class of this module is named ${label} (fine only if another module of the app declares it)` });
        } else if (target === 'not-a-class') {
          out.push({ start, rule: 'svc/ability-type', severity: 'error', message: `@${kind}(${label}) on ${cls.name}: abilities take ${want} classes, thunks returning one (() => X) or class names` });
        } else if (target.kind === undefined) {
          out.push({ start, rule: 'svc/ability-type', severity: 'error', message: `@${kind}(${label}) on ${cls.name}: ${target.name} is not a Node, Edge or Walker class` });
        } else if (target.kind !== want) {
          const why = cls.kind === 'walker' ? 'a walker\'s abilities react to the node classes it visits' : 'a node\'s abilities react to the walker classes that visit it';
          out.push({ start, rule: 'svc/ability-type', severity: 'error', message: `@${kind}(${label}) on ${cls.name}: ${target.name} is ${target.kind === 'edge' ? 'an edge' : `a ${target.kind}`} class; ${why}, so this ability never runs` });
        }
      }
    }
  }
  return out;
}

function checkWalkersHaveEntry(facts: Facts): Finding[] {
  // Walkers a node class of the module reacts to (by class or name), or all when a node has an ability for any walker.
  const named = new Set<string>();
  let anyWalker = false;
  for (const [decl, cls] of facts.classes) {
    if (cls.kind !== 'node') continue;
    for (const { dec } of abilities(facts, decl)) {
      const args = (dec.expression as ts.CallExpression).arguments;
      if (args.length === 0) anyWalker = true;
      for (const a of args) {
        const t = facts.abilityTarget(a);
        if (typeof t === 'object') named.add(t.facts?.name ?? t.name);
      }
    }
  }
  const out: Finding[] = [];
  for (const [decl, cls] of facts.classes) {
    if (cls.kind !== 'walker' || anyWalker || named.has(cls.name)) continue;
    if ((ts.getModifiers(decl) ?? []).some((m) => m.kind === ts.SyntaxKind.AbstractKeyword)) continue;
    let hasEntry = false;
    let known = true;
    for (let c: ClassFacts | undefined = cls; c && !hasEntry; ) {
      hasEntry = abilities(facts, c.decl).some((a) => a.kind === 'entry');
      const base: ts.Expression | undefined = c.decl.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
      const baseType: ts.Type | undefined = base && facts.checker.getTypeAtLocation(base).getConstructSignatures()[0]?.getReturnType();
      if (facts.svcName(baseType?.getSymbol()) === 'Walker') break;
      const baseDecl: ts.ClassDeclaration | undefined = baseType?.getSymbol()?.declarations?.find(ts.isClassDeclaration);
      c = baseDecl && facts.classes.get(baseDecl);
      if (!c) known = false;
    }
    if (hasEntry || !known) continue;
    out.push({
      start: (decl.name as ts.Identifier).getStart(),
      rule: 'svc/walker-without-entry',
      severity: 'warning',
      message: `${cls.name} has no @entry ability: spawned, it does nothing (add e.g. @entry(Root) start(here: Root) { … })`,
    });
  }
  return out;
}

/** The class of `this` at a node: the nearest class whose `this` it is (arrow functions keep it; functions do not). */
function thisClass(n: ts.Node): ts.ClassDeclaration | undefined {
  for (let p = n.parent; p; p = p.parent) {
    if (ts.isClassDeclaration(p)) return p;
    if (ts.isFunctionDeclaration(p) || ts.isFunctionExpression(p) || ts.isClassExpression(p)) return undefined;
  }
  return undefined;
}

function checkFields(facts: Facts): Finding[] {
  const out: Finding[] = [];
  const { checker } = facts;
  const visit = (n: ts.Node): void => {
    // A name that resolves is a member: only unresolved ones are looked at further.
    if (ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.name) && !checker.getSymbolAtLocation(n.name)) {
      let cls: ClassFacts | undefined;
      if (n.expression.kind === ts.SyntaxKind.ThisKeyword) {
        const decl = thisClass(n);
        cls = decl && facts.classes.get(decl);
      } else {
        const decl = checker.getTypeAtLocation(n.expression).getSymbol()?.declarations?.find(ts.isClassDeclaration);
        cls = decl && facts.classes.get(decl);
      }
      const type = cls && facts.instanceType(cls.decl);
      const name = n.name.text;
      if (cls?.kind && type && cls.fields && !isStaticReceiver(checker, n) && !checker.getPropertyOfType(type, name)) {
        const schema = cls.fields.get(name);
        if (schema) {
          const t = SCHEMA_TYPES[schema.getSymbol()?.name ?? ''] ?? 'unknown';
          out.push({ start: n.name.getStart(), rule: 'svc/undeclared-field', severity: 'error', message: `${cls.name}.${name} is a field of static has but the class does not declare it: add \`declare ${name}: ${t};\`` });
        } else {
          const known = [...cls.fields.keys()];
          out.push({
            start: n.name.getStart(),
            rule: 'svc/unknown-field',
            severity: 'error',
            message: `${cls.name} has no field or member ${name}: ${known.length > 0 ? `its static has declares ${known.join(', ')}` : 'it has no static has fields'}; add ${name} to static has (and \`declare ${name}: …\`) or declare the member`,
          });
        }
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(facts.sf);
  for (const cls of facts.classes.values()) {
    if (!cls.kind || !cls.fields) continue;
    for (const m of cls.decl.members) {
      if (!ts.isPropertyDeclaration(m) || isStatic(m) || !ts.isIdentifier(m.name)) continue;
      const name = m.name.text;
      const declared = (ts.getModifiers(m) ?? []).some((x) => x.kind === ts.SyntaxKind.DeclareKeyword);
      if (declared && !cls.fields.has(name)) {
        const why = cls.kind === 'walker' ? 'the request never fills it' : `svc never stores it (it is lost when the ${cls.kind} is loaded again)`;
        out.push({ start: m.name.getStart(), rule: 'svc/field-not-in-has', severity: 'warning', message: `${cls.name} declares ${name}, which is not a field of its static has: ${why}` });
      } else if (!declared && m.initializer && cls.kind !== 'walker' && cls.fields.has(name)) {
        out.push({ start: m.name.getStart(), rule: 'svc/field-initializer', severity: 'error', message: `${cls.name}.${name} has an initializer: the own property hides the stored field and writes to it are never committed; write \`declare ${name}: …\` and give a default in the schema` });
      }
    }
  }
  return out;
}

/** `Cls.x` (static side), which the field check leaves alone. */
function isStaticReceiver(checker: ts.TypeChecker, n: ts.PropertyAccessExpression): boolean {
  return checker.getTypeAtLocation(n.expression).getConstructSignatures().length > 0;
}

function checkAccess(facts: Facts): Finding[] {
  const out: Finding[] = [];
  for (const cls of facts.classes.values()) {
    if (!cls.access || !cls.kind) continue;
    const start = cls.access.getStart();
    if (cls.kind !== 'walker') {
      out.push({ start, rule: 'svc/access-value', severity: 'warning', message: `static access on ${cls.kind} class ${cls.name} is never read: access applies to walkers; grant access to nodes with permGrant/allowRoot` });
      continue;
    }
    const literal = unwrap(cls.access);
    const values = ts.isStringLiteralLike(literal) ? [literal.text] : literalStrings(facts.checker.getTypeAtLocation(cls.access));
    if (!values) {
      out.push({ start, rule: 'svc/access-value', severity: 'warning', message: `static access of ${cls.name} is not a literal: svc cannot check it; write 'pub', 'priv' or 'protect'` });
      continue;
    }
    for (const v of values) {
      if (ACCESS.includes(v)) continue;
      const hint = ACCESS_HINT[v.toLowerCase()];
      out.push({ start, rule: 'svc/access-value', severity: 'error', message: `static access of ${cls.name} is '${v}', not one of 'pub', 'priv', 'protect'${hint ? ` (did you mean '${hint}'?)` : ''}: svc would treat the walker as private` });
    }
  }
  return out;
}

/** The string literals a type is (a union of them), or undefined. */
function literalStrings(type: ts.Type): string[] | undefined {
  const parts = type.isUnion() ? type.types : [type];
  const out: string[] = [];
  for (const p of parts) {
    if (!p.isStringLiteral()) return undefined;
    out.push(p.value);
  }
  return out;
}

function checkPublicSpawns(facts: Facts): Finding[] {
  const out: Finding[] = [];
  const contexts: { node: ts.Node; what: string }[] = [];
  for (const cls of facts.classes.values()) {
    if (cls.kind !== 'walker') continue;
    if (facts.accessOf(cls) === 'pub') contexts.push({ node: cls.decl, what: `public walker ${cls.name}` });
    else if (cls.name.startsWith('_')) contexts.push({ node: cls.decl, what: `hook walker ${cls.name} (hooks run for every request, anonymous ones too)` });
  }
  const findFns = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && facts.svcName(facts.checker.getSymbolAtLocation(n.expression)) === 'fn') {
      const [opts, handler] = n.arguments;
      const access = opts && ts.isObjectLiteralExpression(opts) ? opts.properties.find((p) => p.name?.getText() === 'access') : undefined;
      const value = access && ts.isPropertyAssignment(access) ? unwrap(access.initializer) : undefined;
      if (handler && value && ts.isStringLiteralLike(value) && value.text === 'pub') {
        const owner = ts.isVariableDeclaration(n.parent) ? n.parent.name.getText() : 'a function';
        contexts.push({ node: handler, what: `public function ${owner}` });
      }
    }
    ts.forEachChild(n, findFns);
  };
  findFns(facts.sf);
  for (const { node, what } of contexts) {
    const visit = (n: ts.Node): void => {
      if (n !== node && ts.isClassDeclaration(n)) return;
      if (ts.isCallExpression(n) && n.arguments[0]) {
        const callee = n.expression;
        const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : undefined;
        const target = name === 'spawn' ? spawnTarget(facts, n.arguments[0]) : undefined;
        const access = target && facts.accessOf(target);
        if (target && access !== undefined && access !== 'pub') {
          out.push({
            start: n.arguments[0].getStart(),
            rule: 'svc/public-spawns-private',
            severity: 'warning',
            message: `${what} spawns ${target.name}, whose access is '${access}': spawn() does not check access, so a caller without a token runs ${target.name} (on the shared guest graph); make ${target.name} 'pub' if that is meant, or the caller private`,
          });
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(node);
  }
  return out;
}

function spawnTarget(facts: Facts, arg: ts.Expression): ClassFacts | undefined {
  const e = unwrap(arg);
  if (ts.isStringLiteralLike(e)) {
    const f = facts.byName.get(e.text);
    return f?.kind === 'walker' ? f : undefined;
  }
  const symbol = facts.checker.getSymbolAtLocation(e);
  const decl = symbol?.declarations?.find(ts.isClassDeclaration);
  const f = decl && facts.classes.get(decl);
  return f?.kind === 'walker' ? f : undefined;
}

// ---- check_syntax -----------------------------------------------------------------

/** Parse `code` alone (no types, no imports) and return TypeScript's syntactic diagnostics. */
function syntaxErrors(code: string, filename = 'snippet.ts'): { sf: ts.SourceFile; errors: Problem[] } {
  const sf = ts.createSourceFile(filename, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const options: ts.CompilerOptions = { noLib: true, noResolve: true, types: [], noEmit: true };
  const host = ts.createCompilerHost(options);
  host.getSourceFile = (f) => (f === filename ? sf : undefined);
  host.fileExists = (f) => f === filename;
  host.readFile = (f) => (f === filename ? code : undefined);
  const program = ts.createProgram([filename], options, host);
  const errors = program.getSyntacticDiagnostics(sf).map((d) => ({ ...at(sf, d.start ?? 0), message: ts.flattenDiagnosticMessageText(d.messageText, '\n') }));
  return { sf, errors };
}

/**
 * Parse-only check: does `code` parse as TypeScript? `errors` are the
 * syntactic diagnostics (1-based line and column); no types are checked.
 *
 * @example
 * await checkSyntax({ code: 'const x = ;' });
 * // { valid: false, errors: [{ line: 1, col: 11, message: 'Expression expected.' }] }
 */
export async function checkSyntax(args: { code: string }): Promise<ToolResult> {
  const code = args?.code;
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  const { errors } = syntaxErrors(code);
  return { valid: errors.length === 0, errors };
}

// ---- get_ast ----------------------------------------------------------------------

/**
 * The most AST nodes `getAst` returns; larger trees are cut (`truncated: true`).
 *
 * @example
 * (await getAst({ code: hugeCode })).node_count <= AST_NODE_LIMIT // true
 */
export const AST_NODE_LIMIT = 5000;
const AST_DEPTH_LIMIT = 64;

/**
 * Kind names by number. `ts.SyntaxKind[kind]` would give marker aliases for
 * some (`FirstStatement` for `VariableStatement`, `FirstLiteralToken` for
 * `NumericLiteral`): the real names are preferred.
 */
const KIND_NAMES = (() => {
  const names = new Map<number, string>();
  for (const [name, value] of Object.entries(ts.SyntaxKind)) {
    if (typeof value !== 'number') continue;
    const marker = /^(First|Last)[A-Z]/.test(name) || name === 'Count';
    const known = names.get(value);
    if (known === undefined || (!marker && /^(First|Last)[A-Z]/.test(known))) names.set(value, name);
  }
  return names;
})();

interface AstNode {
  kind: string;
  name?: string;
  start: [number, number];
  end: [number, number];
  children?: AstNode[];
}

/** What a node is called, for reading: an identifier's or literal's text, a declaration's name. */
function label(n: ts.Node, sf: ts.SourceFile): string | undefined {
  if (ts.isIdentifier(n) || ts.isPrivateIdentifier(n)) return n.text;
  if (ts.isStringLiteralLike(n) || ts.isNumericLiteral(n) || ts.isBigIntLiteral(n)) {
    const t = n.getText(sf);
    return t.length > 40 ? `${t.slice(0, 39)}…` : t;
  }
  const name = (n as { name?: ts.Node }).name;
  return name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) ? name.text : undefined;
}

/**
 * The syntax tree of `code` (parsed only): `format: 'tree'` (default) an
 * indented text, one node a line — `Kind name @line:col-line:col`; `'json'`
 * nested `{kind, name?, start: [line, col], end: [line, col], children?}`.
 * At most {@link AST_NODE_LIMIT} nodes and 64 levels (`truncated` says when
 * cut). Throws `ToolInputError` for another format or code over 100 KB.
 *
 * @example
 * await getAst({ code: 'let a = 1;' });
 * // { ast: 'SourceFile @1:1-1:11\n  VariableStatement @1:1-1:11\n    VariableDeclarationList @1:1-1:10\n'
 * //      + '      VariableDeclaration a @1:5-1:10\n        Identifier a @1:5-1:6\n        NumericLiteral 1 @1:9-1:10\n'
 * //      + '  EndOfFileToken @1:11-1:11', node_count: 7, truncated: false }
 */
export async function getAst(args: { code: string; format?: 'tree' | 'json' }): Promise<ToolResult> {
  const { code, format = 'tree' } = args ?? {};
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  if (format !== 'tree' && format !== 'json') throw new ToolInputError(`format must be 'tree' or 'json', not ${JSON.stringify(format)}`);
  const sf = ts.createSourceFile('snippet.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  let count = 0;
  let truncated = false;
  const pos = (p: number): [number, number] => {
    const { line, col } = at(sf, p);
    return [line, col];
  };
  const build = (n: ts.Node, depth: number): AstNode => {
    count++;
    const node: AstNode = { kind: KIND_NAMES.get(n.kind) ?? String(n.kind), start: pos(n.getStart(sf)), end: pos(n.end) };
    const name = label(n, sf);
    if (name !== undefined) node.name = name;
    const children: AstNode[] = [];
    ts.forEachChild(n, (c) => {
      if (count >= AST_NODE_LIMIT || depth >= AST_DEPTH_LIMIT) {
        truncated = true;
        return true;
      }
      children.push(build(c, depth + 1));
      return undefined;
    });
    if (children.length > 0) node.children = children;
    return node;
  };
  const tree = build(sf, 0);
  if (format === 'json') return { ast: tree, node_count: count, truncated };
  const lines: string[] = [];
  const print = (n: AstNode, indent: string): void => {
    lines.push(`${indent}${n.kind}${n.name !== undefined ? ` ${n.name}` : ''} @${n.start[0]}:${n.start[1]}-${n.end[0]}:${n.end[1]}`);
    for (const c of n.children ?? []) print(c, `${indent}  `);
  };
  print(tree, '');
  return { ast: lines.join('\n'), node_count: count, truncated };
}

// ---- lint_svc ---------------------------------------------------------------------

/** svc node methods whose result is a Promise (`connect` resolves to the node, `out`/`in` to arrays). */
const GRAPH_OPS = new Set(['connect', 'connectFrom', 'out', 'in', 'outEdges', 'inEdges', 'disconnect', 'destroy']);
const PROMISE_COMBINATORS = new Set(['all', 'allSettled', 'race', 'any']);

interface Edit {
  start: number;
  end: number;
  text: string;
}

/**
 * Lint an svc module. Rules: `no-unused-imports`, `no-var`, `eqeqeq` (not
 * `== null` / `== undefined` checks), `await-graph-op` (a node's
 * `connect`/`out`/`in`/… result used as a value without `await`: it is a
 * Promise), `async-ability-without-await`, `no-console-in-ability` (in
 * abilities and `fn` handlers: use the run's `log`), and the svc checks of
 * this file's header (rules `svc/*`). Syntax errors are violations with
 * rule `syntax` and `severity: 'error'`. With `auto_fix`, what is safe is
 * fixed in `fixed_code`: unused imports removed (a whole import of a package
 * other than svc, typebox or a Node builtin becomes `import 'pkg'`, keeping
 * its side effects), `var` → `let` when every use is inside the block `let`
 * would scope, after the declaration, and not captured per loop iteration,
 * `==` → `===` when both sides are of one primitive kind (or both objects),
 * where the two mean the same. Nothing is fixed in code that does not parse.
 * `violations` are those of the code as given. Throws `ToolInputError` for
 * code over 100 KB.
 *
 * @example
 * await lintSvc({ code: "import { Node, Walker } from 'svc';\nvar n = 1;\n", auto_fix: true });
 * // { violations: [{ line: 1, col: 10, rule: 'no-unused-imports', … }, { line: 2, col: 1, rule: 'no-var', … }, …],
 * //   fixed_code: 'let n = 1;\n', changed: true }
 */
export async function lintSvc(args: { code: string; auto_fix?: boolean }): Promise<ToolResult> {
  const { code, auto_fix = false } = args ?? {};
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  if (typeof auto_fix !== 'boolean') throw new ToolInputError('auto_fix must be a boolean');
  const svc = await snippetService();
  const { program, sf } = svc.load(code, 'snippet.ts');
  const checker = program.getTypeChecker();
  const found: { start: number; rule: string; message: string; severity?: 'error'; fix?: Edit[] }[] = [];

  const syntax = syntaxErrors(code);
  for (const e of syntax.errors) found.push({ start: sf.getPositionOfLineAndCharacter(e.line - 1, e.col - 1), rule: 'syntax', message: e.message, severity: 'error' });
  found.push(...unusedImports(sf));
  found.push(...varDeclarations(sf, checker));
  found.push(...looseEquality(sf, checker));
  found.push(...unawaitedGraphOps(sf, checker));
  found.push(...abilityRules(sf, new Facts(sf, program)));
  for (const f of safeSvcChecks(sf, program)) found.push({ start: f.start, rule: f.rule, message: f.message });

  found.sort((a, b) => a.start - b.start);
  const violations: Violation[] = found.map((f) => ({ ...at(sf, f.start), message: f.message, rule: f.rule, ...(f.severity ? { severity: f.severity } : {}) }));
  let fixed = code;
  if (auto_fix && syntax.errors.length === 0) fixed = applyEdits(code, found.flatMap((f) => f.fix ?? []));
  return { violations, fixed_code: fixed, changed: fixed !== code };
}

/** Apply non-overlapping edits (an edit overlapping one already taken is dropped). */
function applyEdits(code: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start || b.end - a.end);
  let out = code;
  let floor = Infinity;
  for (const e of sorted) {
    if (e.end > floor) continue;
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
    floor = e.start;
  }
  return out;
}

/** Identifier texts used outside import declarations, as references (not member names). */
function usedNames(sf: ts.SourceFile): Set<string> {
  const used = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n)) return;
    if (ts.isIdentifier(n)) {
      const p = n.parent;
      const memberName =
        (ts.isPropertyAccessExpression(p) && p.name === n) ||
        (ts.isPropertyAssignment(p) && p.name === n) ||
        ((ts.isMethodDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isPropertySignature(p) || ts.isMethodSignature(p) || ts.isGetAccessor(p) || ts.isSetAccessor(p)) && p.name === n) ||
        (ts.isQualifiedName(p) && p.right === n);
      if (!memberName) used.add(n.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return used;
}

const SIDE_EFFECT_FREE = (spec: string) => spec === 'svc' || spec.startsWith('svc/') || spec === 'typebox' || spec.startsWith('node:');

function unusedImports(sf: ts.SourceFile): { start: number; rule: string; message: string; fix: Edit[] }[] {
  const used = usedNames(sf);
  const out: { start: number; rule: string; message: string; fix: Edit[] }[] = [];
  for (const stmt of sf.statements) {
    if (!ts.isImportDeclaration(stmt) || !stmt.importClause || !ts.isStringLiteral(stmt.moduleSpecifier)) continue;
    const clause = stmt.importClause;
    const spec = stmt.moduleSpecifier.text;
    const bindings: ts.Identifier[] = [];
    if (clause.name) bindings.push(clause.name);
    if (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings)) bindings.push(clause.namedBindings.name);
    const named = clause.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : [];
    for (const el of named) bindings.push(el.name);
    const unused = bindings.filter((b) => !used.has(b.text));
    if (unused.length === 0) continue;
    // One edit for the whole declaration, so the edits of its bindings never overlap.
    let text: string;
    if (unused.length === bindings.length) {
      text = SIDE_EFFECT_FREE(spec) || clause.isTypeOnly ? '' : `import ${stmt.moduleSpecifier.getText(sf)};`;
    } else {
      const keepDefault = clause.name && used.has(clause.name.text) ? clause.name.text : undefined;
      const keepNs = clause.namedBindings && ts.isNamespaceImport(clause.namedBindings) && used.has(clause.namedBindings.name.text) ? `* as ${clause.namedBindings.name.text}` : undefined;
      const keptNamed = named.filter((el) => used.has(el.name.text)).map((el) => el.getText(sf));
      const parts = [keepDefault, keepNs, keptNamed.length > 0 ? `{ ${keptNamed.join(', ')} }` : undefined].filter(Boolean);
      const attributes = stmt.attributes ? ` ${stmt.attributes.getText(sf)}` : '';
      text = `import ${clause.isTypeOnly ? 'type ' : ''}${parts.join(', ')} from ${stmt.moduleSpecifier.getText(sf)}${attributes};`;
    }
    let end = stmt.end;
    if (text === '') while (end < sf.text.length && (sf.text[end] === '\n' || sf.text[end] === '\r')) end++;
    const fix = [{ start: stmt.getStart(sf), end: text === '' ? end : stmt.end, text }];
    unused.forEach((b, i) => out.push({ start: b.getStart(sf), rule: 'no-unused-imports', message: `${b.text} is imported but never used`, fix: i === 0 ? fix : [] }));
  }
  return out;
}

/** Every identifier of the file by the symbol it names. */
function referencesBySymbol(sf: ts.SourceFile, checker: ts.TypeChecker): Map<ts.Symbol, ts.Identifier[]> {
  const map = new Map<ts.Symbol, ts.Identifier[]>();
  const visit = (n: ts.Node): void => {
    if (ts.isIdentifier(n)) {
      const s = ts.isShorthandPropertyAssignment(n.parent) ? checker.getShorthandAssignmentValueSymbol(n.parent) : checker.getSymbolAtLocation(n);
      if (s) {
        const list = map.get(s) ?? [];
        list.push(n);
        map.set(s, list);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return map;
}

function varDeclarations(sf: ts.SourceFile, checker: ts.TypeChecker): { start: number; rule: string; message: string; fix: Edit[] }[] {
  const out: { start: number; rule: string; message: string; fix: Edit[] }[] = [];
  let refs: Map<ts.Symbol, ts.Identifier[]> | undefined;
  const visit = (n: ts.Node): void => {
    if (ts.isVariableDeclarationList(n) && (n.flags & ts.NodeFlags.BlockScoped) === 0 && !(ts.isVariableStatement(n.parent) && (ts.getModifiers(n.parent) ?? []).some((m) => m.kind === ts.SyntaxKind.DeclareKeyword))) {
      refs ??= referencesBySymbol(sf, checker);
      const start = n.getStart(sf);
      const safe = letIsSafe(n, checker, refs);
      out.push({ start, rule: 'no-var', message: `use let or const instead of var${safe ? '' : ' (not fixed: a use is outside the block or before the declaration, or captured in a loop)'}`, fix: safe ? [{ start, end: start + 3, text: 'let' }] : [] });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/**
 * Whether `var` → `let` keeps the meaning: the declaration is a statement of
 * a block (or a loop's head), not inside a loop body (where `let` would be
 * new on every iteration) nor a `case`; its names are declared once; every
 * use is in the block `let` scopes and after the declaration (not in it);
 * and a loop head's variable is not captured by a function.
 */
function letIsSafe(list: ts.VariableDeclarationList, checker: ts.TypeChecker, refs: Map<ts.Symbol, ts.Identifier[]>): boolean {
  const loop = ts.isForStatement(list.parent) || ts.isForInStatement(list.parent) || ts.isForOfStatement(list.parent) ? list.parent : undefined;
  let scope: ts.Node;
  if (loop) {
    scope = loop;
  } else {
    const holder = list.parent.parent;
    if (!holder || !(ts.isBlock(holder) || ts.isSourceFile(holder) || ts.isModuleBlock(holder))) return false;
    scope = holder;
  }
  const inLoopBody = ts.findAncestor(scope.parent, (a) => (ts.isFunctionLike(a) ? 'quit' : ts.isIterationStatement(a, false)));
  if (inLoopBody) return false;
  const names: ts.Identifier[] = [];
  const collect = (b: ts.BindingName): void => {
    if (ts.isIdentifier(b)) names.push(b);
    else for (const el of b.elements) if (!ts.isOmittedExpression(el)) collect(el.name);
  };
  for (const d of list.declarations) collect(d.name);
  for (const name of names) {
    const symbol = checker.getSymbolAtLocation(name);
    if (!symbol || (symbol.declarations?.length ?? 0) !== 1) return false;
    for (const use of refs.get(symbol) ?? []) {
      if (names.includes(use)) continue;
      if (use.pos < scope.pos || use.end > scope.end || use.pos < list.end) return false;
      if (loop && ts.findAncestor(use, (a) => a === loop || ts.isFunctionLike(a)) !== loop) return false;
    }
  }
  return true;
}

/** A primitive kind all parts of a type share, 'object' for object types; undefined when mixed or loose (any, null, undefined). */
function kindOfType(type: ts.Type): string | undefined {
  const parts = type.isUnion() ? type.types : [type];
  let kind: string | undefined;
  for (const p of parts) {
    const f = p.flags;
    const k = f & ts.TypeFlags.StringLike ? 'string' : f & ts.TypeFlags.NumberLike ? 'number' : f & ts.TypeFlags.BooleanLike ? 'boolean' : f & ts.TypeFlags.BigIntLike ? 'bigint' : f & (ts.TypeFlags.Object | ts.TypeFlags.NonPrimitive) ? 'object' : undefined;
    if (!k || (kind && kind !== k)) return undefined;
    kind = k;
  }
  return kind;
}

function looseEquality(sf: ts.SourceFile, checker: ts.TypeChecker): { start: number; rule: string; message: string; fix: Edit[] }[] {
  const out: { start: number; rule: string; message: string; fix: Edit[] }[] = [];
  const nullish = (e: ts.Expression) => {
    const u = unwrap(e);
    return u.kind === ts.SyntaxKind.NullKeyword || (ts.isIdentifier(u) && u.text === 'undefined');
  };
  const visit = (n: ts.Node): void => {
    if (ts.isBinaryExpression(n)) {
      const op = n.operatorToken.kind;
      if ((op === ts.SyntaxKind.EqualsEqualsToken || op === ts.SyntaxKind.ExclamationEqualsToken) && !nullish(n.left) && !nullish(n.right)) {
        const strict = op === ts.SyntaxKind.EqualsEqualsToken ? '===' : '!==';
        const left = kindOfType(checker.getTypeAtLocation(n.left));
        const same = left !== undefined && left === kindOfType(checker.getTypeAtLocation(n.right));
        const start = n.operatorToken.getStart(sf);
        out.push({
          start,
          rule: 'eqeqeq',
          message: `use ${strict} instead of ${n.operatorToken.getText(sf)}${same ? '' : ' (not fixed: the two sides are not of one kind, so the meaning could change)'}`,
          fix: same ? [{ start, end: n.operatorToken.end, text: strict }] : [],
        });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Whether a graph operation's Promise is consumed as a Promise (awaited, returned, combined, chained) rather than used as a value. */
function consumedAsPromise(call: ts.CallExpression): boolean {
  let n: ts.Node = call;
  while (ts.isParenthesizedExpression(n.parent) || ts.isAsExpression(n.parent) || ts.isNonNullExpression(n.parent) || (ts.isConditionalExpression(n.parent) && n.parent.condition !== n)) n = n.parent;
  const p = n.parent;
  if (ts.isAwaitExpression(p) || ts.isExpressionStatement(p) || ts.isVoidExpression(p) || ts.isReturnStatement(p) || ts.isYieldExpression(p)) return true;
  if (ts.isArrowFunction(p) && p.body === n) return true;
  if (ts.isPropertyAccessExpression(p) && ['then', 'catch', 'finally'].includes(p.name.text)) return true;
  const combinator = (c: ts.Node | undefined) => c && ts.isCallExpression(c) && ts.isPropertyAccessExpression(c.expression) && c.expression.expression.getText() === 'Promise' && PROMISE_COMBINATORS.has(c.expression.name.text);
  if (ts.isArrayLiteralExpression(p) && combinator(p.parent)) return true;
  if (ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) {
    // A promise kept in a variable to await later: fine when it is awaited (or combined, or returned) somewhere.
    const name = p.name.text;
    const fnBody = ts.findAncestor(p, ts.isFunctionLike) ?? p.getSourceFile();
    let awaited = false;
    const scan = (c: ts.Node): void => {
      if (ts.isIdentifier(c) && c.text === name && c !== p.name) {
        const up = c.parent;
        if (ts.isAwaitExpression(up) || ts.isReturnStatement(up) || (ts.isArrayLiteralExpression(up) && combinator(up.parent)) || (ts.isPropertyAccessExpression(up) && ['then', 'catch', 'finally'].includes(up.name.text))) awaited = true;
      }
      if (!awaited) ts.forEachChild(c, scan);
    };
    scan(fnBody);
    return awaited;
  }
  return false;
}

function unawaitedGraphOps(sf: ts.SourceFile, checker: ts.TypeChecker): { start: number; rule: string; message: string }[] {
  const out: { start: number; rule: string; message: string }[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && GRAPH_OPS.has(n.expression.name.text)) {
      const method = checker.getSymbolAtLocation(n.expression.name);
      const isSvc = method?.declarations?.some((d) => d.getSourceFile().fileName === SPEC_FILE);
      if (isSvc && !consumedAsPromise(n)) {
        const text = `${n.expression.expression.getText(sf)}.${n.expression.name.text}(…)`;
        out.push({ start: n.getStart(sf), rule: 'await-graph-op', message: `${text} is used without await: its value is a Promise, not ${n.expression.name.text === 'connect' || n.expression.name.text === 'connectFrom' ? 'the node' : 'the result'}; write await ${text}` });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** `async-ability-without-await` and `no-console-in-ability` (abilities and `fn` handlers). */
function abilityRules(sf: ts.SourceFile, facts: Facts): { start: number; rule: string; message: string }[] {
  const out: { start: number; rule: string; message: string }[] = [];
  const bodies: { body: ts.Node; log: string }[] = [];
  for (const [decl] of facts.classes) {
    for (const { method } of new Map(abilities(facts, decl).map((a) => [a.method, a])).values()) {
      if (!method.body) continue;
      bodies.push({ body: method.body, log: facts.classes.get(decl)?.kind === 'walker' ? 'this.log' : 'the walker\'s log (walker.log)' });
      if ((ts.getModifiers(method) ?? []).some((m) => m.kind === ts.SyntaxKind.AsyncKeyword) && !awaits(method.body)) {
        out.push({
          start: method.name.getStart(sf),
          rule: 'async-ability-without-await',
          message: `ability ${method.name.getText(sf)} is async but never awaits: drop async (a run whose abilities are all synchronous is answered without promise hops)`,
        });
      }
    }
  }
  const findFns = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && facts.svcName(facts.checker.getSymbolAtLocation(n.expression)) === 'fn' && n.arguments[1]) bodies.push({ body: n.arguments[1], log: 'ctx.log' });
    ts.forEachChild(n, findFns);
  };
  findFns(sf);
  for (const { body, log } of bodies) {
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ts.isIdentifier(n.expression.expression) && n.expression.expression.text === 'console') {
        const level = ['error', 'warn', 'info', 'debug', 'trace'].includes(n.expression.name.text) ? n.expression.name.text : 'info';
        out.push({ start: n.getStart(sf), rule: 'no-console-in-ability', message: `console.${n.expression.name.text} in an ability or function: use ${log}.${level}(…) (its lines carry the walker, trace_id and root)` });
      }
      ts.forEachChild(n, visit);
    };
    visit(body);
  }
  return out;
}

/** Whether a function body awaits (not counting functions nested in it). */
function awaits(body: ts.Node): boolean {
  let found = false;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (ts.isAwaitExpression(n) || (ts.isForOfStatement(n) && n.awaitModifier)) {
      found = true;
      return;
    }
    if (ts.isFunctionLike(n)) return;
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(body, visit);
  return found;
}
