// What a run carries into walkers and functions besides their fields: the
// request's trace id (`this.traceId`, `ctx.traceId`) and a logger bound to the
// walker, the trace id and the root (`this.log`, `ctx.log`), made only when
// read — and neither leaks into fields, reports, schemas or OpenAPI.
import t, { type Test } from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ActorSystem } from 'svc/kernel';
import { entry, fn, Graph, MemoryStore, Node, Registry, Root, T, Walker } from 'svc';
import { walkerInfo, type WalkerLogger } from '../../../actors/walker/index.ts';
import { buildRoutes, openApiDocument } from '../../../transports/http/index.ts';

export class Item extends Node {
  static has = T.Object({ n: T.Integer() });
  declare n: number;
  @entry(() => Visitor) seen(walker: Visitor) {
    // A node ability reaches the run's context through the walker it is given.
    walker.log.info({ item: this.n }, 'seen by a node');
    walker.report({ nodeSees: walker.traceId ?? null });
  }
}

export class Traced extends Walker {
  static has = T.Object({ note: T.String({ default: '' }) });
  declare note: string;
  @entry(Root) go() {
    this.report(this.traceId ?? null);
    this.log.info('plain');
    this.log.warn({ k: 1 }, 'with an object');
    this.report({ same: this.log === this.log });
    this.report(this);
    this.report(Object.keys(this));
    this.report(JSON.parse(JSON.stringify(this)) as unknown);
    const enumerable: string[] = [];
    for (const k in this) enumerable.push(k);
    this.report(enumerable);
  }
}

export class Quiet extends Walker {
  @entry(Root) go() {
    this.report(this.traceId ?? null);
  }
}

export class Parent extends Walker {
  @entry(Root) async go() {
    this.log.debug('parent');
    this.report(await this.spawn('Traced', { note: 'child' }));
  }
}

export class MakeItem extends Walker {
  @entry(Root) async go(here: Root) {
    this.report((await here.connect(new Item({ n: 7 }))).id);
  }
}

export class Visitor extends Walker {
  @entry(Item) here() {}
}

export const traced = fn({ access: 'pub' }, (_args, { traceId, log }) => {
  log.error({ err: 'none' }, 'from a function');
  return traceId ?? null;
});

export const quietFn = fn({}, (_args, ctx) => ctx.traceId ?? null);

const app = { Item, Traced, Quiet, Parent, MakeItem, Visitor, traced, quietFn };

interface Line {
  level: string;
  bindings: Record<string, unknown>;
  obj: unknown;
  msg: unknown;
}

function capture() {
  const made: Record<string, unknown>[] = [];
  const lines: Line[] = [];
  const logger = (bindings: Record<string, unknown>): WalkerLogger => {
    made.push(bindings);
    const at =
      (level: string) =>
      (a: unknown, b?: unknown): void => {
        lines.push(typeof a === 'string' ? { level, bindings, obj: undefined, msg: a } : { level, bindings, obj: a, msg: b });
      };
    return { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
  };
  return { made, lines, logger };
}

function open(t: Test, options: { logger?: (b: Record<string, unknown>) => WalkerLogger } = {}) {
  const system = new ActorSystem();
  const store = new MemoryStore();
  const graph = new Graph({ system, registry: Registry.fromModule(app), store, ...options });
  t.teardown(async () => {
    await system.shutdown();
    await store.close();
  });
  return graph;
}

t.test('this.traceId is the one given to spawn; undefined without one', async (t) => {
  const graph = open(t);
  const caller = { rootId: Graph.newRootId() };
  t.equal((await graph.spawn('Quiet', {}, { caller, traceId: 'trace-1' })).reports[0], 'trace-1');
  t.equal((await graph.spawn('Quiet', {}, { caller })).reports[0], null);
  t.equal((await graph.call('quietFn', {}, { caller, traceId: 'trace-2' })).result, 'trace-2', 'functions get ctx.traceId');
  t.equal((await graph.call('quietFn', {}, { caller })).result, null);
  const nested = (await graph.spawn('Parent', {}, { caller, traceId: 'trace-3' })).reports[0] as unknown[];
  t.equal(nested[0], 'trace-3', 'a nested walker runs under the same trace id');
});

t.test('spawning at a node carries the trace id; node abilities read it from the walker', async (t) => {
  const { logger, lines } = capture();
  const graph = open(t, { logger });
  const caller = { rootId: Graph.newRootId() };
  const [id] = (await graph.spawn('MakeItem', {}, { caller })).reports as string[];
  const { reports } = await graph.spawn('Visitor', {}, { caller, at: id, traceId: 'at-node' });
  t.same(reports, [{ nodeSees: 'at-node' }]);
  t.same(lines, [{ level: 'info', bindings: { walker: 'Visitor', trace_id: 'at-node', root: caller.rootId }, obj: { item: 7 }, msg: 'seen by a node' }]);
});

t.test('this.log lines carry the walker, trace_id and root; ctx.log the function', async (t) => {
  const { logger, lines, made } = capture();
  const graph = open(t, { logger });
  const caller = { rootId: Graph.newRootId() };
  const { reports } = await graph.spawn('Traced', {}, { caller, traceId: 'abc' });
  const bindings = { walker: 'Traced', trace_id: 'abc', root: caller.rootId };
  t.same(lines, [
    { level: 'info', bindings, obj: undefined, msg: 'plain' },
    { level: 'warn', bindings, obj: { k: 1 }, msg: 'with an object' },
  ]);
  t.same(reports[1], { same: true }, 'one logger per walker, made once');
  t.equal(made.length, 1);

  lines.length = 0;
  t.equal((await graph.call('traced', {}, { caller, traceId: 'def' })).result, 'def');
  t.same(lines, [{ level: 'error', bindings: { function: 'traced', trace_id: 'def', root: caller.rootId }, obj: { err: 'none' }, msg: 'from a function' }]);

  lines.length = 0;
  await graph.spawn('Parent', {}, { caller });
  t.same(
    lines.map((l) => [l.level, l.bindings, l.msg]),
    [
      ['debug', { walker: 'Parent', root: caller.rootId }, 'parent'],
      ['info', { walker: 'Traced', root: caller.rootId }, 'plain'],
      ['warn', { walker: 'Traced', root: caller.rootId }, 'with an object'],
    ],
    'no trace_id binding without a trace id; a nested walker logs under its own name',
  );
});

t.test('a run that never logs makes no logger', async (t) => {
  const { logger, made } = capture();
  const graph = open(t, { logger });
  const caller = { rootId: Graph.newRootId() };
  await graph.spawn('Quiet', {}, { caller, traceId: 'x' });
  await graph.spawn('MakeItem', {}, { caller, traceId: 'x' });
  await graph.call('quietFn', {}, { caller, traceId: 'x' });
  t.equal(made.length, 0);
});

t.test('without a logger, this.log logs nowhere', async (t) => {
  const graph = open(t);
  const caller = { rootId: Graph.newRootId() };
  t.equal((await graph.spawn('Traced', {}, { caller, traceId: 'q' })).reports[0], 'q');
  t.equal((await graph.call('traced', {}, { caller })).result, null);
});

t.test('a pino child logger fits: JSON lines with walker, trace_id and root', async (t) => {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out.push(chunk.toString());
      done();
    },
  });
  const log = pino({ level: 'debug', base: null, timestamp: false }, sink);
  const graph = open(t, { logger: (b) => log.child(b) });
  const caller = { rootId: Graph.newRootId() };
  await graph.spawn('Traced', {}, { caller, traceId: 'pino-1' });
  const lines = out.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(lines, [
    { level: 30, walker: 'Traced', trace_id: 'pino-1', root: caller.rootId, msg: 'plain' },
    { level: 40, walker: 'Traced', trace_id: 'pino-1', root: caller.rootId, k: 1, msg: 'with an object' },
  ]);
});

t.test('log and traceId are not fields: not in reports, toJSON, keys, schema or OpenAPI', async (t) => {
  const graph = open(t, { logger: capture().logger });
  const caller = { rootId: Graph.newRootId() };
  const { reports } = await graph.spawn('Traced', { note: 'n' }, { caller, traceId: 'leak?' });
  t.same(reports.slice(2), [{ note: 'n' }, ['note'], { note: 'n' }, ['note']], 'the walker reports, serializes and enumerates its fields only');
  t.same(walkerInfo(Traced).fields, ['note']);
  t.same(Object.keys(walkerInfo(Traced).schema.properties), ['note']);
  const doc = JSON.stringify(openApiDocument(buildRoutes(Registry.fromModule(app)), { title: 't', version: '0' }));
  t.notMatch(doc, /traceId|trace_id|"log"/, 'OpenAPI has neither');
  for (const name of ['log', 'traceId']) {
    const d = Object.getOwnPropertyDescriptor(Walker.prototype, name);
    t.equal(d?.enumerable, false, `${name} is a non-enumerable prototype getter`);
    t.type(d?.get, 'function');
  }
});

t.test('a walker field may not take the name log or traceId', async (t) => {
  class Shadow extends Walker {
    static has = T.Object({ log: T.String() });
  }
  class Shadow2 extends Walker {
    static has = T.Object({ traceId: T.String() });
  }
  t.throws(() => walkerInfo(Shadow), { code: 'SVC_ERR_BAD_ARCHETYPE' });
  t.throws(() => walkerInfo(Shadow2), { code: 'SVC_ERR_BAD_ARCHETYPE' });
});

t.test('outside a run, this.log and this.traceId refuse like the rest of the walker API', async (t) => {
  const w = new Quiet();
  t.throws(() => w.log, { code: 'SVC_ERR_NOT_IN_RUN' });
  t.throws(() => w.traceId, { code: 'SVC_ERR_NOT_IN_RUN' });
});
