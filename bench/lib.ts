/** Small helpers shared by the benchmarks: timing, percentiles, machine facts, result files. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpus, release, tmpdir, totalmem } from 'node:os';
import { mkdirSync, mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

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

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Proc {
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Start a server process (from the repository root) and wait for its ready line. */
export async function serve(cmd: string, args: string[], ready: RegExp, env: Record<string, string> = {}): Promise<Proc> {
  const root = new URL('..', import.meta.url).pathname;
  const proc = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  process.stderr.write(`bench: starting ${[cmd, ...args].join(' ').slice(0, 120)}\n`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} was not ready within 60 s:\n${out}`)), 60_000);
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
  return {
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

/** A wrk Lua script that POSTs `body` as JSON with these headers. */
export function wrkScript(body: string, headers: Record<string, string>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-wrk-')), 'post.lua');
  const lines = [`wrk.method = "POST"`, `wrk.body = ${JSON.stringify(body)}`, `wrk.headers["Content-Type"] = "application/json"`];
  for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** A wrk script that posts `{}` to one of `requests` (path and headers), at random, per request. */
export function wrkSpreadScript(requests: { path: string; headers: Record<string, string> }[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-wrk-')), 'spread.lua');
  const entries = requests.map((r) => {
    const headers = Object.entries({ 'Content-Type': 'application/json', ...r.headers })
      .map(([k, v]) => `[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
      .join(', ');
    return `{ path = ${JSON.stringify(r.path)}, headers = { ${headers} } }`;
  });
  writeFileSync(file, `local reqs = { ${entries.join(',\n')} }\nrequest = function()\n  local r = reqs[math.random(#reqs)]\n  return wrk.format("POST", r.path, r.headers, "{}")\nend\n`);
  return file;
}

/** Whether `taskset` can pin processes to cores here. */
export const hasTaskset = spawnSync('taskset', ['--version']).status === 0;

/** `cmd args` pinned to `core` (a taskset list) when taskset exists, else as it is. */
export function pinned(core: number | string, cmd: string, args: string[]): [string, string[]] {
  return hasTaskset ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args];
}

/** What one `wrk --latency` run printed: requests, rate, latency percentiles, non-2xx answers and socket errors. */
export function parseWrk(out: string): { requests: number; rps: number; p50_ms: number; p99_ms: number; errors: number } {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  if (!rps || !requests) throw new Error(`wrk failed:\n${out}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors:.*?(\d+).*?(\d+).*?(\d+).*?(\d+)/.exec(out);
  return {
    requests,
    rps,
    p50_ms: parseWrkMs(/50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99_ms: parseWrkMs(/99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    errors: non2xx + (socketErrors ? socketErrors.slice(1).reduce((n, x) => n + Number(x), 0) : 0),
  };
}

/** A wrk latency figure (`812.00us`, `1.20ms`, `2.01s`) in milliseconds. */
export function parseWrkMs(s: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(s);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/**
 * Make these users exist in the users store of a data folder (as `svc token`
 * does): the server refuses tokens of users that do not exist.
 */
export async function ensureUsers(dataDir: string, userIds: readonly string[], role: 'user' | 'admin' = 'user'): Promise<void> {
  const { SqliteUsersRepository, serviceAccount } = await import('../actors/identity/index.ts');
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
