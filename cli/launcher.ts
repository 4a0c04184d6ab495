/**
 * `svc start` under a launcher: `npx svc start …`, `npm exec`, `npm start`
 * (`npm run …`). Killed with SIGKILL, a launcher cannot pass anything on: the
 * server it started was reparented (to PID 1, or a subreaper) and went on
 * serving, holding the port and the data folder's lock. So the server watches
 * the chain of processes from itself up to its launcher, and drains — as on
 * SIGTERM — once that chain breaks.
 *
 * Decisions, and why:
 * - Only under npm. npm marks what it runs (`npm_command`, `npm_lifecycle_event`
 *   in the environment); a server run as `node bin/svc.mjs start` (or `svc start`
 *   from a shell, systemd, a container's entry point) is not watched: there
 *   its parent may legitimately be PID 1, or go away (a shell closed with
 *   `nohup`, `setsid`), and the server is meant to live on.
 * - The launcher is the nearest ancestor whose command line is npm's (`npm …`,
 *   `npx …`, `npm-cli.js`, `npx-cli.js`): npm runs the command through
 *   `sh -c`, which outlives a killed npm, so watching only the direct parent
 *   would miss it. The chain from the parent up to the launcher is recorded
 *   at start; it is broken when a process of it is gone or has another parent
 *   (reparented: the one above it died). A PID reused meanwhile cannot mend
 *   it, since the reused process's parent would not be the recorded one.
 * - A poll of `/proc/<pid>/stat` once a second on the main thread, off every
 *   request's path (requests are served by the worker threads), on an unref'd
 *   timer. Without `/proc` (macOS) only the direct parent is watched, through
 *   `process.ppid`, which covers a launcher that runs svc without a shell.
 * - `[scale.server] watch_launcher = false` (`SVC_WATCH_LAUNCHER=false`) turns
 *   it off (a process manager that starts `npm start` and expects the server
 *   to outlive it).
 */
import { readFileSync } from 'node:fs';

/** How often the chain is checked. */
const POLL_MS = 1_000;
/** How far up the launcher is looked for (npm → sh → node is two steps). */
const MAX_DEPTH = 6;

/** Whether this process was started by npm (`npx`, `npm exec`, `npm run`, `npm start`). */
export function startedByNpm(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.npm_command || env.npm_lifecycle_event);
}

/**
 * The parent of `pid` from `/proc`, or undefined when it is gone (or there is
 * no `/proc`). Any other failure to read (out of file descriptors: EMFILE)
 * throws: it says nothing of the process, and must not read as "gone".
 */
function parentOf(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return undefined;
    throw error;
  }
  // `pid (comm) state ppid …`: the command name may hold spaces and parentheses; the last ')' ends it.
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  return Number.isInteger(ppid) ? ppid : undefined;
}

/** Whether `pid`'s command line is npm's (npm sets its title to `npm exec …`; else node runs npm-cli.js or npx-cli.js). */
function isNpm(pid: number): boolean {
  const args = argsOf(pid);
  const first = args[0] ?? '';
  if (/^(npm|npx)( |$)/.test(first) || /(^|\/)(npm|npx)$/.test(first)) return true;
  return args.slice(0, 3).some((a) => /(^|\/)(npm|npx)-cli\.js$/.test(a) || /\/bin\/(npm|npx)$/.test(a));
}

/** The command line of `pid` (empty when it is gone). */
function argsOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * Whether npm went before it could be recorded: this process runs under
 * npm's `sh -c` wrapper, and that shell was already handed to PID 1 (npm
 * killed while the server was starting). Under npm as PID 1 (a container's
 * `npm start`) the chain is found instead.
 */
function wrapperOrphaned(start = process.ppid): boolean {
  const [shell, flag] = argsOf(start);
  try {
    return /(^|\/)(sh|bash|dash)$/.test(shell ?? '') && flag === '-c' && parentOf(start) === 1;
  } catch {
    return false;
  }
}

/**
 * The processes from this one's parent up to its launcher (npm), both
 * included, or undefined when no npm process is found within a few steps.
 *
 * @example
 * launcherChain() // [30236 (sh -c svc …), 30217 (npm exec svc …)]
 */
export function launcherChain(start = process.ppid): number[] | undefined {
  const chain: number[] = [];
  for (let pid = start, depth = 0; pid >= 1 && depth < MAX_DEPTH; depth++) {
    chain.push(pid);
    if (isNpm(pid)) return chain;
    if (pid === 1) return undefined;
    let up: number | undefined;
    try {
      up = parentOf(pid);
    } catch {
      return undefined;
    }
    if (up === undefined) return undefined;
    pid = up;
  }
  return undefined;
}

/** Whether the recorded chain still holds: this process's parent is its first link, and each link's parent the next. */
function intact(chain: readonly number[]): boolean {
  if (process.ppid !== chain[0]) return false;
  try {
    for (let i = 0; i + 1 < chain.length; i++) if (parentOf(chain[i] as number) !== chain[i + 1]) return false;
    // The launcher itself: still there (its parent may change freely).
    return parentOf(chain[chain.length - 1] as number) !== undefined;
  } catch {
    // Cannot tell now (no descriptor to read with): looked at again at the next tick.
    return true;
  }
}

/** The chain as it was when the command began (see {@link recordLauncher}). */
let recorded: { chain: number[] | undefined; parent: number; orphaned: boolean } | undefined;

/**
 * Note the chain up to the launcher now, as the command begins: a server
 * takes a while to start, and npm killed meanwhile would leave a chain that
 * no longer leads to it (its `sh -c` reparented), so it would never be seen
 * to go. Called first thing by `svc start`; {@link watchLauncher} uses it.
 *
 * @example
 * recordLauncher();
 */
export function recordLauncher(): void {
  recorded ??= { chain: launcherChain(), parent: process.ppid, orphaned: wrapperOrphaned() };
}

/**
 * When this process was started by npm, call `gone` (once) when npm is gone
 * — at once when it went while the server was starting. Returns what is
 * watched (for the start log) and a way to stop, or undefined when nothing
 * is watched.
 *
 * @example
 * const watch = watchLauncher((why) => shutdown(why), { enabled: config['scale.server'].watch_launcher });
 */
export function watchLauncher(gone: (why: string) => void, options: { enabled?: boolean; env?: NodeJS.ProcessEnv } = {}): { watching: string; stop(): void } | undefined {
  if (options.enabled === false || !startedByNpm(options.env ?? process.env)) return undefined;
  recordLauncher();
  const { chain, parent, orphaned } = recorded as NonNullable<typeof recorded>;
  const launcher = chain?.at(-1);
  const check = orphaned ? () => false : chain ? () => intact(chain) : () => process.ppid === parent;
  let stopped = false;
  const tick = (): void => {
    if (stopped || check()) return;
    stopped = true;
    clearInterval(timer);
    gone(orphaned ? 'its launcher (npm) was gone before it started' : chain ? `its launcher (npm, pid ${launcher}) is gone` : `its parent (pid ${parent}) is gone`);
  };
  const timer = setInterval(tick, POLL_MS);
  timer.unref();
  // The first look now (on the next turn, once the caller has logged what it watches): npm may have gone during the start.
  setImmediate(tick).unref();
  return {
    watching: orphaned ? 'npm (already gone)' : chain ? `npm (pid ${launcher})` : `the parent (pid ${parent})`,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
