// Defects found in review of the graph layer, each pinned by a test.
import t from 'tap';
import { join } from 'node:path';
import { Node, Registry, SqliteStore, T, Walker } from 'svc';
import { newCaller, openGraph } from '../../helpers/graph.ts';
import * as grantApp from '../../fixtures/grant-app.ts';

type Reported = { id: string; context: Record<string, unknown> };

t.test('writes to other roots’ nodes commit with the caller’s own, all or nothing', async (t) => {
  const { graph, close } = openGraph({ app: grantApp });
  t.teardown(close);
  const [a1, a2, b] = [newCaller(), newCaller(), newCaller()];
  const [x] = (await graph.spawn('MakeBox', { other: b.rootId }, { caller: a1 })).reports as Reported[];
  const [y] = (await graph.spawn('MakeBox', { other: b.rootId }, { caller: a2 })).reports as Reported[];
  grantApp.closeGate();
  const both = graph.spawn('BumpThree', { x: x?.id, y: y?.id }, { caller: b });
  const failed = t.rejects(both, { code: 'SVC_ERR_CONFLICT' });
  await grantApp.gate.reached; // B has read both boxes
  t.same((await graph.spawn('Bump', {}, { caller: a2, at: y?.id })).reports, [1], 'A2 changes its box meanwhile');
  grantApp.gate.open();
  await failed;
  t.same((await graph.spawn('Show', {}, { caller: a1, at: x?.id })).reports, [0], 'A1’s box did not keep B’s +10');
  t.same((await graph.spawn('Show', {}, { caller: a2, at: y?.id })).reports, [1]);
  grantApp.closeGate();
  grantApp.gate.open();
  grantApp.gate.arrived();
  await graph.spawn('BumpThree', { x: x?.id, y: y?.id }, { caller: b });
  t.same((await graph.spawn('Show', {}, { caller: a1, at: x?.id })).reports, [10], 'without a conflict, it lands');
  t.same((await graph.spawn('Show', {}, { caller: a2, at: y?.id })).reports, [11]);
});

t.test('two roots writing each other’s nodes at once do not wait on each other', async (t) => {
  const { graph, close } = openGraph({ app: grantApp });
  t.teardown(close);
  const [a, b] = [newCaller(), newCaller()];
  const [boxA] = (await graph.spawn('MakeBox', { other: b.rootId }, { caller: a })).reports as Reported[];
  const [boxB] = (await graph.spawn('MakeBox', { other: a.rootId }, { caller: b })).reports as Reported[];
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) => (i % 2 ? graph.spawn('Bump', {}, { caller: a, at: boxB?.id, timeoutMs: 3000 }) : graph.spawn('Bump', {}, { caller: b, at: boxA?.id, timeoutMs: 3000 }))),
  );
  t.notOk(results.some((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'SVC_ERR_ASK_TIMEOUT'), 'no request timed out');
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  const shown = [
    ...((await graph.spawn('Show', {}, { caller: a, at: boxA?.id })).reports as number[]),
    ...((await graph.spawn('Show', {}, { caller: b, at: boxB?.id })).reports as number[]),
  ];
  t.equal(shown[0]! + shown[1]!, ok, 'every acknowledged bump is there, no other');
});

t.test('a node deleted in memory is not read back from the store before the delete is durable', async (t) => {
  const { graph, close } = openGraph({ app: grantApp, store: SqliteStore.open(join(t.testdir({}), 'a.db')) });
  t.teardown(close);
  const a = newCaller();
  const [box] = (await graph.spawn('MakeBox', {}, { caller: a })).reports as Reported[];
  const del = graph.spawn('DestroyBox', {}, { caller: a, at: box?.id });
  const peek = t.rejects(graph.spawn('Show', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  const bump = t.rejects(graph.spawn('Bump', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  t.same((await del).reports, [true]);
  await peek;
  await bump;
});

t.test('an edge another root connects to my node: I see it; deleting my node removes it, even after revoking', async (t) => {
  const store = SqliteStore.open(join(t.testdir({}), 'a.db'));
  const { graph, close } = openGraph({ app: grantApp, store });
  t.teardown(close);
  const [a, b] = [newCaller(), newCaller()];
  const [box] = (await graph.spawn('MakeBox', { other: b.rootId, level: 1 }, { caller: a })).reports as Reported[];
  t.same((await graph.spawn('CountEdges', {}, { caller: a, at: box?.id })).reports, [1], 'loaded: only my root’s edge');
  await graph.spawn('LinkNote', {}, { caller: b, at: box?.id });
  t.same((await graph.spawn('CountEdges', {}, { caller: a, at: box?.id })).reports, [2], 'B’s edge is seen by A');
  t.same((await graph.spawn('DestroyBox', {}, { caller: a, at: box?.id })).reports, [true], 'the owner deletes it though B’s edge and note are private to B');
  t.same(await store.edges(box?.id as string), [], 'no edge left pointing at the deleted node');
});

t.test('schema checks cannot be bypassed: in-place array changes, bad access levels, non-JSON values', async (t) => {
  const { graph, close, quarantined } = openGraph({ app: grantApp });
  t.teardown(close);
  const a = newCaller();
  const [box] = (await graph.spawn('MakeBox', {}, { caller: a })).reports as Reported[];
  // The app's code wrote them: 500 SVC_ERR_BAD_WRITE, not a 400 blamed on the client.
  await t.rejects(graph.spawn('BadPush', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_BAD_WRITE', status: 500, message: /tags/ });
  await t.rejects(graph.spawn('BadGrant', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_INVALID_FIELDS' });
  for (const kind of ['bigint', 'function', 'date', 'cycle']) {
    await t.rejects(graph.spawn('BadValue', { kind }, { caller: a, at: box?.id }), { code: 'SVC_ERR_BAD_WRITE', status: 500 }, kind);
  }
  t.same((await graph.spawn('Get', {}, { caller: a, at: box?.id })).reports, [{ id: box?.id, type: 'Box', context: { v: 0, tags: [] } }], 'nothing of it stayed');
  t.same(quarantined, []);
});

t.test('field names that would shadow runtime members are refused at registration', async (t) => {
  class Linky extends Node {
    static has = T.Object({ link: T.String() });
  }
  class Stateful extends Walker {
    static has = T.Object({ state: T.String() });
  }
  t.throws(() => Registry.fromModule({ Linky }), { code: 'SVC_ERR_BAD_ARCHETYPE', message: /link/ });
  t.throws(() => Registry.fromModule({ Stateful }), { code: 'SVC_ERR_BAD_ARCHETYPE', message: /state/ });
});

t.test('a nested walker that fails leaves nothing behind, even when its parent catches the error', async (t) => {
  const { graph, store, close } = openGraph({ app: grantApp });
  t.teardown(close);
  const a = newCaller();
  t.same((await graph.spawn('ParentCatches', {}, { caller: a })).reports, ['caught: child failed']);
  t.equal(await store.count(), 1, 'only the root: no box, no +100');
});

t.test('a node class the app does not export cannot be stored', async (t) => {
  const { graph, close } = openGraph({ app: grantApp });
  t.teardown(close);
  await t.rejects(graph.spawn('MakeHidden', {}, { caller: newCaller() }), { code: 'SVC_ERR_BAD_ARCHETYPE', message: /export/ });
});

t.test('a walker that never finishes: the run deadline drops it and the partition serves again', async (t) => {
  const { graph, close } = openGraph({ app: grantApp, runTimeoutMs: 200 });
  t.teardown(close);
  const a = newCaller();
  await t.rejects(graph.spawn('Hang', {}, { caller: a }), { code: 'SVC_ERR_WALKER_TIMEOUT', status: 504 });
  t.same((await graph.spawn('Ping', {}, { caller: a })).reports, ['pong']);
});

t.test('root ids must be 32 hex', async (t) => {
  const { graph, close } = openGraph({ app: grantApp });
  t.teardown(close);
  await t.rejects(graph.spawn('Ping', {}, { caller: { rootId: '../etc' } }), { code: 'SVC_ERR_INVALID_FIELDS' });
});
