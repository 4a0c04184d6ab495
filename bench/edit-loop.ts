/**
 * A user's second day, measured: the edit loop and the footprint of a small
 * app, for one or two svc checkouts side by side in one run (rounds
 * alternate between them, so the machine's drift hits both alike), next to a
 * one-route Fastify app.
 *
 * Figures (median of `--rounds`, default 5):
 * - `typecheck_s`: `tsc -p .` of a project `svc init` made (after a first run);
 * - `start_warm_s` / `start_cold_s`: `svc start` of the example app
 *   (`examples/todo/app.ts`, `--workers 1`) to "Server ready", with the bundle
 *   and transpile caches kept / emptied (cold: no worker bundle, no built CLI, no tsx cache);
 * - `reload_ms`: `svc start --dev` of the scaffolded app: from a walker's file
 *   written to the first answer carrying the new code (a keep-alive connection
 *   opened before the save is used for the answer);
 * - `test_first_s` / `test_warm_s`: `node --import tsx --test` of one in-process
 *   test file of the scaffolded app (`svc/testing`), with tsx's cache emptied / kept;
 * - `rss_mb_w1` / `rss_mb_w2`: the resident memory of the whole process tree of
 *   the idle example with 1 and 2 worker threads; `fastify_rss_mb` a one-route
 *   Fastify app's.
 *
 * @example
 * npm run bench:edit-loop                       // this checkout
 * npm run bench:edit-loop -- --before /tmp/old  // an older checkout alongside (its node_modules installed)
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import { freePort, machine, round, save } from './lib.ts';

const ROOT = resolve(new URL('..', import.meta.url).pathname);
const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const ROUNDS = Number(arg('--rounds') ?? 5);
const checkouts: Record<string, string> = { svc: ROOT };
if (arg('--before')) checkouts.before = resolve(arg('--before') as string);
const only = arg('--only')?.split(',');
const wants = (figure: string): boolean => only === undefined || only.includes(figure);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[Math.floor((s.length - 1) / 2)] as number);
};
const secondsSince = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e9;
const log = (line: string): void => void process.stderr.write(`edit-loop: ${line}\n`);

/** Every process of the tree rooted at `pid` (from /proc), `pid` first. */
function tree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    out.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return out;
}

/** Resident MB of the tree rooted at `pid`. */
function treeRssMb(pid: number): number {
  let kb = 0;
  for (const p of tree(pid)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      kb += Number(m?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return round(kb / 1024, 1);
}

interface Running {
  proc: ChildProcess;
  port: number;
  out: () => string;
  stop(): Promise<void>;
}

/** Spawn `args` in `cwd` and resolve once a line matches `ready`; the port it printed. */
async function spawnUntil(cmd: string, args: string[], cwd: string, ready: RegExp, env: Record<string, string> = {}): Promise<Running> {
  const proc = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let port = 0;
  await new Promise<void>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`not ready within 120 s: ${args.join(' ')}\n${out}`)), 120_000);
    const onLine = (line: string): void => {
      out += `${line}\n`;
      const m = ready.exec(line);
      if (m) {
        port = Number(m[1] ?? 0);
        clearTimeout(timer);
        done();
      }
    };
    createInterface({ input: proc.stdout! }).on('line', onLine);
    createInterface({ input: proc.stderr! }).on('line', onLine);
    proc.once('exit', (code) => fail(new Error(`exited (${code}) before ready: ${args.join(' ')}\n${out}`)));
  });
  return {
    proc,
    port,
    out: () => out,
    stop: () =>
      new Promise<void>((done) => {
        const timer = setTimeout(() => {
          try {
            process.kill(-proc.pid!, 'SIGKILL');
          } catch {
            // gone
          }
        }, 10_000);
        proc.once('exit', () => {
          clearTimeout(timer);
          done();
        });
        try {
          process.kill(-proc.pid!, 'SIGTERM');
        } catch {
          done();
        }
      }),
  };
}

const READY = /Server ready at http:\/\/[^:]+:(\d+)/;

/**
 * The temporary folder the measured processes see (TMPDIR), one per checkout:
 * tsx keeps its transpile cache there (`tsx-<uid>`), so emptying it makes a
 * cold start without touching other processes' caches.
 */
let TMP = '';
const tmpOf = (label: string): string => {
  const dir = join(TMP, `${label}-tmp`);
  mkdirSync(dir, { recursive: true });
  return dir;
};
function clearTsxCache(label: string): void {
  rmSync(tmpOf(label), { recursive: true, force: true });
}

function clearBundles(project: string): void {
  rmSync(join(project, 'node_modules/.cache/svc-workers'), { recursive: true, force: true });
  rmSync(join(project, 'node_modules/.cache/svc-modules'), { recursive: true, force: true });
  rmSync(join(project, 'node_modules/.cache/svc-cli'), { recursive: true, force: true });
}

/** A project `svc init` made from `checkout`, installed, with one in-process test file. */
function scaffold(label: string, checkout: string, base: string): string {
  const dir = join(base, `${label}-app`);
  execFileSync('node', [join(checkout, 'bin/svc.mjs'), 'init', dir], { cwd: checkout, stdio: 'ignore' });
  log(`${label}: npm install in ${dir}`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, stdio: 'ignore' });
  // The same test file in every project (a newer scaffold may bring its own; this one is what is timed).
  mkdirSync(join(dir, 'bench-test'), { recursive: true });
  writeFileSync(
    join(dir, 'bench-test/app.test.ts'),
    `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testApp } from 'svc/testing';

test('AddNote answers', async () => {
  const app = await testApp({ entry: new URL('../app.ts', import.meta.url).pathname });
  try {
    const res = await app.inject({ method: 'POST', url: '/walker/AddNote', body: { text: 'hello' } });
    assert.equal(res.status, 200);
  } finally {
    await app.close();
  }
});
`,
  );
  return dir;
}

async function measureTypecheck(dir: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(join(dir, 'node_modules/.bin/tsc'), ['-p', '.'], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) log(`tsc in ${dir} failed: ${r.stdout}${r.stderr}`.slice(0, 2000));
  return secondsSince(t0);
}

async function measureStart(label: string, checkout: string, data: string, workers: number): Promise<{ s: number; rss: number }> {
  const t0 = process.hrtime.bigint();
  const r = await spawnUntil('node', [join(checkout, 'bin/svc.mjs'), 'start', 'examples/todo/app.ts', '--port', '0', '--host', '127.0.0.1', '--workers', String(workers)], checkout, READY, { SVC_DATA_DIR: data, TMPDIR: tmpOf(label) });
  const s = secondsSince(t0);
  // Idle a moment, then the tree's resident memory.
  await new Promise((done) => setTimeout(done, 2000));
  const rss = treeRssMb(r.proc.pid!);
  await r.stop();
  return { s, rss };
}

async function measureFastify(): Promise<number> {
  const port = await freePort();
  const code = `import Fastify from 'fastify'; const app = Fastify(); app.post('/echo', async (req) => ({ ok: true, data: req.body })); await app.listen({ port: ${port}, host: '127.0.0.1' }); console.log('Server ready at http://127.0.0.1:${port}');`;
  const r = await spawnUntil('node', ['--input-type=module', '-e', code], ROOT, READY);
  await new Promise((done) => setTimeout(done, 2000));
  const rss = treeRssMb(r.proc.pid!);
  await r.stop();
  return rss;
}

const WALKER_BEFORE = /this\.report\(await here\.connect\(new Note\(\{ text: this\.text \}\)\)\);/;

async function measureReload(label: string, dir: string): Promise<number[]> {
  const app = join(dir, 'app.ts');
  const original = readFileSync(app, 'utf8');
  if (!WALKER_BEFORE.test(original)) throw new Error(`the scaffold's AddNote changed shape: ${app}`);
  const port = await freePort();
  const r = await spawnUntil('node', [join(dir, 'node_modules/.bin/svc'), 'start', 'app.ts', '--dev', '--port', String(port), '--host', '127.0.0.1', '--workers', '1'], dir, READY, { SVC_DATA_DIR: join(dir, '.svc/bench-data'), TMPDIR: tmpOf(label) });
  const agent = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const ask = async (): Promise<string> => {
    const res = await request(`http://127.0.0.1:${r.port}/walker/AddNote`, { method: 'POST', body: '{"text":"x"}', headers: { 'content-type': 'application/json' }, dispatcher: agent });
    return await res.body.text();
  };
  const times: number[] = [];
  try {
    await ask();
    for (let i = 0; i < ROUNDS; i++) {
      const mark = `reload-${i}-${Date.now()}`;
      const t0 = process.hrtime.bigint();
      writeFileSync(app, original.replace(WALKER_BEFORE, `this.report('${mark}'); this.report(await here.connect(new Note({ text: this.text })));`));
      for (;;) {
        if ((await ask().catch(() => '')).includes(mark)) break;
        if (secondsSince(t0) > 60) throw new Error(`no reload within 60 s:\n${r.out().slice(-3000)}`);
        await new Promise((done) => setTimeout(done, 5));
      }
      times.push(round(secondsSince(t0) * 1000, 0));
      // Let the reload settle before the next save.
      await new Promise((done) => setTimeout(done, 1500));
    }
  } finally {
    writeFileSync(app, original);
    await agent.close();
    await r.stop();
  }
  return times;
}

async function measureTest(label: string, dir: string, first: boolean): Promise<number> {
  if (first) clearTsxCache(label);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('node', ['--import', 'tsx', '--test', 'bench-test/app.test.ts'], { cwd: dir, encoding: 'utf8', env: { ...process.env, SVC_DATA_DIR: join(dir, '.svc/test-data'), TMPDIR: tmpOf(label) } });
  const s = secondsSince(t0);
  if (r.status !== 0) log(`test in ${dir} failed: ${r.stdout}${r.stderr}`.slice(0, 3000));
  return s;
}

async function main(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'svc-edit-loop-'));
  TMP = base;
  const projects: Record<string, string> = {};
  const figures: Record<string, Record<string, number[]>> = {};
  const push = (label: string, figure: string, value: number): void => {
    ((figures[label] ??= {})[figure] ??= []).push(round(value, 3));
  };
  try {
    if (wants('typecheck') || wants('reload') || wants('test')) for (const [label, checkout] of Object.entries(checkouts)) projects[label] = scaffold(label, checkout, base);
    // A first typecheck and start of each, not counted (caches, the admin account of a new data folder).
    for (const [label, checkout] of Object.entries(checkouts)) {
      if (projects[label] && wants('typecheck')) await measureTypecheck(projects[label]);
      if (wants('start')) await measureStart(label, checkout, join(base, `${label}-data`), 1);
    }
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      log(`round ${round_ + 1} of ${ROUNDS}`);
      for (const [label, checkout] of Object.entries(checkouts)) {
        const data = join(base, `${label}-data`);
        if (wants('typecheck')) push(label, 'typecheck_s', await measureTypecheck(projects[label]!));
        if (wants('start')) {
          const warm = await measureStart(label, checkout, data, 1);
          push(label, 'start_warm_s', warm.s);
          push(label, 'rss_mb_w1', warm.rss);
          push(label, 'rss_mb_w2', (await measureStart(label, checkout, data, 2)).rss);
          clearBundles(checkout);
          clearTsxCache(label);
          push(label, 'start_cold_s', (await measureStart(label, checkout, data, 1)).s);
        }
        if (wants('test')) {
          push(label, 'test_first_s', await measureTest(label, projects[label]!, true));
          push(label, 'test_warm_s', await measureTest(label, projects[label]!, false));
        }
      }
      if (wants('start')) push('fastify', 'rss_mb', await measureFastify());
    }
    if (wants('reload')) for (const [label] of Object.entries(checkouts)) for (const ms of await measureReload(label, projects[label]!)) push(label, 'reload_ms', ms);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
  const medians = Object.fromEntries(Object.entries(figures).map(([label, f]) => [label, Object.fromEntries(Object.entries(f).map(([k, xs]) => [k, median(xs)]))]));
  const result = { bench: 'edit-loop', at: new Date().toISOString(), machine: machine(), rounds: ROUNDS, checkouts, medians, samples: figures };
  console.log(JSON.stringify(medians, null, 2));
  console.log(save('edit-loop', result));
}

if (!existsSync(join(ROOT, 'examples/todo/app.ts'))) throw new Error('run from an svc checkout');
await main();
