/**
 * The local provider: a sandbox's dev server is a process group on this host,
 * fenced in as far as the machine allows (isolation.ts: a user of its own, a
 * cgroup, a private `/tmp` with svc's folders hidden), listening on 127.0.0.1
 * on a port of the pool (`port_base`, every `port_stride`, `port_count` of them).
 *
 * Decisions:
 * - the dev server outlives svc (detached, unref'd, its output in a file, no
 *   parent-death signal): a later svc process adopts it by the record's pid,
 *   and `stop` needs nothing but the record (pid, id; the cgroup is named
 *   after the id);
 * - a pid is the sandbox's only while its environment names the sandbox
 *   (`SVC_SANDBOX_ID`), so a reused pid is never signalled;
 * - a command (`exec`) runs beside a live dev server in its mount namespace
 *   and its cgroup (one `nsenter`, no new namespace or tmpfs: milliseconds
 *   count there) — only the namespace its start made and recorded (`mnt_ns`),
 *   checked before it is joined (isolation.ts says why); otherwise, through
 *   the same chain as the dev server;
 * - with the shared store's port claims (`claimPort`, `releasePort`) the store
 *   is the only record of who holds a port: a sandbox is prepared on one
 *   thread and released on another (its supervisor's);
 * - a command's process group is killed when its shell exits: what it left
 *   running in the background goes too (the dev server is the one long-lived
 *   process of a sandbox).
 */
import { type ChildProcessByStdio, spawn, type StdioOptions } from 'node:child_process';
import { chmodSync, chownSync, closeSync, constants, fstatSync, openSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { constants as osConstants } from 'node:os';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { sandboxError } from './errors.ts';
import {
  chownTree,
  fencedShell,
  hiddenPaths,
  localIsolation,
  mountNamespaceOf,
  openMountNamespace,
  processStat,
  type SandboxCgroup,
  sandboxCgroup,
  sandboxIdOf,
  sandboxLimits,
  sandboxOwner,
  sandboxProcesses,
  signalGroup,
} from './isolation.ts';
import { appDir, devScript, logPath, READY_TEXT, sandboxEnv } from './project.ts';
import type { ExecOptions, Runner, SandboxRecord, SandboxSettings, Started } from './types.ts';

/** The most bytes one `logs` call answers. */
export const LOG_CHUNK_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
/** The longest a timer waits (setTimeout fires at once past it). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How long `start` waits for the chain to make the dev server's mount namespace (to record it). */
const NAMESPACE_WAIT_MS = 2000;
/** Signal names by number, for an exit code of 128 + n (the first name of a number: SIGABRT, not its alias SIGIOT). */
const SIGNAL_NAMES = new Map<number, string>();
for (const [name, n] of Object.entries(osConstants.signals)) if (!SIGNAL_NAMES.has(n)) SIGNAL_NAMES.set(n, name);
const READY_TEXT_BYTES = Buffer.from(READY_TEXT);

/** What a {@link LocalRunner} is given besides its settings. */
export interface LocalRunnerOptions {
  /** Whether another process holds `port` (default: binding 127.0.0.1 and 0.0.0.0 fails, or 127.0.0.1 answers). */
  portTaken?: (port: number) => Promise<boolean>;
  /** Reserve a pool port for a sandbox across processes (the shared store); false: another sandbox holds it. */
  claimPort?: (port: number, sandboxId: string) => Promise<boolean>;
  /** Give back what `claimPort` reserved. */
  releasePort?: (port: number, sandboxId: string) => Promise<void>;
  /** How long `stop` waits after SIGTERM before SIGKILL (default 3000 ms). */
  stopGraceMs?: number;
  /**
   * Host folders a sandbox must not see (svc's data folder, its project folder): covered in the sandbox's mount
   * namespace by an empty read-only tmpfs. One that is missing, is not a folder, or holds a system folder is skipped.
   */
  hide?: readonly string[];
}

/** Where `ready` has read a dev server's log up to. */
interface LogScan {
  pid: number | undefined;
  offset: number;
  found: boolean;
  /** The last bytes read, in case the ready text is split across two reads. */
  tail: Buffer;
}

/**
 * @example
 * const runner = new LocalRunner(settings, { claimPort: (p, id) => records.claimPort(host, p, id), releasePort: (p, id) => records.releasePort(host, p, id) });
 * const { port, url } = await runner.prepare(record); // 5180, 'http://localhost:5180'
 * const { pid } = await runner.start({ ...record, port });
 */
export class LocalRunner implements Runner {
  readonly type = 'local' as const;
  /** How dev servers this process started ended (code or signal), by sandbox id: known only to their parent. */
  readonly #exits = new Map<string, { pid: number; ended: Promise<{ code?: number; signal?: string }> }>();
  readonly #settings: SandboxSettings;
  readonly #options: LocalRunnerOptions;
  /** Ports this runner reserved, and for whom, when no store claims them (`claimPort`): with one, the store alone knows. */
  readonly #claimed = new Map<number, string>();
  readonly #scans = new Map<string, LogScan>();
  /** Sandboxes whose cgroup this runner made or capped (a command then only checks that it is still there). */
  readonly #capped = new Set<string>();

  constructor(settings: SandboxSettings, options: LocalRunnerOptions = {}) {
    this.#settings = settings;
    this.#options = options;
  }

  /** The pool, in the order ports are tried. */
  ports(): number[] {
    const { port_base: base = 5180, port_count: count = 10, port_stride: stride = 2 } = this.#settings;
    const out: number[] = [];
    for (let i = 0; i < count && base + i * stride <= 65535; i++) out.push(base + i * stride);
    return out;
  }

  async prepare(record: SandboxRecord): Promise<Started> {
    const id = record.sandbox_id;
    const taken = this.#options.portTaken ?? portTaken;
    const claim = this.#options.claimPort;
    for (const port of this.ports()) {
      if (claim) {
        // The store's claim is atomic, and seen by every thread and process (the release may come from any of them).
        if (!(await claim(port, id))) continue;
      } else {
        const holder = this.#claimed.get(port);
        if (holder !== undefined && holder !== id) continue;
        // Reserved before any await, so concurrent prepares of this runner never pick the same port.
        this.#claimed.set(port, id);
      }
      if (await taken(port)) {
        await this.#giveBack(port, id);
        continue;
      }
      try {
        // Fenced before create gives the files to the sandbox's user (it runs nothing yet, but others might look in).
        if (sandboxOwner({ port })) fenceFolders(record.dir, appDir(record));
      } catch (error) {
        await this.#giveBack(port, id);
        throw sandboxError('SANDBOX_FAILED', `the sandbox's folder cannot be fenced: ${(error as Error).message}`, { cause: error });
      }
      return { port, url: `http://localhost:${port}` };
    }
    const pool = this.ports();
    const range = `${pool[0]}…${pool.at(-1)}, every ${this.#settings.port_stride}`;
    throw sandboxError('SANDBOX_NO_PORT', `no free port: the ${pool.length} ports of the local sandbox pool (${range}) are all reserved or held by other processes`);
  }

  async #giveBack(port: number, id: string): Promise<void> {
    if (this.#options.claimPort) await this.#options.releasePort?.(port, id);
    else if (this.#claimed.get(port) === id) this.#claimed.delete(port);
  }

  async start(record: SandboxRecord): Promise<Started> {
    const app = appDir(record);
    const script = await devScript(app);
    const limits = sandboxLimits(this.#settings);
    let owner;
    try {
      owner = sandboxOwner(record);
      if (owner) {
        await chownTree(app, owner);
        fenceFolders(record.dir, app);
      }
    } catch (error) {
      throw sandboxError('SANDBOX_FAILED', `the project folder could not be given to the sandbox's user: ${(error as Error).message}`, { cause: error });
    }
    const cgroup = this.#cgroup(record);
    const { args, inside } = fencedShell(script, { app, owner, cgroup, tmpBytes: limits.tmpBytes, hide: hiddenPaths(this.#options.hide ?? []) });
    let fd: number;
    try {
      // Appended (a restart keeps the earlier output); never through a link.
      fd = openSync(logPath(record), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o640);
    } catch (error) {
      throw sandboxError('SANDBOX_FAILED', `the dev server's log cannot be opened: ${(error as Error).message}`, { cause: error });
    }
    const from = fstatSync(fd).size;
    let child;
    try {
      child = spawn('/bin/sh', args, { cwd: app, env: sandboxEnv(record, inside, '127.0.0.1'), detached: true, stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    const failed = new Promise<Error>((resolve) => child.once('error', resolve));
    if (child.pid === undefined) {
      const error = await failed;
      throw sandboxError('SANDBOX_FAILED', `the dev server could not be started: ${error.message}`, { cause: error });
    }
    child.unref();
    const pid = child.pid;
    const ended = new Promise<{ code?: number; signal?: string }>((resolve) => child.once('exit', (code, signal) => resolve(exitOfShell(code, signal))));
    this.#exits.set(record.sandbox_id, { pid, ended });
    this.#scans.set(record.sandbox_id, { pid, offset: from, found: false, tail: Buffer.alloc(0) });
    // Always said (undefined unsets the previous start's): a command joins only the namespace recorded here.
    return { pid, mnt_ns: await madeNamespace(pid) };
  }

  /** The sandbox's cgroup, made with its caps; undefined when none is writable here. */
  #cgroup(record: SandboxRecord): SandboxCgroup | undefined {
    const cgroup = sandboxCgroup(record.sandbox_id);
    if (!cgroup) return undefined;
    if (this.#capped.has(record.sandbox_id) && cgroup.exists()) return cgroup;
    try {
      cgroup.ensure(sandboxLimits(this.#settings));
      this.#capped.add(record.sandbox_id);
    } catch (error) {
      // The probe found cgroups writable: one refused now is a fault, not a reason to run uncapped.
      throw sandboxError('SANDBOX_FAILED', `the sandbox's cgroup cannot be made: ${(error as Error).message}`, { cause: error });
    }
    return cgroup;
  }

  async ready(record: SandboxRecord): Promise<boolean> {
    if (!record.port) return false;
    let scan = this.#scans.get(record.sandbox_id);
    if (!scan || scan.pid !== record.pid) {
      scan = { pid: record.pid, offset: 0, found: false, tail: Buffer.alloc(0) };
      this.#scans.set(record.sandbox_id, scan);
    }
    if (!scan.found) {
      const fresh = await readFrom(logPath(record), scan.offset, LOG_CHUNK_BYTES);
      if (fresh.size < scan.offset) Object.assign(scan, { offset: 0, tail: Buffer.alloc(0) });
      const seen = Buffer.concat([scan.tail, fresh.bytes]);
      scan.found = seen.includes(READY_TEXT_BYTES);
      scan.offset += fresh.bytes.length;
      scan.tail = seen.subarray(Math.max(0, seen.length - READY_TEXT_BYTES.length + 1));
      if (!scan.found) return false;
    }
    return connects(record.port, 1000);
  }

  /** The unprivileged user a root svc runs sandbox `record` as (its own: made of its port), who owns its files. */
  ownerOf(record: SandboxRecord): { uid: number; gid: number } | undefined {
    return sandboxOwner(record);
  }

  /** How its dev server ended, when this process started it (an adopted one's end is not known). */
  async exitOf(record: SandboxRecord): Promise<{ code?: number; signal?: string } | undefined> {
    const exit = this.#exits.get(record.sandbox_id);
    if (!exit || exit.pid !== record.pid) return undefined;
    // Seen gone (a zombie) before Node reaped it: its end comes in a moment.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 1000)));
    try {
      return await Promise.race([exit.ended, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async alive(record: SandboxRecord): Promise<boolean> {
    return record.pid !== undefined && ours(record.pid, record.sandbox_id);
  }

  async stop(record: SandboxRecord): Promise<void> {
    const id = record.sandbox_id;
    const cgroup = sandboxCgroup(id);
    const hasCgroup = cgroup?.exists() === true;
    // The group is signalled when its leader is ours, or gone (a group outliving its leader keeps its id from reuse).
    const pid = record.pid;
    const group = pid !== undefined && pid > 0 && (processStat(pid) === undefined || ours(pid, id)) ? pid : undefined;
    // Finished processes do not count: an orphan of the group waits for PID 1 to reap it, which may take a second or two.
    const running = (): boolean => (group !== undefined && signalGroup(group, 0) && hasLiveMember(group)) || (hasCgroup && (cgroup as SandboxCgroup).procs().some(live));
    if (group !== undefined) signalGroup(group, 'SIGTERM');
    if (hasCgroup) cgroup?.signal('SIGTERM');
    const grace = Date.now() + (this.#options.stopGraceMs ?? 3000);
    while (running() && Date.now() < grace) await delay(20);
    if (group !== undefined) signalGroup(group, 'SIGKILL');
    if (hasCgroup) await cgroup?.empty(2000);
    // A process that left the group (setsid) and had no cgroup to hold it is still known by its environment.
    const strays = [...sandboxProcesses()].filter(([, of]) => of === id).map(([p]) => p);
    for (const p of strays) kill(p, 'SIGKILL');
    const end = Date.now() + 1000;
    while ((strays.some((p) => live(p)) || (group !== undefined && signalGroup(group, 0) && hasLiveMember(group))) && Date.now() < end) await delay(10);
    cgroup?.remove();
    this.#capped.delete(id);
    this.#scans.delete(id);
  }

  async release(record: SandboxRecord): Promise<void> {
    const cgroup = sandboxCgroup(record.sandbox_id);
    if (cgroup?.exists()) {
      await cgroup.empty(2000);
      cgroup.remove();
    }
    this.#capped.delete(record.sandbox_id);
    this.#scans.delete(record.sandbox_id);
    if (record.port) await this.#giveBack(record.port, record.sandbox_id);
  }

  async exec(record: SandboxRecord, command: string, options: ExecOptions): Promise<number> {
    const signal = options.signal;
    if (signal?.aborted) throw signal.reason;
    const app = appDir(record);
    const owner = sandboxOwner(record);
    const cgroup = this.#cgroup(record);
    const timeoutMs = Math.min(options.timeoutMs > 0 ? options.timeoutMs : DEFAULT_TIMEOUT_MS, MAX_TIMER_MS);
    // The dev server's namespace, checked and held open (the one joined is the one checked); else a fresh one.
    const ns = record.pid !== undefined && ours(record.pid, record.sandbox_id) ? openMountNamespace(record.pid, record.mnt_ns) : undefined;
    let fenced;
    try {
      fenced = fencedShell(command, { app, owner, cgroup, tmpBytes: sandboxLimits(this.#settings).tmpBytes, join: ns !== undefined, hide: hiddenPaths(this.#options.hide ?? []) });
    } catch (error) {
      if (ns !== undefined) closeSync(ns);
      throw error;
    }
    const { args, inside } = fenced;
    return new Promise<number>((resolve, reject) => {
      let child: ChildProcessByStdio<null, Readable, Readable>;
      try {
        // The namespace goes on fd 3 (JOIN_FD), where the chain's nsenter takes it.
        const stdio: StdioOptions = ns !== undefined ? ['ignore', 'pipe', 'pipe', ns] : ['ignore', 'pipe', 'pipe'];
        child = spawn('/bin/sh', args, { cwd: app, env: sandboxEnv(record, inside, '127.0.0.1'), detached: true, stdio }) as ChildProcessByStdio<null, Readable, Readable>;
      } finally {
        if (ns !== undefined) closeSync(ns);
      }
      let failure: unknown;
      let settled = false;
      let code = 0;
      const killGroup = (): void => {
        if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      };
      const onAbort = (): void => {
        failure ??= signal?.reason;
        killGroup();
      };
      const timer = setTimeout(() => {
        failure ??= sandboxError('SANDBOX_TIMEOUT', `the command did not finish within ${timeoutMs} ms and was killed`);
        killGroup();
      }, timeoutMs);
      const settle = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout.on('data', (chunk: Buffer) => options.onStdout?.(chunk));
      child.stderr.on('data', (chunk: Buffer) => options.onStderr?.(chunk));
      child.once('error', (error) => settle(() => reject(sandboxError('SANDBOX_FAILED', `the command could not be started: ${error.message}`, { cause: error }))));
      // Killed (a timeout, an abort): answered once nothing of its group is left — a process sent SIGKILL dies when it
      // is next scheduled, which on a busy machine is after its shell's exit was seen — or after GROUP_GONE_MS.
      let failing = false;
      const fail = (): void => {
        // Once: both 'exit' and 'close' come here.
        if (failing) return;
        failing = true;
        void groupGone(child.pid, GROUP_GONE_MS).then(() => settle(() => reject(failure)));
      };
      child.once('exit', (c, s) => {
        // What it left in its group goes too; its pipes then close.
        killGroup();
        code = c ?? 128 + (s ? (osConstants.signals[s] ?? 0) : 0);
        if (failure !== undefined) {
          child.stdout.destroy();
          child.stderr.destroy();
          fail();
          return;
        }
        // A process that left the group (setsid) may hold the pipes open: its output is not waited for.
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          settle(() => resolve(code));
        }, 250).unref();
      });
      child.once('close', () => (failure !== undefined ? fail() : settle(() => resolve(code))));
    });
  }

  async logs(record: SandboxRecord, offset = 0): Promise<{ content: string; offset: number }> {
    const from = Number.isFinite(offset) && offset > 0 ? Math.floor(offset) : 0;
    const { bytes } = await readFrom(logPath(record), from, LOG_CHUNK_BYTES);
    const whole = completeUtf8(bytes);
    // An offset inside a character (not one a read answered): its remaining bytes are skipped, not shown as U+FFFD.
    let start = 0;
    while (start < Math.min(3, whole) && ((bytes[start] as number) & 0xc0) === 0x80) start++;
    return { content: bytes.subarray(start, whole).toString('utf8'), offset: from + whole };
  }

  async orphans(known: ReadonlySet<string>): Promise<string[]> {
    return [...new Set(sandboxProcesses().values())].filter((id) => !known.has(id));
  }

  async removeOrphan(id: string): Promise<void> {
    const leaders = [...sandboxProcesses()].filter(([p, of]) => of === id && processStat(p)?.pgid === p).map(([p]) => p);
    // No pid on record: its process groups' leaders stand for it (a grace period each, then SIGKILL; strays by environment).
    for (const pid of leaders.length > 0 ? leaders : [undefined]) await this.stop({ sandbox_id: id, pid } as SandboxRecord);
  }
}

/** The process is alive (not a zombie) and runs for sandbox `id`. */
function ours(pid: number, id: string): boolean {
  const stat = processStat(pid);
  if (!stat || stat.state === 'Z' || stat.state === 'X') return false;
  const of = sandboxIdOf(pid);
  // An environment svc cannot read (another user's, svc not root): a group leader is taken as the sandbox's.
  return of === undefined ? stat.pgid === pid : of === id;
}

/**
 * How the dev server's shell ended: an exit code above 128 is how a shell says its command was killed by signal
 * code - 128 (`kill -9` of the shell's node child: 137), so it is told as that signal, a kill, not a crash.
 */
function exitOfShell(code: number | null, signal: NodeJS.Signals | null): { code?: number; signal?: string } {
  if (signal) return { signal };
  if (code === null) return {};
  const named = code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined;
  return named ? { signal: named } : { code };
}

/**
 * The mount namespace the chain made for dev server `pid` (its inode), once it has made it; undefined: none (no
 * private /tmp here, the chain failed first), or the dev server already left it for one of its own (then no
 * command ever joins it).
 */
async function madeNamespace(pid: number): Promise<number | undefined> {
  if (!localIsolation().privateTmp) return undefined;
  const deadline = Date.now() + NAMESPACE_WAIT_MS;
  for (;;) {
    const ns = mountNamespaceOf(pid);
    if (ns !== 'own') return ns;
    if (Date.now() > deadline) return undefined;
    await delay(1);
  }
}

/**
 * A sandbox's folders as root leaves them: its folder (`dir`: the project and the log) root's and 0700, so no other
 * sandbox reaches in by its host path — the dev server reaches its project through its /tmp/app, bound by root
 * before it drops — or 0711 without a private /tmp (the project is then reached by its host path); the project
 * folder 0700 (its own user's); the folder of all sandboxes 0711 (nothing listed), unless it is a shared one
 * (world-writable or sticky, like /tmp), which is left as it is.
 */
function fenceFolders(dir: string, app: string): void {
  chownSync(dir, 0, 0);
  chmodSync(dir, localIsolation().privateTmp ? 0o700 : 0o711);
  chmodSync(app, 0o700);
  const root = dirname(dir);
  const stat = statSync(root);
  if (stat.uid === 0 && (stat.mode & 0o1002) === 0) chmodSync(root, (stat.mode & 0o7700) | 0o011);
}

function live(pid: number): boolean {
  const state = processStat(pid)?.state;
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/** Some process of group `pgid` is not a zombie (a zombie holds no port; its parent reaps it in its own time). */
function hasLiveMember(pgid: number): boolean {
  if (live(pgid)) return true;
  for (const [pid] of sandboxProcesses()) if (processStat(pid)?.pgid === pgid && live(pid)) return true;
  return false;
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone meanwhile.
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Up to `max` bytes of `path` from `offset`, and the file's size (0 and nothing when it is missing). */
async function readFrom(path: string, offset: number, max: number): Promise<{ bytes: Buffer; size: number }> {
  let file;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { bytes: Buffer.alloc(0), size: 0 };
    throw error;
  }
  try {
    const { size } = await file.stat();
    const length = Math.max(0, Math.min(max, size - offset));
    if (length === 0) return { bytes: Buffer.alloc(0), size };
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await file.read(bytes, 0, length, offset);
    return { bytes: bytes.subarray(0, bytesRead), size };
  } finally {
    await file.close();
  }
}

/**
 * How many leading bytes of `bytes` end on a whole UTF-8 character (a character cut at the end is left for the next read).
 * @example completeUtf8(Buffer.from([0x61, 0xe2, 0x9c])) // 1: 'a', then two of the three bytes of '✓'
 */
export function completeUtf8(bytes: Buffer): number {
  const n = bytes.length;
  // Back over at most three continuation bytes to the lead byte of the last character.
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const b = bytes[i] as number;
    if ((b & 0xc0) === 0x80) continue;
    // An invalid lead byte (0xc0, 0xc1, 0xf5…) waits for nothing: it decodes as a replacement mark.
    const need = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 1;
    return n - i < need ? i : n;
  }
  // Only continuation bytes at the end (not UTF-8): nothing to wait for.
  return n;
}

/** Some process other than ours holds `port` on this host. */
async function portTaken(port: number): Promise<boolean> {
  for (const host of ['127.0.0.1', '0.0.0.0']) if (!(await canBind(port, host))) return true;
  return connects(port, 250);
}

function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A TCP connection to 127.0.0.1:`port` opens within `ms`. */
function connects(port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), ms);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** How long a killed command's answer waits for the rest of its process group to be gone. */
const GROUP_GONE_MS = 500;

/** Resolves once process group `pgid` has no live process left (zombies waiting to be reaped do not count), or after `withinMs`. */
async function groupGone(pgid: number | undefined, withinMs: number): Promise<void> {
  if (pgid === undefined) return;
  const until = Date.now() + withinMs;
  while (signalGroup(pgid, 0) && hasLiveMember(pgid) && Date.now() < until) await delay(5);
}
