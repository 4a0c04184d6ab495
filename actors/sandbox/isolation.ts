/**
 * How the local provider fences a sandbox's processes in, with what this
 * machine offers (probed once, said in {@link localIsolation}'s notes):
 * - another user: uid/gid 65534 (`nobody`) when svc is root, no supplementary
 *   groups, no new privileges (`setpriv`);
 * - a cgroup per sandbox (`svc-sandboxes/<id>`, v1 or v2): memory (swap
 *   included), processes and, where the cpu controller is writable, CPU; entered
 *   by the shell before it execs the sandboxed command, so nothing it starts is
 *   outside; named after the sandbox, so a later svc process finds it;
 * - a mount namespace whose `/tmp` is a tmpfs of `storage_limit`, the project
 *   bound at `/tmp/app` (the sandbox folder may itself be under the host's
 *   `/tmp`, which the tmpfs hides: the shell enters the project first and binds
 *   its own working folder, `/proc/self/cwd`);
 * - its own process group (its leader's pid is the sandbox's pid).
 *
 * Decisions: every command of the chain that runs as root is named by its
 * absolute path and only shell builtins run unnamed, because the sandbox's
 * environment puts the project's `node_modules/.bin` first on the PATH. Nothing
 * ties the dev server's life to svc's (no parent-death signal, no
 * `--kill-child`): a later svc process adopts it by its pid. Processes are
 * recognised as a sandbox's by `SVC_SANDBOX_ID` in their environment
 * (`/proc/<pid>/environ`), which guards against a reused pid.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxSettings } from './types.ts';

/** The user (and group) a root svc runs sandboxes as. */
const NOBODY = 65534;
/** Where the project is seen inside a private `/tmp`. */
export const INSIDE_APP = '/tmp/app';
const CGROUP_ROOT = '/sys/fs/cgroup';
const CGROUP_PARENT = 'svc-sandboxes';
const CPU_PERIOD_US = 100_000;
/** Only these, by absolute path, for root's part of a chain. */
const SAFE_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** What the local provider can do here. */
export interface LocalIsolation {
  /** `uid:gid` the dev server and commands run as; undefined: svc's own user (svc is not root, or `setpriv` fails). */
  user: string | undefined;
  /** A cgroup per sandbox caps memory and processes. */
  cgroup: boolean;
  /** And CPU (`cpu_limit`). */
  cpu: boolean;
  /** `/tmp` is a private tmpfs of `storage_limit`. */
  privateTmp: boolean;
  /** In words: what is fenced and what is not. */
  notes: string[];
}

interface Tools {
  sh: string;
  unshare?: string;
  nsenter?: string;
  mount?: string;
  mkdir?: string;
  setpriv?: string;
  chown?: string;
}

type CgroupRoot = { version: 1; memory: string; pids: string; cpu: string | undefined } | { version: 2; base: string; cpu: boolean };

interface Probe {
  public: LocalIsolation;
  tools: Tools;
  owner: { uid: number; gid: number } | undefined;
  cgroup: CgroupRoot | undefined;
}

let probed: Probe | undefined;

function which(name: string): string | undefined {
  for (const dir of SAFE_DIRS) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}

function writable(dir: string): boolean {
  const probe = join(dir, `svc-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

function probeCgroup(): CgroupRoot | undefined {
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) {
    let controllers = '';
    try {
      controllers = readFileSync(join(CGROUP_ROOT, 'cgroup.subtree_control'), 'utf8');
    } catch {
      return undefined;
    }
    const has = new Set(controllers.trim().split(/\s+/));
    return has.has('memory') && has.has('pids') && writable(CGROUP_ROOT) ? { version: 2, base: CGROUP_ROOT, cpu: has.has('cpu') } : undefined;
  }
  const memory = join(CGROUP_ROOT, 'memory');
  const pids = join(CGROUP_ROOT, 'pids');
  if (!existsSync(memory) || !existsSync(pids) || !writable(memory) || !writable(pids)) return undefined;
  const cpu = join(CGROUP_ROOT, 'cpu');
  return { version: 1, memory, pids, cpu: existsSync(join(cpu, 'cpu.cfs_quota_us')) && writable(cpu) ? cpu : undefined };
}

function probe(): Probe {
  if (probed) return probed;
  const sh = '/bin/sh';
  const tools: Tools = { sh, unshare: which('unshare'), nsenter: which('nsenter'), mount: which('mount'), mkdir: which('mkdir'), setpriv: which('setpriv'), chown: which('chown') };
  const root = process.getuid?.() === 0;
  const notes: string[] = [];
  let owner: Probe['owner'];
  if (root && tools.setpriv && tools.chown && spawnSync(tools.setpriv, [...dropArgs({ uid: NOBODY, gid: NOBODY }), sh, '-c', ':'], { stdio: 'ignore' }).status === 0) {
    owner = { uid: NOBODY, gid: NOBODY };
    notes.push(`the dev server and commands run as uid ${NOBODY} (nobody): no supplementary groups, no new privileges; every sandbox shares that uid, so one sandbox's processes may signal another's`);
  } else {
    notes.push(root ? 'setpriv does not work here: the dev server and commands run as root' : "svc is not root: the dev server and commands run as svc's own user");
  }
  let privateTmp = false;
  if (root && tools.unshare && tools.mount && tools.mkdir) {
    privateTmp = spawnSync(tools.unshare, ['--mount', '--propagation', 'private', '--', sh, '-c', `${tools.mount} -t tmpfs -o size=1048576,mode=1777 svc-probe /tmp`], { stdio: 'ignore' }).status === 0;
  }
  notes.push(
    privateTmp
      ? "/tmp is a private tmpfs of storage_limit (the project is at /tmp/app); the project folder's own disk use is not capped"
      : "no private /tmp (needs root and unshare --mount): the dev server shares the host's /tmp; disk use is not capped",
  );
  const cgroup = probeCgroup();
  notes.push(
    cgroup
      ? `memory (swap included), processes${cgroup.cpu ? ' and CPU' : ''} are capped by a cgroup v${cgroup.version} per sandbox${cgroup.cpu ? '' : ' (no writable cpu controller: CPU is not capped)'}`
      : 'no writable cgroup: memory, processes and CPU are not capped',
  );
  notes.push('no network isolation: the dev server listens on 127.0.0.1 (its preview port must be reachable) and reaches the network and host services as svc does');
  notes.push('no PID namespace: sandbox processes see the host\'s process list; the rest of the file system is readable as it is to any unprivileged user');
  probed = {
    public: { user: owner ? `${owner.uid}:${owner.gid}` : undefined, cgroup: cgroup !== undefined, cpu: Boolean(cgroup?.cpu), privateTmp, notes },
    tools,
    owner,
    cgroup,
  };
  return probed;
}

/**
 * What the local provider can do on this machine (probed once, synchronously: a few short processes).
 * @example localIsolation() // { user: '65534:65534', cgroup: true, cpu: true, privateTmp: true, notes: ['the dev server and commands run as uid 65534 …', …] }
 */
export function localIsolation(): LocalIsolation {
  return probe().public;
}

/**
 * Who owns a sandbox's project files (svc chowns what it writes there to it); undefined: svc's own user.
 * @example const owner = sandboxOwner(); if (owner) await chown(path, owner.uid, owner.gid);
 */
export function sandboxOwner(): { uid: number; gid: number } | undefined {
  return probe().owner;
}

function dropArgs(owner: { uid: number; gid: number }): string[] {
  return ['--reuid', String(owner.uid), '--regid', String(owner.gid), '--clear-groups', '--no-new-privs', '--'];
}

/**
 * Give a project folder to the sandbox's user, links not followed (`chown -R -P -h`: the walk opens each folder
 * without following a link, so a link the project's code planted cannot turn it onto a file outside).
 * @example await chownTree(appDir(record), owner)
 */
export async function chownTree(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  const chown = probe().tools.chown;
  if (!chown) throw new Error('no chown command here');
  const stderr: Buffer[] = [];
  const child = spawn(chown, ['-R', '-P', '-h', `${owner.uid}:${owner.gid}`, '--', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  const code = await new Promise<number | null>((done) => {
    child.once('error', () => done(-1));
    child.once('close', (c) => done(c));
  });
  if (code !== 0) throw new Error(`chown of ${dir} failed: ${Buffer.concat(stderr).toString().trim() || `exit ${code}`}`);
}

const UNITS: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/**
 * A Kubernetes quantity as a number (`512Mi`, `2Gi`, `500M`, `1.5G`, `1e9`, `250m`), rounded up to a whole unit.
 * Throws a RangeError on anything else.
 * @example parseQuantity('512Mi') // 536870912
 */
export function parseQuantity(text: string): number {
  const m = /^\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|K|M|G|T|P|E)?)\s*$/.exec(text);
  if (!m) throw new RangeError(`"${text}" is not a quantity (a number with an optional suffix: Ki Mi Gi Ti, k M G T, m)`);
  const value = Number(m[1]) * (m[2] !== undefined ? 10 ** Number(m[2]) : (UNITS[m[3] ?? ''] as number));
  if (!Number.isFinite(value)) throw new RangeError(`"${text}" is too large`);
  return Math.ceil(value);
}

/**
 * CPUs as a Kubernetes CPU quantity reads (`500m` → 0.5, `2` → 2, `1.5` → 1.5). Throws a RangeError on anything else.
 * @example parseCpu('500m') // 0.5
 */
export function parseCpu(text: string): number {
  const m = /^\s*(\d+(?:\.\d*)?|\.\d+)(m?)\s*$/.exec(text);
  if (!m) throw new RangeError(`"${text}" is not a CPU quantity (like 500m, 1 or 1.5)`);
  return Number(m[1]) / (m[2] === 'm' ? 1000 : 1);
}

/** A sandbox's caps; undefined: none. */
export interface SandboxLimits {
  memoryBytes: number | undefined;
  pids: number | undefined;
  cpu: number | undefined;
  /** The private /tmp's size. */
  tmpBytes: number | undefined;
}

/**
 * The caps `[scale.sandbox]` asks for (an empty or zero quantity: no cap).
 * @example sandboxLimits(settings) // { memoryBytes: 536870912, pids: 256, cpu: 0.5, tmpBytes: 268435456 }
 */
export function sandboxLimits(settings: Pick<SandboxSettings, 'memory_limit' | 'pids_limit' | 'cpu_limit' | 'storage_limit'>): SandboxLimits {
  const q = (text: string | undefined, parse: (t: string) => number): number | undefined => {
    if (text === undefined || text.trim() === '') return undefined;
    const n = parse(text);
    return n > 0 ? n : undefined;
  };
  return {
    memoryBytes: q(settings.memory_limit, parseQuantity),
    pids: settings.pids_limit > 0 ? settings.pids_limit : undefined,
    cpu: q(settings.cpu_limit, parseCpu),
    tmpBytes: q(settings.storage_limit, parseQuantity),
  };
}

/** A sandbox's cgroup: found by its id from any svc process. */
export interface SandboxCgroup {
  /** The shell line that moves the shell (`$$`) into it; the shell then execs what runs sandboxed. */
  readonly enter: string;
  /** Make it if missing and set its caps. Throws when the machine refuses. */
  ensure(limits: SandboxLimits): void;
  exists(): boolean;
  /** The processes in it. */
  procs(): number[];
  /** Signal every process in it (once). */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL what is in it until it is empty or `ms` passed; true: empty. */
  empty(ms: number): Promise<boolean>;
  /** Remove it (quietly: a cgroup that still holds a process stays). */
  remove(): void;
}

/** The cgroup name of a sandbox: its id when that is a plain name, else a digest of it. */
function cgroupName(id: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(id) ? id : `x-${createHash('sha256').update(id).digest('hex').slice(0, 32)}`;
}

function write(dir: string, file: string, value: string): void {
  writeFileSync(join(dir, file), value);
}

function readPids(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * The cgroup of sandbox `id` (made by `ensure`); undefined when no cgroup is writable here.
 * @example const cg = sandboxCgroup(record.sandbox_id); cg?.ensure(sandboxLimits(settings)); spawn('/bin/sh', ['-c', `${cg.enter} && exec …`])
 */
export function sandboxCgroup(id: string): SandboxCgroup | undefined {
  const root = probe().cgroup;
  if (!root) return undefined;
  const name = cgroupName(id);
  const dirs = root.version === 2 ? [join(root.base, CGROUP_PARENT, name)] : [root.memory, root.pids, ...(root.cpu ? [root.cpu] : [])].map((c) => join(c, CGROUP_PARENT, name));
  const cg: SandboxCgroup = {
    enter: dirs.map((d) => `echo $$ > ${quote(join(d, 'cgroup.procs'))}`).join(' && '),
    ensure(limits) {
      if (root.version === 2) {
        const parent = join(root.base, CGROUP_PARENT);
        mkdirSync(parent, { recursive: true });
        write(parent, 'cgroup.subtree_control', `+memory +pids${root.cpu ? ' +cpu' : ''}`);
        const dir = dirs[0] as string;
        mkdirSync(dir, { recursive: true });
        write(dir, 'memory.max', limits.memoryBytes ? String(limits.memoryBytes) : 'max');
        try {
          write(dir, 'memory.swap.max', limits.memoryBytes ? '0' : 'max');
        } catch {
          // No swap accounting: no swap to cap.
        }
        write(dir, 'pids.max', limits.pids ? String(limits.pids) : 'max');
        if (root.cpu) write(dir, 'cpu.max', limits.cpu ? `${Math.max(1000, Math.round(limits.cpu * CPU_PERIOD_US))} ${CPU_PERIOD_US}` : 'max');
        return;
      }
      for (const d of dirs) mkdirSync(d, { recursive: true });
      const [memory, pids, cpu] = dirs as [string, string, string | undefined];
      const bytes = limits.memoryBytes ? String(limits.memoryBytes) : '-1';
      // memsw (memory + swap) must stay ≥ memory: raised first when memory rises, lowered after when it falls.
      try {
        write(memory, 'memory.memsw.limit_in_bytes', bytes);
      } catch {
        // Lower than the current memory limit (set after it, below), or no swap accounting.
      }
      write(memory, 'memory.limit_in_bytes', bytes);
      try {
        write(memory, 'memory.memsw.limit_in_bytes', bytes);
      } catch {
        // No swap accounting here: no swap to cap.
      }
      write(pids, 'pids.max', limits.pids ? String(limits.pids) : 'max');
      if (cpu) {
        write(cpu, 'cpu.cfs_period_us', String(CPU_PERIOD_US));
        write(cpu, 'cpu.cfs_quota_us', limits.cpu ? String(Math.max(1000, Math.round(limits.cpu * CPU_PERIOD_US))) : '-1');
      }
    },
    exists: () => dirs.every((d) => existsSync(d)),
    procs: () => [...new Set(dirs.flatMap((d) => readPids(join(d, 'cgroup.procs'))))],
    signal(signal) {
      for (const pid of cg.procs()) {
        try {
          process.kill(pid, signal);
        } catch {
          // Gone meanwhile.
        }
      }
    },
    async empty(ms) {
      const deadline = Date.now() + ms;
      for (;;) {
        if (cg.procs().length === 0) return true;
        if (Date.now() >= deadline) return false;
        // A process may fork while we kill (up to pids.max of them): kill again until none is left.
        if (root.version === 2) {
          try {
            write(dirs[0] as string, 'cgroup.kill', '1');
          } catch {
            cg.signal('SIGKILL');
          }
        } else cg.signal('SIGKILL');
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    remove() {
      for (const d of dirs) {
        try {
          rmdirSync(d);
        } catch {
          // Missing already, or still holds a process being reaped.
        }
      }
    },
  };
  return cg;
}

/**
 * `s` as one shell word.
 * @example quote("it's") // 'it'\''s'
 */
export function quote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** How a sandboxed shell is started: `spawn('/bin/sh', args, { cwd: app })`. */
export interface FencedShell {
  args: string[];
  /** The project folder as the sandboxed command sees it (for PATH and HOME). */
  inside: string;
}

/**
 * The `/bin/sh` arguments that run `script` fenced in: the cgroup entered, then (root) a private `/tmp` — a new one,
 * or that of the live process `joinPid` (a command beside the dev server sees its `/tmp`) — then the sandbox's user.
 * The pid of the spawned shell stays the pid of the final `sh -c script` (every step execs in place).
 * @example const { args, inside } = fencedShell('node server.js', { app, cgroup, tmpBytes: 256 << 20 })
 */
export function fencedShell(script: string, how: { app: string; cgroup?: SandboxCgroup | undefined; tmpBytes?: number | undefined; joinPid?: number | undefined }): FencedShell {
  const { tools, owner, public: iso } = probe();
  // The environment is the sandbox's alone, but a spawn hook in svc (a test runner's, an APM agent's) may add a
  // NODE_OPTIONS that would load its code into the sandbox's node processes.
  const steps = ['unset NODE_OPTIONS'];
  if (how.cgroup) steps.push(how.cgroup.enter);
  const drop = owner && tools.setpriv ? `${quote(tools.setpriv)} ${dropArgs(owner).join(' ')} ` : '';
  let inside = how.app;
  if (iso.privateTmp && how.joinPid !== undefined && tools.nsenter) {
    inside = INSIDE_APP;
    // Entering a mount namespace resets the working folder to its root: the command's own shell goes back to the project.
    steps.push(`exec ${quote(tools.nsenter)} --target ${how.joinPid} --mount -- ${drop}${quote(tools.sh)} -c "cd ${INSIDE_APP} || exit 126\n$1"`);
  } else if (iso.privateTmp) {
    inside = INSIDE_APP;
    const mount = quote(tools.mount as string);
    const size = how.tmpBytes ? `size=${how.tmpBytes},` : '';
    const inner = [
      `${mount} -t tmpfs -o ${size}mode=1777 svc-sandbox /tmp`,
      `${quote(tools.mkdir as string)} ${INSIDE_APP}`,
      `${mount} --bind /proc/self/cwd ${INSIDE_APP}`,
      `cd ${INSIDE_APP}`,
      `exec ${drop}${quote(tools.sh)} -c "$1"`,
    ].join(' && ');
    steps.push(`exec ${quote(tools.unshare as string)} --mount --propagation private -- ${quote(tools.sh)} -c ${quote(inner)} svc-sandbox "$1"`);
  } else {
    steps.push(`exec ${drop}${quote(tools.sh)} -c "$1"`);
  }
  return { args: ['-c', steps.join(' && '), 'svc-sandbox', script], inside };
}

/**
 * What `/proc/<pid>/stat` says of a process; undefined: no such process.
 * @example processStat(pid) // { state: 'S', pgid: 4242 }
 */
export function processStat(pid: number): { state: string; pgid: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (in parentheses) may hold spaces and parentheses: fields are counted after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', pgid: Number(fields[2]) };
}

/**
 * `SVC_SANDBOX_ID` of a process's environment: a string ('' when it has none), or undefined when it cannot be read.
 * @example sandboxIdOf(record.pid) === record.sandbox_id // the pid is still the sandbox's
 */
export function sandboxIdOf(pid: number): string | undefined {
  let env: Buffer;
  try {
    env = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return undefined;
  }
  for (const entry of env.toString('utf8').split('\0')) if (entry.startsWith('SVC_SANDBOX_ID=')) return entry.slice('SVC_SANDBOX_ID='.length);
  return '';
}

/**
 * Processes that run for a sandbox (their environment names it), by pid: svc itself, and a sandbox svc runs in, excluded.
 * @example sandboxProcesses().get(pid) // 'sb-1'
 */
export function sandboxProcesses(): Map<number, string> {
  const out = new Map<number, string>();
  const own = process.env.SVC_SANDBOX_ID;
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const id = sandboxIdOf(pid);
    if (id && id !== own) out.set(pid, id);
  }
  return out;
}

/**
 * Signal process group `pgid`; false when it has no process left (signal 0: only ask).
 * @example while (signalGroup(pid, 0)) await delay(20);
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
