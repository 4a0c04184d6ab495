/**
 * WebSocket broadcast benchmark, in one run on one machine: N connections on
 * one topic (10k; --quick 2k), one more client triggers broadcasts one after
 * the other. Side by side:
 *
 *  - raw uWebSockets.js pub/sub (the ceiling),
 *  - `ws` with a loop over its clients (a hand-built Node service),
 *  - svc: a public broadcast walker (`/ws/Room`, one worker thread), each
 *    broadcast a walker run whose reply is published to the topic.
 *
 * For each: deliveries per server CPU-second (the server process's
 * utime + stime from /proc over the broadcast phase), latency per delivery
 * (from the trigger's send to each connection's arrival, as the receiving
 * process sees it) and until the last of the N connections has a broadcast
 * (p50/p99 over broadcasts), and the server's memory per
 * idle connection (RSS before and after connecting N; for svc also N
 * authenticated connections to a private walker, each with its own token).
 *
 *   npm run bench:ws            (--quick for a short run)
 *
 * Writes bench/results/ws-<time>.json.
 *
 * Decisions:
 * - svc is started with `SVC_MAX_CONNECTIONS` ([scale.server] max_connections)
 *   above N + the sender: its default, 10,000, is the default N, and the
 *   node:http transport refuses the 10,001st connection at once (the uWS one
 *   looks every 250 ms and lets it through by luck). The result's `setup`
 *   says so.
 * - Every process the run starts (servers and receivers, each in a process
 *   group of its own: Ctrl-C reaches the bench alone, and what a server starts
 *   — svc's esbuild — goes with it) is tracked from its spawn. Any failure — a refused or reset connection, a
 *   process that exits on its own, a receiver that waits too long, an
 *   exception, SIGINT/SIGTERM — stops them all, newest first, says why, and
 *   exits non-zero.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { ensureUsers, freePort, machine, percentile, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const N = Number(process.env.BENCH_WS_CONNECTIONS ?? (quick ? 2000 : 10_000));
const BROADCASTS = quick ? 40 : 150;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;
const TICKS = 100; // USER_HZ on Linux
/**
 * The connections svc may hold (`SVC_MAX_CONNECTIONS`): the N receivers, the
 * sender, and room for the admin's requests, the cycles' 50 clients at a time
 * and sockets still closing.
 */
const SVC_MAX_CONNECTIONS = N + 1 + 1000;
/** How long a process has after SIGTERM before SIGKILL (svc drains for up to 10 s). */
const STOP_GRACE_MS = 20_000;

/** A failure the bench explains itself: reported by its message, without a stack. */
class BenchFailure extends Error {}

/** An error in one line: its message, its code when the message lacks it, and its cause's. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const cause = error.cause === undefined ? '' : `: ${describe(error.cause)}`;
  return `${error.message}${code && !error.message.includes(code) ? ` (${code})` : ''}${cause}`;
}

/** What the run started and has not stopped yet, in start order. */
const running = new Set<{ name: string; stop(): Promise<void> }>();

/** Stop what the run started, newest first. */
async function stopAll(): Promise<void> {
  for (const r of [...running].reverse()) await r.stop().catch((error: unknown) => process.stderr.write(`bench: stopping ${r.name}: ${describe(error)}\n`));
}

let failing: Promise<never> | undefined;
/** End the run: say why, stop everything it started, exit with `code`. Called again, it waits for the first call. */
function fail(reason: unknown, code = 1): Promise<never> {
  failing ??= (async () => {
    const why = reason instanceof BenchFailure || !(reason instanceof Error) ? describe(reason) : `${reason.stack ?? describe(reason)}${reason.cause === undefined ? '' : `\ncaused by: ${describe(reason.cause)}`}`;
    process.stderr.write(`bench: ws failed: ${why}\nbench: stopping what it started: ${[...running].reverse().map((r) => r.name).join(', ') || 'nothing left'}\n`);
    await stopAll();
    process.exit(code);
  })();
  return failing;
}

/**
 * A process the run started. Its exit is expected once `stop()` was called;
 * any other exit fails the run (receivers would wait for broadcasts from a
 * server that is gone).
 */
class Child {
  private readonly exited: Promise<void>;
  private stopping = false;
  private readonly tail: string[] = [];

  /** `group`: the process leads a process group of its own (spawned `detached`), killed with it. `cleanup` runs once it is stopped. */
  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    private readonly opts: { group?: boolean; cleanup?: () => void } = {},
  ) {
    this.exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    proc.once('exit', (code, signal) => {
      if (this.stopping) return;
      const gone = new BenchFailure(`${name} exited unexpectedly (${signal ?? `exit code ${code}`})${this.tail.length ? `; its last lines:\n${this.lastLines()}` : ''}`);
      // Often the cause of a failure already under way (a server's crash closes the sender's connection first): say so too.
      if (failing) process.stderr.write(`bench: also: ${gone.message}\n`);
      else void fail(gone);
    });
    // Failing to spawn, to signal, or to send over IPC.
    proc.on('error', (error) => {
      if (!this.stopping) void fail(new BenchFailure(`${name}: ${describe(error)}`));
    });
    running.add(this);
  }

  get pid(): number {
    return this.proc.pid as number;
  }

  /** Keep `line` among its last 20 lines of output. */
  heard(line: string): void {
    this.tail.push(line);
    if (this.tail.length > 20) this.tail.shift();
  }

  lastLines(): string {
    return this.tail.map((l) => `  | ${l}`).join('\n');
  }

  /** SIGTERM, SIGKILL after STOP_GRACE_MS; then SIGKILL to whatever is left in its process group. */
  async stop(): Promise<void> {
    this.stopping = true;
    running.delete(this);
    if (this.proc.pid !== undefined) {
      if (this.proc.exitCode === null && this.proc.signalCode === null) {
        this.signal('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const late = await Promise.race([this.exited.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), STOP_GRACE_MS)))]);
        clearTimeout(timer);
        if (late) {
          process.stderr.write(`bench: ${this.name} still running ${STOP_GRACE_MS / 1000} s after SIGTERM: killing it\n`);
          this.signal('SIGKILL');
          await this.exited;
        }
      }
      if (this.opts.group) this.signal('SIGKILL');
    }
    this.opts.cleanup?.();
  }

  private signal(sig: NodeJS.Signals): void {
    try {
      if (this.opts.group && sig === 'SIGKILL') process.kill(-this.pid, sig);
      else this.proc.kill(sig);
    } catch {
      // Nothing left to signal (ESRCH).
    }
  }
}

/**
 * Start a server from the repository root, in a process group of its own,
 * and wait for its ready line. Tracked from its spawn: a server that exits
 * or never gets ready fails the run and is stopped with the rest.
 */
async function launch(name: string, args: string[], ready: RegExp, env: Record<string, string>, cleanup?: () => void): Promise<Child> {
  process.stderr.write(`bench: starting ${name}: ${[process.execPath, ...args].join(' ').slice(0, 120)}\n`);
  const proc = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const child = new Child(name, proc, { group: true, cleanup });
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new BenchFailure(`${name} was not ready within 60 s; its last lines:\n${child.lastLines()}`)), 60_000);
    const onLine = (line: string) => {
      child.heard(line);
      if (ready.test(line)) resolve();
    };
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', onLine);
  }).finally(() => clearTimeout(timer));
  return child;
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

type ReceiverMsg = { t: string; at?: number; n?: number; hist?: Record<string, number>; bucketMs?: number };

/** The receiving process: N byte-counting connections. */
class Receiver {
  private readonly child: Child;
  private waiting: ((msg: ReceiverMsg) => void)[] = [];
  /** Bytes the connections should have had since they opened: an absolute target holds even when a broadcast overtakes its 'expect'. */
  private expected = 0;

  constructor(port: number, path: string, auth: boolean) {
    const proc = fork(join(fixtures, 'ws-receiver.mjs'), [String(port), path, String(N), auth ? 'auth' : 'open'], {
      env: { ...process.env, BENCH_JWT_SECRET: SECRET },
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Out of the terminal's process group: Ctrl-C reaches the bench alone, which stops the receiver in its turn.
      detached: true,
    });
    this.child = new Child(`the receiver of ${N} connections to ${path}`, proc);
    proc.on('message', (msg) => this.waiting.shift()?.(msg as ReceiverMsg));
  }

  /** Its next message; a receiver silent for `seconds` fails the run (it would otherwise wait for ever). */
  private next(what: string, seconds: number): Promise<ReceiverMsg> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new BenchFailure(`the receiver did not ${what} within ${seconds} s`)), seconds * 1000);
      this.waiting.push((msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
    });
  }

  async ready(): Promise<void> {
    await this.next('start', 60);
  }

  async connect(): Promise<number> {
    const reply = this.next(`open its ${N} connections`, 600);
    this.child.proc.send({ t: 'connect' });
    this.expected = 0;
    return (await reply).n as number;
  }

  /**
   * Resolves with the wall-clock time at which `bytes` more had arrived, and a
   * histogram of each delivery's latency from `sentAt` (wall clock).
   */
  expect(bytes: number, sentAt: number): Promise<{ at: number; hist: Record<string, number>; bucketMs: number }> {
    const reply = this.next(`receive a broadcast (${bytes} bytes over its ${N} connections)`, 120);
    this.expected += bytes;
    this.child.proc.send({ t: 'expect', bytes, total: this.expected, sentAt });
    return reply.then((m) => ({ at: m.at as number, hist: m.hist ?? {}, bucketMs: m.bucketMs ?? 1 }));
  }

  async close(): Promise<void> {
    const reply = this.next('close its connections', 60);
    this.child.proc.send({ t: 'close' });
    await reply;
    await this.child.stop();
  }
}

function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** The client that triggers the broadcasts. Its connection going before `close()` fails the run. */
class Sender {
  readonly name = 'the sender';
  private closing = false;

  private constructor(private readonly ws: WebSocket) {
    running.add(this);
    ws.on('error', (error) => {
      if (!this.closing) void fail(new BenchFailure(`the sender's connection failed: ${describe(error)}`));
    });
    ws.on('close', (code) => {
      if (!this.closing) void fail(new BenchFailure(`the server closed the sender's connection (close code ${code})`));
    });
  }

  static async open(url: string): Promise<Sender> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    try {
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
    } catch (error) {
      throw new BenchFailure(`the sender could not connect to ${url}: ${describe(error)} (a server at its connection limit refuses or resets new connections)`);
    }
    return new Sender(ws);
  }

  send(text: string): void {
    this.ws.send(text);
  }

  close(): void {
    this.closing = true;
    running.delete(this);
    this.ws.close();
  }

  /** On the way out: closed first (newest), so that stopping the server is not taken for another failure. */
  async stop(): Promise<void> {
    this.closing = true;
    running.delete(this);
    this.ws.terminate();
  }
}

interface Scenario {
  name: string;
  start(port: number): Promise<Child>;
  path: string;
  /** The frame each listener gets for a trigger text. */
  frame(text: string): string;
  trigger(text: string): string;
}

const svcEnv = (dataDir: string): Record<string, string> => ({
  JWT_SECRET: SECRET,
  SVC_DATA_DIR: dataDir,
  SVC_ACCESS_LOG: 'false',
  SVC_MAX_CONNECTIONS: String(SVC_MAX_CONNECTIONS),
  SVC_WS_PING_INTERVAL_SECONDS: '3600',
  SVC_WS_IDLE_TIMEOUT_SECONDS: '7200',
  SVC_WS_AUTH_TIMEOUT_SECONDS: '600',
  ADMIN_DEFAULT_PASSWORD: 'bench chief password',
});

/** svc on the bench app; the bench's admin and its N users exist (tokens of unknown users are refused). Its data folder goes when it is stopped. */
const svcStart = async (port: number, extra: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Child> => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-ws-'));
  const remove = () => rmSync(dataDir, { recursive: true, force: true });
  // Until the server owns it, the folder is removed on the way out by itself.
  const folder = { name: `data folder ${dataDir}`, stop: async () => remove() };
  running.add(folder);
  await ensureUsers(dataDir, ['bench-admin'], 'admin');
  await ensureUsers(dataDir, Array.from({ length: N }, (_, i) => `bench-user-${i}`));
  running.delete(folder);
  const name = `svc server${extra.SVC_TRANSPORT ? ` (SVC_TRANSPORT=${extra.SVC_TRANSPORT})` : ''}`;
  return launch(name, [...nodeArgs, join(root, 'bin/svc.mjs'), 'start', join(fixtures, 'ws-bench-app.ts'), '--host', '127.0.0.1', '--port', String(port), '--workers', '1'], /Server ready at/, { ...svcEnv(dataDir), ...extra }, remove);
};

const scenarios: Scenario[] = [
  {
    name: 'raw uWS pub/sub',
    start: (port) => launch('raw uWS server', [join(fixtures, 'ws-raw-uws.mjs')], /ready/, { PORT: String(port) }),
    path: '/ws',
    frame: (text) => text,
    trigger: (text) => text,
  },
  {
    name: 'ws + loop',
    start: (port) => launch('ws server', [join(fixtures, 'ws-raw-ws.mjs')], /ready/, { PORT: String(port) }),
    path: '/ws',
    frame: (text) => text,
    trigger: (text) => text,
  },
  {
    name: 'svc broadcast walker (uWS)',
    start: (port) => svcStart(port),
    path: '/ws/Room',
    frame: (text) => JSON.stringify({ ok: true, data: { result: null, reports: [text] } }),
    trigger: (text) => JSON.stringify({ text }),
  },
  {
    name: 'svc broadcast walker (node:http + ws fallback)',
    start: (port) => svcStart(port, { SVC_TRANSPORT: 'node' }),
    path: '/ws/Room',
    frame: (text) => JSON.stringify({ ok: true, data: { result: null, reports: [text] } }),
    trigger: (text) => JSON.stringify({ text }),
  },
];

/** p50 / p99 of a latency histogram (bucket index → count), in ms (upper bucket edges). */
function histogramPercentiles(hist: Map<number, number>, bucketMs: number): { p50: number; p99: number } {
  const buckets = [...hist.entries()].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((n, [, c]) => n + c, 0);
  const at = (p: number): number => {
    let seen = 0;
    for (const [b, c] of buckets) {
      seen += c;
      if (seen >= total * p) return round((b + 1) * bucketMs, 2);
    }
    return NaN;
  };
  return { p50: at(0.5), p99: at(0.99) };
}

/** Bytes on the wire for one unmasked text frame. */
function wireSize(payload: string): number {
  const n = Buffer.byteLength(payload);
  return n < 126 ? n + 2 : n < 65536 ? n + 4 : n + 10;
}

async function broadcastRun(s: Scenario): Promise<Record<string, unknown>> {
  const port = await freePort();
  process.stderr.write(`bench: ${s.name}: ${N} connections\n`);
  const server = await s.start(port);
  const pid = server.pid;
  const rssBefore = rssBytes(pid);
  const receiver = new Receiver(port, s.path, false);
  await receiver.ready();
  const connected = await receiver.connect();
  const rssAfter = rssBytes(pid);
  const sender = await Sender.open(`ws://127.0.0.1:${port}${s.path}`);
  const perDelivery = new Map<number, number>();
  let bucketMs = 1;
  const once = async (i: number, record: boolean): Promise<number> => {
    const text = `broadcast-${String(i).padStart(6, '0')}`;
    const sent = wallNow();
    const reached = receiver.expect(N * wireSize(s.frame(text)), sent);
    sender.send(s.trigger(text));
    const r = await reached;
    if (record) {
      bucketMs = r.bucketMs;
      for (const [b, n] of Object.entries(r.hist)) perDelivery.set(Number(b), (perDelivery.get(Number(b)) ?? 0) + n);
    }
    return r.at - sent;
  };
  for (let i = 0; i < 5; i++) await once(i, false); // warm-up
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const latencies: number[] = [];
  for (let i = 0; i < BROADCASTS; i++) latencies.push(await once(1000 + i, true));
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  latencies.sort((a, b) => a - b);
  sender.close();
  await receiver.close();
  await server.stop();
  const deliveries = BROADCASTS * N;
  const result = {
    connections: connected,
    broadcasts: BROADCASTS,
    deliveries,
    server_cpu_s: round(cpu, 2),
    deliveries_per_cpu_s: Math.round(deliveries / Math.max(cpu, 1 / TICKS)),
    deliveries_per_wall_s: Math.round(deliveries / wall),
    all_delivered_ms: { p50: round(percentile(latencies, 50), 2), p99: round(percentile(latencies, 99), 2), max: round(latencies.at(-1) as number, 2) },
    per_delivery_ms: histogramPercentiles(perDelivery, bucketMs),
    bytes_per_idle_connection: Math.round((rssAfter - rssBefore) / connected),
  };
  process.stderr.write(`bench:   ${JSON.stringify(result)}\n`);
  return result;
}

/** svc: N idle authenticated connections (a token each) to a private walker. */
async function authMemory(): Promise<Record<string, unknown>> {
  const port = await freePort();
  process.stderr.write(`bench: svc authenticated idle connections: ${N}\n`);
  const server = await svcStart(port);
  const pid = server.pid;
  const rssBefore = rssBytes(pid);
  const receiver = new Receiver(port, '/ws/Members', true);
  await receiver.ready();
  const connected = await receiver.connect();
  // The sessions are authenticated and open (asked of the server itself).
  const { SignJWT } = await import('jose');
  const admin = await new SignJWT({ user_id: 'bench-admin', role: 'admin' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
  const stats = (await (await fetch(`http://127.0.0.1:${port}/admin/stats`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { data: { rss_bytes: number; workers: { websockets: number }[] } };
  const rssAfter = rssBytes(pid);
  await receiver.close();
  await server.stop();
  const perConn = (rssAfter - rssBefore) / connected;
  const result = {
    connections: connected,
    open_sessions_reported: stats.data.workers.reduce((n, w) => n + w.websockets, 0),
    rss_before_mb: round(rssBefore / 2 ** 20, 1),
    rss_after_mb: round(rssAfter / 2 ** 20, 1),
    bytes_per_connection: Math.round(perConn),
    connections_per_gb: Math.round(2 ** 30 / perConn),
  };
  process.stderr.write(`bench:   ${JSON.stringify(result)}\n`);
  return result;
}

/**
 * svc: CYCLES connect / one frame / disconnect cycles (a fifth of them dropped
 * without a close handshake); heap (after a GC), handles and session actors
 * per worker before, halfway and after.
 */
const CYCLES = quick ? 20_000 : 100_000;
async function cycles(): Promise<Record<string, unknown>> {
  const port = await freePort();
  process.stderr.write(`bench: svc connect/disconnect cycles: ${CYCLES}\n`);
  const server = await svcStart(port, {}, ['--expose-gc']);
  const { SignJWT } = await import('jose');
  const admin = await new SignJWT({ user_id: 'bench-admin', role: 'admin' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
  type W = { worker: string; websockets: number; session_actors: number; heap_used_bytes: number; handles: number };
  const stats = async (): Promise<W[]> =>
    ((await (await fetch(`http://127.0.0.1:${port}/admin/stats?gc=1`, { headers: { authorization: `Bearer ${admin}` } })).json()) as { data: { workers: W[] } }).data.workers;
  const settle = async (): Promise<W[]> => {
    let s = await stats();
    for (let i = 0; i < 1000 && s.some((w) => w.websockets || w.session_actors); i++) s = await stats();
    return s;
  };
  // One cycle: connect, one frame and its reply, then close (or drop). A refused, reset or closed connection fails it.
  const one = (i: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/Room`, { perMessageDeflate: false });
      let answered = false;
      ws.on('error', (error) => reject(new BenchFailure(`connect/disconnect cycle ${i}: ${describe(error)}`)));
      ws.once('close', (code) => (answered ? resolve() : reject(new BenchFailure(`connect/disconnect cycle ${i}: the server closed the connection before its reply (close code ${code})`))));
      ws.once('open', () => ws.send(JSON.stringify({ text: `c${i}` })));
      ws.once('message', () => {
        answered = true;
        if (i % 5 === 0) {
          ws.terminate();
          resolve();
          return;
        }
        ws.close();
      });
    });
  const run = async (from: number, to: number) => {
    const width = 50;
    let next = from;
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < to) await one(next++);
      }),
    );
  };
  await run(0, 2000); // warm-up
  const before = await settle();
  const t0 = performance.now();
  await run(2000, 2000 + CYCLES / 2);
  const half = await settle();
  await run(2000 + CYCLES / 2, 2000 + CYCLES);
  const after = await settle();
  const seconds = (performance.now() - t0) / 1000;
  await server.stop();
  const sum = (ws: W[], k: keyof W) => ws.reduce((n, w) => n + (w[k] as number), 0);
  const result = {
    cycles: CYCLES,
    cycles_per_s: Math.round(CYCLES / seconds),
    heap_used_mb: { before: round(sum(before, 'heap_used_bytes') / 2 ** 20, 2), half: round(sum(half, 'heap_used_bytes') / 2 ** 20, 2), after: round(sum(after, 'heap_used_bytes') / 2 ** 20, 2) },
    heap_growth_bytes_per_cycle: round((sum(after, 'heap_used_bytes') - sum(before, 'heap_used_bytes')) / CYCLES, 2),
    handles: { before: sum(before, 'handles'), after: sum(after, 'handles') },
    open_after: { websockets: sum(after, 'websockets'), session_actors: sum(after, 'session_actors') },
  };
  process.stderr.write(`bench:   ${JSON.stringify(result)}\n`);
  return result;
}

async function main(): Promise<void> {
  if (process.argv.includes('--cycles-only')) {
    console.log(JSON.stringify(await cycles(), null, 2));
    process.exit(0);
  }
  const results: Record<string, Record<string, unknown>> = {};
  for (const s of scenarios) results[s.name] = await broadcastRun(s);
  const auth = await authMemory();
  const leak = await cycles();
  const uws = results['raw uWS pub/sub'] as { deliveries_per_cpu_s: number };
  const ws = results['ws + loop'] as { deliveries_per_cpu_s: number };
  const svc = results['svc broadcast walker (uWS)'] as { deliveries_per_cpu_s: number; all_delivered_ms: { p99: number } };
  const svcNode = results['svc broadcast walker (node:http + ws fallback)'] as { deliveries_per_cpu_s: number };
  const out = {
    bench: 'ws',
    at: new Date().toISOString(),
    quick,
    machine: machine(),
    connections: N,
    setup: {
      connections: N,
      broadcasts: BROADCASTS,
      connect_disconnect_cycles: CYCLES,
      svc_workers: 1,
      svc_max_connections: SVC_MAX_CONNECTIONS,
      svc_max_connections_why: `svc runs with SVC_MAX_CONNECTIONS=${SVC_MAX_CONNECTIONS} ([scale.server] max_connections) on both transports: ${N} receivers, the sender and a margin (its default, 10,000, leaves no room for the sender beside 10,000 receivers)`,
    },
    results,
    svc_authenticated_idle: auth,
    svc_connect_disconnect: leak,
    ratios: {
      svc_vs_raw_uws: round(svc.deliveries_per_cpu_s / uws.deliveries_per_cpu_s, 2),
      svc_vs_ws_loop: round(svc.deliveries_per_cpu_s / ws.deliveries_per_cpu_s, 2),
      svc_node_fallback_vs_ws_loop: round(svcNode.deliveries_per_cpu_s / ws.deliveries_per_cpu_s, 2),
    },
    goals: {
      svc_vs_ws_loop: '>= 5x',
      deliveries_per_cpu_s: '>= 1,000,000',
      p99_ms: '<= 50 (reported both per delivery and until the last of N has it)',
      connections_per_gb: '>= 50,000',
    },
  };
  console.log(JSON.stringify(out, null, 2));
  process.stderr.write(`bench: wrote ${save('ws', out)}\n`);
}

process.on('SIGINT', () => void fail(new BenchFailure('interrupted (SIGINT)'), 130));
process.on('SIGTERM', () => void fail(new BenchFailure('terminated (SIGTERM)'), 143));
process.on('uncaughtException', (error) => void fail(error));
process.on('unhandledRejection', (reason) => void fail(reason));
await main().catch((error: unknown) => fail(error));
