/**
 * The `reload` module of the main thread (`--dev`): on a change under the
 * project folder, the app is bundled and probed again, new workers start and
 * the old ones drain; a failed reload keeps the previous version serving.
 */
import { readdirSync, statSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { join, relative } from 'node:path';
import { compileWorker, forgetBuilds } from '../../transports/worker/index.ts';
import { SERVING, WORKERS } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { buildErrors, describeApp, printRoutes } from './app.ts';
import { type Lifecycle, order, say, SERVE_WORKER, type StartOptions, workerBoot } from './options.ts';

/**
 * @example
 * composeRuntime([..., ...(options.dev ? [reloadModule(options, life)] : []), signalsModule(options, life, ...)]);
 */
export function reloadModule(options: StartOptions, life: Lifecycle): RuntimeModule {
  let watching: { close(): void } | undefined;
  return {
    name: 'reload',
    needs: [WORKERS, SERVING],
    start(rt) {
      const { entry, projectRoot } = options;
      const workers = rt.need(WORKERS);
      const { transport } = rt.need(SERVING);
      watching = watchAndReload(
        projectRoot,
        async () => {
          forgetBuilds();
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
          say(`svc: reloaded ${relative(process.cwd(), entry) || entry}`);
          if (JSON.stringify(next) !== JSON.stringify(workers.routes)) {
            workers.routes = next;
            say(`svc: the endpoints changed (${workers.routes.length}):`);
            printRoutes(workers.routes);
          }
        },
        () => life.stopping,
      );
    },
    close: () => watching?.close(),
  };
}

/** Reload on changes under the project folder (not .svc, node_modules, dot folders); one reload at a time. */
function watchAndReload(root: string, reload: () => Promise<void>, stopped: () => boolean): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  let again = false;
  const go = async (): Promise<void> => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      await reload();
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
          clearTimeout(timer);
          timer = setTimeout(() => void go(), 100);
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
