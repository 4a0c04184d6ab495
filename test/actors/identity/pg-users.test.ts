// The PostgreSQL users repository: the conformance suite every users repository passes, on a real server.
import t from 'tap';
import { openUsersRepository, PgUsersRepository, userRecord, normalize } from 'svc/actors/identity';
import { usersConformance } from '../../helpers/users-conformance.ts';
import { skipPostgres, startPostgres } from '../../helpers/postgres.ts';

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
}
