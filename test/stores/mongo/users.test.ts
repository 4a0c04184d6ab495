// The MongoDB users repository: the conformance suite every repository passes, and
// the migration of the Python original's flat user documents, against the replica
// set SVC_TEST_DOCDB_URI names — each repository on a database of its own, dropped
// at the end. No MongoDB server can run here: without the variable those are
// skipped, loudly; what needs no server (an unreachable one) runs anyway.
import t from 'tap';
import { MongoClient } from 'mongodb';
import { normalize, userRecord } from '../../../actors/identity/index.ts';
import { legacyUserId } from '../../../actors/identity/legacy-users.ts';
import { MongoUsersRepository } from '../../../stores/mongo/users.ts';
import { usersConformance } from '../../conformance/users.ts';

t.test('an unreachable server is SVC_ERR_STORE_UNAVAILABLE, and no message shows the password', async (t) => {
  const error = await MongoUsersRepository.connect('mongodb://svc:s3cr3t-pw@127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200').then(
    () => undefined,
    (e: unknown) => e as Error & { code?: string },
  );
  t.match(error, { code: 'SVC_ERR_STORE_UNAVAILABLE', status: 503 });
  t.notMatch(error?.message ?? '', /s3cr3t-pw/);
});

const uri = process.env.SVC_TEST_DOCDB_URI;
if (!uri) {
  t.comment('SKIPPED LOUDLY: no MongoDB here — set SVC_TEST_DOCDB_URI=mongodb://… (a replica set: writes are transactions) to run the users conformance suite and the legacy migration against one');
  t.pass('skipped: SVC_TEST_DOCDB_URI not set');
} else {
  const run = `svc_u${process.pid}_${Date.now().toString(36)}`;
  const databases: string[] = [];
  const fresh = () => {
    const name = `${run}_${databases.length}`;
    databases.push(name);
    return name;
  };
  const admin = new MongoClient(uri);
  t.teardown(async () => {
    try {
      for (const name of databases) await admin.db(name).dropDatabase();
    } finally {
      await admin.close();
    }
  });

  usersConformance(t, () => MongoUsersRepository.connect(uri, { database: fresh() }));

  t.test('legacy flat users are migrated once, at connect: ids kept across runs, hashes kept, collisions disabled', async (t) => {
    const database = fresh();
    const bcrypt = '$2b$12$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234';
    // A user registered by us before the migration holds "taken".
    const before = await MongoUsersRepository.connect(uri, { database });
    const ours = userRecord({ user_id: 'ours-1', role: 'user', identities: [{ type: 'username', value_raw: 'taken', value_normalized: 'taken', verified: true, is_recovery: false }] });
    await before.create(ours);
    await before.close();
    const flat = admin.db(database).collection('users');
    const { insertedIds } = await flat.insertMany([
      { username: 'Alice', email: 'alice@example.com', password_hash: bcrypt, root_id: '0123456789abcdef0123456789abcdef', role: 'admin', created_at: new Date('2020-01-01T00:00:00Z') },
      { username: 'alice', email: 'other@example.com', password_hash: 'a'.repeat(64), root_id: 'bad', role: 'user', created_at: new Date('2021-01-01T00:00:00Z') },
      { username: 'Taken', password_hash: 'b'.repeat(64), created_at: '2019-05-05T05:05:05' },
    ]);
    const [aliceId, dupId, takenId] = [0, 1, 2].map((i) => legacyUserId(String(insertedIds[i])));

    const users = await MongoUsersRepository.connect(uri, { database });
    t.teardown(() => users.close());
    t.equal(users.migrated, 3);
    t.same(new Set(users.migratedDisabled), new Set([dupId, takenId]));
    t.match(await users.byIdentity(normalize('ALICE')), { user_id: aliceId, role: 'admin', status: 'active', password_hash: bcrypt, root_id: '0123456789abcdef0123456789abcdef' });
    t.match(await users.byIdentity('alice@example.com'), { user_id: aliceId });
    t.match(await users.byId(dupId as string), { status: 'disabled', role: 'user', identities: [{ type: 'email', value_normalized: 'other@example.com' }] });
    t.match(await users.byId(takenId as string), { status: 'disabled', identities: [], created_at: '2019-05-05T05:05:05.000Z' });
    t.equal((await users.byIdentity('taken'))?.user_id, 'ours-1', 'an existing user keeps its identity');
    t.equal(await flat.countDocuments({ user_id: { $exists: false } }), 0, 'no flat document is left');
    t.equal(await users.count(), 4);

    const again = await MongoUsersRepository.connect(uri, { database });
    t.teardown(() => again.close());
    t.equal(again.migrated, 0, 'nothing left to migrate the second time');
    t.equal(await again.count(), 4);
    t.match(await again.byIdentity('alice'), { user_id: aliceId }, 'the same ids');
    await t.rejects(again.create(userRecord({ user_id: 'new-1', role: 'user', identities: [{ type: 'email', value_raw: 'Alice', value_normalized: 'alice', verified: false, is_recovery: true }] })), { code: 'IDENTITY_TAKEN' }, 'migrated identities are unique like any other');
  });

  t.test('two repositories migrating at once: each legacy user is migrated by one of them', async (t) => {
    const database = fresh();
    const flat = admin.db(database).collection('users');
    await flat.insertMany(Array.from({ length: 20 }, (_, i) => ({ username: `racer${i}`, password_hash: 'c'.repeat(64), created_at: new Date(Date.UTC(2020, 0, 1 + i)) })));
    const [a, b] = await Promise.all([MongoUsersRepository.connect(uri, { database }), MongoUsersRepository.connect(uri, { database })]);
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    t.equal(a.migrated + b.migrated, 20);
    t.equal(await a.count(), 20);
    t.equal((await a.list({ search: 'racer' })).total, 20);
  });
}
