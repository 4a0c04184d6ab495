// svc outside this repository, as a user gets it: `svc init`, `npm pack`, `npm install <tarball>`,
// `npx svc start app.ts` in a new folder — and svc installed as a symlink to a checkout (what
// `npm install <path>` makes), whose worker bundle must find svc's dependencies in the checkout.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

// npm install of every dependency (from the npm cache) and a type-check of svc's sources take a while.
t.setTimeout(600_000);

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const BIN = join(REPO, 'bin/svc.mjs');
const repoPackage = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };

/**
 * The environment of a user's shell: no tap loader in NODE_OPTIONS, none of the `npm_*` variables
 * `npm test` sets for this repository (npm_config_local_prefix names it), only the user's npm settings.
 */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_ACCESS_LOG: 'false' };
  delete env.NODE_OPTIONS;
  for (const key of Object.keys(env)) {
    if (/^npm_/i.test(key) && !/^npm_config_(cache|userconfig|globalconfig|cafile|registry)$/i.test(key)) delete env[key];
  }
  return env;
}

/** Run a command to completion. */
function run(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const p = spawn(cmd, args, { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d));
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('error', fail);
    p.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

interface Served {
  url: string;
  output(): string;
  /** SIGTERM to the whole process group; resolves once every process of it has let go of the output pipes. */
  stop(): Promise<void>;
}

/**
 * Start a server command in its own process group; resolves once it prints `Server ready at http://HOST:PORT`.
 * `npx` does not pass SIGTERM on to the command it runs, so the server is stopped as a terminal stops
 * a foreground job: the signal goes to the group (npx, svc), and the test waits for svc's pipes to close.
 */
async function serve(cmd: string, args: string[], cwd: string): Promise<Served> {
  const proc = spawn(cmd, args, { cwd, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const closed = (stream: NodeJS.ReadableStream) => new Promise<void>((done) => stream.once('close', done));
  const released = Promise.all([closed(proc.stdout), closed(proc.stderr)]).then(() => undefined);
  const exited = new Promise<number | NodeJS.Signals | null>((done) => proc.once('exit', (code, signal) => done(code ?? signal)));
  const stop = () => {
    try {
      process.kill(-(proc.pid as number), 'SIGTERM');
    } catch {
      // the group is gone already
    }
    return released;
  };
  try {
    const url = await new Promise<string>((done, fail) => {
      const onLine = (line: string) => {
        out += `${line}\n`;
        const m = /Server ready at (http:\/\/\S+)/.exec(line);
        if (m) done(m[1] as string);
      };
      createInterface({ input: proc.stdout }).on('line', onLine);
      createInterface({ input: proc.stderr }).on('line', onLine);
      void exited.then((code) => fail(new Error(`${cmd} ${args.join(' ')} exited (${code}) before it was ready:\n${out}`)));
    });
    return { url, output: () => out, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function walker(url: string, name: string, body: unknown = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/walker/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** A temp folder under the OS's, removed when the test ends, after the servers started in it stop. */
function tempRoot(t: Test, prefix: string): { root: string; servers: Served[] } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const servers: Served[] = [];
  t.teardown(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    rmSync(root, { recursive: true, force: true });
  });
  return { root, servers };
}

/** The folders of svc's worker runtime written for an app under its nearest node_modules/.cache, each as the text of its files (the app's own bundle and entry are beside them). */
function workerBundles(project: string): string[] {
  const dir = join(project, 'node_modules/.cache/svc-workers');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /^rt-[0-9a-f]{16}$/.test(name))
    .map((name) => readdirSync(join(dir, name)).map((file) => readFileSync(join(dir, name, file), 'utf8')).join('\n'));
}

t.test('svc init, npm pack, npm install <tarball>, npx svc start app.ts: a project outside the repository', async (t) => {
  const { root, servers } = tempRoot(t, 'svc-pack-');
  const project = join(root, 'My_App');

  const init = await run(process.execPath, [BIN, 'init', 'My_App'], root);
  t.equal(init.code, 0, init.stderr);
  t.match(init.stdout, /cd My_App/);
  t.match(init.stdout, /npm install/);
  const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
  t.match(pkg, {
    name: 'my_app',
    private: true,
    type: 'module',
    scripts: { start: 'svc start app.ts', dev: 'svc start app.ts --dev' },
    engines: { node: '>=20.6' },
    dependencies: { svc: /^file:/ },
    devDependencies: { '@types/node': repoPackage.devDependencies['@types/node'], typescript: repoPackage.dependencies.typescript },
  });
  t.equal(resolve(project, pkg.dependencies.svc.slice('file:'.length)), REPO, 'a checkout: the dependency is its folder');
  const tsconfig = readFileSync(join(project, 'tsconfig.json'), 'utf8');
  t.notMatch(tsconfig, /experimentalDecorators/, 'standard decorators');
  t.match(JSON.parse(tsconfig), { compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'] } });
  const gitignore = readFileSync(join(project, '.gitignore'), 'utf8').split('\n');
  t.ok(gitignore.includes('.svc/') && gitignore.includes('node_modules/'), '.gitignore has .svc/ and node_modules/');
  t.match(readFileSync(join(project, 'svc.toml'), 'utf8'), /^\[scale\.server\]$/m);

  // An existing project is not overwritten, and the message names the files; --force replaces them.
  writeFileSync(join(project, 'svc.toml'), '# mine\n');
  const again = await run(process.execPath, [BIN, 'init', '.'], project);
  t.equal(again.code, 1);
  t.match(again.stderr, /^svc: not overwriting package\.json, app\.ts, test\/app\.test\.ts, svc\.toml, tsconfig\.json, \.gitignore in .*My_App \(use --force/);
  t.equal(readFileSync(join(project, 'svc.toml'), 'utf8'), '# mine\n', 'left alone');
  const forced = await run(process.execPath, [BIN, 'init', '.', '--force'], project);
  t.equal(forced.code, 0, forced.stderr);
  t.match(readFileSync(join(project, 'svc.toml'), 'utf8'), /\[scale\.server\]/);

  // The package as `npm pack` makes it: the runtime's sources, nothing of the tests or benchmarks.
  const dest = join(root, 'pack');
  mkdirSync(dest);
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dest], REPO);
  t.equal(packed.code, 0, packed.stderr);
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  const files = info!.files.map((f) => f.path);
  // The README links the docs pages (and `svc mcp` serves them): they ship with it.
  for (const needed of ['package.json', 'README.md', 'docs/index.md', 'docs/tutorial/bookmarks.md', 'docs/reference/settings.md', 'docs/errors.md', 'index.ts', 'dist/types/index.d.ts', 'dist/types/client/index.d.ts', 'dist/types/runtime/testing.d.ts', 'dist/types/kernel/index.d.ts', 'bin/svc.mjs', 'cli/index.ts', 'cli/commands/init.ts', 'cli/commands/bench.ts', 'bench/harness/index.ts', 'bench/harness/engine-worker.ts', 'transports/worker/compile.ts', 'transports/http/portal/index.html', 'transports/http/graph/graph.js', 'actors/identity/hash-thread.mjs']) {
    t.ok(files.includes(needed), `the package has ${needed}`);
  }
  // bench/harness is `svc bench`'s load harness (product code); the repository's own benchmarks and results stay out.
  t.same(files.filter((f) => (/^(test|bench|node_modules|\.scratch|\.ci|\.tap)\/|(^|\/)\.svc\//.test(f) && !f.startsWith('bench/harness/'))), [], 'no tests, benchmarks or data');
  // The declarations an app's tsc reads (package.json `exports` → `types`), built by `prepare`; not the build's own state.
  t.same(files.filter((f) => f.startsWith('dist/') && !(f.startsWith('dist/types/') && f.endsWith('.d.ts'))), [], 'dist/ holds declarations only');
  // (A comment may show one: `@example` lines start with ` * `.)
  const tsImport = /^(?:import|export)\b.* from '\.{1,2}\/[^']*\.m?ts';$|^(?! \*).*import\("\.{1,2}\/[^"]*\.m?ts"\)/m;
  t.same(files.filter((f) => f.startsWith('dist/types/') && tsImport.test(readFileSync(join(REPO, f), 'utf8'))), [], 'no declaration imports a .ts file (which would bring the sources back)');
  const tarball = join(dest, info!.filename);

  // --ignore-scripts: better-sqlite3 is not built; this repository's build of the same pinned version is copied
  // in instead, so the test does not spend minutes compiling SQLite.
  const install = await run('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], project);
  t.equal(install.code, 0, install.stderr);
  t.notOk(lstatSync(join(project, 'node_modules/svc')).isSymbolicLink(), 'svc is unpacked into node_modules');
  t.match(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies, { svc: /svc-0\.1\.0\.tgz$|\.tgz$/ });
  const sqliteVersion = (dir: string) => (JSON.parse(readFileSync(join(dir, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }).version;
  t.equal(sqliteVersion(project), sqliteVersion(REPO), 'the same better-sqlite3 as the repository');
  const addon = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
  mkdirSync(join(project, 'node_modules/better-sqlite3/build/Release'), { recursive: true });
  cpSync(join(REPO, addon), join(project, addon));

  // A walker of the user's own, in a module of its own that app.ts re-exports.
  writeFileSync(
    join(project, 'greet.ts'),
    `import { entry, Node, Root, T, Walker } from 'svc';

export class Greeting extends Node {
  static has = T.Object({ who: T.String() });
  declare who: string;
}

export class Greet extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ who: T.String({ minLength: 1 }) });
  declare who: string;
  @entry(Root) async greet(here: Root) {
    const greeting = await here.connect(new Greeting({ who: this.who }));
    this.report(\`hello, \${greeting.who}\`);
  }
}
`,
  );
  writeFileSync(join(project, 'app.ts'), `${readFileSync(join(project, 'app.ts'), 'utf8')}\nexport * from './greet.ts';\n`);

  // The scaffold, its test and the user's walker type-check (its tsconfig, Node's types, svc's declarations from node_modules).
  const typecheck = await run('npm', ['run', 'typecheck'], project);
  t.equal(typecheck.code, 0, `${typecheck.stdout}${typecheck.stderr}`);
  const program = await run(process.execPath, [join(project, 'node_modules/typescript/lib/tsc.js'), '-p', '.', '--listFilesOnly'], project);
  t.equal(program.code, 0, `tsc --listFilesOnly ${program.stderr}`);
  const svcFiles = program.stdout.split('\n').filter((f) => f.includes('/node_modules/svc/'));
  t.ok(svcFiles.length > 20, `${svcFiles.length} files of svc in the app's program`);
  t.same(svcFiles.filter((f) => !/\/node_modules\/svc\/dist\/types\/.*\.d\.ts$/.test(f)), [], 'all of them declarations: no svc source is checked');

  // svc init from the installed svc: the new project depends on svc as this one does, the path rebased.
  const second = await run('npx', ['--no', 'svc', 'init', '../second'], project);
  t.equal(second.code, 0, second.stderr);
  t.equal(JSON.parse(readFileSync(join(root, 'second/package.json'), 'utf8')).dependencies.svc, `file:../pack/${info!.filename}`);

  // `npx --no`: never fetch a package named svc from a registry, use the project's.
  const server = await serve('npx', ['--no', 'svc', 'start', 'app.ts', '--port', '0', '--host', '127.0.0.1', '--workers', '1'], project);
  servers.push(server);
  t.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const added = await walker(server.url, 'AddNote', { text: 'from a tarball' });
  t.equal(added.status, 200, JSON.stringify(added.body));
  t.match(added.body, { ok: true, data: { reports: [{ type: 'Note', context: { text: 'from a tarball' } }] } });
  const listed = await walker(server.url, 'ListNotes');
  t.match(listed.body, { ok: true, data: { reports: [{ type: 'Note', context: { text: 'from a tarball' } }] } });
  const greeted = await walker(server.url, 'Greet', { who: 'world' });
  t.equal(greeted.status, 200, JSON.stringify(greeted.body));
  t.same(greeted.body.data.reports, ['hello, world'], 'the user\'s own walker, over HTTP');
  t.equal((await walker(server.url, 'Greet', { who: '' })).status, 400, 'with its own validation');
  t.equal((await fetch(`${server.url}/docs`)).status, 200, 'the docs\' assets are found in node_modules');
  t.equal((await fetch(`${server.url}/graph`)).status, 200, 'so are the graph visualizer\'s');
  t.equal((await fetch(`${server.url}/admin`)).status, 200, 'so are the admin portal\'s files');
  t.ok(workerBundles(project).length > 0, 'the worker runtime is under the project\'s node_modules/.cache');

  await server.stop();
  t.match(server.output(), /Server ready/);
  t.notMatch(server.output(), /\n\s+at /, 'no stack trace on the way down');
  await t.rejects(fetch(`${server.url}/healthz`), 'SIGTERM: nothing serves any more');
});

t.test('svc installed as a symlink to the checkout: the worker bundle finds svc\'s dependencies there', async (t) => {
  const { root, servers } = tempRoot(t, 'svc-link-');
  const project = join(root, 'linked');
  const init = await run(process.execPath, [BIN, 'init', project], root);
  t.equal(init.code, 0, init.stderr);
  // What `npm install <checkout>` makes (a symlink; svc's dependencies stay in the checkout's node_modules),
  // made by hand: npm would also install the scaffold's devDependencies, which this test does not need.
  mkdirSync(join(project, 'node_modules'));
  symlinkSync(REPO, join(project, 'node_modules/svc'), 'dir');
  t.notOk(existsSync(join(project, 'node_modules/jose')), 'the project has none of svc\'s dependencies');

  const server = await serve(process.execPath, [join(project, 'node_modules/svc/bin/svc.mjs'), 'start', 'app.ts', '--port', '0', '--host', '127.0.0.1', '--workers', '1'], project);
  servers.push(server);
  const added = await walker(server.url, 'AddNote', { text: 'through a symlink' });
  t.equal(added.status, 200, JSON.stringify(added.body));
  const listed = await walker(server.url, 'ListNotes');
  t.match(listed.body, { ok: true, data: { reports: [{ type: 'Note', context: { text: 'through a symlink' } }] } });

  // The walkers ran in a worker thread, on a bundle in the project that imports svc's dependencies from the checkout.
  const bundles = workerBundles(project);
  t.equal(bundles.length, 1, 'one worker runtime in the project\'s node_modules/.cache');
  t.ok(bundles[0]?.includes(pathToFileURL(join(REPO, 'node_modules/jose')).href), 'jose by its URL in the checkout');
  t.notMatch(bundles[0] ?? '', /from "jose"/, 'no bare import of svc\'s dependencies');
  await server.stop();
  await t.rejects(fetch(`${server.url}/healthz`), 'SIGTERM: nothing serves any more');
});
