/**
 * `svc bench <url|entry>` from start to finish: start the target when it is
 * an entry file (`svc start` as a child process on a free port), load or make
 * the scenario, prepare it (users, setup walkers), run warm-up and load with
 * a live progress line, then the WebSocket part, read the server's own
 * figures with an admin token, and write `result.json` and `report.html`.
 *
 * The WebSocket part runs after the HTTP load, for the same duration: each is
 * measured alone, so neither's figures carry the other's cost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { cpus, release, tmpdir, totalmem } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { runLoad, type LoadOutcome, type LoadProgress } from './engine.ts';
import { createHistogram, encodeHistogram } from './histogram.ts';
import { renderReport } from './report.ts';
import { BenchError, defaultScenario, fetchApi, loadScenario, prepare, type ApiIndex, type LoadedScenario } from './scenario.ts';
import type { BenchResult, LatencySummary } from './types.ts';
import { probeWs, runWs } from './ws.ts';
import { checkResult } from './compare.ts';

const BIN = new URL('../../bin/svc.mjs', import.meta.url).pathname;
const PKG = new URL('../../package.json', import.meta.url).pathname;

/** Where output goes: stdout-like and stderr-like streams (a terminal when `isTTY`). */
export interface Out {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export interface BenchOptions {
  /** A scenario file (.ts/.mts/.js/.mjs, .json, .toml); default: every public walker and function that takes no required field. */
  scenario?: string;
  /** These win over the scenario file. */
  duration?: number;
  warmup?: number;
  connections?: number;
  rate?: number;
  threads?: number;
  users?: number;
  /** Per-request timeout (ms; default: the engine's). */
  timeout?: number;
  /** Output folder (default `bench-results/<time>` under `cwd`). */
  out?: string;
  /** An admin token: `/admin/stats` before and after, counters from `/metrics`. */
  adminToken?: string;
  cwd?: string;
  /** The environment the target is started with (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  stdout?: Out;
  stderr?: Out;
  signal?: AbortSignal;
  /** Plain progress lines at most this often when stderr is not a terminal (ms, default 5,000). */
  progressEveryMs?: number;
}

export interface BenchRun {
  result: BenchResult;
  dir: string;
  json: string;
  html: string;
}

/** The machine and versions a result came from. */
function machine(): Record<string, unknown> {
  const cpu = cpus();
  let svc: string | undefined;
  try {
    svc = (JSON.parse(readFileSync(PKG, 'utf8')) as { version?: string }).version;
  } catch {
    // not beside a package.json: no version
  }
  return {
    node: process.version,
    platform: `${process.platform} ${release()}`,
    arch: process.arch,
    cpu: cpu[0]?.model,
    cores: cpu.length,
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    svc,
  };
}

/** A file as the user will recognise it: relative to `cwd` when inside it. */
function shown(cwd: string, file: string): string {
  const rel = relative(cwd, file);
  return rel === '' || rel.startsWith('..') ? file : rel;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}

/** A target started by the bench: its URL, and how to stop it. */
interface Started {
  url: string;
  proc: ChildProcess;
  exited: Promise<number | NodeJS.Signals | null>;
  stop(): Promise<void>;
}

/** `svc start <entry>` on 127.0.0.1 and a free port; resolves at its `Server ready at` line. */
async function startTarget(entry: string, env: NodeJS.ProcessEnv, cwd: string, log: (line: string) => void): Promise<Started> {
  const port = await freePort();
  log(`starting svc start ${shown(cwd, entry)} on 127.0.0.1:${port}`);
  const proc = spawn(process.execPath, [BIN, 'start', entry, '--host', '127.0.0.1', '--port', String(port)], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  // The last lines, for the message when it fails; read on to the end so that its pipes never fill.
  const tail: string[] = [];
  const keep = (line: string) => {
    if (line.trim() === '') return;
    tail.push(line);
    if (tail.length > 20) tail.shift();
  };
  const exited = new Promise<number | NodeJS.Signals | null>((done) => proc.once('exit', (code, signal) => done(code ?? signal)));
  const url = await new Promise<string>((ready, reject) => {
    const timer = setTimeout(() => reject(new BenchError(`svc start ${entry} was not ready within 120 s: ${tail.at(-1) ?? 'no output'}`)), 120_000);
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      keep(line);
      const m = /^Server ready at (http:\/\/\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        ready(m[1] as string);
      }
    });
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', keep);
    void exited.then((code) => {
      clearTimeout(timer);
      const why = tail.filter((l) => !l.startsWith('{')).at(-1) ?? tail.at(-1) ?? 'no output';
      reject(new BenchError(`svc start ${shown(cwd, entry)} exited (${code}) before it was ready: ${why.replace(/^svc: /, '')}`));
    });
  });
  return {
    url: url.replace(/\/$/, ''),
    proc,
    exited,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Sums of the Prometheus text's samples by metric name (labels summed over), plus `svc_http_requests_total` by status class. */
export function parseMetrics(text: string): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const name = m[1] as string;
    sums[name] = (sums[name] ?? 0) + value;
    const status = /status_code="(\d)\d\d"/.exec(m[2] ?? '');
    if (name.endsWith('_http_requests_total') && status) sums[`${name}:${status[1]}xx`] = (sums[`${name}:${status[1]}xx`] ?? 0) + value;
  }
  return sums;
}

/** The metrics a result keeps: counters as the change over the run, gauges as read after it. */
const COUNTERS = /(_http_requests_total(:\dxx)?|_websocket_broadcasts_total|_mailbox_rejections_total|_actor_failures_total|_actor_activations_total|^process_cpu_seconds_total)$/;
const GAUGES = /(_http_requests_in_progress|_websocket_connections|_partitions_active|^process_resident_memory_bytes)$/;

function serverMetrics(before: Record<string, number> | undefined, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(after)) {
    if (COUNTERS.test(name)) out[name] = Math.round((value - (before?.[name] ?? 0)) * 1000) / 1000;
    else if (GAUGES.test(name)) out[name] = value;
  }
  return out;
}

/** `/admin/stats` and the `/metrics` text with the admin token; a refused token stops the run before the load. */
async function serverFigures(origin: string, token: string, log: ((line: string) => void) | undefined): Promise<{ stats: unknown; metrics?: Record<string, number> }> {
  const headers = { authorization: `Bearer ${token}` };
  const unreachable = (what: string, error: unknown) =>
    new BenchError(`--admin-token: ${origin}${what} did not answer: ${(error as Error).name === 'TimeoutError' ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s` : ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message)}`, 1, { cause: error });
  let res: Response;
  let body: { data?: unknown; error?: { code?: string; message?: string } } | undefined;
  try {
    res = await fetch(`${origin}/admin/stats`, { headers, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    body = (await res.json().catch(() => undefined)) as typeof body;
  } catch (error) {
    throw unreachable('/admin/stats', error);
  }
  if (res.status !== 200) throw new BenchError(`--admin-token: ${origin}/admin/stats answered ${res.status}${body?.error ? ` ${body.error.code}: ${body.error.message}` : ''}`);
  let m: Response;
  let text: string;
  try {
    m = await fetch(`${origin}/metrics`, { headers, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    text = await m.text();
  } catch (error) {
    throw unreachable('/metrics', error);
  }
  if (m.status === 200) return { stats: body?.data, metrics: parseMetrics(text) };
  log?.(`/metrics answered ${m.status}: no server counters (the target turns them on with SVC_METRICS_ENABLED=true)`);
  return { stats: body?.data };
}

/** Every fetch of the harness (openapi, users, setup walkers, admin figures) gives up after this long. */
export const FETCH_TIMEOUT_MS = 10_000;

const ZERO: LatencySummary = { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, min: 0, mean: 0, stdev: 0 };

/** What a run without HTTP requests (a WebSocket-only scenario) reports for the HTTP part. */
function emptyOutcome(): LoadOutcome {
  return {
    throughput: { rps: 0, requests: 0 },
    latency_ms: ZERO,
    errors: { total: 0, by_status: {}, by_code: {} },
    timeline: [],
    percentiles: [],
    histogram: encodeHistogram(createHistogram()),
    per_request: {},
  };
}

const fig = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const msf = (n: number) => `${n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : fig(n)} ms`;
/** Answers of any status (latencies are of answers only). */
const answers = (e: { by_status: Record<string, number> }) => Object.values(e.by_status ?? {}).reduce((s, n) => s + n, 0);
/** The most frequent error codes (envelope codes, `socket`, `timeout` …; else the failing statuses), e.g. `socket 120, 503 4`. */
function topCodes(e: BenchResult['errors'], n = 3): string {
  const byCode = Object.entries(e.by_code ?? {}).filter(([c]) => c !== 'dropped');
  const entries = byCode.length ? byCode : Object.entries(e.by_status ?? {}).filter(([st]) => !/^[23]/.test(st));
  return entries.sort((x, y) => y[1] - x[1]).slice(0, n).map(([c, k]) => `${c} ${fig(k)}`).join(', ') || 'none recorded';
}

/** The live line: one line rewritten on a terminal, a plain line every few seconds otherwise. */
function progressReporter(stderr: Out, everyMs: number) {
  const tty = stderr.isTTY === true;
  let lastPlain = 0;
  let drawn = false;
  return {
    update(p: LoadProgress) {
      // The engine counts the measured seconds from 1; warm-up seconds are ≤ 0.
      const when = p.t <= 0 ? 'warm-up' : `${p.t.toFixed(0)} s`;
      const line = `svc bench: ${when}  ${fig(p.rps)} req/s  errors ${fig(p.errors)}  p99 (last s) ${p.rps > 0 ? msf(p.p99_ms) : '—'}${p.backlog !== undefined ? `  backlog ${fig(p.backlog)}` : ''}`;
      if (tty) {
        stderr.write(`\r${line}\x1b[K`);
        drawn = true;
      } else if (Date.now() - lastPlain >= everyMs) {
        lastPlain = Date.now();
        stderr.write(`${line}\n`);
      }
    },
    done() {
      if (drawn) stderr.write('\n');
    },
  };
}

function number(name: string, x: number | undefined, o: { integer?: boolean; min: number; above?: boolean }): void {
  if (x === undefined) return;
  const ok = Number.isFinite(x) && (o.above ? x > o.min : x >= o.min) && (!o.integer || Number.isInteger(x));
  if (!ok) throw new BenchError(`--${name} must be ${o.integer ? 'an integer' : 'a number'} ${o.above ? '>' : '≥'} ${o.min}, got ${x}`, 2);
}

/** The summary printed at the end. */
function summary(r: BenchResult, json: string, html: string, cwd: string): string {
  const s = r.scenario;
  const http = s.requests.length > 0;
  const mode = !http ? 'WebSocket only' : s.mode === 'open' ? `open loop at ${fig(s.rate ?? 0)} req/s` : `closed loop, ${s.connections} connections`;
  const lines = [
    `svc bench: ${s.name} against ${r.target.url}: ${mode}, ${s.duration_s} s${http ? ` (+${s.warmup_s} s warm-up), ${s.threads} thread${s.threads > 1 ? 's' : ''}` : ''}, ${s.users} user${s.users === 1 ? '' : 's'}`,
  ];
  if (http) {
    const rows = [['request', 'requests', 'req/s', 'p50', 'p99', 'max', 'errors']];
    // Latencies are of answers: a request nobody answered has none.
    const lat = (l: LatencySummary, answered: boolean) => (answered ? [msf(l.p50), msf(l.p99), msf(l.max)] : ['—', '—', '—']);
    for (const [name, p] of Object.entries(r.per_request)) rows.push([name, fig(p.requests), fig(p.rps, 1), ...lat(p.latency_ms, answers(p.errors) > 0), fig(p.errors.total)]);
    rows.push(['all', fig(r.throughput.requests), fig(r.throughput.rps, 1), ...lat(r.latency_ms, answers(r.errors) > 0), fig(r.errors.total)]);
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] as string).length)));
    for (const row of rows) lines.push(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
    if (r.errors.total > 0) lines.push(`errors: ${topCodes(r.errors, Infinity)}`);
    if (r.open_loop) lines.push(`open loop: asked ${fig(r.open_loop.target_rps)} req/s, achieved ${fig(r.open_loop.achieved_rps, 1)} (${r.open_loop.kept_up ? 'kept up' : `fell behind: backlog up to ${fig(r.open_loop.backlog_max)}`})`);
  }
  if (r.ws) {
    const w = r.ws;
    lines.push(`ws ${w.walker}: ${fig(w.sent)} frames to ${w.clients} clients, ${fig(w.delivered)} of ${fig(w.expected)} deliveries (${(w.delivery_ratio * 100).toFixed(1)}%), p50 ${msf(w.latency_ms.p50)}, p99 ${msf(w.latency_ms.p99)}${w.errors ? `, ${Object.entries(w.errors).map(([c, n]) => `${c} ${n}`).join(', ')}` : ''}`);
  }
  if (r.server?.metrics) {
    const total = Object.entries(r.server.metrics).find(([k]) => k.endsWith('_http_requests_total'));
    const cpu = r.server.metrics.process_cpu_seconds_total;
    if (total) lines.push(`server: ${fig(total[1])} requests counted${cpu !== undefined ? `, ${cpu.toFixed(2)} CPU s` : ''}`);
  }
  lines.push(`result: ${shown(cwd, json)}`, `report: ${shown(cwd, html)}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Run a benchmark against `target` (a URL, or an app entry file the bench
 * starts and stops) and write `result.json` and `report.html`. Failures are
 * `BenchError`s: `exitCode` 2 for usage, 1 for a run that could not happen.
 *
 * @example
 * const { result, dir } = await runBench('examples/todo/app.ts', { duration: 10, users: 5 });
 * result.throughput.rps;
 */
export async function runBench(target: string, opts: BenchOptions = {}): Promise<BenchRun> {
  const cwd = opts.cwd ?? process.cwd();
  const stdout = opts.stdout ?? process.stdout;
  const stderr = opts.stderr ?? process.stderr;
  const log = (line: string) => stderr.write(`svc bench: ${line}\n`);
  if (!target) throw new BenchError('a target is needed: svc bench <url|entry>', 2);
  if (opts.connections !== undefined && opts.rate !== undefined) throw new BenchError('--connections (closed loop) and --rate (open loop) are exclusive: give one', 2);
  number('duration', opts.duration, { min: 0, above: true });
  number('warmup', opts.warmup, { min: 0 });
  number('connections', opts.connections, { integer: true, min: 1 });
  number('rate', opts.rate, { min: 0, above: true });
  number('threads', opts.threads, { integer: true, min: 1 });
  number('users', opts.users, { integer: true, min: 0 });
  number('timeout', opts.timeout, { min: 0, above: true });
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(target)?.[1]?.toLowerCase();
  if (scheme !== undefined && scheme !== 'http') throw new BenchError(`${target}: svc bench speaks http only (http://host:port)`, 2);
  if (scheme === 'http' && !URL.canParse(target)) throw new BenchError(`${target}: not a valid URL (http://host:port)`, 2);

  // The scenario file and the output folder are checked before anything is started.
  let loaded: LoadedScenario | undefined = opts.scenario !== undefined ? await loadScenario(opts.scenario, cwd) : undefined;
  let entry: string | undefined;
  if (scheme === undefined) {
    entry = resolve(cwd, target);
    if (!existsSync(entry)) throw new BenchError(`${target}: no such file (the target is a URL http://… or an app entry file)`);
  }
  const startedAt = new Date();
  const dir = resolve(cwd, opts.out ?? join('bench-results', startedAt.toISOString().replace(/\.\d+Z$/, '').replace(/:/g, '-')));
  const unusedOut = checkOut(dir, opts.out, cwd);

  let started: Started | undefined;
  let scratch: string | undefined;
  let origin: string;
  let written = false;
  // fetch() on a connection the target drops may never settle, and its AbortSignal.timeout timer does
  // not hold the process: this one does, so the deadline fires and the run ends with a message.
  const alive = setInterval(() => undefined, 60_000);
  const halt = () => {
    if (opts.signal?.aborted) throw new BenchError('stopped before the end of the run: no result written');
  };
  // After /openapi.json is read, a wrong request or ws part is the scenario file's: name it.
  const inFile = (error: unknown): unknown =>
    opts.scenario && error instanceof BenchError && /^(requests\[|ws[.: ])/.test(error.message) ? new BenchError(`${opts.scenario}: ${error.message}`, error.exitCode, { cause: error }) : error;
  try {
    if (entry) {
      const env = { ...(opts.env ?? process.env) };
      const users = opts.users ?? loaded?.scenario.users ?? 0;
      // Registrations are limited per client address, and every user here comes from this one.
      if (users > 90 && env.SVC_REGISTER_ATTEMPTS_PER_ADDRESS === undefined) {
        env.SVC_REGISTER_ATTEMPTS_PER_ADDRESS = String(users + 100);
        log(`the target allows ${env.SVC_REGISTER_ATTEMPTS_PER_ADDRESS} registrations per address (SVC_REGISTER_ATTEMPTS_PER_ADDRESS) for the ${users} users`);
      }
      // Bench users and what the load writes stay out of the project's own data (and a dev server
      // already serving that folder does not stop the start): a throwaway folder unless one is named.
      if (!env.SVC_DATA_DIR) {
        scratch = mkdtempSync(join(tmpdir(), 'svc-bench-data-'));
        env.SVC_DATA_DIR = scratch;
        log(`the target keeps its data in ${scratch}, removed at the end (SVC_DATA_DIR names another folder)`);
      }
      started = await startTarget(entry, env, cwd, log);
      origin = started.url;
      halt();
    } else {
      origin = new URL(target).origin;
    }
    let api: ApiIndex | undefined;
    try {
      api = await fetchApi(origin);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const why = (error as Error).name === 'TimeoutError' ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s` : (cause?.code ?? cause?.message ?? (error as Error).message);
      throw new BenchError(`cannot reach ${origin}: ${why}`, 1, { cause: error });
    }
    if (!loaded) loaded = defaultScenario(origin, api, opts.users ?? 0);
    const scenario = { ...loaded.scenario, ...(opts.users !== undefined ? { users: opts.users } : {}) };
    const flagsPickMode = opts.connections !== undefined || opts.rate !== undefined;
    const settings = {
      duration: opts.duration ?? scenario.duration ?? 10,
      warmup: opts.warmup ?? scenario.warmup ?? 2,
      threads: opts.threads ?? scenario.threads ?? 1,
      connections: flagsPickMode ? opts.connections : scenario.connections,
      rate: flagsPickMode ? opts.rate : scenario.rate,
    };
    let prepared: Awaited<ReturnType<typeof prepare>>;
    try {
      prepared = await prepare(scenario, origin, settings, { module: loaded.module, api: api ?? null, log, ...(opts.timeout !== undefined ? { timeoutMs: opts.timeout } : {}) });
      halt();
      // The WebSocket walker is checked now (one client connects and leaves), not after the whole HTTP load.
      if (scenario.ws) {
        const http = api?.get(`walker_${scenario.ws.walker}`);
        if (http && !http.template.startsWith('/ws/')) throw new BenchError(`ws.walker: ${scenario.ws.walker} is an HTTP walker, not a WebSocket walker (HTTP walkers go in requests)`);
        await probeWs({ origin, ws: scenario.ws, users: prepared.users });
      }
    } catch (error) {
      throw inFile(error);
    }
    halt();

    let before: Awaited<ReturnType<typeof serverFigures>> | undefined;
    // /metrics missing is said once, before the load.
    if (opts.adminToken) before = await serverFigures(origin, opts.adminToken, log);

    const at = new Date();
    let outcome: LoadOutcome & { threads?: number } = emptyOutcome();
    const http = prepared.plan.requests.length > 0;
    if (http) {
      const p = prepared.plan;
      log(`${p.mode === 'open' ? `open loop at ${p.rate} req/s` : `${p.connections} connections`} for ${p.warmup_s} s warm-up + ${p.duration_s} s on ${p.threads} thread${p.threads > 1 ? 's' : ''}`);
      const progress = progressReporter(stderr, opts.progressEveryMs ?? 5000);
      try {
        outcome = await runLoad(p, { onProgress: (x) => progress.update(x), ...(opts.signal ? { signal: opts.signal } : {}) });
      } catch (error) {
        if (opts.signal?.aborted) throw new BenchError('stopped before the end of the run: no result written', 1, { cause: error });
        if (error instanceof BenchError) throw error;
        throw new BenchError(`the load stopped: ${(error as Error).message ?? String(error)}`, 1, { cause: error });
      } finally {
        progress.done();
      }
    }
    let ws: BenchResult['ws'];
    try {
      ws = scenario.ws && !opts.signal?.aborted ? await runWs({ origin, ws: scenario.ws, duration: settings.duration, users: prepared.users, log, ...(opts.signal ? { signal: opts.signal } : {}) }) : undefined;
    } catch (error) {
      throw inFile(error);
    }
    halt();
    if (started && started.proc.exitCode !== null) throw new BenchError(`the target exited (${started.proc.exitCode}) during the run`);

    let server: BenchResult['server'];
    if (opts.adminToken) {
      const after = await serverFigures(origin, opts.adminToken, undefined);
      server = { stats_before: before?.stats, stats_after: after.stats, ...(after.metrics ? { metrics: serverMetrics(before?.metrics, after.metrics) } : {}) };
    }

    const result: BenchResult = {
      format: 'svc-bench/1',
      at: at.toISOString(),
      target: { url: origin, ...(entry ? { entry: shown(cwd, entry) } : {}) },
      scenario: {
        name: scenario.name ?? (opts.scenario ? opts.scenario.replace(/^.*[\\/]/, '').replace(/\.[^.]+$/, '') : 'default'),
        mode: prepared.plan.mode,
        connections: prepared.plan.connections,
        ...(prepared.plan.rate !== undefined ? { rate: prepared.plan.rate } : {}),
        duration_s: settings.duration,
        warmup_s: settings.warmup,
        // The threads the engine really ran (it may use fewer than asked, e.g. fewer connections than threads).
        threads: typeof outcome.threads === 'number' ? outcome.threads : settings.threads,
        users: scenario.users ?? 0,
        requests: prepared.described,
      },
      machine: machine(),
      throughput: outcome.throughput,
      latency_ms: outcome.latency_ms,
      errors: outcome.errors,
      ...(outcome.open_loop ? { open_loop: outcome.open_loop } : {}),
      timeline: outcome.timeline,
      percentiles: outcome.percentiles,
      histogram: outcome.histogram,
      per_request: outcome.per_request,
      ...(ws ? { ws } : {}),
      ...(server ? { server } : {}),
    };
    mkdirSync(dir, { recursive: true });
    const json = join(dir, 'result.json');
    const html = join(dir, 'report.html');
    writeFileSync(json, `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(html, renderReport(result));
    written = true;
    stdout.write(summary(result, json, html, cwd));
    if (http) {
      const e = result.errors;
      const ok = Object.entries(e.by_status ?? {}).filter(([st]) => /^[23]/.test(st)).reduce((sum, [, n]) => sum + n, 0);
      if (ok === 0) {
        throw new BenchError(
          `no request got a 2xx or 3xx answer (${fig(result.throughput.requests)} ended, ${fig(e.total)} failed: ${topCodes(e)}): the target is down or refuses everything; the result is in ${shown(cwd, dir)}`,
        );
      }
      if (e.total > 0 && result.throughput.requests > 0) {
        const rate = (e.total / result.throughput.requests) * 100;
        log(`warning: ${rate < 0.01 ? rate.toPrecision(1) : rate.toFixed(2)}% of requests failed (${topCodes(e)})`);
      }
    }
    return { result, dir, json, html };
  } finally {
    clearInterval(alive);
    if (!written) unusedOut();
    await started?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The output folder, checked before the load: not under /proc or /sys, not a file, and writable
 * (made, with a probe file written and removed). Returns what undoes it when nothing is written.
 */
function checkOut(dir: string, flag: string | undefined, cwd: string): () => void {
  const name = flag !== undefined ? `--out ${flag}` : shown(cwd, dir);
  const code = flag !== undefined ? 2 : 1;
  if (/^\/(proc|sys)(\/|$)/.test(dir)) throw new BenchError(`${name}: not a place for results (under /proc or /sys)`, 2);
  if (existsSync(dir) && !statSync(dir).isDirectory()) throw new BenchError(`${name}: a file is there, not a folder`, code);
  // The folders made here (the first missing one and below), removed again when the run writes nothing.
  const made: string[] = [];
  for (let d = dir; !existsSync(d) && dirname(d) !== d; d = dirname(d)) made.push(d);
  try {
    mkdirSync(dir, { recursive: true });
    const probe = join(dir, `.svc-bench-probe-${process.pid}`);
    writeFileSync(probe, '');
    unlinkSync(probe);
  } catch (error) {
    throw new BenchError(`${name}: cannot write there (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, code, { cause: error });
  }
  return () => {
    for (const d of made) {
      try {
        rmdirSync(d);
      } catch {
        return; // not empty, or gone: leave it
      }
    }
  };
}

/**
 * Read a `result.json` for compare (exit code 1 with the file named when it is not one).
 *
 * @example const a = readResult('bench-results/a/result.json');
 */
export function readResult(file: string, cwd = process.cwd()): BenchResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(resolve(cwd, file), 'utf8'));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new BenchError(`${file}: ${e.code === 'ENOENT' ? 'no such file' : `not a result.json (${e.message.split('\n')[0]})`}`, 1, { cause: error });
  }
  if ((parsed as { format?: unknown })?.format !== 'svc-bench/1') throw new BenchError(`${file}: not a svc bench result (format svc-bench/1)`);
  const wrong = checkResult(parsed);
  if (wrong) throw new BenchError(`${file}: not a svc bench result: ${wrong}`);
  return parsed as BenchResult;
}
