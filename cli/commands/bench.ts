/**
 * `svc bench <url|entry>`: load an app with a scenario and write
 * `result.json` and `report.html`; `svc bench compare a.json b.json`: which
 * figures moved beyond noise. The work is the harness's (`bench/harness/`);
 * this file reads the flags and turns failures into exit codes: 0 done,
 * 1 the run could not happen (target down, bad scenario), 2 a usage error.
 */
import { BenchError, compareResults, formatComparison, readResult, runBench, type BenchOptions } from '../../bench/harness/index.ts';

export interface BenchFlags {
  scenario?: string;
  duration?: string | number;
  warmup?: string | number;
  connections?: string | number;
  rate?: string | number;
  threads?: string | number;
  users?: string | number;
  timeout?: string | number;
  out?: string;
  adminToken?: string;
  failOnRegression?: boolean;
}

const FLAGS = ['scenario', 'duration', 'warmup', 'connections', 'rate', 'threads', 'users', 'timeout', 'out', 'admin-token', 'fail-on-regression'];
const NUMERIC = ['duration', 'warmup', 'connections', 'rate', 'threads', 'users', 'timeout'];

/**
 * A negative figure in the command line (`--duration -3`): the flag parser reads `-3` as a flag of
 * its own and would say "value is missing"; this names it as the usage error it is. Call it on
 * process.argv before the parser runs.
 *
 * @example negativeFlag(['node', 'svc', 'bench', 'app.ts', '--duration', '-3']); // '--duration must be a number > 0, got -3'
 */
export function negativeFlag(argv: readonly string[]): string | undefined {
  const at = argv.indexOf('bench');
  if (at < 0) return undefined;
  for (let i = at + 1; i < argv.length; i++) {
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(argv[i] as string);
    if (!m || !NUMERIC.includes(m[1] as string)) continue;
    const value = m[2] ?? argv[i + 1];
    if (value !== undefined && /^-\d/.test(value) && Number.isFinite(Number(value))) {
      const rule: Record<string, string> = { warmup: 'a number ≥ 0', users: 'an integer ≥ 0', connections: 'an integer ≥ 1', threads: 'an integer ≥ 1' };
      return `--${m[1]} must be ${rule[m[1] as string] ?? 'a number > 0'}, got ${value}`;
    }
  }
  return undefined;
}

/** cac hands every flag over twice (`admin-token` and `adminToken`); anything else is a usage error. */
function checkFlags(flags: Record<string, unknown>): void {
  const known = new Set(['--', 'h', 'help', ...FLAGS, ...FLAGS.map((f) => f.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()))]);
  // `--foo-bar` may arrive as foo-bar and fooBar: named once, as typed.
  const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const unknown = new Set(Object.keys(flags).filter((k) => !known.has(k)).map((k) => (k.length > 1 ? `--${kebab(k)}` : `-${k}`)));
  if (unknown.size) throw new BenchError(`unknown flag ${[...unknown].join(', ')} (see svc bench --help)`, 2);
}

/** A flag's number; anything else is a usage error. */
function num(name: string, x: string | number | undefined): number | undefined {
  if (x === undefined) return undefined;
  if (typeof x === 'boolean' || (typeof x === 'string' && x.trim() === '')) throw new BenchError(`--${name} needs a value`, 2);
  const n = Number(x);
  if (!Number.isFinite(n)) throw new BenchError(`--${name} must be a number, got ${JSON.stringify(x)}`, 2);
  return n;
}

function str(name: string, x: unknown): string | undefined {
  if (x === undefined) return undefined;
  if (typeof x !== 'string' || x === '') throw new BenchError(`--${name} needs a value`, 2);
  return x;
}

async function compare(files: string[], flags: BenchFlags): Promise<number> {
  if (files.length !== 2) throw new BenchError('compare takes two result files: svc bench compare a.json b.json', 2);
  const comparison = compareResults(readResult(files[0] as string), readResult(files[1] as string));
  process.stdout.write(`${formatComparison(comparison)}\n`);
  return flags.failOnRegression && comparison.regressions.length > 0 ? 1 : 0;
}

/** `svc bench`: the command's action. */
export async function bench(target: string | undefined, rest: string[], flags: BenchFlags): Promise<void> {
  let code = 0;
  const aborted = new AbortController();
  // The first Ctrl-C (or SIGTERM, SIGHUP) stops the load and the target the bench started; a second one leaves at once.
  const onSignal = (signal: NodeJS.Signals) => {
    if (aborted.signal.aborted) process.exit(130);
    process.stderr.write(`\nsvc bench: stopping on ${signal}${signal === 'SIGINT' ? ' (Ctrl-C again to leave at once)' : ''}\n`);
    aborted.abort();
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  try {
    const negative = negativeFlag(process.argv);
    if (negative) throw new BenchError(negative, 2);
    checkFlags(flags as Record<string, unknown>);
    if (target === 'compare') {
      code = await compare(rest, flags);
    } else {
      if (target === undefined) throw new BenchError('a target is needed: svc bench <url|entry> (or svc bench compare a.json b.json)', 2);
      if (rest.length > 0) throw new BenchError(`one target at a time (also given: ${rest.join(' ')})`, 2);
      const options: BenchOptions = {
        scenario: str('scenario', flags.scenario),
        duration: num('duration', flags.duration),
        warmup: num('warmup', flags.warmup),
        connections: num('connections', flags.connections),
        rate: num('rate', flags.rate),
        threads: num('threads', flags.threads),
        users: num('users', flags.users),
        timeout: num('timeout', flags.timeout),
        out: str('out', flags.out),
        adminToken: str('admin-token', flags.adminToken) ?? (process.env.SVC_BENCH_ADMIN_TOKEN || undefined),
        signal: aborted.signal,
      };
      for (const s of signals) process.on(s, onSignal);
      await runBench(target, options);
    }
  } catch (error) {
    if (!(error instanceof BenchError)) throw error;
    process.stderr.write(`svc bench: ${error.message}\n`);
    code = error.exitCode;
  } finally {
    for (const s of signals) process.off(s, onSignal);
  }
  // Keep-alive sockets and finished worker threads would hold the process a while longer.
  process.exit(code);
}
