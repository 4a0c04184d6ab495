/**
 * The shapes the load harness passes between its parts: a scenario (what a
 * user writes), the prepared plan the load engine runs (every request ready
 * to send, per user), and the result written as `result.json`.
 *
 * `svc bench` = scenario.ts (load, validate, default from OpenAPI, users,
 * spawn targets) → engine.ts (closed or open loop, on generator threads) →
 * result (this file's `BenchResult`) → report.ts (HTML) / compare.ts.
 */

/** One kind of request in a scenario, as the user writes it. */
export interface ScenarioRequest {
  /** Name in the result (default: the walker/function name, or `METHOD path`). */
  name?: string;
  /** A walker: POST /walker/<walker>[/<node id>]. */
  walker?: string;
  /** A function: POST /function/<fn> (its declared method/path when the OpenAPI document says so). */
  function?: string;
  /** Any route instead (with `method`, default GET). */
  path?: string;
  method?: string;
  /** A JSON body (object) or a function making one per request (TypeScript scenarios only). */
  body?: unknown | ((ctx: BodyContext) => unknown);
  headers?: Record<string, string>;
  /** Relative weight (default 1). */
  weight?: number;
  /** Send as a signed-in pool user (default: true when the scenario has users, else false). */
  auth?: boolean;
  /**
   * Spawn at a node from an earlier reply: run `setup` once per user before
   * the load (a walker name and body), take `reports[report].id` of its answer,
   * and send this request to /walker/<walker>/<that id>.
   */
  at?: { setup: string; body?: Record<string, unknown>; report?: number };
}

export interface BodyContext {
  /** The request's number within its generator thread. */
  i: number;
  /** The pool user this request is sent as (index), or -1. */
  user: number;
  /** The generator thread (0-based). */
  thread: number;
  /** A uniform random number in [0, 1). */
  random(): number;
}

/** A WebSocket scenario: K clients on one walker, one of them (or `senders`) sending at a rate; delivery measured. */
export interface WsScenario {
  walker: string;
  clients: number;
  /** Broadcasts (frames sent) per second in total. */
  rate: number;
  /** Fields of each frame (default {}). */
  body?: Record<string, unknown>;
  /** Connect as pool users (needs users) — default false (guest, public walkers). */
  auth?: boolean;
  /** Clients that send, in turn (default 1); every other client listens. */
  senders?: number;
}

/** A scenario file's default export (TypeScript) or its whole content (JSON / TOML). */
export interface Scenario {
  name?: string;
  requests?: ScenarioRequest[];
  /** Users registered and logged in before the load (default 0). */
  users?: number;
  ws?: WsScenario;
  /** Seconds (command-line flags win). */
  duration?: number;
  warmup?: number;
  /** Closed loop: this many connections (default 64). */
  connections?: number;
  /** Open loop: this many requests per second in total (instead of connections). */
  rate?: number;
  /** Load-generator threads (default 1). */
  threads?: number;
}

/** A request ready to send: the engine picks a variant per request, round robin. */
export interface PreparedRequest {
  name: string;
  method: string;
  /** One per pool user (or one when it is not per user): path, headers and body already final. */
  variants: { path: string; headers: Record<string, string>; body?: string; user: number }[];
  weight: number;
  /** When the body is made per request: the scenario module and the request's index in its `requests`. */
  generator?: { module: string; index: number };
}

export interface EnginePlan {
  /** http://host:port — the target origin. */
  origin: string;
  requests: PreparedRequest[];
  mode: 'closed' | 'open';
  /** Closed loop: connections in total; open loop: the most connections opened (default 256). */
  connections: number;
  /** Open loop: requests per second in total. */
  rate?: number;
  duration_s: number;
  warmup_s: number;
  threads: number;
  /**
   * Per-request timeout (ms): counted as an error `timeout`. Default: the run's duration, within
   * 1,000 … 30,000 (a request outlasting the whole run is a timeout).
   */
  timeout_ms?: number;
}

/** Latency summary in milliseconds (from an HDR histogram recorded in microseconds). */
export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  min: number;
  mean: number;
  stdev: number;
}

export interface ErrorSummary {
  /** Requests that did not end with a 2xx/3xx answer. */
  total: number;
  /** Answers by status code, every status ("200": n, "503": m). */
  by_status: Record<string, number>;
  /** Error codes read from non-2xx envelopes (`error.code`), plus `socket`, `timeout`, `protocol` (an answer that is not HTTP) and `dropped` (open loop: over the backlog cap; never sent, so not in `total`). */
  by_code: Record<string, number>;
}

/** One second of the measured run. */
export interface TimelinePoint {
  /** Seconds since the measured part began (end of the second). */
  t: number;
  rps: number;
  errors: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** Open loop: requests due but not yet sent at the end of that second. */
  backlog?: number;
}

export interface BenchResult {
  format: 'svc-bench/1';
  at: string;
  target: { url: string; entry?: string };
  scenario: {
    name: string;
    mode: 'closed' | 'open';
    connections: number;
    rate?: number;
    duration_s: number;
    warmup_s: number;
    threads: number;
    users: number;
    requests: { name: string; method: string; path: string; weight: number }[];
  };
  machine: Record<string, unknown>;
  /**
   * `requests`: requests sent that ended in the measured part (answered, or failed on the wire) —
   * never `dropped` ones (open loop), which were never sent. `in_flight_at_end`: requests still
   * waiting for their answer when the run ended, younger than the timeout (older ones count as
   * `timeout` errors); counted in neither `requests` nor `errors`.
   */
  throughput: { rps: number; requests: number; in_flight_at_end?: number };
  latency_ms: LatencySummary;
  errors: ErrorSummary;
  /** Open loop only: whether the target kept up with the asked rate. */
  open_loop?: {
    target_rps: number;
    achieved_rps: number;
    kept_up: boolean;
    backlog_max: number;
    backlog_end: number;
    /** Requests never sent: due while the backlog was full (also `errors.by_code.dropped`, but not in `errors.total`). */
    dropped?: number;
  };
  timeline: TimelinePoint[];
  /** The latency distribution for the percentile plot: [percentile, ms] pairs (0 … 99.999, and 100: the max). */
  percentiles: [number, number][];
  /** The whole latency histogram (µs), HDR-encoded (base64), for compare. */
  histogram: string;
  per_request: Record<string, { requests: number; rps: number; latency_ms: LatencySummary; errors: ErrorSummary }>;
  ws?: {
    walker: string;
    clients: number;
    rate: number;
    sent: number;
    /** Deliveries expected (sent × receiving clients) and received. */
    expected: number;
    delivered: number;
    delivery_ratio: number;
    latency_ms: LatencySummary;
    /** Frames answered with an error (by `error.code`) or not sent (`closed`: the sender's connection was gone). */
    errors?: Record<string, number>;
  };
  /** With an admin token: `/admin/stats` before and after, and counters read from `/metrics`. */
  server?: { stats_before?: unknown; stats_after?: unknown; metrics?: Record<string, number> };
}
