/**
 * What the tool server checks against: svc's public API as one declaration
 * text (`svc://grammar/spec`), generated from `index.ts` by the TypeScript
 * compiler's declaration emit so that it cannot drift from the code, and
 * cached. (The vocabulary of an svc module, `svc://grammar/tokens`, is
 * vocabulary.ts.)
 *
 * The spec is a roll-up: declaration emit writes one `.d.ts` per source file;
 * starting from the exports of `index.ts`, only the declarations they need
 * (transitively) are kept, and they are flattened into one
 * `declare module 'svc' { … }` block. Names two source files both declare
 * are renamed (`Access_fn`); helpers the public names need are declared but
 * not exported (as in the real package, they cannot be imported). Imports of
 * packages (`typebox`, `node:*`, …) stay imports: they resolve from
 * node_modules as usual.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The repository (package) root: two folders up from this file (mcp/grammar/spec.ts).
 *
 * @example
 * join(REPO_ROOT, 'index.ts') // the package entry
 */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The package entry the spec is generated from. */
const ENTRY = join(REPO_ROOT, 'index.ts');

let spec: Promise<string> | undefined;

/**
 * svc's public API as one self-contained declaration text for module `'svc'`
 * (a `declare module 'svc' { … }` block, with `/// <reference types>`
 * directives). A program that has this text as a `.d.ts` file, and no svc
 * sources, type-checks `import … from 'svc'` against it. Built once (a few
 * seconds: a declaration emit over `index.ts`), then cached in memory and in
 * a file under the system's temporary folder, which lists the source files
 * it was made from with their sizes and modification times (it is used only
 * while they are unchanged) — so that a tool thread replaced after a
 * timeout, or the next process, does not pay the build again.
 *
 * @example
 * const text = await publicSpec();
 * text.includes('export class Walker'); // true
 */
export function publicSpec(): Promise<string> {
  spec ??= Promise.resolve()
    .then(cachedSpec)
    .catch((error: unknown) => {
      // A failed build (a source being edited) is not cached: the next call tries again.
      spec = undefined;
      throw error;
    });
  return spec;
}

/**
 * The file the spec is cached in, for this package folder and TypeScript
 * version (it may not exist yet): JSON `{ sources: [path, size, mtimeMs][], spec }`.
 *
 * @example
 * JSON.parse(readFileSync(specCacheFile(), 'utf8')).spec === await publicSpec() // once built
 */
export function specCacheFile(): string {
  const key = createHash('sha256').update(`${REPO_ROOT}\0${ts.version}`).digest('hex').slice(0, 24);
  return join(tmpdir(), 'svc-mcp', `spec-${key}.json`);
}

type Stamp = [path: string, size: number, mtimeMs: number];

function stamp(path: string): Stamp {
  const st = statSync(path);
  return [path, st.size, st.mtimeMs];
}

function cachedSpec(): string {
  const file = specCacheFile();
  try {
    const cached = JSON.parse(readFileSync(file, 'utf8')) as { sources: Stamp[]; spec: string };
    const fresh = cached.sources.every(([path, size, mtime]) => {
      const [, s, m] = stamp(path);
      return s === size && m === mtime;
    });
    if (fresh && typeof cached.spec === 'string') return cached.spec;
  } catch {
    // No cache yet, or a source it lists is gone: build.
  }
  const { text, sources } = buildSpec();
  try {
    mkdirSync(dirname(file), { recursive: true });
    // Written whole, then renamed: a process reading it never sees half a file.
    const partial = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    writeFileSync(partial, JSON.stringify({ sources: sources.map(stamp), spec: text }));
    renameSync(partial, file);
  } catch {
    // A cache that cannot be written (a read-only temporary folder) only costs the next process a build.
  }
  return text;
}

// ---- the roll-up -----------------------------------------------------------

/** A declaration the spec keeps: a top-level name of one emitted file, or an import from a package. */
type Ref = { kind: 'local'; file: string; name: string } | { kind: 'ext'; spec: string; name: string };

type ExportEntry = { local: string; typeOnly: boolean } | { from: string; ext: boolean; name: string; typeOnly: boolean };

interface Emitted {
  file: string;
  sf: ts.SourceFile;
  locals: Map<string, ts.Statement[]>;
  /** Local name → where it comes from (`name`: `default`, `*` or the exported name). */
  imports: Map<string, { from: string; ext: boolean; name: string }>;
  exports: Map<string, ExportEntry>;
  stars: { from: string; ext: boolean }[];
  typeRefs: string[];
}

const keyOf = (r: Ref) => `${r.kind}\0${r.kind === 'local' ? r.file : r.spec}\0${r.name}`;

/** What the spec (or the vocabulary) cannot be made from: a construct of the sources this generator does not handle. */
export class Unsupported extends Error {
  override name = 'SpecGenerationError';
}

/** The spec, and the files of ours it was made from (the declaration emit's program: whatever can change a type). */
function buildSpec(): { text: string; sources: string[] } {
  const options = emitOptions();
  const program = ts.createProgram({ rootNames: [ENTRY], options });
  const sources = [
    join(REPO_ROOT, 'tsconfig.json'),
    ...program.getSourceFiles().filter((f) => !program.isSourceFileFromExternalLibrary(f) && !program.isSourceFileDefaultLibrary(f) && !f.fileName.includes('/node_modules/')).map((f) => f.fileName),
  ];
  const host = ts.createCompilerHost(options);
  const cache = new Map<string, Emitted>();

  /** The emitted declarations of one source file of ours, parsed and indexed. */
  const emitted = (file: string): Emitted => {
    const hit = cache.get(file);
    if (hit) return hit;
    const source = program.getSourceFile(file);
    if (!source) throw new Unsupported(`${file} is not part of the program of ${ENTRY}`);
    let text = '';
    const result = program.emit(source, (_name, out) => (text = out), undefined, true);
    if (result.emitSkipped) throw new Unsupported(`declaration emit skipped ${file}`);
    const m = indexEmitted(file, ts.createSourceFile(`${file}.d.ts`, text, ts.ScriptTarget.Latest, true), (spec) => resolve(spec, file));
    cache.set(file, m);
    return m;
  };

  /** A module specifier as the original program resolves it: one of our files, or a package. */
  const resolve = (specifier: string, from: string): { from: string; ext: boolean } => {
    const r = ts.resolveModuleName(specifier, from, options, host).resolvedModule;
    if (r && !r.isExternalLibraryImport && !r.resolvedFileName.endsWith('.d.ts')) return { from: r.resolvedFileName, ext: false };
    if (specifier.startsWith('.')) throw new Unsupported(`${from}: cannot resolve ${specifier}`);
    return { from: specifier, ext: true };
  };

  const resolveExport = (file: string, name: string, seen = new Set<string>()): { ref: Ref; typeOnly: boolean } | undefined => {
    const visitKey = `${file}\0${name}`;
    if (seen.has(visitKey)) return undefined;
    seen.add(visitKey);
    const m = emitted(file);
    const e = m.exports.get(name);
    if (e) {
      if ('local' in e) {
        const r = resolveLocal(m, e.local);
        if (!r) throw new Unsupported(`${file}: exports ${name}, which it does not declare`);
        return { ref: r.ref, typeOnly: e.typeOnly || r.typeOnly };
      }
      if (e.ext) return { ref: { kind: 'ext', spec: e.from, name: e.name }, typeOnly: e.typeOnly };
      const r = resolveExport(e.from, e.name, seen);
      return r && { ref: r.ref, typeOnly: e.typeOnly || r.typeOnly };
    }
    for (const star of m.stars) {
      if (star.ext) throw new Unsupported(`${file}: re-exporting all of the package ${star.from} (export *) is not supported`);
      const r = resolveExport(star.from, name, seen);
      if (r) return r;
    }
    return undefined;
  };

  const resolveLocal = (m: Emitted, name: string): { ref: Ref; typeOnly: boolean } | undefined => {
    if (m.locals.has(name)) return { ref: { kind: 'local', file: m.file, name }, typeOnly: false };
    const imp = m.imports.get(name);
    if (!imp) return undefined;
    if (imp.ext) return { ref: { kind: 'ext', spec: imp.from, name: imp.name }, typeOnly: false };
    if (imp.name === '*') throw new Unsupported(`${m.file}: a namespace import of ${imp.from} is not supported`);
    const r = resolveExport(imp.from, imp.name);
    if (!r) throw new Unsupported(`${m.file}: ${imp.from} does not export ${imp.name}`);
    return r;
  };

  // The public names, then everything they reach.
  const index = emitted(ENTRY);
  const publicNames: { name: string; ref: Ref; typeOnly: boolean }[] = [];
  for (const name of index.exports.keys()) {
    const r = resolveExport(ENTRY, name);
    if (!r) throw new Unsupported(`index.ts: cannot find what ${name} exports`);
    publicNames.push({ name, ...r });
  }
  const kept = new Map<string, Ref>();
  const order: Ref[] = [];
  const edits = new Map<ts.Statement, { start: number; end: number; ref: Ref | undefined; prefix: string }[]>();
  const free = new Set<string>();
  const queue: Ref[] = [];
  const need = (r: Ref) => {
    if (kept.has(keyOf(r))) return;
    kept.set(keyOf(r), r);
    order.push(r);
    if (r.kind === 'local') queue.push(r);
  };
  for (const p of publicNames) need(p.ref);
  while (queue.length > 0) {
    const r = queue.shift() as Extract<Ref, { kind: 'local' }>;
    const m = emitted(r.file);
    for (const stmt of m.locals.get(r.name) ?? []) {
      if (edits.has(stmt)) continue;
      const list: { start: number; end: number; ref: Ref | undefined; prefix: string }[] = [];
      edits.set(stmt, list);
      references(stmt, (id) => {
        const to = resolveLocal(m, id.text);
        if (!to) return void free.add(id.text);
        need(to.ref);
        list.push({ start: id.getStart(), end: id.end, ref: to.ref, prefix: '' });
      }, (node, first) => {
        const arg = node.argument;
        if (!ts.isLiteralTypeNode(arg) || !ts.isStringLiteral(arg.literal)) throw new Unsupported(`${m.file}: import type without a string`);
        const target = resolve(arg.literal.text, m.file);
        if (target.ext) return;
        if (!first) throw new Unsupported(`${m.file}: an import type of ${arg.literal.text} without a name`);
        const to = resolveExport(target.from, first.text);
        if (!to) throw new Unsupported(`${target.from} does not export ${first.text}`);
        need(to.ref);
        list.push({ start: node.getStart(), end: first.end, ref: to.ref, prefix: node.isTypeOf ? 'typeof ' : '' });
      });
    }
  }

  // Grouped by file (in the order files are first needed), each file's declarations in source order.
  const files = [...new Set(order.map((r) => (r.kind === 'local' ? r.file : '')))];
  const position = (r: Ref) => (r.kind === 'local' ? (emitted(r.file).locals.get(r.name)?.[0]?.pos ?? 0) : 0);
  order.sort((a, b) => {
    const fa = files.indexOf(a.kind === 'local' ? a.file : '');
    const fb = files.indexOf(b.kind === 'local' ? b.file : '');
    return fa - fb || position(a) - position(b);
  });
  const names = assignNames(order, publicNames, free, emitted);
  return { text: render({ index, publicNames, order, names, edits, emitted, cache }), sources };
}

/** The repository's compiler options, set to emit declarations in memory. */
function emitOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(REPO_ROOT, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Unsupported(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  return {
    ...parsed?.options,
    declaration: true,
    emitDeclarationOnly: true,
    noEmit: false,
    skipLibCheck: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    removeComments: false,
  };
}

/** Index one emitted `.d.ts`: its top-level declarations, imports and exports. */
function indexEmitted(file: string, sf: ts.SourceFile, resolve: (spec: string) => { from: string; ext: boolean }): Emitted {
  const m: Emitted = { file, sf, locals: new Map(), imports: new Map(), exports: new Map(), stars: [], typeRefs: sf.typeReferenceDirectives.map((d) => d.fileName) };
  if (sf.referencedFiles.length > 0) throw new Unsupported(`${file}: /// <reference path> is not supported`);
  const declare = (name: string, stmt: ts.Statement) => {
    const list = m.locals.get(name) ?? [];
    list.push(stmt);
    m.locals.set(name, list);
    const mods = ts.canHaveModifiers(stmt) ? ts.getModifiers(stmt) : undefined;
    if (mods?.some((x) => x.kind === ts.SyntaxKind.ExportKeyword)) {
      const exported = mods.some((x) => x.kind === ts.SyntaxKind.DefaultKeyword) ? 'default' : name;
      m.exports.set(exported, { local: name, typeOnly: false });
    }
  };
  for (const stmt of sf.statements) {
    if (ts.isImportDeclaration(stmt)) {
      const spec = (stmt.moduleSpecifier as ts.StringLiteral).text;
      const clause = stmt.importClause;
      if (!clause) continue;
      const target = resolve(spec);
      if (clause.name) m.imports.set(clause.name.text, { ...target, name: 'default' });
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) m.imports.set(bindings.name.text, { ...target, name: '*' });
      if (bindings && ts.isNamedImports(bindings)) {
        for (const el of bindings.elements) m.imports.set(el.name.text, { ...target, name: (el.propertyName ?? el.name).text });
      }
    } else if (ts.isExportDeclaration(stmt)) {
      const target = stmt.moduleSpecifier ? resolve((stmt.moduleSpecifier as ts.StringLiteral).text) : undefined;
      if (!stmt.exportClause) {
        if (!target) throw new Unsupported(`${file}: export * without a module`);
        m.stars.push(target);
      } else if (ts.isNamespaceExport(stmt.exportClause)) {
        throw new Unsupported(`${file}: export * as ${stmt.exportClause.name.text} is not supported`);
      } else {
        for (const el of stmt.exportClause.elements) {
          const typeOnly = stmt.isTypeOnly || el.isTypeOnly;
          const inner = (el.propertyName ?? el.name).text;
          m.exports.set(el.name.text, target ? { ...target, name: inner, typeOnly } : { local: inner, typeOnly });
        }
      }
    } else if (ts.isExportAssignment(stmt)) {
      if (stmt.isExportEquals || !ts.isIdentifier(stmt.expression)) throw new Unsupported(`${file}: export = / export default <expression> is not supported`);
      m.exports.set('default', { local: stmt.expression.text, typeOnly: false });
    } else if (ts.isVariableStatement(stmt)) {
      for (const d of stmt.declarationList.declarations) {
        if (!ts.isIdentifier(d.name)) throw new Unsupported(`${file}: a destructuring declaration is not supported`);
        declare(d.name.text, stmt);
      }
    } else if (ts.isModuleDeclaration(stmt) && !ts.isIdentifier(stmt.name)) {
      throw new Unsupported(`${file}: declare module '${stmt.name.text}' is not supported`);
    } else if (
      ts.isClassDeclaration(stmt) || ts.isInterfaceDeclaration(stmt) || ts.isTypeAliasDeclaration(stmt) ||
      ts.isEnumDeclaration(stmt) || ts.isFunctionDeclaration(stmt) || ts.isModuleDeclaration(stmt)
    ) {
      if (!stmt.name || !ts.isIdentifier(stmt.name)) throw new Unsupported(`${file}: an unnamed declaration is not supported`);
      declare(stmt.name.text, stmt);
    } else if (stmt.kind !== ts.SyntaxKind.EmptyStatement) {
      throw new Unsupported(`${file}: a ${ts.SyntaxKind[stmt.kind]} in emitted declarations is not supported`);
    }
  }
  return m;
}

/**
 * Call `onRef` for every identifier of `stmt` that names a top-level
 * declaration or an import (a reference, not a member or parameter name, and
 * not a type parameter in scope), and `onImport` for every import type node (`import(…).Name`).
 */
function references(stmt: ts.Statement, onRef: (id: ts.Identifier) => void, onImport: (node: ts.ImportTypeNode, first: ts.Identifier | undefined) => void): void {
  const leftmost = (n: ts.Node): ts.Identifier | undefined => {
    if (ts.isIdentifier(n)) return n;
    if (ts.isQualifiedName(n)) return leftmost(n.left);
    if (ts.isPropertyAccessExpression(n)) return leftmost(n.expression);
    return undefined;
  };
  const visit = (n: ts.Node, bound: ReadonlySet<string>): void => {
    let scope = bound;
    const params = (n as { typeParameters?: ts.NodeArray<ts.TypeParameterDeclaration> }).typeParameters;
    if (params) scope = new Set([...scope, ...params.map((p) => p.name.text)]);
    if (ts.isMappedTypeNode(n)) scope = new Set([...scope, n.typeParameter.name.text]);
    if (ts.isConditionalTypeNode(n)) {
      const infers: string[] = [];
      const collect = (c: ts.Node): void => {
        if (ts.isInferTypeNode(c)) infers.push(c.typeParameter.name.text);
        ts.forEachChild(c, collect);
      };
      collect(n.extendsType);
      scope = new Set([...scope, ...infers]);
    }
    let ref: ts.Node | undefined;
    if (ts.isTypeReferenceNode(n)) ref = n.typeName;
    else if (ts.isExpressionWithTypeArguments(n)) ref = n.expression;
    else if (ts.isTypeQueryNode(n)) ref = n.exprName;
    else if (ts.isComputedPropertyName(n)) ref = n.expression;
    if (ref) {
      const id = leftmost(ref);
      if (id && !scope.has(id.text)) onRef(id);
    }
    if (ts.isImportTypeNode(n)) onImport(n, n.qualifier && leftmost(n.qualifier));
    ts.forEachChild(n, (c) => visit(c, scope));
  };
  visit(stmt, new Set());
}

/**
 * The name each kept declaration has in the flat module: public ones their
 * exported name; others their own unless it is taken (by another kept name
 * or a global the declarations use), then `Name_<file>`.
 */
function assignNames(order: readonly Ref[], publicNames: readonly { name: string; ref: Ref }[], free: ReadonlySet<string>, emitted: (file: string) => Emitted): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const p of publicNames) {
    if (names.has(keyOf(p.ref))) continue;
    if (free.has(p.name)) throw new Unsupported(`the public name ${p.name} hides the global ${p.name} that other declarations use`);
    names.set(keyOf(p.ref), p.name);
    taken.add(p.name);
  }
  for (const r of order) {
    if (names.has(keyOf(r))) continue;
    let base = r.name;
    if (r.kind === 'ext' && (r.name === 'default' || r.name === '*')) {
      // The name the first importing file gave it.
      base = 'imported';
      for (const o of order) {
        if (o.kind !== 'local') continue;
        for (const [local, imp] of emitted(o.file).imports) if (imp.ext && imp.from === r.spec && imp.name === r.name) base = local;
        if (base !== 'imported') break;
      }
    }
    const stem = r.kind === 'local' ? basename(r.file).replace(/\.[^.]+$/, '').replace(/\W/g, '_') : 'ext';
    let name = base;
    for (let i = 2; taken.has(name) || free.has(name); i++) name = i === 2 ? `${base}_${stem}` : `${base}_${stem}${i}`;
    names.set(keyOf(r), name);
    taken.add(name);
  }
  return names;
}

interface RenderInput {
  index: Emitted;
  publicNames: readonly { name: string; ref: Ref; typeOnly: boolean }[];
  order: readonly Ref[];
  names: ReadonlyMap<string, string>;
  edits: ReadonlyMap<ts.Statement, { start: number; end: number; ref: Ref | undefined; prefix: string }[]>;
  emitted: (file: string) => Emitted;
  cache: ReadonlyMap<string, Emitted>;
}

function render({ publicNames, order, names, edits, emitted, cache }: RenderInput): string {
  const nameOf = (r: Ref) => names.get(keyOf(r)) as string;
  const exportedAs = new Map<string, { name: string; typeOnly: boolean }[]>();
  for (const p of publicNames) {
    const list = exportedAs.get(keyOf(p.ref)) ?? [];
    list.push(p);
    exportedAs.set(keyOf(p.ref), list);
  }

  const imports = new Map<string, string[]>();
  const body: string[] = [];
  const exportList: string[] = [];
  const typeExportList: string[] = [];
  const reexports: string[] = [];
  let lastFile = '';
  for (const r of order) {
    const own = nameOf(r);
    const pub = exportedAs.get(keyOf(r)) ?? [];
    if (r.kind === 'ext') {
      const list = imports.get(r.spec) ?? [];
      if (r.name === '*') body.unshift(`import type * as ${own} from '${r.spec}';`);
      else list.push(r.name === own ? own : `${r.name} as ${own}`);
      imports.set(r.spec, list);
      for (const p of pub) reexports.push(`export ${p.typeOnly ? 'type ' : ''}{ ${r.name === p.name ? p.name : `${r.name} as ${p.name}`} } from '${r.spec}';`);
      continue;
    }
    const m = emitted(r.file);
    const stmts = m.locals.get(r.name) ?? [];
    const onlyTypes = stmts.every((s) => ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s));
    // Exported in place when the public name is its own and exporting it exports no more than index.ts does.
    const inPlace = pub.some((p) => p.name === own && (!p.typeOnly || onlyTypes));
    for (const p of pub) {
      if (p.name === own && (!p.typeOnly || onlyTypes)) continue;
      (p.typeOnly ? typeExportList : exportList).push(p.name === own ? own : `${own} as ${p.name}`);
    }
    if (r.file !== lastFile) {
      body.push(`\n// ---- ${r.file.slice(REPO_ROOT.length)}`);
      lastFile = r.file;
    }
    for (const stmt of stmts) {
      const refs = [...(edits.get(stmt) ?? [])];
      // A renamed declaration: its own name too.
      if (own !== r.name) for (const id of declaredNames(stmt)) if (id.text === r.name) refs.push({ start: id.getStart(), end: id.end, ref: r, prefix: '' });
      body.push(statementText(m.sf, stmt, inPlace, refs, nameOf));
    }
  }

  // svc runs on Node: its declarations use Node's globals (Buffer, NodeJS.*) whether or not a file said so.
  const refs = new Set<string>(['node']);
  for (const m of cache.values()) for (const t of m.typeRefs) refs.add(t);
  const head = [...imports].filter(([, list]) => list.length > 0).map(([spec, list]) => `import type { ${[...new Set(list)].join(', ')} } from '${spec}';`);
  const exportsText = [
    ...(exportList.length > 0 ? [`export { ${exportList.join(', ')} };`] : []),
    ...(typeExportList.length > 0 ? [`export type { ${typeExportList.join(', ')} };`] : []),
    ...reexports,
  ];
  return [
    ...[...refs].sort().map((t) => `/// <reference types="${t}" />`),
    `// svc's public API: what \`import … from 'svc'\` gives. Generated from index.ts by TypeScript ${ts.version}'s`,
    '// declaration emit; declarations not exported here are helpers the public ones need (not importable).',
    `declare module 'svc' {`,
    ...head,
    'export {};',
    ...body,
    '',
    ...exportsText,
    '}',
    '',
  ].join('\n');
}

/** The identifiers a top-level declaration statement declares. */
function declaredNames(stmt: ts.Statement): ts.Identifier[] {
  if (ts.isVariableStatement(stmt)) return stmt.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name] : []));
  const name = (stmt as { name?: ts.Node }).name;
  return name && ts.isIdentifier(name) ? [name] : [];
}

/** One kept statement: its text (with its doc comment), `declare`/`export` dropped, references renamed, `export` added when public. */
function statementText(sf: ts.SourceFile, stmt: ts.Statement, exported: boolean, refs: readonly { start: number; end: number; ref: Ref | undefined; prefix: string }[], nameOf: (r: Ref) => string): string {
  const text = sf.text;
  const changes: { start: number; end: number; text: string }[] = [];
  for (const mod of (ts.canHaveModifiers(stmt) ? ts.getModifiers(stmt) : undefined) ?? []) {
    if (mod.kind !== ts.SyntaxKind.ExportKeyword && mod.kind !== ts.SyntaxKind.DeclareKeyword && mod.kind !== ts.SyntaxKind.DefaultKeyword) continue;
    let end = mod.end;
    while (text[end] === ' ') end++;
    changes.push({ start: mod.getStart(sf), end, text: '' });
  }
  for (const r of refs) changes.push({ start: r.start, end: r.end, text: `${r.prefix}${r.ref ? nameOf(r.ref) : ''}` });
  // After the doc comment, where the dropped modifiers were.
  if (exported) changes.push({ start: stmt.getStart(sf), end: stmt.getStart(sf), text: 'export ' });
  changes.sort((a, b) => b.start - a.start || b.end - a.end);
  const from = docStart(sf, stmt);
  let out = text.slice(from, stmt.end);
  for (const c of changes) out = out.slice(0, c.start - from) + c.text + out.slice(c.end - from);
  return out;
}

/**
 * Where a statement's own comments start: the comments right above it, not
 * those before a blank line (a file's header comment, detached).
 */
function docStart(sf: ts.SourceFile, stmt: ts.Statement): number {
  const start = stmt.getStart(sf);
  let at = start;
  for (const c of (ts.getLeadingCommentRanges(sf.text, stmt.getFullStart()) ?? []).reverse()) {
    if (/\n[ \t]*\n/.test(sf.text.slice(c.end, at))) break;
    at = c.pos;
  }
  // From the start of its line, so that the comment keeps its indentation.
  while (at > 0 && (sf.text[at - 1] === ' ' || sf.text[at - 1] === '\t')) at--;
  return at;
}
