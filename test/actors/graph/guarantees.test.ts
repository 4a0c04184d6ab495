// Isolation, access grants, failed walkers, quarantine, aliases, persistence.
import t from 'tap';
import { join } from 'node:path';
import { Graph, MemoryStore, SqliteStore, type AnchorStore } from 'svc';
import type { StoredDoc } from '../../../actors/graph/index.ts';
import { ManualClock, flushMicrotasks } from 'svc/kernel';
import { newCaller, openGraph } from '../../helpers/graph.ts';

type Reported = { id: string; type: string; context: Record<string, unknown> };

async function makeTodo(graph: Graph, caller: { rootId: string }, title: string): Promise<Reported> {
  const [todo] = (await graph.spawn('CreateTodo', { title }, { caller })).reports as Reported[];
  return todo as Reported;
}

t.test('isolation: B neither sees nor changes A’s nodes without a grant; READ, WRITE, revoke', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const bob = newCaller();
  const todo = await makeTodo(graph, alice, 'alice private');
  t.same((await graph.spawn('ListTodos', {}, { caller: bob })).reports, [], 'B’s own graph is empty');
  await t.rejects(graph.spawn('Peek', {}, { caller: bob, at: todo.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' }, 'no read without a grant');
  await t.rejects(graph.spawn('Rename', { title: 'pwned' }, { caller: bob, at: todo.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });

  await graph.spawn('Share', { id: todo.id, with: bob.rootId, level: 0 }, { caller: alice });
  t.match((await graph.spawn('Peek', {}, { caller: bob, at: todo.id })).reports, [{ id: todo.id, context: { title: 'alice private' } }], 'READ lets B read');
  await t.rejects(graph.spawn('Rename', { title: 'pwned' }, { caller: bob, at: todo.id }), { code: 'SVC_ERR_ACCESS_DENIED', status: 403 }, 'but not write');
  await t.rejects(graph.spawn('LinkTo', { note: 'hi' }, { caller: bob, at: todo.id }), { code: 'SVC_ERR_ACCESS_DENIED' }, 'nor connect');

  await graph.spawn('Share', { id: todo.id, with: bob.rootId, level: 2 }, { caller: alice });
  await graph.spawn('Rename', { title: 'edited by bob' }, { caller: bob, at: todo.id });
  t.match((await graph.spawn('ListTodos', {}, { caller: alice })).reports, [{ context: { title: 'edited by bob' } }], 'A sees B’s write');

  await graph.spawn('Share', { id: todo.id, with: bob.rootId, revoke: true }, { caller: alice });
  await t.rejects(graph.spawn('Peek', {}, { caller: bob, at: todo.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' }, 'revoked: no read again');
  await t.rejects(graph.spawn('Rename', { title: 'again' }, { caller: bob, at: todo.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  t.match((await graph.spawn('ListTodos', {}, { caller: alice })).reports, [{ context: { title: 'edited by bob' } }]);
});

t.test('permGrant to everyone, CONNECT lets B link, permRevoke closes it', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const bob = newCaller();
  const todo = await makeTodo(graph, alice, 'public board');
  await graph.spawn('Share', { id: todo.id, level: 1 }, { caller: alice });
  const [note] = (await graph.spawn('LinkTo', { note: 'bob was here' }, { caller: bob, at: todo.id })).reports as Reported[];
  t.match(note, { context: { title: 'bob was here' } });
  t.match((await graph.spawn('ListTodos', {}, { caller: bob })).reports, [{ id: note?.id }], 'the note is B’s');
  await t.rejects(graph.spawn('Peek', {}, { caller: alice, at: note?.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' }, 'A cannot read B’s note');
  await graph.spawn('Share', { id: todo.id, revoke: true }, { caller: alice });
  await t.rejects(graph.spawn('Peek', {}, { caller: bob, at: todo.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
});

t.test('a walker that throws: its writes are undone, the caller gets a typed error, the partition keeps serving', async (t) => {
  for (const [name, makeStore] of [
    ['memory', () => new MemoryStore()],
    ['sqlite', () => SqliteStore.open(join(t.testdir({}), 'anchor_store.db'))],
  ] as const) {
    const store: AnchorStore = makeStore();
    const { graph, close } = openGraph({ store });
    const alice = newCaller();
    t.same((await graph.spawn('Increment', {}, { caller: alice })).reports, [1]);
    await t.rejects(graph.spawn('IncrementThenFail', {}, { caller: alice }), { code: 'SVC_ERR_WALKER_FAILED', message: 'boom after writing', status: 500 });
    t.same((await graph.spawn('Increment', {}, { caller: alice })).reports, [2], `${name}: the counter never saw +100`);
    t.same((await graph.spawn('ListTodos', {}, { caller: alice })).reports, [], `${name}: the ghost node was not kept`);
    await close();
  }
});

t.test('persistence: what was committed is there after a restart; destroyed nodes and their edges are gone', async (t) => {
  const path = join(t.testdir({}), 'anchor_store.db');
  const alice = newCaller();
  let first = openGraph({ store: SqliteStore.open(path) });
  const milk = await makeTodo(first.graph, alice, 'milk');
  await makeTodo(first.graph, alice, 'eggs');
  await first.graph.spawn('ToggleTodo', { id: milk.id }, { caller: alice });
  const before = await first.store.count();
  t.equal(before, 5, 'root + 2 todos + 2 edges');
  await first.close();

  first = openGraph({ store: SqliteStore.open(path) });
  t.match((await first.graph.spawn('ListTodos', {}, { caller: alice })).reports, [
    { id: milk.id, context: { title: 'milk', done: true } },
    { context: { title: 'eggs', done: false } },
  ]);
  await first.graph.spawn('DeleteTodo', { id: milk.id }, { caller: alice });
  t.equal(await first.store.count(), 3, 'the node and its edge were deleted');
  await first.close();
});

t.test('new nodes persist only when connected', async (t) => {
  const { graph, store, close } = openGraph({ app: await import('../../fixtures/reach-app.ts') });
  t.teardown(close);
  const alice = newCaller();
  await graph.spawn('Loose', {}, { caller: alice });
  t.equal(await store.count(), 1, 'only the root: the unconnected node and the connected-then-disconnected one are dropped');
  t.same((await graph.spawn('Count', {}, { caller: alice })).reports, [0]);
});

t.test('undecodable documents go to quarantine, are reported, never dropped; aliases and recover-all', async (t) => {
  const store = new MemoryStore();
  const { graph, system, close } = openGraph({ store });
  t.teardown(close);
  const alice = newCaller();
  const keep = await makeTodo(graph, alice, 'fine');
  const corrupt = await makeTodo(graph, alice, 'will be corrupted');
  const renamed = await makeTodo(graph, alice, 'old class name');
  await system.shutdown(); // drop the partition's memory
  const g2 = openGraph({ store });
  t.teardown(g2.close);
  const [c] = await store.get([corrupt.id]);
  store.putRaw({ ...(c as StoredDoc), body: '{"access": broken' });
  const [r] = await store.get([renamed.id]);
  store.putRaw({ ...(r as StoredDoc), arch_type: 'OldTodo' });
  const listed = (await g2.graph.spawn('ListTodos', {}, { caller: alice })).reports as Reported[];
  t.same(
    listed.map((x) => x.id),
    [keep.id],
    'the load did not crash; the bad ones were left out',
  );
  t.same(g2.quarantined.map((q) => q.id).sort(), [corrupt.id, renamed.id].sort());
  t.match(g2.quarantined.find((q) => q.id === renamed.id), { reason: /unresolvable archetype app.OldTodo/ });
  const aside = await store.quarantined();
  t.equal(aside.length, 2, 'both kept in quarantine');
  await g2.graph.alias('app.OldTodo', 'app.Todo');
  const { recovered, remaining } = await g2.graph.recoverAll();
  t.same(recovered, [renamed.id]);
  t.match(remaining, [{ id: corrupt.id, reason: /corrupt/ }]);
  await g2.system.shutdown();
  const g3 = await Graph.open({ system: new (await import('svc/kernel')).ActorSystem(), registry: g2.graph.registry, store });
  t.ok(g3.registry.resolve('OldTodo'), 'aliases are reloaded from the store');
});

t.test('idle partitions are deactivated and come back from the store', async (t) => {
  const clock = new ManualClock();
  const { graph, system, close } = openGraph({ idleAfterMs: 1000, clock });
  t.teardown(close);
  const alice = newCaller();
  await makeTodo(graph, alice, 'x');
  t.equal(system.activationCount('partition'), 1);
  clock.advance(999);
  await flushMicrotasks();
  t.equal(system.activationCount('partition'), 1);
  clock.advance(1);
  await flushMicrotasks();
  t.equal(system.activationCount('partition'), 0, 'deactivated after 1 s idle');
  t.match((await graph.spawn('ListTodos', {}, { caller: alice })).reports, [{ context: { title: 'x' } }]);
});
