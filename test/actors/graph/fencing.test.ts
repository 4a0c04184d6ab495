// Ownership fencing: a partition of a fenced graph claims its root; a process whose claim was taken over cannot commit.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { ActorSystem, SvcError } from 'svc/kernel';
import { type AnchorStore, Graph, storeError } from '../../../actors/graph/index.ts';
import { MemoryStore } from '../../../stores/memory/index.ts';
import { SqliteStore } from '../../../stores/sqlite/index.ts';
import { Registry } from '../../../actors/walker/index.ts';
import { Front } from '../../../transports/http/index.ts';
import * as app from '../../fixtures/todo-app.ts';
import * as counters from '../../fixtures/cluster-app.ts';
import { deferred } from '../../kit/index.ts';

const dir = t.testdir({});
let n = 0;

/** A graph of its own (one process's thread): its own actor system and store connection. */
async function open(store: AnchorStore, options: { fenced?: boolean; guard?: () => Error | undefined } = {}) {
  const system = new ActorSystem();
  const graph = await Graph.open({ system, registry: Registry.fromModule(app), store, ...options });
  return {
    graph,
    system,
    close: async () => {
      await system.shutdown();
      await store.close();
    },
  };
}

async function titles(graph: Graph, rootId: string): Promise<string[]> {
  const { reports } = await graph.spawn('ListTodos', {}, { caller: { rootId } });
  return (reports as { context: { title: string } }[]).map((r) => r.context.title).sort();
}

t.test('two processes on one SQLite file: the one that lost the root is refused, and re-claims with a fresh view', async (t) => {
  const path = join(dir, `two${n++}`, 'anchor_store.db');
  const a = await open(SqliteStore.open(path), { fenced: true });
  const b = await open(SqliteStore.open(path), { fenced: true });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const rootId = Graph.newRootId();
  const caller = { rootId };
  await a.graph.spawn('CreateTodo', { title: 'from a' }, { caller });
  // B takes the root over (its partition claims it), reads A's write and adds its own.
  t.same(await titles(b.graph, rootId), ['from a']);
  await b.graph.spawn('CreateTodo', { title: 'from b' }, { caller });
  // A still holds the root in memory: its late write is refused, whole.
  await t.rejects(a.graph.spawn('CreateTodo', { title: 'zombie' }, { caller }), { code: 'SVC_ERR_FENCED', status: 503 });
  t.equal(a.system.activationCount('partition'), 0, 'A’s partition stopped');
  t.same(await titles(b.graph, rootId), ['from a', 'from b'], 'nothing of the refused run was stored');
  // A's next request activates a fresh partition: it claims again and reloads — no stale read.
  t.same(await titles(a.graph, rootId), ['from a', 'from b']);
  await a.graph.spawn('CreateTodo', { title: 'a again' }, { caller });
  await t.rejects(b.graph.spawn('CreateTodo', { title: 'b late' }, { caller }), { code: 'SVC_ERR_FENCED' }, 'and now B is the one fenced');
  t.same(await titles(b.graph, rootId), ['a again', 'from a', 'from b']);
});

t.test('runs pipelined behind a fenced batch are refused too, and none of them is stored', async (t) => {
  const store = new MemoryStore();
  const a = await open(store, { fenced: true });
  t.teardown(a.close);
  const rootId = Graph.newRootId();
  const caller = { rootId };
  await a.graph.spawn('CreateTodo', { title: 'first' }, { caller });
  await store.claim(rootId); // another process claims the root
  const runs = await Promise.allSettled([
    a.graph.spawn('CreateTodo', { title: 'late 1' }, { caller }),
    a.graph.spawn('CreateTodo', { title: 'late 2' }, { caller }),
    a.graph.spawn('ListTodos', {}, { caller }),
  ]);
  for (const r of runs) t.match(r, { status: 'rejected', reason: { code: 'SVC_ERR_FENCED' } });
  t.same(await titles(a.graph, rootId), ['first'], 'a fresh activation sees only what was stored');
});

t.test('without fenced, nothing is claimed and batches carry no fence', async (t) => {
  const store = new MemoryStore();
  const commits: unknown[] = [];
  const commit = store.commit.bind(store);
  store.commit = (batch) => {
    commits.push(batch.fence);
    return commit(batch);
  };
  let claims = 0;
  const claim = store.claim.bind(store);
  store.claim = (root) => {
    claims++;
    return claim(root);
  };
  const a = await open(store);
  t.teardown(a.close);
  const rootId = Graph.newRootId();
  await a.graph.spawn('CreateTodo', { title: 'x' }, { caller: { rootId } });
  t.equal(claims, 0);
  t.same(commits, [undefined, undefined], 'the root, then the run');
});

t.test('a fenced graph needs a store that can claim', async (t) => {
  const store = new MemoryStore();
  const bare = Object.assign(Object.create(store) as AnchorStore, { claim: undefined });
  t.throws(() => new Graph({ system: new ActorSystem(), registry: Registry.fromModule(app), store: bare, fenced: true }), { code: 'SVC_ERR_STORE' });
});

t.test('guard: a refusal answers the message with its error and stops the partition; the next message starts afresh', async (t) => {
  const store = new MemoryStore();
  let refusal: Error | undefined;
  let asked = 0;
  const a = await open(store, {
    guard: () => {
      asked++;
      return refusal;
    },
  });
  t.teardown(a.close);
  const rootId = Graph.newRootId();
  const caller = { rootId };
  await a.graph.spawn('CreateTodo', { title: 'kept' }, { caller });
  t.ok(asked >= 1, 'asked before running');
  t.equal(a.system.activationCount('partition'), 1);
  refusal = new SvcError('SVC_ERR_NOT_MEMBER', 'this process is not a member of the cluster', { status: 503 });
  await t.rejects(a.graph.spawn('CreateTodo', { title: 'refused' }, { caller }), { code: 'SVC_ERR_NOT_MEMBER' });
  t.equal(a.system.activationCount('partition'), 0, 'the partition stopped after answering');
  await t.rejects(a.graph.spawn('ListTodos', {}, { caller }), { code: 'SVC_ERR_NOT_MEMBER' }, 'still refused while the guard says so');
  refusal = undefined;
  t.same(await titles(a.graph, rootId), ['kept'], 'a fresh partition: nothing of the refused run');
});

t.test('guard: a partition activated while the guard refuses claims nothing and loads nothing', async (t) => {
  const store = new MemoryStore();
  let claims = 0;
  let reads = 0;
  const claim = store.claim.bind(store);
  store.claim = (root) => (claims++, claim(root));
  const get = store.get.bind(store);
  store.get = (ids) => (reads++, get(ids));
  let refusal: Error | undefined = storeError('SVC_ERR_FENCED', 'not a member');
  const a = await open(store, { fenced: true, guard: () => refusal });
  t.teardown(a.close);
  const rootId = Graph.newRootId();
  await t.rejects(a.graph.spawn('ListTodos', {}, { caller: { rootId } }), { code: 'SVC_ERR_FENCED', message: 'not a member' });
  t.equal(claims, 0, 'the root’s owner is not fenced by a process that may not serve it');
  t.equal(reads, 0);
  t.equal(a.system.activationCount('partition'), 0);
  refusal = undefined;
  t.same(await titles(a.graph, rootId), []);
  t.equal(claims, 1);
});

t.test('guard: messages queued behind a refused one are answered with the refusal', async (t) => {
  let refusal: Error | undefined;
  const a = await open(new MemoryStore(), { guard: () => refusal });
  t.teardown(a.close);
  const rootId = Graph.newRootId();
  const caller = { rootId };
  await a.graph.ensureRoot(rootId);
  refusal = storeError('SVC_ERR_FENCED');
  const queued = [1, 2, 3].map((i) => a.graph.spawn('CreateTodo', { title: `q${i}` }, { caller }));
  const flip = queued[0]?.catch(() => (refusal = undefined));
  for (const q of queued) await t.rejects(q, { code: 'SVC_ERR_FENCED' });
  await flip;
  t.same(await titles(a.graph, rootId), []);
});

t.test('dropActivations stops every partition of the thread; they reload on the next message', async (t) => {
  const store = new MemoryStore();
  const a = await open(store, { fenced: true });
  t.teardown(a.close);
  const roots = [Graph.newRootId(), Graph.newRootId(), Graph.newRootId()];
  for (const rootId of roots) await a.graph.spawn('CreateTodo', { title: rootId.slice(0, 4) }, { caller: { rootId } });
  t.equal(a.system.activationCount('partition'), 3);
  await a.graph.dropActivations();
  t.equal(a.system.activationCount('partition'), 0);
  await a.graph.dropActivations(); // nothing left: a no-op
  for (const rootId of roots) t.same(await titles(a.graph, rootId), [rootId.slice(0, 4)]);
  t.equal(await store.claim(roots[0] as string), 3, 'each activation claimed its root: the first, then the one after the drop');
});

/** A memory store whose edge reads wait while `gate` is armed (a run awaits its store mid-way); `reached` says one waits. */
class GatedStore extends MemoryStore {
  gate: Promise<void> | undefined;
  reached = deferred<void>();
  override async edges(nodeId: string) {
    if (this.gate) {
      this.reached.resolve();
      await this.gate;
    }
    return super.edges(nodeId);
  }
}

/** A fenced graph of the counter app on a gated store, with one root whose counter is at 1 and no partition live: its next Bump reads its edges. */
async function counterAt1(t: Test, guard?: () => Error | undefined) {
  const store = new GatedStore();
  const system = new ActorSystem();
  const graph = await Graph.open({ system, registry: Registry.fromModule(counters), store, fenced: true, ...(guard ? { guard } : {}) });
  t.teardown(() => system.shutdown());
  const caller = { rootId: Graph.newRootId() };
  t.same((await graph.spawn('Bump', {}, { caller })).reports, [1]);
  await graph.dropActivations();
  const count = async () => (await graph.spawn('Read', {}, { caller })).reports[0];
  return { store, graph, caller, count };
}

t.test('a run whose partition lost its right to serve while it awaited stores nothing: its caller gets why', async (t) => {
  let lapsed: Error | undefined;
  const { store, graph, caller, count } = await counterAt1(t, () => lapsed);
  const gate = deferred<void>();
  store.gate = gate.promise;
  const run = graph.spawn('Bump', {}, { caller });
  await store.reached.promise;
  // Its cluster lease lapsed meanwhile (a pause): the run must not commit when it goes on.
  lapsed = new SvcError('SVC_ERR_NOT_MEMBER', 'lease lapsed', { status: 503 });
  store.gate = undefined;
  gate.resolve();
  await t.rejects(run, { code: 'SVC_ERR_NOT_MEMBER' });
  lapsed = undefined;
  t.equal(await count(), 1, 'nothing of it was stored');
});

t.test('dropActivations fails a run under way at once, with the reason given, and it stores nothing', async (t) => {
  const { store, graph, caller, count } = await counterAt1(t);
  const gate = deferred<void>();
  store.gate = gate.promise;
  const run = graph.spawn('Bump', {}, { caller });
  const queued = graph.spawn('Bump', {}, { caller });
  await store.reached.promise;
  const reason = new SvcError('SVC_ERR_NOT_MEMBER', 'this member lost its lease', { status: 503 });
  await graph.dropActivations(reason);
  t.equal(await run.catch((e: unknown) => e), reason, 'the run under way fails with the reason, without waiting for it');
  t.equal(await queued.catch((e: unknown) => e), reason, 'so does the one queued behind it');
  store.gate = undefined;
  gate.resolve();
  // The abandoned run goes on in the background: give it every chance to commit before reading.
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(await count(), 1, 'nothing of either was stored when the run went on');
});

t.test('an HTTP answer for SVC_ERR_FENCED is 503 with Retry-After', async (t) => {
  const a = await open(new MemoryStore());
  t.teardown(a.close);
  const failing = (error: Error) => () => {
    throw error;
  };
  const front = new Front({
    graph: a.graph,
    registry: a.graph.registry,
    routes: [],
    auth: undefined as never,
    builtinRoutes: [
      { method: 'GET', path: '/fenced', auth: 'none', handler: failing(storeError('SVC_ERR_FENCED')) },
      { method: 'GET', path: '/busy', auth: 'none', handler: failing(new SvcError('SVC_ERR_BUSY', 'busy', { status: 503, details: { retry_after_seconds: 7 } })) },
    ],
    openapi: {},
    docs: undefined,
    statics: undefined,
    requestTimeoutMs: 1000,
    dev: false,
    accessLog: undefined,
    suppressHealthLogs: true,
    onError: () => undefined,
  });
  const get = (path: string) => front.handle({ method: 'GET', path, query: '', headers: {}, body: Buffer.alloc(0), remoteAddress: '' });
  const res = await get('/fenced');
  t.equal(res.status, 503);
  t.equal(res.headers['retry-after'], '1');
  t.match(JSON.parse(String(res.body)), { error: { code: 'SVC_ERR_FENCED' } });
  t.equal((await get('/busy')).headers['retry-after'], '7', 'a 503 that says when');
});
