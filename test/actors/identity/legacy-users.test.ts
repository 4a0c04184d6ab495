// Users of the Python original as our records (the pure half of the start-up
// migration the document-database backends run): deterministic ids, identities,
// roots, roles, dates, hashes kept, and collisions settled oldest first.
import t from 'tap';
import { legacyUserId, legacyUserRecords, type LegacyUser } from '../../../actors/identity/legacy-users.ts';
import { normalize, rootIdFor, userRecord } from '../../../actors/identity/index.ts';

const BCRYPT = '$2b$12$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234';
const SHA = 'a'.repeat(64);

t.test('a legacy user becomes a whole record: identities, hash, role, root, date', async (t) => {
  const { users, disabled } = legacyUserRecords([
    { _id: 'u1', username: ' Alice ', email: 'Alice@Example.COM', password_hash: BCRYPT, root_id: '0123456789ABCDEF0123456789abcdef', role: 'admin', created_at: '2021-03-04T05:06:07.891234' },
  ]);
  t.same(disabled, []);
  t.equal(users.length, 1);
  const u = users[0];
  t.match(u, {
    user_id: legacyUserId('u1'),
    status: 'active',
    role: 'admin',
    root_id: '0123456789abcdef0123456789abcdef',
    created_at: '2021-03-04T05:06:07.891Z',
    password_hash: BCRYPT,
    must_change_password: false,
    protected: false,
    tokens_valid_after: null,
    profile: {},
  });
  t.same(u?.identities, [
    { type: 'username', value_raw: ' Alice ', value_normalized: 'alice', verified: true, is_recovery: false },
    { type: 'email', value_raw: 'Alice@Example.COM', value_normalized: 'alice@example.com', verified: false, is_recovery: true },
  ]);
  t.same(Object.keys(u ?? {}).sort(), Object.keys(userRecord({ user_id: 'x', role: 'user' })).sort(), 'the fields of a record, no more');
});

t.test('user ids: UUID-shaped, derived from the legacy id, the same on a second migration', async (t) => {
  const rows: LegacyUser[] = [
    { _id: { toString: () => '65a1f0c2e4b0a1b2c3d4e5f6' }, username: 'bob', password_hash: SHA },
    { id: 42, username: 'carol', password_hash: SHA },
    { username: 'Dave', password_hash: SHA },
    { email: 'Erin@example.com', password_hash: SHA },
  ];
  const first = legacyUserRecords(rows).users.map((u) => u.user_id);
  const second = legacyUserRecords(rows).users.map((u) => u.user_id);
  t.same(second, first, 'deterministic');
  for (const id of first) t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(new Set(first).size, 4);
  t.ok(first.includes(legacyUserId('65a1f0c2e4b0a1b2c3d4e5f6')), 'an ObjectId by its text');
  t.ok(first.includes(legacyUserId('42')), 'a numeric id');
  t.ok(first.includes(legacyUserId('dave')), 'no id: the normalised username');
  t.ok(first.includes(legacyUserId('erin@example.com')), 'no id, no username: the normalised email');
  t.equal(legacyUserRecords([{ password_hash: SHA }]).users.length, 0, 'nothing to derive an id from: left out');
  t.equal(legacyUserRecords([{ _id: 'same', username: 'x1' }, { _id: 'same', username: 'x2' }]).users.length, 1, 'one user per legacy id');
});

t.test('roles: admin stays admin, anything else is user', async (t) => {
  const roles = legacyUserRecords([
    { _id: 'a', role: 'admin' },
    { _id: 'b', role: 'superuser' },
    { _id: 'c', role: 'system' },
    { _id: 'd' },
  ]).users.map((u) => u.role);
  t.same(roles.sort(), ['admin', 'user', 'user', 'user']);
});

t.test('roots: 32 hex chars or a UUID kept (lower case, no dashes); anything else derived from the user id', async (t) => {
  const [uuid, bad, none] = legacyUserRecords([
    { _id: 'r1', created_at: 1, root_id: '0123ABCD-4567-89ab-cdef-0123456789AB' },
    { _id: 'r2', created_at: 2, root_id: 'n::not-a-root' },
    { _id: 'r3', created_at: 3 },
  ]).users;
  t.equal(uuid?.root_id, '0123abcd456789abcdef0123456789ab');
  t.equal(bad?.root_id, rootIdFor(legacyUserId('r2')));
  t.equal(none?.root_id, rootIdFor(legacyUserId('r3')));
});

t.test('password hashes are kept as they are (bcrypt, SHA-256 hex); none is null', async (t) => {
  const hashes = legacyUserRecords([
    { _id: 'h1', created_at: 1, password_hash: BCRYPT },
    { _id: 'h2', created_at: 2, password_hash: SHA },
    { _id: 'h3', created_at: 3, password_hash: '' },
    { _id: 'h4', created_at: 4 },
  ]).users.map((u) => u.password_hash);
  t.same(hashes, [BCRYPT, SHA, null, null]);
});

t.test('created_at: dates, ISO text with or without a zone (none is UTC), seconds or ms since the epoch', async (t) => {
  const at = (created_at: LegacyUser['created_at']) => legacyUserRecords([{ _id: 'd', created_at }]).users[0]?.created_at;
  t.equal(at(new Date('2020-01-02T03:04:05.678Z')), '2020-01-02T03:04:05.678Z');
  t.equal(at('2020-01-02T03:04:05'), '2020-01-02T03:04:05.000Z');
  t.equal(at('2020-01-02 03:04:05.123456'), '2020-01-02T03:04:05.123Z', 'Python str(datetime)');
  t.equal(at('2020-01-02T05:04:05+02:00'), '2020-01-02T03:04:05.000Z');
  t.equal(at('2020-01-02T03:04:05Z'), '2020-01-02T03:04:05.000Z');
  t.equal(at(1577934245), '2020-01-02T03:04:05.000Z', 'seconds');
  t.equal(at(1577934245678), '2020-01-02T03:04:05.678Z', 'ms');
  const before = Date.now();
  const unknown = Date.parse(at('yesterday-ish') as string);
  t.ok(unknown >= before && unknown <= Date.now(), 'no readable date: the migration time');
});

t.test('collisions: the oldest keeps the identity and stays active; later ones are disabled without it', async (t) => {
  const rows: LegacyUser[] = [
    { _id: 'late', username: 'BOB', email: 'late@example.com', created_at: '2022-01-01T00:00:00Z' },
    { _id: 'early', username: 'bob', email: 'bob@example.com', created_at: '2020-01-01T00:00:00Z' },
    { _id: 'mail', username: 'someone', email: 'BOB@example.com ', created_at: '2021-01-01T00:00:00Z' },
    { _id: 'undated', username: 'Bob' },
  ];
  const { users, disabled } = legacyUserRecords(rows);
  const byId = new Map(users.map((u) => [u.user_id, u]));
  const early = byId.get(legacyUserId('early'));
  const late = byId.get(legacyUserId('late'));
  const mail = byId.get(legacyUserId('mail'));
  const undated = byId.get(legacyUserId('undated'));
  t.equal(early?.status, 'active');
  t.same(early?.identities.map((i) => i.value_normalized), ['bob', 'bob@example.com']);
  t.equal(late?.status, 'disabled');
  t.same(late?.identities.map((i) => i.value_normalized), ['late@example.com'], 'keeps what did not collide');
  t.equal(mail?.status, 'disabled', 'an email collides too');
  t.same(mail?.identities.map((i) => i.value_normalized), ['someone']);
  t.equal(undated?.status, 'disabled', 'no date: after every dated one');
  t.same(undated?.identities, []);
  t.same(new Set(disabled), new Set([late?.user_id, mail?.user_id, undated?.user_id]));
  const again = legacyUserRecords([...rows].reverse());
  t.same(again.disabled.sort(), [...disabled].sort(), 'the order of the rows does not matter');
});

t.test('identities already taken (existing users) count as collisions', async (t) => {
  const { users, disabled } = legacyUserRecords([{ _id: 'x', username: 'Taken', email: 'free@example.com' }], new Set([normalize('taken')]));
  t.same(disabled, [users[0]?.user_id]);
  t.match(users[0], { status: 'disabled', identities: [{ type: 'email', value_normalized: 'free@example.com' }] });
});

t.test('a username that is the email address: one identity, the email', async (t) => {
  const [u] = legacyUserRecords([{ _id: 'same', username: 'Pat@Example.com', email: 'pat@example.com' }]).users;
  t.same(u?.identities, [{ type: 'email', value_raw: 'pat@example.com', value_normalized: 'pat@example.com', verified: false, is_recovery: true }]);
  t.equal(u?.status, 'active');
});
