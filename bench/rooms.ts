/**
 * WebSocket rooms benchmark, side by side in one run on one machine. N
 * connections (10k; --quick 2k) spread over R rooms (1,000; --quick 200:
 * connection i is in room `r-<i mod R>`, about 10 a room), held by two
 * receiving processes of N/2 connections each (so their CPU is not the
 * server's); one more client, the sender, sends messages to rooms.
 *
 *  1. One member: svc (one worker thread, uWS transport, the rooms of
 *     bench/fixtures/rooms-bench-app.ts) vs raw uWebSockets.js pub/sub with
 *     one topic per room (the ceiling) vs Socket.IO (`io.to(room).emit`).
 *     Deliveries per server CPU-second over rounds of R messages, one to each
 *     room (N deliveries a round, the next round once every delivery of the
 *     last arrived). svc's sender is a WebSocket walker frame
 *     `{"op":"say","room","text"}` whose walker does `this.sendTo(room, text)`
 *     (every frame is answered, as the walker protocol does; at most 128
 *     unanswered); the same rounds are then sent through `POST /function/say`
 *     (`sendTo(room, text)` in a function, 64 requests at a time) for
 *     comparison. The baselines' senders write every message of a round at
 *     once (nothing answers them).
 *  2. A big room: all N connections in one room, broadcasts one after the
 *     other (as bench/ws.ts measures), on the same three.
 *  3. Two members: two svc processes clustered through a real Redis
 *     (`KV_URL`, one cluster name, one data folder) vs two Socket.IO
 *     processes with @socket.io/redis-adapter; one receiving process on each,
 *     so every room has members on both; the sender on the first member, then
 *     on the second (for svc it matters: a public walker runs on the guest
 *     graph's partition, which lives on one member; frames that reach the
 *     other are forwarded to it). Deliveries per CPU-second of both servers
 *     over both halves (Redis's CPU is reported beside, and in a second
 *     ratio), and each half apart; for svc, the function sender too.
 *  4. Latency: messages one after the other, each to one room (round robin),
 *     per delivery from the send to its arrival as the receiving process sees
 *     it (p50/p99), and until its last member has it; for the big room, as
 *     bench/ws.ts does.
 *  5. Memory per idle connection in a room: the server's RSS before the
 *     receivers connect, once every connection is open and once every one
 *     joined its room, over N; each reading after the server collected its
 *     garbage (every server runs with --expose-gc: svc through
 *     `/admin/stats?gc=1`, which also gives its worker's heap in use, the
 *     baselines on SIGUSR2) and 1 s more. Cold, from the server as it
 *     started; then warm: the connections closed, opened and joined again
 *     (what they take of a server that has served before: V8 grows a
 *     thread's young generation once, at its first load, to ~32 MB that it
 *     keeps, which cold spreads over N; an allocator keeps what it was
 *     given). Every server is measured both ways.
 *
 * Server CPU is utime + stime of the server process (every thread) from
 * /proc over the measured phase. Figures are ratios, never assertions; the
 * issue's goals are printed beside them.
 *
 *   npm run bench:rooms            (--quick for a short run; --parts=one,big,two to run some;
 *                                   BENCH_ROOMS_CONNECTIONS / BENCH_ROOMS_ROOMS to change N / R)
 *
 * Writes bench/results/rooms-<time>.json.
 *
 * Decisions:
 * - The process handling (every process tracked from its spawn, in a process
 *   group of its own; any failure stops them all, newest first, says why and
 *   exits non-zero) is bench/ws.ts's, repeated here: the benches share no
 *   module for it yet.
 * - Receivers speak each server's own protocol for the join (svc's walker
 *   frame, Socket.IO's engine.io packets and an acknowledged event, a `join`
 *   text for raw uWS) and then only count bytes: the expected bytes of every
 *   frame are known in advance (the same message text, a different room name).
 * - svc runs with `SVC_MAX_CONNECTIONS` above N + the sender, pings an hour
 *   apart, as bench/ws.ts; Socket.IO's pings are an hour apart too (the
 *   byte-counting receivers do not answer pings).
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { io as ioClient, type Socket } from 'socket.io-client';
import { ensureUsers, freePort, machine, percentile, round, save } from './lib.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const N = Number(process.env.BENCH_ROOMS_CONNECTIONS ?? (quick ? 2000 : 10_000));
const R = Number(process.env.BENCH_ROOMS_ROOMS ?? (quick ? 200 : 1000));
/** Measured rounds of R messages (N deliveries each), after WARM_ROUNDS. */
const ROUNDS = quick ? 20 : 50;
const WARM_ROUNDS = 3;
/** Messages one after the other for the latency. */
const LATENCY_MESSAGES = quick ? 100 : 300;
/** Broadcasts to the big room. */
const BIG_BROADCASTS = quick ? 30 : 100;
/** Unanswered frames svc's walker sender keeps on its connection (its session admits 256). */
const SVC_WINDOW = 128;
/** Requests in flight of the function sender. */
const FN_WINDOW = 64;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;
const TICKS = 100; // USER_HZ on Linux
const SVC_MAX_CONNECTIONS = N + 1 + 1000;
/** How long a process has after SIGTERM before SIGKILL (svc drains for up to 10 s). */
const STOP_GRACE_MS = 20_000;
const GOALS = {
  svc_vs_raw_uws: 0.9,
  svc_vs_socketio: 3,
  svc_2_members_vs_socketio_redis: 3,
  bytes_per_idle_connection_in_a_room: 6 * 1024,
};

/** A failure the bench explains itself: reported by its message, without a stack. */
class BenchFailure extends Error {}

/** An error in one line: its message, its code when the message lacks it, and its cause's. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const cause = error.cause === undefined ? '' : `: ${describe(error.cause)}`;
  return `${error.message}${code && !error.message.includes(code) ? ` (${code})` : ''}${cause}`;
}

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the run started and has not stopped yet, in start order. */
const running = new Set<{ name: string; stop(): Promise<void> }>();

/** Stop what the run started, newest first. */
async function stopAll(): Promise<void> {
  for (const r of [...running].reverse()) await r.stop().catch((error: unknown) => log(`stopping ${r.name}: ${describe(error)}`));
}

let failing: Promise<never> | undefined;
/** End the run: say why, stop everything it started, exit with `code`. Called again, it waits for the first call. */
function fail(reason: unknown, code = 1): Promise<never> {
  failing ??= (async () => {
    const why = reason instanceof BenchFailure || !(reason instanceof Error) ? describe(reason) : `${reason.stack ?? describe(reason)}${reason.cause === undefined ? '' : `\ncaused by: ${describe(reason.cause)}`}`;
    log(`rooms failed: ${why}\nbench: stopping what it started: ${[...running].reverse().map((r) => r.name).join(', ') || 'nothing left'}`);
    await stopAll();
    process.exit(code);
  })();
  return failing;
}

/**
 * A process the run started. Its exit is expected once `stop()` was called;
 * any other exit fails the run.
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
      if (failing) log(`also: ${gone.message}`);
      else void fail(gone);
    });
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
          log(`${this.name} still running ${STOP_GRACE_MS / 1000} s after SIGTERM: killing it`);
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
 * and wait for its ready line. A server that exits or is not ready within
 * 60 s fails the run and is stopped with the rest.
 */
async function launch(name: string, cmd: string, args: string[], ready: RegExp, env: Record<string, string>, cleanup?: () => void): Promise<Child> {
  log(`starting ${name}: ${[cmd, ...args].join(' ').slice(0, 140)}`);
  const proc = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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

/** CPU seconds of a process (every thread), or with `thread` of that thread alone. */
function cpuSeconds(pid: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Bytes on the wire for one unmasked text frame. */
function wireSize(payload: string): number {
  const n = Buffer.byteLength(payload);
  return n < 126 ? n + 2 : n < 65536 ? n + 4 : n + 10;
}

type ReceiverMsg = { t: string; at?: number; n?: number; hist?: Record<string, number>; bucketMs?: number; why?: string };
type Protocol = 'svc' | 'raw' | 'sio';

/** A receiving process: connections `first` … `first + count - 1`, each in room `r-<i mod rooms>`. */
class Receiver {
  private readonly child: Child;
  private waiting: ((msg: ReceiverMsg) => void)[] = [];
  /** Bytes its connections should have had since they joined. */
  private expected = 0;
  /** Its connections in each room. */
  readonly members: Uint32Array;

  constructor(
    readonly port: number,
    path: string,
    readonly first: number,
    readonly count: number,
    rooms: number,
    protocol: Protocol,
  ) {
    this.members = new Uint32Array(rooms);
    for (let i = first; i < first + count; i++) (this.members[i % rooms] as number)++;
    const proc = fork(join(fixtures, 'rooms-receiver.mjs'), [JSON.stringify({ port, path, first, count, rooms, protocol })], {
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Out of the terminal's process group: Ctrl-C reaches the bench alone, which stops the receiver in its turn.
      detached: true,
    });
    this.child = new Child(`the receiver of connections ${first}-${first + count - 1} (port ${port})`, proc);
    proc.on('message', (msg) => this.waiting.shift()?.(msg as ReceiverMsg));
  }

  /** Its next message; a receiver silent for `seconds` fails the run (it would otherwise wait for ever). */
  private next(what: string, seconds: number): Promise<ReceiverMsg> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new BenchFailure(`${this.child.name} did not ${what} within ${seconds} s`)), seconds * 1000);
      this.waiting.push((msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
    });
  }

  async ready(): Promise<void> {
    await this.next('start', 60);
  }

  /** Open its connections (`connect`), or put each in its room (`join`); resolves with how many. */
  async step(t: 'connect' | 'join'): Promise<number> {
    const reply = this.next(`${t === 'connect' ? 'open' : 'join'} its ${this.count} connections`, 600);
    this.child.proc.send({ t });
    this.expected = 0;
    const r = await reply;
    if (r.t === 'failed') throw new BenchFailure(`${this.child.name}: ${r.why}`);
    return r.n as number;
  }

  /** Resolves with the wall-clock time at which `bytes` more had arrived, and a histogram of each arrival's latency from `sentAt`. */
  expect(bytes: number, sentAt: number): Promise<{ at: number; hist: Record<string, number>; bucketMs: number }> {
    const reply = this.next(`receive ${bytes} bytes`, 120);
    this.expected += bytes;
    this.child.proc.send({ t: 'expect', total: this.expected, sentAt });
    return reply.then((m) => ({ at: m.at as number, hist: m.hist ?? {}, bucketMs: m.bucketMs ?? 1 }));
  }

  /** Fails the run when more bytes arrived than were expected: frames nobody accounted for would have made every count early. */
  async check(): Promise<void> {
    const reply = this.next('tell its byte count', 60);
    this.child.proc.send({ t: 'total' });
    const n = (await reply).n as number;
    if (n !== this.expected) throw new BenchFailure(`${this.child.name} received ${n} bytes where ${this.expected} were expected: the server sent frames the bench does not account for`);
  }

  async close(): Promise<void> {
    const reply = this.next('close its connections', 60);
    this.child.proc.send({ t: 'close' });
    await reply;
    await this.child.stop();
  }
}

/** One message: its room and its text (a JSON string in every protocol). */
type Msg = { room: string; text: string };

/** The client that sends the messages. Its connection going before `close()` fails the run. */
interface Sender {
  readonly name: string;
  /** Send them all; resolves once written (and, where the server answers, answered). */
  send(batch: Msg[]): Promise<void>;
  close(): void;
  stop(): Promise<void>;
}

/** A `ws` client: raw uWS (`say <room> <json>`) or svc's walker (`{"op":"say",…}`, each frame answered; at most `window` unanswered). */
class WsSender implements Sender {
  readonly name = 'the sender';
  private closing = false;
  private unanswered = 0;
  private wake: (() => void) | undefined;

  private constructor(
    private readonly ws: WebSocket,
    private readonly format: (m: Msg) => string,
    private readonly window: number | undefined,
  ) {
    running.add(this);
    ws.on('error', (error) => {
      if (!this.closing) void fail(new BenchFailure(`the sender's connection failed: ${describe(error)}`));
    });
    ws.on('close', (code) => {
      if (!this.closing) void fail(new BenchFailure(`the server closed the sender's connection (close code ${code})`));
    });
    ws.on('message', (data) => {
      const text = String(data);
      if (!text.startsWith('{"ok":true')) void fail(new BenchFailure(`the sender's frame was refused: ${text.slice(0, 300)}`));
      this.unanswered--;
      const w = this.wake;
      this.wake = undefined;
      w?.();
    });
  }

  static async open(url: string, format: (m: Msg) => string, window?: number): Promise<WsSender> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    try {
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
    } catch (error) {
      throw new BenchFailure(`the sender could not connect to ${url}: ${describe(error)}`);
    }
    return new WsSender(ws, format, window);
  }

  async send(batch: Msg[]): Promise<void> {
    if (this.window === undefined) {
      for (const m of batch) this.ws.send(this.format(m));
      return;
    }
    for (const m of batch) {
      while (this.unanswered >= this.window) await new Promise<void>((resolve) => (this.wake = resolve));
      this.unanswered++;
      this.ws.send(this.format(m));
    }
    while (this.unanswered > 0) await new Promise<void>((resolve) => (this.wake = resolve));
  }

  close(): void {
    this.closing = true;
    running.delete(this);
    this.ws.close();
  }

  async stop(): Promise<void> {
    this.closing = true;
    running.delete(this);
    this.ws.terminate();
  }
}

/** A Socket.IO client: `emit('say', room, text)`. */
class SioSender implements Sender {
  readonly name = 'the Socket.IO sender';
  private closing = false;

  private constructor(private readonly socket: Socket) {
    running.add(this);
    socket.on('disconnect', (why) => {
      if (!this.closing) void fail(new BenchFailure(`the Socket.IO sender was disconnected: ${why}`));
    });
  }

  static async open(url: string): Promise<SioSender> {
    const socket = ioClient(url, { transports: ['websocket'], reconnection: false, forceNew: true });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('connect_error', reject);
      });
    } catch (error) {
      socket.close();
      throw new BenchFailure(`the Socket.IO sender could not connect to ${url}: ${describe(error)}`);
    }
    return new SioSender(socket);
  }

  async send(batch: Msg[]): Promise<void> {
    for (const m of batch) this.socket.emit('say', m.room, m.text);
  }

  close(): void {
    this.closing = true;
    running.delete(this);
    this.socket.close();
  }

  async stop(): Promise<void> {
    this.close();
  }
}

/** svc's function: `POST /function/say`, at most `FN_WINDOW` requests in flight. */
class FunctionSender implements Sender {
  readonly name = 'the function sender';
  constructor(private readonly origin: string) {}

  async send(batch: Msg[]): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(FN_WINDOW, batch.length) }, async () => {
        while (next < batch.length) {
          const m = batch[next++] as Msg;
          const res = await fetch(`${this.origin}/function/say`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ room: m.room, text: m.text }) });
          const body = await res.text();
          if (res.status !== 200) throw new BenchFailure(`POST /function/say answered ${res.status}: ${body.slice(0, 300)}`);
        }
      }),
    );
  }

  close(): void {}
  async stop(): Promise<void> {}
}

/** A server under measurement: where its receivers connect, and its process. */
type Served = { port: number; pid: number };

/** A server under test. */
interface Kind {
  name: string;
  protocol: Protocol;
  path: string;
  /** The frame a member of `room` gets for `text`. */
  frame(room: string, text: string): string;
  sender(port: number): Promise<Sender>;
  /** Collect the server's garbage (it runs with --expose-gc); svc answers its worker threads' heap in use after it. */
  collect(s: Served): Promise<number | undefined>;
}

/** A baseline collects on SIGUSR2. */
const signalGc = async (s: Served): Promise<undefined> => {
  process.kill(s.pid, 'SIGUSR2');
  return undefined;
};

/** svc collects on its worker threads at `/admin/stats?gc=1`; their heap in use after it. */
const svcGc = async (s: Served): Promise<number> => {
  const res = await fetch(`http://127.0.0.1:${s.port}/admin/stats?gc=1`, { headers: { authorization: `Bearer ${await adminToken()}` } });
  if (res.status !== 200) throw new BenchFailure(`GET /admin/stats?gc=1 answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const body = (await res.json()) as { data: { workers: { heap_used_bytes: number }[] } };
  return body.data.workers.reduce((n, w) => n + w.heap_used_bytes, 0);
};

const svcFrame = (room: string, text: string) => `{"type":"message","room":${JSON.stringify(room)},"data":${JSON.stringify(text)}}`;

const SVC: Kind = {
  name: 'svc rooms',
  protocol: 'svc',
  path: '/ws/Chat',
  frame: svcFrame,
  sender: (port) => WsSender.open(`ws://127.0.0.1:${port}/ws/Chat`, (m) => JSON.stringify({ op: 'say', room: m.room, text: m.text }), SVC_WINDOW),
  collect: svcGc,
};
const RAW: Kind = {
  name: 'raw uWS pub/sub',
  protocol: 'raw',
  path: '/ws',
  frame: svcFrame,
  sender: (port) => WsSender.open(`ws://127.0.0.1:${port}/ws`, (m) => `say ${m.room} ${JSON.stringify(m.text)}`),
  collect: signalGc,
};
const SIO: Kind = {
  name: 'Socket.IO',
  protocol: 'sio',
  path: '/socket.io/?EIO=4&transport=websocket',
  frame: (room, text) => `42${JSON.stringify(['message', { room, data: text }])}`,
  sender: (port) => SioSender.open(`http://127.0.0.1:${port}`),
  collect: signalGc,
};

const svcEnv = (dataDir: string): Record<string, string> => ({
  JWT_SECRET: SECRET,
  SVC_DATA_DIR: dataDir,
  SVC_ACCESS_LOG: 'false',
  SVC_TRANSPORT: 'uws',
  SVC_MAX_CONNECTIONS: String(SVC_MAX_CONNECTIONS),
  SVC_WS_PING_INTERVAL_SECONDS: '3600',
  SVC_WS_IDLE_TIMEOUT_SECONDS: '7200',
  ADMIN_DEFAULT_PASSWORD: 'bench chief password',
});

/** A data folder for svc, removed on the way out (by its server once one owns it). */
async function svcDataDir(): Promise<{ dir: string; remove: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-rooms-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const folder = { name: `data folder ${dir}`, stop: async () => remove() };
  running.add(folder);
  await ensureUsers(dir, ['bench-admin'], 'admin');
  running.delete(folder);
  return { dir, remove };
}

/** `svc start` on the rooms app, one worker thread. */
async function startSvc(port: number, dataDir: string, extra: Record<string, string> = {}, cleanup?: () => void, label = 'svc server'): Promise<Child> {
  return launch(label, process.execPath, ['--expose-gc', join(root, 'bin/svc.mjs'), 'start', join(fixtures, 'rooms-bench-app.ts'), '--host', '127.0.0.1', '--port', String(port), '--workers', '1'], /Server ready at/, { ...svcEnv(dataDir), ...extra }, cleanup);
}

const startRaw = (port: number) => launch('raw uWS server', process.execPath, ['--expose-gc', join(fixtures, 'rooms-raw-uws.mjs')], /^ready/, { PORT: String(port) });
const startSio = (port: number, redisUrl?: string, label = 'Socket.IO server') => launch(label, process.execPath, ['--expose-gc', join(fixtures, 'rooms-socketio.mjs')], /^ready/, { PORT: String(port), ...(redisUrl ? { REDIS_URL: redisUrl } : {}) });

/** A redis-server on a free loopback port, no persistence. */
async function startRedisServer(): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = await launch('redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], /Ready to accept connections/, {});
  return { child, url: `redis://127.0.0.1:${port}` };
}

/** An admin token for the bench's data folders (the user `bench-admin` exists in each). */
async function adminToken(): Promise<string> {
  const { SignJWT } = await import('jose');
  return new SignJWT({ user_id: 'bench-admin', role: 'admin' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
}

/** Wait until the member on `port` sees `count` members. */
async function waitForMembers(port: number, count: number): Promise<void> {
  const token = await adminToken();
  const until = Date.now() + 30_000;
  let last: unknown;
  while (Date.now() < until) {
    const res = await fetch(`http://127.0.0.1:${port}/admin/cluster`, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
    if (res?.status === 200) {
      const body = (await res.json()) as { data: { members: unknown[] } };
      last = body.data.members;
      if (body.data.members.length === count) return;
    }
    await sleep(50);
  }
  throw new BenchFailure(`the member on port ${port} did not see ${count} members within 30 s (last: ${JSON.stringify(last)})`);
}

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

function ms(xs: number[]): { p50: number; p99: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: round(percentile(s, 50), 2), p99: round(percentile(s, 99), 2), max: round(s.at(-1) as number, 2) };
}

/**
 * The receiving processes of a run: two processes of N/2 connections, split
 * evenly over `servers`, connection i in room `r-<i mod rooms>`; and each
 * server's memory per connection, once opened and once in its room.
 */
async function openReceivers(kind: Kind, servers: Served[], rooms: number): Promise<{ receivers: Receiver[]; memory: Record<string, unknown>[]; heap: Record<string, number> | undefined }> {
  const per = N / 2;
  const at = (j: number) => servers[(j * servers.length) >> 1] as Served;
  const spawnReceivers = async () => {
    const made = [0, 1].map((j) => new Receiver(at(j).port, kind.path, j * per, j === 0 ? per : N - per, rooms, kind.protocol));
    await Promise.all(made.map((r) => r.ready()));
    return made;
  };
  // Each reading once the servers collected their garbage and settled (what a server does right after its start —
  // svc releases its young generation once ready — is not counted either): what idle connections hold, not what
  // opening and joining them left to collect.
  const heap: (number | undefined)[][] = [];
  const rss: number[][] = [];
  const settled = async () => {
    heap.push(await Promise.all(servers.map((s) => kind.collect(s))));
    await sleep(1000);
    rss.push(servers.map((s) => rssBytes(s.pid)));
  };
  const openAndJoin = async (receivers: Receiver[]) => {
    // One process after the other: on two cores, two receivers' handshakes at once only slow the server's.
    for (const step of ['connect', 'join'] as const) {
      let n = 0;
      for (const r of receivers) n += await r.step(step);
      if (n !== N) throw new BenchFailure(`${n} of ${N} connections ${step === 'connect' ? 'opened' : 'joined'}`);
      await settled();
    }
  };
  // Cold: the server as it started. Then warm: the same connections closed, and opened and joined again — what they
  // take of a server that has served before (V8 grows a thread's young generation once, to ~32 MB, at its first load;
  // an allocator keeps what it was given): the readings 3, 4 and 5.
  let receivers = await spawnReceivers();
  await sleep(1000);
  await settled();
  await openAndJoin(receivers);
  for (const r of receivers) await r.close();
  await sleep(1000);
  await settled();
  receivers = await spawnReceivers();
  await openAndJoin(receivers);
  const [before, opened, joined, warmBefore, warmOpened, warmJoined] = rss as [number[], number[], number[], number[], number[], number[]];
  // svc's heap is what /admin/stats answers: every member's worker threads (it gathers over the cluster), over N.
  const h = heap.map((x) => x[0]);
  const perConn = (a: number, b: number) => Math.round(((h[b] as number) - (h[a] as number)) / N);
  const heapPer =
    h[0] === undefined
      ? undefined
      : {
          heap_bytes_per_idle_connection: perConn(0, 1),
          heap_bytes_per_idle_connection_in_a_room: perConn(0, 2),
          warm_heap_bytes_per_idle_connection_in_a_room: perConn(3, 5),
        };
  const memory = servers.map((s, i) => {
    const n = receivers.filter((r) => r.port === s.port).reduce((x, r) => x + r.count, 0);
    const b = before[i] as number;
    const wb = warmBefore[i] as number;
    return {
      connections: n,
      rss_before_mb: round(b / 2 ** 20, 1),
      rss_opened_mb: round((opened[i] as number) / 2 ** 20, 1),
      rss_joined_mb: round((joined[i] as number) / 2 ** 20, 1),
      bytes_per_idle_connection: Math.round(((opened[i] as number) - b) / n),
      bytes_per_idle_connection_in_a_room: Math.round(((joined[i] as number) - b) / n),
      warm: {
        rss_before_mb: round(wb / 2 ** 20, 1),
        rss_opened_mb: round((warmOpened[i] as number) / 2 ** 20, 1),
        rss_joined_mb: round((warmJoined[i] as number) / 2 ** 20, 1),
        bytes_per_idle_connection: Math.round(((warmOpened[i] as number) - wb) / n),
        bytes_per_idle_connection_in_a_room: Math.round(((warmJoined[i] as number) - wb) / n),
      },
      // svc: its worker threads' JavaScript heap in use after a collection, per connection (the rest of RSS is uWS's and V8's reserve).
      ...(servers.length === 1 ? heapPer : {}),
    };
  });
  return { receivers, memory, heap: heapPer };
}

let seq = 0;
const nextText = () => `m-${String(seq++).padStart(7, '0')}`;

/** Send `batch` and wait until every member of every room in it has its message; the delivered count, wall time and arrival histogram. */
async function deliver(kind: Kind, sender: Sender, receivers: Receiver[], batch: Msg[]): Promise<{ deliveries: number; ms: number; hist: Map<number, number>; bucketMs: number }> {
  const rooms = receivers[0]?.members.length as number;
  let deliveries = 0;
  const bytes = receivers.map(() => 0);
  for (const m of batch) {
    const k = Number(m.room.slice(2)) % rooms;
    const size = wireSize(kind.frame(m.room, m.text));
    receivers.forEach((r, j) => {
      const n = r.members[k] as number;
      deliveries += n;
      bytes[j] = (bytes[j] as number) + n * size;
    });
  }
  const sent = wallNow();
  const reached = Promise.all(receivers.map((r, j) => r.expect(bytes[j] as number, sent)));
  await sender.send(batch);
  const got = await reached;
  const hist = new Map<number, number>();
  let bucketMs = 1;
  for (const g of got) {
    bucketMs = g.bucketMs;
    for (const [b, n] of Object.entries(g.hist)) hist.set(Number(b), (hist.get(Number(b)) ?? 0) + n);
  }
  return { deliveries, ms: Math.max(...got.map((g) => g.at)) - sent, hist, bucketMs };
}

/** CPU seconds of `pids`, summed. */
const cpuOf = (pids: number[]) => pids.reduce((s, p) => s + cpuSeconds(p), 0);

/**
 * Rounds of `rooms` messages, one to each room (N deliveries a round), the
 * next once the last is delivered: deliveries per CPU-second of `pids`
 * (and of `also`, reported apart), per wall second, and each round's time.
 */
async function rounds(kind: Kind, sender: Sender, receivers: Receiver[], rooms: number, count: number, pids: number[], also: Record<string, number> = {}): Promise<Record<string, unknown>> {
  const batch = () => {
    const text = nextText();
    return Array.from({ length: rooms }, (_, k) => ({ room: `r-${k}`, text }));
  };
  for (let i = 0; i < WARM_ROUNDS; i++) await deliver(kind, sender, receivers, batch());
  const each0 = pids.map((p) => cpuSeconds(p));
  // The main thread's share (its thread id is the process id): svc's worker thread runs the walkers and the sockets,
  // its main thread relays between the worker and the other members.
  const main0 = pids.map((p) => cpuSeconds(p, p));
  const also0 = Object.fromEntries(Object.entries(also).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const t0 = performance.now();
  let deliveries = 0;
  const roundMs: number[] = [];
  const perDelivery = new Map<number, number>();
  let bucketMs = 1;
  for (let i = 0; i < count; i++) {
    const r = await deliver(kind, sender, receivers, batch());
    deliveries += r.deliveries;
    roundMs.push(r.ms);
    bucketMs = r.bucketMs;
    for (const [b, n] of r.hist) perDelivery.set(b, (perDelivery.get(b) ?? 0) + n);
  }
  const wall = (performance.now() - t0) / 1000;
  const each = pids.map((p, i) => cpuSeconds(p) - (each0[i] as number));
  const cpu = each.reduce((a, b) => a + b, 0);
  const mains = pids.map((p, i) => round(cpuSeconds(p, p) - (main0[i] as number), 2));
  const alsoCpu = Object.fromEntries(Object.entries(also).map(([k, pid]) => [k, round(cpuSeconds(pid) - (also0[k] as number), 2)]));
  return {
    rounds: count,
    messages: count * rooms,
    deliveries,
    server_cpu_s: round(cpu, 2),
    server_cpu_s_each: each.map((c) => round(c, 2)),
    main_thread_cpu_s_each: mains,
    deliveries_per_cpu_s: Math.round(deliveries / Math.max(cpu, 1 / TICKS)),
    deliveries_per_wall_s: Math.round(deliveries / wall),
    messages_per_wall_s: Math.round((count * rooms) / wall),
    round_ms: ms(roundMs),
    // From the round's start (every message of it sent at once) to each arrival.
    per_delivery_from_round_start_ms: histogramPercentiles(perDelivery, bucketMs),
    ...(Object.keys(also).length ? { also_cpu_s: alsoCpu } : {}),
  };
}

/** Messages one after the other, each to one room (round robin over a spread of rooms): latency per delivery and until the room's last member has it. */
async function sequential(kind: Kind, sender: Sender, receivers: Receiver[], rooms: number, count: number, pids: number[]): Promise<Record<string, unknown>> {
  const room = (i: number) => `r-${(i * 7919) % rooms}`;
  for (let i = 0; i < 10; i++) await deliver(kind, sender, receivers, [{ room: room(i), text: nextText() }]);
  const cpu0 = cpuOf(pids);
  const perDelivery = new Map<number, number>();
  let bucketMs = 1;
  const all: number[] = [];
  let deliveries = 0;
  for (let i = 0; i < count; i++) {
    const r = await deliver(kind, sender, receivers, [{ room: room(1000 + i), text: nextText() }]);
    deliveries += r.deliveries;
    all.push(r.ms);
    bucketMs = r.bucketMs;
    for (const [b, n] of r.hist) perDelivery.set(b, (perDelivery.get(b) ?? 0) + n);
  }
  const cpu = cpuOf(pids) - cpu0;
  return {
    messages: count,
    deliveries,
    server_cpu_s: round(cpu, 2),
    deliveries_per_cpu_s: Math.round(deliveries / Math.max(cpu, 1 / TICKS)),
    per_delivery_ms: histogramPercentiles(perDelivery, bucketMs),
    all_delivered_ms: ms(all),
  };
}

/** One member: rounds, latency and memory with N connections in `rooms` rooms. */
async function oneMember(kind: Kind, rooms: number, start: (port: number) => Promise<Child>, opts: { fnSender?: boolean; roundsCount: number; latency: boolean }): Promise<Record<string, unknown>> {
  const port = await freePort();
  log(`${kind.name}, one member: ${N} connections in ${rooms} room(s)`);
  const server = await start(port);
  const pid = server.pid;
  const { receivers, memory } = await openReceivers(kind, [{ port, pid }], rooms);
  const mem = memory[0];
  const sender = await kind.sender(port);
  const out: Record<string, unknown> = { connections: N, rooms, memory: mem };
  out.throughput = await rounds(kind, sender, receivers, rooms, opts.roundsCount, [pid]);
  log(`  throughput ${JSON.stringify(out.throughput)}`);
  if (opts.latency) {
    out.latency = await sequential(kind, sender, receivers, rooms, LATENCY_MESSAGES, [pid]);
    log(`  latency ${JSON.stringify(out.latency)}`);
  }
  sender.close();
  if (opts.fnSender) {
    out.throughput_function_sender = await rounds(kind, new FunctionSender(`http://127.0.0.1:${port}`), receivers, rooms, opts.roundsCount, [pid]);
    log(`  function sender ${JSON.stringify(out.throughput_function_sender)}`);
  }
  await sleep(200);
  for (const r of receivers) await r.check();
  for (const r of receivers) await r.close();
  await server.stop();
  return out;
}

/**
 * Two members (A, B) on one Redis, half the connections on each: rounds and
 * latency with the sender on A, then on B. Summed over both, the figure is
 * what a cluster with senders on every member sees (for svc, where the
 * sender's walker runs matters: see `owner`).
 */
async function twoMembers(kind: Kind, start: (redisUrl: string) => Promise<[Child, number][]>, svc?: { owner: (ports: number[]) => Promise<string> }): Promise<Record<string, unknown>> {
  log(`${kind.name}, two members: ${N} connections in ${R} rooms, half on each`);
  const redis = await startRedisServer();
  const members = await start(redis.url);
  const ports = members.map(([, p]) => p);
  const pids = members.map(([c]) => c.pid);
  const { receivers, memory: mem, heap } = await openReceivers(kind, members.map(([c, port]) => ({ port, pid: c.pid })), R);
  const bySender: Record<string, Record<string, unknown>> = {};
  for (const [i, label] of ['A', 'B'].entries()) {
    const sender = await kind.sender(ports[i] as number);
    const throughput = await rounds(kind, sender, receivers, R, ROUNDS, pids, { redis: redis.child.pid });
    log(`  sender on ${label}: throughput ${JSON.stringify(throughput)}`);
    const latency = await sequential(kind, sender, receivers, R, LATENCY_MESSAGES, pids);
    log(`  sender on ${label}: latency ${JSON.stringify(latency)}`);
    sender.close();
    bySender[`sender_on_${label}`] = { throughput, latency };
    if (svc) {
      // The same rounds sent through the function on this member.
      const th = await rounds(kind, new FunctionSender(`http://127.0.0.1:${ports[i]}`), receivers, R, ROUNDS, pids, { redis: redis.child.pid });
      log(`  sender on ${label}: function sender ${JSON.stringify(th)}`);
      (bySender[`sender_on_${label}`] as Record<string, unknown>).throughput_function_sender = th;
    }
  }
  const ownerOf = svc ? await svc.owner(ports) : undefined;
  await sleep(200);
  for (const r of receivers) await r.check();
  for (const r of receivers) await r.close();
  for (const [c] of [...members].reverse()) await c.stop();
  await redis.child.stop();
  const latencies = Object.values(bySender).map((x) => x.latency as { per_delivery_ms: { p50: number; p99: number } });
  return {
    connections: N,
    rooms: R,
    memory_per_member: mem,
    ...(heap ? { heap_all_members: heap } : {}),
    ...(ownerOf ? { walker_runs_on: ownerOf } : {}),
    // Both halves together: the sender on A, then on B.
    throughput: summed(Object.values(bySender).map((x) => x.throughput as Th)),
    ...(svc ? { throughput_function_sender: summed(Object.values(bySender).map((x) => x.throughput_function_sender as Th)) } : {}),
    // The worse of the two senders' percentiles.
    latency: {
      per_delivery_ms: { p50: Math.max(...latencies.map((l) => l.per_delivery_ms.p50)), p99: Math.max(...latencies.map((l) => l.per_delivery_ms.p99)) },
      all_delivered_ms: { p50: Math.max(...Object.values(bySender).map((x) => (x.latency as { all_delivered_ms: { p50: number } }).all_delivered_ms.p50)), p99: Math.max(...Object.values(bySender).map((x) => (x.latency as { all_delivered_ms: { p99: number } }).all_delivered_ms.p99)) },
    },
    by_sender: bySender,
  };
}

type Th = { deliveries: number; server_cpu_s: number; also_cpu_s: { redis: number }; deliveries_per_wall_s: number; round_ms: { p99: number } };

/** Rounds with the sender on each member, as one. */
function summed(ths: Th[]): Record<string, unknown> {
  const deliveries = ths.reduce((n, t) => n + t.deliveries, 0);
  const cpu = ths.reduce((n, t) => n + t.server_cpu_s, 0);
  const redisCpu = ths.reduce((n, t) => n + t.also_cpu_s.redis, 0);
  return {
    deliveries,
    server_cpu_s: round(cpu, 2),
    deliveries_per_cpu_s: Math.round(deliveries / Math.max(cpu, 1 / TICKS)),
    deliveries_per_cpu_s_with_redis: Math.round(deliveries / Math.max(cpu + redisCpu, 1 / TICKS)),
    redis_cpu_s: round(redisCpu, 2),
    deliveries_per_wall_s: Math.round(ths.reduce((n, t) => n + t.deliveries_per_wall_s, 0) / ths.length),
    round_ms: { p99: Math.max(...ths.map((t) => t.round_ms.p99)) },
  };
}

/**
 * Where svc runs the bench's walker: a public walker runs on the guest graph's
 * partition, one actor in the cluster, placed on a member by rendezvous
 * hashing of node ids that are new at every start. The member that holds a
 * partition (asked of `/admin/cluster`) is the one whose sender's frames are
 * run where they arrive; the other member's are forwarded to it.
 */
async function guestPartitionOwner(ports: number[]): Promise<string> {
  const token = await adminToken();
  const res = await fetch(`http://127.0.0.1:${ports[0]}/admin/cluster`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { data: { self: string; members: { process: string; partitions: number }[] } };
  const holders = body.data.members.filter((m) => m.partitions > 0).map((m) => (m.process === body.data.self ? 'A' : 'B'));
  return `the guest graph's partition, on member ${holders.join(' and ') || '(none held)'}: frames sent to the other member are forwarded to it`;
}

async function svcCluster(redisUrl: string): Promise<[Child, number][]> {
  const data = await svcDataDir();
  const name = `bench-rooms-${process.pid}`;
  const env = { KV_URL: redisUrl, SVC_CLUSTER_NAME: name };
  const out: [Child, number][] = [];
  for (const label of ['A', 'B']) {
    const port = await freePort();
    // The folder goes with the last member stopped (B stops first).
    out.push([await startSvc(port, data.dir, env, label === 'A' ? data.remove : undefined, `svc member ${label}`), port]);
  }
  for (const [, port] of out) await waitForMembers(port, 2);
  return out;
}

async function sioCluster(redisUrl: string): Promise<[Child, number][]> {
  const out: [Child, number][] = [];
  for (const label of ['A', 'B']) {
    const port = await freePort();
    out.push([await startSio(port, redisUrl, `Socket.IO server ${label} (Redis adapter)`), port]);
  }
  return out;
}

const svcOne = async (port: number) => {
  const data = await svcDataDir();
  return startSvc(port, data.dir, {}, data.remove);
};

function versions(): Record<string, string | undefined> {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const v: Record<string, string | undefined> = {};
  for (const name of ['socket.io', 'socket.io-client', '@socket.io/redis-adapter', 'socket.io-adapter', 'engine.io', 'ioredis', 'ws']) v[name] = lock.packages[`node_modules/${name}`]?.version;
  v['redis-server'] = /v=(\S+)/.exec(spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1];
  return v;
}

const ratio = (a: number, b: number) => round(a / b, 2);
type Through = { throughput: { deliveries_per_cpu_s: number; deliveries_per_cpu_s_with_redis?: number } };

/** The parts to run: `--parts=one,big,two` (default: all). */
const PARTS = new Set((argv.find((a) => a.startsWith('--parts='))?.slice('--parts='.length) ?? 'one,big,two').split(','));

async function main(): Promise<void> {
  const loadBefore = loadavg().map((x) => round(x, 2));
  const git = (args: string[]) => spawnSync('git', args, { encoding: 'utf8', cwd: root }).stdout.trim();

  const one: Record<string, Record<string, unknown>> = {};
  if (PARTS.has('one')) {
    one[RAW.name] = await oneMember(RAW, R, startRaw, { roundsCount: ROUNDS, latency: true });
    one[SVC.name] = await oneMember(SVC, R, svcOne, { roundsCount: ROUNDS, latency: true, fnSender: true });
    one[SIO.name] = await oneMember(SIO, R, (port) => startSio(port), { roundsCount: ROUNDS, latency: true });
  }
  const bigRoom: Record<string, Record<string, unknown>> = {};
  if (PARTS.has('big')) {
    bigRoom[RAW.name] = await oneMember(RAW, 1, startRaw, { roundsCount: BIG_BROADCASTS, latency: false });
    bigRoom[SVC.name] = await oneMember(SVC, 1, svcOne, { roundsCount: BIG_BROADCASTS, latency: false });
    bigRoom[SIO.name] = await oneMember(SIO, 1, (port) => startSio(port), { roundsCount: BIG_BROADCASTS, latency: false });
  }
  const SVC2 = 'svc rooms, 2 members (cluster on Redis)';
  const SIO2 = 'Socket.IO + Redis adapter, 2 processes';
  const two: Record<string, Record<string, unknown>> = {};
  if (PARTS.has('two')) {
    two[SVC2] = await twoMembers(SVC, svcCluster, { owner: guestPartitionOwner });
    two[SIO2] = await twoMembers(SIO, sioCluster);
  }

  const dpc = (r: Record<string, unknown> | undefined, key = 'throughput') => (r?.[key] as Through['throughput'] | undefined)?.deliveries_per_cpu_s ?? NaN;
  const svcOneR = one[SVC.name];
  const ratios: Record<string, { value: number; goal: string }> = {};
  if (svcOneR) {
    ratios.svc_vs_raw_uws = { value: ratio(dpc(svcOneR), dpc(one[RAW.name])), goal: `>= ${GOALS.svc_vs_raw_uws}x` };
    ratios.svc_vs_socketio = { value: ratio(dpc(svcOneR), dpc(one[SIO.name])), goal: `>= ${GOALS.svc_vs_socketio}x` };
    ratios.svc_function_sender_vs_raw_uws = { value: ratio(dpc(svcOneR, 'throughput_function_sender'), dpc(one[RAW.name])), goal: '(for comparison)' };
    ratios.svc_function_sender_vs_socketio = { value: ratio(dpc(svcOneR, 'throughput_function_sender'), dpc(one[SIO.name])), goal: '(for comparison)' };
  }
  if (bigRoom[SVC.name]) {
    ratios.big_room_svc_vs_raw_uws = { value: ratio(dpc(bigRoom[SVC.name]), dpc(bigRoom[RAW.name])), goal: '(for comparison)' };
    ratios.big_room_svc_vs_socketio = { value: ratio(dpc(bigRoom[SVC.name]), dpc(bigRoom[SIO.name])), goal: '(for comparison)' };
  }
  if (two[SVC2]) {
    const s = two[SVC2] as Through;
    const i = two[SIO2] as Through;
    ratios.svc_2_members_vs_socketio_redis = { value: ratio(s.throughput.deliveries_per_cpu_s, i.throughput.deliveries_per_cpu_s), goal: `>= ${GOALS.svc_2_members_vs_socketio_redis}x` };
    ratios.svc_2_members_function_sender_vs_socketio_redis = { value: ratio(dpc(two[SVC2], 'throughput_function_sender'), i.throughput.deliveries_per_cpu_s), goal: '(for comparison)' };
    ratios.svc_2_members_vs_socketio_redis_with_redis_cpu = { value: ratio(s.throughput.deliveries_per_cpu_s_with_redis as number, i.throughput.deliveries_per_cpu_s_with_redis as number), goal: '(for comparison)' };
  }
  const mem = (r: Record<string, unknown> | undefined) => (r?.memory as { bytes_per_idle_connection_in_a_room: number } | undefined)?.bytes_per_idle_connection_in_a_room ?? NaN;
  const warm = (r: Record<string, unknown> | undefined) => (r?.memory as { warm?: { bytes_per_idle_connection_in_a_room: number } } | undefined)?.warm?.bytes_per_idle_connection_in_a_room ?? NaN;
  const out = {
    bench: 'rooms',
    at: new Date().toISOString(),
    commit: git(['rev-parse', 'HEAD']),
    // svc runs from the working tree: what of its code differed from the commit.
    svc_code_changed: git(['status', '--porcelain', '--', 'index.ts', 'kernel', 'actors', 'transports', 'cluster', 'runtime', 'stores', 'bin']).split('\n').filter(Boolean),
    quick,
    machine: machine(),
    versions: versions(),
    setup: {
      connections: N,
      rooms: R,
      connections_per_room: round(N / R, 1),
      rounds: ROUNDS,
      warm_up_rounds: WARM_ROUNDS,
      latency_messages: LATENCY_MESSAGES,
      parts: [...PARTS],
      big_room_broadcasts: PARTS.has('big') ? BIG_BROADCASTS : 0,
      receivers: 'two processes of N/2 byte-counting connections each (bench/fixtures/rooms-receiver.mjs); connection i in room r-<i mod R>; on two members, one process on each',
      svc: `1 worker thread per member, SVC_TRANSPORT=uws, SVC_MAX_CONNECTIONS=${SVC_MAX_CONNECTIONS}, pings an hour apart; rooms({ pattern }) without history, notifications or authorize`,
      svc_sender: `a WebSocket walker frame {"op":"say","room","text"} to /ws/Chat whose walker does this.sendTo(room, text) (each frame answered; at most ${SVC_WINDOW} unanswered); throughput_function_sender: POST /function/say calling sendTo(room, text), ${FN_WINDOW} requests in flight`,
      raw_uws_sender: 'a ws client writing `say <room> <json>` frames; the server publishes {"type":"message","room","data"} to the topic #r:<room> with app.publish (nothing answered)',
      socketio_sender: "a socket.io-client emitting ('say', room, text); the server does io.to(room).emit('message', {room, data}) (nothing answered); WebSocket transport only, pings an hour apart",
      two_members: 'svc: two svc start processes with KV_URL, one SVC_CLUSTER_NAME and one data folder; Socket.IO: two processes with @socket.io/redis-adapter (ioredis clients); one redis-server; rounds and latency with the sender on the first member, then on the second; the headline sums both halves',
      cpu: 'utime + stime of each server process (every thread) from /proc over the measured phase; Redis apart',
      memory: 'server RSS before the receivers connect, once every connection opened (bytes_per_idle_connection) and once every one joined its room (bytes_per_idle_connection_in_a_room), over the connections it holds; each reading after a garbage collection (svc: /admin/stats?gc=1 on its worker threads, which gives heap_bytes_*; baselines: global.gc on SIGUSR2) and 1 s more. Cold: from the server as it started; warm: the same connections closed, then opened and joined again (a server that has served before: V8 grew its young generation once, the allocator keeps what it was given)',
      loadavg_before: loadBefore,
      loadavg_after: loadavg().map((x) => round(x, 2)),
    },
    results: { one_member: one, big_room: bigRoom, two_members: two },
    ratios,
    memory_bytes_per_idle_connection_in_a_room: {
      svc: mem(svcOneR),
      raw_uws: mem(one[RAW.name]),
      socketio: mem(one[SIO.name]),
      svc_warm: warm(svcOneR),
      raw_uws_warm: warm(one[RAW.name]),
      socketio_warm: warm(one[SIO.name]),
      svc_all_in_one_room: mem(bigRoom[SVC.name]),
      raw_uws_all_in_one_room: mem(bigRoom[RAW.name]),
      socketio_all_in_one_room: mem(bigRoom[SIO.name]),
      goal_svc: `<= ${GOALS.bytes_per_idle_connection_in_a_room}`,
    },
    latency_at_n: {
      ...(svcOneR ? { svc_room_message_per_delivery_ms: (svcOneR.latency as { per_delivery_ms: unknown }).per_delivery_ms, svc_room_message_all_delivered_ms: (svcOneR.latency as { all_delivered_ms: unknown }).all_delivered_ms } : {}),
      ...(bigRoom[SVC.name] ? { svc_big_room_per_delivery_ms: (bigRoom[SVC.name]?.throughput as { per_delivery_from_round_start_ms: unknown }).per_delivery_from_round_start_ms, svc_big_room_all_delivered_ms: (bigRoom[SVC.name]?.throughput as { round_ms: unknown }).round_ms } : {}),
      ...(two[SVC2] ? { svc_2_members_per_delivery_ms: (two[SVC2].latency as { per_delivery_ms: unknown }).per_delivery_ms } : {}),
    },
  };
  const file = save('rooms', out);
  table(out.results, ratios);
  console.log(`written ${file}`);
}

/** The printed summary. */
function table(results: { one_member: Record<string, Record<string, unknown>>; big_room: Record<string, Record<string, unknown>>; two_members: Record<string, Record<string, unknown>> }, ratios: Record<string, { value: number; goal: string }>): void {
  type T = { deliveries_per_cpu_s: number; deliveries_per_wall_s: number; round_ms: { p99: number }; deliveries_per_cpu_s_with_redis?: number };
  type L = { per_delivery_ms: { p50: number; p99: number }; all_delivered_ms: { p50: number; p99: number } };
  const row = (r: Record<string, unknown>) => {
    const t = r.throughput as T;
    const l = r.latency as L | undefined;
    const m = r.memory as { bytes_per_idle_connection: number; bytes_per_idle_connection_in_a_room: number; heap_bytes_per_idle_connection_in_a_room?: number; warm: { bytes_per_idle_connection_in_a_room: number } } | undefined;
    return {
      'deliveries/CPU-s': t.deliveries_per_cpu_s,
      ...(t.deliveries_per_cpu_s_with_redis ? { 'deliveries/CPU-s (+redis)': t.deliveries_per_cpu_s_with_redis } : {}),
      'deliveries/s': t.deliveries_per_wall_s,
      'round p99 ms': t.round_ms.p99,
      ...(l ? { 'msg p50 ms': l.per_delivery_ms.p50, 'msg p99 ms': l.per_delivery_ms.p99, 'all p99 ms': l.all_delivered_ms.p99 } : {}),
      ...(m ? { 'bytes/conn': m.bytes_per_idle_connection, 'bytes/conn in room': m.bytes_per_idle_connection_in_a_room, 'warm: in room': m.warm.bytes_per_idle_connection_in_a_room, 'heap/conn in room': m.heap_bytes_per_idle_connection_in_a_room ?? '' } : {}),
    };
  };
  if (Object.keys(results.one_member).length) {
    console.log(`\n1. one member: ${N} connections in ${R} rooms, rounds of ${R} messages (one to each room)`);
    const one: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(results.one_member)) {
      one[k] = row(v);
      if (v.throughput_function_sender) one[`${k} (POST /function/say)`] = row({ throughput: v.throughput_function_sender });
    }
    console.table(one);
  }
  if (Object.keys(results.big_room).length) {
    console.log(`\n2. big room: ${N} connections in one room, broadcasts one after the other (round = one broadcast)`);
    console.table(Object.fromEntries(Object.entries(results.big_room).map(([k, v]) => [k, row(v)])));
  }
  if (Object.keys(results.two_members).length) {
    console.log(`\n3. two members on Redis: ${N} connections in ${R} rooms, half on each; the sender on A, then on B (both: the two halves summed)`);
    const two: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(results.two_members)) {
      two[`${k}, both`] = row(v);
      for (const [s, h] of Object.entries(v.by_sender as Record<string, Record<string, unknown>>)) two[`${k}, ${s.replace(/_/g, ' ')}`] = row(h);
      if (v.throughput_function_sender) {
        two[`${k}, both (POST /function/say)`] = row({ throughput: v.throughput_function_sender });
        for (const [s, h] of Object.entries(v.by_sender as Record<string, Record<string, unknown>>)) two[`${k}, ${s.replace(/_/g, ' ')} (POST /function/say)`] = row({ throughput: h.throughput_function_sender });
      }
    }
    console.table(two);
    for (const [k, v] of Object.entries(results.two_members)) if (v.walker_runs_on) console.log(`${k}: the walker runs on ${v.walker_runs_on}`);
  }
  console.log('\nratios (deliveries per server CPU-second)');
  console.table(ratios);
}

process.on('SIGINT', () => void fail(new BenchFailure('interrupted (SIGINT)'), 130));
process.on('SIGTERM', () => void fail(new BenchFailure('terminated (SIGTERM)'), 143));
process.on('uncaughtException', (error) => void fail(error));
process.on('unhandledRejection', (reason) => void fail(reason));
await main().catch((error: unknown) => fail(error));
process.exit(0);
