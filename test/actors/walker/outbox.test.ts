// The outbox of a walker run: `afterCommit` holds side effects back until the
// run's changes are durable; a run that fails, throws, times out or whose
// batch is refused releases nothing. In process, over a memory store whose
// commits a test can hold, fail or count.
import t, { type Test } from 'tap';
import { ActorSystem } from 'svc/kernel';
import { entry, fn, Graph, MemoryStore, Node, Registry, Root, T, Walker } from 'svc';
import { afterCommit, inWalkerRun, type OutboxEntry, type WalkerLogger } from '../../../actors/walker/index.ts';
import { type AnchorStore, type CommitBatch, storeError } from '../../../actors/graph/index.ts';
import { deferred, Latch } from '../../kit/index.ts';

export class Item extends Node {
  static has = T.Object({ n: T.Integer() });
  declare n: number;
}

/** Creates an item and holds an event about it. */
export class Publish extends Walker {
  static has = T.Object({ n: T.Integer() });
  declare n: number;
  @entry(Root) async go(here: Root) {
    const item = await here.connect(new Item({ n: this.n }));
    this.report(afterCommit({ kind: 'event', data: { id: item.id, n: this.n } }));
    this.report(inWalkerRun());
  }
}

/** Holds an event, writes nothing. */
export class Notify extends Walker {
  static has = T.Object({ n: T.Integer() });
  declare n: number;
  @entry(Root) go() {
    this.report(afterCommit({ kind: 'note', data: this.n }));
  }
}

export class Throws extends Walker {
  @entry(Root) async go(here: Root) {
    await here.connect(new Item({ n: -1 }));
    afterCommit({ kind: 'event', data: 'never' });
    throw new Error('boom');
  }
}

/** A nested walker fails and is caught: its entries go with its changes; the parent's stay. */
export class CatchesChild extends Walker {
  @entry(Root) async go() {
    afterCommit({ kind: 'event', data: 'parent' });
    await this.spawn('Throws', {}).catch(() => undefined);
    this.report('caught');
  }
}

/** Bumps every item (a write to stored anchors). */
export class Bump extends Walker {
  @entry(Root) async go(here: Root) {
    for (const item of await here.out(Item)) item.n += 1;
    afterCommit({ kind: 'event', data: 'bumped' });
  }
}

export const never = deferred();
export class Hangs extends Walker {
  @entry(Root) async go() {
    afterCommit({ kind: 'event', data: 'hung' });
    await never.promise;
  }
}

/** Leaves a continuation behind that calls afterCommit once the run has ended. */
export const late = { gate: deferred(), result: deferred<[boolean, boolean]>() };
export class Stray extends Walker {
  @entry(Root) go() {
    void late.gate.promise.then(() => late.result.resolve([afterCommit({ kind: 'event', data: 'late' }), inWalkerRun()]));
  }
}

export const notifyFn = fn({}, (_args, ctx) => afterCommit({ kind: 'fn', data: ctx.traceId ?? null }));

const app = { Item, Publish, Notify, Throws, CatchesChild, Bump, Hangs, Stray, notifyFn };

/** A memory store whose commits can be held (gate) or failed (fail), and are counted. */
class TestStore extends MemoryStore {
  gate: Promise<void> | undefined;
  fail: Error | undefined;
  readonly commits = new Latch();

  override async commit(batch: CommitBatch): Promise<void> {
    this.commits.hit();
    if (this.gate) await this.gate;
    if (this.fail) {
      const error = this.fail;
      this.fail = undefined;
      throw error;
    }
    return super.commit(batch);
  }
}

function open(t: Test, options: { consumer?: (entries: readonly OutboxEntry[]) => void; logger?: (b: Record<string, unknown>) => WalkerLogger; runTimeoutMs?: number; outbox?: boolean } = {}) {
  const system = new ActorSystem();
  const store = new TestStore();
  const released: OutboxEntry[][] = [];
  const consumer = options.consumer ?? ((entries: readonly OutboxEntry[]) => void released.push([...entries]));
  const graph = new Graph({
    system,
    registry: Registry.fromModule(app),
    store,
    ...(options.outbox === false ? {} : { outbox: consumer }),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.runTimeoutMs ? { runTimeoutMs: options.runTimeoutMs } : {}),
  });
  t.teardown(async () => {
    await system.shutdown();
    await store.close();
  });
  return { graph, store: store as TestStore & AnchorStore, released };
}

async function activated(graph: Graph): Promise<{ rootId: string }> {
  const caller = { rootId: Graph.newRootId() };
  await graph.ensureRoot(caller.rootId);
  return caller;
}

t.test('released once the batch is durable, stamped with the trace id and root, before the caller hears back', async (t) => {
  const order: string[] = [];
  const stored: Promise<unknown[]>[] = [];
  const { graph, store, released } = open(t, {
    consumer: (entries) => {
      order.push(inWalkerRun() ? 'released inside a run' : 'released');
      released.push([...entries]);
      // What the store holds at this moment.
      stored.push(store.get([(entries[0]?.data as { id: string }).id]));
    },
  });
  const caller = await activated(graph);
  const gate = deferred();
  store.gate = gate.promise;
  const reply = graph.spawn('Publish', { n: 1 }, { caller, traceId: 'tr-1' }).then((r) => {
    order.push('replied');
    return r;
  });
  await store.commits.wait(2); // the root's, then the run's
  t.same(released, [], 'nothing while the batch is not durable');
  gate.resolve();
  const { reports } = await reply;
  t.same(reports, [true, true], 'afterCommit took the entry; inWalkerRun inside the run');
  t.same(order, ['released', 'replied']);
  t.equal(released.length, 1);
  t.match(released[0], [{ kind: 'event', data: { n: 1 }, traceId: 'tr-1', rootId: caller.rootId }]);
  t.equal((await stored[0])?.length, 1, 'the store had the write when the consumer was called');
});

t.test('dropped when the walker throws', async (t) => {
  const { graph, released } = open(t);
  const caller = await activated(graph);
  await t.rejects(graph.spawn('Throws', {}, { caller }), { code: 'SVC_ERR_WALKER_FAILED' });
  t.same(released, []);
  await graph.spawn('Publish', { n: 2 }, { caller });
  t.match(released, [[{ data: { n: 2 } }]], 'the next run releases its own entries only');
});

t.test('a nested walker that fails takes its entries with it; its parent keeps its own', async (t) => {
  const { graph, released } = open(t);
  const caller = await activated(graph);
  t.same((await graph.spawn('CatchesChild', {}, { caller })).reports, ['caught']);
  t.match(released, [[{ data: 'parent' }]]);
  t.equal(released[0]?.length, 1);
});

t.test('dropped when the commit fails', async (t) => {
  const { graph, store, released } = open(t);
  const caller = await activated(graph);
  store.fail = storeError('SVC_ERR_STORE', 'disk on fire');
  await t.rejects(graph.spawn('Publish', { n: 3 }, { caller }), { code: 'SVC_ERR_STORE' });
  t.same(released, []);
  // The partition restarts and reloads; runs release again.
  await graph.spawn('Publish', { n: 4 }, { caller });
  t.match(released, [[{ data: { n: 4 } }]]);
});

t.test('dropped when the batch conflicts with the store', async (t) => {
  const { graph, store, released } = open(t);
  const caller = await activated(graph);
  await graph.spawn('Publish', { n: 5 }, { caller });
  const { id } = released[0]?.[0]?.data as { id: string };
  released.length = 0;
  // Another writer moves the item on behind the partition's back: its next write conflicts.
  const [doc] = await store.get([id]);
  await store.commit({ upserts: [{ ...(doc as NonNullable<typeof doc>), version: (doc?.version ?? 0) + 1 }], deletes: [] });
  await t.rejects(graph.spawn('Bump', {}, { caller }), { code: 'SVC_ERR_CONFLICT' });
  t.same(released, []);
});

t.test('a run that writes nothing releases its entries once it succeeds', async (t) => {
  const { graph, released } = open(t);
  const caller = await activated(graph);
  t.same((await graph.spawn('Notify', { n: 6 }, { caller, traceId: 'ro' })).reports, [true]);
  t.same(released, [[{ kind: 'note', data: 6, traceId: 'ro', rootId: caller.rootId }]]);
  t.same((await graph.call('notifyFn', {}, { caller, traceId: 'f' })).result, true, 'functions too');
  t.same(released[1], [{ kind: 'fn', data: 'f', traceId: 'f', rootId: caller.rootId }]);
});

t.test('a run that writes nothing, after a batch not yet durable, releases only once that batch is — and never if it fails', async (t) => {
  const { graph, store, released } = open(t);
  const caller = await activated(graph);
  let gate = deferred();
  store.gate = gate.promise;
  const write = graph.spawn('Publish', { n: 7 }, { caller });
  const read = graph.spawn('Notify', { n: 8 }, { caller });
  await store.commits.wait(2);
  t.same(released, []);
  gate.resolve();
  await Promise.all([write, read]);
  t.match(released, [[{ data: { n: 7 } }], [{ data: 8 }]], 'in order, once durable');

  released.length = 0;
  gate = deferred();
  store.gate = gate.promise;
  store.fail = storeError('SVC_ERR_STORE', 'lost');
  const failing = graph.spawn('Publish', { n: 9 }, { caller });
  const after = graph.spawn('Notify', { n: 10 }, { caller });
  await store.commits.wait(3);
  gate.resolve();
  await t.rejects(failing, { code: 'SVC_ERR_STORE' });
  await t.rejects(after);
  t.same(released, [], 'the run that may have read the failed batch releases nothing');
});

t.test('dropped when the run times out', async (t) => {
  const { graph, released } = open(t, { runTimeoutMs: 50 });
  const caller = await activated(graph);
  await t.rejects(graph.spawn('Hangs', {}, { caller }), { code: 'SVC_ERR_WALKER_TIMEOUT' });
  t.same(released, []);
});

t.test('outside a run, or once it has ended, afterCommit takes nothing', async (t) => {
  t.equal(afterCommit({ kind: 'event', data: 1 }), false);
  t.equal(inWalkerRun(), false);
  t.throws(() => afterCommit({ data: 1 } as unknown as { kind: string; data: unknown }), TypeError);
  const { graph, released } = open(t);
  const caller = await activated(graph);
  await graph.spawn('Stray', {}, { caller });
  late.gate.resolve();
  t.same(await late.result.promise, [false, false], 'a continuation left behind by an ended run');
  t.same(released, []);
});

t.test('a graph without an outbox consumer holds nothing: afterCommit answers false', async (t) => {
  const { graph } = open(t, { outbox: false });
  const caller = await activated(graph);
  t.same((await graph.spawn('Notify', { n: 1 }, { caller })).reports, [false]);
});

t.test('a consumer that throws is reported; the run stays committed and the partition serves on', async (t) => {
  const errors: { bindings: Record<string, unknown>; obj: unknown; msg: unknown }[] = [];
  const noop = () => undefined;
  const logger = (bindings: Record<string, unknown>): WalkerLogger => ({
    info: noop,
    warn: noop,
    debug: noop,
    error: (obj: unknown, msg?: unknown) => void errors.push({ bindings, obj, msg }),
  });
  let calls = 0;
  const { graph } = open(t, {
    logger,
    consumer: () => {
      calls++;
      throw new Error('consumer down');
    },
  });
  const caller = await activated(graph);
  t.same((await graph.spawn('Publish', { n: 11 }, { caller })).reports, [true, true]);
  t.same((await graph.spawn('Notify', { n: 12 }, { caller })).reports, [true]);
  t.equal(calls, 2);
  t.equal(errors.length, 2);
  t.match(errors[0], { bindings: { root: caller.rootId }, obj: { err: { message: 'consumer down' }, entries: 1 }, msg: /outbox consumer failed/ });
  t.equal((await graph.spawn('Publish', { n: 13 }, { caller })).reports.length, 2);
});
