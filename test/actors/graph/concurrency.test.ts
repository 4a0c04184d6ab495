// No lost update: concurrent walkers on one counter node, from several worker threads.
import t from 'tap';
import { join } from 'node:path';
import { Graph, Registry, SqliteStore } from 'svc';
import { WorkerPool } from '../../../transports/worker/index.ts';
import * as app from '../../fixtures/todo-app.ts';

t.test('1,000 concurrent increments from 3 threads end at exactly 1,000', async (t) => {
  const path = join(t.testdir({}), 'anchor_store.db');
  const pool = await WorkerPool.start({ size: 2, module: new URL('../../fixtures/graph-worker.ts', import.meta.url), data: { path } });
  const store = SqliteStore.open(path);
  t.teardown(async () => {
    await pool.close();
    await store.close();
  });
  const graph = new Graph({ system: pool.system, registry: Registry.fromModule(app), store });
  const root = Graph.newRootId();
  const driver = (node: string) => pool.system.refFromAddress({ node, path: '/user/driver' });

  const [fromW1, fromW2, fromMain] = await Promise.all([
    driver('w1').ask({ t: 'bump', root, n: 400 }, 60_000) as Promise<number[]>,
    driver('w2').ask({ t: 'bump', root, n: 400 }, 60_000) as Promise<number[]>,
    Promise.all(Array.from({ length: 200 }, () => graph.spawn('Increment', {}, { caller: { rootId: root } }))).then((rs) => rs.map((r) => r.reports[0] as number)),
  ]);
  const seen = [...fromW1, ...fromW2, ...fromMain].sort((a, b) => a - b);
  t.equal(seen.length, 1000);
  t.same(seen, Array.from({ length: 1000 }, (_, i) => i + 1), 'every increment saw a distinct count: none lost, none doubled');
  t.same((await graph.spawn('Increment', { by: 0 }, { caller: { rootId: root } })).reports, [1000]);

  const activations = await Promise.all(['w1', 'w2'].map((w) => driver(w).ask({ t: 'activations' }) as Promise<number>));
  t.same(activations.sort(), [0, 1], 'one partition for the root, on one thread of the process');
  t.equal(pool.system.activationCount('partition'), 0, 'none on the main thread');

  // And the store agrees after everything is flushed.
  await pool.close();
  const check = new Graph({ system: new (await import('svc/kernel')).ActorSystem(), registry: Registry.fromModule(app), store });
  t.same((await check.spawn('Increment', { by: 0 }, { caller: { rootId: root } })).reports, [1000], 'durable: reloaded from SQLite');
});
