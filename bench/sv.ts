/**
 * Service-to-service benchmark: one real provider process (`svc start
 * test/fixtures/sv/billing.ts --workers 1`), called from this process in a
 * closed loop by C concurrent callers (C = 1 and C = 32), three ways loaded
 * in alternation so that the machine's drift falls on all alike:
 *
 * - `baseline`: a direct undici `Pool.request` POST /function/charge (the same
 *   pool options, body and `x-svc-sv: 1` header as the client, so the
 *   provider does identical work), its JSON parsed and `data.result` taken —
 *   what a hand-written call would do;
 * - `sv`: `SvClient.callFunction('billing', 'charge', { amount: 1 })` with the
 *   default policy (retry → circuit breaker; rpc_timeout as undici's per-attempt timeouts);
 * - `sv_no_policy`: the same client path with the policy swapped for a
 *   pass-through. SvClient has no switch for it, so the bench replaces the
 *   policy of its private provider entry (skipped, with a note, if that
 *   entry is not found). Goal: `sv` at ≥ 0.9x the baseline's calls/s.
 *
 *   npm run bench:sv            (--rounds N, --duration S, --quick)
 *
 * The provider runs one worker thread pinned to core 0; this process (the
 * load, and the client whose overhead is measured) is pinned to core 1. Per
 * scenario and C: the median calls/s, p50/p99 latency and the CPU time per
 * call of this process and of the provider (all threads, from /proc); the
 * ratios are of the medians (each round's own ratios are kept too). Then, in this
 * process, what the policy costs on its own (µs per `execute` of a resolved
 * promise, composed exactly as client.ts does, and each policy alone) and
 * the client's other per-call steps. Writes bench/results/sv-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { circuitBreaker, ConsecutiveBreaker, ExponentialBackoff, handleAll, handleWhen, type IPolicy, noop, retry, timeout, TimeoutStrategy, wrap } from 'cockatiel';
import { Pool } from 'undici';
import { callingRun } from '../actors/walker/index.ts';
import { checkModuleName, encodeBoundary, rehydrate, SV_DEFAULTS, SvClient } from '../transports/sv/index.ts';
import { cpuMicros, freePort, hasTaskset, machine, median, now, nsPerOp, percentile, pinned, type Proc, round, save, serve } from './lib.ts';
import { fixture } from '../test/kit/index.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROUNDS = flag('--rounds', quick ? 3 : 5);
const SECONDS = flag('--duration', quick ? 2 : 5);
const WARMUP_SECONDS = quick ? 1 : 2;
/** Before every measured sample, unrecorded: connections a pool let go while idle are opened again. */
const PREROLL_MS = 300;
const CONCURRENCY = [1, 32] as const;
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const app = fixture('sv/billing.ts');
/** As client.ts makes its pool per provider URL. */
const POOL_OPTIONS = { connections: 64, keepAliveTimeout: 4_000, keepAliveMaxTimeout: 4_000, pipelining: 1 };
const ARGS = { amount: 1 };

interface Sample {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  client_cpu_us_per_call: number;
  server_cpu_us_per_call: number;
  load1: number;
}

type Call = () => Promise<unknown>;

/** Latencies of one sample, in ms (one buffer, grown if a sample needs it). */
let lat = new Float64Array(1 << 20);

/** C callers, each calling again as soon as its call is answered, until `ms` have passed. */
async function closedLoop(call: Call, c: number, ms: number, record: boolean): Promise<{ calls: number; errors: number; firstError?: unknown }> {
  let calls = 0;
  let errors = 0;
  let firstError: unknown;
  const end = performance.now() + ms;
  const caller = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await call();
      } catch (error) {
        errors++;
        firstError ??= error;
        continue;
      }
      if (record) {
        if (calls === lat.length) {
          const grown = new Float64Array(lat.length * 2);
          grown.set(lat);
          lat = grown;
        }
        lat[calls] = performance.now() - t0;
      }
      calls++;
    }
  };
  await Promise.all(Array.from({ length: c }, caller));
  return { calls, errors, firstError };
}

async function load(call: Call, c: number, seconds: number, providerPid: number): Promise<Sample> {
  await closedLoop(call, c, PREROLL_MS, false);
  const cpu0 = cpuMicros(process.pid);
  const srv0 = cpuMicros(providerPid);
  const t0 = performance.now();
  const { calls, errors, firstError } = await closedLoop(call, c, seconds * 1000, true);
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuMicros(process.pid) - cpu0;
  const srv = cpuMicros(providerPid) - srv0;
  if (errors > 0) process.stderr.write(`bench: ${errors} failed calls, the first: ${(firstError as Error)?.message ?? String(firstError)}\n`);
  const sorted = lat.subarray(0, calls).sort();
  return {
    rps: calls / elapsed,
    p50_ms: percentile(sorted, 50),
    p99_ms: percentile(sorted, 99),
    errors,
    client_cpu_us_per_call: cpu / calls,
    server_cpu_us_per_call: srv / calls,
    load1: loadavg()[0] as number,
  };
}



/** Microseconds per awaited call of `fn`, one after the other, the best of five timed batches after a warm-up. */
async function usPerAwait(fn: () => Promise<unknown>, n: number): Promise<number> {
  for (let i = 0; i < n / 10; i++) await fn();
  let best = Infinity;
  for (let b = 0; b < 5; b++) {
    const t0 = now();
    for (let i = 0; i < n; i++) await fn();
    best = Math.min(best, (now() - t0) / n);
  }
  return round(best / 1000, 3);
}

/** The policy on its own, composed as client.ts composes it (SV_DEFAULTS), and each of its parts. */
async function policyCost(): Promise<Record<string, number>> {
  const s = SV_DEFAULTS;
  const never = (): boolean => false; // client.ts retries only failures before sending: none here
  const make = {
    timeout: () => timeout(s.rpcTimeoutMs, TimeoutStrategy.Aggressive),
    retry: () => retry(handleWhen(never), { maxAttempts: s.retries, backoff: new ExponentialBackoff({ initialDelay: s.retryBackoffMs, maxDelay: 2_000 }) }),
    breaker: () => circuitBreaker(handleAll, { halfOpenAfter: s.breakerHalfOpenMs, breaker: new ConsecutiveBreaker(s.breakerFailures) }),
  };
  // client.ts: retry → breaker (rpc_timeout rides on undici's per-attempt timers, not on a cockatiel timeout policy).
  const full = wrap(make.retry(), make.breaker()) as unknown as IPolicy;
  const x = { ok: true };
  const task = (): Promise<typeof x> => Promise.resolve(x);
  const N = 30_000;
  const bare = await usPerAwait(task, N);
  const policy = await usPerAwait(() => full.execute(task), N);
  // Each part alone, one policy reused per part as the client reuses its own.
  const t = make.timeout();
  const r = make.retry();
  const b = make.breaker();
  // Not what client.ts does (any more): what a cockatiel timeout policy in front would add — it aborts its
  // signal on every return (abortOnReturn, on by default), and an abort() costs.
  const tQuiet = timeout(s.rpcTimeoutMs, { strategy: TimeoutStrategy.Aggressive, abortOnReturn: false });
  const fullQuiet = wrap(timeout(s.rpcTimeoutMs, { strategy: TimeoutStrategy.Aggressive, abortOnReturn: false }), make.retry(), make.breaker()) as unknown as IPolicy;
  const quiet = await usPerAwait(() => fullQuiet.execute(task), N);
  return {
    bare_promise_us: bare,
    policy_execute_us: policy,
    policy_overhead_us: round(policy - bare, 3),
    timeout_us: await usPerAwait(() => t.execute(task), N),
    retry_us: await usPerAwait(() => r.execute(task), N),
    breaker_us: await usPerAwait(() => b.execute(task), N),
    noop_us: await usPerAwait(() => noop.execute(task), N),
    abort_controller_abort_us: round(nsPerOp(() => new AbortController().abort(), N) / 1000, 3),
    alt_timeout_no_abort_on_return_us: await usPerAwait(() => tQuiet.execute(task), N),
    alt_policy_no_abort_on_return_us: quiet,
    alt_policy_no_abort_on_return_overhead_us: round(quiet - bare, 3),
  };
}

/** The client's other per-call steps, on their own (sync, ns). */
function clientSteps(url: string, result: unknown): Record<string, number> {
  const types = new Map();
  return {
    check_module_name_ns: nsPerOp(() => checkModuleName('billing'), 500_000),
    encode_boundary_and_stringify_ns: nsPerOp(() => JSON.stringify(encodeBoundary(ARGS) ?? {}), 500_000),
    plain_stringify_ns: nsPerOp(() => JSON.stringify(ARGS), 500_000),
    calling_run_ns: nsPerOp(() => callingRun(), 500_000),
    new_url_ns: nsPerOp(() => new URL(url), 500_000),
    rehydrate_result_ns: nsPerOp(() => rehydrate(result, types), 500_000),
  };
}

/**
 * The client with its policy bypassed: SvClient has no switch for it, so its
 * (private) provider entry gets a pass-through policy — one never-aborted
 * signal, as the timeout policy would hand one — and the rest of the path is
 * unchanged. False when the entry is not where this expects it.
 */
function bypassPolicy(client: SvClient, module: string): boolean {
  const providers = (client as unknown as { providers?: unknown }).providers;
  if (!(providers instanceof Map)) return false;
  const entry = providers.get(module) as { policy?: unknown } | undefined;
  if (!entry || typeof entry !== 'object' || typeof (entry.policy as IPolicy | undefined)?.execute !== 'function') return false;
  const signal = new AbortController().signal;
  setMaxListeners(0, signal); // up to C requests listen to it at once
  providers.set(module, { ...entry, policy: { execute: (fn: (context: { signal: AbortSignal }) => unknown) => fn({ signal }) } });
  return true;
}

function lockVersion(name: string): string | undefined {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  return lock.packages[`node_modules/${name}`]?.version;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-sv-'));
  const loadBefore = loadavg().map((x) => round(x, 2));
  // This process is the load and the client under test: its own core, the provider on the other.
  const selfPinned = hasTaskset && spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)]).status === 0;
  let provider: Proc | undefined;
  let pool: Pool | undefined;
  const clients: SvClient[] = [];
  try {
    const port = await freePort();
    const [cmd, a] = pinned(0, process.execPath, [join(root, 'bin/svc.mjs'), 'start', app, '--workers', '1', '--port', String(port), '--host', '127.0.0.1']);
    provider = await serve(cmd, a, /Server ready/, { SVC_TRANSPORT: 'uws', SVC_ACCESS_LOG: 'false', JWT_SECRET, SVC_DATA_DIR: dataDir });
    const providerPid = provider.proc.pid as number;
    const url = `http://127.0.0.1:${port}`;

    pool = new Pool(url, POOL_OPTIONS);
    const base = pool;
    const headers = { 'content-type': 'application/json', accept: 'application/json', 'x-svc-sv': '1' };
    const baseline: Call = async () => {
      const res = await base.request({ method: 'POST', path: '/function/charge', headers, body: JSON.stringify(ARGS) });
      const envelope = JSON.parse(await res.body.text()) as { ok?: boolean; data?: { result?: unknown } };
      if (res.statusCode !== 200 || envelope.ok !== true) throw new Error(`baseline: ${res.statusCode}`);
      return envelope.data?.result;
    };
    const newClient = (): SvClient => {
      const c = new SvClient();
      c.bind({ baseDir: root, settings: { ...SV_DEFAULTS, autoStart: false } });
      c.register('billing', url);
      clients.push(c);
      return c;
    };
    const withPolicy = newClient();
    const sv: Call = () => withPolicy.callFunction('billing', 'charge', ARGS);
    const withoutPolicy = newClient();
    const svNoPolicy: Call = () => withoutPolicy.callFunction('billing', 'charge', ARGS);

    // Both answer the same before anything is measured (a refused call would be fast and wrong).
    // (The provider makes a trace id per request: the rest must be equal.)
    const same = (r: unknown): string => JSON.stringify({ ...(r as object), traceId: undefined });
    const expected = (await baseline()) as { charged?: unknown };
    if (expected?.charged !== 1) throw new Error(`baseline answered ${JSON.stringify(expected)}`);
    const viaSv = await sv();
    if (same(viaSv) !== same(expected)) throw new Error(`sv answered ${JSON.stringify(viaSv)}, the baseline ${JSON.stringify(expected)}`);
    await svNoPolicy(); // makes its provider entry
    const bypassed = bypassPolicy(withoutPolicy, 'billing');
    if (!bypassed) process.stderr.write('bench: no provider entry to bypass the policy of (SvClient changed?): sv_no_policy skipped\n');
    const scenarios = [
      { name: 'baseline', call: baseline },
      { name: 'sv', call: sv },
      ...(bypassed ? [{ name: 'sv_no_policy', call: svNoPolicy }] : []),
    ];

    for (const c of CONCURRENCY) for (const s of scenarios) await closedLoop(s.call, c, WARMUP_SECONDS * 1000, false);
    const samples = new Map<string, Sample[]>();
    const key = (name: string, c: number): string => `${name} c=${c}`;
    for (let r = 0; r < ROUNDS; r++) {
      for (const c of CONCURRENCY) {
        for (let k = 0; k < scenarios.length; k++) {
          const s = scenarios[(k + r) % scenarios.length] as (typeof scenarios)[number];
          const sample = await load(s.call, c, SECONDS, providerPid);
          const list = samples.get(key(s.name, c)) ?? [];
          list.push(sample);
          samples.set(key(s.name, c), list);
          process.stderr.write(`bench: round ${r + 1} ${key(s.name, c)} ${Math.round(sample.rps)} calls/s, client ${round(sample.client_cpu_us_per_call, 1)} µs/call, load ${round(sample.load1, 2)}\n`);
        }
      }
    }

    const of = (name: string, c: number, k: keyof Sample): number[] => (samples.get(key(name, c)) ?? []).map((x) => x[k]);
    const results: Record<string, unknown> = {};
    const table: Record<string, Record<string, number>> = {};
    for (const c of CONCURRENCY) {
      for (const s of scenarios) {
        const row = {
          rps_median: Math.round(median(of(s.name, c, 'rps'))),
          p50_ms_median: round(median(of(s.name, c, 'p50_ms')), 3),
          p99_ms_median: round(median(of(s.name, c, 'p99_ms')), 3),
          client_cpu_us_per_call: round(median(of(s.name, c, 'client_cpu_us_per_call')), 1),
          server_cpu_us_per_call: round(median(of(s.name, c, 'server_cpu_us_per_call')), 1),
          errors: of(s.name, c, 'errors').reduce((n, x) => n + x, 0),
        };
        table[key(s.name, c)] = row;
        results[key(s.name, c)] = { ...row, rps_rounds: of(s.name, c, 'rps').map(Math.round), load1_rounds: of(s.name, c, 'load1').map((x) => round(x, 2)) };
      }
    }
    // Ratios of the medians (the VM drifts between rounds: the rounds' own ratios are kept beside them).
    const ratio: Record<string, Record<string, number>> = {};
    const ratioRounds: Record<string, Record<string, number[]>> = {};
    for (const c of CONCURRENCY) {
      const vs = (name: string, base: string, k: keyof Sample): number => round(median(of(name, c, k)) / median(of(base, c, k)), 3);
      const rounds = (name: string, base: string): number[] => of(name, c, 'rps').map((x, i) => round(x / (of(base, c, 'rps')[i] as number), 3));
      const over = (name: string, base: string): number => round(median(of(name, c, 'client_cpu_us_per_call')) - median(of(base, c, 'client_cpu_us_per_call')), 1);
      ratio[`c=${c}`] = {
        sv_vs_baseline_rps: vs('sv', 'baseline', 'rps'),
        sv_vs_baseline_client_cpu: vs('sv', 'baseline', 'client_cpu_us_per_call'),
        sv_client_cpu_us_over_baseline: over('sv', 'baseline'),
        ...(bypassed
          ? {
              sv_no_policy_vs_baseline_rps: vs('sv_no_policy', 'baseline', 'rps'),
              sv_vs_sv_no_policy_rps: vs('sv', 'sv_no_policy', 'rps'),
              policy_client_cpu_us_per_call: over('sv', 'sv_no_policy'),
            }
          : {}),
      };
      ratioRounds[`c=${c}`] = { sv_vs_baseline_rps: rounds('sv', 'baseline'), ...(bypassed ? { sv_vs_sv_no_policy_rps: rounds('sv', 'sv_no_policy') } : {}) };
    }
    results.ratio = { ...ratio, rounds: ratioRounds, goal: '>= 0.9x baseline calls/s (ratio of the medians)' };
    const policy = await policyCost();
    const steps = clientSteps(url, expected);
    results.policy_in_process = policy;
    results.client_steps_in_process = steps;
    const loadAfter = loadavg().map((x) => round(x, 2));
    const m = machine();
    Object.assign(m.versions as Record<string, string | undefined>, { undici: lockVersion('undici'), cockatiel: lockVersion('cockatiel') });
    const git = (...a: string[]): string => spawnSync('git', ['-C', root, ...a], { encoding: 'utf8' }).stdout.trim();
    const out = {
      bench: 'sv',
      at: new Date().toISOString(),
      quick,
      setup: {
        rounds: ROUNDS,
        seconds: SECONDS,
        warmup_seconds: WARMUP_SECONDS,
        concurrency: CONCURRENCY,
        pool: POOL_OPTIONS,
        svc_workers: 1,
        transport: 'uws',
        load: 'closed loop in the bench process (the client under test)',
        latency: 'sorted array (hdr-histogram-js is not a declared dependency)',
        policy_bypass: bypassed ? 'sv_no_policy: the client’s private provider entry given a pass-through policy' : 'not available',
        pinned: hasTaskset ? `provider core 0, bench ${selfPinned ? 'core 1' : 'not pinned (taskset -p failed)'}` : 'not pinned (no taskset)',
        load_average_before: loadBefore,
        load_average_after: loadAfter,
        commit: git('rev-parse', '--short', 'HEAD'),
        sv_sources_modified: git('status', '--porcelain', '--', 'transports/sv') !== '',
      },
      machine: m,
      results,
    };
    const file = save('sv', out);
    console.table(table);
    console.table(ratio);
    console.table(policy);
    console.table(steps);
    console.log(`load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')} (${(m.cores as number) ?? '?'} cores)`);
    console.log(`written ${file}`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await pool?.close();
    await provider?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
