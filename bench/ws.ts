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
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ensureUsers, freePort, machine, percentile, type Proc, round, save, serve } from './lib.ts';

const quick = process.argv.includes('--quick');
const N = Number(process.env.BENCH_WS_CONNECTIONS ?? (quick ? 2000 : 10_000));
const BROADCASTS = quick ? 40 : 150;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;
const TICKS = 100; // USER_HZ on Linux

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
  private readonly proc: ChildProcess;
  private waiting: ((msg: ReceiverMsg) => void)[] = [];

  constructor(port: number, path: string, auth: boolean) {
    this.proc = fork(join(fixtures, 'ws-receiver.mjs'), [String(port), path, String(N), auth ? 'auth' : 'open'], {
      env: { ...process.env, BENCH_JWT_SECRET: SECRET },
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.proc.on('message', (msg) => this.waiting.shift()?.(msg as { t: string }));
  }

  private next(): Promise<ReceiverMsg> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async ready(): Promise<void> {
    await this.next();
  }

  async connect(): Promise<number> {
    const reply = this.next();
    this.proc.send({ t: 'connect' });
    return (await reply).n as number;
  }

  /**
   * Resolves with the wall-clock time at which `bytes` more had arrived, and a
   * histogram of each delivery's latency from `sentAt` (wall clock).
   */
  expect(bytes: number, sentAt: number): Promise<{ at: number; hist: Record<string, number>; bucketMs: number }> {
    const reply = this.next();
    this.proc.send({ t: 'expect', bytes, sentAt });
    return reply.then((m) => ({ at: m.at as number, hist: m.hist ?? {}, bucketMs: m.bucketMs ?? 1 }));
  }

  async close(): Promise<void> {
    const reply = this.next();
    this.proc.send({ t: 'close' });
    await reply;
    this.proc.kill();
  }
}

function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

async function openSender(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

interface Scenario {
  name: string;
  start(port: number): Promise<Proc>;
  path: string;
  /** The frame each listener gets for a trigger text. */
  frame(text: string): string;
  trigger(text: string): string;
}

const svcEnv = (dataDir: string): Record<string, string> => ({
  JWT_SECRET: SECRET,
  SVC_DATA_DIR: dataDir,
  SVC_ACCESS_LOG: 'false',
  SVC_WS_PING_INTERVAL_SECONDS: '3600',
  SVC_WS_IDLE_TIMEOUT_SECONDS: '7200',
  SVC_WS_AUTH_TIMEOUT_SECONDS: '600',
  ADMIN_DEFAULT_PASSWORD: 'bench chief password',
});

/** svc on the bench app; the bench's admin and its N users exist (tokens of unknown users are refused). */
const svcStart = async (port: number, extra: Record<string, string> = {}, nodeArgs: string[] = []) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-ws-'));
  await ensureUsers(dataDir, ['bench-admin'], 'admin');
  await ensureUsers(dataDir, Array.from({ length: N }, (_, i) => `bench-user-${i}`));
  return serve(process.execPath, [...nodeArgs, join(root, 'bin/svc.mjs'), 'start', join(fixtures, 'ws-bench-app.ts'), '--host', '127.0.0.1', '--port', String(port), '--workers', '1'], /Server ready at/, {
    ...svcEnv(dataDir),
    ...extra,
  });
};

const scenarios: Scenario[] = [
  {
    name: 'raw uWS pub/sub',
    start: (port) => serve(process.execPath, [join(fixtures, 'ws-raw-uws.mjs')], /ready/, { PORT: String(port) }),
    path: '/ws',
    frame: (text) => text,
    trigger: (text) => text,
  },
  {
    name: 'ws + loop',
    start: (port) => serve(process.execPath, [join(fixtures, 'ws-raw-ws.mjs')], /ready/, { PORT: String(port) }),
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
  const pid = server.proc.pid as number;
  const rssBefore = rssBytes(pid);
  const receiver = new Receiver(port, s.path, false);
  await receiver.ready();
  const connected = await receiver.connect();
  const rssAfter = rssBytes(pid);
  const sender = await openSender(`ws://127.0.0.1:${port}${s.path}`);
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
  const pid = server.proc.pid as number;
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
  const one = async (i: number): Promise<void> => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/Room`, { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    await new Promise((resolve) => {
      ws.once('message', resolve);
      ws.send(JSON.stringify({ text: `c${i}` }));
    });
    if (i % 5 === 0) {
      ws.terminate();
      return;
    }
    await new Promise((resolve) => {
      ws.once('close', resolve);
      ws.close();
    });
  };
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

const results: Record<string, Record<string, unknown>> = {};
if (process.argv.includes('--cycles-only')) {
  console.log(JSON.stringify(await cycles(), null, 2));
  process.exit(0);
}
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
