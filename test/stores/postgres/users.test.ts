// The PostgreSQL users repository: the conformance suite every users repository passes, on a real server.
import t from 'tap';
import { openUsersRepository, userRecord, normalize } from '../../../actors/identity/index.ts';
import { PgUsersRepository } from '../../../stores/postgres/index.ts';
import { usersConformance } from '../../conformance/users.ts';
import { skipPostgres, startPostgres } from '../../kit/index.ts';

t.setTimeout(300_000);

if (skipPostgres) {
  t.comment(`SKIPPED LOUDLY: ${skipPostgres}`);
  t.pass(`skipped: ${skipPostgres}`);
} else {
  const server = await startPostgres(t);

  t.test('conformance (a fresh database per repository)', async (t) => {
    usersConformance(t, async () => PgUsersRepository.connect(await server.database()));
  });

  t.test('what one pod writes, another sees; uniqueness holds across connections', async (t) => {
    const uri = await server.database();
    const a = await openUsersRepository(uri);
    const b = await openUsersRepository(uri);
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    t.equal(a.kind, 'postgres');
    const u = userRecord({ user_id: 'shared-1', role: 'user', identities: [{ type: 'username', value_raw: 'Sam', value_normalized: normalize('Sam'), verified: true, is_recovery: false }] });
    await a.create(u);
    t.same(await b.byIdentity('sam'), u);
    const both = await Promise.allSettled([a.create({ ...u, user_id: 'race-1', identities: [{ ...u.identities[0]!, value_raw: 'Kim', value_normalized: 'kim' }] }), b.create({ ...u, user_id: 'race-2', identities: [{ ...u.identities[0]!, value_raw: 'KIM', value_normalized: 'kim' }] })]);
    t.equal(both.filter((r) => r.status === 'fulfilled').length, 1, 'two pods registering one name at once: one wins');
    t.match(both.find((r) => r.status === 'rejected'), { reason: { code: 'IDENTITY_TAKEN' } });
  });

  t.test('legacy users: migrated once; a migrated user deleted later stays deleted', async (t) => {
    const uri = await server.database();
    await server.query(
      `CREATE TABLE users (id text PRIMARY KEY, username text, email text, password_hash text, root_id text, role text, created_at text);
       INSERT INTO users VALUES ('a', 'Old_Ann', NULL, 'x', NULL, 'admin', '2024-01-01T00:00:00Z'), ('b', 'old_bo', NULL, 'y', NULL, 'user', '2024-01-02T00:00:00Z')`,
      [],
      uri,
    );
    const first = await PgUsersRepository.connect(uri);
    t.equal(first.migrated, 2);
    const ann = await first.byIdentity('old_ann');
    t.equal(ann?.role, 'admin');
    await first.delete(ann?.user_id as string);
    await first.close();
    const second = await PgUsersRepository.connect(uri);
    t.teardown(() => second.close());
    t.equal(second.migrated, 0, 'not again');
    t.equal(await second.byIdentity('old_ann'), undefined, 'the deleted admin does not come back');
    t.ok(await second.wasDeleted(ann?.user_id as string));
    const tables = await server.query("SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'users_legacy%'", [], uri);
    t.same(tables.rows.map((r) => r.table_name), ['users_legacy_migrated'], 'the old table is kept, renamed');
  });

  t.test('a string the database cannot hold (NUL) is a 400 VALIDATION error, not a 500', async (t) => {
    const users = await PgUsersRepository.connect(await server.database());
    t.teardown(() => users.close());
    await t.rejects(users.byIdentity('a\u0000b'), { code: 'SVC_ERR_INVALID_FIELDS', status: 400 });
    await t.rejects(users.create(userRecord({ user_id: 'nul-1', role: 'user', profile: { bio: 'a\u0000b' } })), { code: 'SVC_ERR_INVALID_FIELDS' });
  });
}
