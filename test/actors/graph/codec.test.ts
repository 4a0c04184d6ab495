import t from 'tap';
import { decode, encode, type StoredDoc } from '../../../actors/graph/index.ts';
import { MemoryStore } from '../../../stores/memory/index.ts';
import { Anchor, privateAccess, Registry } from '../../../actors/walker/index.ts';
import * as app from '../../fixtures/todo-app.ts';
import { newCaller, openGraph } from '../../helpers/graph.ts';

const registry = Registry.fromModule(app);

function todo(): Anchor {
  const cls = registry.resolve('Todo');
  if (!cls) throw new Error('no Todo in the fixture app');
  const rootId = 'r'.repeat(32);
  return new Anchor('a'.repeat(32), 'node', cls, rootId, 2, privateAccess(), { title: 'milk', done: false, tags: ['shop'] }, [], undefined, undefined);
}

t.test('text form: the body is JSON text, and decodes to the same anchor', async (t) => {
  const anchor = todo();
  const doc = encode(anchor, 'app');
  t.type(doc.body, 'string');
  t.match(doc, { id: anchor.id, root: anchor.root, kind: 'node', arch_module: 'app', arch_type: 'Todo', version: 3 });
  t.same(JSON.parse(doc.body as string), { access: anchor.access, context: anchor.data });
  t.same(encode(anchor, 'app', 'text'), doc, 'text is the default');
  const back = decode(doc, registry);
  if (!('anchor' in back)) throw new Error(back.quarantine);
  t.same(back.anchor.data, anchor.data);
  t.same(back.anchor.access, anchor.access);
  t.equal(back.anchor.version, 3);
});

t.test('object form: the body is an object of its own, and decodes to the same anchor', async (t) => {
  const anchor = todo();
  const doc = encode(anchor, 'app', 'object');
  t.type(doc.body, 'object');
  t.same(doc.body, { access: anchor.access, context: anchor.data });
  // The anchor's memory changes in place after a commit is handed over; the store's body must not.
  anchor.data.title = 'changed later';
  (anchor.data.tags as string[]).push('later');
  anchor.access.anyone = 1;
  t.same((doc.body as { context: unknown }).context, { title: 'milk', done: false, tags: ['shop'] }, 'a copy, not the live data');
  t.equal((doc.body as { access: { anyone: number } }).access.anyone, privateAccess().anyone);
  const back = decode(doc, registry);
  if (!('anchor' in back)) throw new Error(back.quarantine);
  t.same(back.anchor.data, { title: 'milk', done: false, tags: ['shop'] });
  t.equal(back.anchor.kind, 'node');
});

t.test('decode takes either form of the same document alike, and quarantines a corrupt one of either', async (t) => {
  const text = encode(todo(), 'app', 'text');
  const object = encode(todo(), 'app', 'object');
  const a = decode(text, registry);
  const b = decode(object, registry);
  if (!('anchor' in a) || !('anchor' in b)) throw new Error('both decode');
  t.same(a.anchor.data, b.anchor.data);
  t.same(a.anchor.access, b.anchor.access);
  t.match(decode({ ...text, body: '{not json' } as StoredDoc, registry), { quarantine: /corrupt body/ });
  t.match(decode({ ...object, body: { context: {} } } as StoredDoc, registry), { quarantine: /corrupt body/ });
  t.match(decode({ ...object, body: null } as StoredDoc, registry), { quarantine: /corrupt body/ });
});

t.test('a graph over an object-form store hands it objects and reads them back', async (t) => {
  const store = new MemoryStore({ bodyForm: 'object' });
  let committed: unknown[] = [];
  const commit = store.commit.bind(store);
  store.commit = (batch) => {
    committed.push(...batch.upserts.map((d) => d.body));
    return commit(batch);
  };
  const first = openGraph({ store });
  const caller = newCaller();
  const made = (await first.graph.spawn('CreateTodo', { title: 'milk' }, { caller })).reports as { id: string }[];
  t.ok(committed.length > 0);
  t.ok(committed.every((b) => typeof b === 'object' && b !== null), 'every body handed over is an object');
  const [stored] = await store.get([made[0]?.id as string]);
  t.match(stored?.body, { context: { title: 'milk', done: false } }, 'kept as an object');
  await first.system.shutdown();
  committed = [];
  // A new graph over the same store: everything comes back from the stored objects.
  const second = openGraph({ store });
  t.teardown(() => second.close());
  const listed = (await second.graph.spawn('ListTodos', {}, { caller })).reports as { id: string; context: { title: string } }[];
  t.same(listed.map((r) => r.context.title), ['milk']);
  await second.graph.spawn('ToggleTodo', { id: made[0]?.id }, { caller });
  t.match(committed, [{ context: { title: 'milk', done: true } }], 'the change went as an object too');
});
