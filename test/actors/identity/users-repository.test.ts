import t from 'tap';
import { join } from 'node:path';
import { MemoryUsersRepository } from '../../../stores/memory/index.ts';
import { SqliteUsersRepository } from '../../../stores/sqlite/index.ts';
import { userRecord, normalize } from '../../../actors/identity/index.ts';
import { usersConformance } from '../../conformance/users.ts';

t.test('SQLite, one file per test', async (t) => {
  usersConformance(t, async () => SqliteUsersRepository.open(join(t.testdir({}), `users-${Math.random().toString(36).slice(2)}.db`)));
});

t.test('SQLite, in memory', async (t) => {
  usersConformance(t, async () => SqliteUsersRepository.open(':memory:'));
});

t.test('memory', async (t) => {
  usersConformance(t, async () => new MemoryUsersRepository());
});

t.test('SQLite: what one connection writes, another sees (threads and processes share the file)', async (t) => {
  const path = join(t.testdir({}), 'users.db');
  const a = SqliteUsersRepository.open(path);
  const b = SqliteUsersRepository.open(path);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const u = userRecord({ user_id: 'shared-1', role: 'user', identities: [{ type: 'username', value_raw: 'Sam', value_normalized: normalize('Sam'), verified: true, is_recovery: false }] });
  await a.create(u);
  t.same(await b.byIdentity('sam'), u);
  await t.rejects(b.create({ ...u, user_id: 'shared-2' }), { code: 'IDENTITY_TAKEN' }, 'uniqueness holds across connections');
  const stamp = await b.updateAndRevoke(u.user_id);
  t.equal((await a.byId(u.user_id))?.tokens_valid_after, stamp);
  t.ok(a.existsNow(u.user_id), 'the synchronous check the JWT verifier uses');
});

t.test('SQLite through the process writer: a worker reads on its own connection, writes through the main thread', async (t) => {
  const { ActorSystem } = await import('svc/kernel');
  const { ForwardingUsersRepository, serveUsersWriter, USERS_WRITER_ACTOR } = await import('../../../actors/identity/index.ts');
  const { MemoryNet } = await import('../../helpers/memory-transport.ts');
  usersConformance(t, async () => {
    const path = join(t.testdir({}), `users-${Math.random().toString(36).slice(2)}.db`);
    const net = new MemoryNet();
    const main = new ActorSystem({ transport: net.transport('p/main') });
    const worker = new ActorSystem({ transport: net.transport('p/w1') });
    const writer = SqliteUsersRepository.open(path);
    serveUsersWriter(main, writer);
    const users = new ForwardingUsersRepository(SqliteUsersRepository.open(path, { readOnly: true }), worker.refFromAddress({ node: 'p/main', path: `/user/${USERS_WRITER_ACTOR}` }));
    const close = users.close.bind(users);
    users.close = async () => {
      await close();
      await worker.shutdown();
      await main.shutdown();
      await writer.close();
    };
    return users;
  });
});
