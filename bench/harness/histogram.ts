/**
 * Latency histograms for the load harness: HDR histograms recorded in
 * microseconds (1 µs … 60 s, 3 significant digits), summarised in
 * milliseconds, and encoded as compressed base64 so they cross worker
 * threads and land in `result.json` (where compare can merge or diff them).
 *
 * The pure-JS 32-bit build: it works the same in worker threads (no
 * WebAssembly instance per thread), records in ~70 ns where the packed
 * build takes ~600 ns, and 32-bit counts cannot overflow in a bench.
 */
import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64, type Histogram } from 'hdr-histogram-js';
import type { LatencySummary } from './types.ts';

export type { Histogram };

/** The largest latency kept (µs): longer ones are recorded as 60 s rather than thrown away. */
export const MAX_US = 60_000_000;

/** Percentiles of the plot series: linear to 90, then the tail in decades. */
export const PLOT_PERCENTILES = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.9, 99.99, 99.999, 100] as const;

/**
 * An empty histogram over 1 µs … 60 s.
 * @example const h = createHistogram(); recordUs(h, 1234);
 */
export function createHistogram(): Histogram {
  return build({ lowestDiscernibleValue: 1, highestTrackableValue: MAX_US, numberOfSignificantValueDigits: 3, bitBucketSize: 32, autoResize: false, useWebAssembly: false });
}

/**
 * Record one latency in microseconds, clamped into the histogram's range
 * (a fixed range never throws mid-run and keeps every histogram mergeable).
 * @example recordUs(h, (performance.now() - sentAt) * 1000);
 */
export function recordUs(h: Histogram, us: number): void {
  h.recordValue(us < 1 ? 1 : us > MAX_US ? MAX_US : Math.round(us));
}

const ms = (us: number): number => Math.round(us) / 1000;

/**
 * The summary in milliseconds (all zeros when nothing was recorded).
 * Percentiles are clamped to the max: HDR reports a bucket's upper bound,
 * which can pass the exact max recorded.
 * @example summarize(h).p99
 */
export function summarize(h: Histogram): LatencySummary {
  if (h.totalCount === 0) return { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, min: 0, mean: 0, stdev: 0 };
  const max = h.maxValue;
  const at = (p: number): number => ms(Math.min(h.getValueAtPercentile(p), max));
  return {
    p50: at(50),
    p90: at(90),
    p99: at(99),
    p999: at(99.9),
    max: ms(max),
    min: ms(h.minNonZeroValue),
    mean: ms(h.mean),
    stdev: ms(h.stdDeviation),
  };
}

/**
 * `[percentile, ms]` pairs for the percentile plot (empty when nothing was recorded).
 * @example percentileSeries(h) // [[0, 0.12], [10, 0.2], …, [100, 31.5]]
 */
export function percentileSeries(h: Histogram): [number, number][] {
  if (h.totalCount === 0) return [];
  const max = h.maxValue;
  return PLOT_PERCENTILES.map((p) => [p, ms(p === 100 ? max : Math.min(h.getValueAtPercentile(p), max))]);
}

/**
 * HDR V2 compressed base64 (the format of HdrHistogram's log files).
 * @example const copy = decodeHistogram(encodeHistogram(h));
 */
export function encodeHistogram(h: Histogram): string {
  return encodeIntoCompressedBase64(h);
}

/**
 * A histogram from `encodeHistogram`, ready to merge into one from `createHistogram`.
 * @example total.add(decodeHistogram(part));
 */
export function decodeHistogram(base64: string): Histogram {
  return decodeFromCompressedBase64(base64, 32, false);
}
