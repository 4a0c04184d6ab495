import t from 'tap';
// The built-in backends, registered as the runtime registers them.
import '../../../stores/index.ts';
import { join } from 'node:path';
import { MemoryStore } from '../../../stores/memory/index.ts';
import { openAnchorStore, parseStoreUri, registerAnchorStore, type AnchorStore } from '../../../actors/graph/index.ts';
import { SqliteStore } from '../../../stores/sqlite/index.ts';

t.test('parseStoreUri: nothing, a path or sqlite: is SQLite; other schemes are named', async (t) => {
  t.same(parseStoreUri(undefined), { scheme: 'sqlite', uri: '' });
  t.same(parseStoreUri('  '), { scheme: 'sqlite', uri: '' });
  t.same(parseStoreUri('sqlite:'), { scheme: 'sqlite', uri: 'sqlite:' });
  t.equal(parseStoreUri('/srv/svc/app.db').path, '/srv/svc/app.db');
  t.equal(parseStoreUri('data/app.db', '/project').path, '/project/data/app.db', 'relative to the base folder');
  t.equal(parseStoreUri('sqlite:data/app.db', '/project').path, '/project/data/app.db');
  t.equal(parseStoreUri('sqlite:///srv/app.db', '/project').path, '/srv/app.db');
  t.equal(parseStoreUri('SQLite://app.db', '/project').path, '/project/app.db', 'the scheme in any case');
  t.equal(parseStoreUri('sqlite::memory:').path, ':memory:');
  t.equal(parseStoreUri('C:\\data\\app.db').scheme, 'sqlite', 'a drive letter is not a scheme');
  t.match(parseStoreUri('memory:'), { scheme: 'memory' });
  t.match(parseStoreUri('postgres://u:secret@db:5432/svc'), { scheme: 'postgres', uri: 'postgres://u:secret@db:5432/svc' });
  t.match(parseStoreUri('mongodb+srv://cluster/svc'), { scheme: 'mongodb+srv' });
});

t.test('openAnchorStore: SQLite at the given path, or at the path in the URI', async (t) => {
  const dir = t.testdir({});
  const byDefault = await openAnchorStore(undefined, { path: join(dir, 'anchor_store.db') });
  t.teardown(() => byDefault.close());
  t.ok(byDefault instanceof SqliteStore);
  t.equal((byDefault as SqliteStore).path, join(dir, 'anchor_store.db'));
  const named = await openAnchorStore('sqlite:other.db', { path: join(dir, 'anchor_store.db'), baseDir: dir });
  t.teardown(() => named.close());
  t.equal((named as SqliteStore).path, join(dir, 'other.db'), 'the URI wins over the default');
  const plain = await openAnchorStore(join(dir, 'plain.db'));
  t.teardown(() => plain.close());
  t.equal((plain as SqliteStore).path, join(dir, 'plain.db'));
  t.equal(byDefault.bodyForm, 'text');
  await t.rejects(openAnchorStore(''), TypeError, 'SQLite without any file is a programming error');
});

t.test('openAnchorStore: memory: is a fresh in-memory store', async (t) => {
  const a = await openAnchorStore('memory:');
  const b = await openAnchorStore('MEMORY:');
  t.ok(a instanceof MemoryStore);
  t.not(a, b);
  await a.close();
  await b.close();
});

t.test('openAnchorStore: PostgreSQL and MongoDB that cannot be reached are a clear typed error, naming no secret', async (t) => {
  for (const uri of ['postgres://u:hunter2@127.0.0.1:1/svc', 'postgresql://127.0.0.1:1/svc', 'mongodb://u:hunter2@127.0.0.1:1/svc?serverSelectionTimeoutMS=300']) {
    const error = (await openAnchorStore(uri).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: string; status?: number; message: string } | undefined;
    t.match(error, { code: 'SVC_ERR_STORE_UNAVAILABLE', status: 503 }, uri);
    t.notMatch(error?.message, /hunter2/, 'the password is not repeated');
  }
  await t.rejects(openAnchorStore('redis://cache'), { code: 'SVC_ERR_STORE_BACKEND', message: /unknown anchor store backend/ });
});

t.test('registerAnchorStore: a backend for a scheme', async (t) => {
  let asked: string | undefined;
  const fake = new MemoryStore();
  registerAnchorStore('test-fake', (uri) => {
    asked = uri.uri;
    return fake as AnchorStore;
  });
  t.equal(await openAnchorStore('test-fake://somewhere'), fake);
  t.equal(asked, 'test-fake://somewhere', 'the factory gets the whole URI');
});
