/**
 * The load engine: runs an `EnginePlan` on generator threads
 * (engine-worker.ts) and merges what they report — a timeline point and a
 * progress call per second, then the run's latencies, errors and
 * throughput. Assembling the whole `BenchResult` (target, machine,
 * scenario) is run.ts's business.
 *
 * Generator threads even for `threads: 1`: the main thread stays free for
 * progress output, and the same generator on the main thread did no better
 * (42k against 44k req/s, back to back).
 *
 * Figures (2 cores; bench/fixtures/raw-uws.mjs on core 0, the load on core
 * 1; 64 connections, 5 s): POST /walker/Echo, 57–61k req/s where wrk does
 * 58–63k (the server is the limit); its GET / (cheaper), 71–74k where wrk
 * does 80–99k: one generator thread tops out there, the write syscall being
 * half of its time.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { createHistogram, decodeHistogram, encodeHistogram, percentileSeries, summarize, type Histogram } from './histogram.ts';
import type { MainMessage, ThreadMessage, ThreadPlan } from './engine-messages.ts';
import { BenchError } from './scenario.ts';
import type { BenchResult, EnginePlan, ErrorSummary } from './types.ts';

/**
 * What a load run gives `BenchResult`, over the measured part:
 * - `throughput.requests`: every request sent that ended in it — answers of
 *   any status, and failures on the wire (`errors.total` of them); `rps`
 *   divides by the time it really lasted. Never the `dropped` ones.
 * - `throughput.in_flight_at_end`: requests still unanswered at the end but
 *   younger than the timeout (the older ones are `timeout` errors).
 * - `errors.by_code`: the envelope codes of error answers, plus `socket`
 *   (reset, closed mid-answer, refused connection — under the request meant
 *   for that connection), `timeout`, `protocol` (an answer that is not
 *   HTTP/1.1) and `dropped` (open loop, backlog full: never sent, so not in
 *   `errors.total` nor `throughput`; also `open_loop.dropped`).
 * - latencies: answers only, from the send (closed loop) or from when the
 *   request was due (open loop, so a server falling behind shows).
 * - `threads`: the generator threads really used — the plan's, capped at the
 *   connections and at 2 × the cores (`os.availableParallelism()`).
 *   (Optional in the type only so outcomes built elsewhere need not say it; `runLoad` always does.)
 */
export type LoadOutcome = Pick<BenchResult, 'throughput' | 'latency_ms' | 'errors' | 'open_loop' | 'timeline' | 'percentiles' | 'histogram' | 'per_request'> & {
  threads?: number;
};

/** Once a second: `t` is seconds since the measured part began (≤ 0 while warming up). */
export interface LoadProgress {
  t: number;
  rps: number;
  errors: number;
  p99_ms: number;
  /** Open loop: requests due but not yet sent. */
  backlog?: number;
}

export interface LoadOptions {
  onProgress?(p: LoadProgress): void;
  /** Aborting closes every socket and thread and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Per-request timeout by default: the run's duration, within 1 … 30 s. */
export const defaultTimeoutMs = (duration_s: number): number => Math.min(30_000, Math.max(1_000, duration_s * 1000));
const DEFAULT_OPEN_CONNECTIONS = 256;
/** Open loop: most requests waiting for a connection, over all threads; the rest are dropped. */
const BACKLOG_CAP = 1_000_000;

// The worker is TypeScript, as are generator modules: each thread registers tsx itself (ESM and
// CommonJS scopes alike), since hooks registered with tsx/esm/api in this thread (bin/svc.mjs) do
// not reach workers, and `--import tsx` inherited through execArgv does not cover a worker's entry.
const BOOT = `Promise.all([import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}), import(${JSON.stringify(import.meta.resolve('tsx/cjs/api'))})])
  .then(([esm, cjs]) => { esm.register(); cjs.register(); return import(${JSON.stringify(new URL('./engine-worker.ts', import.meta.url).href)}); })`;

/**
 * Run the load of `plan`: warm-up, then `duration_s` measured.
 * Rejects with a `BenchError` when the plan is unusable (exit code 2), the
 * target cannot be reached or a thread fails (1), and with the signal's
 * reason on abort.
 * @example
 * const out = await runLoad({ origin: 'http://127.0.0.1:8000', requests, mode: 'closed', connections: 64, duration_s: 10, warmup_s: 2, threads: 1 },
 *   { onProgress: (p) => console.log(p.t, p.rps) });
 * console.log(out.throughput.rps, out.latency_ms.p99);
 */
export async function runLoad(plan: EnginePlan, opts: LoadOptions = {}): Promise<LoadOutcome> {
  const plans = split(plan);
  opts.signal?.throwIfAborted();
  const threads = plans.length;
  const workers: Worker[] = [];
  const finals: Extract<ThreadMessage, { type: 'final' }>[] = [];
  const ticks = new Map<number, { parts: number; t: number; span_s: number; requests: number; errors: number; backlog: number; histogram: Histogram }>();
  const timeline: LoadOutcome['timeline'] = [];
  let ready = 0;

  return new Promise<LoadOutcome>((resolve, reject) => {
    let settled = false;
    const lateExits: NodeJS.Timeout[] = [];
    const finish = (error: unknown, outcome?: LoadOutcome): void => {
      if (settled) return;
      settled = true;
      for (const late of lateExits) clearTimeout(late);
      opts.signal?.removeEventListener('abort', onAbort);
      // A finished thread has closed its sockets; terminate() also covers aborts and failures.
      Promise.all(workers.map((w) => w.terminate())).then(() => (error === undefined ? resolve(outcome as LoadOutcome) : reject(error)), reject);
    };
    const onAbort = (): void => finish(opts.signal?.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    const onTick = (m: Extract<ThreadMessage, { type: 'tick' }>): void => {
      let tick = ticks.get(m.index);
      if (!tick) ticks.set(m.index, (tick = { parts: 0, t: m.t, span_s: 0, requests: 0, errors: 0, backlog: 0, histogram: createHistogram() }));
      tick.parts++;
      tick.span_s += m.span_s / threads;
      tick.requests += m.requests;
      tick.errors += m.errors;
      tick.backlog += m.backlog;
      tick.histogram.add(decodeHistogram(m.histogram));
      if (tick.parts < threads) return;
      ticks.delete(m.index);
      const latency = summarize(tick.histogram);
      const rps = round1(tick.requests / tick.span_s);
      const backlog = plan.mode === 'open' ? { backlog: tick.backlog } : {};
      if (tick.t > 0) timeline.push({ t: tick.t, rps, errors: tick.errors, p50_ms: latency.p50, p99_ms: latency.p99, max_ms: latency.max, ...backlog });
      opts.onProgress?.({ t: tick.t, rps, errors: tick.errors, p99_ms: latency.p99, ...backlog });
    };

    plans.forEach((threadPlan, i) => {
      const worker = new Worker(BOOT, { eval: true, workerData: { svcBench: threadPlan } });
      workers.push(worker);
      worker.on('message', (m: ThreadMessage) => {
        try {
          if (m.type === 'ready') {
            if (++ready === threads) for (const w of workers) w.postMessage({ type: 'start' } satisfies MainMessage);
          } else if (m.type === 'tick') onTick(m);
          else if (m.type === 'final') {
            finals[i] = m;
            if (finals.filter(Boolean).length === threads) finish(undefined, { ...outcome(plan, finals, timeline), threads });
          } else finish(new BenchError(m.message));
        } catch (error) {
          finish(error);
        }
      });
      worker.on('error', (error) => finish(new BenchError(`generator thread ${i} failed: ${error.message}`, 1, { cause: error })));
      worker.on('exit', (code) => {
        if (finals[i]) return;
        // A thread that ended well may still have its last message on the way (its 'exit' can be heard first): give it a moment.
        const late = setTimeout(() => finish(new BenchError(`generator thread ${i} exited (${code}) before the end`)), code === 0 ? 1000 : 0);
        late.unref();
        lateExits.push(late);
      });
    });
  });
}

/**
 * The generator threads a run really uses: the ones asked (default 1), at most one per connection
 * (each needs one of its own) and 2 per core (more only contend).
 * @example threadsFor(8, 4) // 4
 */
export function threadsFor(asked: number | undefined, connections: number): number {
  return Math.max(1, Math.min(Math.floor(asked || 1), connections, 2 * availableParallelism()));
}

/** Each thread's share of the plan, after checking the plan. */
function split(plan: EnginePlan): ThreadPlan[] {
  let url: URL;
  try {
    url = new URL(plan.origin);
  } catch {
    throw new BenchError(`${plan.origin} is not a URL`, 2);
  }
  if (url.protocol !== 'http:') throw new BenchError(`${plan.origin}: svc bench speaks http only; point it at the server itself`, 2);
  if (plan.requests.length === 0 || plan.requests.every((r) => !(r.weight > 0))) throw new BenchError('no request to send (or every weight is 0)', 2);
  for (const r of plan.requests) if (r.variants.length === 0) throw new BenchError(`request ${r.name} has no variant`, 2);
  if (!(plan.duration_s > 0)) throw new BenchError('duration_s must be > 0', 2);
  if (plan.mode === 'open' && !(plan.rate! > 0)) throw new BenchError('the open loop needs a rate > 0', 2);
  const connections = plan.connections > 0 ? Math.floor(plan.connections) : plan.mode === 'open' ? DEFAULT_OPEN_CONNECTIONS : 0;
  if (connections < 1) throw new BenchError('connections must be ≥ 1', 2);
  const threads = threadsFor(plan.threads, connections);
  return Array.from({ length: threads }, (_, thread) => ({
    thread,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || 80),
    hostHeader: url.host,
    requests: plan.requests,
    mode: plan.mode,
    connections: Math.floor(connections / threads) + (thread < connections % threads ? 1 : 0),
    rate: plan.mode === 'open' ? (plan.rate as number) / threads : 0,
    phase_ms: plan.mode === 'open' ? (thread * 1000) / (plan.rate as number) : 0,
    warmup_s: Math.max(0, plan.warmup_s || 0),
    duration_s: plan.duration_s,
    timeout_ms: plan.timeout_ms !== undefined && plan.timeout_ms > 0 ? plan.timeout_ms : defaultTimeoutMs(plan.duration_s),
    backlog_cap: Math.ceil(BACKLOG_CAP / threads),
  }));
}

const round1 = (n: number): number => Math.round(n * 10) / 10;

function add(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
}

/** The threads' final tallies merged: per request name, then over all. */
function outcome(plan: EnginePlan, finals: Extract<ThreadMessage, { type: 'final' }>[], timeline: LoadOutcome['timeline']): LoadOutcome {
  const named = new Map<string, { requests: number; errors: ErrorSummary; histogram: Histogram }>();
  const all = { requests: 0, errors: { total: 0, by_status: {}, by_code: {} } as ErrorSummary, histogram: createHistogram() };
  let backlogMax = 0;
  let backlogEnd = 0;
  let dropped = 0;
  let inFlight = 0;
  for (const final of finals) {
    final.requests.forEach((t, r) => {
      const name = plan.requests[r]!.name;
      let n = named.get(name);
      if (!n) named.set(name, (n = { requests: 0, errors: { total: 0, by_status: {}, by_code: {} }, histogram: createHistogram() }));
      const h = decodeHistogram(t.histogram);
      for (const into of [n, all]) {
        into.requests += t.requests;
        into.errors.total += t.errors;
        add(into.errors.by_status, t.by_status);
        add(into.errors.by_code, t.by_code);
        into.histogram.add(h);
      }
    });
    // Dropped requests were never sent: counted by code only, not as requests or errors.
    for (const [code, n] of Object.entries(final.other)) {
      if (code === 'dropped') dropped += n;
      else {
        all.requests += n;
        all.errors.total += n;
      }
    }
    add(all.errors.by_code, final.other);
    inFlight += final.in_flight_end;
    backlogMax += final.backlog_max;
    backlogEnd += final.backlog_end;
  }
  // The measured time as it really went (timers can fire late on a busy thread), over the threads.
  const seconds = finals.reduce((sum, f) => sum + f.measured_s, 0) / finals.length;
  const out: LoadOutcome = {
    throughput: { rps: round1(all.requests / seconds), requests: all.requests, in_flight_at_end: inFlight },
    latency_ms: summarize(all.histogram),
    errors: all.errors,
    timeline,
    percentiles: percentileSeries(all.histogram),
    histogram: encodeHistogram(all.histogram),
    per_request: Object.fromEntries(
      [...named].map(([name, n]) => [name, { requests: n.requests, rps: round1(n.requests / seconds), latency_ms: summarize(n.histogram), errors: n.errors }]),
    ),
  };
  if (plan.mode === 'open') {
    const target = plan.rate as number;
    const answered = Object.values(all.errors.by_status).reduce((a, b) => a + b, 0);
    const achieved = round1(answered / seconds);
    // Kept up: answered at ≥ 98% of the asked rate, nothing dropped, and at the end no more than
    // 10 ms of the schedule (rate / 100 requests) still waiting for a connection.
    const keptUp = achieved >= 0.98 * target && backlogEnd <= target / 100 && dropped === 0;
    // backlog_max adds each thread's largest backlog (their peaks may not coincide: an upper bound).
    out.open_loop = { target_rps: target, achieved_rps: achieved, kept_up: keptUp, backlog_max: backlogMax, backlog_end: backlogEnd, dropped };
  }
  return out;
}
