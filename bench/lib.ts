/** Small helpers shared by the benchmarks: timing, percentiles, machine facts, result files. */
import { cpus, totalmem, release } from 'node:os';
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

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
