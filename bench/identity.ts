/**
 * Identity benchmark, in one run on one machine:
 *
 *  1. login throughput of svc (`POST /user/login`, argon2id verify inside)
 *     against raw argon2 verify of the same hash at the same concurrency, in a
 *     plain Node process (the ceiling: nothing but hashing), and against the
 *     hashing pool alone (`ThreadHasher`, no HTTP);
 *  2. authenticated walker calls (`ReadAuth`, a JWT, one node read), loaded
 *     by the engine of `svc bench` (bench/harness: 16 connections, a closed
 *     loop, one generator thread in this process, 2 s of warm-up), alone and
 *     while logins run at full speed: throughput kept and p99.
 *
 *   npm run bench:identity            (--quick for short runs)
 *
 * Nothing is pinned: the server uses the whole machine, as deployed.
 * Writes bench/results/identity-<time>.json.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, machine, maxLoad, type Proc, round, save, serve } from './lib.ts';

const quick = process.argv.includes('--quick');
const DURATION = quick ? 4 : 10;
const CORES = availableParallelism();
/** Connections of the walker-call load, and its warm-up (s). */
const CONNECTIONS = 16;
const WARMUP = 2;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123';
const PASSWORD = 'bench password that is long';
const root = new URL('..', import.meta.url).pathname;
const fixtures = new URL('./fixtures/', import.meta.url).pathname;

async function startSvc(env: Record<string, string>): Promise<Proc & { url: string }> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-identity-'));
  const server = await serve(process.execPath, [join(root, 'bin/svc.mjs'), 'start', join(fixtures, 'http-bench-app.ts'), '--port', String(port), '--host', '127.0.0.1'], /Server ready/, {
    SVC_ACCESS_LOG: 'false',
    JWT_SECRET: SECRET,
    SVC_DATA_DIR: dataDir,
    ADMIN_DEFAULT_PASSWORD: 'bench operator secret',
    SVC_LOGIN_ATTEMPTS_PER_ADDRESS: '1000000000',
    // 16 users logging in back to back: the per-identity limit of successes would answer 429 instead of hashing.
    SVC_LOGIN_SUCCESSES_PER_IDENTITY: '1000000000',
    ...env,
  });
  return { ...server, url: `http://127.0.0.1:${port}` };
}

/**
 * Verifies per second of one argon2id hash at `concurrency`, in a child process (nothing else running in it): `setup`
 * defines `verify(stored, password)`. The same loop measures raw argon2 and the hashing pool.
 */
function verifyRate(setup: string, concurrency: number): Promise<number> {
  const script = `
    import { hash } from '@node-rs/argon2';
    import { ARGON2_OPTIONS } from './actors/identity/hasher.ts';
    ${setup}
    const stored = await hash(${JSON.stringify(PASSWORD)}, ARGON2_OPTIONS);
    const run = async (ms) => {
      let n = 0;
      const end = Date.now() + ms;
      await Promise.all(Array.from({ length: ${concurrency} }, async () => {
        while (Date.now() < end) { if (!(await verify(stored, ${JSON.stringify(PASSWORD)}))) throw new Error('verify'); n++; }
      }));
      return n / (ms / 1000);
    };
    await run(1000);
    console.log(JSON.stringify({ rate: await run(${DURATION * 1000}) }));
    process.exit(0);
  `;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.once('exit', (code) => (code === 0 ? resolve((JSON.parse(out) as { rate: number }).rate) : reject(new Error(`verify rate exited ${code}`))));
  });
}

/** Raw argon2 verify (the same library, on libuv's pool): the ceiling. */
const RAW_ARGON2 = `import { verify } from '@node-rs/argon2';`;

/** The process's hashing pool as `svc start` makes it (default threads and nice), without HTTP. */
const HASH_POOL = `
    import { ThreadHasher } from './actors/identity/hasher.ts';
    const pool = new ThreadHasher({ threads: Number(process.env.SVC_HASH_CONCURRENCY) || 0, nice: Number(process.env.SVC_HASH_NICE || 10) });
    const verify = (stored, password) => pool.run({ op: 'verify-argon2', stored, password });`;

/** `concurrency` clients logging in back to back until `stop` resolves: logins per second. */
async function loginLoad(url: string, users: string[], concurrency: number, until: Promise<void>, warmMs = 1000): Promise<{ rate: number; errors: number; p50_ms: number; p99_ms: number }> {
  let done = false;
  void until.then(() => (done = true));
  let n = 0;
  let errors = 0;
  const lat: number[] = [];
  const started = Date.now();
  let measuredFrom = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const user = users[i % users.length] as string;
      const body = JSON.stringify({ identity: { type: 'username', value: user }, credential: { type: 'password', password: PASSWORD } });
      while (!done) {
        const t0 = performance.now();
        const res = await fetch(`${url}/user/login`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
        await res.text();
        if (Date.now() - started < warmMs) continue;
        if (!measuredFrom) measuredFrom = Date.now();
        if (res.status === 200) {
          n++;
          lat.push(performance.now() - t0);
        } else errors++;
      }
    }),
  );
  const seconds = (Date.now() - measuredFrom) / 1000;
  lat.sort((a, b) => a - b);
  return { rate: round(n / seconds, 1), errors, p50_ms: round(lat[Math.floor(lat.length * 0.5)] ?? NaN, 1), p99_ms: round(lat[Math.floor(lat.length * 0.99)] ?? NaN, 1) };
}


/** `{}` POSTed to `path` of `origin` at full speed for DURATION seconds, after the warm-up (async, so logins can run beside it). */
async function walkerLoad(origin: string, path: string, headers: Record<string, string>): Promise<{ rps: number; p50_ms: number; p99_ms: number; errors: number }> {
  const out = await maxLoad(origin, [{ path, body: '{}', headers }], { seconds: DURATION, warmup: WARMUP, connections: CONNECTIONS });
  return { rps: Math.round(out.rps), p50_ms: round(out.p50_ms, 3), p99_ms: round(out.p99_ms, 3), errors: out.errors };
}

async function json(url: string, body: unknown, headers: Record<string, string> = {}): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return res.json();
}

/** Logins alone, then walker calls alone and while logins run, against the server at `svcUrl`. */
async function svcFigures(svcUrl: string, raw: Record<string, number>, concurrencies: number[]) {
  const users = Array.from({ length: 16 }, (_, i) => `bench_user_${i}`);
  for (const u of users) await json(`${svcUrl}/user/register`, { identities: [{ type: 'username', value: u }], credential: { type: 'password', password: PASSWORD } });
  const login: Record<string, unknown> = {};
  for (const c of concurrencies) {
    process.stderr.write(`bench: svc login, concurrency ${c}\n`);
    const r = await loginLoad(svcUrl, users, c, new Promise((resolve) => setTimeout(resolve, (DURATION + 1) * 1000)));
    login[c] = { ...r, ratio_vs_raw: round(r.rate / (raw[c] as number), 2) };
  }

  // Authenticated walker calls: a user's token, a node on that user's root.
  const token = (await json(`${svcUrl}/user/login`, { identity: { type: 'username', value: users[0] }, credential: { type: 'password', password: PASSWORD } })).data.token as string;
  const auth = { authorization: `Bearer ${token}` };
  const seeded = await json(`${svcUrl}/walker/Seed`, {}, auth);
  const docId = seeded.data.reports[0].id as string;
  const path = `/walker/ReadAuth/${docId}`;
  process.stderr.write('bench: walker calls alone\n');
  const alone = await walkerLoad(svcUrl, path, auth);
  process.stderr.write('bench: walker calls while logins run\n');
  const loginConcurrency = CORES * 4;
  let stopLogins: () => void = () => {};
  const logins = loginLoad(svcUrl, users, loginConcurrency, new Promise<void>((resolve) => (stopLogins = resolve)), 0);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const loaded = await walkerLoad(svcUrl, path, auth);
  stopLogins();
  const loginsDuring = await logins;
  return { login, alone, loaded, loginConcurrency, loginsDuring };
}

async function main(): Promise<void> {
  const hashConcurrency = process.env.SVC_HASH_CONCURRENCY ?? '';
  const hashNice = process.env.SVC_HASH_NICE ?? '';
  const concurrencies = [CORES, CORES * 4];
  const raw: Record<string, number> = {};
  const pool: Record<string, number> = {};
  for (const c of concurrencies) {
    process.stderr.write(`bench: raw argon2 verify, concurrency ${c}\n`);
    raw[c] = round(await verifyRate(RAW_ARGON2, c), 1);
    process.stderr.write(`bench: hashing pool verify, concurrency ${c}\n`);
    pool[c] = round(await verifyRate(HASH_POOL, c), 1);
  }

  const svc = await startSvc({ ...(hashConcurrency ? { SVC_HASH_CONCURRENCY: hashConcurrency } : {}), ...(hashNice ? { SVC_HASH_NICE: hashNice } : {}) });
  // A failed run still stops the server it started.
  const { login, alone, loaded, loginConcurrency, loginsDuring } = await svcFigures(svc.url, raw, concurrencies).finally(() => svc.stop());

  const result = {
    benchmark: 'identity',
    machine: machine(),
    duration_s: DURATION,
    hash_concurrency: hashConcurrency || 'default (one thread per core)',
    hash_nice: hashNice || 'default (10)',
    raw_argon2_verify_per_s: raw,
    hash_pool_verify_per_s: pool,
    svc_login: login,
    walker_calls: {
      connections: CONNECTIONS,
      warmup_s: WARMUP,
      load: 'svc bench engine (bench/harness), 1 generator thread, closed loop',
      alone,
      during_logins: { ...loaded, login_concurrency: loginConcurrency, logins_per_s: loginsDuring.rate, login_errors: loginsDuring.errors },
      kept: round(loaded.rps / alone.rps, 2),
    },
    goals: { login_vs_raw: '>= 0.90 at the same concurrency', walker_kept: '>= 0.45 with p99 <= 10 ms' },
  };
  console.log(JSON.stringify(result, null, 2));
  process.stderr.write(`bench: wrote ${save('identity', result)}\n`);
}

await main();
