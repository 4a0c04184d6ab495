/**
 * The container provider: a sandbox's dev server runs in a container of
 * `base_image` (Node and a POSIX shell) through a docker-compatible CLI
 * (docker, podman, or a wrapper script), the project folder bound at `/app`.
 *
 * Decisions:
 * - network isolation is a bridge network per sandbox (`svc-sbx-<id>`) plus
 *   firewall rules of ours, in the `mangle` table (a DROP there is final,
 *   whatever ACCEPT the engine or anyone puts first in `filter`): nothing new
 *   enters the host from the bridge (the host's services, the internet, the
 *   other bridges: IPv4 and IPv6, whose link-local addresses reach the host
 *   too) and nothing is forwarded into it. Replies to connections the host
 *   opened pass, so the host reaches the container's address. The network is
 *   not `--internal`: with podman's CNI backend an internal bridge has no host
 *   address, so the host cannot reach the container at all, and with netavark
 *   it still reaches the host through the gateway — the rules are what
 *   isolates, on every backend. They carry the comment `svc-sandbox <id>`;
 *   `release` and the orphan sweep find them by it, `alive` puts them back if
 *   something flushed them;
 * - the preview of an isolated sandbox is a TCP relay in this process on
 *   127.0.0.1 to the container's address (a port published from such a network
 *   would need `route_localnet` on the bridge, which opens the host's loopback
 *   to it). The relay dies with svc: `adopt` (and `start`, `ready`, `alive`)
 *   rebuild it on the recorded port. Without isolation the port is published
 *   on 127.0.0.1 from the engine's default network;
 * - the dev server's output lands in `logPath(record)` on the host (that file
 *   alone is bound into the container), so logs are read from a file at byte
 *   offsets, and survive the container; `<cli> logs` holds nothing;
 * - the container's first process is a shell that runs the dev script
 *   (`sh -c script`, as npm runs it), passes SIGTERM on and waits, so `stop`
 *   is quick and processes orphaned inside are reaped;
 * - a command (`exec`) carries a token in its environment: on a timeout or an
 *   abort every process inside with that token is killed (killing the CLI
 *   client leaves them running).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, open } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { delimiter, join } from 'node:path';
import { answers, type CliResult, CLI_TIMEOUT_MS, closeRelay, executable, firewalls, freeLoopbackPort, iptables, openRelay, type Relay, relays, rulesOf, runCli, shown } from './container-host.ts';
import { sandboxError } from './errors.ts';
import { appDir, devScript, logPath, READY_TEXT, sandboxEnv } from './project.ts';
import { bytesOf, coresOf } from './settings.ts';
import type { ExecOptions, Runner, SandboxRecord, SandboxSettings, Started } from './types.ts';

/** The port a dev server listens on inside its container when the record names none. */
export const CONTAINER_PORT = 8000;
/** The most bytes one `logs` call answers. */
const LOG_CHUNK_BYTES = 1024 * 1024;
const DEFAULT_EXEC_TIMEOUT_MS = 30_000;
const PROBE_TIMEOUT_MS = 5_000;
/** The user a sandbox runs as with `security_context` (as in the official Node images). */
const SANDBOX_UID = 1000;
const LOG_IN_CONTAINER = '/var/log/svc-dev.log';
const EXEC_TOKEN = 'SVC_SANDBOX_EXEC';
const READY_BYTES = Buffer.from(READY_TEXT);

/**
 * The container's first process: the dev script's output to the log; the script run as npm runs it; SIGTERM passed
 * on (a first process gets no signal it does not handle, so `stop` would wait out its timeout); and the shell waits,
 * which reaps the processes orphaned inside (a killed command's children).
 */
const FIRST_PROCESS = `exec >>${LOG_IN_CONTAINER} 2>&1
sh -c "$1" & pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT
wait $pid; status=$?
while kill -0 $pid 2>/dev/null; do wait $pid; status=$?; done
exit $status`;

/** Kills every process whose environment holds `SVC_SANDBOX_EXEC=<argv[1]>`, until none is left (a fork in flight). */
const KILLER = `const fs=require('fs');const mark='${EXEC_TOKEN}='+process.argv[1];
for(let round=0;round<20;round++){let n=0;for(const p of fs.readdirSync('/proc')){if(!/^\\d+$/.test(p)||+p===process.pid)continue;
try{if(fs.readFileSync('/proc/'+p+'/environ','latin1').split('\\0').includes(mark)){process.kill(+p,'SIGKILL');n++}}catch{}}if(!n)break}`;

/** What a CLI call ended with. */
/** Where `ready` has read a dev server's log up to. */
interface LogScan {
  from: number;
  found: boolean;
}

/** A bridge network as `network inspect` tells it (podman's or docker's JSON). */
interface NetworkFacts {
  iface: string;
}

/**
 * The container CLI to use: `configured` (`[scale.sandbox] container_cli`, a command or a wrapper script's path) when
 * set, else the first of `docker`, `podman` on the PATH — each only if its engine answers `info` within 5 s (a docker
 * client with no engine behind it is skipped). Undefined: none answers.
 *
 * @example
 * const cli = await findContainerCli(settings.container_cli); // ['/usr/bin/podman']
 * if (!cli) throw sandboxError('SANDBOX_UNAVAILABLE', 'no container engine answers here');
 */
export async function findContainerCli(configured: string): Promise<string[] | undefined> {
  const answering = async (cli: string[]): Promise<boolean> => (await runCli(cli, ['info'], PROBE_TIMEOUT_MS).catch(() => undefined))?.code === 0;
  const wanted = configured.trim();
  if (wanted) {
    // A path may hold spaces; anything else is a command line.
    const cli = (await executable(wanted)) ? [wanted] : wanted.split(/\s+/);
    return (await answering(cli)) ? cli : undefined;
  }
  for (const name of ['docker', 'podman']) {
    const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
    for (const dir of dirs) {
      const path = join(dir, name);
      if (!(await executable(path))) continue;
      if (await answering([path])) return [path];
      break;
    }
  }
  return undefined;
}

/** Whether a CLI's error says the container (or network) does not exist. */
function missing(r: CliResult): boolean {
  return r.code !== 0 && /no such (container|object|network)|not found|does not exist|unknown network|no container with/i.test(r.stderr);
}

/** A Kubernetes quantity of bytes as docker takes it (`512Mi` → `512m`). */
export function dockerBytes(quantity: string): string {
  const bytes = bytesOf(quantity);
  if (!(bytes > 0)) throw sandboxError('SANDBOX_FAILED', `not a quantity of bytes: ${JSON.stringify(quantity)} (like 512Mi or 2Gi)`);
  for (const [unit, size] of [['g', 1024 ** 3], ['m', 1024 ** 2], ['k', 1024]] as const) if (bytes % size === 0) return `${bytes / size}${unit}`;
  return String(bytes);
}

/** A Kubernetes CPU quantity as docker's `--cpus` takes it (`500m` → `0.5`). */
export function dockerCpus(quantity: string): string {
  const cores = coresOf(quantity);
  if (!(cores > 0)) throw sandboxError('SANDBOX_FAILED', `not a CPU quantity: ${JSON.stringify(quantity)} (like 500m or 2)`);
  return String(Math.round(cores * 1000) / 1000);
}

/** The length of `bytes` up to its last whole UTF-8 character (a character split by the end of a read waits for the next). */
export function wholeUtf8(bytes: Buffer): number {
  let lead = bytes.length - 1;
  while (lead >= 0 && bytes.length - lead <= 4 && ((bytes[lead] as number) & 0xc0) === 0x80) lead--;
  if (lead < 0 || bytes.length - lead > 4) return bytes.length;
  const b = bytes[lead] as number;
  const need = b >= 0xf8 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return bytes.length - lead < need ? lead : bytes.length;
}

/** The sandbox's container and network name. */
function nameOf(id: string): string {
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$/.test(id)) throw sandboxError('SANDBOX_INVALID', `a sandbox id for a container name is letters, digits, '_', '.', '-': ${JSON.stringify(id)}`);
  return `svc-sbx-${id}`;
}

/** What the container runner is given besides its settings. */
export interface ContainerRunnerOptions {
  /** The docker-compatible command (default: {@link findContainerCli} of `settings.container_cli`). */
  cli?: string[];
}

/**
 * @example
 * const runner = new ContainerRunner(settings, { cli: ['/usr/bin/podman'] });
 * const prepared = await runner.prepare(record); // { port: 8000, network: 'svc-sbx-…', relay_port: 41234, url: 'http://127.0.0.1:41234' }
 * const started = await runner.start({ ...record, ...prepared }); // { container: 'svc-sbx-…', address: '10.89.0.2', … }
 */
export class ContainerRunner implements Runner {
  readonly type = 'container' as const;
  readonly #owner: { uid: number; gid: number } | undefined;
  readonly #settings: SandboxSettings;
  #cli: Promise<string[]> | undefined;
  #flavor: Promise<'podman' | 'docker'> | undefined;
  readonly #imagePath = new Map<string, Promise<string>>();
  readonly #scans = new Map<string, LogScan>();

  constructor(settings: SandboxSettings, options: ContainerRunnerOptions = {}) {
    this.#settings = settings;
    this.#owner = settings.security_context ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : undefined;
    if (options.cli) this.#cli = Promise.resolve(options.cli);
  }

  /** The CLI, found once. */
  cli(): Promise<string[]> {
    this.#cli ??= findContainerCli(this.#settings.container_cli).then((cli) => {
      if (!cli) throw sandboxError('SANDBOX_UNAVAILABLE', 'no container engine answers here: neither docker nor podman `info` succeeds ([scale.sandbox] container_cli names another command)');
      return cli;
    });
    this.#cli.catch(() => (this.#cli = undefined));
    return this.#cli;
  }

  /** `cli args`, its exit code checked: its stdout, or SANDBOX_FAILED with its stderr. */
  async #must(args: readonly string[], timeoutMs = CLI_TIMEOUT_MS): Promise<string> {
    const cli = await this.cli();
    const r = await runCli(cli, args, timeoutMs);
    if (r.code !== 0) throw sandboxError('SANDBOX_FAILED', `${shown(cli, args)} failed (exit code ${r.code}): ${(r.stderr.trim() || r.stdout.trim()).slice(0, 2000)}`);
    return r.stdout;
  }

  async #run(args: readonly string[], timeoutMs = CLI_TIMEOUT_MS): Promise<CliResult> {
    return runCli(await this.cli(), args, timeoutMs);
  }

  #flavorOf(): Promise<'podman' | 'docker'> {
    this.#flavor ??= this.#run(['--version']).then((r) => (/podman/i.test(r.stdout) ? 'podman' : 'docker'));
    return this.#flavor;
  }

  /** With `security_context` the project's files belong to the container's user (the same for every sandbox: each has a container of its own). */
  ownerOf(): { uid: number; gid: number } | undefined {
    return this.#owner;
  }

  /** A port for the dev server inside the container, the network (isolated), the preview's loopback port and URL. */
  async prepare(record: SandboxRecord): Promise<Started> {
    const name = nameOf(record.sandbox_id);
    const port = record.port || CONTAINER_PORT;
    if (!this.#settings.network_isolation) {
      const host = await freeLoopbackPort();
      return { port, url: `http://127.0.0.1:${host}` };
    }
    await this.#fence(record.sandbox_id, true);
    // The relay listens once the container runs (in the supervisor's process, which may be another): its port now.
    const relay = record.relay_port || (await freeLoopbackPort());
    return { port, network: name, relay_port: relay, url: `http://127.0.0.1:${relay}` };
  }

  async start(record: SandboxRecord): Promise<Started> {
    const name = nameOf(record.sandbox_id);
    const port = record.port || CONTAINER_PORT;
    const settings = this.#settings;
    const script = await devScript(appDir(record));
    await this.#run(['rm', '-f', name]);
    // The log file exists before it is bound (a missing source would become a folder), and the container's user writes it.
    const log = await open(logPath(record), 'a');
    const size = (await log.stat()).size;
    await log.close();
    this.#scans.set(record.sandbox_id, { from: size, found: false });
    if (this.#owner) {
      await chown(appDir(record), this.#owner.uid, this.#owner.gid);
      await chown(logPath(record), this.#owner.uid, this.#owner.gid);
    }
    const env = { ...sandboxEnv({ ...record, port }, '/app', '0.0.0.0'), PATH: `/app/node_modules/.bin:${await this.#imagePathOf(settings.base_image)}` };
    const args = ['run', '-d', '--name', name, '--stop-timeout', '2', '-w', '/app', '-v', `${appDir(record)}:/app`, '-v', `${logPath(record)}:${LOG_IN_CONTAINER}`];
    args.push('--label', 'svc-sandbox=true', '--label', `svc-sandbox-id=${record.sandbox_id}`, '--label', `svc-sandbox-user=${record.user}`, '--label', `svc-sandbox-project=${record.project}`);
    for (const [key, value] of Object.entries(env)) args.push('-e', `${key}=${value}`);
    // Memory and swap alike: the limit is what the sandbox holds, not what it can page out.
    const memory = dockerBytes(settings.memory_limit);
    args.push('--memory', memory, '--memory-swap', memory, '--cpus', dockerCpus(settings.cpu_limit), '--pids-limit', String(settings.pids_limit));
    args.push('--tmpfs', `/tmp:rw,size=${dockerBytes(settings.storage_limit)},mode=1777`);
    if (settings.security_context) args.push('--user', `${SANDBOX_UID}:${SANDBOX_UID}`, '--security-opt', 'no-new-privileges', '--cap-drop', 'ALL');
    let url = record.url;
    let relayPort = record.relay_port;
    if (settings.network_isolation) {
      await this.#fence(record.sandbox_id, true);
      args.push('--network', name);
    } else {
      const host = Number(url ? new URL(url).port : 0) || (await freeLoopbackPort());
      url = `http://127.0.0.1:${host}`;
      args.push('-p', `127.0.0.1:${host}:${port}`);
    }
    args.push(settings.base_image, 'sh', '-c', FIRST_PROCESS, 'sh', script);
    await this.#must(args, 120_000);
    const started: Started = { container: name, port, url };
    if (settings.network_isolation) {
      const address = await this.#addressOf(name, name);
      const relay = await this.#relay({ ...record, port, address, relay_port: relayPort });
      relayPort = relay.port;
      Object.assign(started, { network: name, address, relay_port: relayPort, url: `http://127.0.0.1:${relayPort}` });
    }
    return started;
  }

  async ready(record: SandboxRecord): Promise<boolean> {
    if (!(await this.#saidReady(record))) return false;
    let url = record.url;
    if (this.#settings.network_isolation) {
      if (!record.address) return false;
      url = `http://127.0.0.1:${(await this.#relay(record)).port}`;
    }
    return answers(url);
  }

  /** Whether the log holds the ready text since the last `start` of this process (since its beginning after an adoption). */
  async #saidReady(record: SandboxRecord): Promise<boolean> {
    let scan = this.#scans.get(record.sandbox_id);
    if (!scan) this.#scans.set(record.sandbox_id, (scan = { from: 0, found: false }));
    if (scan.found) return true;
    let file;
    try {
      file = await open(logPath(record), 'r');
    } catch {
      return false;
    }
    try {
      const size = (await file.stat()).size;
      let at = scan.from;
      while (at < size) {
        const { bytesRead, buffer } = await file.read({ buffer: Buffer.alloc(Math.min(LOG_CHUNK_BYTES, size - at)), position: at });
        if (bytesRead === 0) break;
        if (buffer.subarray(0, bytesRead).includes(READY_BYTES)) return (scan.found = true);
        // The next read starts where a ready text cut at this one's end would begin.
        const next = at + bytesRead - (READY_BYTES.length - 1);
        scan.from = Math.max(scan.from, next);
        if (at + bytesRead >= size || next <= at) break;
        at = next;
      }
      return scan.found;
    } finally {
      await file.close();
    }
  }

  async alive(record: SandboxRecord): Promise<boolean> {
    const r = await this.#run(['container', 'inspect', '-f', '{{.State.Running}}', nameOf(record.sandbox_id)]);
    if (missing(r)) return false;
    if (r.code !== 0) throw sandboxError('SANDBOX_UNAVAILABLE', `cannot tell whether ${nameOf(record.sandbox_id)} runs: ${r.stderr.trim()}`);
    const running = r.stdout.trim() === 'true';
    if (running) await this.ensureRelay(record);
    return running;
  }

  /** A supervisor takes the sandbox over: {@link ensureRelay}. */
  async adopt(record: SandboxRecord): Promise<Started> {
    return this.ensureRelay(record);
  }

  /**
   * Rebuild what lives outside the container and can be lost: the relay (it lived in the process that started the
   * sandbox) and the firewall rules (a firewall reload flushes them). Idempotent, and cheap when all is there (no
   * engine call). Resolves with the relay's port and URL, which differ from the record's when its port was taken
   * meanwhile: record them then.
   *
   * @example
   * const { relay_port, url } = await runner.ensureRelay(record);
   * if (relay_port !== record.relay_port) await records.update(record.sandbox_id, { relay_port, url }, ['running']);
   */
  async ensureRelay(record: SandboxRecord): Promise<Started> {
    if (!this.#settings.network_isolation || !record.address) return {};
    await this.#fence(record.sandbox_id, false);
    const relay = await this.#relay(record);
    return { relay_port: relay.port, url: `http://127.0.0.1:${relay.port}` };
  }

  /** This process's relay for the sandbox, listening on its recorded port when free, aimed at its recorded address. */
  async #relay(record: Pick<SandboxRecord, 'sandbox_id' | 'address' | 'port' | 'relay_port'>): Promise<Relay> {
    const target = record.address ? { host: record.address, port: record.port || CONTAINER_PORT } : undefined;
    let made = relays.get(record.sandbox_id);
    if (!made) {
      made = openRelay(record.relay_port ?? 0);
      relays.set(record.sandbox_id, made);
      made.catch(() => relays.delete(record.sandbox_id));
    }
    const relay = await made;
    if (target) relay.target = target;
    return relay;
  }

  async exitOf(record: SandboxRecord): Promise<{ code?: number; signal?: string; removed?: boolean } | undefined> {
    const r = await this.#run(['container', 'inspect', '-f', '{{.State.Running}} {{.State.ExitCode}} {{.State.OOMKilled}}', nameOf(record.sandbox_id)]);
    if (missing(r)) return { removed: true };
    const [running, code, oom] = r.stdout.trim().split(' ');
    if (r.code !== 0 || running === 'true') return undefined;
    const n = Number(code);
    if (oom === 'true') return { signal: 'SIGKILL' };
    const signal = n > 128 ? Object.entries(osConstants.signals).find(([, v]) => v === n - 128)?.[0] : undefined;
    return signal ? { signal } : { code: n };
  }

  async stop(record: SandboxRecord): Promise<void> {
    const name = nameOf(record.sandbox_id);
    const stopped = await this.#run(['stop', '-t', '2', name], 60_000);
    if (stopped.code !== 0 && !missing(stopped)) throw sandboxError('SANDBOX_FAILED', `${name} did not stop: ${stopped.stderr.trim()}`);
    const removed = await this.#run(['rm', '-f', name], 60_000);
    if (removed.code !== 0 && !missing(removed)) throw sandboxError('SANDBOX_FAILED', `${name} was not removed: ${removed.stderr.trim()}`);
  }

  async release(record: SandboxRecord): Promise<void> {
    await closeRelay(record.sandbox_id);
    this.#scans.delete(record.sandbox_id);
    await this.#removeNetwork(record.sandbox_id);
  }

  async exec(record: SandboxRecord, command: string, options: ExecOptions): Promise<number> {
    const name = nameOf(record.sandbox_id);
    const cli = await this.cli();
    const token = randomBytes(12).toString('hex');
    const user = this.#settings.security_context ? ['--user', `${SANDBOX_UID}:${SANDBOX_UID}`] : [];
    if (options.signal?.aborted) throw options.signal.reason;
    const [bin, ...rest] = [...cli, 'exec', '-e', `${EXEC_TOKEN}=${token}`, '-w', '/app', ...user, name, 'sh', '-c', command] as unknown as [string, ...string[]];
    const child = spawn(bin, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
    const stderr: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => options.onStdout?.(d));
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 16) stderr.push(d);
      options.onStderr?.(d);
    });
    const ended = new Promise<number>((resolve, reject) => {
      child.on('error', (error) => reject(sandboxError('SANDBOX_UNAVAILABLE', `${bin} cannot run: ${error.message}`, { cause: error })));
      child.on('close', (code, signal) => resolve(code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0)));
    });
    let stopped: 'timeout' | 'abort' | undefined;
    let wake: () => void = () => undefined;
    const interrupted = new Promise<void>((resolve) => (wake = resolve));
    const timeoutMs = options.timeoutMs > 0 ? options.timeoutMs : DEFAULT_EXEC_TIMEOUT_MS;
    const timer = setTimeout(() => ((stopped ??= 'timeout'), wake()), timeoutMs);
    const onAbort = (): void => ((stopped ??= 'abort'), wake());
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const code = await Promise.race([ended, interrupted.then(() => undefined)]);
      if (code !== undefined) {
        // 125 or 255: the engine's own failure (a container that is not running), not the command's.
        const said = Buffer.concat(stderr).toString('utf8');
        const engineSaid = code === 125 || code === 255 || /not running|no such container|state improper/i.test(said);
        if (engineSaid && !(await this.alive(record).catch(() => true))) throw sandboxError('SANDBOX_NOT_RUNNING', `${name} is not running: ${said.trim()}`);
        return code;
      }
      await runCli(cli, ['exec', ...user, name, 'node', '-e', KILLER, token], 20_000).catch(() => undefined);
      const gone = await Promise.race([ended.then(() => true, () => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 5_000).unref())]);
      if (!gone) child.kill('SIGKILL');
      if (stopped === 'abort') throw options.signal?.reason ?? new Error('aborted');
      throw sandboxError('SANDBOX_TIMEOUT', `the command did not finish within ${timeoutMs} ms and was killed`);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  async logs(record: SandboxRecord, offset = 0): Promise<{ content: string; offset: number }> {
    const from = Math.max(0, Math.floor(offset));
    let file;
    try {
      file = await open(logPath(record), 'r');
    } catch {
      return { content: '', offset: from };
    }
    try {
      const size = (await file.stat()).size;
      if (from >= size) return { content: '', offset: from };
      const { bytesRead, buffer } = await file.read({ buffer: Buffer.alloc(Math.min(LOG_CHUNK_BYTES, size - from)), position: from });
      const bytes = buffer.subarray(0, bytesRead);
      const whole = wholeUtf8(bytes);
      return { content: bytes.subarray(0, whole).toString('utf8'), offset: from + whole };
    } finally {
      await file.close();
    }
  }

  /** Ids of sandboxes with a container, a network or firewall rules here that `known` does not name. */
  async orphans(known: ReadonlySet<string>): Promise<string[]> {
    const ids = new Set<string>();
    const containers = await this.#must(['ps', '-a', '--filter', 'label=svc-sandbox=true', '--format', '{{.Names}}']);
    const networks = await this.#must(['network', 'ls', '--filter', 'label=svc-sandbox=true', '--format', '{{.Name}}']);
    for (const line of `${containers}\n${networks}`.split('\n')) {
      const m = /^svc-sbx-(\S+)$/.exec(line.trim());
      if (m) ids.add(m[1] as string);
    }
    for (const family of await firewalls(false)) {
      for (const rule of await rulesOf(family)) ids.add(rule.id);
    }
    return [...ids].filter((id) => !known.has(id));
  }

  async removeOrphan(id: string): Promise<void> {
    const name = nameOf(id);
    const removed = await this.#run(['rm', '-f', name], 60_000);
    if (removed.code !== 0 && !missing(removed)) throw sandboxError('SANDBOX_FAILED', `${name} was not removed: ${removed.stderr.trim()}`);
    await closeRelay(id);
    this.#scans.delete(id);
    await this.#removeNetwork(id);
  }

  /** Close this process's relays (the containers run on; a later process rebuilds them). */
  async close(): Promise<void> {
    await Promise.all([...relays.keys()].map((id) => closeRelay(id)));
  }

  /**
   * The sandbox's firewall rules, put back if missing; with `network`, its network too, made if missing. Without it,
   * all rules there costs two `iptables -S` and no engine call (`alive` runs it at every check).
   */
  async #fence(id: string, network: boolean): Promise<void> {
    const name = nameOf(id);
    const families = await firewalls(true);
    let facts = network ? await this.#networkFacts(name) : undefined;
    if (network && !facts) {
      const args = ['network', 'create', '--label', 'svc-sandbox=true', '--label', `svc-sandbox-id=${id}`];
      // No DNS server on the bridge: it would be one more service of the host the sandbox talks to.
      if ((await this.#flavorOf()) === 'podman') args.push('--disable-dns');
      const made = await this.#run([...args, name]);
      if (made.code !== 0 && !/exists/i.test(made.stderr)) throw sandboxError('SANDBOX_FAILED', `the network ${name} was not created: ${made.stderr.trim()}`);
      facts = await this.#networkFacts(name);
      if (!facts) throw sandboxError('SANDBOX_FAILED', `the network ${name} was created but cannot be inspected`);
    }
    for (const family of families) {
      const rules = (await rulesOf(family)).filter((r) => r.id === id);
      const iface = facts?.iface;
      if (rules.length === 2 && (!iface || rules.every((r) => r.line.includes(` ${iface} `)))) continue;
      facts ??= await this.#networkFacts(name);
      if (!facts) throw sandboxError('SANDBOX_FAILED', `the network ${name} is gone: the sandbox cannot be fenced`);
      for (const rule of rules) await iptables(family, ['-t', 'mangle', ...rule.argv]);
      const tag = ['-m', 'comment', '--comment', `svc-sandbox ${id}`, '-j', 'DROP'];
      await iptables(family, ['-t', 'mangle', '-I', 'FORWARD', '-o', facts.iface, ...tag]);
      await iptables(family, ['-t', 'mangle', '-I', 'PREROUTING', '-i', facts.iface, '-m', 'conntrack', '!', '--ctstate', 'ESTABLISHED,RELATED', ...tag]);
    }
  }

  async #removeNetwork(id: string): Promise<void> {
    const name = nameOf(id);
    const removed = await this.#run(['network', 'rm', name]);
    if (removed.code !== 0 && !missing(removed)) throw sandboxError('SANDBOX_FAILED', `the network ${name} was not removed: ${removed.stderr.trim()}`);
    // Rules go last: while the network stands, it stays fenced.
    for (const family of await firewalls(false)) {
      for (const rule of (await rulesOf(family)).filter((r) => r.id === id)) await iptables(family, ['-t', 'mangle', ...rule.argv]);
    }
  }

  async #networkFacts(name: string): Promise<NetworkFacts | undefined> {
    const r = await this.#run(['network', 'inspect', name]);
    if (r.code !== 0) {
      if (missing(r) || /not found|no such/i.test(r.stderr)) return undefined;
      throw sandboxError('SANDBOX_FAILED', `network inspect ${name}: ${r.stderr.trim()}`);
    }
    const [net] = JSON.parse(r.stdout) as Array<{ network_interface?: string; Id?: string; Options?: Record<string, string> }>;
    const iface = net?.network_interface ?? net?.Options?.['com.docker.network.bridge.name'] ?? (net?.Id ? `br-${net.Id.slice(0, 12)}` : undefined);
    if (!iface || !/^[\w.-]{1,15}$/.test(iface)) throw sandboxError('SANDBOX_FAILED', `the network ${name} has no bridge interface this runner knows`);
    return { iface };
  }

  async #addressOf(container: string, network: string): Promise<string> {
    const out = await this.#must(['container', 'inspect', '-f', '{{json .NetworkSettings.Networks}}', container]);
    const address = (JSON.parse(out) as Record<string, { IPAddress?: string }>)[network]?.IPAddress;
    if (!address) throw sandboxError('SANDBOX_FAILED', `${container} has no address on ${network}`);
    return address;
  }

  /** The image's own PATH (the dev server finds what the image installed), asked once per image; an image not here yet (`run` pulls it) gets the usual one. */
  #imagePathOf(image: string): Promise<string> {
    let known = this.#imagePath.get(image);
    if (!known) {
      known = this.#run(['image', 'inspect', '-f', '{{json .Config.Env}}', image]).then((r) => {
        const env = r.code === 0 ? ((JSON.parse(r.stdout) as string[] | null) ?? []) : [];
        if (r.code !== 0) this.#imagePath.delete(image);
        return env.find((e) => e.startsWith('PATH='))?.slice(5) || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
      });
      known.catch(() => this.#imagePath.delete(image));
      this.#imagePath.set(image, known);
    }
    return known;
  }
}

