/**
 * The scrape: every thread's metric JSON merged with prom-client's
 * `AggregatorRegistry.aggregate` (counters and histograms summed, gauges
 * summed unless they say otherwise), rendered as Prometheus text for
 * `/metrics`, or as the JSON of `GET /admin/metrics`.
 */
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { MetricJson } from './recorder.ts';

/** One metric as `GET /admin/metrics` lists it. */
export interface AdminMetric {
  name: string;
  type: string;
  help: string;
  /** Each sample: its labels and value; `sample` names histogram series (`…_bucket`, `…_sum`, `…_count`). */
  values: { labels: Record<string, string>; value: number; sample?: string }[];
}

/** The figures an admin reads first. */
export interface MetricsSummary {
  total_requests: number;
  /** Mean duration of the answered requests, in milliseconds (0 before the first). */
  avg_latency_ms: number;
  /** Answers with a status ≥ 400 among all answers, in percent. */
  error_rate_percent: number;
  /** Answers with a status ≥ 500 among all answers, in percent. */
  server_error_rate_percent: number;
  active_requests: number;
}

/** The threads' snapshots as one registry. */
export function merge(snapshots: MetricJson[][]): Registry {
  return AggregatorRegistry.aggregate(snapshots as never) as unknown as Registry;
}

/** Prometheus text of the merged snapshots, with its content type. */
export async function renderMetrics(snapshots: MetricJson[][]): Promise<{ text: string; contentType: string }> {
  const registry = merge(snapshots);
  return { text: await registry.metrics(), contentType: registry.contentType };
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/** `GET /admin/metrics`: every metric with its samples, and the summary. */
export async function adminMetrics(snapshots: MetricJson[][], namespace: string): Promise<{ metrics: AdminMetric[]; summary: MetricsSummary }> {
  const merged = (await merge(snapshots).getMetricsAsJSON()) as unknown as MetricJson[];
  const metrics: AdminMetric[] = merged.map((m) => ({
    name: m.name,
    type: String(m.type),
    help: m.help,
    // JSON has no NaN or Infinity (prom-client's event-loop mean is NaN before its first sample): such samples are left out.
    values: m.values.filter((v) => Number.isFinite(v.value)).map((v) => {
      // Label values are text, as in the exposition (`le` too: `"0.005"`, `"+Inf"`).
      const labels = Object.fromEntries(Object.entries(v.labels).map(([k, x]) => [k, String(x)]));
      return v.metricName === undefined ? { labels, value: v.value } : { labels, value: v.value, sample: v.metricName };
    }),
  }));
  const byName = new Map(metrics.map((m) => [m.name, m]));
  let total = 0;
  let errors = 0;
  let serverErrors = 0;
  for (const v of byName.get(`${namespace}_http_requests_total`)?.values ?? []) {
    total += v.value;
    const status = Number(v.labels.status_code);
    if (status >= 400) errors += v.value;
    if (status >= 500) serverErrors += v.value;
  }
  let sum = 0;
  let count = 0;
  for (const v of byName.get(`${namespace}_http_request_duration_seconds`)?.values ?? []) {
    if (v.sample?.endsWith('_sum')) sum += v.value;
    else if (v.sample?.endsWith('_count')) count += v.value;
  }
  const active = byName.get(`${namespace}_http_requests_in_progress`)?.values.reduce((a, v) => a + v.value, 0) ?? 0;
  return {
    metrics,
    summary: {
      total_requests: total,
      avg_latency_ms: count === 0 ? 0 : round((sum / count) * 1000, 3),
      error_rate_percent: total === 0 ? 0 : round((errors / total) * 100, 2),
      server_error_rate_percent: total === 0 ? 0 : round((serverErrors / total) * 100, 2),
      active_requests: active,
    },
  };
}
