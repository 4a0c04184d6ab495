/**
 * Worker threads on Node 20 cannot load TypeScript through a loader hook, so
 * a worker's code is bundled once at start with esbuild: the worker runtime
 * and the user's module become one JavaScript file. Packages stay external
 * (native addons among them); imports of `svc` itself are bundled from this
 * package's folder. The file is written under the nearest `node_modules/.cache`
 * so the app's bare imports resolve exactly as the module's own would; svc's
 * own files keep resolving theirs from svc's folder (see {@link ownFiles}).
 */
import { build, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
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
  return {
    name: 'svc-own-files',
    setup(b) {
      b.onResolve({ filter: /^[^./#]/ }, async (args) => {
        // The nested b.resolve below comes back through here: esbuild's own resolver answers it.
        if (isAbsolute(args.path) || isBuiltin(args.path) || (args.pluginData as Resolving | undefined)?.[RESOLVING]) return undefined;
        if (!isOwnFile(args.importer)) return { path: args.path, external: true };
        const found = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { [RESOLVING]: true } satisfies Resolving });
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

function cacheDir(from: string): string {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules'))) return join(dir, 'node_modules', '.cache', 'svc-workers');
    if (dirname(dir) === dir) return join(PACKAGE_ROOT, 'node_modules', '.cache', 'svc-workers');
  }
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
  return pending;
}

/** Forget what was built (the sources changed: `svc start --dev`). */
export function forgetBuilds(): void {
  built.clear();
  modules.clear();
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
  return emit({ stdin: { contents, resolveDir: dirname(app ?? path), sourcefile: 'svc-worker-entry.ts', loader: 'ts' } }, app ?? path);
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
    pending = emit({ entryPoints: [path] }, path);
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
  return emit({ stdin: { contents, resolveDir: dir, sourcefile: 'svc-script.ts', loader: 'ts' } }, dir, dir);
}

type Entry = { stdin: { contents: string; resolveDir: string; sourcefile: string; loader: 'ts' } } | { entryPoints: string[] };

/** Bundle (svc's files in, packages out) and write the file under the cache beside `near` (or into `into`); its path. */
async function emit(entry: Entry, near: string, into?: string): Promise<string> {
  // Written where it is loaded from (its real path: `node_modules` may be a link), so the source map's paths, relative to
  // `outdir`, resolve to the sources: stacks name `app.ts:12:5`, not a path under the cache.
  const dir = into ?? cacheDir(near);
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
  if (!existsSync(file)) writeFileSync(file, code);
  return file;
}
