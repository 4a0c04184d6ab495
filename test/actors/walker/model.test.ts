// The programming model, end to end through a partition (memory store).
import t from 'tap';
import { Graph, Registry } from 'svc';
import { newCaller, openGraph } from '../../helpers/graph.ts';

type Reported = { id: string; type: string; context: Record<string, unknown> };

t.test('walkers create, list, toggle and delete; nodes report as {id, type, context} with 32-hex ids', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const created = (await graph.spawn('CreateTodo', { title: 'milk' }, { caller: alice })).reports as Reported[];
  t.equal(created.length, 1);
  t.match(created[0], { type: 'Todo', context: { title: 'milk', done: false } });
  t.match(created[0]?.id, /^[0-9a-f]{32}$/);
  t.same(Object.keys(created[0] ?? {}).sort(), ['context', 'id', 'type']);
  await graph.spawn('CreateTodo', { title: 'eggs' }, { caller: alice });
  const listed = (await graph.spawn('ListTodos', {}, { caller: alice })).reports as Reported[];
  t.same(
    listed.map((r) => r.context.title),
    ['milk', 'eggs'],
  );
  const toggled = (await graph.spawn('ToggleTodo', { id: created[0]?.id }, { caller: alice })).reports as Reported[];
  t.equal(toggled[0]?.context.done, true);
  t.same((await graph.spawn('DeleteTodo', { id: created[0]?.id }, { caller: alice })).reports, [true]);
  const after = (await graph.spawn('ListTodos', {}, { caller: alice })).reports as Reported[];
  t.same(
    after.map((r) => r.context.title),
    ['eggs'],
  );
});

t.test('fields: defaults applied, wrong types refused (never coerced), unknown walkers are typed errors', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  t.same((await graph.spawn('Increment', {}, { caller: alice })).reports, [1], 'default by = 1');
  await t.rejects(graph.spawn('Increment', { by: '3' }, { caller: alice }), {
    code: 'SVC_ERR_INVALID_FIELDS',
    status: 400,
    message: 'Increment: field "by" must be an integer',
    details: [{ field: 'by', message: 'must be an integer' }],
  });
  await t.rejects(graph.spawn('CreateTodo', {}, { caller: alice }), {
    code: 'SVC_ERR_INVALID_FIELDS',
    message: 'CreateTodo: missing required field "title"',
    details: [{ field: 'title', message: 'missing required field' }],
  });
  await t.rejects(graph.spawn('CreateTodo', { title: 'x', tags: ['a', 2] }, { caller: alice }), { message: 'CreateTodo: field "tags[1]" must be a string' });
  await t.rejects(graph.spawn('CreateTodo', 'not an object', { caller: alice }), { code: 'SVC_ERR_INVALID_FIELDS' });
  // Walkers spawned by code (not a client's body) keep only their declared fields: undeclared ones are not refused here.
  t.same((await graph.spawn('Increment', { by: 1, extra: true }, { caller: alice })).reports, [2]);
  await t.rejects(graph.spawn('Nope', {}, { caller: alice }), { code: 'SVC_ERR_UNKNOWN_WALKER', status: 404 });
  await t.rejects(graph.call('nope', {}, { caller: alice }), { code: 'SVC_ERR_UNKNOWN_WALKER' });
  t.same((await graph.spawn('Increment', { by: 3 }, { caller: alice })).reports, [5]);
});

t.test('a field write with the wrong type fails the walker with SVC_ERR_INVALID_FIELDS', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const [todo] = (await graph.spawn('CreateTodo', { title: 'x' }, { caller: alice })).reports as Reported[];
  // Rename sets here.title from its field; the field itself is validated first, so go through a typed edge case:
  await t.rejects(graph.spawn('Rename', { title: 5 }, { caller: alice, at: todo?.id }), { code: 'SVC_ERR_INVALID_FIELDS' });
});

t.test('visit is breadth first; node abilities react to the walker; disengage stops at once', async (t) => {
  const { graph, close } = openGraph({ app: await import('../../fixtures/chain-app.ts') });
  t.teardown(close);
  const alice = newCaller();
  await graph.spawn('BuildTree', {}, { caller: alice });
  const bfs = (await graph.spawn('Walk', {}, { caller: alice })).reports;
  t.same(bfs, ['a', 'b', 'a1', 'a2', 'b1'], 'breadth first by default');
  const dfs = (await graph.spawn('Walk', { first: true }, { caller: alice })).reports;
  t.same(dfs, ['a', 'a2', 'a1', 'b', 'b1'], 'visit({first: true}) goes depth first (queued ahead, in the order given)');
  const stopped = (await graph.spawn('Walk', { stopAt: 'a1' }, { caller: alice })).reports;
  t.same(stopped, ['a', 'b', 'a1'], 'disengage: no more nodes');
  const skipped = (await graph.spawn('Walk', { skipAt: 'a' }, { caller: alice })).reports;
  t.same(skipped, ['b', 'b1'], 'skip: the rest of that node is left out (its children were never queued)');
  const greeted = (await graph.spawn('Greet', {}, { caller: alice })).reports;
  t.same(greeted, ['walker at a', 'node a greets Greet', 'node a sees it leave', 'walker leaves a']);
});

t.test('typed edges: out/in by edge class or node class, with filters; disconnect', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const [targets, labels, back] = (await graph.spawn('Tagger', { a: 'A', b: 'B', label: 'rel' }, { caller: alice })).reports as [Reported[], string[], boolean[]];
  t.same(
    targets.map((n) => n.context.title),
    ['B'],
  );
  t.same(labels, ['rel']);
  t.same(back, [true]);
  const app = await import('../../fixtures/chain-app.ts');
  const g2 = openGraph({ app });
  t.teardown(g2.close);
  await g2.graph.spawn('BuildTree', {}, { caller: alice });
  t.same((await g2.graph.spawn('Filters', {}, { caller: alice })).reports, [['a'], ['b'], 2, 1, ['a']]);
});

t.test('walkers spawn walkers in the same transaction; functions reach the root', async (t) => {
  const app = await import('../../fixtures/chain-app.ts');
  const { graph, close } = openGraph({ app });
  t.teardown(close);
  const alice = newCaller();
  await graph.spawn('BuildTree', {}, { caller: alice });
  t.same((await graph.spawn('Outer', {}, { caller: alice })).reports, [['a', 'b', 'a1', 'a2', 'b1'], 'outer done']);
  t.same(await graph.call('childCount', {}, { caller: alice }), { result: 2 });
  t.same(await graph.call('add', { a: 2, b: 3 }, { caller: alice }), { result: 5 });
  await t.rejects(graph.call('add', { a: '2', b: 3 }, { caller: alice }), { code: 'SVC_ERR_INVALID_FIELDS', message: 'add: field "a" must be a number' });
});

t.test('spawning at a node id: at the node, missing ids are SVC_ERR_NODE_NOT_FOUND', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const [todo] = (await graph.spawn('CreateTodo', { title: 'x' }, { caller: alice })).reports as Reported[];
  t.match((await graph.spawn('Peek', {}, { caller: alice, at: todo?.id })).reports, [{ id: todo?.id, context: { title: 'x' } }]);
  await t.rejects(graph.spawn('Peek', {}, { caller: alice, at: Graph.newRootId() }), { code: 'SVC_ERR_NODE_NOT_FOUND', status: 404 });
  await t.rejects(graph.spawn('Peek', {}, { caller: alice, at: 'not-an-id' }), { code: 'SVC_ERR_NODE_NOT_FOUND' });
});

t.test('a node declared with a class field initializer is refused when the app loads, with a clear message', async (t) => {
  const app = await import('../../fixtures/bad-app.ts');
  t.throws(() => Registry.fromModule(app), { code: 'SVC_ERR_BAD_ARCHETYPE', message: /Bad\.title is a class field.*declare title/ });
  const { Node, T } = await import('svc');
  class Fine extends Node {
    static has = T.Object({ title: T.String() });
    declare title: string;
    extra = 1; // not a schema field: not the stored state, allowed
  }
  class Custom extends Node {
    static has = T.Object({ title: T.String() });
    declare title: string;
    constructor(fields: Record<string, unknown> = {}) {
      super({ title: 'untitled', ...fields });
    }
  }
  t.doesNotThrow(() => Registry.fromModule({ Fine, Custom }), 'declared fields, other properties and constructors of its own are fine');
});

t.test('reserved field names are refused at registration', async (t) => {
  const { Registry, Node, T } = await import('svc');
  class Clash extends Node {
    static has = T.Object({ connect: T.String() });
  }
  t.throws(() => Registry.fromModule({ Clash }), { code: 'SVC_ERR_BAD_ARCHETYPE', message: /connect/ });
});

t.test('undeclared fields are dropped: __proto__ and method names in a body change nothing', async (t) => {
  const { graph, close } = openGraph();
  t.teardown(close);
  const alice = newCaller();
  const body = JSON.parse('{"title": "x", "__proto__": {"polluted": true}, "report": 1, "visit": "no", "extra": 5}');
  const [todo] = (await graph.spawn('CreateTodo', body, { caller: alice })).reports as Reported[];
  t.same(todo?.context, { title: 'x', done: false }, 'only declared fields reach the node');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
  t.same(((await graph.spawn('ListTodos', {}, { caller: alice })).reports as Reported[]).length, 1);
});
