/**
 * HTTP benchmark: svc walker endpoints side by side with raw uWebSockets.js
 * (the ceiling), node:http, Fastify and FastAPI/uvicorn, in one run. The
 * server is pinned to core 0 and the load generator (wrk) to core 1.
 *
 *   npm run bench:http            (--quick for short runs)
 *
 * Scenarios (one worker thread for svc): a public echo walker; a walker that
 * reads one node, public and with a JWT; a walker that writes one node (with
 * a JWT, every answer after its commit); the same echo on svc's node:http
 * fallback against raw node:http; p99 latency at 70% of each svc scenario's
 * own maximum (autocannon, fixed rate). Writes bench/results/http-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { SignJWT } from 'jose';
import { ensureUsers, freePort, hasTaskset, machine, parseWrk, pinned, type Proc, round, save, serve as serveAny, wrkScript, wrkSpreadScript } from './lib.ts';

const quick = process.argv.includes('--quick');
const DURATION = quick ? 4 : 10;
const CONNECTIONS = 64;
/** svc worker threads (SVC_BENCH_WORKERS; default 1, the figures in bench/results). */
const WORKERS = Number(process.env.SVC_BENCH_WORKERS ?? 1);
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;
const hasWrk = spawnSync('wrk', ['--version']).status !== null && existsSync('/usr/bin/wrk');
// Debian's python3-fastapi and python3-uvicorn live with the system Python.
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const hasUvicorn = spawnSync(PYTHON, ['-c', 'import fastapi, uvicorn']).status === 0;

/** Cores of the servers (SVC_BENCH_SERVER_CORES, a taskset list; default core 0, the load runs on core 1). */
const SERVER_CORES = process.env.SVC_BENCH_SERVER_CORES ?? '0';

/** Start a server process pinned to core 0 and wait for its ready line. */
function serve(cmd: string, args: string[], ready: RegExp, env: Record<string, string> = {}): Promise<Proc> {
  const [c, a] = pinned(SERVER_CORES, cmd, args);
  return serveAny(c, a, ready, env);
}

interface Load {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}


/** Maximum throughput with wrk (pinned to core 1); autocannon when wrk is missing. */
async function maxLoad(url: string, body: string, headers: Record<string, string> = {}, script?: string): Promise<Load> {
  process.stderr.write(`bench: load ${url}\n`);
  if (!hasWrk) {
    if (script) throw new Error('spread scenarios need wrk');
    const r = await autocannon({ url, method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, connections: CONNECTIONS, duration: DURATION });
    return { rps: Math.round(r.requests.average), p50_ms: r.latency.p50, p99_ms: r.latency.p99, errors: r.errors + r.non2xx };
  }
  script ??= wrkScript(body, headers);
  // Warm up, then measure.
  spawnSync(...pinned(1, 'wrk', ['-t1', `-c${CONNECTIONS}`, '-d2s', '-s', script, url]));
  const [c, a] = pinned(1, 'wrk', ['-t1', `-c${CONNECTIONS}`, `-d${DURATION}s`, '--latency', '-s', script, url]);
  const { rps, p50_ms, p99_ms, errors } = parseWrk(spawnSync(c, a, { encoding: 'utf8' }).stdout);
  return { rps: Math.round(rps), p50_ms: round(p50_ms, 3), p99_ms: round(p99_ms, 3), errors };
}

/** Latency at a fixed rate (70% of the scenario's maximum), with autocannon. */
async function atRate(url: string, body: string, rate: number, headers: Record<string, string> = {}): Promise<{ rate: number; p50_ms: number; p99_ms: number }> {
  const r = await autocannon({
    url,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    connections: 32,
    overallRate: Math.max(1, Math.round(rate)),
    duration: DURATION,
  });
  return { rate: Math.round(rate), p50_ms: r.latency.p50, p99_ms: r.latency.p99 };
}

async function svcServer(transport: 'uws' | 'node', dataDir: string): Promise<{ p: Proc; url: string }> {
  const port = await freePort();
  const p = await serve(
    process.execPath,
    [join(root, 'bin/svc.mjs'), 'start', join(fixtures, 'http-bench-app.ts'), '--workers', String(WORKERS), '--port', String(port), '--host', '127.0.0.1'],
    /Server ready/,
    { SVC_TRANSPORT: transport, SVC_ACCESS_LOG: 'false', JWT_SECRET: SECRET, SVC_DATA_DIR: dataDir },
  );
  return { p, url: `http://127.0.0.1:${port}` };
}

async function main(): Promise<void> {
  const echoBody = JSON.stringify({ msg: 'hello' });
  const results: Record<string, Record<string, number | string>> = {};
  const token = await new SignJWT({ user_id: 'bench-user', role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET));
  const auth = { authorization: `Bearer ${token}` };

  // Ceiling: raw uWS.
  let port = await freePort();
  let p = await serve(process.execPath, [join(fixtures, 'raw-uws.mjs'), String(port)], /ready/);
  const rawUws = await maxLoad(`http://127.0.0.1:${port}/walker/Echo`, echoBody);
  await p.stop();

  port = await freePort();
  p = await serve(process.execPath, [join(fixtures, 'raw-node.mjs'), String(port)], /ready/);
  const rawNode = await maxLoad(`http://127.0.0.1:${port}/walker/Echo`, echoBody);
  await p.stop();

  port = await freePort();
  p = await serve(process.execPath, [join(fixtures, 'fastify-echo.mjs'), String(port)], /ready/);
  const fastify = await maxLoad(`http://127.0.0.1:${port}/walker/Echo`, echoBody);
  await p.stop();

  let fastapi: Load | undefined;
  if (hasUvicorn) {
    port = await freePort();
    p = await serve(PYTHON, ['-m', 'uvicorn', 'fastapi_echo:app', '--app-dir', fixtures, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'info', '--no-access-log'], /Uvicorn running|Application startup complete/);
    fastapi = await maxLoad(`http://127.0.0.1:${port}/walker/Echo`, echoBody);
    await p.stop();
  }

  // svc on uWebSockets.js, one worker thread.
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-http-'));
  const spreadUsers = Array.from({ length: 32 }, (_, i) => `bench-writer-${i}`);
  await ensureUsers(dataDir, ['bench-user', ...spreadUsers]);
  const spreadTokens = await Promise.all(
    spreadUsers.map((id) => new SignJWT({ user_id: id, role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))),
  );
  const svc = await svcServer('uws', dataDir);
  const seeded = (await (await fetch(`${svc.url}/walker/Seed`, { method: 'POST' })).json()) as { data: { reports: { id: string }[] } };
  const pubId = seeded.data.reports[0]?.id as string;
  const seededAuth = (await (await fetch(`${svc.url}/walker/Seed`, { method: 'POST', headers: auth })).json()) as { data: { reports: { id: string }[] } };
  const authId = seededAuth.data.reports[0]?.id as string;
  // The nodes of the spread writes, one per user (seeded before any load: an idle keep-alive connection would be closed meanwhile).
  const spread: { path: string; headers: Record<string, string> }[] = [];
  for (const t of spreadTokens) {
    const res = (await (await fetch(`${svc.url}/walker/Seed`, { method: 'POST', headers: { authorization: `Bearer ${t}` } })).json()) as { data: { reports: { id: string }[] } };
    spread.push({ path: `/walker/WriteAuth/${res.data.reports[0]?.id}`, headers: { Authorization: `Bearer ${t}` } });
  }
  const echo = await maxLoad(`${svc.url}/walker/Echo`, echoBody);
  const readPub = await maxLoad(`${svc.url}/walker/ReadPub/${pubId}`, '{}');
  const readAuth = await maxLoad(`${svc.url}/walker/ReadAuth/${authId}`, '{}', auth);
  // Writes: one partition, every answer after its commit (group-committed).
  const writeAuth = await maxLoad(`${svc.url}/walker/WriteAuth/${authId}`, '{}', auth);
  // Writes spread over 32 users' partitions (over every worker thread).
  const writeSpread = await maxLoad(svc.url, '', {}, wrkSpreadScript(spread));
  const echo70 = await atRate(`${svc.url}/walker/Echo`, echoBody, echo.rps * 0.7);
  const readPub70 = await atRate(`${svc.url}/walker/ReadPub/${pubId}`, '{}', readPub.rps * 0.7);
  const readAuth70 = await atRate(`${svc.url}/walker/ReadAuth/${authId}`, '{}', readAuth.rps * 0.7, auth);
  const rss = Number(spawnSync('ps', ['-o', 'rss=', '-p', String(svc.p.proc.pid)], { encoding: 'utf8' }).stdout.trim()) || 0;
  await svc.p.stop();

  // svc on its node:http fallback.
  const svcNode = await svcServer('node', dataDir);
  const echoNode = await maxLoad(`${svcNode.url}/walker/Echo`, echoBody);
  await svcNode.p.stop();

  const ratio = (a: number, b: number) => round(a / b, 2);
  results.baselines = {
    raw_uws_rps: rawUws.rps,
    raw_uws_p99_ms: rawUws.p99_ms,
    node_http_rps: rawNode.rps,
    fastify_rps: fastify.rps,
    fastapi_uvicorn_rps: fastapi?.rps ?? 'not installed',
  };
  results.svc_echo_public = { ...echo, vs_raw_uws: ratio(echo.rps, rawUws.rps), vs_fastify: ratio(echo.rps, fastify.rps), vs_fastapi: fastapi ? ratio(echo.rps, fastapi.rps) : 'n/a', goal: '>= 0.6x raw uWS; >= 10x FastAPI' };
  results.svc_read_public = { ...readPub, vs_raw_uws: ratio(readPub.rps, rawUws.rps), p99_ms_at_70pct: readPub70.p99_ms, goal: '>= 0.35x raw uWS, p99 <= 5 ms at 70%' };
  results.svc_read_auth = { ...readAuth, vs_raw_uws: ratio(readAuth.rps, rawUws.rps), p99_ms_at_70pct: readAuth70.p99_ms, goal: '>= 0.35x raw uWS, p99 <= 5 ms at 70%' };
  results.svc_write_auth = { ...writeAuth, vs_raw_uws: ratio(writeAuth.rps, rawUws.rps), goal: 'reported (no goal yet): one node updated per request, committed before the answer' };
  results.svc_write_spread = { ...writeSpread, vs_raw_uws: ratio(writeSpread.rps, rawUws.rps), goal: 'reported (no goal yet): 32 users, one node each, committed before the answer' };
  results.svc_echo_at_70pct = { rate: echo70.rate, p50_ms: echo70.p50_ms, p99_ms: echo70.p99_ms };
  results.svc_node_fallback = { ...echoNode, vs_node_http: ratio(echoNode.rps, rawNode.rps), goal: '>= 0.85x raw node:http' };
  results.memory = { svc_process_rss_mb_after_load: round(rss / 1024, 1) };
  const out = {
    bench: 'http',
    at: new Date().toISOString(),
    quick,
    setup: { duration_s: DURATION, connections: CONNECTIONS, load: hasWrk ? 'wrk -t1' : 'autocannon', pinned: hasTaskset ? `server cores ${SERVER_CORES}, load core 1` : 'not pinned (no taskset)', svc_workers: WORKERS, access_log: false },
    machine: machine(),
    results,
  };
  const file = save('http', out);
  for (const [name, row] of Object.entries(results)) {
    console.log(`\n${name}`);
    console.table(row);
  }
  console.log(`written ${file}`);
}

await main();
