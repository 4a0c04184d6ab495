/**
 * HTTP benchmark: svc walker endpoints side by side with raw uWebSockets.js
 * (the ceiling), node:http, Fastify and FastAPI/uvicorn, in one run, through
 * the load engine of `svc bench` (bench/harness: one way to measure). Servers
 * are pinned to core 0 and this process — the load generator — to core 1.
 *
 *   npm run bench:http                         (--quick for short runs)
 *   npm run bench:http -- --before <git ref>   also the svc scenarios of that commit, in the same run
 *   npm run bench:http -- --multicore          1 worker + 1 load core, then 2 workers sharing both cores with the load
 *
 * Scenarios (one worker thread for svc): a public echo walker; a walker that
 * reads one node, public and with a JWT; a walker that writes one node (with
 * a JWT, every answer after its commit); writes spread over 32 users; the same
 * echo on svc's node:http fallback against raw node:http; p99 latency at 70%
 * of the echo's own maximum (open loop). Each with the server's CPU time per
 * request (user + system, every thread, from /proc). Writes
 * bench/results/http-<time>.json.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { runLoad } from './harness/index.ts';
import { ensureUsers, freePort, hasTaskset, type LoadRequest, machine, maxLoad, pinned, pinSelf, postPlan, type Proc, round, save, serve as serveAny } from './lib.ts';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const multicore = argv.includes('--multicore');
const beforeRef = argv.includes('--before') ? argv[argv.indexOf('--before') + 1] : undefined;
const DURATION = quick ? 4 : 10;
const WARMUP = 2;
const CONNECTIONS = 64;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;
// Debian's python3-fastapi and python3-uvicorn live with the system Python.
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const hasUvicorn = spawnSync(PYTHON, ['-c', 'import fastapi, uvicorn']).status === 0;

/** Cores of the servers (a taskset list; default core 0, the load runs on core 1). */
let serverCores = process.env.SVC_BENCH_SERVER_CORES ?? '0';

function serve(cmd: string, args: string[], ready: RegExp, env: Record<string, string> = {}, cwd?: string): Promise<Proc> {
  const [c, a] = pinned(serverCores, cmd, args);
  return serveAny(c, a, ready, env, cwd);
}

interface Load {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  /** Server CPU (every thread, user + system) per answered request. */
  cpu_us_per_req: number;
}

/** Maximum throughput (closed loop, 64 connections) and the server's CPU per request while measured. */
async function load(server: Proc, origin: string, bodies: LoadRequest[]): Promise<Load> {
  process.stderr.write(`bench: load ${origin}${bodies[0]?.path}${bodies.length > 1 ? ` (+${bodies.length - 1})` : ''}\n`);
  const out = await maxLoad(origin, bodies, { seconds: DURATION, warmup: WARMUP, connections: CONNECTIONS, cpuPid: server.proc.pid as number });
  return {
    rps: Math.round(out.rps),
    p50_ms: round(out.p50_ms, 3),
    p99_ms: round(out.p99_ms, 3),
    errors: out.errors,
    cpu_us_per_req: round(out.cpu_us_per_req, 1),
  };
}

/** Latency at a fixed rate (open loop, measured from each request's due time). */
async function atRate(origin: string, body: LoadRequest, rate: number): Promise<{ rate: number; achieved: number; p50_ms: number; p99_ms: number }> {
  const out = await runLoad(postPlan(origin, [body], { mode: 'open', rate: Math.max(1, Math.round(rate)), connections: 256, duration_s: DURATION, warmup_s: WARMUP }));
  return { rate: Math.round(rate), achieved: Math.round(out.throughput.rps), p50_ms: round(out.latency_ms.p50, 3), p99_ms: round(out.latency_ms.p99, 3) };
}

async function baseline(file: string, body: LoadRequest, cmd = process.execPath, ready = /ready/): Promise<Load> {
  const port = await freePort();
  const args = cmd === PYTHON ? ['-m', 'uvicorn', 'fastapi_echo:app', '--app-dir', fixtures, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'info', '--no-access-log'] : [join(fixtures, file), String(port)];
  const p = await serve(cmd, args, ready);
  try {
    return await load(p, `http://127.0.0.1:${port}`, [body]);
  } finally {
    await p.stop();
  }
}

async function token(userId: string): Promise<string> {
  return new SignJWT({ user_id: userId, role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
}

async function svcServer(checkout: string, transport: 'uws' | 'node', dataDir: string, workers: number): Promise<{ p: Proc; url: string }> {
  const port = await freePort();
  const p = await serve(
    process.execPath,
    [join(checkout, 'bin/svc.mjs'), 'start', join(checkout, 'bench/fixtures/http-bench-app.ts'), '--workers', String(workers), '--port', String(port), '--host', '127.0.0.1'],
    /Server ready/,
    { SVC_TRANSPORT: transport, SVC_ACCESS_LOG: 'false', JWT_SECRET: SECRET, SVC_DATA_DIR: dataDir },
    checkout,
  );
  return { p, url: `http://127.0.0.1:${port}` };
}

async function seed(url: string, auth?: string): Promise<string> {
  const res = await fetch(`${url}/walker/Seed`, { method: 'POST', headers: auth ? { authorization: `Bearer ${auth}` } : {} });
  const json = (await res.json()) as { data: { reports: { id: string }[] } };
  return json.data.reports[0]?.id as string;
}

const ECHO: LoadRequest = { path: '/walker/Echo', body: JSON.stringify({ msg: 'hello' }) };

/** The svc scenarios, on the code at `checkout` (this repository, or a worktree of `--before`). */
async function svcScenarios(checkout: string): Promise<Record<string, Load | Record<string, number>>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-http-'));
  const spreadUsers = Array.from({ length: 32 }, (_, i) => `bench-writer-${i}`);
  await ensureUsers(dataDir, ['bench-user', ...spreadUsers]);
  const userToken = await token('bench-user');
  const auth = { authorization: `Bearer ${userToken}` };
  const svc = await svcServer(checkout, 'uws', dataDir, 1);
  const out: Record<string, Load | Record<string, number>> = {};
  try {
    const pubId = await seed(svc.url);
    const authId = await seed(svc.url, userToken);
    // The nodes of the spread writes, one per user (seeded before any load).
    const spread: LoadRequest[] = [];
    for (const u of spreadUsers) {
      const t = await token(u);
      spread.push({ path: `/walker/WriteAuth/${await seed(svc.url, t)}`, body: '{}', headers: { authorization: `Bearer ${t}` } });
    }
    out.echo_public = await load(svc.p, svc.url, [ECHO]);
    out.read_public = await load(svc.p, svc.url, [{ path: `/walker/ReadPub/${pubId}`, body: '{}' }]);
    out.read_auth = await load(svc.p, svc.url, [{ path: `/walker/ReadAuth/${authId}`, body: '{}', headers: auth }]);
    // Writes: one partition, every answer after its commit (group-committed).
    out.write_auth = await load(svc.p, svc.url, [{ path: `/walker/WriteAuth/${authId}`, body: '{}', headers: auth }]);
    // Writes spread over 32 users' partitions.
    out.write_spread = await load(svc.p, svc.url, spread);
    const echo = out.echo_public as Load;
    out.echo_at_70pct = await atRate(svc.url, ECHO, echo.rps * 0.7);
    const rss = Number(spawnSync('ps', ['-o', 'rss=', '-p', String(svc.p.proc.pid)], { encoding: 'utf8' }).stdout.trim()) || 0;
    out.memory = { rss_mb_after_load: round(rss / 1024, 1) };
  } finally {
    await svc.p.stop();
  }
  const node = await svcServer(checkout, 'node', dataDir, 1);
  try {
    out.echo_node_fallback = await load(node.p, node.url, [ECHO]);
  } finally {
    await node.p.stop();
  }
  rmSync(dataDir, { recursive: true, force: true });
  return out;
}

/** A worktree of `ref` sharing this checkout's node_modules. */
function worktree(ref: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-before-'));
  rmSync(dir, { recursive: true });
  execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', dir, ref], { stdio: 'ignore' });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return {
    dir,
    remove: () => {
      execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', dir], { stdio: 'ignore' });
    },
  };
}

async function multicoreRun(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-http-'));
  const results: Record<string, unknown> = {};
  // Authenticated reads spread over 32 users, each of its own node (their partitions spread over the workers).
  const readers = Array.from({ length: 32 }, (_, i) => `bench-reader-${i}`);
  await ensureUsers(dataDir, readers);
  const tokens = await Promise.all(readers.map((u) => token(u)));
  const spreadReads = async (url: string): Promise<LoadRequest[]> => {
    const out: LoadRequest[] = [];
    for (const t of tokens) out.push({ path: `/walker/ReadAuth/${await seed(url, t)}`, body: '{}', headers: { authorization: `Bearer ${t}` } });
    return out;
  };
  // 1 worker on core 0, the load on core 1.
  serverCores = '0';
  pinSelf('1');
  let svc = await svcServer(root, 'uws', dataDir, 1);
  try {
    results.one_worker_one_load_core = await load(svc.p, svc.url, [ECHO]);
    results.reads_32_users_one_worker_one_load_core = await load(svc.p, svc.url, await spreadReads(svc.url));
  } finally {
    await svc.p.stop();
  }
  // 2 workers and the load generator sharing both cores.
  serverCores = '0,1';
  pinSelf('0,1');
  svc = await svcServer(root, 'uws', dataDir, 2);
  try {
    results.two_workers_shared_cores = await load(svc.p, svc.url, [ECHO]);
    results.reads_32_users_two_workers_shared_cores = await load(svc.p, svc.url, await spreadReads(svc.url));
  } finally {
    await svc.p.stop();
  }
  const port = await freePort();
  const raw = await serve(process.execPath, [join(fixtures, 'raw-uws.mjs'), String(port)], /ready/);
  try {
    results.raw_uws_one_thread_shared_cores = await load(raw, `http://127.0.0.1:${port}`, [ECHO]);
  } finally {
    await raw.stop();
  }
  const scaling = (one: string, two: string) => round((results[one] as Load).cpu_us_per_req / (results[two] as Load).cpu_us_per_req, 2);
  results.prediction = {
    // Throughput per core is 1 / (CPU per request): if a second worker costs no more CPU per request, each added core adds as much.
    per_added_core_scaling: scaling('one_worker_one_load_core', 'two_workers_shared_cores'),
    per_added_core_scaling_reads_32_users: scaling('reads_32_users_one_worker_one_load_core', 'reads_32_users_two_workers_shared_cores'),
    note: 'CPU µs per request with 1 worker / with 2 workers: ≥ 0.8 predicts ≥ 0.8x more throughput per added core when the load has cores of its own. Echo runs on the guest root, one partition on one worker: with 2 workers about half of the requests arrive on the other worker and are forwarded; the reads spread over 32 users, forwarded in the same proportion.',
  };
  rmSync(dataDir, { recursive: true, force: true });
  return results;
}

async function main(): Promise<void> {
  if (multicore) {
    const results = await multicoreRun();
    const file = save('http-multicore', { bench: 'http-multicore', at: new Date().toISOString(), quick, setup: { duration_s: DURATION, connections: CONNECTIONS, load: 'svc bench engine, 1 thread' }, machine: machine(), results });
    console.log(JSON.stringify(results, null, 2));
    console.log(`written ${file}`);
    return;
  }
  pinSelf('1');
  const baselines: Record<string, Load | string> = {};
  baselines.raw_uws = await baseline('raw-uws.mjs', ECHO);
  baselines.raw_node_http = await baseline('raw-node.mjs', ECHO);
  baselines.fastify = await baseline('fastify-echo.mjs', ECHO);
  baselines.fastapi_uvicorn = hasUvicorn ? await baseline('', ECHO, PYTHON, /Uvicorn running|Application startup complete/) : 'not installed';

  const after = await svcScenarios(root);
  let before: Record<string, Load | Record<string, number>> | undefined;
  if (beforeRef) {
    const wt = worktree(beforeRef);
    try {
      before = await svcScenarios(wt.dir);
    } finally {
      wt.remove();
    }
  }

  const rawUws = baselines.raw_uws as Load;
  const rawNode = baselines.raw_node_http as Load;
  const fastapi = typeof baselines.fastapi_uvicorn === 'string' ? undefined : baselines.fastapi_uvicorn;
  const ratio = (a: number, b: number) => round(a / b, 2);
  const ratios = (r: Record<string, Load | Record<string, number>>) => {
    const echo = r.echo_public as Load;
    return {
      echo_vs_raw_uws: ratio(echo.rps, rawUws.rps),
      read_public_vs_raw_uws: ratio((r.read_public as Load).rps, rawUws.rps),
      read_auth_vs_raw_uws: ratio((r.read_auth as Load).rps, rawUws.rps),
      echo_vs_fastapi: fastapi ? ratio(echo.rps, fastapi.rps) : 'n/a',
      echo_vs_fastify: ratio(echo.rps, (baselines.fastify as Load).rps),
      node_fallback_vs_raw_node_http: ratio((r.echo_node_fallback as Load).rps, rawNode.rps),
    };
  };
  const out = {
    bench: 'http',
    at: new Date().toISOString(),
    quick,
    setup: {
      duration_s: DURATION,
      warmup_s: WARMUP,
      connections: CONNECTIONS,
      load: 'svc bench engine (bench/harness), 1 generator thread',
      pinned: hasTaskset ? `servers on core ${serverCores}, load on core 1` : 'not pinned (no taskset)',
      svc_workers: 1,
      access_log: false,
      before: beforeRef ?? null,
    },
    goals: { echo_vs_raw_uws: 0.6, read_auth_vs_raw_uws: 0.45, echo_vs_fastapi: 10, node_fallback_vs_raw_node_http: 0.85 },
    machine: machine(),
    baselines,
    svc: after,
    ratios: ratios(after),
    ...(before ? { before: { svc: before, ratios: ratios(before) } } : {}),
  };
  const file = save('http', out);
  const rows: Record<string, Record<string, unknown>> = {};
  for (const [name, l] of Object.entries(baselines)) if (typeof l !== 'string') rows[name] = { rps: l.rps, cpu_us: l.cpu_us_per_req, p99_ms: l.p99_ms };
  for (const [name, l] of Object.entries(after)) {
    if (!('rps' in l)) continue;
    const b = before?.[name] as Load | undefined;
    rows[`svc ${name}`] = { rps: l.rps, cpu_us: l.cpu_us_per_req, p99_ms: l.p99_ms, ...(b ? { before_rps: b.rps, before_cpu_us: b.cpu_us_per_req } : {}) };
  }
  console.table(rows);
  console.table({ after: out.ratios, ...(before ? { before: ratios(before) } : {}), goals: out.goals });
  console.log(`written ${file}`);
}

await main();
