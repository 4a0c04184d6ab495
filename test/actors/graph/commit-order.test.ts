// Pipelined runs never acknowledge anything built on a batch that failed (issue 9, item 0).
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { ActorSystem } from 'svc/kernel';
import { Graph, Registry, SqliteStore, type AnchorStore } from 'svc';
import { PgStore } from '../../../stores/postgres/index.ts';
import { skipPostgres, startPostgres } from '../../kit/index.ts';
import { newCaller, openGraph } from '../../helpers/graph.ts';
import * as grantApp from '../../fixtures/grant-app.ts';
import * as todoApp from '../../fixtures/todo-app.ts';

type Reported = { id: string; context: Record<string, unknown> };

/**
 * B holds a WRITE grant on A's box. B's BumpThree adds 100 to B's own box and
 * 10 to A's, and waits at the gate; meanwhile A changes its box, so B's batch
 * will conflict. B's next request is already queued behind it.
 */
/**
 * The suite, on one backend: `fresh(t)` makes an empty database for a test and answers how to open a store on it
 * (several stores on one database stand for several processes).
 */
function suite(label: string, fresh: (t: Test) => Promise<() => Promise<AnchorStore>>): void {
  async function failingBatchThen(t: Test, next: string) {
    const store = await (await fresh(t))();
    const { graph, close } = openGraph({ app: grantApp, store });
    t.teardown(close);
    const [a, b] = [newCaller(), newCaller()];
    const [x] = (await graph.spawn('MakeBox', { other: b.rootId }, { caller: a })).reports as Reported[];
    grantApp.closeGate();
    const first = graph.spawn('BumpThree', { x: x?.id, y: x?.id }, { caller: b });
    await grantApp.gate.reached;
    const second = graph.spawn(next, {}, { caller: b }); // queued behind the first, on B's partition
    t.same((await graph.spawn('Bump', {}, { caller: a, at: x?.id })).reports, [1], 'A changes its box meanwhile');
    grantApp.gate.open();
    const [one, two] = await Promise.allSettled([first, second]);
    return { graph, store, a, b, x, one, two };
  }

  t.test(`a run queued behind a failing batch is refused, not committed on top of it (${label})`, async (t) => {
    const { graph, b, one, two } = await failingBatchThen(t, 'CopyMine');
    t.match(one, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } }, 'the first run conflicts');
    t.match(two, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } }, 'the second, built on it, is refused with a retryable conflict');
    // What is stored holds neither: B has no box (the first run created it), and no copy of a 100 that never was.
    t.same((await graph.spawn('ShowMine', {}, { caller: b })).reports, [[]], 'nothing of either run was stored');
    t.same((await graph.spawn('CopyMine', {}, { caller: b })).reports, [-1], 'a retry runs on what is stored');
    t.same((await graph.spawn('ShowMine', {}, { caller: b })).reports, [[-1]]);
  });

  t.test('a read-only run queued behind a failing batch does not answer what was never stored', async (t) => {
    const { one, two } = await failingBatchThen(t, 'ShowMine');
    t.match(one, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } });
    if (two.status === 'fulfilled') t.same(two.value.reports, [[]], 'if it answers, it answers what is stored');
    else t.match(two, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } }, 'refused: it read the failed run’s changes');
    t.not(JSON.stringify(two.status === 'fulfilled' ? two.value.reports : null), '[[100]]', 'never the 100 that was not stored');
  });

  t.test('a read-only run still going when the batch it read fails does not answer it', async (t) => {
    // It starts while the failing batch is pending and outlives it (a timer): its read is refused all the same.
    const { one, two } = await failingBatchThen(t, 'ShowMineSlowly');
    t.match(one, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } });
    t.match(two, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } }, 'refused, never the 100 that was not stored');
  });

  t.test('a read-only run behind a batch that succeeds answers once it is durable', async (t) => {
    const store = await (await fresh(t))();
    const { graph, close } = openGraph({ app: grantApp, store });
    t.teardown(close);
    const a = newCaller();
    const [made, shown] = await Promise.all([graph.spawn('CopyMine', {}, { caller: a }), graph.spawn('ShowMine', {}, { caller: a })]);
    t.same(made.reports, [-1]);
    t.same(shown.reports, [[-1]], 'the read-only run saw the change before it, and both answered');
  });

  t.test(`two services on one ${label} database (one partition each per root): no lost or doubled increment`, async (t) => {
    // Two actor systems stand for two processes: each has its own partition for every root.
    const open = await fresh(t);
    const sides = await Promise.all([0, 1].map(async () => {
      const system = new ActorSystem();
      const store = await open();
      return { system, store, graph: new Graph({ system, registry: Registry.fromModule(todoApp), store }) };
    }));
    t.teardown(async () => {
      for (const s of sides) {
        await s.system.shutdown();
        await s.store.close();
      }
    });
    const users = Array.from({ length: 12 }, () => newCaller());
    const acknowledged = new Map<string, number[]>();
    const totals = new Map<string, number>();
    await Promise.all(
      users.map(async (caller) => {
        // The counter exists before both sides load the graph (a node created meanwhile by the
        // other process would stay unseen: that is why a second process on a served folder refuses to start).
        const seen = [(await (sides[0] as (typeof sides)[number]).graph.spawn('Increment', {}, { caller })).reports[0] as number];
        acknowledged.set(caller.rootId, seen);
        let total = 1;
        // One side adds 1, the other 1000: a phantom (refused) increment shows in the sum.
        for (let round = 0; round < 15; round++) {
          const plan = [0, 1, 1, 0, 1, 1];
          const results = await Promise.allSettled(
            plan.map((i) => (sides[i] as (typeof sides)[number]).graph.spawn('Increment', { by: i === 0 ? 1 : 1000 }, { caller })),
          );
          results.forEach((r, k) => {
            if (r.status === 'fulfilled') {
              seen.push(r.value.reports[0] as number);
              total += plan[k] === 0 ? 1 : 1000;
            } else if ((r.reason as { code?: string }).code !== 'SVC_ERR_CONFLICT') t.fail(`a refusal is a retryable conflict, not ${String(r.reason)}`);
          });
        }
        totals.set(caller.rootId, total);
      }),
    );
    // A fresh reader (a third process) sees what is stored.
    const system = new ActorSystem();
    const store = await open();
    t.teardown(async () => {
      await system.shutdown();
      await store.close();
    });
    const reader = new Graph({ system, registry: Registry.fromModule(todoApp), store });
    let acks = 0;
    for (const caller of users) {
      const seen = acknowledged.get(caller.rootId) as number[];
      acks += seen.length;
      const [stored] = (await reader.spawn('Increment', { by: 0 }, { caller })).reports as number[];
      t.equal(new Set(seen).size, seen.length, 'no counter value acknowledged twice');
      t.equal(stored, totals.get(caller.rootId), 'every acknowledged increment is stored, and nothing else');
    }
    t.ok(acks > 0, `${acks} increments acknowledged`);
  });
}

suite('SQLite', async (t) => {
  const path = join(t.testdir({}), 'anchor_store.db');
  return async () => SqliteStore.open(path);
});

if (skipPostgres) t.comment(`SKIPPED LOUDLY (PostgreSQL): ${skipPostgres}`);
else {
  const server = await startPostgres(t);
  suite('PostgreSQL', async () => {
    const uri = await server.database();
    return () => PgStore.connect(uri);
  });
}
