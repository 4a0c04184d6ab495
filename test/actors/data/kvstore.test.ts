// `kvstore()` through the data room's door, on the embedded SQLite (a file in a test folder, or in memory): names and
// collections it refuses and why, the documents it keeps, handles that follow the runtime bound at each call, the kv
// backend with no Redis (not configured, or unreachable: refused at once), and `findNodes` over a graph's store.
import t from 'tap';
// The built-in backends, registered as the runtime registers them.
import '../../../stores/index.ts';
import { join } from 'node:path';
import { STORAGE_DEFAULTS } from '../../../actors/data/index.ts';
import { bindData, closeData, kvstore, type DataBinding } from '../../../actors/data/index.ts';
import { freePort } from '../../kit/index.ts';
import { newCaller, openGraph } from '../../helpers/graph.ts';
import { Todo } from '../../fixtures/todo-app.ts';

function binding(dir: string, over: Partial<DataBinding> = {}): DataBinding {
  return { projectRoot: dir, dataDir: dir, storage: { ...STORAGE_DEFAULTS }, docdbUri: '', kvUrl: '', ...over };
}

t.teardown(() => closeData());

t.test('names: a database name, a db type and a URI are checked when the handle is made', async (t) => {
  t.throws(() => kvstore('', 'docdb'), { code: 'INVALID_NAME', status: 400 });
  t.throws(() => kvstore('-starts-badly', 'docdb'), { code: 'INVALID_NAME' });
  t.throws(() => kvstore('a'.repeat(64), 'docdb'), { code: 'INVALID_NAME' }, 'at most 63 characters');
  t.doesNotThrow(() => kvstore('a'.repeat(63), 'docdb'));
  t.throws(() => kvstore('shop', 'cloudstore'), { code: 'NOT_IMPLEMENTED', message: /cloudstore/ });
  t.throws(() => kvstore('shop', 'table' as never), { code: 'INVALID_NAME', message: /'docdb', 'kv' or 'cloudstore'/ });
  t.throws(() => kvstore('shop', 'docdb', 'redis://127.0.0.1:6379'), { code: 'NOT_IMPLEMENTED', message: /docdb has no backend/ }, 'a URI no docdb backend takes, at once');
  t.throws(() => kvstore('svc', 'kv'), { code: 'RESERVED_COLLECTION' }, "the runtime's kv namespace");
  t.throws(() => kvstore('svc:events', 'kv'), { code: 'INVALID_NAME' }, "a ':' is not in a name at all");
  t.equal(kvstore('svc', 'kv', undefined, { runtimeCollections: true }).backend, 'kv', 'on purpose, it is reached');
});

t.test('documents on the embedded SQLite: kept, found, updated, deleted; collections of the runtime refused', async (t) => {
  const unbind = bindData(binding(t.testdir({})));
  t.teardown(unbind);
  const shop = kvstore('shop', 'docdb');
  t.equal(shop.kind, 'sqlite');
  t.equal(await shop.get('missing'), null);
  await shop.set('tea', { qty: 2, tags: ['green'] });
  t.same(await shop.get('tea'), { _id: 'tea', qty: 2, tags: ['green'] });
  t.ok(await shop.exists('tea'));
  const ids = await shop.insertMany('orders', [{ item: 'tea', qty: 1 }, { item: 'tea', qty: 5 }, { item: 'cake', qty: 3 }]);
  t.equal(ids.length, 3);
  t.same((await shop.find('orders', { qty: { $gte: 3 } }, { sort: { qty: 1 } })).map((d) => d.item), ['cake', 'tea']);
  t.equal(await shop.updateMany('orders', { item: 'tea' }, { $set: { qty: 15 } }), 2);
  t.same((await shop.findById('orders', ids[1] as string))?.qty, 15);
  await t.rejects(shop.updateOne('orders', {}, { $inc: { qty: 1 } } as never), { code: 'INVALID_QUERY', message: /unknown update operator \$inc/ });
  t.ok(await shop.updateById('orders', ids[2] as string, { $set: { qty: 0 } }));
  t.notOk(await shop.updateById('orders', 'no-such-id', { $set: { qty: 0 } }), 'no document had that id');
  t.equal(await shop.deleteMany('orders', { qty: { $lt: 12 } }), 1, 'the cake (0) goes; the teas (15) stay');
  t.same((await shop.find('orders')).map((d) => d.qty), [15, 15]);
  t.ok(await shop.delete('tea'));
  t.notOk(await shop.delete('tea'), 'deleted once');

  for (const reserved of ['users', '_anchors', '_mine', 'orders_quarantine']) {
    await t.rejects(shop.find(reserved), { code: 'RESERVED_COLLECTION' }, reserved);
  }
  await t.rejects(shop.find('bad name!'), { code: 'INVALID_NAME' });
  const runtime = kvstore('shop', 'docdb', undefined, { runtimeCollections: true });
  t.same(await runtime.find('_mine'), [], 'reached on purpose');
  await t.rejects(shop.set('x', [1] as never), { code: 'INVALID_QUERY', message: /a docdb value is an object/ });
  await t.rejects(shop.get(''), { code: 'INVALID_QUERY' });
  await t.rejects(shop.createIndex('orders', 'a..b'), { code: 'INVALID_QUERY' });
  await t.rejects(shop.incr('n'), { code: 'NOT_IMPLEMENTED', message: "incr is a method of the kv backend, not of docdb (kvstore(\"shop\", 'docdb'))" });
});

t.test('a handle made before any runtime serves whichever runtime is bound when it is called', async (t) => {
  const shared = kvstore('notes', 'docdb');
  const one = t.testdir({ one: {}, two: {} });
  const unbindOne = bindData(binding(join(one, 'one')));
  await shared.set('a', { v: 1 });
  const unbindTwo = bindData(binding(join(one, 'two')));
  t.equal(await shared.get('a'), null, 'the second runtime has its own documents');
  await shared.set('a', { v: 2 });
  unbindTwo();
  t.same(await shared.get('a'), { _id: 'a', v: 1 }, 'unbound: the first one again');
  unbindOne();
  const inMemory = bindData(binding(join(one, 'one'), { docdbUri: 'memory:' }));
  t.teardown(inMemory);
  t.equal(await shared.get('a'), null, "a memory: store is not the data folder's file");
});

t.test('kv with no Redis: not configured, or unreachable — refused at once, not after retries', async (t) => {
  const unbind = bindData(binding(t.testdir({})));
  t.teardown(unbind);
  const cache = kvstore('cache', 'kv');
  await t.rejects(cache.get('k'), { code: 'KV_NOT_CONFIGURED' });
  const closed = kvstore('cache', 'kv', `redis://127.0.0.1:${await freePort()}`);
  const started = Date.now();
  await t.rejects(closed.set('k', 'v'), { code: 'KV_UNAVAILABLE', message: /cannot be reached/ });
  await t.rejects(closed.get('k'), { code: 'KV_UNAVAILABLE' }, 'and again while it stays down');
  t.ok(Date.now() - started < 4_000, `refused in ${Date.now() - started} ms (the first connection's 5 s limit not waited out)`);
  await t.rejects(closed.find('c'), { code: 'NOT_IMPLEMENTED', message: /find is a method of the docdb backend, not of kv/ });
  await t.rejects(kvstore('cache', 'kv', '127.0.0.1:6379').get('k'), { code: 'NOT_IMPLEMENTED', message: /kv has no backend for a URL without a scheme/ }, 'host:port without redis:// is named as such, not as a sqlite: URL');
});

t.test('findNodes: the graph of the runtime bound, outside a run only with allRoots, as read-only copies', async (t) => {
  const docs = kvstore('app', 'docdb'); // from here on this thread's runs are tracked
  const dir = t.testdir({});
  const unbound = bindData(binding(dir));
  await t.rejects(docs.findNodes(Todo, {}, '_anchors', { allRoots: true }), { code: 'NOT_IMPLEMENTED', message: /there is none in this thread/ });
  unbound();

  const g = openGraph();
  t.teardown(() => g.close());
  const [a, b] = [newCaller(), newCaller()];
  for (const [caller, title] of [[a, 'milk'], [a, 'bread'], [b, 'milk']] as const) await g.graph.spawn('CreateTodo', { title }, { caller });
  const unbind = bindData(binding(dir, { graph: { store: g.store, registry: g.graph.registry } }));
  t.teardown(unbind);

  await t.rejects(docs.findNodes(Todo, { title: 'milk' }), { code: 'SVC_ERR_NOT_IN_RUN' }, "outside a run, every user's nodes only when asked for");
  const milk = await docs.findNodes(Todo, { title: 'milk' }, '_anchors', { allRoots: true });
  t.same(milk.map((n) => (n as unknown as { title: string }).title), ['milk', 'milk'], 'both roots');
  t.throws(() => ((milk[0] as unknown as { title: string }).title = 'changed'), { code: 'SVC_ERR_NOT_IN_RUN', message: /can only change inside a walker run/ }, 'a copy read outside a run cannot be changed');
  t.same((await docs.findNodes(Todo, { title: { $in: ['bread'] } }, '_anchors', { allRoots: true })).length, 1);
  await t.rejects(docs.findNodes(Todo, {}, 'todos', { allRoots: true }), { code: 'INVALID_NAME', message: /'_anchors'/ });
  await t.rejects(docs.findNodes(class NotANode {} as never, {}), { code: 'INVALID_QUERY', message: /a Node class/ });
});
