// A partition's activation: the first message loads the root, together with the node its run starts at (one read of
// the store, not two), and a failed first read is answered and tried again by the next message.
import t, { type Test } from 'tap';
import { ActorSystem, SvcError } from 'svc/kernel';
import { type AnchorStore, Graph, MemoryStore, Registry } from 'svc';
import { newCaller } from '../../helpers/graph.ts';
import * as grantApp from '../../fixtures/grant-app.ts';

type Reported = { id: string };

/** `store` with its reads counted (the ids of each `get`), and the next `get`s made to fail when asked. */
function counted(store: AnchorStore) {
  const gets: string[][] = [];
  const failures: Error[] = [];
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== 'get' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return (ids: readonly string[]) => {
        gets.push([...ids]);
        const failure = failures.shift();
        return failure ? Promise.reject(failure) : (value as AnchorStore['get']).call(target, ids);
      };
    },
  });
  return { store: proxy, gets, failures };
}

/** A box made by `caller` on `memory`, then a cold graph over `memory` with its reads counted. */
async function boxThenCold(t: Test, memory: MemoryStore, caller: { rootId: string }, made: Record<string, unknown> = {}) {
  const [box] = (await coldGraph(t, memory).spawn('MakeBox', made, { caller })).reports as Reported[];
  const reads = counted(memory);
  return { box, ...reads, graph: coldGraph(t, reads.store) };
}

/** A graph over `store` in a system of its own: nothing resident. */
function coldGraph(t: Test, store: AnchorStore): Graph {
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  return new Graph({ system, registry: Registry.fromModule(grantApp), store });
}

t.test('a cold run at a node reads the root and that node in one read', async (t) => {
  const a = newCaller();
  const { box, gets, graph } = await boxThenCold(t, new MemoryStore(), a);
  t.same((await graph.spawn('Show', {}, { caller: a, at: box?.id })).reports, [0]);
  t.same(gets, [[a.rootId, box?.id]], 'one read, of both');
  t.same((await graph.spawn('Bump', {}, { caller: a, at: box?.id })).reports, [1]);
  t.equal(gets.length, 1, 'the next run reads nothing: both are resident');
});

t.test('a cold run at another root’s node (granted) reads it, and keeps none of it', async (t) => {
  const [a, b] = [newCaller(), newCaller()];
  const { box, gets, graph } = await boxThenCold(t, new MemoryStore(), a, { other: b.rootId });
  t.same((await graph.spawn('Bump', {}, { caller: b, at: box?.id })).reports, [1], 'b bumps a’s box');
  t.same(gets[0], [b.rootId, box?.id], 'b’s partition read its root and the box at once');
  t.same((await graph.spawn('Show', {}, { caller: a, at: box?.id })).reports, [1], 'a sees the bump');
});

t.test('a cold run at a node that does not exist is refused as before', async (t) => {
  const { store, gets } = counted(new MemoryStore());
  const graph = coldGraph(t, store);
  const a = newCaller();
  const missing = Graph.newRootId();
  await t.rejects(graph.spawn('Show', {}, { caller: a, at: missing }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  t.same(gets[0], [a.rootId, missing]);
  // The root was new: it was stored by that first message.
  t.same((await graph.spawn('MakeBox', {}, { caller: a })).reports.length, 1);
});

t.test('a first read that fails answers its message, and the next message loads afresh', async (t) => {
  const a = newCaller();
  const { box, failures, graph } = await boxThenCold(t, new MemoryStore(), a);
  failures.push(Object.assign(new Error('the disk said no'), { code: 'EIO' }));
  await t.rejects(graph.spawn('Show', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_STORE' }, 'a failed read: SVC_ERR_STORE');
  t.same((await graph.spawn('Show', {}, { caller: a, at: box?.id })).reports, [0], 'then it loads');
  failures.push(new SvcError('SVC_ERR_STORE_UNAVAILABLE', 'the database cannot be reached'));
  const b = newCaller();
  await t.rejects(graph.spawn('MakeBox', {}, { caller: b }), { code: 'SVC_ERR_STORE_UNAVAILABLE' }, 'an outage: as it is (retry)');
  t.same((await graph.spawn('MakeBox', {}, { caller: b })).reports.length, 1, 'the retry succeeds');
});

t.test('deleting a graph that is not resident reads nothing first', async (t) => {
  const memory = new MemoryStore();
  const a = newCaller();
  await coldGraph(t, memory).spawn('MakeBox', {}, { caller: a });
  const { store, gets } = counted(memory);
  const graph = coldGraph(t, store);
  t.equal(await graph.dropRoot(a.rootId), 3, 'the root, its box and the edge between');
  t.same(gets, [], 'no read');
  await t.rejects(graph.spawn('MakeBox', {}, { caller: a }), { code: 'SVC_ERR_NODE_NOT_FOUND' }, 'the graph is gone');
  await t.rejects(graph.partition(a.rootId).ask({ t: 'touch' }, 5000), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  await t.rejects(graph.partition(a.rootId).ask({ t: 'invalidate', ids: [a.rootId], edgeNodes: [] }, 5000), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  t.equal(await memory.count(), 0, 'and stays gone: its root is not stored again');
});

t.test('a document that cannot be decoded is reported once, however often it is read before it moves', async (t) => {
  const memory = new MemoryStore();
  const a = newCaller();
  const [box] = (await coldGraph(t, memory).spawn('MakeBox', {}, { caller: a })).reports as Reported[];
  const [doc] = await memory.get([box?.id as string]);
  // A type this app no longer has, and a store slow to move it aside (PostgreSQL answers later than memory).
  await memory.commit({ upserts: [{ ...doc!, arch_type: 'Gone', version: doc!.version + 1 }], deletes: [] });
  let moved: () => void = () => {};
  const slow = new Proxy(memory, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key === 'quarantine') return (id: string, reason: string) => new Promise<void>((resolve) => (moved = resolve)).then(() => target.quarantine(id, reason));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const reported: string[] = [];
  const graph = new Graph({ system, registry: Registry.fromModule(grantApp), store: slow, onQuarantine: (id) => reported.push(id) });
  await t.rejects(graph.spawn('Show', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  await t.rejects(graph.spawn('Show', {}, { caller: a, at: box?.id }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
  t.same(reported, [box?.id], 'reported once');
  moved();
});
