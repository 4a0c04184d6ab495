/**
 * Worker threads on Node 20 cannot load TypeScript through a loader hook, so
 * a worker's code is bundled once at start with esbuild: the worker runtime
 * and the user's module become one JavaScript file. Packages stay external
 * (native addons among them); imports of `svc` itself are bundled from this
 * checkout. The file is written under the nearest `node_modules/.cache` so
 * its bare imports resolve exactly as the module's own would.
 */
import { build, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
  const result = await build({
    stdin: { contents, resolveDir: dirname(app ?? path), sourcefile: 'svc-worker-entry.ts', loader: 'ts' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    plugins: [selfPackage()],
    sourcemap: 'inline',
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]?.contents;
  if (!code) throw new Error(`esbuild produced no output for ${path}`);
  const dir = cacheDir(app ?? path);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(file)) writeFileSync(file, code);
  return file;
}
