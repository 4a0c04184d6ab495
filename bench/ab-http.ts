/**
 * Before/after HTTP comparison: the same svc scenarios served by two (or
 * more) checkouts at once, loaded in alternation, so that the machine's drift
 * (a shared 2-core VM moves ±20% between minutes) falls on every side alike.
 *
 *   git worktree add /tmp/base <commit> && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   npm run bench:ab -- /tmp/base .     (--rounds N, --seconds S, --only echo_public,write_auth)
 *
 * A tree may carry settings of its own, `tree::NAME=value,NAME=value` (the
 * same tree twice: a setting's cost), e.g. metrics off against on:
 *   npm run bench:ab -- . .::SVC_METRICS_ENABLED=true
 *
 * Every server runs the benchmark app on one worker thread pinned to core 0;
 * the load — the engine of `svc bench` (bench/harness), one generator thread
 * in this process, 64 connections, a closed loop, 1 s of warm-up before each
 * measured run — on core 1; only one server is loaded at a time. Scenarios:
 * the public echo walker, a public read, an authenticated read, an
 * authenticated write.
 * Each round loads every tree once per scenario, in a rotating order. Per tree:
 * the median throughput and the server's CPU time per request (all its
 * threads, from /proc), and each as a ratio to the first tree — the geometric
 * mean of the rounds' ratios, so that drift between rounds cancels. CPU per
 * request is the steadier figure. Writes bench/results/ab-http-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { SignJWT } from 'jose';
import { freePort, hasTaskset, type LoadRequest, machine, maxLoad, median, pinned, pinSelf, type Proc, round, save, serve } from './lib.ts';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROUNDS = flag('--rounds', 7);
/** A result row without its per-round lists (a table shows the medians; the file keeps the rounds). */
const withoutRounds = (row: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(row).filter(([k]) => !k.endsWith('_rounds')));
const SECONDS = flag('--seconds', 4);
/** Seconds of load before each measured run (the engine's warm-up). */
const WARMUP = 1;
const CONNECTIONS = 64;
/** `--only a,b`: just these scenarios. */
const only = args.includes('--only') ? new Set(String(args[args.indexOf('--only') + 1]).split(',')) : undefined;
/** A tree to serve, with its own environment (`tree::A=1,B=2`) and the name it is reported under. */
interface Variant {
  tree: string;
  env: Record<string, string>;
  label: string;
}
const trees: Variant[] = args
  .filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'))
  .map((arg) => {
    const [path, settings = ''] = arg.split('::') as [string, string?];
    const env = Object.fromEntries(settings.split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const tree = resolve(path);
    return { tree, env, label: settings ? `${basename(tree)}+${settings}` : basename(tree) };
  });
if (trees.length < 2) {
  console.error('usage: bench/ab-http.ts <tree-before> <tree-after> [more trees] [--rounds 7] [--seconds 4] [--only echo_public,read_public,read_auth,write_auth]');
  process.exit(2);
}
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';

/** Files and folders this run made (the app copies, the data folders), removed at the end. */
const copies: string[] = [];

interface Server {
  tree: string;
  label: string;
  url: string;
  p: Proc;
  pubId: string;
  authId: string;
}

async function start({ tree, env, label }: Variant, token: string): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-ab-'));
  copies.push(dataDir);
  // Each tree makes its users with its own code (the users table may differ between versions).
  const lib = (await import(join(tree, 'bench/lib.ts'))) as { ensureUsers(dir: string, ids: string[]): Promise<void> };
  await lib.ensureUsers(dataDir, ['bench-user']);
  // Every tree serves this tree's benchmark app (older trees may lack a walker), importing its own svc.
  const app = join(tree, 'bench/fixtures/.ab-http-app.ts');
  copyFileSync(new URL('./fixtures/http-bench-app.ts', import.meta.url), app);
  copies.push(app);
  const port = await freePort();
  const [cmd, a] = pinned(0, process.execPath, [join(tree, 'bin/svc.mjs'), 'start', app, '--workers', '1', '--port', String(port), '--host', '127.0.0.1']);
  const p = await serve(cmd, a, /Server ready/, { SVC_TRANSPORT: 'uws', SVC_ACCESS_LOG: 'false', JWT_SECRET: SECRET, SVC_DATA_DIR: dataDir, ...env });
  const url = `http://127.0.0.1:${port}`;
  const seed = async (headers: Record<string, string>) =>
    ((await (await fetch(`${url}/walker/Seed`, { method: 'POST', headers })).json()) as { data: { reports: { id: string }[] } }).data.reports[0]?.id as string;
  return { tree, label, url, p, pubId: await seed({}), authId: await seed({ authorization: `Bearer ${token}` }) };
}

interface Sample {
  rps: number;
  p99_ms: number;
  errors: number;
  /** Server CPU per answered request: steadier than throughput on a machine whose speed drifts. */
  cpu_us_per_req: number;
}

async function load(server: Server, request: LoadRequest): Promise<Sample> {
  const { rps, p99_ms, errors, cpu_us_per_req } = await maxLoad(server.url, [request], { seconds: SECONDS, warmup: WARMUP, connections: CONNECTIONS, cpuPid: server.p.proc.pid as number });
  return { rps, p99_ms, errors, cpu_us_per_req };
}

/** Geometric mean of per-round ratios (each round loads every tree back to back: drift cancels). */
const pairedRatio = (xs: number[], base: number[]): number => Math.exp(xs.reduce((sum, x, k) => sum + Math.log(x / (base[k] as number)), 0) / xs.length);

async function main(): Promise<void> {
  const token = await new SignJWT({ user_id: 'bench-user', role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('2h').sign(new TextEncoder().encode(SECRET));
  const auth = { authorization: `Bearer ${token}` };
  const servers: Server[] = [];
  // The load generator (this process and the engine's threads, started later) on core 1.
  pinSelf(1);
  try {
    for (const tree of trees) servers.push(await start(tree, token));
    const scenarios: { name: string; request: (s: Server) => LoadRequest }[] = [
      { name: 'echo_public', request: () => ({ path: '/walker/Echo', body: JSON.stringify({ msg: 'hello' }) }) },
      { name: 'read_public', request: (s) => ({ path: `/walker/ReadPub/${s.pubId}`, body: '{}' }) },
      { name: 'read_auth', request: (s) => ({ path: `/walker/ReadAuth/${s.authId}`, body: '{}', headers: auth }) },
      { name: 'write_auth', request: (s) => ({ path: `/walker/WriteAuth/${s.authId}`, body: '{}', headers: auth }) },
    ];
    const results: Record<string, Record<string, unknown>> = {};
    for (const sc of scenarios) {
      if (only && !only.has(sc.name)) continue;
      const samples = servers.map(() => [] as Sample[]);
      for (let r = 0; r < ROUNDS; r++) {
        for (let k = 0; k < servers.length; k++) {
          const i = (k + r) % servers.length;
          const s = servers[i] as Server;
          samples[i]?.push(await load(s, sc.request(s)));
        }
      }
      const of = (i: number, key: keyof Sample) => (samples[i] as Sample[]).map((x) => x[key]);
      results[sc.name] = {
        errors: samples.flat().reduce((n, x) => n + x.errors, 0),
        ...Object.fromEntries(
          servers.map((s, i) => [
            s.label,
            {
              rps_median: Math.round(median(of(i, 'rps'))),
              rps_vs_first: round(pairedRatio(of(i, 'rps'), of(0, 'rps')), 3),
              cpu_us_per_req: round(median(of(i, 'cpu_us_per_req')), 1),
              cpu_vs_first: round(pairedRatio(of(i, 'cpu_us_per_req'), of(0, 'cpu_us_per_req')), 3),
              p99_ms_median: round(median(of(i, 'p99_ms')), 2),
              rps_rounds: of(i, 'rps').map(Math.round),
              cpu_us_rounds: of(i, 'cpu_us_per_req').map((x) => round(x, 1)),
            },
          ]),
        ),
      };
      const row = results[sc.name] as Record<string, { rps_median: number; rps_vs_first: number; cpu_us_per_req: number; cpu_vs_first: number }>;
      process.stderr.write(`bench: ${sc.name} ${servers.map((s) => { const x = row[s.label]; return `${s.label} ${x?.rps_median} req/s (${x?.rps_vs_first}) ${x?.cpu_us_per_req} µs CPU/req (${x?.cpu_vs_first})`; }).join(' | ')}\n`);
    }
    const trees_ = servers.map((s) => ({ tree: s.label, commit: spawnSync('git', ['-C', s.tree, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() }));
    const file = save('ab-http', { bench: 'ab-http', at: new Date().toISOString(), setup: { rounds: ROUNDS, seconds: SECONDS, warmup_s: WARMUP, connections: CONNECTIONS, workers: 1, load: 'svc bench engine (bench/harness), 1 generator thread, closed loop', pinned: hasTaskset ? 'servers core 0, load core 1' : 'not pinned' }, trees: trees_, machine: machine(), results });
    for (const [name, row] of Object.entries(results)) {
      console.log(`\n${name}`);
      console.table(Object.fromEntries(Object.entries(row).filter(([, v]) => typeof v === 'object').map(([k, v]) => [k, withoutRounds(v as Record<string, unknown>)])));
    }
    console.log(`\nresults: ${file}`);
  } finally {
    for (const s of servers) await s.p.stop();
    for (const f of copies) rmSync(f, { recursive: true, force: true });
  }
}

await main();
