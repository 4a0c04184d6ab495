/**
 * Webhook benchmark: a signed webhook request (1 KB JSON body, a valid API
 * key, HMAC-SHA256 verified) against the same walker served as a public,
 * unauthenticated walker — one svc server, both loaded in alternation, so
 * that the machine's drift falls on both alike. Goal: the webhook at ≥ 0.8x
 * the public walker's requests/s.
 *
 *   npm run bench:webhook            (--rounds N, --seconds S, --quick)
 *
 * The server runs one worker thread pinned to core 0; the load — the engine of
 * `svc bench` (bench/harness), one generator thread in this process — on core 1.
 * Each load: 64 connections, a closed loop, 1 s of warm-up then the measured
 * seconds. Per scenario: the median throughput, p50/p99 latency and the
 * server's CPU time per request (all its threads, from /proc, over the
 * measured part); the ratio is the geometric
 * mean of the rounds' ratios. Then, in this process, what the webhook checks
 * cost on their own: `ApiKeys.check` on a key held in memory, and the HMAC
 * (and constant-time compare) of a 1 KB body. Writes bench/results/webhook-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { ApiKeys, serviceAccount } from '../actors/identity/index.ts';
import { MemoryUsersRepository } from '../stores/memory/index.ts';
import { ensureUsers, freePort, hasTaskset, type LoadRequest, machine, maxLoad, median, nsPerOp, pinned, pinSelf, type Proc, round, save, serve } from './lib.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROUNDS = flag('--rounds', quick ? 3 : 7);
const SECONDS = flag('--seconds', quick ? 3 : 5);
const CONNECTIONS = 64;
/** Seconds of load before each measured run (the engine's warm-up). */
const WARMUP = 1;
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const WEBHOOK_SECRET = 'bench-webhook-secret-bench-webhook-secret-0123';
const root = new URL('..', import.meta.url).pathname;
const app = new URL('./fixtures/webhook-bench-app.ts', import.meta.url).pathname;

/** A JSON body of exactly 1,024 bytes, as a sender would post it. */
function body1k(): string {
  const base = JSON.stringify({ event: 'invoice.paid', payload: '' });
  return JSON.stringify({ event: 'invoice.paid', payload: 'x'.repeat(1024 - base.length) });
}

interface Sample {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  cpu_us_per_req: number;
}

async function load(p: Proc, origin: string, request: LoadRequest): Promise<Sample> {
  const { rps, p50_ms, p99_ms, errors, cpu_us_per_req } = await maxLoad(origin, [request], { seconds: SECONDS, warmup: WARMUP, connections: CONNECTIONS, cpuPid: p.proc.pid as number });
  return { rps, p50_ms, p99_ms, errors, cpu_us_per_req };
}

const pairedRatio = (xs: number[], base: number[]): number => Math.exp(xs.reduce((sum, x, k) => sum + Math.log(x / (base[k] as number)), 0) / xs.length);


/** The webhook checks on their own, in this process. */
async function micro(body: string): Promise<Record<string, number>> {
  const users = new MemoryUsersRepository();
  const { user } = await serviceAccount(users, 'bench-user', 'user');
  // A long cache: the loop must measure the in-memory answer, not a store read.
  const keys = new ApiKeys({ users, expiryDays: 365, maxPerUser: 100, cacheMs: 3_600_000 });
  const { api_key } = await keys.create(user.user_id, { name: 'bench' });
  if (!(await keys.check(api_key))) throw new Error('the key does not check');
  const check = nsPerOp(() => {
    const h = keys.check(api_key);
    if (h instanceof Promise || h === undefined) throw new Error('not answered from memory');
  }, 200_000);
  const bytes = Buffer.from(body);
  const secretKey = createSecretKey(Buffer.from(WEBHOOK_SECRET));
  const expected = createHmac('sha256', WEBHOOK_SECRET).update(bytes).digest();
  const given = Buffer.from(expected.toString('hex'), 'hex');
  const hmacKeyObject = nsPerOp(() => timingSafeEqual(given, createHmac('sha256', secretKey).update(bytes).digest()), 200_000);
  const hmacString = nsPerOp(() => createHmac('sha256', WEBHOOK_SECRET).update(bytes).digest(), 200_000);
  return {
    api_key_check_cached_ns: check,
    hmac_sha256_1kb_verify_ns: hmacKeyObject,
    hmac_sha256_1kb_string_secret_ns: hmacString,
    webhook_checks_total_ns: round(check + hmacKeyObject, 1),
  };
}

async function main(): Promise<void> {
  const body = body1k();
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-webhook-'));
  let server: Proc | undefined;
  try {
    await ensureUsers(dataDir, ['bench-user']);
    const token = await new SignJWT({ user_id: 'bench-user', role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('2h').sign(new TextEncoder().encode(JWT_SECRET));
    const port = await freePort();
    const [cmd, a] = pinned(0, process.execPath, [join(root, 'bin/svc.mjs'), 'start', app, '--workers', '1', '--port', String(port), '--host', '127.0.0.1']);
    server = await serve(cmd, a, /Server ready/, { SVC_TRANSPORT: 'uws', SVC_ACCESS_LOG: 'false', JWT_SECRET, WEBHOOK_SECRET, SVC_DATA_DIR: dataDir });
    const url = `http://127.0.0.1:${port}`;
    // The load generator (this process and the engine's threads, started later) on core 1.
    pinSelf(1);
    const created = (await (await fetch(`${url}/api-key/create`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ name: 'bench' }) })).json()) as { data: { api_key: string } };
    const key = created.data.api_key;
    const signature = createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex');
    const scenarios: { name: string; request: LoadRequest }[] = [
      { name: 'public_walker', request: { path: '/walker/NotifyPublic', body } },
      { name: 'webhook_signed', request: { path: '/webhook/Notify', body, headers: { 'x-api-key': key, 'x-webhook-signature': signature } } },
    ];
    // Both answer 200 before anything is measured (a refused webhook would be fast and wrong).
    for (const s of scenarios) {
      const res = await fetch(url + s.request.path, { method: 'POST', headers: { 'content-type': 'application/json', ...s.request.headers }, body });
      if (res.status !== 200) throw new Error(`${s.name}: ${res.status} ${await res.text()}`);
    }
    const samples = scenarios.map(() => [] as Sample[]);
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < scenarios.length; k++) {
        const i = (k + r) % scenarios.length;
        const s = scenarios[i] as (typeof scenarios)[number];
        samples[i]?.push(await load(server, url, s.request));
        process.stderr.write(`bench: round ${r + 1} ${s.name} ${Math.round(samples[i]?.at(-1)?.rps ?? 0)} req/s\n`);
      }
    }
    const of = (i: number, k: keyof Sample) => (samples[i] as Sample[]).map((x) => x[k]);
    const results: Record<string, unknown> = {};
    scenarios.forEach((s, i) => {
      results[s.name] = {
        rps_median: Math.round(median(of(i, 'rps'))),
        p50_ms_median: round(median(of(i, 'p50_ms')), 3),
        p99_ms_median: round(median(of(i, 'p99_ms')), 3),
        cpu_us_per_req: round(median(of(i, 'cpu_us_per_req')), 1),
        errors: of(i, 'errors').reduce((n, x) => n + x, 0),
        rps_rounds: of(i, 'rps').map(Math.round),
      };
    });
    const checks = await micro(body);
    results.ratio = {
      webhook_vs_public_rps: round(pairedRatio(of(1, 'rps'), of(0, 'rps')), 3),
      webhook_vs_public_cpu_per_req: round(pairedRatio(of(1, 'cpu_us_per_req'), of(0, 'cpu_us_per_req')), 3),
      goal: '>= 0.8x public walker requests/s',
    };
    results.checks_in_process = checks;
    const out = {
      bench: 'webhook',
      at: new Date().toISOString(),
      quick,
      setup: {
        rounds: ROUNDS,
        seconds: SECONDS,
        warmup_s: WARMUP,
        connections: CONNECTIONS,
        body_bytes: Buffer.byteLength(body),
        svc_workers: 1,
        transport: 'uws',
        load: 'svc bench engine (bench/harness), 1 generator thread, closed loop',
        pinned: hasTaskset ? 'server core 0, load core 1' : 'not pinned (no taskset)',
        commit: spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim(),
      },
      machine: machine(),
      results,
    };
    const file = save('webhook', out);
    // The medians; the file keeps each round's figures.
    console.table(Object.fromEntries(scenarios.map((s) => [s.name, Object.fromEntries(Object.entries(results[s.name] as object).filter(([k]) => !k.endsWith('_rounds')))])));
    console.table(results.ratio);
    console.table(checks);
    console.log(`written ${file}`);
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
