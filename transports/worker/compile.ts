/**
 * Worker threads on Node 20 cannot load TypeScript through a loader hook, so
 * a worker's code is bundled once at start with esbuild: the worker runtime
 * and the user's module become one JavaScript file. Packages stay external
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
 */
import { build, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WORKER_MAIN = join(PACKAGE_ROOT, 'transports/worker/worker-main.ts');

/** Resolve `svc` and `svc/<sub>` through this package's `exports` map. */
function selfPackage(): Plugin {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string> };
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
  const code = written.get(file);
  try {
    if (existsSync(file)) {
      const now = new Date();
      utimesSync(file, now, now);
      return;
    }
    if (code === undefined) return;
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, code);
  } catch {
    // A folder that cannot be written: the thread's start reports what is missing.
  }
}

/** Remove, beyond the {@link KEPT_BUNDLES} most recently used, the bundles of `dir` unused for {@link BUNDLE_IDLE_MS}. */
function prune(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => BUNDLE_NAME.test(n));
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
  for (const { file, used } of bundles.slice(KEPT_BUNDLES)) if (used < idleSince) rmSync(file, { force: true });
}

const built = new Map<string, Promise<string>>();

/**
 * Bundle the worker runtime with `module`; resolves to the path of the
 * JavaScript file to start a `Worker` on. Built once per module per process.
 *
 * @example
 * const file = await compileWorker('/app/actors.ts'); new Worker(file, { workerData })
 */
export function compileWorker(module: string, app?: string): Promise<string> {
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

/** Forget what was built (the sources changed: `svc start --dev`). */
export function forgetBuilds(): void {
  built.clear();
  modules.clear();
  written.clear();
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

/** Bundle (svc's files in, packages out) and write the file under the cache beside `near` (or into `into`); its path. */
async function emit(entry: Entry, near: string, kind: 'svc-workers' | 'svc-modules', into?: string): Promise<string> {
  // Written where it is loaded from (its real path: `node_modules` may be a link), so the source map's paths, relative to
  // `outdir`, resolve to the sources: stacks name `app.ts:12:5`, not a path under the cache.
  const dir = into ?? cacheDir(near, kind);
  mkdirSync(dir, { recursive: true });
  const outdir = realpathSync(dir);
  const result = await build({
    ...entry,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Packages are made external by ownFiles(), not by `packages: 'external'` (which would keep esbuild's resolver
    // from finding where svc's dependencies are); Node's conditions, so that resolver picks the file Node would.
    conditions: [],
    mainFields: ['main'],
    plugins: [selfPackage(), ownFiles()],
    sourcemap: 'inline',
    // A class's name is its stored type (arch_type) and its endpoint: the bundle must not rename an app's `Counter`
    // to `Counter3` because something else bundled (prom-client's Counter import) has the same name.
    keepNames: true,
    outdir,
    write: false,
    logLevel: 'silent',
  });
  const output = result.outputFiles[0]?.text;
  if (output === undefined) throw new Error(`esbuild produced no output for ${near}`);
  const code = cheapNames(output);
  const file = join(outdir, `${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  if (into !== undefined) {
    writeFileSync(file, code);
    return file;
  }
  if (kind === 'svc-workers') written.set(file, code);
  if (existsSync(file)) restoreBundle(file);
  else writeFileSync(file, code);
  if (kind === 'svc-workers') prune(outdir);
  return file;
}
