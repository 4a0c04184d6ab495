// The worker bundles: esbuild's name helper made cheap; where a bundle is written (beside the app's packages, or a
// private temporary folder when it has none — never svc's own folder) and how many a folder keeps; class names in stacks.
import t from 'tap';
import { build, transform } from 'esbuild';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE_IDLE_MS, cheapNames, compileWorker, KEPT_BUNDLES, plainClassNames } from '../../../transports/worker/index.ts';
import { runSvc } from '../../kit/index.ts';
import { asciiComments } from '../../../transports/worker/ascii-comments.mjs';

const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

// Two modules each declaring a top-level `Counter`: bundled together, esbuild renames one (`Counter2`).
const files: Record<string, string> = {
  'entry.ts': `import { Counter as Other } from './lib.ts';\nexport class Counter { n = 0 }\nexport function named() {}\nexport const arrow = (x: number) => x + 1;\nexport const closure = () => { const finish = () => 1; return finish; };\nexport { Other };`,
  'lib.ts': `export class Counter { m = 1 }`,
};

async function bundleNamed(): Promise<string> {
  const result = await build({
    stdin: { contents: `export * from './entry.ts';`, resolveDir: '/virtual', loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    keepNames: true,
    write: false,
    plugins: [
      {
        name: 'virtual',
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) => ({ path: args.path.replace('./', ''), namespace: 'v' }));
          b.onLoad({ filter: /.*/, namespace: 'v' }, (args) => ({ contents: files[args.path] ?? '', loader: 'ts' }));
        },
      },
    ],
  });
  return result.outputFiles[0]?.text ?? '';
}

t.test('the keepNames helper is found and made cheap for arrow functions', async (t) => {
  const code = await bundleNamed();
  t.match(code, /var __name = \(\w+, value\) => __defProp/, "esbuild still emits the helper this module rewrites (if this fails, esbuild changed it: update NAME_HELPER)");
  const cheap = cheapNames(code);
  t.not(cheap, code, 'the helper was rewritten');
  t.match(cheap, /\.prototype === undefined \?/);
  const mod = (await import(`data:text/javascript;base64,${Buffer.from(cheap).toString('base64')}`)) as Record<string, { name: string } & (() => () => unknown)>;
  t.equal(mod.Counter?.name, 'Counter', "a class renamed by the bundle keeps its source name");
  t.equal(mod.Other?.name, 'Counter', 'so does the other one');
  t.equal(mod.named?.name, 'named', 'a plain function keeps its name');
  t.equal(typeof mod.closure?.(), 'function', 'closures still work');
});

t.test('code without the helper is left as it is', async (t) => {
  t.equal(cheapNames('const a = 1;\n'), 'const a = 1;\n');
});

// ---- where bundles are written, and how many stay

const uid = process.getuid?.();
const realTmp = realpathSync(tmpdir());
/** A folder in or above the temporary folder that has node_modules (then no app there is without packages). */
const packagesOverTmp = (() => {
  for (let at = realTmp; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) return `${at} has node_modules: no folder without packages here`;
    if (dirname(at) === at) return false;
  }
})();
const inSvc = (file: string) => file.startsWith(`${realpathSync(PACKAGE_ROOT)}/`);
const appWith = (marker: string) =>
  `import { entry, Root, Walker } from 'svc';\nimport { Type } from 'typebox';\nexport const marker = ${JSON.stringify(marker)};\nexport const schema = Type.String();\nexport class Ping extends Walker {\n  static access = 'pub' as const;\n  @entry(Root) go() {\n    this.report('pong');\n  }\n}\n`;

t.test('an app with no node_modules in or above its folder: its bundle goes to a private temporary folder, not into svc', { skip: process.platform === 'win32' ? 'POSIX modes' : packagesOverTmp }, async (t) => {
  const dir = mkdtempSync(join(realTmp, 'svc-compile-nm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const marker = `no-packages-${process.pid}-${Date.now()}`;
  writeFileSync(join(dir, 'app.ts'), appWith(marker));
  const file = await compileWorker(join(dir, 'app.ts'));
  t.equal(dirname(file), join(realTmp, `svc-workers-${uid}`, 'svc-workers'), 'the user\'s folder under the temporary folder');
  t.notOk(inSvc(file), 'nothing written into svc\'s own folder');
  t.equal(statSync(dirname(dirname(file))).mode & 0o777, 0o700, 'closed to other users');
  const code = readFileSync(file, 'utf8');
  t.ok(code.includes(marker), 'the app is in it');
  t.match(code, /from "file:\/\/\/[^"]*\/node_modules\/typebox\//, 'its package import resolved from svc\'s folder');
  t.notMatch(code, /from "typebox"/, 'not left bare (nothing would find it from there)');
  // And a real `svc start --faux` loads it from there.
  const r = await runSvc(['start', 'app.ts', '--faux'], { cwd: dir, clean: true });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /POST \/walker\/Ping/);
  const svcCache = join(PACKAGE_ROOT, 'node_modules/.cache/svc-workers');
  // Other test files build bundles into this cache meanwhile (written, then renamed): a name gone by the time it is read held no app of ours.
  const holds = (n: string) => {
    try {
      return readFileSync(join(svcCache, n), 'utf8').includes(marker);
    } catch {
      return false;
    }
  };
  const inSvcCache = existsSync(svcCache) ? readdirSync(svcCache).filter(holds) : [];
  t.same(inSvcCache, [], 'no bundle of the app in svc\'s node_modules/.cache');
});

t.test('a temporary folder someone else made first (open to others, or a link) is not used', { skip: uid === undefined ? 'POSIX users' : packagesOverTmp }, async (t) => {
  const appDir = mkdtempSync(join(realTmp, 'svc-compile-planted-'));
  const tmp = mkdtempSync(join(realTmp, 'svc-compile-tmp-'));
  t.teardown(() => {
    rmSync(appDir, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  });
  writeFileSync(join(appDir, 'app.ts'), appWith(`planted-${Date.now()}`));
  const planted = join(tmp, `svc-workers-${uid}`);
  mkdirSync(join(planted, 'svc-workers'), { recursive: true });
  chmodSync(planted, 0o777);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  t.teardown(() => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  });
  // A module instance of its own, which has not picked its folder yet.
  const fresh = (await import(`${new URL('../../../transports/worker/compile.ts', import.meta.url).href}?planted`)) as typeof import('../../../transports/worker/compile.ts');
  const file = await fresh.compileWorker(join(appDir, 'app.ts'));
  t.notOk(file.startsWith(`${planted}/`), 'the folder open to others is not used');
  t.match(dirname(dirname(file)), new RegExp(`^${tmp}/svc-workers-${uid}-\\w+$`), 'a fresh one of its own');
  t.equal(statSync(dirname(dirname(file))).mode & 0o777, 0o700);
  t.same(readdirSync(join(planted, 'svc-workers')), [], 'nothing written into the planted one');
  // A link in its place (to a folder closed to others, say the planter's): not followed.
  const tmp2 = mkdtempSync(join(realTmp, 'svc-compile-tmp-'));
  const target = mkdtempSync(join(realTmp, 'svc-compile-target-'));
  t.teardown(() => {
    rmSync(tmp2, { recursive: true, force: true });
    rmSync(target, { recursive: true, force: true });
  });
  symlinkSync(target, join(tmp2, `svc-workers-${uid}`));
  process.env.TMPDIR = tmp2;
  const fresh2 = (await import(`${new URL('../../../transports/worker/compile.ts', import.meta.url).href}?linked`)) as typeof import('../../../transports/worker/compile.ts');
  const linked = await fresh2.compileWorker(join(appDir, 'app.ts'));
  t.match(dirname(dirname(linked)), new RegExp(`^${tmp2}/svc-workers-${uid}-\\w+$`), 'a link is not used either');
  t.same(readdirSync(target), [], 'nothing written through it');
});

t.test(`a bundle folder keeps ${KEPT_BUNDLES} bundles and those used in the last ${BUNDLE_IDLE_MS / 60_000} minutes; a pruned bundle comes back when asked for`, async (t) => {
  const dir = t.testdir({ node_modules: {} });
  const cache = join(dir, 'node_modules/.cache/svc-workers');
  const bundles = () => (existsSync(cache) ? readdirSync(cache).filter((n) => n.endsWith('.mjs')) : []);
  const old = (file: string, minutes: number) => {
    const at = new Date(Date.now() - minutes * 60_000);
    utimesSync(file, at, at);
  };
  const files: string[] = [];
  const total = KEPT_BUNDLES + 2;
  for (let i = 0; i < total; i++) {
    writeFileSync(join(dir, `app${i}.ts`), appWith(`app-${i}`));
    const file = await compileWorker(join(dir, `app${i}.ts`));
    t.equal(dirname(file), realpathSync(cache), 'under the app\'s node_modules/.cache, as before');
    files.push(file);
    // Last used an hour ago, the earliest first.
    old(file, 60 + total - i);
  }
  t.equal(bundles().length, KEPT_BUNDLES, `${total} written, ${KEPT_BUNDLES} kept`);
  t.notOk(existsSync(files[0] as string), 'the least recently used is gone');
  t.ok(existsSync(files[total - 1] as string), 'the newest is there');
  // This process still needs app0's bundle (a worker replaced later): asked for again, it is written back as it was.
  const again = await compileWorker(join(dir, 'app0.ts'));
  t.equal(again, files[0]);
  t.ok(existsSync(again), 'written again');
  t.equal(createHash('sha256').update(readFileSync(again, 'utf8')).digest('hex').slice(0, 16), basename(again, '.mjs'), 'the same bundle');
  // Bundles used recently are never removed, however many there are.
  for (const f of bundles()) utimesSync(join(cache, f), new Date(), new Date());
  writeFileSync(join(dir, 'late.ts'), appWith('late'));
  await compileWorker(join(dir, 'late.ts'));
  t.equal(bundles().length, KEPT_BUNDLES + 2, 'all used within the last minutes: none removed');
});

// ---- names in stack traces: esbuild's lowering of decorators renames a decorated class's binding (`_AddBookmark`)

const decorated = `function entry(_x: unknown) { return (method: unknown, _ctx: unknown) => method; }
export class AddBookmark {
  static access = 'pub' as const;
  static self = AddBookmark.access;
  @entry(1) add() { throw new Error('boom'); }
  static make() { return new AddBookmark(); }
}
export class Plain { add() { throw new Error('plain'); } }
`;

t.test("a decorated class keeps its source name in stack frames (`AddBookmark.add`, not the hook-like `_AddBookmark.add`)", async (t) => {
  const result = await build({ stdin: { contents: decorated, loader: 'ts', sourcefile: 'bookmarks.ts' }, bundle: true, format: 'esm', platform: 'node', target: 'node20', keepNames: true, write: false });
  const lowered = result.outputFiles[0]?.text ?? '';
  t.match(lowered, /var _AddBookmark = class _AddBookmark\b/, 'esbuild still renames the binding (if this fails, esbuild changed its lowering: LOWERED_CLASS may be unneeded)');
  const load = async (code: string) => (await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)) as Record<string, { make(): { add(): void }; access: string; self: string; name: string }>;
  const stackOf = (fn: () => void): string => {
    try {
      fn();
    } catch (error) {
      return (error as Error).stack ?? '';
    }
    return '';
  };
  const before = await load(lowered);
  t.match(stackOf(() => before.AddBookmark?.make().add()), /at _AddBookmark\.add/, 'as esbuild emits it, the frame names the renamed binding');
  const fixed = plainClassNames(lowered);
  t.not(fixed, lowered);
  const after = await load(fixed);
  const stack = stackOf(() => after.AddBookmark?.make().add());
  t.match(stack, /at AddBookmark\.add/, 'rewritten, it names the class');
  t.notMatch(stack, /_AddBookmark/);
  t.equal(after.AddBookmark?.name, 'AddBookmark');
  t.equal(after.AddBookmark?.self, 'pub', 'static members referring to the class still work');
  t.equal(plainClassNames('var _A = class _A {\n};\nvar B = _A;\n'), 'var _A = class _A {\n};\nvar B = _A;\n', 'not rewritten unless the module binds the plain name to the same class');
});

t.test('a walker that throws in a worker: the stack names the class and the TypeScript line', async (t) => {
  const dir = t.testdir({
    node_modules: {},
    'app.ts': `import { entry, Root, Walker } from 'svc';\nexport class AddBookmark extends Walker {\n  static access = 'pub' as const;\n  @entry(Root) add() {\n    throw new Error('boom');\n  }\n}\n`,
  });
  const { WorkerPool } = await import('../../../transports/worker/index.ts');
  const pool = await WorkerPool.start({ size: 1, module: new URL('./fixtures/throw-worker.ts', import.meta.url).href, app: join(dir, 'app.ts') });
  t.teardown(() => pool.close());
  const stack = (await pool.system.refFromAddress({ node: 'w1', path: '/user/thrower' }).ask('?')) as string;
  t.match(stack, /at AddBookmark\.add \(.*app\.ts:5:\d+\)/, 'AddBookmark.add, at the line of the throw in app.ts');
  t.notMatch(stack, /_AddBookmark/);
  t.match(stack, /throw-worker\.ts:\d+:\d+/, "the runtime's frames name svc's TypeScript files too (its map beside each chunk)");
  // The runtime's chunks: maps beside them, not inline, and only ASCII (V8 keeps a module's source as one byte a character then).
  const cache = join(dir, 'node_modules', '.cache', 'svc-workers');
  const runtime = readdirSync(cache).filter((n) => n.startsWith('rt-'));
  t.equal(runtime.length, 1, 'one runtime folder');
  const chunks = readdirSync(join(cache, runtime[0] as string)).filter((n) => n.endsWith('.mjs'));
  t.ok(chunks.length > 1, `${chunks.length} chunks`);
  for (const name of chunks) {
    const code = readFileSync(join(cache, runtime[0] as string, name), 'utf8');
    t.ok(/^[\x00-\x7f]*$/.test(code), `${name} is ASCII`);
    t.notMatch(code, /sourceMappingURL=data:/, `${name} has no inline map`);
    t.ok(existsSync(join(cache, runtime[0] as string, `${name}.map`)), `${name}.map beside it`);
  }
});

/** esbuild's output of `source`, as the worker builds print it. */
async function printed(source: string): Promise<string> {
  const result = await build({ stdin: { contents: source, loader: 'ts' }, bundle: true, format: 'esm', write: false });
  return result.outputFiles[0]?.text ?? '';
}

const importText = async <T>(code: string): Promise<T> => (await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)) as T;

t.test("a bundle's comments lose their non-ASCII characters, its code keeps every character it means", async (t) => {
  const code = await printed(
    [
      '/** A \u2014 B */',
      'export class K {',
      '  /** the \u2192 member',
      '   * more \u2014 text',
      '   */',
      '  m() {',
      "    return String.raw`// r\u00e9` + 'http://x' + /\\/\u00e9/.test('/\u00e9');",
      '  }',
      '}',
      "export const arrow = '\u2192';",
      '/* block \u2014 */',
      'export function f() { return 1; }',
    ].join('\n'),
  );
  t.notOk(/^[\x00-\x7f]*$/.test(code), 'esbuild kept a comment as written');
  const ascii = await asciiComments(code, transform);
  t.notOk(/[^\x00-\x7f]/.test(ascii.split('\n').filter((l: string) => !l.includes('String.raw')).join('\n')), 'the comments are ASCII');
  t.match(ascii, /String\.raw`\/\/ r\u00e9` \+ "http:\/\/x" \+ \/\\\/\u00e9\//, 'a line of code keeps its characters, even after a `//` in a template');
  t.equal(ascii.length, code.length, 'one character for one: source maps keep their columns');
  const mod = await importText<{ arrow: string; K: new () => { m(): string } }>(ascii);
  t.equal(mod.arrow, '\u2192', 'a string keeps its character');
  t.equal(new mod.K().m(), '// r\u00e9http://xtrue', 'so do a raw template and a regular expression');
  t.equal(await asciiComments('const a = 1;\n', transform), 'const a = 1;\n', 'ASCII code is left as it is');
});

t.test('lines of a tagged template that look like comments: the bundle is left as it is, not changed in meaning', async (t) => {
  const code = await printed(
    [
      '/** a \u2014 comment */',
      'export const raw = String.raw`',
      '  // caf\u00e9',
      '  /* glob: src/**',
      '`;',
      'export const re = /caf\u00e9/;',
      'export const word = String.raw`na\u00efve`;',
    ].join('\n'),
  );
  const out = await asciiComments(code, transform);
  t.equal(out, code, 'nothing rewritten: the lines inside the template are code');
  const mod = await importText<{ raw: string; re: RegExp; word: string }>(out);
  t.match(mod.raw, /\/\/ caf\u00e9/);
  t.ok(mod.re.test('caf\u00e9'));
  t.equal(mod.word, 'na\u00efve');
});

t.test(`manifests and runtime folders are pruned like bundles: beyond ${KEPT_BUNDLES}, those unused for ${BUNDLE_IDLE_MS / 60_000} minutes go`, async (t) => {
  const dir = t.testdir({ node_modules: { '.cache': { 'svc-workers': {} } } });
  const cache = join(dir, 'node_modules/.cache/svc-workers');
  const hex = (i: number) => i.toString(16).padStart(16, '0');
  const aged = new Date(Date.now() - 2 * 60 * 60_000);
  for (let i = 0; i < KEPT_BUNDLES + 3; i++) {
    mkdirSync(join(cache, `rt-${hex(i)}`));
    writeFileSync(join(cache, `rt-${hex(i)}`, 'worker.mjs'), '');
    writeFileSync(join(cache, `${hex(i)}.json`), '{}');
    utimesSync(join(cache, `rt-${hex(i)}`), aged, aged);
    utimesSync(join(cache, `${hex(i)}.json`), aged, aged);
  }
  // Enough bundles that writing one prunes the folder.
  for (let i = 0; i < KEPT_BUNDLES + 1; i++) writeFileSync(join(cache, `${hex(100 + i)}.mjs`), '');
  writeFileSync(join(dir, 'app.ts'), appWith('prune'));
  await compileWorker(join(dir, 'app.ts'));
  const left = readdirSync(cache);
  t.equal(left.filter((n) => /^rt-/.test(n)).length, KEPT_BUNDLES, `${KEPT_BUNDLES} runtime folders kept`);
  t.ok(left.filter((n) => n.endsWith('.json')).length <= KEPT_BUNDLES + 1, 'old manifests removed (the new one kept)');
});
