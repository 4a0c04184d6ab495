/**
 * How kernel frames should travel between the processes of a cluster,
 * measured side by side in one run: a direct TCP process link (transports/link/link.ts)
 * against Redis pub/sub (a channel per process on one redis-server), both on
 * loopback. Round trips of one small batch (a forwarded request's ask and
 * reply), and one-way throughput of 256-byte batches.
 *
 *   node --import tsx bench/cluster-link.ts
 */
import { Redis } from 'ioredis';
import { ProcessLinks } from '../transports/link/link.ts';
import { startRedis } from '../test/kit/index.ts';
import { machine, percentile, save } from './lib.ts';

const ROUND_TRIPS = Number(process.env.SVC_BENCH_ROUND_TRIPS ?? 5000);
const BATCHES = Number(process.env.SVC_BENCH_BATCHES ?? 100_000);
const payload = new Uint8Array(256).fill(7);

interface Figures {
  rtt_p50_us: number;
  rtt_p99_us: number;
  batches_per_second: number;
}

async function measure(send: (to: 'a' | 'b', bytes: Uint8Array) => void, onReceive: (side: 'a' | 'b', fn: (bytes: Uint8Array) => void) => void): Promise<Figures> {
  // Round trips: a sends, b echoes, a times.
  let waiting: (() => void) | undefined;
  onReceive('b', (bytes) => {
    if (bytes[0] === 1) send('a', bytes);
  });
  let received = 0;
  let allIn: (() => void) | undefined;
  onReceive('a', (bytes) => {
    if (bytes[0] === 1) waiting?.();
    else if (++received === BATCHES) allIn?.();
  });
  const ping = new Uint8Array(64).fill(1);
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIPS; i++) {
    const start = performance.now();
    await new Promise<void>((resolve) => {
      waiting = resolve;
      send('b', ping);
    });
    times.push((performance.now() - start) * 1000);
  }
  times.sort((x, y) => x - y);
  // Throughput: b sends BATCHES one-way batches to a, in bursts of 256 per tick.
  const data = new Uint8Array(payload.length).fill(2);
  const start = performance.now();
  const done = new Promise<void>((resolve) => (allIn = resolve));
  for (let i = 0; i < BATCHES; i += 256) {
    for (let j = i; j < Math.min(BATCHES, i + 256); j++) send('a', data);
    await new Promise((r) => setImmediate(r));
  }
  await done;
  const seconds = (performance.now() - start) / 1000;
  return { rtt_p50_us: Math.round(percentile(times, 50)), rtt_p99_us: Math.round(percentile(times, 99)), batches_per_second: Math.round(BATCHES / seconds) };
}

async function tcp(): Promise<Figures> {
  const handlers: Record<string, (bytes: Uint8Array) => void> = {};
  const make = (id: 'a' | 'b') =>
    ProcessLinks.listen({ processId: id, cluster: 'bench', secret: 'bench-secret', host: '127.0.0.1', onBytes: (_from, _to, bytes) => handlers[id]?.(bytes) });
  const a = await make('a');
  const b = await make('b');
  a.connect('b', `127.0.0.1:${b.port}`);
  b.connect('a', `127.0.0.1:${a.port}`);
  try {
    return await measure(
      (to, bytes) => void (to === 'b' ? a.send('a/w1', 'b/w1', bytes) : b.send('b/w1', 'a/w1', bytes)),
      (side, fn) => (handlers[side] = fn),
    );
  } finally {
    await a.close();
    await b.close();
  }
}

async function redisPubSub(url: string): Promise<Figures> {
  const pub = new Redis(url);
  const subA = new Redis(url);
  const subB = new Redis(url);
  const handlers: Record<string, (bytes: Uint8Array) => void> = {};
  await subA.subscribe('to-a');
  await subB.subscribe('to-b');
  subA.on('messageBuffer', (_c: Buffer, m: Buffer) => handlers.a?.(m));
  subB.on('messageBuffer', (_c: Buffer, m: Buffer) => handlers.b?.(m));
  try {
    return await measure(
      (to, bytes) => void pub.publish(to === 'a' ? 'to-a' : 'to-b', Buffer.from(bytes)),
      (side, fn) => (handlers[side] = fn),
    );
  } finally {
    pub.disconnect();
    subA.disconnect();
    subB.disconnect();
  }
}

const redis = await startRedis();
const results = { tcp_link: await tcp(), redis_pubsub: await redisPubSub(redis.url) };
await redis.stop();
const ratios = {
  rtt_p50_redis_over_tcp: +(results.redis_pubsub.rtt_p50_us / results.tcp_link.rtt_p50_us).toFixed(2),
  throughput_tcp_over_redis: +(results.tcp_link.batches_per_second / results.redis_pubsub.batches_per_second).toFixed(2),
};
console.table(results);
console.log(ratios);
console.log(`written ${save('cluster-link', { date: new Date().toISOString(), machine: machine(), round_trips: ROUND_TRIPS, batches: BATCHES, results, ratios })}`);
