/** Small helpers shared by the benchmarks: timing, percentiles, machine facts, result files, load through the `svc bench` engine. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpus, release, totalmem } from 'node:os';
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { runLoad, type EnginePlan, type PreparedRequest } from './harness/index.ts';

/** A free TCP port on 127.0.0.1 (the test kit's). */
export { freePort } from '../test/kit/index.ts';

export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

/** Latency summary in microseconds from samples in nanoseconds. */
export function latency(samplesNs: Float64Array): { p50_us: number; p99_us: number; mean_us: number } {
  const sorted = Float64Array.from(samplesNs).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    p50_us: round(percentile(sorted, 50) / 1000),
    p99_us: round(percentile(sorted, 99) / 1000),
    mean_us: round(sum / sorted.length / 1000),
  };
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function now(): number {
  return Number(process.hrtime.bigint());
}

/** The machine and versions a result came from. */
export function machine(): Record<string, unknown> {
  const root = new URL('..', import.meta.url).pathname;
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const versions: Record<string, string | undefined> = {};
  for (const name of ['msgpackr', 'nact', 'esbuild', 'tsx', 'better-sqlite3', 'uWebSockets.js', 'fastify', '@node-rs/argon2', 'jose']) versions[name] = lock.packages[`node_modules/${name}`]?.version;
  const cpu = cpus();
  return {
    node: process.version,
    platform: `${process.platform} ${release()}`,
    cpu: cpu[0]?.model,
    cores: cpu.length,
    memory_gib: round(totalmem() / 2 ** 30, 1),
    versions,
  };
}

/** Write a result file under bench/results and print its path. */
export function save(name: string, result: unknown): string {
  const dir = new URL('./results/', import.meta.url).pathname;
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = join(dir, `${name}-${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}


export interface Proc {
  proc: ChildProcess;
  stop(): Promise<void>;
  /** `stop()` was called: nothing should pause it any more (see bench/http.ts). */
  readonly stopping?: boolean;
}

/** Start a server process (from the repository root, or `cwd`) and wait for its ready line. */
export async function serve(cmd: string, args: string[], ready: RegExp, env: Record<string, string> = {}, cwd = new URL('..', import.meta.url).pathname): Promise<Proc> {
  const proc = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  process.stderr.write(`bench: starting ${[cmd, ...args].join(' ').slice(0, 120)}\n`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a bench that gives up on a server stops it.
      proc.kill('SIGKILL');
      reject(new Error(`${cmd} was not ready within 60 s:\n${out}`));
    }, 60_000);
    const onLine = (line: string) => {
      out += `${line}\n`;
      if (ready.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    };
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', onLine);
    proc.once('exit', (code) => reject(new Error(`${cmd} exited (${code}):\n${out}`)));
  });
  let stopping = false;
  return {
    proc,
    get stopping() {
      return stopping;
    },
    // SIGTERM, then SIGKILL when it has not exited within 30 s (a server that hangs while draining does not hang the bench).
    stop: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const kill = setTimeout(() => proc.kill('SIGKILL'), 30_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        proc.kill('SIGTERM');
        // A server a bench paused (SIGSTOP) would hold the SIGTERM until resumed.
        proc.kill('SIGCONT');
      }),
  };
}

/** Whether `taskset` can pin processes to cores here. */
export const hasTaskset = spawnSync('taskset', ['--version']).status === 0;

/** `cmd args` pinned to `core` (a taskset list) when taskset exists, else as it is. */
export function pinned(core: number | string, cmd: string, args: string[]): [string, string[]] {
  return hasTaskset ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args];
}

/**
 * This process and every thread of it on `cores` (a taskset list); the load
 * engine's generator threads, started later, inherit it. Nothing without taskset.
 * @example pinSelf('1'); // the load on core 1, servers started with pinned(0, …)
 */
export function pinSelf(cores: number | string): void {
  if (hasTaskset) spawnSync('taskset', ['-a', '-cp', String(cores), String(process.pid)], { stdio: 'ignore' });
}

/** One request a bench load sends: a POST of a JSON body to `path`, with these headers too. */
export interface LoadRequest {
  path: string;
  body: string;
  headers?: Record<string, string>;
}

/**
 * The engine plan that POSTs `bodies` to `origin`: one request kind, named
 * `load`, whose variants are `bodies`, taken in turn (round robin). `plan`
 * sets the rest (closed loop, 64 connections, no warm-up, 1 thread unless given).
 * @example runLoad(postPlan(url, [{ path: '/walker/Echo', body: '{}' }], { mode: 'open', rate: 5000, duration_s: 10 }))
 */
export function postPlan(origin: string, bodies: LoadRequest[], plan: Partial<Omit<EnginePlan, 'origin' | 'requests'>> & { duration_s: number }): EnginePlan {
  const requests: PreparedRequest[] = [
    {
      name: 'load',
      method: 'POST',
      variants: bodies.map((b, i) => ({ path: b.path, headers: { 'content-type': 'application/json', ...b.headers }, body: b.body, user: bodies.length > 1 ? i : -1 })),
      weight: 1,
    },
  ];
  return { origin, requests, mode: 'closed', connections: 64, warmup_s: 0, threads: 1, ...plan };
}

export interface MaxLoadOptions {
  /** Measured seconds. */
  seconds: number;
  /** Seconds of load before measuring (default 0). */
  warmup?: number;
  /** Connections in total (default 64). */
  connections?: number;
  /** Generator threads (default 1). */
  threads?: number;
  /** A server process whose CPU time (user + system, every thread) is counted over the measured part. */
  cpuPid?: number;
}

export interface MaxLoad {
  /** Requests per second over the measured part (every request that ended, errors too). */
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** Requests that did not end with a 2xx/3xx answer (error answers, socket errors, timeouts). */
  errors: number;
  requests: number;
  /** CPU time of `cpuPid` over the measured part, in µs, and per request (NaN without `cpuPid`). */
  cpu_us: number;
  cpu_us_per_req: number;
  /** The latency histogram (µs, HDR-encoded base64), to merge with other runs'. */
  histogram: string;
}

/**
 * Maximum throughput: a closed loop of `connections` (each sends its next
 * request when the last is answered) POSTing `bodies` in turn to `origin`,
 * through the load engine of `svc bench`, and the CPU a server used per request
 * meanwhile. Figures as the engine gives them (not rounded further).
 * @example const l = await maxLoad('http://127.0.0.1:8000', [{ path: '/walker/Echo', body: '{}' }], { seconds: 10, warmup: 2, cpuPid: server.proc.pid });
 */
export async function maxLoad(origin: string, bodies: LoadRequest[], opts: MaxLoadOptions): Promise<MaxLoad> {
  const pid = opts.cpuPid;
  const warmup = Math.max(0, opts.warmup ?? 0);
  // Without a warm-up the measured part starts with the run; with one, at its last warm-up second (t = 0).
  let cpuAtStart = pid !== undefined && warmup === 0 ? cpuMicros(pid) : NaN;
  const out = await runLoad(postPlan(origin, bodies, { duration_s: opts.seconds, warmup_s: warmup, connections: opts.connections ?? 64, threads: opts.threads ?? 1 }), {
    onProgress: (p) => {
      if (pid !== undefined && p.t >= 0 && Number.isNaN(cpuAtStart)) cpuAtStart = cpuMicros(pid);
    },
  });
  const cpu = pid === undefined ? NaN : cpuMicros(pid) - cpuAtStart;
  return {
    rps: out.throughput.rps,
    p50_ms: out.latency_ms.p50,
    p99_ms: out.latency_ms.p99,
    errors: out.errors.total,
    requests: out.throughput.requests,
    cpu_us: cpu,
    cpu_us_per_req: cpu / out.throughput.requests,
    histogram: out.histogram,
  };
}

/**
 * Make these users exist in the users store of a data folder (as `svc token`
 * does): the server refuses tokens of users that do not exist.
 */
export async function ensureUsers(dataDir: string, userIds: readonly string[], role: 'user' | 'admin' = 'user'): Promise<void> {
  const { serviceAccount } = await import('../actors/identity/index.ts');
  const { SqliteUsersRepository } = await import('../stores/sqlite/index.ts');
  const users = SqliteUsersRepository.open(join(dataDir, 'users.db'));
  try {
    for (const id of userIds) await serviceAccount(users, id, role);
  } finally {
    await users.close();
  }
}

/** CPU time (user + system, every thread) a process has used so far, in microseconds (Linux /proc; NaN elsewhere). */
export function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Nanoseconds per call of `fn`, the best of five timed batches after a warm-up. */
export function nsPerOp(fn: () => unknown, n: number): number {
  for (let i = 0; i < n / 10; i++) fn();
  let best = Infinity;
  for (let b = 0; b < 5; b++) {
    const t0 = now();
    for (let i = 0; i < n; i++) fn();
    best = Math.min(best, (now() - t0) / n);
  }
  return round(best, 1);
}
