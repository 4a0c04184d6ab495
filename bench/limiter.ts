/**
 * Rate-limiter memory: heap held by the login limiter's windows as distinct
 * keys pour in (each a 320-character identity, the longest the routes take),
 * with the default cap (`rate_limit_max_keys`, 50,000) against an uncapped
 * table (what the limiter held before the cap). Heap is measured after a
 * full GC.
 *
 *   node --expose-gc --import tsx bench/limiter.ts
 */
import { ActorSystem } from '../kernel/index.ts';
import { ActorRateLimiter } from '../actors/identity/index.ts';
import { machine, round, save } from './lib.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function heapMiB(): number {
  gc?.();
  gc?.();
  return round(process.memoryUsage().heapUsed / 2 ** 20, 1);
}

async function run(maxKeys: number): Promise<Record<string, number>> {
  const system = new ActorSystem();
  const limiter = new ActorRateLimiter(system, { placement: (_k, nodes) => nodes[0] as string, maxKeys });
  const out: Record<string, number> = { keys_0: heapMiB() };
  let sent = 0;
  for (const target of [25_000, 50_000, 100_000, 200_000]) {
    for (; sent < target; sent++) await limiter.hit(`login:id:${String(sent).padStart(320, 'x')}`, 10, 900_000);
    out[`keys_${target}`] = heapMiB();
  }
  out.windows_kept = await limiter.size();
  await system.shutdown();
  return out;
}

const capped = await run(50_000);
const uncapped = await run(Number.MAX_SAFE_INTEGER);
const result = {
  bench: 'limiter',
  at: new Date().toISOString(),
  machine: machine(),
  unit: 'heap MiB after a full GC, by distinct keys hit (320-character identities)',
  results: {
    capped_default_50k: capped,
    uncapped: uncapped,
    growth_100k_to_200k_mib: { capped: round((capped.keys_200000 ?? 0) - (capped.keys_100000 ?? 0), 1), uncapped: round((uncapped.keys_200000 ?? 0) - (uncapped.keys_100000 ?? 0), 1) },
  },
};
console.table({ capped, uncapped });
console.log(`saved ${save('limiter', result)}`);
