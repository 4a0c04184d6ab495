// Mutual exclusion across processes: 50 contenders in 2 plain node processes (nothing else serialises
// them) add one to a plain counter — read, pause, write — under `mutex`: the count is exact. Without
// the mutex the same contenders lose updates (the race the lock closes is real). A holder killed
// without releasing is superseded once its TTL has passed, not before.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { kvstore, mutex } from 'svc';
import { startRedis, skipRedis } from '../../kit/index.ts';
import { closeKvstores } from '../../../actors/data/index.ts';

const CONTENDER = new URL('../../fixtures/lock-contender.ts', import.meta.url).pathname;

function contender(args: string[], kvUrl: string, cwd: string) {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), CONTENDER, ...args], { cwd, env: { ...process.env, KV_URL: kvUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const lines = createInterface({ input: child.stdout });
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, err }));
  const first = Promise.race([
    once(lines, 'line').then(([line]) => JSON.parse(line as string) as Record<string, unknown>),
    exited.then(({ code }) => Promise.reject(new Error(`the contender exited (${code}) before it said anything: ${err}`))),
  ]);
  first.catch(() => {});
  return { child, first, exited };
}

t.test('mutex across processes', { skip: skipRedis }, async (t) => {
  t.setTimeout(180_000);
  const redis = await startRedis(t);
  const cwd = mkdtempSync(join(tmpdir(), 'svc-locks-'));
  t.teardown(() => rmSync(cwd, { recursive: true, force: true }));
  t.teardown(() => closeKvstores());
  const raw = redis.client();

  t.test('50 contenders in 2 processes: exact under the mutex', async (t) => {
    await raw.del('locktest:counter');
    const procs = [contender(['25', 'locked'], redis.url, cwd), contender(['25', 'locked'], redis.url, cwd)];
    for (const p of procs) {
      const { code, err } = await p.exited;
      t.equal(code, 0, err);
    }
    t.equal(await raw.get('locktest:counter'), '50', 'no increment lost');
    t.equal(await raw.exists('locktest:lock:counter'), 0, 'every lock released');
  });

  t.test('the same contenders without the mutex lose updates (the race is real)', async (t) => {
    await raw.del('locktest:counter');
    const procs = [contender(['25', 'unlocked'], redis.url, cwd), contender(['25', 'unlocked'], redis.url, cwd)];
    for (const p of procs) t.equal((await p.exited).code, 0);
    const counted = Number(await raw.get('locktest:counter'));
    t.ok(counted > 0 && counted < 50, `lost updates without the lock (${await raw.get('locktest:counter')} of 50)`);
  });

  t.test('a holder that dies without releasing is superseded after the TTL', async (t) => {
    const TTL = 1_500;
    const holder = contender(['1', 'hold', String(TTL)], redis.url, cwd);
    const { held } = await holder.first;
    const heldAt = Date.now();
    holder.child.kill('SIGKILL');
    await holder.exited;
    const kv = kvstore('locktest', 'kv', redis.url);
    t.equal(await raw.get('locktest:lock:dead-holder'), held, 'the dead holder still holds it');
    await t.rejects(mutex(kv, 'dead-holder', { retry: false }), { code: 'LOCK_TIMEOUT' }, 'not before its TTL');
    const lock = await mutex(kv, 'dead-holder', { retry: { timeoutMs: 10_000 } });
    t.ok(Date.now() - heldAt >= TTL - 50, `taken after the TTL (${Date.now() - heldAt} ms)`);
    t.not(lock.fence, held, 'a new fence');
    t.equal(await lock.release(), true);
  });
});
