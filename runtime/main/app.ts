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
    pool = await WorkerPool.start({ size: 1, module: SERVE_WORKER, app: entry, data });
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
function loadError(error: unknown, projectRoot: string): string {
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

/** The endpoints as a table, and how many. */
export function printRoutes(routes: RouteSummary[]): void {
  const width = Math.max(...routes.map((r) => r.method.length + 1 + r.path.length));
  for (const r of routes) say(`${`${r.method} ${r.path}`.padEnd(width)}  ${r.kind} ${r.name}${r.access === 'pub' ? '' : r.access === 'api-key' ? '  (API key + signature)' : '  (token)'}`);
  say(`${routes.length} endpoints`);
}
