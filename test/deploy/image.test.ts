// The app's image without a container engine: the staged build context (what goes in, what never does), the generated
// Dockerfile, the content-derived tag, the app's own dependencies, registry credentials from .env and the environment,
// and `--build` against a recording fake of the docker-compatible command (argv and stdin recorded; the password only
// ever on stdin). The real build and run are in test/integration/deploy/image-podman.test.ts.
import t from 'tap';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildAndPush,
  type BuildAndPushOptions,
  buildImageFor,
  chooseContainerCli,
  contentTag,
  dockerfile,
  IMAGE_ERRORS,
  ImageError,
  imageConfigFiles,
  imageContext,
  type ImageContextOptions,
  parseDotEnv,
  registryCredentials,
  type Runner,
  SVC_ROOT,
} from '../../deploy/image/index.ts';
import { prunedFile, runtimePackages, withoutPackage } from '../../deploy/image/modules.ts';

const APP = "import { Walker, entry, Root } from 'svc';\nexport class Echo extends Walker {\n  static access = 'pub' as const;\n  @entry(Root) go() { this.report('hi'); }\n}\n";

/** A project as a user has it, with everything that must stay out of the image. */
function project(t: { teardown(fn: () => void): void }, extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-image-unit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'app.ts': APP,
    'lib/util.ts': 'export const x = 1;\n',
    'package.json': JSON.stringify({ name: 'demo', version: '1.0.0', type: 'module', dependencies: { svc: 'file:../svc' } }),
    'svc.toml': '[scale.server]\nport = 8000\n',
    '.env': 'SVC_REGISTRY_PASSWORD=from-dot-env\n',
    '.env.production': 'JWT_SECRET=also-secret\n',
    '.env.example': 'SVC_REGISTRY_PASSWORD=\n',
    'node_modules/left/index.js': 'x',
    '.svc/data/users.db': 'x',
    '.git/HEAD': 'ref: refs/heads/main\n',
    'dist/app.js': 'x',
    'bench-results/run.json': '{}',
    'lib/.env': 'NESTED=secret\n',
    ...extra,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function stage(t: { teardown(fn: () => void): void }, dir: string, options: Partial<ImageContextOptions> = {}) {
  const context = imageContext({ entry: join(dir, 'app.ts'), projectRoot: dir, baseImage: 'node:20-bookworm-slim', port: 8000, deps: 'build', ...options });
  t.teardown(() => context.cleanup());
  return context;
}

/** Every path under `dir` (`/`-separated, relative). */
function walk(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, rel))) {
    const path = rel === '' ? name : `${rel}/${name}`;
    out.push(path);
    if (statSync(join(dir, path)).isDirectory()) out.push(...walk(dir, path));
  }
  return out;
}

t.test('deps = build: a multi-stage Dockerfile, non-root, svc started by node itself in exec form', async (t) => {
  const context = stage(t, project(t));
  const text = context.dockerfile;
  t.equal(readFileSync(join(context.dir, 'Dockerfile'), 'utf8'), text, 'the Dockerfile is in the context');
  const froms = text.split('\n').filter((l) => l.startsWith('FROM '));
  t.same(froms, ['FROM node:20-bookworm AS deps', 'FROM node:20-bookworm-slim'], 'a build stage with npm and a toolchain, a slim runtime stage');
  t.match(text, /^RUN npm ci --omit=dev /m, "svc's production dependencies from its lockfile");
  t.match(text, 'COPY svc/package.json svc/package-lock.json ./');
  t.match(text, 'COPY --from=deps /build/svc/node_modules/ /app/node_modules/svc/node_modules/');
  t.notMatch(text, /app-deps/, 'an app that depends on nothing but svc installs nothing of its own');
  t.match(text, /^WORKDIR \/app$/m);
  t.match(text, /^USER 1000:1000$/m, 'a numeric non-root user');
  t.ok(text.indexOf('USER 1000:1000') > text.lastIndexOf('COPY '), 'every file is copied as root before the user switch');
  t.match(text, /^COPY --chown=1000:1000 writable\/ \/app\/\.svc\/$/m, 'the data folder is the user\'s');
  t.match(text, /^ENV NODE_ENV=production SVC_HOST=0\.0\.0\.0 SVC_PORT=8000$/m);
  t.match(text, /^EXPOSE 8000$/m);
  t.match(text, /^STOPSIGNAL SIGTERM$/m);
  t.match(text, /^ENTRYPOINT \["node", "\/app\/node_modules\/svc\/bin\/svc\.mjs"\]$/m, 'node is PID 1: exec form, no shell, no npm');
  t.match(text, /^CMD \["start", "app\.ts", "--host", "0\.0\.0\.0", "--port", "8000"\]$/m);
  t.notMatch(text, /\bnpm (start|run|exec)\b|\bnpx\b|sh -c/, 'nothing between the runtime and node');
  t.notMatch(text, /\.env\b/, 'no .env is named, let alone copied');
  t.equal(buildImageFor('node:20-bookworm-slim'), 'node:20-bookworm');
  t.equal(buildImageFor('registry.example.com:5000/node:20-slim'), 'registry.example.com:5000/node:20');
  t.equal(buildImageFor('node:20-bookworm'), 'node:20-bookworm');
  t.equal(stage(t, project(t), { buildImage: 'my/builder:1' }).dockerfile.split('\n').find((l) => l.startsWith('FROM ')), 'FROM my/builder:1 AS deps');
  t.match(stage(t, project(t), { port: 9090 }).dockerfile, /^CMD \["start", "app\.ts", "--host", "0\.0\.0\.0", "--port", "9090"\]$/m);
});

t.test('the context: the project without installs, local data, history, build output or any .env; svc without tests', async (t) => {
  const context = stage(t, project(t));
  const paths = walk(context.dir);
  const app = paths.filter((p) => p.startsWith('app/')).sort();
  t.same(app, ['app/.env.example', 'app/app.ts', 'app/lib', 'app/lib/util.ts', 'app/package.json', 'app/svc.toml'], 'the project, and only what belongs in an image');
  t.same(paths.filter((p) => /(^|\/)\.env(\.[a-z]+)?$/.test(p) && !p.endsWith('.env.example')), [], 'no .env anywhere in the context');
  for (const name of ['node_modules', '.svc', '.git', 'dist', 'bench-results']) t.notOk(paths.includes(`app/${name}`), `no ${name}`);
  t.ok(existsSync(join(context.dir, 'svc/bin/svc.mjs')) && existsSync(join(context.dir, 'svc/cli/index.ts')) && existsSync(join(context.dir, 'svc/index.ts')), "svc's command and door");
  t.ok(existsSync(join(context.dir, 'svc/package.json')) && existsSync(join(context.dir, 'svc/package-lock.json')), 'its package.json and lockfile');
  t.ok(existsSync(join(context.dir, 'svc/deploy/image/index.ts')) && existsSync(join(context.dir, 'svc/docs/errors.md')) && existsSync(join(context.dir, 'svc/bench/harness')), 'deploy/, docs/ and the load harness the CLI imports');
  for (const gone of ['test', 'examples', 'node_modules', 'bench/ab-http.ts']) t.notOk(existsSync(join(context.dir, 'svc', gone)), `no svc/${gone}`);
  t.notOk(paths.some((p) => p.startsWith('svc-modules')), 'deps = build copies no packages');
  t.match(readFileSync(join(context.dir, '.dockerignore'), 'utf8'), /^\*\*\/\.env$/m, '.dockerignore keeps any .env out as well');
  t.match(context.entry, 'app.ts');
});

t.test('the tag: derived from the content — stable for the same files, changed by a one-byte edit, never latest', async (t) => {
  const dir = project(t);
  const first = stage(t, dir).tag;
  t.match(first, /^[0-9a-f]{12}$/, '12 hex digits');
  t.equal(stage(t, dir).tag, first, 'staged again: the same tag');
  const twin = project(t);
  t.equal(stage(t, twin).tag, first, 'the same project in another folder: the same tag');
  writeFileSync(join(dir, 'app.ts'), APP.replace("'hi'", "'ho'"));
  const edited = stage(t, dir).tag;
  t.not(edited, first, 'a one-byte edit: another tag');
  writeFileSync(join(dir, '.env'), 'SVC_REGISTRY_PASSWORD=changed\n');
  writeFileSync(join(dir, '.svc/data/users.db'), 'changed');
  t.equal(stage(t, dir).tag, edited, 'what stays out of the image does not change the tag');
  t.not(stage(t, dir, { port: 8001 }).tag, edited, 'nor does the Dockerfile stay out of it');
  const options = { entry: join(dir, 'app.ts'), projectRoot: dir, baseImage: 'node:20-bookworm-slim', port: 8000, deps: 'build' as const };
  t.equal(contentTag(options), edited, 'the dry run\'s tag (nothing staged) is the tag of the build');
});

t.test('the app\'s own dependencies: svc taken out of package.json and lockfile, npm ci from the lock, npm install once packages are added or pinned', async (t) => {
  const lock = {
    name: 'demo',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'demo', version: '1.0.0', dependencies: { dayjs: '^1.11.0', svc: 'file:../svc' }, devDependencies: { typescript: '5.9.3' } },
      '../svc': { version: '0.1.0', dependencies: { cac: '7.1.0' } },
      '../svc/node_modules/cac': { version: '7.1.0' },
      'node_modules/dayjs': { version: '1.11.13', integrity: 'sha512-dayjs-of-the-fixture' },
      'node_modules/svc': { resolved: '../svc', link: true },
      'node_modules/typescript': { version: '5.9.3', dev: true },
    },
  };
  const pkg = { name: 'demo', version: '1.0.0', type: 'module', scripts: { prepare: 'tsc' }, dependencies: { dayjs: '^1.11.0', svc: 'file:../svc' }, devDependencies: { typescript: '5.9.3' } };
  const dir = project(t, { 'package.json': JSON.stringify(pkg), 'package-lock.json': JSON.stringify(lock) });
  const context = stage(t, dir);
  const staged = JSON.parse(readFileSync(join(context.dir, 'app-deps/package.json'), 'utf8')) as typeof pkg;
  t.same(staged.dependencies, { dayjs: '^1.11.0' }, 'svc is not installed from the registry: it is copied beside');
  t.notOk('scripts' in staged, "the app's scripts do not run in the build");
  const stagedLock = JSON.parse(readFileSync(join(context.dir, 'app-deps/package-lock.json'), 'utf8')) as typeof lock;
  t.same(Object.keys(stagedLock.packages).sort(), ['', 'node_modules/dayjs', 'node_modules/typescript'], "the lockfile without svc's entries");
  t.same(stagedLock.packages[''].dependencies, { dayjs: '^1.11.0' });
  t.match(context.dockerfile, /^COPY app-deps\/ \.\/\nRUN npm ci --omit=dev /m, 'installed exactly as locked');
  t.match(context.dockerfile, 'COPY --from=deps /build/app/node_modules/ /app/node_modules/');

  const added = stage(t, dir, { additionalPackages: ['@scope/extra@2.0.0', 'leftpad'], pluginVersions: { dayjs: '1.11.10', svc: 'none' } });
  const addedPkg = JSON.parse(readFileSync(join(added.dir, 'app-deps/package.json'), 'utf8')) as typeof pkg;
  t.same(addedPkg.dependencies, { dayjs: '1.11.10', '@scope/extra': '2.0.0', leftpad: 'latest' }, 'additional_packages added, plugin_versions pinned');
  t.match(added.dockerfile, /^RUN npm install --omit=dev /m, 'npm install: the lockfile no longer holds them all');
  const none = stage(t, dir, { pluginVersions: { dayjs: 'none' } });
  t.notOk(existsSync(join(none.dir, 'app-deps')), '`none` leaves a package out: nothing left to install');
  t.throws(() => stage(t, dir, { additionalPackages: ['--evil'] }), { code: 'SVC_ERR_IMAGE_CONTEXT' }, 'a package name must be one');
  t.throws(() => stage(t, dir, { pluginVersions: { dayjs: '1.0; rm -rf /' } }), { code: 'SVC_ERR_IMAGE_CONTEXT' }, 'so must a version');

  // svc installed from a tarball: its dependencies are hoisted into the app's lockfile; only what the app reaches stays.
  const hoisted = withoutPackage(
    {
      lockfileVersion: 3,
      packages: {
        '': { dependencies: { svc: 'file:svc-0.1.0.tgz', ms: '2' } },
        'node_modules/svc': { version: '0.1.0', dependencies: { cac: '7' } },
        'node_modules/cac': { version: '7.1.0' },
        'node_modules/ms': { version: '2.1.3' },
      },
    },
    'svc',
  ) as { packages: Record<string, unknown> };
  t.same(Object.keys(hoisted.packages).sort(), ['', 'node_modules/ms'], "svc's hoisted packages go with it");
});

t.test('an entry outside the project, or a missing one, is refused before anything is staged', async (t) => {
  const dir = project(t);
  t.throws(() => imageContext({ entry: '/etc/passwd', projectRoot: dir, baseImage: 'node:20', port: 8000, deps: 'build' }), { code: 'SVC_ERR_IMAGE_CONTEXT' });
  t.throws(() => imageContext({ entry: join(dir, 'nope.ts'), projectRoot: dir, baseImage: 'node:20', port: 8000, deps: 'build' }), { code: 'SVC_ERR_IMAGE_CONTEXT' });
  t.throws(() => imageContext({ entry: join(dir, 'app.ts'), projectRoot: dir, baseImage: 'node:20', port: 0, deps: 'build' }), { code: 'SVC_ERR_IMAGE_CONTEXT' });
});

t.test('deps = host: svc\'s production packages copied from its install, without what only a build needs; one stage', async (t) => {
  const packages = runtimePackages(SVC_ROOT);
  const names = new Set(packages.map((p) => p.name));
  for (const name of ['better-sqlite3', 'uWebSockets.js', 'tsx', 'esbuild', 'jose', 'bindings']) t.ok(names.has(name), `${name} is in`);
  for (const name of ['tap', 'fastify', 's3rver', 'oidc-provider', '@types/node']) t.notOk(names.has(name), `${name} (a development dependency) is not`);
  t.ok(prunedFile('better-sqlite3', 'deps', true, true) && prunedFile('better-sqlite3', 'build/Release/obj.target', true, true), "better-sqlite3's C sources and object files are left out");
  t.notOk(prunedFile('better-sqlite3', 'build/Release/better_sqlite3.node', false, true), 'its addon is not');
  t.notOk(prunedFile('typebox', 'build/value/index.mjs', false, false), 'a build/ folder of a package that is not an addon is code');
  t.ok(prunedFile('uWebSockets.js', 'binaries/uws_darwin_arm64_115.node', false, false, 'linux_x64_115.node'), "another platform's binary is left out");
  t.notOk(prunedFile('uWebSockets.js', 'binaries/uws_linux_x64_115.node', false, false, 'linux_x64_115.node'), "this one's is not");

  const context = stage(t, project(t), { deps: 'host', baseImage: 'localhost/node-base:20' });
  const froms = context.dockerfile.split('\n').filter((l) => l.startsWith('FROM '));
  t.same(froms, ['FROM localhost/node-base:20'], 'one stage: nothing is installed in the image');
  t.notMatch(context.dockerfile, /\bRUN\b/, 'no RUN: a base image without a shell will do');
  t.match(context.dockerfile, 'COPY svc-modules/ /app/node_modules/svc/node_modules/');
  t.ok(existsSync(join(context.dir, 'svc-modules/better-sqlite3/build/Release/better_sqlite3.node')), "this machine's better-sqlite3 build is reused");
  t.notOk(existsSync(join(context.dir, 'svc-modules/better-sqlite3/deps')), 'without its sources');
  t.notOk(existsSync(join(context.dir, 'svc-modules/tap')), 'no development packages');
});

t.test('registry credentials: .env and the environment, the environment first; the original names too', async (t) => {
  t.same(parseDotEnv('# registry\nexport SVC_REGISTRY_USERNAME=alice # me\nSVC_REGISTRY_PASSWORD="p#ss \\"quoted\\""\nDOCKER_PASSWORD=\'single # kept\'\nnot an assignment\n'), {
    SVC_REGISTRY_USERNAME: 'alice',
    SVC_REGISTRY_PASSWORD: 'p#ss "quoted"',
    DOCKER_PASSWORD: 'single # kept',
  });
  const dir = project(t, { '.env': 'SVC_REGISTRY_USERNAME=alice\nSVC_REGISTRY_PASSWORD="from-dot-env"\n' });
  t.same(registryCredentials(dir, {}), { username: 'alice', password: 'from-dot-env' }, 'from .env');
  t.same(registryCredentials(dir, { SVC_REGISTRY_PASSWORD: 'from-env' }), { username: 'alice', password: 'from-env' }, 'the environment wins, variable by variable');
  t.same(registryCredentials(dir, { DOCKER_USERNAME: 'bob', DOCKER_PASSWORD: 'docker-env' }), { username: 'bob', password: 'docker-env' }, "the original product's names, from the environment, before .env");
  t.same(registryCredentials(dir, { SVC_REGISTRY_PASSWORD: '' }), { username: 'alice', password: 'from-dot-env' }, 'an empty variable is not set');
  const docker = project(t, { '.env': 'DOCKER_USERNAME=carol\nDOCKER_PASSWORD=docker-file\n' });
  t.same(registryCredentials(docker, {}), { username: 'carol', password: 'docker-file' });
  t.equal(registryCredentials(project(t, { '.env': 'SVC_REGISTRY_USERNAME=alice\n' }), {}), undefined, 'no password: none');
  const bare = mkdtempSync(join(tmpdir(), 'svc-image-unit-'));
  t.teardown(() => rmSync(bare, { recursive: true, force: true }));
  t.equal(registryCredentials(bare, {}), undefined, 'no .env, nothing set: none');
});

/** A recording fake of a docker-compatible command: each call's argv and stdin; `fail` names a subcommand that exits 1. */
function recordingFake(options: { fail?: string; print?: string } = {}) {
  const calls: Array<{ argv: string[]; stdin: string | undefined }> = [];
  const run: Runner = async (argv, opts) => {
    calls.push({ argv: [...argv], stdin: opts.stdin });
    if (options.print) opts.onLine?.(options.print);
    const sub = argv[1];
    return { code: sub === options.fail ? 1 : 0, tail: sub === options.fail ? [`${sub}: failed`, options.print ?? ''] : [] };
  };
  return { run, calls };
}

t.test('--build with a recording fake of the container command: login with the password on stdin only, build, push', async (t) => {
  const password = 'pa55-w0rd-that-must-not-leak';
  const fake = recordingFake({ print: `a command that echoes ${password} back` });
  const lines: string[] = [];
  const context = { dir: '/tmp/ctx' };
  const ref = 'registry.example.com/demo:0123456789ab';
  const result = await buildAndPush({ cli: ['docker'], context, ref, registry: 'registry.example.com', credentials: { username: 'alice', password }, push: true, run: fake.run, log: (l) => lines.push(l) });
  t.same(result, { ref: 'registry.example.com/demo:0123456789ab' });
  t.same(
    fake.calls.map((c) => c.argv),
    [
      ['docker', 'login', 'registry.example.com', '--username', 'alice', '--password-stdin'],
      ['docker', 'build', '-t', 'registry.example.com/demo:0123456789ab', '-f', '/tmp/ctx/Dockerfile', '/tmp/ctx'],
      ['docker', 'push', 'registry.example.com/demo:0123456789ab'],
    ],
    'login, build, push — in that order',
  );
  t.equal(fake.calls[0]?.stdin, password, 'the password is written to stdin of the login');
  t.same(fake.calls.slice(1).map((c) => c.stdin), [undefined, undefined], 'and to nothing else');
  for (const call of fake.calls) t.notOk(call.argv.some((a) => a.includes(password)), `never in argv (${call.argv[1]})`);
  t.ok(lines.length >= 6, 'commands and their output are logged');
  t.notOk(lines.some((l) => l.includes(password)), 'never in a log line, even one the command printed');
  t.ok(lines.some((l) => l.includes('echoes *** back')), 'a line that held it is logged with *** instead');

  const wrapper = recordingFake();
  await buildAndPush({ cli: ['/run/x/docker', '--flag'], context, ref: 'r.example/a:1', registry: 'r.example', credentials: { username: 'u', password: 'p' }, push: true, run: wrapper.run });
  t.same(wrapper.calls[1]?.argv.slice(0, 3), ['/run/x/docker', '--flag', 'build'], 'a wrapper with arguments is a prefix');
});

t.test('--build with a recording fake: without credentials it fails before running anything, naming the variables', async (t) => {
  const fake = recordingFake();
  const error = await buildAndPush({ cli: ['docker'], context: { dir: '/tmp/ctx' }, ref: 'r.example/a:1', registry: 'r.example', credentials: undefined, push: true, run: fake.run }).catch((e: unknown) => e);
  t.ok(error instanceof ImageError, 'a typed error');
  t.equal((error as ImageError).code, 'SVC_ERR_IMAGE_CREDENTIALS');
  t.match((error as Error).message, /SVC_REGISTRY_USERNAME/);
  t.match((error as Error).message, /SVC_REGISTRY_PASSWORD/);
  t.match((error as Error).message, /\.env/);
  t.equal(fake.calls.length, 0, 'nothing was run');
  const empty = await buildAndPush({ cli: ['docker'], context: { dir: '/x' }, ref: 'r.example/a:1', registry: 'r.example', credentials: { username: 'u', password: '' }, push: true, run: fake.run }).catch((e: unknown) => e);
  t.equal((empty as ImageError).code, 'SVC_ERR_IMAGE_CREDENTIALS', 'an empty password is none');
  t.equal(fake.calls.length, 0);

  const local = recordingFake();
  await buildAndPush({ cli: ['podman'], context: { dir: '/x' }, ref: 'localhost/a:1', registry: 'localhost', credentials: undefined, push: false, run: local.run });
  t.same(local.calls.map((c) => c.argv[1]), ['build'], 'building without pushing needs no credentials: no login, no push');
});

t.test('--build with a recording fake: a failing step is a typed error with its output, and nothing after it runs', async (t) => {
  const password = 'secret-in-output';
  const fake = recordingFake({ fail: 'build', print: `oops ${password}` });
  const failing = (run: Runner, more: Partial<BuildAndPushOptions> = {}): Promise<ImageError> =>
    buildAndPush({ cli: ['docker'], context: { dir: '/x' }, ref: 'r.example/a:1', registry: 'r.example', credentials: { username: 'u', password }, push: true, run, ...more }).then(
      () => t.fail('no error') as never,
      (e: unknown) => e as ImageError,
    );
  const error = await failing(fake.run);
  t.equal(error.code, 'SVC_ERR_IMAGE_BUILD');
  t.match(error.message, /docker build failed \(exit 1\)/);
  t.notMatch(error.message, password, 'the password is not in the error either');
  t.same(fake.calls.map((c) => c.argv[1]), ['login', 'build'], 'no push after a failed build');
  const login = recordingFake({ fail: 'login' });
  t.equal((await failing(login.run)).code, 'SVC_ERR_IMAGE_LOGIN');
  t.equal(login.calls.length, 1, 'nothing built after a refused login');
  const bad = recordingFake();
  t.equal((await failing(bad.run, { ref: '--output=/etc', push: false })).code, 'SVC_ERR_IMAGE_BUILD', 'a reference that reads as an option is refused');
  t.equal(bad.calls.length, 0);
});

t.test('the container command: as configured, else docker when its engine answers, else podman', async (t) => {
  const probe = (answers: Record<string, number>) => {
    const asked: string[] = [];
    const run: Runner = async (argv) => {
      asked.push(argv.join(' '));
      return { code: answers[argv[0] as string] ?? -1, tail: [] };
    };
    return { run, asked };
  };
  const none = probe({});
  t.same(await chooseContainerCli('sudo -n  podman ', none.run), ['sudo', '-n', 'podman'], 'configured: split on spaces');
  t.same(none.asked, [], 'and nothing probed');
  t.same(await chooseContainerCli('', probe({ docker: 0, podman: 0 }).run), ['docker'], '`docker info` answers: docker');
  const clientOnly = probe({ docker: 1, podman: 0 });
  t.same(await chooseContainerCli('', clientOnly.run), ['podman'], 'a docker client with no engine: podman');
  t.same(clientOnly.asked, ['docker info', 'podman --version']);
  await t.rejects(chooseContainerCli('', probe({}).run), { code: 'SVC_ERR_CONTAINER_CLI' }, 'neither: an error');
});

t.test('every image error code is documented in docs/errors.md with its status', async (t) => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  for (const [code, { status }] of Object.entries(IMAGE_ERRORS)) {
    t.match(code, /^SVC_ERR_[A-Z_]+$/);
    t.match(doc, new RegExp(`^\\| \`${code}\` \\| ${status} \\|`, 'm'), `${code} documented as ${status}`);
  }
});

t.test('--experimental: the build stage clones svc from its repository (a commit when pinned) instead of the copy', async (t) => {
  const base = { deps: 'build' as const, baseImage: 'node:20-bookworm-slim', buildImage: 'node:20-bookworm', port: 8000, entry: 'app.ts', svcLockFile: 'package-lock.json', appDeps: 'none' as const };
  const branch = dockerfile({ ...base, svcRepo: { url: 'https://git.example.com/svc.git', branch: 'release', commit: '' } });
  t.match(branch, /RUN git clone --depth 1 --branch 'release' 'https:\/\/git\.example\.com\/svc\.git' \/build\/svc && rm -rf \/build\/svc\/\.git\n/);
  t.match(branch, /COPY --from=deps \/build\/svc\/ \/app\/node_modules\/svc\/\n/);
  t.notMatch(branch, /COPY svc\//, 'no staged copy of svc');
  const pinned = dockerfile({ ...base, svcRepo: { url: 'https://git.example.com/svc.git', branch: 'main', commit: '0123abc' } });
  t.match(pinned, /git -C \/build\/svc checkout --detach '0123abc'/);
  t.match(dockerfile(base), /COPY svc\/ \/app\/node_modules\/svc\//, 'without it: the copy');
});

t.test('svc.toml in the image: no deploy sections, no credential; a deploy-only change keeps the tag', async (t) => {
  const dir = project(t);
  const toml = (replicas: number): string =>
    ['[scale.server]', 'port = 8000', '[scale.jwt]', 'secret = "jwt-secret-in-the-file-0123456789"', '[scale.database]', 'docdb_uri = "postgres://u:db-pass-in-uri@db.internal/x"',
     '[scale.orchestrator]', `max_replicas = ${replicas}`, 'kv_password = "kv-pass-in-the-file"', '[scale.secrets]', 'STRIPE = "sk_literal_in_the_file"', '[scale.sso.google]', 'client_secret = "google-secret-in-the-file"', ''].join('\n');
  writeFileSync(join(dir, 'svc.toml'), toml(3));
  writeFileSync(join(dir, 'svc.prod.toml'), '[scale.metrics]\nscrape_token = "scrape-token-in-the-profile-0123456789"\n');
  writeFileSync(join(dir, '.npmrc'), '//registry.example.com/:_authToken=npm-token-in-npmrc\n');
  const context = stage(t, dir);
  const staged = readFileSync(join(context.dir, 'app/svc.toml'), 'utf8');
  t.match(staged, /\[scale\.server\]\s+port = 8000/, 'the app\'s settings are there');
  for (const secret of ['jwt-secret-in-the-file', 'db-pass-in-uri', 'kv-pass-in-the-file', 'sk_literal_in_the_file', 'google-secret-in-the-file', 'max_replicas']) t.notMatch(staged, secret, `${secret}: not in the image`);
  t.notMatch(readFileSync(join(context.dir, 'app/svc.prod.toml'), 'utf8'), 'scrape-token-in-the-profile', 'nor in a profile');
  t.notOk(existsSync(join(context.dir, 'app/.npmrc')), '.npmrc (npm tokens) stays out');
  const removed = imageConfigFiles(dir).flatMap((f) => f.removed);
  t.ok(removed.some((r) => r.startsWith('[scale.jwt] secret (give it as [scale.secrets] JWT_SECRET)')), `what was left out is said: ${removed.join('; ')}`);
  const tag = context.tag;
  writeFileSync(join(dir, 'svc.toml'), toml(5));
  t.equal(stage(t, dir).tag, tag, 'max_replicas 3 → 5: the same image');
});

t.test('a project reached through a symbolic link is hashed as its files; dist is left out at the top only', async (t) => {
  const dir = project(t);
  const link = `${dir}-link`;
  symlinkSync(dir, link);
  t.teardown(() => rmSync(link, { force: true }));
  const viaLink = (): string => contentTag({ entry: join(link, 'app.ts'), projectRoot: link, baseImage: 'node:20-bookworm-slim', port: 8000, deps: 'build' });
  const before = viaLink();
  writeFileSync(join(dir, 'app.ts'), `${readFileSync(join(dir, 'app.ts'), 'utf8')}\n// edited\n`);
  t.not(viaLink(), before, 'an edit behind the link changes the tag');
  mkdirSync(join(dir, 'lib/vendor/dist'), { recursive: true });
  writeFileSync(join(dir, 'lib/vendor/dist/index.js'), 'export {};\n');
  mkdirSync(join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'dist/out.js'), 'export {};\n');
  const context = stage(t, dir);
  t.ok(existsSync(join(context.dir, 'app/lib/vendor/dist/index.js')), 'a dist deeper down is the app\'s');
  t.notOk(existsSync(join(context.dir, 'app/dist')), 'the top-level dist is build output');
  t.throws(() => stage(t, dir, { entry: join(dir, 'dist/out.js') }), { code: 'SVC_ERR_IMAGE_CONTEXT' }, 'an entry in a folder left out: refused, not a broken image');
});

t.test('a file only its owner may read is readable in the image (copied, never the original changed)', async (t) => {
  const dir = project(t);
  writeFileSync(join(dir, 'private.json'), '{"k":1}\n', { mode: 0o600 });
  chmodSync(join(dir, 'private.json'), 0o600);
  const context = stage(t, dir);
  t.equal(statSync(join(context.dir, 'app/private.json')).mode & 0o777, 0o644, 'readable by the image\'s user');
  t.equal(statSync(join(dir, 'private.json')).mode & 0o777, 0o600, 'the project\'s file keeps its mode');
});
