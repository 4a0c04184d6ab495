/**
 * `svc bench compare a.json b.json`: which figures moved beyond noise.
 *
 * ## The noise rule
 *
 * A run's summary figures (rps, p99 …) are single numbers; whether a change is
 * real is judged from each run's per-second `timeline`, one sample per second:
 *
 * 1. **Samples.** rps per second (as is); p50 and p99 per second on a log
 *    scale (latency is skewed and changes multiply, so a log shift is a ratio);
 *    error rate per second (errors / requests, seconds with requests only).
 * 2. **Welch's t** between the two runs' sample means, each mean's variance
 *    inflated by (1 + r₁) / (1 − r₁), r₁ the lag-1 autocorrelation clamped to
 *    [0, 0.8]: neighbouring seconds are not independent (GC, drift), and without
 *    this a slow drift looks like many agreeing samples.
 * 3. **Significant** when |t| ≥ 3 (about p < 0.003 for a normal statistic —
 *    strict, because a table of a dozen metrics is a dozen tests), the t agrees
 *    in sign with the change of the summary figure, **and** the summary figure
 *    moved past its floor (b / a beyond 1 + floor or below 1 / (1 + floor), so
 *    up and down weigh the same; the error rate in absolute points).
 * 4. **The floor** is the larger of a fixed one — rps 5 %, p50 10 %, p90 10 %,
 *    p99 20 %, p99.9 30 %, error rate 0.5 points — and the runs' own
 *    **spread**: how far a run's seconds stray from its median (the central
 *    90 %: max(P95 / P50, P50 / P5) − 1, the larger of the two runs). The
 *    t-test only sees noise *within* a run; two runs of the same build also
 *    differ *between* runs (machine load, CPU frequency, the target's JIT
 *    state). A change no larger than what one run's own seconds did (a
 *    neighbour took the CPU for a while) is not evidence. Measured on a shared
 *    2-core machine under heavy load from other work (load average 6–14), 12
 *    ten-second runs of a small HTTP server at two costs per request: of 60
 *    ordered same-build pairs, Welch with the fixed floors alone flagged 12,
 *    with the spread 6 — all of them against the one run caught in a load
 *    spike (p99 6× the others'); of the 28 pairs that really differed 2× in
 *    rps, both caught 12–14. The price: the noisier the machine, the larger a
 *    change must be to be seen — the output shows what each figure needed
 *    ("needs"). A run with stalled seconds (rps 0 in over 5 % of them) has an
 *    unbounded rps spread: its rps is not judged, its latency and errors are.
 * 5. **Borrowed tests.** p90 has no per-second series: it is judged with the
 *    p50 or p99 t that agrees with it in sign (the larger one) and the larger
 *    of their spreads; p99.9 borrows p99's t and spread (the nearest
 *    per-second tail figure).
 * 6. **max is never judged.** It is one request — a single GC pause or
 *    scheduler hiccup — and is shown for information only.
 * 7. **Per request** (names both runs have): rps, p50, p99, error rate. There
 *    is no per-request timeline, so the run-level standard error of the same
 *    metric is scaled by 1/√share (share: the request's fraction of all
 *    requests, the smaller of the two runs) — a request seeing a tenth of the
 *    traffic is judged with √10 × the noise. The run-level spreads apply.
 * 8. **Short runs.** Fewer than 5 seconds in either timeline: only large
 *    changes are judged — the floor of every latency and throughput figure is
 *    at least 50 % (b / a beyond 1.5 or below 1 / 1.5), since a handful of
 *    seconds says little about the noise between runs. Fewer than 2 seconds:
 *    nothing is judged.
 *
 * Verdicts: throughput and latency are `faster` / `slower`, error rate
 * `better` / `worse`, else `same (within noise)`; `not judged` when a
 * timeline has fewer than 2 seconds (nothing was tested).
 */
import type { BenchResult, LatencySummary, TimelinePoint } from './types.ts';

export type Verdict = 'faster' | 'slower' | 'better' | 'worse' | 'same (within noise)' | 'not judged';
export type MetricKey = 'rps' | 'p50' | 'p90' | 'p99' | 'p999' | 'max' | 'error_rate';

export interface MetricComparison {
  key: MetricKey;
  /** Display name: `throughput rps`, `latency p99`, `error rate`, or `<request>: latency p99`. */
  metric: string;
  /** Set on per-request rows. */
  request?: string;
  a: number;
  b: number;
  unit: 'rps' | 'ms' | '%';
  /** (b − a) / a × 100; NaN when a is 0 or a figure is missing. */
  change_pct: number;
  /** The noise statistic (Welch's t, borrowed or scaled — see the rule); NaN when not computed. */
  t: number;
  /** The change needed: relative (0.05 = 5 %), absolute for error rate; the larger of the fixed floor and the runs' spread. */
  floor: number;
  significant: boolean;
  verdict: Verdict;
  /** Why a figure was not judged, or where its t came from. */
  note?: string;
}

export interface CompareOptions {
  /** |t| needed (default 3). */
  t?: number;
  /** Floors: relative change (0.05 = 5 %) for rps and latency, absolute rate for error_rate. */
  floors?: Partial<Record<MetricKey, number>>;
  /** Seconds each timeline needs before anything is judged (default 5). */
  minSeconds?: number;
}

export interface Comparison {
  a: RunLabel;
  b: RunLabel;
  metrics: MetricComparison[];
  /** One line per significant change for the worse, e.g. `throughput rps 10000 → 5000 rps (-50.0%)`. */
  regressions: string[];
  improvements: string[];
  /** Warnings: different modes, connections, targets, short runs. */
  notes: string[];
  rule: { t: number; floors: Record<MetricKey, number>; minSeconds: number };
}

export interface RunLabel {
  at: string;
  target: string;
  scenario: string;
  seconds: number;
}

/**
 * The fixed floors: relative for rps and latency, absolute for the error rate (max: never judged).
 *
 * @example
 * compareResults(a, b, { floors: { ...DEFAULT_FLOORS, rps: 0.02 } }); // a quiet, dedicated machine
 */
export const DEFAULT_FLOORS: Readonly<Record<MetricKey, number>> = {
  rps: 0.05,
  p50: 0.1,
  p90: 0.1,
  p99: 0.2,
  p999: 0.3,
  max: Infinity,
  error_rate: 0.005,
};

const NAMES: Record<MetricKey, string> = {
  rps: 'throughput rps',
  p50: 'latency p50',
  p90: 'latency p90',
  p99: 'latency p99',
  p999: 'latency p99.9',
  max: 'latency max',
  error_rate: 'error rate',
};

/** A sample mean with its variance, autocorrelation-corrected. */
interface MeanEstimate {
  n: number;
  mean: number;
  varMean: number;
}

function estimate(xs: number[]): MeanEstimate {
  const n = xs.length;
  if (n < 2) return { n, mean: n ? (xs[0] as number) : NaN, varMean: NaN };
  const mean = xs.reduce((s, x) => s + x, 0) / n;
  let ss = 0;
  let lag = 0;
  for (let i = 0; i < n; i++) {
    const d = (xs[i] as number) - mean;
    ss += d * d;
    if (i + 1 < n) lag += d * ((xs[i + 1] as number) - mean);
  }
  const r1 = ss > 0 ? Math.min(0.8, Math.max(0, lag / ss)) : 0;
  return { n, mean, varMean: (ss / (n - 1) / n) * ((1 + r1) / (1 - r1)) };
}

/**
 * Welch's t of b's mean over a's, each mean's variance inflated for lag-1
 * autocorrelation; and the standard error of the difference.
 *
 * @example
 * welch([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]).t; // ≈ 3.27 (5 / 1.53: a trend, r₁ = 0.4)
 */
export function welch(a: number[], b: number[]): { t: number; se: number; meanA: number; meanB: number } {
  const ea = estimate(a);
  const eb = estimate(b);
  const se = Math.sqrt(ea.varMean + eb.varMean);
  const diff = eb.mean - ea.mean;
  let t: number;
  if (Number.isNaN(se) || Number.isNaN(diff)) t = NaN;
  else if (se === 0) t = diff === 0 ? 0 : Math.sign(diff) * Infinity;
  else t = diff / se;
  return { t, se, meanA: ea.mean, meanB: eb.mean };
}

const positive = (x: number) => Number.isFinite(x) && x > 0;

function samples(timeline: TimelinePoint[], key: 'rps' | 'p50' | 'p99' | 'error_rate'): number[] {
  switch (key) {
    case 'rps':
      return timeline.map((p) => p.rps).filter(Number.isFinite);
    case 'p50':
      return timeline.filter((p) => p.rps > 0 && positive(p.p50_ms)).map((p) => Math.log(p.p50_ms));
    case 'p99':
      return timeline.filter((p) => p.rps > 0 && positive(p.p99_ms)).map((p) => Math.log(p.p99_ms));
    case 'error_rate':
      return timeline.filter((p) => p.rps > 0 && Number.isFinite(p.errors)).map((p) => p.errors / p.rps);
  }
}

function quantile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/**
 * How far a run's seconds stray from its median, from the central 90 %:
 * max(P95 / P50, P50 / P5) − 1 for rps, the same through exp() for latency
 * samples already on a log scale, max(P95 − P50, P50 − P5) for the error rate.
 * 0 with fewer than 2 samples or all equal.
 *
 * @example
 * spread([1000, 1100, 900, 1000, 500], 'linear'); // 1: one second at half the median
 */
export function spread(xs: number[], scale: 'linear' | 'log' | 'absolute'): number {
  const s = [...xs].sort((x, y) => x - y);
  if (s.length < 2 || s[0] === s.at(-1)) return 0;
  const [lo, mid, hi] = [quantile(s, 5), quantile(s, 50), quantile(s, 95)];
  if (scale === 'log') return Math.exp(Math.max(hi - mid, mid - lo)) - 1;
  if (scale === 'absolute') return Math.max(hi - mid, mid - lo);
  return lo > 0 ? Math.max(hi / mid, mid / lo) - 1 : Infinity;
}

/** The run-level test of one per-second metric: t, its standard error in relative units (absolute for error rate), and the runs' spread. */
interface RunTest {
  t: number;
  seRel: number;
  spread: number;
}

function runTest(a: TimelinePoint[], b: TimelinePoint[], key: 'rps' | 'p50' | 'p99' | 'error_rate'): RunTest {
  const sa = samples(a, key);
  const sb = samples(b, key);
  const w = welch(sa, sb);
  // rps is tested on a linear scale: its standard error relative to the mean level; log scales are relative already.
  const seRel = key === 'rps' ? w.se / ((w.meanA + w.meanB) / 2) : w.se;
  const scale = key === 'rps' ? 'linear' : key === 'error_rate' ? 'absolute' : 'log';
  return { t: w.t, seRel, spread: Math.max(spread(sa, scale), spread(sb, scale)) };
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * What makes `x` unusable as a result to compare (the first such field), or undefined when it is one:
 * `timeline` a list of points, `latency_ms` and `throughput` objects, `per_request` entries objects.
 *
 * @example checkResult({ format: 'svc-bench/1', timeline: null }); // 'timeline is not a list'
 */
export function checkResult(x: unknown): string | undefined {
  if (!isObj(x)) return 'not an object';
  if (!Array.isArray(x.timeline)) return `timeline ${x.timeline === undefined ? 'is missing' : 'is not a list'}`;
  const bad = x.timeline.findIndex((p) => !isObj(p));
  if (bad >= 0) return `timeline[${bad}] is not a point`;
  for (const field of ['throughput', 'latency_ms'] as const) if (!isObj(x[field])) return `${field} ${x[field] === undefined ? 'is missing' : 'is not an object'}`;
  if (x.per_request !== undefined) {
    if (!isObj(x.per_request)) return 'per_request is not an object';
    for (const [name, r] of Object.entries(x.per_request)) if (!isObj(r)) return `per_request.${name} is not an object`;
  }
  if (x.scenario !== undefined && !isObj(x.scenario)) return 'scenario is not an object';
  return undefined;
}

function num(x: unknown): number {
  return typeof x === 'number' && Number.isFinite(x) ? x : NaN;
}

function changePct(a: number, b: number): number {
  return a !== 0 && Number.isFinite(a) && Number.isFinite(b) ? ((b - a) / a) * 100 : NaN;
}

function errorRate(errors: number, requests: number): number {
  return requests > 0 ? errors / requests : NaN;
}

function label(r: BenchResult): RunLabel {
  return { at: String(r.at ?? ''), target: String(r.target?.url ?? ''), scenario: String(r.scenario?.name ?? ''), seconds: r.timeline?.length ?? 0 };
}

/**
 * Compare run `a` (the baseline) with run `b`; see the module comment for the noise rule.
 *
 * @example
 * const c = compareResults(JSON.parse(readFileSync('main.json', 'utf8')), JSON.parse(readFileSync('branch.json', 'utf8')));
 * if (c.regressions.length) process.exitCode = 1;
 * console.log(formatComparison(c));
 */
/** The least change a figure needs when a run has fewer than `minSeconds` seconds. */
const SHORT_FLOOR = 0.5;

export function compareResults(a: BenchResult, b: BenchResult, options: CompareOptions = {}): Comparison {
  const T = options.t ?? 3;
  const floors: Record<MetricKey, number> = { ...DEFAULT_FLOORS, ...options.floors };
  const minSeconds = options.minSeconds ?? 5;
  // A malformed result (see checkResult) is read as far as it goes: points that are not objects are skipped.
  const ta = (Array.isArray(a.timeline) ? a.timeline : []).filter(isObj) as unknown as TimelinePoint[];
  const tb = (Array.isArray(b.timeline) ? b.timeline : []).filter(isObj) as unknown as TimelinePoint[];
  const notes = contextNotes(a, b);
  // Short runs (2 to minSeconds − 1 seconds) are judged for large changes only: a floor of SHORT_FLOOR on every figure.
  const short = ta.length < minSeconds || tb.length < minSeconds;
  const judged = ta.length >= 2 && tb.length >= 2;
  if (!judged) notes.push(`fewer than 2 seconds of timeline (a ${ta.length}, b ${tb.length}): nothing judged`);
  else if (short) notes.push(`fewer than ${minSeconds} seconds of timeline (a ${ta.length}, b ${tb.length}): only changes of ${SHORT_FLOOR * 100}% or more are judged`);

  const tests = {
    rps: runTest(ta, tb, 'rps'),
    p50: runTest(ta, tb, 'p50'),
    p99: runTest(ta, tb, 'p99'),
    error_rate: runTest(ta, tb, 'error_rate'),
  };
  const metrics: MetricComparison[] = [];

  const spreadOf = (key: MetricKey): number => {
    if (key === 'p999') return tests.p99.spread;
    if (key === 'p90') return Math.max(tests.p50.spread, tests.p99.spread);
    return key === 'max' ? 0 : tests[key].spread;
  };
  const judge = (key: MetricKey, va: number, vb: number, t: number, extra: { request?: string; note?: string } = {}): void => {
    const change = changePct(va, vb);
    const unit = key === 'rps' ? 'rps' : key === 'error_rate' ? '%' : 'ms';
    const floor = Math.max(floors[key], spreadOf(key), short && key !== 'error_rate' ? SHORT_FLOOR : 0);
    const ratio = va === 0 || vb === 0 ? (va === vb ? 1 : Infinity) : vb / va;
    const moved = key === 'error_rate' ? Math.abs(vb - va) > floor : ratio > 0 && Math.abs(Math.log(ratio)) > Math.log1p(floor);
    const diff = vb - va;
    const significant = judged && key !== 'max' && Number.isFinite(diff) && diff !== 0 && moved && Math.abs(t) >= T && Math.sign(t) === Math.sign(diff);
    const up: Verdict = key === 'rps' ? 'faster' : key === 'error_rate' ? 'worse' : 'slower';
    const down: Verdict = key === 'rps' ? 'slower' : key === 'error_rate' ? 'better' : 'faster';
    const shown = key === 'error_rate' ? { a: va * 100, b: vb * 100 } : { a: va, b: vb };
    const m: MetricComparison = {
      key,
      metric: extra.request === undefined ? NAMES[key] : `${extra.request}: ${NAMES[key]}`,
      a: shown.a,
      b: shown.b,
      unit,
      change_pct: change,
      t,
      floor,
      significant,
      verdict: !judged ? 'not judged' : significant ? (diff > 0 ? up : down) : 'same (within noise)',
    };
    if (extra.request !== undefined) m.request = extra.request;
    if (extra.note !== undefined) m.note = extra.note;
    metrics.push(m);
  };

  const noisy = (['rps', 'p50', 'p99'] as const).filter((key) => tests[key].spread > floors[key]);
  if (noisy.length) {
    const list = noisy.map((key) => `${key} ${Number.isFinite(tests[key].spread) ? `±${Math.round(tests[key].spread * 100)}%` : 'stalls'}`).join(', ');
    notes.push(`the runs' own seconds stray far from their medians (${list}): smaller changes are not judged — a quieter machine helps`);
  }
  const la: Partial<LatencySummary> = a.latency_ms ?? {};
  const lb: Partial<LatencySummary> = b.latency_ms ?? {};
  judge('rps', num(a.throughput?.rps), num(b.throughput?.rps), tests.rps.t);
  judge('p50', num(la.p50), num(lb.p50), tests.p50.t);
  const p90Change = num(lb.p90) - num(la.p90);
  const p90t = [tests.p50.t, tests.p99.t].filter((t) => Math.sign(t) === Math.sign(p90Change)).sort((x, y) => Math.abs(y) - Math.abs(x))[0];
  judge('p90', num(la.p90), num(lb.p90), p90t ?? 0, { note: 'borrows the p50/p99 test' });
  judge('p99', num(la.p99), num(lb.p99), tests.p99.t);
  judge('p999', num(la.p999), num(lb.p999), tests.p99.t, { note: 'borrows the p99 test' });
  judge('max', num(la.max), num(lb.max), NaN, { note: 'never judged: one request' });
  judge('error_rate', errorRate(num(a.errors?.total), num(a.throughput?.requests)), errorRate(num(b.errors?.total), num(b.throughput?.requests)), tests.error_rate.t);

  const totalA = num(a.throughput?.requests);
  const totalB = num(b.throughput?.requests);
  for (const [name, ra] of Object.entries(a.per_request ?? {})) {
    const rb = b.per_request?.[name];
    if (!ra || !rb || typeof ra !== 'object' || typeof rb !== 'object') continue;
    const share = Math.min(ra.requests / totalA, rb.requests / totalB);
    if (!(share > 0)) continue;
    const scale = Math.sqrt(share);
    // Per-request t: the change over the run-level standard error, scaled to this request's share of the traffic.
    const logT = (va: number, vb: number, test: RunTest) => (positive(va) && positive(vb) && test.seRel > 0 ? (Math.log(vb / va) / test.seRel) * scale : NaN);
    judge('rps', num(ra.rps), num(rb.rps), logT(num(ra.rps), num(rb.rps), tests.rps), { request: name });
    judge('p50', num(ra.latency_ms?.p50), num(rb.latency_ms?.p50), logT(num(ra.latency_ms?.p50), num(rb.latency_ms?.p50), tests.p50), { request: name });
    judge('p99', num(ra.latency_ms?.p99), num(rb.latency_ms?.p99), logT(num(ra.latency_ms?.p99), num(rb.latency_ms?.p99), tests.p99), { request: name });
    const ea = errorRate(num(ra.errors?.total), ra.requests);
    const eb = errorRate(num(rb.errors?.total), rb.requests);
    const se = tests.error_rate.seRel / scale;
    judge('error_rate', ea, eb, se > 0 ? (eb - ea) / se : eb === ea ? 0 : Math.sign(eb - ea) * Infinity, { request: name });
  }

  const regressions: string[] = [];
  const improvements: string[] = [];
  for (const m of metrics) {
    if (!m.significant) continue;
    const line = `${m.metric} ${fmt(m.a)} → ${fmt(m.b)} ${m.unit === '%' ? '% of requests' : m.unit} (${change(m)})`;
    (m.verdict === 'slower' || m.verdict === 'worse' ? regressions : improvements).push(line);
  }
  return { a: label(a), b: label(b), metrics, regressions, improvements, notes, rule: { t: T, floors, minSeconds } };
}

function contextNotes(a: BenchResult, b: BenchResult): string[] {
  const notes: string[] = [];
  const sa = a.scenario;
  const sb = b.scenario;
  if (sa?.mode !== sb?.mode) notes.push(`different modes: a ${sa?.mode}, b ${sb?.mode}`);
  else if (sa?.mode === 'closed' && sa.connections !== sb?.connections) notes.push(`different connections: a ${sa.connections}, b ${sb?.connections}`);
  else if (sa?.mode === 'open' && sa.rate !== sb?.rate) notes.push(`different rates: a ${sa.rate}, b ${sb?.rate}`);
  if (sa?.mode === 'open' && sb?.mode === 'open') notes.push('open loop: throughput is set by the rate — compare latency (and whether each kept up)');
  for (const [which, r] of [['a', a], ['b', b]] as const) if (r.open_loop && !r.open_loop.kept_up) notes.push(`${which} did not keep up with its rate (${fmt(r.open_loop.achieved_rps)} of ${fmt(r.open_loop.target_rps)} rps)`);
  if (a.target?.url !== b.target?.url) notes.push(`different targets: a ${a.target?.url}, b ${b.target?.url}`);
  if (sa?.threads !== sb?.threads) notes.push(`different generator threads: a ${sa?.threads}, b ${sb?.threads}`);
  return notes;
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return '—';
  const abs = Math.abs(x);
  if (abs >= 100) return x.toFixed(0);
  if (abs >= 10) return x.toFixed(1);
  if (abs >= 1) return x.toFixed(2);
  return x === 0 ? '0' : x.toPrecision(2);
}

const hundred = (x: number) => +(x * 100).toFixed(2);

/** The change column: per cent, or percentage points for the error rate (its change from 0 has no per cent). */
function change(m: MetricComparison): string {
  if (m.key !== 'error_rate') return pct(m.change_pct);
  const d = m.b - m.a;
  return Number.isFinite(d) ? `${d > 0 ? '+' : ''}${d.toFixed(2)} pt` : '—';
}

function pct(x: number): string {
  return Number.isFinite(x) ? `${x > 0 ? '+' : ''}${x.toFixed(1)}%` : '—';
}

/**
 * A plain-text table for a terminal: metric, a, b, change, t, verdict; then
 * the regressions, improvements, notes and the rule applied.
 *
 * @example
 * console.log(formatComparison(compareResults(a, b)));
 */
export function formatComparison(c: Comparison): string {
  const head = ['metric', 'a', 'b', 'change', 'needs', 't', 'verdict'];
  const unit = (m: MetricComparison) => (m.unit === 'ms' ? ' ms' : m.unit === '%' ? ' %' : '');
  const rows = c.metrics.map((m) => [
    m.metric,
    `${fmt(m.a)}${unit(m)}`,
    `${fmt(m.b)}${unit(m)}`,
    change(m),
    m.key === 'max' ? '—' : m.key === 'error_rate' ? `±${+(m.floor * 100).toPrecision(2)} pt` : `±${+(m.floor * 100).toPrecision(2)}%`,
    Number.isFinite(m.t) ? m.t.toFixed(1) : Number.isNaN(m.t) ? '—' : m.t > 0 ? '+inf' : '-inf',
    m.key === 'max' ? 'not judged' : m.verdict,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  // Text left-aligned, figures right-aligned.
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === 0 || i === 6 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  const out = [
    `a: ${c.a.scenario} ${c.a.target} at ${c.a.at} (${c.a.seconds} s)`,
    `b: ${c.b.scenario} ${c.b.target} at ${c.b.at} (${c.b.seconds} s)`,
    '',
    line(head),
    ...rows.map(line),
    '',
    `regressions: ${c.regressions.length ? '' : 'none'}`,
    ...c.regressions.map((r) => `  ${r}`),
    `improvements: ${c.improvements.length ? '' : 'none'}`,
    ...c.improvements.map((r) => `  ${r}`),
  ];
  if (c.notes.length) out.push('notes:', ...c.notes.map((n) => `  ${n}`));
  const f = c.rule.floors;
  out.push(
    '',
    `beyond noise: |t| ≥ ${c.rule.t} on per-second samples (Welch, autocorrelation-corrected) and a change past "needs": the larger of`,
    `a floor (rps ${hundred(f.rps)}%, p50 ${hundred(f.p50)}%, p90 ${hundred(f.p90)}%, p99 ${hundred(f.p99)}%, p99.9 ${hundred(f.p999)}%, error rate ${hundred(f.error_rate)} points)`,
    `and how far each run's own seconds stray from its median (central 90 %); max is never judged (one request is noise).`,
  );
  return `${out.map((l) => l.trimEnd()).join('\n').replace(/\n+$/, '')}\n`;
}
