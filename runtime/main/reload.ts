/**
 * The `reload` module of the main thread (`--dev`): on a change under the
 * project folder, the app's bundle is built again (an incremental esbuild
 * context: only the changed files are read; svc's runtime, bundled apart, is
 * not rebuilt) and every worker takes the new code in place (`WorkerPool.swap`):
 * requests in flight finish on the old code, the next ones run the new, and
 * open connections (keep-alive HTTP, WebSockets) stay open. A version that
 * fails to build or to load, or declares a class wrongly, is taken by no
 * worker: the previous one keeps serving and the error is printed.
 *
 * New workers are started instead (the app probed first, the old workers
 * drained, connections closed) when new code cannot be taken in place: a
 * file other than a module changed (svc.toml, package.json, .env: the
 * configuration), or the endpoints, hooks, subscriptions or class schemas
 * changed (the routers and consumers are built from them).
 */
import { readdirSync, statSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { join, relative } from 'node:path';
import { compileWorker, compileWorkerFiles, forgetBuilds, keepBuildService } from '../../transports/worker/index.ts';
import { SERVING, WORKERS } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { buildErrors, describeApp, loadError, printRoutes } from './app.ts';
import { type Lifecycle, order, say, SERVE_WORKER, type StartOptions, workerBoot } from './options.ts';

/**
 * @example
 * composeRuntime([..., ...(options.dev ? [reloadModule(options, life)] : []), signalsModule(options, life, ...)]);
 */
export function reloadModule(options: StartOptions, life: Lifecycle): RuntimeModule {
  let watching: { close(): void } | undefined;
  // From the first build on (the `app` module's, before this one starts): each save then rebuilds incrementally.
  keepBuildService(true);
  return {
    name: 'reload',
    needs: [WORKERS, SERVING],
    start(rt) {
      const { entry, projectRoot } = options;
      const workers = rt.need(WORKERS);
      const { transport } = rt.need(SERVING);
      watching = watchAndReload(
        projectRoot,
        async (changed) => {
          const label = relative(process.cwd(), entry) || entry;
          forgetBuilds();
          const config = [...changed].find((file) => !/\.[cm]?[jt]s$/.test(file));
          if (config === undefined) {
            const files = await compileWorkerFiles(SERVE_WORKER, entry);
            let restart: string | undefined;
            try {
              restart = await workers.current.swap(files.app, files.entry);
            } catch (error) {
              throw new Error(loadError(error, projectRoot));
            }
            if (restart === undefined) return say(`svc: reloaded ${label} (in place)`);
            say(`svc: ${restart}: starting new workers`);
          } else {
            say(`svc: ${relative(process.cwd(), config) || config} changed: starting new workers`);
          }
          await compileWorker(SERVE_WORKER, entry);
          // Loaded once on its own first: an app that fails to load, or declares a class wrongly, starts no new workers.
          const next = await describeApp(entry, workerBoot(options, transport, { faux: true }), projectRoot);
          if (transport === 'node') {
            // node:http cannot share the port: start the new workers, let the old ones go, then open the port again.
            const next = await workers.launch(false);
            await workers.drain(workers.current, 2000);
            workers.current = next;
            await order(next, 'w1', { t: 'listen' });
          } else {
            const next = await workers.launch();
            const old = workers.current;
            workers.current = next;
            await workers.drain(old, 2000);
          }
          say(`svc: reloaded ${label}`);
          if (JSON.stringify(next) !== JSON.stringify(workers.routes)) {
            workers.routes = next;
            say(`svc: the endpoints changed (${workers.routes.length}):`);
            printRoutes(workers.routes);
          }
        },
        () => life.stopping,
      );
    },
    close: () => {
      watching?.close();
      keepBuildService(false);
    },
  };
}

/** Reload on changes under the project folder (not .svc, node_modules, dot folders); one reload at a time. */
function watchAndReload(root: string, reload: (changed: ReadonlySet<string>) => Promise<void>, stopped: () => boolean): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  let again = false;
  // The files changed since the last reload began.
  let pending = new Set<string>();
  const go = async (): Promise<void> => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    const these = pending;
    pending = new Set();
    try {
      await reload(these);
    } catch (error) {
      process.stderr.write(`svc: reload failed, still serving the previous version:\n${buildErrors(error) ?? (error as Error).message}\n`);
    }
    busy = false;
    if (again && !stopped()) {
      again = false;
      void go();
    }
  };
  // One watcher per folder, not `recursive: true`: on Linux Node 20 follows each file's inode then, and an editor
  // that saves by writing a new file and renaming it over the old one (vim, sed -i, many IDEs) ends the watching
  // of that file for good. A folder's watcher sees every name in it change, however it changed.
  const ignored = (rel: string): boolean => /(^|[\\/])(\.svc|node_modules|\.git|\.tap)([\\/]|$)/.test(rel) || /(^|[\\/])\./.test(rel);
  const watchers = new Map<string, FSWatcher>();
  const watchTree = (dir: string): void => {
    const rel = relative(root, dir);
    if (watchers.has(dir) || (rel !== '' && ignored(rel))) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
      watchers.set(
        dir,
        watch(dir, (_event, name) => {
          if (!name || stopped()) return;
          const path = join(dir, name.toString());
          const changed = relative(root, path);
          if (ignored(changed)) return;
          // A folder made (or moved in) after the start is watched from now on.
          if (!watchers.has(path) && isDirectory(path)) watchTree(path);
          if (!/\.(m?[jt]s|json|toml)$/.test(changed)) return;
          pending.add(path);
          clearTimeout(timer);
          // Editors save in several steps (write, rename): one reload for them all, soon after the last.
          timer = setTimeout(() => void go(), 30);
        }).on('error', () => {
          watchers.get(dir)?.close();
          watchers.delete(dir);
        }),
      );
    } catch {
      return; // gone already
    }
    for (const entry of entries) if (entry.isDirectory()) watchTree(join(dir, entry.name));
  };
  watchTree(root);
  return { close: () => watchers.forEach((w) => w.close()) };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
