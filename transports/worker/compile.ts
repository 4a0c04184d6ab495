/**
 * Worker threads on Node 20 cannot load TypeScript through a loader hook, so
 * a worker's code is bundled at start with esbuild. With an app (`svc
 * start`), in three files ({@link compileWorkerFiles}):
 * - svc's runtime (the worker module and svc's public doors `svc`,
 *   `svc/client`, `svc/testing`, `svc/kernel`), split in chunks in a folder
 *   `rt-<hash>` — built once while svc's files do not change, whatever the
 *   app (per cache folder: svc's bare imports are resolved to file URLs of
 *   this machine's install, so it is not shared beyond the app's own cache);
 *   a worker parses only the chunks it imports;
 * - the app's own bundle (kilobytes), its imports of svc's doors left
 *   external to the runtime's door files: the very modules the runtime runs
 *   (one `Node`, `Walker`, `T`: `instanceof` and the registry hold). A
 *   running worker imports a new one to take a `--dev` save in place;
 * - a two-line entry that imports the runtime and starts it with the app.
 * Without an app (the tests' worker modules), one file as before. Packages stay external
 * (native addons among them); imports of `svc` itself are bundled from this
 * package's folder. The file is written under the nearest `node_modules/.cache`
 * so the app's bare imports resolve exactly as the module's own would; svc's
 * own files keep resolving theirs from svc's folder (see {@link ownFiles}).
 *
 * Decisions:
 * - An app with no `node_modules` in or above its folder has its bundle in a
 *   folder of this user's under the system's temporary folder (mode 0700,
 *   checked to be this user's own: a planted file there would run as the
 *   server), never in svc's own folder; its bare imports are resolved from
 *   svc's folder at bundle time, as they were when the bundle sat there.
 * - A folder of app bundles is bounded: past {@link KEPT_BUNDLES}, bundles
 *   not used for {@link BUNDLE_IDLE_MS} are removed when another is written
 *   (each dev reload, each distinct entry wrote 3–4 MB that stayed forever).
 *   A bundle is touched when used, and one removed while a process still
 *   needs it (a worker replaced later) is written again from that process's
 *   memory ({@link restoreBundle}).
 * - svc's own modules (the tool server's threads) are bundled into a folder
 *   of their own (`svc-modules`), which app bundles never prune.
 * - A bundle is not built again when nothing it was built from changed: beside
 *   it, a manifest (`<key>.json`, key = what was asked: entry, kind, svc's and
 *   esbuild's versions) lists every input file with its size and mtime; a
 *   start whose inputs all stat the same reuses the bundle and never starts
 *   esbuild (warm starts). Manifests are pruned like bundles.
 * - esbuild's service process (~80–100 MB resident) is stopped when the last
 *   build in progress ends; the next build starts it again (~20 ms). Only
 *   `--dev` keeps it ({@link keepBuildService}): there each save rebuilds
 *   through an incremental context, which re-reads only the changed files.
 * - esbuild lowers standard decorators by renaming a decorated class's
 *   binding (`var _AddBookmark = class _AddBookmark …; var AddBookmark =
 *   _AddBookmark`), and V8 names a method's frame after the class's own
 *   name: stacks read `at _AddBookmark.add`, which in svc reads as a hook
 *   walker. {@link plainClassNames} gives such a class its source name back.
 */
import { build, context, stop, transform, version as esbuildVersion, type BuildContext, type BuildOptions, type BuildResult, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { asciiCommentLines, asciiComments } from './ascii-comments.mjs';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WORKER_MAIN = join(PACKAGE_ROOT, 'transports/worker/worker-main.ts');
/** What a cached bundle's manifest is keyed with besides its entry: a different svc or esbuild builds anew, and so does a change to what is built here (the `v`, raised with it). */
const BUILD_IDENTITY = (() => {
  const version = (file: string): string => {
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? '?';
    } catch {
      return '?';
    }
  };
  return `svc@${version(join(PACKAGE_ROOT, 'package.json'))} esbuild@${esbuildVersion} v3`;
})();

/**
 * This package's name and `exports` as paths: an entry with conditions (`types` for tsc, `default` for the
 * runtime) is read as its `default`.
 */
function selfManifest(): { name: string; exports: Record<string, string> } {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { default: string }> };
  return { name: pkg.name, exports: Object.fromEntries(Object.entries(pkg.exports).map(([sub, entry]) => [sub, typeof entry === 'object' ? entry.default : entry])) };
}

/** Resolve `svc` and `svc/<sub>` through this package's `exports` map. */
function selfPackage(): Plugin {
  const pkg = selfManifest();
  return {
    name: 'svc-self',
    setup(b) {
      b.onResolve({ filter: new RegExp(`^${pkg.name}(/.*)?$`) }, (args) => {
        const sub = args.path === pkg.name ? '.' : `.${args.path.slice(pkg.name.length)}`;
        const target = pkg.exports[sub];
        if (!target) return { errors: [{ text: `${args.path} is not exported by ${pkg.name}` }] };
        return { path: join(PACKAGE_ROOT, target) };
      });
    },
  };
}

/** A source file of svc itself (not one of its dependencies). */
function isOwnFile(path: string): boolean {
  const rel = relative(PACKAGE_ROOT, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) && !rel.split(sep).includes('node_modules');
}

const RESOLVING = 'svcResolving';
type Resolving = { [RESOLVING]?: boolean };
const LOADERS: Record<string, 'ts' | 'js'> = { '.ts': 'ts', '.mts': 'ts', '.cts': 'ts', '.js': 'js', '.mjs': 'js', '.cjs': 'js' };

/**
 * Packages stay external — and svc's own files keep seeing their dependencies
 * where they are. The bundle lives in the app's `node_modules/.cache`, so a
 * bare import left as it is resolves from the app's `node_modules`: right for
 * the app's imports, wrong for svc's when svc is installed as a symlink
 * (`npm install ../svc`, `file:` folders), whose dependencies (jose, ws,
 * better-sqlite3, …) are in the checkout's `node_modules`, not the app's. So a
 * bare import made by a file of svc is resolved here, from that file's folder
 * as Node would (esbuild's resolver with Node's conditions), and stays
 * external by its absolute URL. Likewise `import.meta.url` in svc's files is
 * the file's own URL rather than the bundle's, so `createRequire(import.meta.url)`
 * and files beside a module (`hash-thread.mjs`, the admin portal) are found.
 */
function ownFiles(): Plugin {
  // Whether an app's folder has packages of its own, asked once per folder and build.
  const packagesOf = new Map<string, string | undefined>();
  const nodeModulesOf = (dir: string): string | undefined => {
    if (!packagesOf.has(dir)) packagesOf.set(dir, nodeModulesFrom(dir));
    return packagesOf.get(dir);
  };
  return {
    name: 'svc-own-files',
    setup(b) {
      b.onResolve({ filter: /^[^./#]/ }, async (args) => {
        // The nested b.resolve below comes back through here: esbuild's own resolver answers it.
        if (isAbsolute(args.path) || isBuiltin(args.path) || (args.pluginData as Resolving | undefined)?.[RESOLVING]) return undefined;
        const own = isOwnFile(args.importer);
        // An app with no node_modules in or above its folder: its bundle is not beside it, and its packages are svc's.
        if (!own && nodeModulesOf(args.resolveDir) !== undefined) return { path: args.path, external: true };
        const from = own ? { importer: args.importer, resolveDir: args.resolveDir } : { resolveDir: PACKAGE_ROOT };
        const found = await b.resolve(args.path, { kind: args.kind, ...from, pluginData: { [RESOLVING]: true } satisfies Resolving });
        // Not installed (an optional peer): left to fail, or not, when the worker imports it, as before bundling.
        if (found.errors.length > 0 || found.external || !isAbsolute(found.path)) return { path: args.path, external: true };
        return { path: pathToFileURL(found.path).href, external: true };
      });
      b.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
        if (!isOwnFile(args.path)) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        const url = JSON.stringify(pathToFileURL(args.path).href);
        return { contents: source.replace(/\bimport\.meta\.url\b/g, url), loader: LOADERS[extname(args.path)] ?? 'js', resolveDir: dirname(args.path) };
      });
    },
  };
}

/** esbuild's `keepNames` helper, as it emits it (the parameter may be renamed, `target2`). */
const NAME_HELPER = /^var __name = \((\w+), value\) => __defProp\(\1, "name", \{ value, configurable: true \}\);$/m;

/**
 * `keepNames` wraps every named function expression in `__name(fn, "name")`, a
 * `defineProperty` on each new closure: ~0.6 µs, and the request path makes a
 * dozen closures per request (measured: 12% of a worker's CPU under load). The
 * names that matter are classes' (stored types, endpoints) and plain
 * functions'; arrow and async functions (no `prototype`) keep V8's own name.
 * Exported for its test, which fails if esbuild changes the helper's shape.
 */
export function cheapNames(code: string): string {
  return code.replace(NAME_HELPER, (_, t: string) => `var __name = (${t}, value) => ${t}.prototype === undefined ? ${t} : __defProp(${t}, "name", { value, configurable: true });`);
}

/**
 * esbuild's lowering of a decorated class: `var _Name = class _Name …` then,
 * at the same top level, `var Name = _Name;`. Every static member was moved
 * after the class, so the class body refers to `_Name` only from methods,
 * which run once the outer `_Name` is assigned.
 */
const LOWERED_CLASS = /^var (_([A-Za-z$][\w$]*)) = class \1(?=[\s{])/gm;

/**
 * Give decorated classes their source name back (`class _AddBookmark` →
 * `class AddBookmark`), so stack frames read `AddBookmark.add`. Only where
 * the module also binds the plain name to the same class (`var AddBookmark =
 * _AddBookmark;`): inside the class the plain name then means that class too.
 * Exported for its test.
 *
 * @example
 * plainClassNames('var _A = class _A {\n};\nvar A = _A;\n') // 'var _A = class A {\n};\nvar A = _A;\n'
 */
export function plainClassNames(code: string): string {
  return code.replace(LOWERED_CLASS, (whole, inner: string, plain: string) => (code.includes(`\nvar ${plain} = ${inner};\n`) ? `var ${inner} = class ${plain}` : whole));
}

/**
 * App bundles a folder keeps whatever their age; beyond them, those unused
 * for {@link BUNDLE_IDLE_MS} are removed when a bundle is written there.
 * @example KEPT_BUNDLES // 8
 */
export const KEPT_BUNDLES = 8;
/**
 * How long a bundle unused (not written, loaded or asked for) is kept beyond
 * {@link KEPT_BUNDLES}: a process starting workers from it touches it first.
 * @example BUNDLE_IDLE_MS // 600000
 */
export const BUNDLE_IDLE_MS = 10 * 60_000;
const BUNDLE_NAME = /^[0-9a-f]{16}\.mjs$/;
const MANIFEST_NAME = /^[0-9a-f]{16}\.json$/;
/** A folder of svc's runtime, split in chunks ({@link compileWorkerFiles}). */
const RUNTIME_NAME = /^rt-[0-9a-f]{16}$/;

/** The nearest `node_modules` folder in or above `dir`, if any. */
function nodeModulesFrom(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) return join(at, 'node_modules');
    if (dirname(at) === at) return undefined;
  }
}

let privateDir: string | undefined;

/**
 * This user's folder of bundles under the system's temporary folder: made
 * 0700; one that is not a plain folder of this user's, closed to others (a
 * shared /tmp where someone made it first), is not used — a fresh one is.
 */
function privateTempDir(): string {
  if (privateDir && existsSync(privateDir)) return privateDir;
  const uid = process.getuid?.();
  const dir = join(tmpdir(), `svc-workers-${uid ?? 'user'}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const st = lstatSync(dir);
  const ours = st.isDirectory() && !st.isSymbolicLink() && (uid === undefined || (st.uid === uid && (st.mode & 0o077) === 0));
  privateDir = ours ? dir : mkdtempSync(`${dir}-`);
  return privateDir;
}

/** Where the bundle of `from` (an app's module, or one of svc's) is written: `svc-workers` or `svc-modules` under the nearest `node_modules/.cache`. */
function cacheDir(from: string, kind: 'svc-workers' | 'svc-modules'): string {
  const modules = nodeModulesFrom(dirname(from));
  return modules === undefined ? join(privateTempDir(), kind) : join(modules, '.cache', kind);
}

/** The bundles written by this process, by file: what {@link restoreBundle} writes back. */
const written = new Map<string, string>();

/**
 * Make sure a bundle this process built is on disk (written again from
 * memory when another process pruned it) and mark it used. Call it before
 * starting a thread from the file.
 *
 * @example
 * restoreBundle(this.entry); new Worker(this.entry, { workerData });
 */
export function restoreBundle(file: string): void {
  restoreOne(file);
  for (const needed of needs.get(file) ?? []) restoreOne(needed);
}

/** What else a worker entry needs on disk: the app's bundle and the folder of svc's runtime it imports. */
const needs = new Map<string, string[]>();
/** The runtime folders written by this process: each file's code, by name. */
const writtenFolders = new Map<string, Map<string, string>>();

function restoreOne(file: string): void {
  const folder = writtenFolders.get(file);
  const code = written.get(file);
  try {
    if (existsSync(file)) {
      const now = new Date();
      utimesSync(file, now, now);
      return;
    }
    if (folder) {
      mkdirSync(file, { recursive: true });
      for (const [name, text] of folder) writeFileSync(join(file, name), text);
      return;
    }
    if (code === undefined) return;
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, code);
  } catch {
    // A folder that cannot be written: the thread's start reports what is missing.
  }
}

/** Remove, beyond the {@link KEPT_BUNDLES} most recently used, the bundles (and the manifests) of `dir` unused for {@link BUNDLE_IDLE_MS}. */
function prune(dir: string, kind: RegExp = BUNDLE_NAME): void {
  if (kind === BUNDLE_NAME) {
    prune(dir, MANIFEST_NAME);
    prune(dir, RUNTIME_NAME);
  }
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => kind.test(n));
  } catch {
    return;
  }
  if (names.length <= KEPT_BUNDLES) return;
  const bundles: { file: string; used: number }[] = [];
  for (const name of names) {
    const file = join(dir, name);
    try {
      bundles.push({ file, used: statSync(file).mtimeMs });
    } catch {
      // Removed meanwhile by another process.
    }
  }
  bundles.sort((a, b) => b.used - a.used);
  const idleSince = Date.now() - BUNDLE_IDLE_MS;
  for (const { file, used } of bundles.slice(KEPT_BUNDLES)) if (used < idleSince) rmSync(file, { force: true, recursive: true });
}

const built = new Map<string, Promise<string>>();

/**
 * Bundle the worker runtime with `module`; resolves to the path of the
 * JavaScript file to start a `Worker` on. Built once per module per process.
 * With an `app`, the runtime and the app are bundled apart
 * ({@link compileWorkerFiles}); without, one file.
 *
 * @example
 * const file = await compileWorker('/app/actors.ts'); new Worker(file, { workerData })
 */
export function compileWorker(module: string, app?: string): Promise<string> {
  if (app !== undefined) return compileWorkerFiles(module, app).then((files) => files.entry);
  const path = toPath(module);
  const appPath = app === undefined ? undefined : toPath(app);
  const key = `${path}\0${appPath ?? ''}`;
  let pending = built.get(key);
  if (!pending) {
    pending = bundle(path, appPath);
    built.set(key, pending);
    pending.catch(() => built.delete(key));
  }
  // Built earlier by this process: still there (another may have pruned it), and marked used.
  return pending.then((file) => (restoreBundle(file), file));
}

/** Forget what was built (the sources changed: `svc start --dev`); built again, what did not change is found in the cache. */
export function forgetBuilds(): void {
  built.clear();
  modules.clear();
  split.clear();
  runtimes.clear();
  written.clear();
  writtenFolders.clear();
  needs.clear();
}

/** A worker whose app is bundled apart from svc's runtime ({@link compileWorkerFiles}). */
export interface WorkerFiles {
  /** The file to start a `Worker` on: it imports the runtime and starts it with the app. */
  entry: string;
  /** The app's own bundle (a file URL): what a running worker imports to take new code in place ({@link WorkerPool.swap}). */
  app: string;
}

const split = new Map<string, Promise<WorkerFiles>>();

/**
 * The worker runtime (`module`, svc's own code) and the app (`app`) as
 * separate bundles: svc's in a folder of chunks built once per svc and kept
 * across starts, the app's a small file of its own whose imports of `svc`,
 * `svc/client`, `svc/testing` and `svc/kernel` are the runtime's very modules
 * (the same `Node`, `Walker`, `T` a worker runs with: `instanceof` and the
 * registry hold). Built once per process (until {@link forgetBuilds}).
 *
 * @example
 * const { entry, app } = await compileWorkerFiles(SERVE_WORKER, '/app/main.ts'); new Worker(entry, { workerData });
 */
export function compileWorkerFiles(module: string, app: string): Promise<WorkerFiles> {
  const path = toPath(module);
  const appPath = toPath(app);
  const key = `${path}\0${appPath}`;
  let pending = split.get(key);
  if (!pending) {
    pending = bundleSplit(path, appPath);
    split.set(key, pending);
    pending.catch(() => split.delete(key));
  }
  return pending.then((files) => (restoreBundle(files.entry), files));
}

/** The name esbuild knows the runtime's generated worker entry by (`svc-worker-entry:worker`). */
const WORKER_ENTRY = 'svc-worker-entry';

/** The runtime's worker entry: `start(appUrl)` imports the app and runs the worker's setup with it. */
function workerEntry(setup: string): Plugin {
  const contents = [
    `import * as setupModule from ${JSON.stringify(setup)};`,
    `import { runWorker } from ${JSON.stringify(WORKER_MAIN)};`,
    `export function start(app: string): Promise<void> {`,
    `  return runWorker(setupModule, () => import(app) as Promise<Record<string, unknown>>);`,
    `}`,
  ].join('\n');
  return {
    name: WORKER_ENTRY,
    setup(b) {
      b.onResolve({ filter: new RegExp(`^${WORKER_ENTRY}$`) }, () => ({ path: 'worker', namespace: WORKER_ENTRY }));
      b.onLoad({ filter: /.*/, namespace: WORKER_ENTRY }, () => ({ contents, loader: 'ts', resolveDir: PACKAGE_ROOT }));
    },
  };
}

/** svc's public doors, as the runtime's output names: `svc` → `svc`, `svc/client` → `svc-client`. */
function publicDoors(): { name: string; specifier: string; path: string }[] {
  const pkg = selfManifest();
  return Object.entries(pkg.exports)
    .filter(([sub, target]) => /\.[cm]?[jt]s$/.test(target) && sub !== './package.json')
    .map(([sub, target]) => {
      const specifier = sub === '.' ? pkg.name : `${pkg.name}${sub.slice(1)}`;
      return { name: specifier.replace(/\//g, '-'), specifier, path: join(PACKAGE_ROOT, target) };
    });
}

/** The app's imports of svc's doors: external, the runtime's own files (the same module instances). */
function fromRuntime(doors: Record<string, string>): Plugin {
  return {
    name: 'svc-from-runtime',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        const url = doors[args.path];
        return url === undefined ? undefined : { path: url, external: true };
      });
    },
  };
}

interface RuntimeFolder {
  /** File URL of the worker entry (`start`). */
  worker: string;
  /** File URLs of svc's doors, by specifier. */
  doors: Record<string, string>;
}

const runtimes = new Map<string, Promise<RuntimeFolder>>();

/** svc's runtime for the worker module `setup`, split in chunks, in `rt-<hash>` beside the app's bundles: reused while none of its inputs changed. */
function runtimeFolder(setup: string, near: string): Promise<RuntimeFolder> {
  const base = realpathSync((mkdirSync(cacheDir(near, 'svc-workers'), { recursive: true }), cacheDir(near, 'svc-workers')));
  const key = createHash('sha256').update(JSON.stringify([BUILD_IDENTITY, 'runtime', setup, base])).digest('hex').slice(0, 16);
  let pending = runtimes.get(key);
  if (!pending) {
    pending = buildRuntime(setup, base, key);
    runtimes.set(key, pending);
    pending.catch(() => runtimes.delete(key));
  }
  return pending;
}

async function buildRuntime(setup: string, base: string, key: string): Promise<RuntimeFolder> {
  const doors = publicDoors();
  const folderOf = (dir: string): RuntimeFolder => ({
    worker: pathToFileURL(join(dir, 'worker.mjs')).href,
    doors: Object.fromEntries(doors.map((d) => [d.specifier, pathToFileURL(join(dir, `${d.name}.mjs`)).href])),
  });
  const manifestFile = join(base, `${key}.json`);
  const cached = unchanged(manifestFile, base);
  if (cached !== undefined) {
    utimesSync(cached, new Date(), new Date());
    return folderOf(cached);
  }
  // Built as if in a sibling folder, then written into one named by the content: chunks import each other relatively,
  // and source maps name the sources relative to their file, so the folder's name changes neither.
  const { result, texts } = await run(
    {
      ...buildOptions(join(base, 'rt-0000000000000000'), [workerEntry(setup), selfPackage(), ownFiles()]),
      // Each worker keeps the source maps of what it loaded (`--enable-source-maps`): svc's sources in them cost ~60 MB a
      // worker (measured, 2 workers vs 1); the mappings alone still name svc's files and lines in stacks.
      sourcesContent: false,
      // Beside each chunk, not inside: an inline map is part of the module's source, which V8 keeps for the thread's life.
      sourcemap: 'linked',
      entryPoints: [{ in: WORKER_ENTRY, out: 'worker' }, ...doors.map((d) => ({ in: d.path, out: d.name }))],
      // A worker parses what it imports: the parts of svc only the tool server or the tests use stay in chunks it never loads.
      splitting: true,
      chunkNames: 'chunk-[hash]',
      outExtension: { '.js': '.mjs' },
    },
    key,
    true,
    true,
  );
  const files = new Map<string, string>();
  for (const [path, text] of texts) files.set(basename(path), path.endsWith('.map') ? text : plainClassNames(cheapNames(text)));
  const hash = createHash('sha256');
  for (const [name, code] of [...files].sort(([a], [b]) => a.localeCompare(b))) hash.update(`${name}\0${code}\0`);
  const dir = join(base, `rt-${hash.digest('hex').slice(0, 16)}`);
  writtenFolders.set(dir, files);
  if (existsSync(dir)) {
    restoreOne(dir);
  } else {
    // Written whole under another name, then renamed: a process starting workers meanwhile never sees half a folder.
    const tmp = `${dir}.${process.pid}.tmp`;
    mkdirSync(tmp, { recursive: true });
    for (const [name, code] of files) writeFileSync(join(tmp, name), code);
    try {
      renameSync(tmp, dir);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another process wrote the same folder first
    }
  }
  writeManifest(manifestFile, dir, Object.keys(result.metafile?.inputs ?? {}), undefined);
  prune(base);
  return folderOf(dir);
}

async function bundleSplit(setup: string, app: string): Promise<WorkerFiles> {
  const runtime = await runtimeFolder(setup, app);
  // Keyed by the runtime it imports too: a runtime built anew (svc changed) is never mixed with an app bundle of the last one.
  const appFile = await emit({ entryPoints: [app] }, app, 'svc-workers', undefined, [fromRuntime(runtime.doors), selfPackage(), ownFiles()], runtime.worker);
  const appUrl = pathToFileURL(appFile).href;
  const stub = `import { start } from ${JSON.stringify(runtime.worker)};\nawait start(${JSON.stringify(appUrl)});\n`;
  const entry = join(dirname(appFile), `${createHash('sha256').update(stub).digest('hex').slice(0, 16)}.mjs`);
  written.set(entry, stub);
  needs.set(entry, [appFile, fileURLToPath(new URL('.', runtime.worker)).replace(/[\\/]$/, '')]);
  if (!existsSync(entry)) writeFileSync(entry, stub);
  return { entry, app: appUrl };
}

function toPath(module: string): string {
  return module.startsWith('file:') ? fileURLToPath(module) : resolve(module);
}

async function bundle(path: string, app: string | undefined): Promise<string> {
  const contents = [
    `import * as setupModule from ${JSON.stringify(path)};`,
    app ? `import * as appModule from ${JSON.stringify(app)};` : 'const appModule = undefined;',
    `import { runWorker } from ${JSON.stringify(WORKER_MAIN)};`,
    `await runWorker(setupModule, appModule);`,
  ].join('\n');
  return emit({ stdin: { contents, resolveDir: dirname(app ?? path), sourcefile: 'svc-worker-entry.ts', loader: 'ts' } }, app ?? path, 'svc-workers');
}

const modules = new Map<string, Promise<string>>();

/**
 * Bundle one module of svc as it is (its exports kept) into a JavaScript file
 * a worker thread can load — for pools that take a file (piscina), where
 * {@link compileWorker}'s actor runtime is not wanted. Built once per process.
 *
 * @example
 * const pool = new Piscina({ filename: await compileModule(new URL('./tool-worker.ts', import.meta.url).href) });
 */
export function compileModule(module: string): Promise<string> {
  const path = toPath(module);
  let pending = modules.get(path);
  if (!pending) {
    pending = emit({ entryPoints: [path] }, path, 'svc-modules');
    modules.set(path, pending);
    pending.catch(() => modules.delete(path));
  }
  return pending;
}

/**
 * Bundle a script (TypeScript source; svc's files in, packages out) into
 * `dir`; the path of the JavaScript file. Nothing is cached: for one-off runs
 * (the tool server's sandbox), whose folder goes when they end.
 *
 * @example
 * const file = await compileScript(`import * as app from './main.ts'; …`, sandboxDir);
 */
export async function compileScript(contents: string, dir: string): Promise<string> {
  return emit({ stdin: { contents, resolveDir: dir, sourcefile: 'svc-script.ts', loader: 'ts' } }, dir, 'svc-workers', dir);
}

type Entry = { stdin: { contents: string; resolveDir: string; sourcefile: string; loader: 'ts' } } | { entryPoints: string[] };

let warm = false;
let building = 0;
/** Incremental contexts by what they build (`--dev` only). */
const contexts = new Map<string, Promise<BuildContext>>();

/**
 * Keep esbuild's service running between builds, and rebuild each bundle
 * through an incremental context (`svc start --dev`: a save rebuilds in
 * milliseconds). Off (the default), the service is stopped once no build is
 * in progress, and the contexts are disposed.
 *
 * @example
 * if (options.dev) keepBuildService(true);
 */
export function keepBuildService(on: boolean): void {
  warm = on;
  if (!on) {
    const held = [...contexts.values()];
    contexts.clear();
    void Promise.all(held.map((c) => c.then((ctx) => ctx.dispose(), () => undefined))).then(() => {
      if (building === 0 && !warm) void stop();
    });
  }
}

let builds = 0;

/**
 * How many times this module ran esbuild (for tests: a warm start runs it
 * for nothing it finds unchanged in the cache).
 *
 * @example
 * const before = buildCount(); await compileWorkerFiles(m, app); buildCount() - before // 0 when cached
 */
export function buildCount(): number {
  return builds;
}

/** A manifest beside the bundles: the bundle's file name and every input with its size and mtime. */
interface Manifest {
  identity: string;
  file: string;
  inputs: Record<string, [number, number]>;
}

/** The bundle a manifest names, if every input it lists is unchanged and the bundle is there. */
function unchanged(manifestFile: string, outdir: string): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  if (manifest.identity !== BUILD_IDENTITY || !(BUNDLE_NAME.test(manifest.file) || RUNTIME_NAME.test(manifest.file))) return undefined;
  for (const [path, [size, mtime]] of Object.entries(manifest.inputs)) {
    try {
      const st = statSync(path);
      if (st.size !== size || st.mtimeMs !== mtime) return undefined;
    } catch {
      return undefined;
    }
  }
  const file = join(outdir, manifest.file);
  if (!existsSync(file)) return undefined;
  const now = new Date();
  try {
    utimesSync(manifestFile, now, now);
  } catch {
    // Read-only: still usable.
  }
  return file;
}

/** Bundle (svc's files in, packages out) and write the file under the cache beside `near` (or into `into`); its path. */
async function emit(entry: Entry, near: string, kind: 'svc-workers' | 'svc-modules', into?: string, plugins?: Plugin[], salt = ''): Promise<string> {
  // Written where it is loaded from (its real path: `node_modules` may be a link), so the source map's paths, relative to
  // `outdir`, resolve to the sources: stacks name `app.ts:12:5`, not a path under the cache.
  const dir = into ?? cacheDir(near, kind);
  mkdirSync(dir, { recursive: true });
  const outdir = realpathSync(dir);
  // Whether the app has packages of its own decides how its bare imports are written: part of what was asked.
  const key = createHash('sha256').update(JSON.stringify([BUILD_IDENTITY, kind, entry, outdir, nodeModulesFrom(dirname(near)) ?? '', salt])).digest('hex').slice(0, 16);
  const manifestFile = join(outdir, `${key}.json`);
  if (into === undefined) {
    const cached = unchanged(manifestFile, outdir);
    if (cached !== undefined) {
      if (kind === 'svc-workers') written.set(cached, readFileSync(cached, 'utf8'));
      restoreBundle(cached);
      return cached;
    }
  }
  const options: BuildOptions & { write: false; metafile: true } = {
    ...entry,
    ...buildOptions(outdir, plugins ?? [selfPackage(), ownFiles()]),
  };
  const { result, texts } = await run(options, key, into === undefined);
  const output = texts.values().next().value;
  if (output === undefined) throw new Error(`esbuild produced no output for ${near}`);
  const code = plainClassNames(cheapNames(output));
  const file = join(outdir, `${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  if (into !== undefined) {
    writeFileSync(file, code);
    return file;
  }
  if (kind === 'svc-workers') written.set(file, code);
  if (existsSync(file)) restoreBundle(file);
  else writeFileSync(file, code);
  writeManifest(manifestFile, file, Object.keys(result.metafile?.inputs ?? {}), 'stdin' in entry ? join(entry.stdin.resolveDir, entry.stdin.sourcefile) : undefined);
  if (kind === 'svc-workers') prune(outdir);
  return file;
}

/** What every bundle is built with: svc's files in, packages out, source maps inline, names kept. */
function buildOptions(outdir: string, plugins: Plugin[]): BuildOptions & { write: false; metafile: true } {
  return {
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Packages are made external by ownFiles(), not by `packages: 'external'` (which would keep esbuild's resolver
    // from finding where svc's dependencies are); Node's conditions, so that resolver picks the file Node would.
    conditions: [],
    mainFields: ['main'],
    plugins,
    sourcemap: 'inline',
    // A class's name is its stored type (arch_type) and its endpoint: the bundle must not rename an app's `Counter`
    // to `Counter3` because something else bundled (prom-client's Counter import) has the same name.
    keepNames: true,
    outdir,
    write: false,
    metafile: true,
    logLevel: 'silent',
  };
}

/**
 * One build: through the incremental context of `key` when the service is kept warm (`--dev`), else a one-off build;
 * the service is stopped once no build is in progress. `texts`: each output file's text by path, JavaScript with its
 * comments made ASCII: checked by the same service that the code means the same ({@link asciiComments}), or, for
 * svc's own runtime (`own`), as its sources allow (asciiCommentLines: ~0.2–0.5 s less on a cold start).
 */
async function run(options: BuildOptions & { write: false; metafile: true }, key: string, incremental: boolean, own = false): Promise<{ result: BuildResult<{ write: false; metafile: true }>; texts: Map<string, string> }> {
  building++;
  builds++;
  try {
    let result: BuildResult<{ write: false; metafile: true }>;
    if (warm && incremental) {
      let ctx = contexts.get(key);
      if (!ctx) {
        ctx = context(options);
        contexts.set(key, ctx);
        ctx.catch(() => contexts.delete(key));
      }
      result = await (await ctx).rebuild();
    } else {
      result = await build(options);
    }
    const texts = new Map<string, string>();
    for (const out of result.outputFiles ?? []) texts.set(out.path, !/\.m?js$/.test(out.path) ? out.text : own ? asciiCommentLines(out.text) : await asciiComments(out.text, transform));
    return { result, texts };
  } finally {
    building--;
    // The service (~80–100 MB) is not left running once nothing is being built; a later build starts it again.
    if (building === 0 && !warm && contexts.size === 0) void stop();
  }
}

/** Record what `file` was built from (inputs as esbuild names them: relative to the working folder, or a namespace). */
function writeManifest(manifestFile: string, file: string, inputs: string[], generated: string | undefined): void {
  const stats: Manifest['inputs'] = {};
  for (const input of inputs) {
    // The generated entries (stdin, the runtime's worker entry) are part of the key; any other input not a file cannot be checked: no manifest.
    if (input.startsWith(`${WORKER_ENTRY}:`)) continue;
    const path = resolve(input);
    if (path === generated) continue;
    try {
      const st = statSync(path);
      stats[path] = [st.size, st.mtimeMs];
    } catch {
      return;
    }
  }
  try {
    const tmp = `${manifestFile}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ identity: BUILD_IDENTITY, file: basename(file), inputs: stats } satisfies Manifest));
    renameSync(tmp, manifestFile);
  } catch {
    // A folder that cannot be written: the next start builds again.
  }
}
