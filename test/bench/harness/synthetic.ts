/**
 * Synthetic `BenchResult`s for the report and compare tests: plausible
 * per-second timelines, percentiles and per-request figures drawn from a
 * seeded PRNG, so the same options always give the same result.
 */
import type { BenchResult, ErrorSummary, LatencySummary, TimelinePoint } from '../../../bench/harness/index.ts';

export interface SyntheticOptions {
  /** Mean requests per second (default 10,000). */
  rps?: number;
  /** Relative per-second noise (standard deviation / mean, default 0.03). */
  noise?: number;
  /** Median latency in ms (default 5); the tail scales with it. */
  latencyMs?: number;
  /** Measured seconds (default 30). */
  seconds?: number;
  /** PRNG seed (default 1). */
  seed?: number;
  /** Share of requests that fail (default 0), spread over `503` / `OVERLOADED`. */
  errorRate?: number;
  /** Request names and weights (default one `list` request). */
  requests?: { name: string; weight?: number }[];
  /** Open loop at this rate (default closed loop, 64 connections). */
  rate?: number;
  url?: string;
  /** Add a `ws` section. */
  ws?: boolean;
  /** Add a `server` section. */
  server?: boolean;
}

/**
 * mulberry32: small, fast, good enough for test data.
 *
 * @example
 * const random = prng(42); random(); // the same number in [0, 1) every time
 */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** A standard normal draw (Box–Muller). */
function gauss(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/**
 * Latency at percentile `p` (0 … 100): a floor plus an exponential tail, shaped
 * so that the median is `p50` (p99 ≈ 3.8 × p50, p99.9 ≈ 5.5 × p50).
 */
function quantile(p50: number, p: number): number {
  const tail = (0.5 * p50) / Math.LN2;
  return 0.5 * p50 + tail * -Math.log(Math.max(1e-9, 1 - p / 100));
}

function summary(p50: number, max: number): LatencySummary {
  return {
    p50: round(quantile(p50, 50)),
    p90: round(quantile(p50, 90)),
    p99: round(quantile(p50, 99)),
    p999: round(quantile(p50, 99.9)),
    max: round(max),
    min: round(0.5 * p50),
    mean: round(0.5 * p50 + (0.5 * p50) / Math.LN2),
    stdev: round((0.5 * p50) / Math.LN2),
  };
}

const ZERO: LatencySummary = { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, min: 0, mean: 0, stdev: 0 };

function errorsOf(requests: number, errorRate: number): ErrorSummary {
  const failed = Math.round(requests * errorRate);
  const by_status: Record<string, number> = requests > 0 ? { '200': requests - failed } : {};
  const by_code: Record<string, number> = {};
  if (failed > 0) {
    by_status['503'] = failed;
    by_code.OVERLOADED = failed;
  }
  return { total: failed, by_status, by_code };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * A plausible result of one run: per-second rps around `rps` (relative noise
 * `noise`), per-second p50/p99 around the latency scale (p99 twice as noisy).
 *
 * @example
 * const a = syntheticResult({ seed: 1 });
 * const b = syntheticResult({ seed: 2, rps: 5000, latencyMs: 10 }); // a 2x slowdown
 */
export function syntheticResult(options: SyntheticOptions = {}): BenchResult {
  const { rps = 10_000, noise = 0.03, latencyMs = 5, seconds = 30, seed = 1, errorRate = 0 } = options;
  const random = prng(seed);
  const timeline: TimelinePoint[] = [];
  let requests = 0;
  let max = 0;
  for (let t = 1; t <= seconds; t++) {
    const n = Math.max(0, Math.round(rps * (1 + noise * gauss(random))));
    const p50 = latencyMs * Math.exp(noise * gauss(random));
    const p99 = quantile(latencyMs, 99) * Math.exp(2 * noise * gauss(random));
    const secondMax = p99 * (1.5 + random());
    max = Math.max(max, secondMax);
    requests += n;
    const point: TimelinePoint = { t, rps: n, errors: Math.round(n * errorRate), p50_ms: round(p50), p99_ms: round(p99), max_ms: round(secondMax) };
    if (options.rate !== undefined) point.backlog = Math.round(random() * 20);
    timeline.push(point);
  }
  const meanRps = seconds > 0 ? requests / seconds : 0;
  const named = options.requests ?? [{ name: 'list' }];
  const totalWeight = named.reduce((sum, r) => sum + (r.weight ?? 1), 0);
  const per_request: BenchResult['per_request'] = {};
  for (const r of named) {
    const share = (r.weight ?? 1) / totalWeight;
    const n = Math.round(requests * share);
    per_request[r.name] = { requests: n, rps: round(meanRps * share), latency_ms: n > 0 ? summary(latencyMs, max) : ZERO, errors: errorsOf(n, errorRate) };
  }
  const percentiles: [number, number][] = [];
  for (const p of [0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999]) percentiles.push([p, round(quantile(latencyMs, p))]);
  const result: BenchResult = {
    format: 'svc-bench/1',
    at: new Date(Date.UTC(2025, 0, 1) + seed * 60_000).toISOString(),
    target: { url: options.url ?? 'http://127.0.0.1:8080' },
    scenario: {
      name: 'synthetic',
      mode: options.rate === undefined ? 'closed' : 'open',
      connections: options.rate === undefined ? 64 : 256,
      duration_s: seconds,
      warmup_s: 2,
      threads: 1,
      users: 0,
      requests: named.map((r) => ({ name: r.name, method: 'POST', path: `/walker/${r.name}`, weight: r.weight ?? 1 })),
    },
    machine: { node: 'v20.0.0', platform: 'linux', cpu: 'synthetic', cores: 8 },
    throughput: { rps: round(meanRps), requests },
    latency_ms: requests > 0 ? summary(latencyMs, max) : ZERO,
    errors: errorsOf(requests, errorRate),
    timeline,
    percentiles: requests > 0 ? percentiles : [],
    histogram: '',
    per_request,
  };
  if (options.rate !== undefined) {
    const backlogs = timeline.map((p) => p.backlog ?? 0);
    result.scenario.rate = options.rate;
    result.open_loop = {
      target_rps: options.rate,
      achieved_rps: round(meanRps),
      kept_up: meanRps >= 0.98 * options.rate,
      backlog_max: Math.max(0, ...backlogs),
      backlog_end: backlogs.at(-1) ?? 0,
    };
  }
  if (options.ws) {
    const sent = 10 * seconds;
    result.ws = { walker: 'chat', clients: 50, rate: 10, sent, expected: sent * 49, delivered: sent * 49 - 3, delivery_ratio: round((sent * 49 - 3) / (sent * 49)), latency_ms: summary(latencyMs / 2, latencyMs * 4) };
  }
  if (options.server) {
    result.server = { stats_before: { walkers: 0 }, stats_after: { walkers: requests }, metrics: { svc_http_requests_total: requests } };
  }
  return result;
}
