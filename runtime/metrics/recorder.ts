/**
 * The hot path's share of the metrics: one call per answered request
 * ({@link HttpRecorder.record}) adds to plain numbers — two map lookups, a
 * bucket search, no allocation once a series exists. prom-client's own
 * `observe` validates and hashes its labels on every call; here that work is
 * done once per scrape, when {@link HttpRecorder.toJSON} hands the series
 * over in prom-client's metric JSON (which `AggregatorRegistry.aggregate`
 * merges across threads and renders).
 */
/** One sample in prom-client's metric JSON (`metricName` on histogram series). */
export interface MetricSample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** One metric in prom-client's JSON form (what `getMetricsAsJSON` gives and `AggregatorRegistry.aggregate` takes). */
export interface MetricJson {
  name: string;
  help: string;
  type: string;
  values: MetricSample[];
  aggregator: string;
}

/** Methods kept as their own label value; anything else is `OTHER` (a client cannot grow the label set). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** One histogram: counts per bucket (not cumulative), sum and count. */
export class Histogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (seconds <= (b[i] as number)) {
        (this.counts as Float64Array)[i]!++;
        return;
      }
    }
  }

  /** Its values in prom-client's JSON (cumulative buckets, `+Inf`, `_sum`, `_count`). */
  values(name: string, labels: Record<string, string | number>): MetricSample[] {
    const out: MetricSample[] = [];
    let acc = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      acc += this.counts[i] as number;
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: this.bounds[i] as number }, value: acc });
    }
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: this.count });
    out.push({ metricName: `${name}_sum`, labels, value: this.sum });
    out.push({ metricName: `${name}_count`, labels, value: this.count });
    return out;
  }
}

interface RouteSeries {
  duration: Histogram;
  /** Requests by status code. */
  statuses: Map<number, number>;
}

/** Requests answered on one thread, by method, route template and status. */
export class HttpRecorder {
  /** route → method → series: no key is built per request. */
  private readonly routes = new Map<string, Map<string, RouteSeries>>();

  constructor(
    readonly namespace: string,
    readonly buckets: readonly number[],
  ) {}

  /** One answered request; `route` is a template or a fixed label, never a raw path. */
  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.routes.get(route);
    if (byMethod === undefined) this.routes.set(route, (byMethod = new Map()));
    const m = METHODS.has(method) ? method : 'OTHER';
    let series = byMethod.get(m);
    if (series === undefined) byMethod.set(m, (series = { duration: new Histogram(this.buckets), statuses: new Map() }));
    series.duration.observe(seconds);
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
  }

  /** `{ns}_http_requests_total` and `{ns}_http_request_duration_seconds` in prom-client's metric JSON. */
  toJSON(): MetricJson[] {
    const ns = this.namespace;
    const total: MetricSample[] = [];
    const duration: MetricSample[] = [];
    for (const [route, byMethod] of this.routes) {
      for (const [method, series] of byMethod) {
        for (const [status, n] of series.statuses) total.push({ labels: { method, path: route, status_code: String(status) }, value: n });
        duration.push(...series.duration.values(`${ns}_http_request_duration_seconds`, { method, path: route }));
      }
    }
    return [
      { name: `${ns}_http_requests_total`, help: 'HTTP requests answered, by method, route template and status code', type: 'counter', values: total, aggregator: 'sum' },
      { name: `${ns}_http_request_duration_seconds`, help: 'HTTP request duration in seconds, by method and route template', type: 'histogram', values: duration, aggregator: 'sum' },
    ];
  }
}

/** Walker and function runs on one thread, by name and outcome (`{ns}_walker_duration_seconds`). */
export class RunRecorder {
  private readonly runs = new Map<string, { ok: Histogram; failed: Histogram }>();

  constructor(
    readonly namespace: string,
    readonly buckets: readonly number[],
  ) {}

  record(name: string, ok: boolean, seconds: number): void {
    let entry = this.runs.get(name);
    if (entry === undefined) this.runs.set(name, (entry = { ok: new Histogram(this.buckets), failed: new Histogram(this.buckets) }));
    (ok ? entry.ok : entry.failed).observe(seconds);
  }

  toJSON(): MetricJson[] {
    const name = `${this.namespace}_walker_duration_seconds`;
    const values: MetricSample[] = [];
    for (const [walker, { ok, failed }] of this.runs) {
      if (ok.count > 0) values.push(...ok.values(name, { walker_name: walker, success: 'true' }));
      if (failed.count > 0) values.push(...failed.values(name, { walker_name: walker, success: 'false' }));
    }
    return [{ name, help: 'Walker and function run duration in seconds, by name and success', type: 'histogram', values, aggregator: 'sum' }];
  }
}
