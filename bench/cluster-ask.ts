/**
 * An ask across processes (worker → its main thread → TCP process link →
 * the other main thread → worker, and back) against an ask across threads of
 * one process, side by side in one run: two worker pools in this process,
 * linked by two ProcessLinks on loopback exactly as two cluster members are.
 *
 *   node --import tsx bench/cluster-ask.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { execSync } from 'node:child_process';
import { WorkerPool } from 'svc/transports/worker';
import { ProcessLinks } from '../cluster/link.ts';

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
  const at = (p: number) => Math.round(samples[Math.min(samples.length - 1, Math.floor((p / 100) * samples.length))] as number);
  return { p50_us: at(50), p99_us: at(99), asks_per_second: Math.round(N / seconds) };
}
const results = { cross_thread: await measure('pa/w2'), cross_process: await measure('pb/w1') };
const ratio = +(results.cross_process.p50_us / results.cross_thread.p50_us).toFixed(2);
console.table(results);
console.log({ p50_cross_process_over_cross_thread: ratio });
for (const p of Object.values(pools)) await p.close({ deadlineMs: 1000 });
for (const l of Object.values(links)) await l.close();
const commit = (() => {
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
})();
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const out = new URL(`./results/cluster-ask-${commit}.json`, import.meta.url);
writeFileSync(out, `${JSON.stringify({ date: new Date().toISOString(), commit, node: process.version, machine: { cpus: cpus().length, model: cpus()[0]?.model, memory_gb: Math.round(totalmem() / 2 ** 30) }, asks: N, results, p50_cross_process_over_cross_thread: ratio }, null, 2)}\n`);
console.log(`written ${out.pathname}`);
