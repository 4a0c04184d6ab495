/**
 * The `app` module of the main thread: the app bundled for the worker threads
 * (a syntax error stops the start here, with its file and line), and loaded
 * once in a probe thread of its own before anything is made on disk (a throw
 * at module level, a misspelled name, a class declared wrongly stop it too);
 * `--faux` prints its endpoints and the start ends there.
 */
import { basename, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileWorker, WorkerPool } from '../../transports/worker/index.ts';
import type { RouteSummary, ServeBoot } from '../boot.ts';
import { endpointCount, EVENT_METHOD, HOOK_METHOD } from '../listing.ts';
import { APP, SERVING } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { order, say, SERVE_WORKER, StartError, type StartOptions, workerBoot } from './options.ts';

/** What the probe found: the app's endpoints (undefined in a sibling of `sv` calls, which skips the probe). */
export interface AppProbe {
  endpoints: RouteSummary[] | undefined;
}

/**
 * @example
 * composeRuntime([configModule(options), appModule(options), ...]);
 */
export function appModule(options: StartOptions): RuntimeModule {
  return {
    name: 'app',
    needs: [SERVING],
    provides: [APP],
    async start(rt) {
      const { transport } = rt.need(SERVING);
      // Syntax errors surface here, with file and line.
      await compileWorker(SERVE_WORKER, options.entry);
      // A sibling of `sv` calls skips the probe (its parent shows why it failed, and waits for it): it is started on a call.
      const endpoints = options.parentFd && !options.faux ? undefined : await describeApp(options.entry, workerBoot(options, transport, { faux: true }), options.projectRoot);
      if (options.faux && endpoints) printRoutes(endpoints);
      rt.provide(APP, { endpoints });
    },
  };
}

/** Load the app in a thread of its own (it serves nothing, opens nothing) and list its endpoints. */
export async function describeApp(entry: string, data: ServeBoot, projectRoot: string): Promise<RouteSummary[]> {
  let pool: WorkerPool;
  try {
    pool = await WorkerPool.start({ size: 1, module: SERVE_WORKER, app: entry, data, brief: true });
  } catch (error) {
    throw new StartError(loadError(error, projectRoot));
  }
  try {
    return await order<RouteSummary[]>(pool, 'w1', { t: 'describe' });
  } finally {
    await pool.close({ deadlineMs: 1000 });
  }
}

/** An error of the app's module as it loads: `file:line:col: message`, at the first frame in the project's own files. */
export function loadError(error: unknown, projectRoot: string): string {
  const name = error instanceof Error && !['Error', 'SvcError'].includes(error.name) ? `${error.name}: ` : '';
  const message = `${name}${error instanceof Error ? error.message : String(error)}`;
  const stack = (error as { appStack?: unknown }).appStack ?? (error as { stack?: unknown }).stack;
  if (typeof stack !== 'string') return message;
  for (const line of stack.split('\n')) {
    const frame = /^\s+at (?:.*\()?(.+?):(\d+):(\d+)\)?$/.exec(line);
    if (!frame) continue;
    const file = (frame[1] as string).startsWith('file:') ? fileURLToPath(frame[1] as string) : (frame[1] as string);
    // The worker's generated entry (it imports the app) is no file of the app's.
    if (file.startsWith(`${projectRoot}${sep}`) && !file.includes(`${sep}node_modules${sep}`) && basename(file) !== 'svc-worker-entry.ts') return `${relative(process.cwd(), file) || file}:${frame[2]}:${frame[3]}: ${message}`;
  }
  return message;
}

/** esbuild's errors as `file:line:col: message` lines. */
export function buildErrors(error: unknown): string | undefined {
  const errors = (error as { errors?: { text: string; location?: { file: string; line: number; column: number } | null }[] }).errors;
  if (!Array.isArray(errors)) return undefined;
  return errors.map((e) => (e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ${e.text}` : e.text)).join('\n');
}

/**
 * The app's listing as a table: each HTTP route and WebSocket walker
 * (`METHOD /path  kind Name`), each hook walker (`HOOK _Name  before every
 * route and WebSocket upgrade`), each event subscription (`EVENT topic  → name`);
 * then how many of each.
 *
 * @example
 * printRoutes(await describeApp(entry, boot, projectRoot));
 * // POST /walker/AddNote                          walker AddNote  (token)
 * // HOOK _RequireKey                              hook walker, before every route and WebSocket upgrade
 * // EVENT order.created                           → subscription onOrder
 * // 1 endpoint, 1 hook, 1 subscription
 */
export function printRoutes(routes: RouteSummary[]): void {
  const lines = routes.map((r) => {
    if (r.method === HOOK_METHOD) return [`HOOK ${r.name}`, `hook walker, ${r.path.replace(/^\((.*)\)$/, '$1')}`];
    if (r.method === EVENT_METHOD) return [`EVENT ${r.path}`, `→ ${r.kind} ${r.name}`];
    return [`${r.method} ${r.path}`, `${r.kind} ${r.name}${r.access === 'pub' ? '' : r.access === 'api-key' ? '  (API key + signature)' : '  (token)'}`];
  });
  const width = Math.max(...lines.map(([left]) => (left as string).length));
  for (const [left, right] of lines) say(`${(left as string).padEnd(width)}  ${right}`);
  say(listingCounts(routes));
}

/** `3 endpoints, 1 hook, 2 subscriptions` (hooks and subscriptions only when there are some). */
function listingCounts(routes: readonly RouteSummary[]): string {
  const n = (count: number, what: string) => `${count} ${what}${count === 1 ? '' : 's'}`;
  const hooks = routes.filter((r) => r.method === HOOK_METHOD).length;
  const events = routes.filter((r) => r.method === EVENT_METHOD).length;
  return [n(endpointCount(routes), 'endpoint'), ...(hooks ? [n(hooks, 'hook')] : []), ...(events ? [n(events, 'subscription')] : [])].join(', ');
}

