// Runs that complete synchronously (every ability synchronous, the start node
// in memory) are answered without a promise hop; these tests pin down that
// they mean the same as before: the order of abilities across a switch to
// async, skip and disengage, operations an ability forgot to await (they still
// land, in memory and in the store), and errors of every shape answered with
// the run rolled back.
import t, { type Test } from 'tap';
import { ActorSystem } from 'svc/kernel';
import { entry, exit, fn, Graph, MemoryStore, Node, Registry, Root, T, Walker } from 'svc';
import { callingRun } from '../../../actors/walker/index.ts';

export class Todo extends Node {
  static has = T.Object({ title: T.String(), n: T.Integer({ default: 0 }) });
  declare title: string;
  declare n: number;
}

/** Sync walker, async node ability in the middle: the order must be the declared one. */
export class Order extends Walker {
  @entry(Root) start(here: Root) {
    this.report('walker-entry-root');
    return here.out(Todo).then((todos) => {
      this.report('visiting');
      this.visit(todos);
    });
  }
  @entry(Todo) each(here: Todo) {
    this.report(`walker-entry-${here.title}`);
    if (here.title === 'skip-me') this.skip();
    if (here.title === 'stop') this.disengage();
  }
  @exit(Todo) onExit(here: Todo) {
    this.report(`walker-exit-${here.title}`);
  }
}

/** Entirely synchronous, with skip and disengage thrown from sync abilities. */
export class SyncOnly extends Walker {
  static has = T.Object({ stopAt: T.String({ default: '' }) });
  declare stopAt: string;
  @entry(Todo) each(here: Todo) {
    this.report(here.title);
    if (here.title === this.stopAt) this.disengage();
    this.report(`${here.title}-after`);
  }
}

/** A sync ability that forgets to await connect. */
export class ForgetfulMake extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ title: T.String() });
  declare title: string;
  @entry(Root) make(here: Root) {
    void here.connect(new Todo({ title: this.title }));
    this.report('made');
  }
}

/** A sync ability that forgets to await destroy. */
export class ForgetfulDestroy extends Walker {
  @entry(Todo) drop(here: Todo) {
    void here.destroy();
    this.report('dropped');
  }
}

export class Make extends Walker {
  static has = T.Object({ title: T.String() });
  declare title: string;
  @entry(Root) async make(here: Root) {
    this.report((await here.connect(new Todo({ title: this.title }))).id);
  }
}

export class List extends Walker {
  @entry(Root) async list(here: Root) {
    this.report((await here.out(Todo)).map((n) => n.title).sort());
  }
}

/** Writes, then throws synchronously: nothing of it may stay. */
export class WriteThenThrow extends Walker {
  @entry(Todo) write(here: Todo) {
    here.n = 99;
    throw new Error('boom');
  }
}

export class ReadN extends Walker {
  @entry(Todo) read(here: Todo) {
    this.report(here.n);
  }
}

export const plain = fn({ access: 'pub', params: T.Object({ a: T.Number() }) }, ({ a }) => a * 2);
export const throwingThen = fn({ access: 'pub' }, () => ({
  get then(): unknown {
    throw new Error('a then getter that throws');
  },
}));

const app = { Todo, Order, SyncOnly, ForgetfulMake, ForgetfulDestroy, Make, List, WriteThenThrow, ReadN, plain, throwingThen };

function open(t: Test, store = new MemoryStore()) {
  const system = new ActorSystem();
  const graph = new Graph({ system, registry: Registry.fromModule(app), store });
  t.teardown(() => system.shutdown());
  return { graph, system, store };
}

async function make(graph: Graph, rootId: string, titles: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const title of titles) ids.push((await graph.spawn('Make', { title }, { caller: { rootId } })).reports[0] as string);
  return ids;
}

t.test('abilities run in the declared order across the switch from sync to async, with skip and disengage', async (t) => {
  const { graph } = open(t);
  const rootId = Graph.newRootId();
  await make(graph, rootId, ['a', 'skip-me', 'stop', 'z']);
  const { reports } = await graph.spawn('Order', {}, { caller: { rootId } });
  // out() order is the connection order.
  t.same(reports, ['walker-entry-root', 'visiting', 'walker-entry-a', 'walker-exit-a', 'walker-entry-skip-me', 'walker-entry-stop']);
});

t.test('a synchronous walker at a node in memory: reports at once, disengage ends it', async (t) => {
  const { graph } = open(t);
  const rootId = Graph.newRootId();
  const [a] = await make(graph, rootId, ['a']);
  t.same((await graph.spawn('SyncOnly', {}, { caller: { rootId }, at: a })).reports, ['a', 'a-after']);
  t.same((await graph.spawn('SyncOnly', { stopAt: 'a' }, { caller: { rootId }, at: a })).reports, ['a']);
});

t.test('bad fields are refused before the start node is looked at, as before', async (t) => {
  const { graph } = open(t);
  const rootId = Graph.newRootId();
  await t.rejects(graph.spawn('SyncOnly', { stopAt: 3 }, { caller: { rootId }, at: 'f'.repeat(32) }), { code: 'SVC_ERR_INVALID_FIELDS' });
  await t.rejects(graph.spawn('SyncOnly', {}, { caller: { rootId }, at: 'f'.repeat(32) }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
});

t.test('an operation a synchronous ability did not await still lands, in memory and in the store', async (t) => {
  const store = new MemoryStore();
  const rootId = Graph.newRootId();
  {
    const { graph, system } = open(t, store);
    t.same((await graph.spawn('ForgetfulMake', { title: 'kept' }, { caller: { rootId } })).reports, ['made']);
    t.same((await graph.spawn('List', {}, { caller: { rootId } })).reports, [['kept']], 'in memory');
    const [gone] = await make(graph, rootId, ['gone']);
    t.same((await graph.spawn('ForgetfulDestroy', {}, { caller: { rootId }, at: gone })).reports, ['dropped']);
    t.same((await graph.spawn('List', {}, { caller: { rootId } })).reports, [['kept']], 'destroyed in memory');
    await system.shutdown();
  }
  // A new system over the same store: what was stored, not what memory holds.
  const { graph } = open(t, store);
  t.same((await graph.spawn('List', {}, { caller: { rootId } })).reports, [['kept']], 'the store has the created node and not the destroyed one');
});

t.test('a synchronous throw rolls the run back; errors keep their shape', async (t) => {
  const { graph } = open(t);
  const rootId = Graph.newRootId();
  const [a] = await make(graph, rootId, ['a']);
  await t.rejects(graph.spawn('WriteThenThrow', {}, { caller: { rootId }, at: a }), { code: 'SVC_ERR_WALKER_FAILED' });
  t.same((await graph.spawn('ReadN', {}, { caller: { rootId }, at: a })).reports, [0], 'the write was undone');
  t.equal((await graph.call('plain', { a: 21 }, { caller: { rootId } })).result, 42, 'a synchronous function answers its value');
});

t.test("a function whose value has a throwing `then` fails like any function, and the thread's run accounting stays balanced", async (t) => {
  const { graph } = open(t);
  const rootId = Graph.newRootId();
  t.same(callingRun(), { run: undefined }, 'outside any run before');
  await t.rejects(graph.call('throwingThen', {}, { caller: { rootId } }), { code: 'SVC_ERR_WALKER_FAILED' });
  t.same(callingRun(), { run: undefined }, 'outside any run after: the untracked-run count went back to zero');
  t.equal((await graph.call('plain', { a: 1 }, { caller: { rootId } })).result, 2, 'the partition still serves');
});
