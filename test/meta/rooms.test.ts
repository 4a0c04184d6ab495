// The rooms of the tree (the README's Architecture section): a room is a subfolder of actors/,
// transports/ or bench/ (actors/identity, transports/http, bench/harness — the
// load harness behind `svc bench`), or another top-level folder (kernel/, cli/,
// runtime/, cluster/, client/). Its index.ts is its door.
// - kernel/ imports nothing of ours outside kernel/;
// - actors/ never import transports/ or cli/;
// - a file imports another room only through that room's index.ts (files of
//   one room import each other freely; cli/commands/* is inside cli/).
// The test kit (test/kit/, the launchers of real servers) is a room of test/ too:
// - bench/ imports (or names by path) nothing of test/ but the kit's door, test/kit/index.ts;
// - tests import the kit only through its door;
// - the kit imports nothing of test/ outside test/kit (benchmarks import it).
// Imports are read with the TypeScript scanner (comments and strings are not imports).
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import ts from 'typescript';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string> };

/** Top-level folders that are not product code (no rooms; bench/harness is read on its own). */
const NOT_PRODUCT = new Set(['test', 'bench', 'examples', 'bin', 'docs', 'node_modules']);
/** Top-level folders whose subfolders are the rooms. */
const HALLS = new Set(['actors', 'transports', 'bench']);

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || (dir === root && NOT_PRODUCT.has(name))) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
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
    const target = pkg.exports[`.${spec.slice(pkg.name.length)}`];
    return target ? posix.normalize(target) : `${spec.slice(pkg.name.length + 1)} (not exported)`;
  }
  return undefined;
}

/** What is wrong with `fromRel` importing `toRel` (both repository paths). */
function violations(fromRel: string, toRel: string): string[] {
  const out: string[] = [];
  const from = roomOf(fromRel);
  const to = roomOf(toRel);
  if (fromRel.startsWith('kernel/') && !toRel.startsWith('kernel/')) out.push('kernel/ imports nothing of ours outside kernel/');
  if (fromRel.startsWith('actors/') && (toRel.startsWith('transports/') || toRel.startsWith('cli/'))) out.push('actors never import transports/ or cli/');
  if (to !== undefined && from !== to && toRel !== `${to}/index.ts`) out.push(`another room is imported only through its door, ${to}/index.ts`);
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
  t.equal(roomOf('index.ts'), undefined);
  t.match(violations('kernel/system.ts', 'actors/walker/index.ts'), [/kernel/]);
  t.match(violations('actors/identity/service.ts', 'transports/http/index.ts'), [/actors never import transports/]);
  t.match(violations('actors/identity/service.ts', 'cli/config.ts'), [/actors never import/, /door/]);
  t.match(violations('transports/ws/hub.ts', 'actors/identity/jwt.ts'), [/door, actors\/identity\/index.ts/]);
  t.match(violations('cli/serve-worker.ts', 'transports/http/front.ts'), [/door/]);
  t.match(violations('index.ts', 'actors/walker/walker.ts'), [/door/], 'the package door goes through room doors too');
  t.same(violations('transports/ws/hub.ts', 'actors/identity/index.ts'), [], 'through the door');
  t.same(violations('actors/identity/jwt.ts', 'actors/identity/errors.ts'), [], 'inside one room');
  t.same(violations('cli/commands/start.ts', 'cli/config.ts'), [], 'cli/commands is inside cli');
  t.same(violations('actors/identity/service.ts', 'kernel/index.ts'), [], 'actors use the kernel door');
  t.same(violations('transports/http/front.ts', 'actors/walker/index.ts'), []);
  t.match(kitViolations('bench/cluster.ts', 'test/helpers/app.ts'), [/bench imports nothing of test\/ but/]);
  t.match(kitViolations('bench/cluster.ts', 'test/kit/cluster.ts'), [/bench imports nothing of test\/ but/], 'not even a kit file past its door');
  t.match(kitViolations('bench/events.ts', 'test/fixtures/events-app.ts'), [/bench imports nothing of test\/ but/], 'nor a fixture');
  t.match(kitViolations('bench/harness/run.ts', 'test/integration/cluster/helpers.ts'), [/bench imports nothing/]);
  t.match(kitViolations('test/integration/cluster/failover.test.ts', 'test/kit/redis.ts'), [/through its door/]);
  t.match(kitViolations('test/kit/server.ts', 'test/helpers/identity.ts'), [/the test kit imports nothing of test\/ outside/]);
  t.same(kitViolations('bench/cluster.ts', 'test/kit/index.ts'), [], 'bench through the kit door');
  t.same(kitViolations('test/kit/cluster.ts', 'test/kit/server.ts'), [], 'inside the kit');
  t.same(kitViolations('test/actors/anchor/pg-store.test.ts', 'test/conformance/anchor-store.ts'), [], 'tests use the rest of test/ freely');
  t.same(kitViolations('bench/http.ts', 'runtime/metrics/index.ts'), [], 'bench reaches into the product freely');
  t.same(namedByPath(join(root, 'test/kit/fixtures.ts')), [], 'a template is not a path');
  t.same(namedByPath(join(root, 'test/kit/server.ts')), ['../../bin/svc.mjs'], 'a path named with new URL is read');
});

t.test('every import of ours follows the rules', async (t) => {
  // bench/ holds the repository's own scenarios (free to reach into any room) and the harness, which is product code.
  const product = [...files(root), ...files(join(root, 'bench/harness'))];
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
