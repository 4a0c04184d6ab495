// compare on real runs of the engine against a real server on 127.0.0.1: two runs of the same
// server are not told apart; the same server made twice as slow is a regression.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compareResults, formatComparison, runLoad, type BenchResult, type EnginePlan } from '../../../bench/harness/index.ts';

/** A server whose every answer costs `delayMs` of waiting (settable while it runs). */
async function server(): Promise<{ origin: string; setDelay(ms: number): void; close(): Promise<void> }> {
  let delay = 0;
  const s: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (delay === 0) answer();
      else setTimeout(answer, delay);
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    setDelay: (ms) => (delay = ms),
    close: () => new Promise((resolve) => s.close(() => resolve())),
  };
}

async function run(origin: string): Promise<BenchResult> {
  const plan: EnginePlan = {
    origin,
    requests: [{ name: 'post', method: 'POST', variants: [{ path: '/x', headers: { 'content-type': 'application/json' }, body: '{}', user: -1 }], weight: 1 }],
    mode: 'closed',
    connections: 8,
    duration_s: 3,
    warmup_s: 1,
    threads: 1,
  };
  const out = await runLoad(plan);
  return {
    format: 'svc-bench/1',
    at: new Date().toISOString(),
    target: { url: origin },
    scenario: { name: 'real', mode: 'closed', connections: 8, duration_s: 3, warmup_s: 1, threads: 1, users: 0, requests: [{ name: 'post', method: 'POST', path: '/x', weight: 1 }] },
    machine: {},
    ...out,
  };
}

t.test('two runs of one server: no regression; the server made 2x slower (and more): a regression', async (t) => {
  const s = await server();
  t.teardown(() => s.close());
  // Each answer waits 4 ms, then 10 ms: with 8 connections that is ≤ 2,000 then ≤ 800 answers a second.
  s.setDelay(4);
  const a = await run(s.origin);
  const again = await run(s.origin);
  s.setDelay(10);
  const slow = await run(s.origin);
  const same = compareResults(a, again);
  // The tails (p90 and beyond) of a 4 ms timer are the machine's, not the server's: another process on these 2 cores
  // doubles them between two runs (a CI run beside other work did). Throughput and the median are the server's.
  const own = same.regressions.filter((l) => /^(post: )?(throughput rps|latency p50|error rate)/.test(l));
  t.same(own, [], `same server twice:\n${formatComparison(same)}`);
  const slower = compareResults(a, slow);
  t.ok(slower.regressions.some((l) => l.startsWith('throughput rps')), `2.5x slower is flagged:\n${formatComparison(slower)}`);
  t.ok(slower.regressions.some((l) => l.startsWith('latency p50')), 'and its p50');
  t.match(formatComparison(slower), /slower/);
});
