import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromReceive, threadOf, type ActorRef } from 'svc/kernel';
import { WorkerPool } from '../../transports/worker/index.ts';
import { defineKinds } from './fixtures/worker-actors.ts';
import { Latch } from '../kit/index.ts';

const fixture = new URL('./fixtures/worker-actors.ts', import.meta.url);

function on(pool: WorkerPool, node: string, name: string): ActorRef {
  return pool.system.refFromAddress({ node, path: `/user/${name}` });
}

t.test('cross-thread ask and tell; order per sender is kept', async (t) => {
  const pool = await WorkerPool.start({ size: 2, module: fixture });
  t.teardown(() => pool.close());
  t.same(await on(pool, 'w1', 'whoami').ask('?'), 'w1');
  t.same(await on(pool, 'w2', 'whoami').ask('?'), 'w2');
  t.same(await on(pool, 'w1', 'echo').ask({ a: [1, 2, { b: 'c' }], d: new Date(0) }), { a: [1, 2, { b: 'c' }], d: new Date(0) });
  const collector = on(pool, 'w2', 'collector');
  for (let i = 0; i < 5000; i++) collector.tell(i);
  const seen = (await collector.ask('get')) as number[];
  t.equal(seen.length, 5000);
  t.ok(
    seen.every((v, i) => v === i),
    'in order',
  );
  const link = pool.transport.link('w2');
  t.ok(link && link.batches < link.frames / 10, `batched: ${link?.frames} frames in ${link?.batches} messages`);
});

t.test('an ActorRef travels inside a message and is used from the other thread', async (t) => {
  const pool = await WorkerPool.start({ size: 2, module: fixture });
  t.teardown(() => pool.close());
  const got = new Latch();
  const received: string[] = [];
  const sink = pool.system.spawn(fromReceive((m: string) => {
    received.push(m);
    got.hit();
  }), 'sink');
  await on(pool, 'w1', 'forwarder').ask({ replyTo: sink, value: 'hello' });
  await got.wait(1);
  t.same(received, ['hello via w1']);
  // worker to worker: main asks w1's relay to ask w2's whoami through a ref made on main.
  const answer = await on(pool, 'w1', 'relay').ask({ target: on(pool, 'w2', 'whoami'), msg: '?' });
  t.equal(answer, 'w2');
  // a ref to w1's own actor, sent to w1, comes back as a local ref there
  t.equal(await on(pool, 'w1', 'relay').ask({ target: on(pool, 'w1', 'whoami'), msg: '?' }), 'w1');
});

t.test('errors cross threads with their code; unencodable replies fail the ask, not the thread', async (t) => {
  const pool = await WorkerPool.start({ size: 1, module: fixture });
  t.teardown(() => pool.close());
  const misc = on(pool, 'w1', 'misc');
  await t.rejects(misc.ask('fail'), { code: 'E_NO', status: 418, message: 'worker said no' });
  t.equal(await misc.ask('again'), 'again', 'the crashed actor was restarted');
  await t.rejects(misc.ask('circular'), { code: 'SVC_ERR_TRANSPORT' });
  await t.rejects(on(pool, 'w1', 'nobody').ask('?'), { code: 'SVC_ERR_NO_SUCH_ACTOR' });
  await t.rejects(pool.system.refFromAddress({ node: 'w9', path: '/user/x' }).ask('?'), { code: 'SVC_ERR_NODE_DOWN' });
  t.equal(await misc.ask('still'), 'still');
});

t.test('a virtual actor is activated once across threads, where placement puts it', async (t) => {
  const pool = await WorkerPool.start({ size: 2, module: fixture });
  t.teardown(() => pool.close());
  defineKinds(pool.system);
  const counter = pool.system.activate<{ type: string }, number | string>('counter', 'alice');
  const home = await counter.ask({ type: 'where' });
  t.ok(home === 'w1' || home === 'w2');
  // increments from main and from both workers (through their relays, using refs made there)
  const incs: Promise<unknown>[] = [];
  for (let i = 0; i < 300; i++) {
    incs.push(counter.ask({ type: 'inc' }));
    incs.push(on(pool, 'w1', 'relay').ask({ target: counter, msg: { type: 'inc' } }));
    incs.push(on(pool, 'w2', 'relay').ask({ target: counter, msg: { type: 'inc' } }));
  }
  await Promise.all(incs);
  t.equal(await counter.ask({ type: 'get' }), 900, 'one instance saw every increment');
  t.equal(pool.system.activationCount('counter'), 0, 'none on main');
});

t.test('a worker that dies mid-ask: pending asks fail promptly with SVC_ERR_NODE_DOWN', async (t) => {
  const exits: [string, number][] = [];
  const pool = await WorkerPool.start({ size: 2, module: fixture, system: { askTimeoutMs: 60_000 }, onExit: (n, c) => exits.push([threadOf(n), c]) });
  t.teardown(() => pool.close());
  const arrived = new Latch();
  const notify = pool.system.spawn(fromReceive(() => arrived.hit()), 'notify');
  const fromMain = on(pool, 'w2', 'blackhole').ask({ notify }, 60_000);
  // w1 asks w2 too: w1 must learn of w2's death as well.
  const fromW1 = on(pool, 'w1', 'relay').ask({ target: on(pool, 'w2', 'blackhole2'), msg: { notify }, timeoutMs: 60_000 }, 60_000);
  await arrived.wait(2); // both asks are pending on w2 now
  const started = performance.now();
  const failed = Promise.all([t.rejects(fromMain, { code: 'SVC_ERR_NODE_DOWN' }), t.rejects(fromW1, { code: 'SVC_ERR_NODE_DOWN' })]);
  on(pool, 'w2', 'misc').tell('exit');
  await failed;
  t.ok(performance.now() - started < 10_000, 'well before the 60 s timeout');
  t.same(exits, [['w2', 3]]);
  t.same(pool.transport.nodes().map(threadOf), ['main', 'w1']);
  t.equal(await on(pool, 'w1', 'whoami').ask('?'), 'w1', 'the other worker keeps serving');
  await t.rejects(on(pool, 'w2', 'echo').ask('?'), { code: 'SVC_ERR_NODE_DOWN' });
  t.notOk(on(pool, 'w2', 'echo').tell('?'), 'tells to a dead node are refused');
});

t.test('a worker whose setup fails makes start fail with the error', async (t) => {
  await t.rejects(WorkerPool.start({ size: 1, module: new URL('./fixtures/no-setup.ts', import.meta.url) }), { message: /exports no setup function/ });
});

t.test('node ids carry the process; short thread names are aliases in this process', async (t) => {
  const pool = await WorkerPool.start({ size: 2, module: fixture, processId: 'proc7' });
  t.teardown(() => pool.close());
  t.same(pool.workers, ['proc7/w1', 'proc7/w2']);
  t.equal(pool.system.nodeId, 'proc7/main');
  t.same(pool.transport.nodes(), ['proc7/main', 'proc7/w1', 'proc7/w2']);
  t.equal(await on(pool, 'proc7/w2', 'whoami').ask('?'), 'w2');
  t.equal(await on(pool, 'w2', 'whoami').ask('?'), 'w2', 'the short name reaches the same thread');
  t.equal(on(pool, 'w1', 'echo').path, 'proc7/w1:/user/echo');
});

t.test('a worker that dies is replaced under its node id and takes its virtual actors back', async (t) => {
  const exits: string[] = [];
  const replaced: string[] = [];
  const back = new Latch();
  const pool = await WorkerPool.start({
    size: 3,
    module: fixture,
    replace: true,
    onExit: (n) => exits.push(threadOf(n)),
    onReplaced: (n, error) => {
      replaced.push(error ? `failed ${String(error)}` : threadOf(n));
      back.hit();
    },
  });
  t.teardown(() => pool.close());
  defineKinds(pool.system);
  // Keys spread over the three workers; find one that w2 hosts.
  const homes = new Map<string, string>();
  for (let i = 0; i < 60; i++) homes.set(`k${i}`, (await pool.system.activate<{ type: string }, string>('counter', `k${i}`).ask({ type: 'where' })) as string);
  const onW2 = [...homes].filter(([, home]) => home === 'w2').map(([k]) => k);
  t.ok(onW2.length > 5 && onW2.length < 40, `w2 hosts a share (${onW2.length} of 60)`);
  await pool.kill('w2');
  t.same(exits, ['w2']);
  // While w2 is down its keys live elsewhere, and only its keys moved (rendezvous hashing).
  for (const [key, home] of homes) {
    const now = (await pool.system.activate<{ type: string }, string>('counter', key).ask({ type: 'where' })) as string;
    if (home === 'w2') t.not(now, 'w2', `${key} moved off the dead thread`);
    else t.equal(now, home, `${key} stayed on ${home}`);
  }
  await back.wait(1);
  t.same(replaced, ['w2']);
  t.same(pool.transport.nodes().map(threadOf), ['main', 'w1', 'w2', 'w3']);
  t.equal(await on(pool, 'w2', 'whoami').ask('?'), 'w2', 'the new thread answers under the old name');
  // Everyone sends w2's keys to w2 again — from main and from the other workers.
  for (const key of onW2) {
    t.equal(await pool.system.activate<{ type: string }, string>('counter', key).ask({ type: 'where' }), 'w2', `${key} is back on w2`);
    t.equal(await on(pool, 'w1', 'relay').ask({ target: pool.system.activate('counter', key), msg: { type: 'where' } }), 'w2', `w1 sends ${key} to w2`);
    t.equal(await on(pool, 'w3', 'relay').ask({ target: pool.system.activate('counter', key), msg: { type: 'where' } }), 'w2', `w3 sends ${key} to w2`);
  }
});

t.test('two workers dying together are both replaced, and can reach each other again', async (t) => {
  const back = new Latch();
  const replaced: string[] = [];
  const pool = await WorkerPool.start({
    size: 3,
    module: fixture,
    replace: true,
    onReplaced: (n, error) => {
      if (!error) replaced.push(threadOf(n));
      if (!error) back.hit();
    },
  });
  t.teardown(() => pool.close());
  defineKinds(pool.system);
  await Promise.all([pool.kill('w1'), pool.kill('w2')]);
  await back.wait(2);
  t.same(replaced.sort(), ['w1', 'w2']);
  t.equal(await on(pool, 'w1', 'relay').ask({ target: on(pool, 'w2', 'whoami'), msg: '?' }), 'w2', 'w1 reaches the new w2');
  t.equal(await on(pool, 'w2', 'relay').ask({ target: on(pool, 'w1', 'whoami'), msg: '?' }), 'w1', 'w2 reaches the new w1');
  for (let i = 0; i < 20; i++) {
    const key = `j${i}`;
    const views = await Promise.all(['w1', 'w2', 'w3'].map((w) => on(pool, w, 'relay').ask({ target: pool.system.activate('counter', key), msg: { type: 'where' } })));
    t.equal(new Set([...views, await pool.system.activate('counter', key).ask({ type: 'where' })]).size, 1, `every thread sends ${key} to one place`);
  }
});

t.test('a replacement that fails to start is tried again', async (t) => {
  const outcomes: string[] = [];
  const back = new Latch();
  const dir = mkdtempSync(join(tmpdir(), 'svc-flaky-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pool = await WorkerPool.start({
    size: 2,
    module: new URL('./fixtures/flaky-setup.ts', import.meta.url),
    data: { failFile: join(dir, 'flag') },
    replace: true,
    onReplaced: (n, error) => {
      outcomes.push(error ? 'failed' : `up ${threadOf(n)}`);
      if (!error) back.hit();
    },
  });
  t.teardown(() => pool.close());
  await pool.kill('w2');
  await back.wait(1);
  t.same(outcomes, ['failed', 'up w2'], 'the first replacement failed its setup, the second serves');
  t.same(pool.transport.nodes().map(threadOf), ['main', 'w1', 'w2']);
});
