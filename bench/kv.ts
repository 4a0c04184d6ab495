/**
 * kvstore('…', 'kv') against the Redis it runs on, in one run on this machine:
 * GET and SET ops/s through kvstore (one shared connection, 50 calls in
 * flight) beside `redis-benchmark` (50 clients, no pipelining: its default)
 * and bare ioredis (the same 50 in flight on one connection) — the goal is
 * ≥ 50% of redis-benchmark. Also a mutex round (acquire + release) rate.
 *
 *   node --import tsx bench/kv.ts        (npm run bench:kv)
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { closeKvstores, kvstore, mutex } from '../actors/data/index.ts';
import { startRedis } from '../test/kit/index.ts';
import { machine, round, save } from './lib.ts';

const N = process.argv.includes('--quick') ? 50_000 : 200_000;
const IN_FLIGHT = 50;

async function rate(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await op(next++);
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

function redisBenchmark(port: number): { get: number; set: number } {
  const out = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '-t', 'get,set', '-n', String(N), '-c', String(IN_FLIGHT), '-q', '--csv'], { encoding: 'utf8' });
  const find = (name: string) => Number(new RegExp(`"${name}","([\\d.]+)"`).exec(out.stdout)?.[1]);
  return { get: find('GET'), set: find('SET') };
}

const redis = await startRedis();
try {
  const kv = kvstore('bench', 'kv', redis.url);
  const raw = new Redis(redis.url);
  const value = 'x'.repeat(3); // redis-benchmark's default payload: 3 bytes
  // Warm up both clients.
  await rate(10_000, (i) => kv.set(`k${i % 1000}`, value));
  await rate(10_000, (i) => raw.set(`bench:k${i % 1000}`, value));
  type Pair = { get: number; set: number };
  const rounds: { redis_benchmark: Pair; ioredis: Pair; kvstore: Pair }[] = [];
  for (let r = 0; r < 3; r++) {
    const bench = redisBenchmark(redis.port);
    const svcSet = await rate(N, (i) => kv.set(`k${i % 10_000}`, value));
    const svcGet = await rate(N, (i) => kv.get(`k${i % 10_000}`));
    const rawSet = await rate(N, (i) => raw.set(`bench:k${i % 10_000}`, value));
    const rawGet = await rate(N, (i) => raw.get(`bench:k${i % 10_000}`));
    rounds.push({ redis_benchmark: bench, ioredis: { set: rawSet, get: rawGet }, kvstore: { set: svcSet, get: svcGet } });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const pick = (f: (r: (typeof rounds)[number]) => number) => round(median(rounds.map(f)), 0);
  const locks = await rate(20_000, async (i) => {
    const lock = await mutex(kv, `m${i % 500}`, { ttlMs: 5_000 });
    await lock.release();
  });
  const result = {
    bench: 'kv',
    date: new Date().toISOString(),
    machine: { ...machine(), redis: spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.trim() },
    ops: N,
    in_flight: IN_FLIGHT,
    ops_per_s: {
      redis_benchmark: { get: pick((r) => r.redis_benchmark.get), set: pick((r) => r.redis_benchmark.set) },
      ioredis: { get: pick((r) => r.ioredis.get), set: pick((r) => r.ioredis.set) },
      kvstore: { get: pick((r) => r.kvstore.get), set: pick((r) => r.kvstore.set) },
    },
    ratio_to_redis_benchmark: {
      get: round(median(rounds.map((r) => r.kvstore.get / r.redis_benchmark.get)), 2),
      set: round(median(rounds.map((r) => r.kvstore.set / r.redis_benchmark.set)), 2),
    },
    ratio_to_ioredis: {
      get: round(median(rounds.map((r) => r.kvstore.get / r.ioredis.get)), 2),
      set: round(median(rounds.map((r) => r.kvstore.set / r.ioredis.set)), 2),
    },
    mutex_acquire_release_per_s: round(locks, 0),
    rounds,
  };
  console.table({
    'redis-benchmark': result.ops_per_s.redis_benchmark,
    ioredis: result.ops_per_s.ioredis,
    kvstore: result.ops_per_s.kvstore,
    'kvstore / redis-benchmark': result.ratio_to_redis_benchmark,
    'kvstore / ioredis': result.ratio_to_ioredis,
  });
  console.log(`mutex acquire+release: ${result.mutex_acquire_release_per_s}/s`);
  console.log(save('kv', result));
  raw.disconnect();
  await closeKvstores();
} finally {
  await redis.stop();
}
