/**
 * An ask across processes (worker → its main thread → TCP process link →
 * the other main thread → worker, and back) against an ask across threads of
 * one process, side by side in one run: two worker pools in this process,
 * linked by two ProcessLinks on loopback exactly as two cluster members are.
 *
 *   node --import tsx bench/cluster-ask.ts
 */
import { WorkerPool } from '../transports/worker/index.ts';
import { ProcessLinks } from '../transports/link/link.ts';
import { machine, percentile, save } from './lib.ts';

const N = Number(process.env.SVC_BENCH_ASKS ?? 5000);
const module = new URL('./fixtures/cluster-ask-worker.ts', import.meta.url);
const secret = 'bench-secret-bench-secret';

const pools: Record<string, WorkerPool> = {};
const links: Record<string, ProcessLinks> = {};
for (const id of ['pa', 'pb']) {
  links[id] = await ProcessLinks.listen({ processId: id, cluster: 'bench', secret, host: '127.0.0.1', onBytes: (from, to, bytes) => pools[id]?.deliver(to, from, bytes) });
}
for (const [id, other] of [['pa', 'pb'], ['pb', 'pa']] as const) {
  pools[id] = await WorkerPool.start({
    size: 2,
    module,
    processId: id,
    remote: [`${other}/w1`, `${other}/w2`].map((node) => ({ node, app: 'bench' })),
    onRelay: (from, to, bytes) => void links[id]?.send(from, to, bytes),
  });
}
links.pa?.connect('pb', `127.0.0.1:${links.pb?.port}`);
links.pb?.connect('pa', `127.0.0.1:${links.pa?.port}`);

const pinger = (pools.pa as WorkerPool).system.refFromAddress({ node: 'pa/w1', path: '/user/pinger' });
async function measure(node: string): Promise<{ p50_us: number; p99_us: number; asks_per_second: number }> {
  await pinger.ask({ node, n: Math.ceil(N / 10) }, 120_000);
  const start = performance.now();
  const samples = ((await pinger.ask({ node, n: N }, 120_000)) as number[]).sort((a, b) => a - b);
  const seconds = (performance.now() - start) / 1000;
  return { p50_us: Math.round(percentile(samples, 50)), p99_us: Math.round(percentile(samples, 99)), asks_per_second: Math.round(N / seconds) };
}
const results = { cross_thread: await measure('pa/w2'), cross_process: await measure('pb/w1') };
const ratio = +(results.cross_process.p50_us / results.cross_thread.p50_us).toFixed(2);
console.table(results);
console.log({ p50_cross_process_over_cross_thread: ratio });
for (const p of Object.values(pools)) await p.close({ deadlineMs: 1000 });
for (const l of Object.values(links)) await l.close();
console.log(`written ${save('cluster-ask', { date: new Date().toISOString(), machine: machine(), asks: N, results, p50_cross_process_over_cross_thread: ratio })}`);
