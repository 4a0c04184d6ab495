// Comparing two bench results: a 2x slowdown is a regression, a 2x speed-up an
// improvement, two runs of the same distribution are the same; the noise rule
// (Welch's t on per-second samples, floors, drift, max never judged) case by case.
import t from 'tap';
import { compareResults, formatComparison, spread, welch, type Comparison } from '../../../bench/harness/compare.ts';
import { syntheticResult, type SyntheticOptions } from './synthetic.ts';
import type { BenchResult } from '../../../bench/harness/types.ts';

const mix = [{ name: 'list', weight: 3 }, { name: 'create' }];
const run = (o: SyntheticOptions = {}) => syntheticResult({ requests: mix, ...o });
const verdict = (c: Comparison, metric: string) => c.metrics.find((m) => m.metric === metric)?.verdict;
const named = (lines: string[], metric: string) => lines.some((l) => l.startsWith(`${metric} `));

t.test('welch: t of the difference, autocorrelation-corrected', async (t) => {
  // A linear trend has r1 = 0.4: each mean's variance is 2.5 / 5 × 1.4 / 0.6.
  const w = welch([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]);
  t.ok(Math.abs(w.t - 5 / Math.sqrt(2 * 0.5 * (1.4 / 0.6))) < 1e-9, `t = ${w.t}`);
  // Alternating samples: negative r1 is clamped to 0 (plain Welch).
  const alt = welch([1, 3, 1, 3, 1, 3], [2, 4, 2, 4, 2, 4]);
  t.ok(Math.abs(alt.t - 1 / Math.sqrt(2 * (1.2 / 6))) < 1e-9, `t = ${alt.t}`);
  t.equal(welch([5, 5, 5], [5, 5, 5]).t, 0, 'no variance, no difference');
  t.equal(welch([0, 0, 0], [1, 1, 1]).t, Infinity, 'no variance, a difference');
  t.ok(Number.isNaN(welch([1], [2]).t), 'one sample is not a test');
});

t.test('spread: how far a run’s seconds stray from its median', async (t) => {
  const oneToTwenty = Array.from({ length: 20 }, (_, i) => 20 - i);
  t.equal(spread(oneToTwenty, 'linear'), 9, 'P5 1, P50 10, P95 19: the median is 10× P5');
  t.equal(spread(oneToTwenty, 'absolute'), 9);
  t.equal(spread(Array(10).fill(7), 'linear'), 0);
  t.equal(spread([5], 'linear'), 0, 'one second: nothing to tell');
  t.equal(spread([0, 0, 5, 5, 5], 'linear'), Infinity, 'stalled seconds: no ratio holds');
  const twice = [...Array(10).fill(0), ...Array(10).fill(Math.log(2))];
  t.ok(Math.abs(spread(twice, 'log') - 1) < 1e-9, 'log scale: twice the latency is 100 %');
});

t.test('the same distribution, different seeds: nothing beyond noise', async (t) => {
  for (let seed = 1; seed <= 20; seed++) {
    const c = compareResults(run({ seed }), run({ seed: seed + 100 }));
    t.same([c.regressions, c.improvements], [[], []], `seeds ${seed} / ${seed + 100}`);
    t.ok(c.metrics.every((m) => m.verdict === 'same (within noise)'));
  }
  const noisy = compareResults(run({ seed: 1, noise: 0.15, seconds: 10 }), run({ seed: 2, noise: 0.15, seconds: 10 }));
  t.same([noisy.regressions, noisy.improvements], [[], []], 'noisy short runs too');
});

t.test('half the rps and double the latency: a regression', async (t) => {
  const c = compareResults(run({ seed: 1 }), run({ seed: 2, rps: 5000, latencyMs: 10 }));
  t.ok(named(c.regressions, 'throughput rps'), 'throughput');
  t.ok(named(c.regressions, 'latency p50'), 'p50');
  t.ok(named(c.regressions, 'latency p99'), 'p99');
  t.ok(named(c.regressions, 'list: latency p99'), 'per request too');
  t.same(c.improvements, []);
  t.equal(verdict(c, 'throughput rps'), 'slower');
  t.equal(verdict(c, 'latency p99'), 'slower');
  t.equal(verdict(c, 'latency max'), 'same (within noise)', 'max is never judged');
  const text = formatComparison(c);
  t.match(text, /throughput rps\s+\d+\s+\d+\s+-\d+\.\d%\s+±[\d.]+%\s+-\d+\.\d\s+slower/);
  t.match(text, /latency p99\s+.*\+100\.0%.*slower/);
  t.match(text, /regressions:\n {2}throughput rps /);
  t.match(text, /max is never judged/);
});

t.test('twice the rps and half the latency: an improvement', async (t) => {
  const c = compareResults(run({ seed: 1 }), run({ seed: 2, rps: 20_000, latencyMs: 2.5 }));
  t.same(c.regressions, []);
  for (const metric of ['throughput rps', 'latency p50', 'latency p90', 'latency p99', 'latency p99.9']) {
    t.ok(named(c.improvements, metric), metric);
    t.equal(verdict(c, metric), 'faster');
  }
  t.match(formatComparison(c), /improvements:\n {2}throughput rps .*\n {2}latency p50/);
});

t.test('a change under the floor is not judged, however many seconds agree', async (t) => {
  // 3 % more rps with 1 % noise over 60 s: t is large, the change is under the 5 % floor.
  const c = compareResults(run({ seed: 1, noise: 0.01, seconds: 60 }), run({ seed: 2, noise: 0.01, seconds: 60, rps: 10_300 }));
  const rps = c.metrics.find((m) => m.metric === 'throughput rps')!;
  t.ok(rps.t > 3, `t = ${rps.t}`);
  t.equal(rps.verdict, 'same (within noise)');
});

t.test('a run whose own seconds stray raises the floor (a busy machine)', async (t) => {
  // The same build: in b a neighbour takes the CPU every other second.
  const busy = (r: BenchResult) => {
    r.timeline.forEach((p, i) => {
      if (i % 2 === 0) return;
      p.rps = Math.round(p.rps * 0.8);
      p.p50_ms *= 1.25;
      p.p99_ms *= 1.25;
    });
    const mean = (pick: (p: BenchResult['timeline'][number]) => number) => r.timeline.reduce((sum, p) => sum + pick(p), 0) / r.timeline.length;
    r.throughput.rps = mean((p) => p.rps);
    r.latency_ms.p50 = mean((p) => p.p50_ms);
    r.latency_ms.p99 = mean((p) => p.p99_ms);
    return r;
  };
  const a = run({ seed: 1, noise: 0.02 });
  const c = compareResults(a, busy(run({ seed: 2, noise: 0.02 })));
  const rps = c.metrics.find((m) => m.metric === 'throughput rps')!;
  t.ok(rps.change_pct < -8 && rps.t <= -3, `Welch and the 5 % floor alone would call it (${rps.change_pct.toFixed(1)}%, t = ${rps.t.toFixed(1)})`);
  t.ok(rps.floor > 0.2, `the floor is b's spread (${rps.floor.toFixed(2)})`);
  t.same([c.regressions, c.improvements], [[], []]);
  t.match(c.notes.join('\n'), /own seconds stray far from their medians \(rps ±\d+%/);
  t.match(formatComparison(c), /throughput rps .*±2\d%/, 'the table shows the floor each figure needed');

  // A 2x slowdown on the same busy machine is still seen.
  const slow = compareResults(a, busy(run({ seed: 3, noise: 0.02, rps: 5000, latencyMs: 10 })));
  t.ok(named(slow.regressions, 'throughput rps'));
  t.ok(named(slow.regressions, 'latency p50'));
});

t.test('an outage: b answered nothing', async (t) => {
  const b = run({ seed: 2 });
  for (const p of b.timeline) p.rps = 0;
  b.throughput = { rps: 0, requests: 0 };
  const c = compareResults(run({ seed: 1 }), b);
  t.ok(named(c.regressions, 'throughput rps'), c.regressions.join('\n'));
  t.doesNotThrow(() => formatComparison(c));
});

t.test('max alone is never a regression', async (t) => {
  const a = run({ seed: 1 });
  const b = run({ seed: 2 });
  b.latency_ms.max = a.latency_ms.max * 10;
  for (const p of b.timeline) p.max_ms *= 10;
  const c = compareResults(a, b);
  t.same(c.regressions, []);
  t.match(formatComparison(c), /latency max .*not judged/);
});

t.test('error rate: worse and better in percentage points', async (t) => {
  const clean = run({ seed: 1 });
  const failing = run({ seed: 2, errorRate: 0.05 });
  const worse = compareResults(clean, failing);
  t.equal(verdict(worse, 'error rate'), 'worse');
  t.ok(worse.regressions.some((l) => l.startsWith('error rate 0 → 5.00 % of requests (+5.00 pt)')), worse.regressions.join('\n'));
  t.equal(verdict(compareResults(failing, clean), 'error rate'), 'better');
  t.equal(verdict(compareResults(clean, run({ seed: 2, errorRate: 0.002 })), 'error rate'), 'same (within noise)', 'under the 0.5-point floor');
});

t.test('per request: only names both runs have', async (t) => {
  const c = compareResults(run({ seed: 1 }), syntheticResult({ seed: 2, requests: [{ name: 'list' }, { name: 'other' }] }));
  const requests = new Set(c.metrics.map((m) => m.request).filter(Boolean));
  t.same([...requests], ['list']);
});

t.test('short or mismatched runs: said in notes; short runs judged for large changes only', async (t) => {
  const halved = compareResults(run({ seed: 1, seconds: 3 }), run({ seed: 2, seconds: 3, rps: 5000, latencyMs: 10 }));
  t.ok(halved.regressions.some((l) => l.startsWith('throughput rps')), `three seconds still show a 2x slowdown: ${halved.regressions.join('; ')}`);
  t.match(halved.notes.join('\n'), /fewer than 5 seconds .*only changes of 50% or more/);
  const slightly = compareResults(run({ seed: 1, seconds: 3 }), run({ seed: 2, seconds: 3, rps: 8000, latencyMs: 6 }));
  t.same(slightly.regressions, [], 'a 20% change in three seconds is not judged');
  for (let seed = 1; seed <= 10; seed++) {
    const same = compareResults(run({ seed, seconds: 3 }), run({ seed: seed + 100, seconds: 3 }));
    t.same([same.regressions, same.improvements], [[], []], `same build, three seconds, seeds ${seed}/${seed + 100}`);
  }
  const tooShort = compareResults(run({ seed: 1, seconds: 1 }), run({ seed: 2, seconds: 1, rps: 5000 }));
  t.same(tooShort.regressions, [], 'one second: nothing judged');
  t.match(tooShort.notes.join('\n'), /fewer than 2 seconds/);
  const mismatch = compareResults(run({ seed: 1 }), run({ seed: 2, rate: 10_000 }));
  t.match(mismatch.notes.join('\n'), /different modes: a closed, b open/);
  t.match(formatComparison(mismatch), /notes:\n {2}different modes/);
});

t.test('empty results compare without throwing', async (t) => {
  const empty = syntheticResult({ seconds: 0 });
  const c = compareResults(empty, empty);
  t.same([c.regressions, c.improvements], [[], []]);
  t.doesNotThrow(() => formatComparison(c));
  t.doesNotThrow(() => formatComparison(compareResults({ format: 'svc-bench/1' } as BenchResult, run())));
});

t.test('under 2 seconds of timeline: every verdict is "not judged"', async (t) => {
  const c = compareResults(run({ seed: 1, seconds: 1 }), run({ seed: 2, seconds: 1, rps: 5000 }));
  t.ok(c.metrics.every((m) => m.verdict === 'not judged'));
  t.same(c.regressions, []);
  t.notMatch(formatComparison(c), /same \(within noise\)/);
});

t.test('a malformed result: one line naming the field, never a TypeError', async (t) => {
  const { readResult } = await import('../../../bench/harness/run.ts');
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'svc-compare-'));
  const good = run({ seed: 1 }) as unknown as Record<string, unknown>;
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['timeline-object', { ...good, timeline: {} }, /not a svc bench result: timeline is not a list/],
    ['timeline-null', { ...good, timeline: [null] }, /not a svc bench result: timeline\[0\] is not a point/],
    ['no-latency', { ...good, latency_ms: undefined }, /not a svc bench result: latency_ms is missing/],
    ['no-throughput', { ...good, throughput: undefined }, /not a svc bench result: throughput is missing/],
  ];
  for (const [name, x, re] of cases) {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(x));
    t.throws(() => readResult(file), { name: 'BenchError', message: re }, name);
  }
  // compareResults itself does not throw on them either.
  t.doesNotThrow(() => compareResults(run({ seed: 1 }), { ...good, timeline: [null, null] } as unknown as BenchResult));
  rmSync(dir, { recursive: true, force: true });
});
