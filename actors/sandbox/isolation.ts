/**
 * How the local provider fences a sandbox's processes in, with what this
 * machine offers (probed once, said in {@link localIsolation}'s notes):
 * - a user of its own: uid = gid = {@link SANDBOX_UID_BASE} + the sandbox's
 *   port when svc is root (the port is unique among the host's active local
 *   sandboxes: the shared store hands it out), so one sandbox can neither
 *   signal another's processes nor reach its files through `/proc/<pid>/cwd`;
 *   no supplementary groups, no new privileges (`setpriv`). The sandbox's
 *   folder is root's (0700) and the sandboxes folder 0711: a sandbox reaches
 *   its own project only through its `/tmp/app`;
 * - a cgroup per sandbox (`svc-sandboxes/<id>`, v1 or v2): memory (swap
 *   included), processes and, where the cpu controller is writable, CPU; entered
 *   by the shell before it execs the sandboxed command, so nothing it starts is
 *   outside; named after the sandbox, so a later svc process finds it;
 * - a mount namespace whose `/tmp` is a tmpfs of `storage_limit`, the project
 *   bound at `/tmp/app` (the sandbox folder may itself be under the host's
 *   `/tmp`, which the tmpfs hides: the shell enters the project first and binds
 *   its own working folder, `/proc/self/cwd`); then svc's own folders (its
 *   data, its project) are covered by an empty read-only tmpfs of mode 0 and
 *   `/dev/shm` by a fresh tmpfs — mounts made by root in a namespace the
 *   sandbox does not own, so it cannot undo them (from a user namespace of its
 *   own they are locked);
 * - its own process group (its leader's pid is the sandbox's pid).
 *
 * Decisions: every command of the chain that runs as root is named by its
 * absolute path and only shell builtins run unnamed, because the sandbox's
 * environment puts the project's `node_modules/.bin` first on the PATH. Nothing
 * ties the dev server's life to svc's (no parent-death signal, no
 * `--kill-child`): a later svc process adopts it by its pid. Processes are
 * recognised as a sandbox's by `SVC_SANDBOX_ID` in their environment
 * (`/proc/<pid>/environ`), which guards against a reused pid.
 *
 * A command beside a live dev server joins its mount namespace (milliseconds
 * count there), but only the one its start made, recorded then (`mnt_ns`, its
 * inode): the dev server can move itself, pid unchanged, into a user and mount
 * namespace of its own where it may mount anything over anything — joined as
 * root, that is root for the sandbox. So svc opens the namespace, checks that
 * it is the recorded one and that the process is still in svc's user
 * namespace (nothing unprivileged can make, nor enter, a mount namespace owned
 * by it, and nothing leaves a user namespace for its parent), and hands the
 * open namespace to `nsenter` (no second look-up by pid); `nsenter` drops to
 * the sandbox's user itself, so nothing runs as root inside the joined
 * namespace. Any doubt: a fresh namespace, never a join.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxRecord, SandboxSettings } from './types.ts';

/**
 * A root svc runs sandbox `s` as uid = gid = `SANDBOX_UID_BASE + s.port` (200000…265535): a user of its own, since
 * no two active local sandboxes of a host share a port. Nothing else on the host should own ids in that range (a
 * `/etc/subuid` range that overlaps it would let that user's rootless containers reach sandbox files).
 */
export const SANDBOX_UID_BASE = 200_000;
/** The fd a command's chain is handed its dev server's (checked) mount namespace on. */
export const JOIN_FD = 3;
/** Where the project is seen inside a private `/tmp`. */
export const INSIDE_APP = '/tmp/app';
const CGROUP_ROOT = '/sys/fs/cgroup';
const CGROUP_PARENT = 'svc-sandboxes';
const CPU_PERIOD_US = 100_000;
/** Only these, by absolute path, for root's part of a chain. */
const SAFE_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
/** Never hidden, nor anything that holds one of them: the chain and the sandbox need them. */
const SYSTEM_DIRS = ['/tmp', '/proc', '/dev', '/sys', '/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc', '/run', '/var/run'];

/** What the local provider can do here. */
export interface LocalIsolation {
  /** Who the dev server and commands run as (`200000+port`: a uid and gid of its own per sandbox); undefined: svc's own user (svc is not root, or `setpriv` fails). */
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
  /** Root can drop to a sandbox's user here. */
  drop: boolean;
  cgroup: CgroupRoot | undefined;
  /** svc's own namespaces (a sandbox's are compared with them): device and inode. */
  ns: { dev: number; mnt: number; user: number } | undefined;
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
  const drop = Boolean(root && tools.setpriv && tools.chown && spawnSync(tools.setpriv, [...dropArgs({ uid: SANDBOX_UID_BASE, gid: SANDBOX_UID_BASE }), sh, '-c', ':'], { stdio: 'ignore' }).status === 0);
  if (drop) {
    notes.push(
      `the dev server and commands run as a user of their own per sandbox (uid and gid ${SANDBOX_UID_BASE} + its port): no supplementary groups, no new privileges; a sandbox cannot signal another's processes nor read its files; its folder is root's (0700)`,
    );
  } else {
    notes.push(root ? 'setpriv does not work here: the dev server and commands run as root' : "svc is not root: the dev server and commands run as svc's own user");
  }
  let privateTmp = false;
  if (root && tools.unshare && tools.mount && tools.mkdir) {
    privateTmp = spawnSync(tools.unshare, ['--mount', '--propagation', 'private', '--', sh, '-c', `${tools.mount} -t tmpfs -o size=1048576,mode=1777 svc-probe /tmp`], { stdio: 'ignore' }).status === 0;
  }
  notes.push(
    privateTmp
      ? "/tmp and /dev/shm are private tmpfs of storage_limit (the project is at /tmp/app); svc's data and project folders are hidden (an empty tmpfs over each); the project folder's own disk use is not capped"
      : "no private /tmp (needs root and unshare --mount): the dev server shares the host's /tmp and /dev/shm and sees svc's folders as any user does; disk use is not capped",
  );
  const cgroup = probeCgroup();
  notes.push(
    cgroup
      ? `memory (swap included), processes${cgroup.cpu ? ' and CPU' : ''} are capped by a cgroup v${cgroup.version} per sandbox${cgroup.cpu ? '' : ' (no writable cpu controller: CPU is not capped)'}`
      : 'no writable cgroup: memory, processes and CPU are not capped',
  );
  notes.push('no network isolation: the dev server listens on 127.0.0.1 (its preview port must be reachable) and reaches the network and host services as svc does');
  notes.push('no PID namespace: sandbox processes see the host\'s process list; the rest of the file system is readable as it is to any unprivileged user');
  let ns: Probe['ns'];
  try {
    const mnt = statSync('/proc/self/ns/mnt');
    ns = { dev: mnt.dev, mnt: mnt.ino, user: statSync('/proc/self/ns/user').ino };
  } catch {
    // No /proc namespaces: no command ever joins a dev server's.
  }
  probed = {
    public: { user: drop ? `${SANDBOX_UID_BASE}+port` : undefined, cgroup: cgroup !== undefined, cpu: Boolean(cgroup?.cpu), privateTmp, notes },
    tools,
    drop,
    cgroup,
    ns,
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
 * Who sandbox `record` runs as, and so owns its project's files (svc chowns what it writes there to it):
 * uid = gid = {@link SANDBOX_UID_BASE} + its port; undefined: svc's own user (not root, or no `setpriv`).
 * Throws a RangeError for a record without a port (before `prepare`).
 * @example const owner = sandboxOwner(record); if (owner) await chown(path, owner.uid, owner.gid); // 205180:205180 for port 5180
 */
export function sandboxOwner(record: Pick<SandboxRecord, 'port'>): { uid: number; gid: number } | undefined {
  if (!probe().drop) return undefined;
  const port = record.port;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`a local sandbox's user is made of its port: ${String(port)} is not one (prepare first)`);
  return { uid: SANDBOX_UID_BASE + port, gid: SANDBOX_UID_BASE + port };
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

/** How a sandboxed shell is started: `spawn('/bin/sh', args, { cwd: app })`, with the checked mount namespace on fd {@link JOIN_FD} when it joins one. */
export interface FencedShell {
  args: string[];
  /** The project folder as the sandboxed command sees it (for PATH and HOME). */
  inside: string;
}

/** What {@link fencedShell} fences a script in. */
export interface Fence {
  /** The project folder on the host (the shell's working folder). */
  app: string;
  /** Who it runs as ({@link sandboxOwner}); undefined: svc's own user. */
  owner: { uid: number; gid: number } | undefined;
  cgroup?: SandboxCgroup | undefined;
  /** The private /tmp's (and /dev/shm's) size. */
  tmpBytes?: number | undefined;
  /** Join the mount namespace handed on fd {@link JOIN_FD} ({@link openMountNamespace}) rather than make one. */
  join?: boolean;
  /** Host folders a new namespace covers ({@link hiddenPaths}: resolved and checked). */
  hide?: readonly string[];
}

/**
 * The `/bin/sh` arguments that run `script` fenced in: the cgroup entered, then (root) a private `/tmp` — a new one,
 * svc's folders and `/dev/shm` covered, or the dev server's, handed on fd {@link JOIN_FD} (a command beside the dev
 * server sees its `/tmp`) — then the sandbox's user. The pid of the spawned shell stays the pid of the final
 * `sh -c script` (every step execs in place).
 * @example const { args, inside } = fencedShell('node server.js', { app, owner: sandboxOwner(record), cgroup, tmpBytes: 256 << 20, hide: hiddenPaths([dataDir]) })
 */
export function fencedShell(script: string, how: Fence): FencedShell {
  const { tools, public: iso } = probe();
  const owner = how.owner;
  // The environment is the sandbox's alone, but a spawn hook in svc (a test runner's, an APM agent's) may add a
  // NODE_OPTIONS that would load its code into the sandbox's node processes.
  const steps = ['unset NODE_OPTIONS'];
  if (how.cgroup) steps.push(how.cgroup.enter);
  const drop = owner && tools.setpriv ? `${quote(tools.setpriv)} ${dropArgs(owner).join(' ')} ` : '';
  let inside = how.app;
  if (how.join) {
    if (!iso.privateTmp || !owner || !tools.setpriv || !tools.nsenter) throw new Error('a command joins a mount namespace only as root, with setpriv and nsenter, dropping to the sandbox user');
    inside = INSIDE_APP;
    // Root acts only in svc's namespace: groups cleared and no new privileges, then nsenter joins and drops to the
    // sandbox's user itself, so what it execs in the joined namespace runs unprivileged. Entering a mount namespace
    // resets the working folder to its root: the command's shell closes the namespace's fd and goes back to the project.
    steps.push(
      `exec ${quote(tools.setpriv)} --clear-groups --no-new-privs -- ${quote(tools.nsenter)} --mount=/proc/self/fd/${JOIN_FD} --setgid ${owner.gid} --setuid ${owner.uid} -- ${quote(tools.sh)} -c "exec ${JOIN_FD}<&-; cd ${INSIDE_APP} || exit 126\n$1"`,
    );
  } else if (iso.privateTmp) {
    inside = INSIDE_APP;
    const mount = quote(tools.mount as string);
    const size = how.tmpBytes ? `size=${how.tmpBytes},` : '';
    const inner = [
      `${mount} -t tmpfs -o ${size}mode=1777 svc-sandbox /tmp`,
      `${quote(tools.mkdir as string)} ${INSIDE_APP}`,
      `${mount} --bind /proc/self/cwd ${INSIDE_APP}`,
      // After the bind: the project stays at /tmp/app when its host folder is under one of these.
      ...(how.hide ?? []).map((p) => `${mount} -t tmpfs -o ro,nosuid,nodev,noexec,mode=000,size=4k svc-hidden ${quote(p)}`),
      ...(hasShm() ? [`${mount} -t tmpfs -o nosuid,nodev,${size}mode=1777 svc-shm /dev/shm`] : []),
      `cd ${INSIDE_APP}`,
      `exec ${drop}${quote(tools.sh)} -c "$1"`,
    ].join(' && ');
    steps.push(`exec ${quote(tools.unshare as string)} --mount --propagation private -- ${quote(tools.sh)} -c ${quote(inner)} svc-sandbox "$1"`);
  } else {
    steps.push(`exec ${drop}${quote(tools.sh)} -c "$1"`);
  }
  return { args: ['-c', steps.join(' && '), 'svc-sandbox', script], inside };
}

let shm: boolean | undefined;

function hasShm(): boolean {
  if (shm === undefined) {
    try {
      shm = statSync('/dev/shm').isDirectory();
    } catch {
      shm = false;
    }
  }
  return shm;
}

/** `path` is `dir` or inside it. */
function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === '/' ? '/' : `${dir}/`);
}

/**
 * Of `paths`, the host folders a sandbox's namespace can cover, resolved: existing folders only; none that is or
 * holds a folder the chain or the sandbox needs (`/`, `/usr`, `/etc`, `/tmp`, the commands' folders…); none in
 * `/proc` or `/sys`, nor in the host's `/tmp` (the private `/tmp` hides it already); none inside another of them
 * (covered with it, and its mount point gone).
 * @example hiddenPaths(['/srv/app/.svc/data', '/srv/app', '/']) // ['/srv/app']
 */
export function hiddenPaths(paths: readonly string[]): string[] {
  const needed = [...SYSTEM_DIRS, ...SAFE_DIRS];
  let tmp = '/tmp';
  try {
    tmp = realpathSync('/tmp');
  } catch {
    // No /tmp: nothing is in it.
  }
  const real: string[] = [];
  for (const path of paths) {
    let r: string;
    try {
      r = realpathSync(path);
      if (!statSync(r).isDirectory()) continue;
    } catch {
      continue;
    }
    if (needed.some((d) => within(d, r)) || [tmp, '/proc', '/sys'].some((d) => within(r, d))) continue;
    if (!real.includes(r)) real.push(r);
  }
  return real.filter((r) => !real.some((o) => o !== r && within(r, o)));
}

/**
 * The mount namespace process `pid` is in (its inode) when root made it: not svc's own, and the process still in
 * svc's user namespace (nothing unprivileged makes or enters a mount namespace that user namespace owns). `'own'`:
 * svc's (the chain has not made its own yet); undefined: gone, or in a user namespace of its own (it moved itself).
 * @example const ns = mountNamespaceOf(pid); if (typeof ns === 'number') started.mnt_ns = ns;
 */
export function mountNamespaceOf(pid: number): number | 'own' | undefined {
  const own = probe().ns;
  if (!own) return undefined;
  try {
    // The mount namespace first: a process can move into a user namespace of its own but never back, so the user
    // namespace still svc's when read after means the mount namespace read before was not one the process made.
    const mnt = statSync(`/proc/${pid}/ns/mnt`);
    const user = statSync(`/proc/${pid}/ns/user`);
    if (user.dev !== own.dev || user.ino !== own.user || mnt.dev !== own.dev) return undefined;
    return mnt.ino === own.mnt ? 'own' : mnt.ino;
  } catch {
    return undefined;
  }
}

/**
 * Open the mount namespace of process `pid` for a command to join, when it is the one `recorded` at the dev server's
 * start and the process is still in svc's user namespace: an fd to hand the chain as {@link JOIN_FD} (the caller
 * closes it once spawned). Undefined: join nothing, make a fresh namespace (none recorded, the process moved or is
 * gone, or no join is possible here: not root, no setpriv or nsenter).
 * @example const fd = openMountNamespace(record.pid, record.mnt_ns); spawn('/bin/sh', fencedShell(cmd, { …, join: fd !== undefined }).args, { stdio: ['ignore', 'pipe', 'pipe', fd ?? 'ignore'] })
 */
export function openMountNamespace(pid: number, recorded: number | undefined): number | undefined {
  const { ns: own, drop, tools, public: iso } = probe();
  if (!own || !drop || !iso.privateTmp || !tools.nsenter || !tools.setpriv || recorded === undefined || recorded === own.mnt) return undefined;
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/ns/mnt`, constants.O_RDONLY);
  } catch {
    return undefined;
  }
  try {
    // What the fd holds is what is joined (no second look-up by pid); the user namespace is read after it (see mountNamespaceOf).
    const mnt = fstatSync(fd);
    const user = statSync(`/proc/${pid}/ns/user`);
    if (mnt.dev === own.dev && mnt.ino === recorded && user.dev === own.dev && user.ino === own.user) return fd;
  } catch {
    // Gone meanwhile.
  }
  closeSync(fd);
  return undefined;
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
  // Empty while the process is between two programs (execve): not known, rather than "not a sandbox's".
  if (env.length === 0) return undefined;
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
