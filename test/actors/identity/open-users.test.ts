import t from 'tap';
// The built-in backends, registered as the runtime registers them.
import '../../../stores/index.ts';
import { join } from 'node:path';
import { immediateUserExists, openUsersRepository, registerUsersRepository, userRecord, type UsersRepository } from '../../../actors/identity/index.ts';
import { MemoryUsersRepository } from '../../../stores/memory/index.ts';
import { SqliteUsersRepository } from '../../../stores/sqlite/index.ts';

t.test('openUsersRepository: SQLite at the given path, or at the path in the URI', async (t) => {
  const dir = t.testdir({});
  const byDefault = await openUsersRepository(undefined, { path: join(dir, 'users.db') });
  t.teardown(() => byDefault.close());
  t.ok(byDefault instanceof SqliteUsersRepository);
  t.equal((byDefault as SqliteUsersRepository).path, join(dir, 'users.db'));
  t.equal(byDefault.kind, 'sqlite');
  const named = await openUsersRepository('sqlite:shared.db', { path: join(dir, 'users.db'), baseDir: dir });
  t.teardown(() => named.close());
  t.equal((named as SqliteUsersRepository).path, join(dir, 'shared.db'), 'the URI wins over the default');
  const plain = await openUsersRepository(join(dir, 'plain.db'));
  t.teardown(() => plain.close());
  t.equal((plain as SqliteUsersRepository).path, join(dir, 'plain.db'));
  await plain.create(userRecord({ user_id: 'u1', role: 'user' }));
  const again = await openUsersRepository(`sqlite://${join(dir, 'plain.db')}`);
  t.teardown(() => again.close());
  t.ok(await again.exists('u1'), 'the same file, by another spelling');
  await t.rejects(openUsersRepository(''), TypeError, 'SQLite without any file is a programming error');
});

t.test('openUsersRepository: memory: is a fresh in-memory repository', async (t) => {
  const a = await openUsersRepository('memory:');
  const b = await openUsersRepository('memory:');
  t.ok(a instanceof MemoryUsersRepository);
  await a.create(userRecord({ user_id: 'u1', role: 'user' }));
  t.notOk(await b.exists('u1'), 'each its own');
  await a.close();
  await b.close();
});

t.test('openUsersRepository: PostgreSQL and MongoDB that cannot be reached are a clear typed error, naming no secret', async (t) => {
  for (const uri of ['postgres://u:hunter2@127.0.0.1:1/svc', 'postgresql://127.0.0.1:1/svc', 'mongodb://u:hunter2@127.0.0.1:1/svc?serverSelectionTimeoutMS=300']) {
    const error = (await openUsersRepository(uri).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: string; message: string } | undefined;
    t.match(error, { code: 'SVC_ERR_STORE_UNAVAILABLE', status: 503 }, uri);
    t.notMatch(error?.message, /hunter2/);
  }
  await t.rejects(openUsersRepository('ftp://x'), { code: 'SVC_ERR_STORE_BACKEND', message: /unknown users repository backend/ });
});

t.test('registerUsersRepository: a backend for a scheme', async (t) => {
  const fake = new MemoryUsersRepository();
  registerUsersRepository('Test-Users', () => fake as UsersRepository);
  t.equal(await openUsersRepository('test-users://x'), fake, 'schemes in any case');
});

t.test('immediateUserExists: the synchronous check of embedded repositories; a clear error for others', async (t) => {
  const memory = new MemoryUsersRepository();
  await memory.create(userRecord({ user_id: 'u1', role: 'user' }));
  const exists = immediateUserExists(memory);
  t.equal(exists('u1'), true);
  t.equal(exists('u2'), false);
  const sqlite = SqliteUsersRepository.open(':memory:');
  t.teardown(() => sqlite.close());
  t.equal(immediateUserExists(sqlite)('u1'), false);
  const remote = { kind: 'remote' } as unknown as UsersRepository;
  t.throws(() => immediateUserExists(remote), TypeError);
});
