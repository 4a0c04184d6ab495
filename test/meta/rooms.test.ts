// The rooms of the tree (docs/concepts/architecture.md, *Architecture*): a room is a subfolder of actors/,
// transports/, stores/ or bench/ (actors/identity, transports/http, stores/postgres,
// bench/harness — the load harness behind `svc bench`), or another top-level folder
// (kernel/, cli/, runtime/, cluster/, client/, mcp/). Its index.ts is its door.
// - kernel/ imports nothing of ours outside kernel/;
// - actors/ never import transports/ or cli/, nor stores/ or cluster/ (a seam imports
//   no backend: backends register themselves);
// - cluster/ imports no actors; stores/ import only the kernel, the seams' doors
//   (actors/graph, actors/identity, actors/data, actors/events) and other stores' doors;
// - the wire transports (worker, codec, link) import only the kernel and the codec;
// - mcp/ (the tool server) imports nothing of cli/: the CLI hands it the command table;
//   and no import cycle (lazy imports included) runs through a file of cli/ or mcp/;
// - a file imports another room only through that room's index.ts (files of
//   one room import each other freely; cli/commands/* is inside cli/).
// - a comment of a product file never cites a seed or a document the repository
//   does not hold (DESIGN.md, STYLE.md, ../shared/…): it says the rule's
//   substance, or names the docs page (or README section) that holds it.
// The test kit (test/kit/, the launchers of real servers) is a room of test/ too:
// - bench/ imports (or names by path) nothing of test/ but the kit's door, test/kit/index.ts;
// - tests import the kit only through its door;
// - the kit imports nothing of test/ outside test/kit (benchmarks import it).
// Imports and comments are read with the TypeScript scanner and parser (a
// string is neither an import nor a comment).
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import ts from 'typescript';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { default: string }> };

/** Top-level folders that are not product code (no rooms; bench/harness is read on its own). */
const NOT_PRODUCT = new Set(['test', 'bench', 'examples', 'bin', 'docs', 'node_modules']);
/** Top-level folders whose subfolders are the rooms. */
const HALLS = new Set(['actors', 'transports', 'stores', 'bench']);

function files(dir: string, source = /\.(ts|mts)$/): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || (dir === root && NOT_PRODUCT.has(name))) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path, source));
    else if (source.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The room of a repository path (`actors/identity/jwt.ts` → `actors/identity`), or undefined for top-level files. */
function roomOf(rel: string): string | undefined {
  const parts = rel.split('/');
  if (parts.length < 2) return undefined;
  if (HALLS.has(parts[0] as string)) return parts.length >= 3 ? `${parts[0]}/${parts[1]}` : undefined;
  return parts[0];
}

/** The repository path an import names, when it is ours (relative, or the package's own name); else undefined. */
function resolveImport(fromRel: string, spec: string): string | undefined {
  if (spec.startsWith('.')) return posix.normalize(posix.join(posix.dirname(fromRel), spec));
  if (spec === pkg.name || spec.startsWith(`${pkg.name}/`)) {
    const entry = pkg.exports[`.${spec.slice(pkg.name.length)}`];
    const target = typeof entry === 'object' ? entry.default : entry;
    return target ? posix.normalize(target) : `${spec.slice(pkg.name.length + 1)} (not exported)`;
  }
  return undefined;
}

/** The rooms that own the seams backends implement: the only actors a store imports. */
const SEAMS = ['actors/graph/', 'actors/identity/', 'actors/data/', 'actors/events/'];

/** The transports that carry kernel frames between threads and processes. */
const WIRE = ['transports/worker/', 'transports/codec/', 'transports/link/'];

/** What is wrong with `fromRel` importing `toRel` (both repository paths). */
function violations(fromRel: string, toRel: string): string[] {
  const out: string[] = [];
  const from = roomOf(fromRel);
  const to = roomOf(toRel);
  if (fromRel.startsWith('kernel/') && !toRel.startsWith('kernel/')) out.push('kernel/ imports nothing of ours outside kernel/');
  if (fromRel.startsWith('actors/') && (toRel.startsWith('transports/') || toRel.startsWith('cli/'))) out.push('actors never import transports/ or cli/');
  if (fromRel.startsWith('mcp/') && toRel.startsWith('cli/')) out.push('mcp/ imports nothing of cli/ (the CLI hands the tool server its command table)');
  if (fromRel.startsWith('actors/') && (toRel.startsWith('stores/') || toRel.startsWith('cluster/'))) out.push('actors import neither stores/ nor cluster/ (a seam imports no backend: backends register themselves)');
  if (fromRel.startsWith('cluster/') && toRel.startsWith('actors/')) out.push('cluster/ imports no actors (clustering only: it hands the runtime a transport, a placement, a lease)');
  if (fromRel.startsWith('stores/') && !(toRel.startsWith('kernel/') || SEAMS.some((seam) => toRel.startsWith(seam)) || toRel.startsWith('stores/'))) out.push('stores/ import only the kernel, the seams they implement (actors/graph, identity, data, events) and other stores');
  if (WIRE.some((w) => fromRel.startsWith(w)) && !toRel.startsWith('kernel/') && !toRel.startsWith('transports/codec/') && roomOf(toRel) !== roomOf(fromRel)) out.push('the wire transports (worker, codec, link) import only the kernel and the codec');
  if (to !== undefined && from !== to && toRel !== `${to}/index.ts`) out.push(`another room is imported only through its door, ${to}/index.ts`);
  return out;
}

/** What a comment may not cite: a seed, or a document the repository does not hold. */
const FOREIGN = [/\bseed ?0\d\d\b/i, /\bthe seed's\b|\bbeyond the seed\b/i, /\b(?:DESIGN|STYLE)\.md\b/, /(?:\.\.\/)+shared\/|\/work\/shared\//];

/** The citations of {@link FOREIGN} in the comments of a source text (code, strings and templates are not read). */
function citations(text: string, kind = ts.ScriptKind.TS): string[] {
  const sf = ts.createSourceFile('file', text, ts.ScriptTarget.Latest, false, kind);
  const out: string[] = [];
  const seen = new Set<number>();
  // Every comment is trivia before some token (the last ones before the end-of-file token): on the
  // line of the token before it (trailing) or on lines of its own (leading).
  const visit = (node: ts.Node): void => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(sf);
    if (children.length > 0) return children.forEach(visit);
    for (const range of [...(ts.getTrailingCommentRanges(text, node.pos) ?? []), ...(ts.getLeadingCommentRanges(text, node.pos) ?? [])]) {
      if (seen.has(range.pos)) continue;
      seen.add(range.pos);
      const comment = text.slice(range.pos, range.end);
      for (const rule of FOREIGN) {
        const hit = rule.exec(comment);
        if (hit) out.push(`line ${sf.getLineAndCharacterOfPosition(range.pos + hit.index).line + 1}: ${hit[0]}`);
      }
    }
  };
  visit(sf);
  return out;
}

/** The import cycles of a graph (file → files it imports): each a strongly connected set of two files or more (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = stack.splice(stack.indexOf(v));
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}
/** What is wrong with `fromRel` (a test or benchmark file) importing `toRel`, as to the test kit. */
function kitViolations(fromRel: string, toRel: string): string[] {
  const out: string[] = [];
  if (fromRel.startsWith('bench/') && toRel.startsWith('test/') && toRel !== KIT_DOOR) out.push(`bench imports nothing of test/ but the test kit's door, ${KIT_DOOR}`);
  if (fromRel.startsWith('test/') && !fromRel.startsWith('test/kit/') && toRel.startsWith('test/kit/') && toRel !== KIT_DOOR) out.push(`tests import the test kit only through its door, ${KIT_DOOR}`);
  if (fromRel.startsWith('test/kit/') && toRel.startsWith('test/') && !toRel.startsWith('test/kit/')) out.push('the test kit imports nothing of test/ outside test/kit');
  return out;
}
const KIT_DOOR = 'test/kit/index.ts';

function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/** Files a file names by path (`new URL('../x.ts', import.meta.url)`): a benchmark that starts a fixture app reaches into test/ as much as an import does. */
function namedByPath(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/new URL\(\s*(['"])(\.{1,2}\/[^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g)].map((m) => m[2] as string);
}

/** Every .ts/.mts/.mjs file under `dir` (bench/results and fixtures' data are not code). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

t.test('the rules themselves catch what they should', async (t) => {
  t.equal(roomOf('actors/identity/jwt.ts'), 'actors/identity');
  t.equal(roomOf('transports/http/front.ts'), 'transports/http');
  t.equal(roomOf('cli/commands/start.ts'), 'cli');
  t.equal(roomOf('kernel/actor.ts'), 'kernel');
  t.equal(roomOf('runtime/modules/http.ts'), 'runtime');
  t.equal(roomOf('mcp/tools/lint/no-var.ts'), 'mcp');
  t.equal(roomOf('index.ts'), undefined);
  t.match(violations('kernel/system.ts', 'actors/walker/index.ts'), [/kernel/]);
  t.match(violations('actors/identity/service.ts', 'transports/http/index.ts'), [/actors never import transports/]);
  t.match(violations('actors/identity/service.ts', 'cli/table.ts'), [/actors never import/, /door/]);
  t.match(violations('transports/ws/hub.ts', 'actors/identity/jwt.ts'), [/door, actors\/identity\/index.ts/]);
  t.match(violations('cli/commands/start.ts', 'transports/http/front.ts'), [/door/]);
  t.match(violations('mcp/tools/commands.ts', 'cli/table.ts'), [/mcp\/ imports nothing of cli/, /door/]);
  t.match(violations('mcp/server.ts', 'cli/index.ts'), [/mcp\/ imports nothing of cli/], 'not even through a door');
  t.same(violations('cli/commands/mcp.ts', 'mcp/index.ts'), [], 'the CLI starts the tool server through its door');
  t.same(violations('mcp/tools/lint/index.ts', 'mcp/tools/compiler/service.ts'), [], 'inside the tool server');
  t.match(violations('index.ts', 'actors/walker/walker.ts'), [/door/], 'the package door goes through room doors too');
  t.same(violations('transports/ws/hub.ts', 'actors/identity/index.ts'), [], 'through the door');
  t.same(violations('actors/identity/jwt.ts', 'actors/identity/errors.ts'), [], 'inside one room');
  t.same(violations('cli/commands/start.ts', 'cli/table.ts'), [], 'cli/commands is inside cli');
  t.same(violations('actors/identity/service.ts', 'kernel/index.ts'), [], 'actors use the kernel door');
  t.same(violations('transports/http/front.ts', 'actors/walker/index.ts'), []);
  t.match(violations('actors/data/kvstore.ts', 'stores/redis/index.ts'), [/actors import neither stores/], 'a seam imports no backend');
  t.match(violations('actors/events/broker.ts', 'cluster/index.ts'), [/actors import neither stores\/ nor cluster/]);
  t.match(violations('cluster/member.ts', 'actors/graph/index.ts'), [/cluster\/ imports no actors/]);
  t.same(violations('cluster/member.ts', 'stores/redis/index.ts'), [], 'cluster uses the Redis connection through its door');
  t.match(violations('stores/postgres/users.ts', 'runtime/index.ts'), [/stores\/ import only the kernel, the seams/]);
  t.match(violations('stores/redis/kv.ts', 'cluster/index.ts'), [/stores\/ import only/]);
  t.same(violations('stores/sqlite/index.ts', 'actors/graph/index.ts'), [], 'a backend registers with its seam');
  t.match(violations('stores/postgres/pool.ts', 'actors/walker/index.ts'), [/stores\/ import only/], 'the walker room is no seam');
  t.same(violations('stores/s3/object-storage.ts', 'stores/local/index.ts'), [], "another store's door");
  t.match(violations('transports/worker/pool.ts', 'actors/walker/index.ts'), [/wire transports/]);
  t.match(violations('transports/link/link.ts', 'cluster/index.ts'), [/wire transports/]);
  t.same(violations('transports/link/link.ts', 'transports/codec/index.ts'), [], 'the codec is shared');
  t.same(violations('transports/worker/pool.ts', 'kernel/index.ts'), []);
  const sample = [
    '/** The envelope (seed 000 §2.1): ok, data, error. */',
    "const a = 'seed 000 §2.1 and DESIGN.md in a string';",
    'const b = `http://x/${a} // seed 001 in a template`; // see ../shared/notes/uws-build.md',
    "const c = /seed 000/.test(a) ? '/*' : '*/';",
    '// as the seed\'s defaults',
    'f(/* STYLE.md item 22 */ a, b, c);',
    '/* the members\' seeds, a hash seed = 0: fine */',
  ].join('\n');
  t.same(citations(sample), ['line 1: seed 000', 'line 3: ../shared/', "line 5: the seed's", 'line 6: STYLE.md'], 'comments only, not strings, templates or regular expressions');
  t.same(citations('#!/usr/bin/env node\n// DESIGN.md "Layout"\nexport {};', ts.ScriptKind.JS), ['line 2: DESIGN.md']);
  const lazy = new Map([
    ['cli/table.ts', ['cli/commands/mcp.ts']],
    ['cli/commands/mcp.ts', ['cli/table.ts', 'mcp/index.ts']],
    ['mcp/index.ts', []],
  ]);
  t.same(cycles(lazy), [['cli/commands/mcp.ts', 'cli/table.ts']], 'a cycle through a lazy import is a cycle');
  t.same(cycles(new Map([['cli/table.ts', ['cli/commands/mcp.ts']], ['cli/commands/mcp.ts', ['mcp/index.ts']], ['mcp/index.ts', []]])), [], 'the CLI handing the table over: none');
  t.match(kitViolations('bench/cluster.ts', 'test/helpers/app.ts'), [/bench imports nothing of test\/ but/]);
  t.match(kitViolations('bench/cluster.ts', 'test/kit/cluster.ts'), [/bench imports nothing of test\/ but/], 'not even a kit file past its door');
  t.match(kitViolations('bench/events.ts', 'test/fixtures/events-app.ts'), [/bench imports nothing of test\/ but/], 'nor a fixture');
  t.match(kitViolations('bench/harness/run.ts', 'test/integration/cluster/helpers.ts'), [/bench imports nothing/]);
  t.match(kitViolations('test/integration/cluster/failover.test.ts', 'test/kit/redis.ts'), [/through its door/]);
  t.match(kitViolations('test/kit/server.ts', 'test/helpers/identity.ts'), [/the test kit imports nothing of test\/ outside/]);
  t.same(kitViolations('bench/cluster.ts', 'test/kit/index.ts'), [], 'bench through the kit door');
  t.same(kitViolations('test/kit/cluster.ts', 'test/kit/server.ts'), [], 'inside the kit');
  t.same(kitViolations('test/stores/postgres/graph-store.test.ts', 'test/conformance/anchor-store.ts'), [], 'tests use the rest of test/ freely');
  t.same(kitViolations('bench/http.ts', 'runtime/metrics/index.ts'), [], 'bench reaches into the product freely');
  t.same(namedByPath(join(root, 'test/kit/fixtures.ts')), [], 'a template is not a path');
  t.same(namedByPath(join(root, 'test/kit/server.ts')), ['../../bin/svc.mjs'], 'a path named with new URL is read');
});

t.test('every import of ours follows the rules', async (t) => {
  // bench/ holds the repository's own scenarios (free to reach into any room) and the harness, which is product code.
  const source = /\.(ts|mts|mjs)$/;
  const product = [...files(root, source), ...files(join(root, 'bench/harness'), source), ...files(join(root, 'bin'), source)];
  t.ok(product.length > 40, 'product files found');
  let checked = 0;
  for (const file of product) {
    const rel = relative(root, file);
    for (const spec of importsOf(file)) {
      const target = resolveImport(rel, spec);
      if (target === undefined) continue;
      checked++;
      for (const broken of violations(rel, target)) t.fail(`${rel} imports ${spec}: ${broken}`);
    }
  }
  t.ok(checked > 100, `${checked} imports of ours checked`);
});

t.test('no product comment cites a seed or a document the repository does not hold', async (t) => {
  // Every product source file, the command's launcher and the load harness included.
  const source = /\.(ts|mts|mjs)$/;
  const product = [...files(root, source), ...files(join(root, 'bench/harness'), source), ...files(join(root, 'bin'), source)];
  t.ok(product.length > 200, `${product.length} product files read`);
  for (const file of product) {
    const found = citations(readFileSync(file, 'utf8'), file.endsWith('.mjs') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
    for (const c of found) t.fail(`${relative(root, file)} ${c}: say the rule itself, or name the docs page (or README section) that holds it`);
  }
});

t.test('no import cycle runs through cli/ or mcp/: the CLI starts the tool server and hands it the command table', async (t) => {
  const product = [...files(root), ...files(join(root, 'bench/harness'))].map((f) => relative(root, f));
  const known = new Set(product);
  const graph = new Map(product.map((rel) => [rel, importsOf(join(root, rel)).flatMap((spec) => resolveImport(rel, spec) ?? []).filter((target) => known.has(target))]));
  const found = cycles(graph).filter((c) => c.some((f) => f.startsWith('cli/') || f.startsWith('mcp/')));
  t.same(found, [], 'no cycle through cli/ or mcp/');
});

t.test('bench and tests reach the test kit through its door, and bench nothing else of test/', async (t) => {
  const bench = sources(join(root, 'bench'));
  const tests = sources(join(root, 'test'));
  t.ok(bench.length > 20, `${bench.length} bench files read`);
  t.ok(tests.length > 100, `${tests.length} test files read`);
  let checked = 0;
  let benchToKit = 0;
  for (const file of [...bench, ...tests]) {
    const rel = relative(root, file);
    const named = rel.startsWith('bench/') ? namedByPath(file) : [];
    for (const spec of [...importsOf(file), ...named]) {
      const target = resolveImport(rel, spec);
      if (target === undefined) continue;
      checked++;
      if (rel.startsWith('bench/') && target === KIT_DOOR) benchToKit++;
      for (const broken of kitViolations(rel, target)) t.fail(`${rel} ${named.includes(spec) ? 'names' : 'imports'} ${spec}: ${broken}`);
    }
  }
  t.ok(benchToKit >= 5, `${benchToKit} bench files use the kit through its door`);
  t.ok(checked > 500, `${checked} imports of ours checked`);
});
