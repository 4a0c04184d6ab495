// The conformance suite every users repository passes (SQLite, memory, PostgreSQL, MongoDB).
// Through the UsersRepository interface only: nothing here knows a backend.
import type { Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { type ApiKeyRecord, type Identity, normalize, type UserRecord, userRecord, type UsersRepository } from '../../actors/identity/index.ts';

let n = 0;
/** A fresh user id (unique across the run, so suites may share a backend). */
function uid(): string {
  return `user-${process.pid}-${++n}`;
}

function username(value: string, verified = true): Identity {
  return { type: 'username', value_raw: value, value_normalized: normalize(value), verified, is_recovery: false };
}

function email(value: string, verified = false): Identity {
  return { type: 'email', value_raw: value, value_normalized: normalize(value), verified, is_recovery: true };
}

function sso(provider: string, externalId: string): Identity {
  return { type: 'sso', value_raw: `${provider}:${externalId}`, value_normalized: `${provider}:${externalId}`, verified: true, is_recovery: false, provider, external_id: externalId, linked_at: '2024-01-02T03:04:05.000Z' };
}

/** A unique name for this run (identity values must not collide across tests sharing a backend). */
function name(base: string): string {
  return `${base}_${process.pid}_${++n}`;
}

function user(fields: Partial<UserRecord> = {}): UserRecord {
  return userRecord({ user_id: uid(), role: 'user', ...fields });
}

/** A fresh API key record of a user (a random id and hash, as the service makes them). */
function apiKey(userId: string, fields: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    api_key_id: randomBytes(16).toString('hex'),
    user_id: userId,
    name: name('key'),
    key_hash: createHash('sha256').update(randomBytes(32)).digest('hex'),
    walkers: ['Ingest', 'Notify'],
    created_at: '2024-05-06T07:08:09.000Z',
    expires_at: '2030-01-01T00:00:00.000Z',
    ...fields,
  };
}

export function usersConformance(t: Test, open: () => Promise<UsersRepository>): void {
  const withUsers = (title: string, fn: (t: Test, users: UsersRepository) => Promise<void>) =>
    t.test(title, async (t) => {
      const users = await open();
      t.teardown(() => users.close());
      await fn(t, users);
    });

  withUsers('a created user comes back whole, by id and by each identity', async (t, users) => {
    const alice = name('Alice');
    const u = user({
      role: 'admin',
      profile: { display_name: 'Alice', age: 7, ok: true },
      password_hash: '$argon2id$fake',
      must_change_password: true,
      protected: true,
      tokens_valid_after: 1234,
      identities: [username(alice), email(`${alice}@Example.COM`)],
    });
    await users.create(u);
    const got = await users.byId(u.user_id);
    t.same(got, u, 'every field, identities in order');
    t.same(await users.byIdentity(normalize(alice)), u);
    t.same(await users.byIdentity(normalize(`${alice.toUpperCase()}@example.com`)), u, 'email found whatever its case once normalised');
    t.equal(await users.byIdentity(`${alice}@Example.COM`), undefined, 'lookups take normalised values');
    t.equal(await users.byId(uid()), undefined);
    t.equal(await users.byIdentity(normalize(name('nobody'))), undefined);
    t.ok(await users.exists(u.user_id));
    t.notOk(await users.exists(uid()));
  });

  withUsers('what comes back is a copy: changing it changes nothing stored', async (t, users) => {
    const u = user({ profile: { a: 1 }, identities: [username(name('copy'))] });
    await users.create(u);
    u.profile.a = 2;
    (u.identities[0] as Identity).verified = false;
    const got = (await users.byId(u.user_id)) as UserRecord;
    t.same(got.profile, { a: 1 }, 'the record handed to create was copied');
    t.equal(got.identities[0]?.verified, true);
    got.profile.a = 3;
    got.identities.push(email('x@y.zz'));
    const again = (await users.byId(u.user_id)) as UserRecord;
    t.same(again.profile, { a: 1 });
    t.equal(again.identities.length, 1);
  });

  withUsers('SSO identities are kept with provider, external id and link time, and are not found as usernames', async (t, users) => {
    const id = sso('github', name('gh'));
    const u = user({ identities: [id] });
    await users.create(u);
    t.same((await users.byId(u.user_id))?.identities, [id]);
    t.equal(await users.byIdentity(id.value_normalized), undefined);
  });

  withUsers('identities are unique: a username or email (across both types), an SSO account, one of a type per user', async (t, users) => {
    const bob = name('bob');
    const first = user({ identities: [username(bob), email(`${bob}@example.com`)] });
    await users.create(first);
    const taken = async (identities: Identity[], why: string) => {
      const second = user({ identities });
      await t.rejects(users.create(second), { code: 'IDENTITY_TAKEN', status: 409 }, why);
      t.notOk(await users.exists(second.user_id), `${why}: nothing of it was created`);
      t.equal(await users.byId(second.user_id), undefined);
    };
    await taken([username(bob.toUpperCase())], 'the same username in another case');
    await taken([username(name('fresh')), email(`${bob.toUpperCase()}@EXAMPLE.com`)], 'the same email, with a fresh username');
    await taken([email(bob)], 'a username value as an email');
    const s = sso('google', name('g'));
    await users.create(user({ identities: [s] }));
    await taken([sso('google', s.external_id as string)], 'the same SSO account');
    await users.create(user({ identities: [sso('github', s.external_id as string)] }));
    t.pass('the same external id at another provider is another account');
    await taken([username(name('one')), username(name('two'))], 'two usernames for one user');
    await t.rejects(users.create({ ...user(), user_id: first.user_id }), { code: 'IDENTITY_TAKEN' }, 'an existing user id');
    t.same(await users.byId(first.user_id), first, 'the first user is untouched');
    t.equal(await users.count(), 3);
  });

  withUsers('concurrent creates of one identity: exactly one wins', async (t, users) => {
    const contested = name('race');
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => users.create(user({ identities: [username(contested)] }))));
    t.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'rejected') t.match(r.reason, { code: 'IDENTITY_TAKEN' });
    t.equal(await users.count(), 1);
  });

  withUsers('addIdentity: added in order, under the same uniqueness rules', async (t, users) => {
    const carol = name('carol');
    const u = user({ identities: [username(carol)] });
    await users.create(u);
    const mail = email(`${carol}@Example.com`);
    await users.addIdentity(u.user_id, mail);
    t.same((await users.byId(u.user_id))?.identities, [username(carol), mail]);
    t.equal((await users.byIdentity(normalize(`${carol}@example.COM`)))?.user_id, u.user_id);
    await t.rejects(users.addIdentity(u.user_id, email(`${name('other')}@example.com`)), { code: 'IDENTITY_TAKEN' }, 'a second email');
    const other = user({ identities: [username(name('dave'))] });
    await users.create(other);
    await t.rejects(users.addIdentity(other.user_id, email(`${carol}@example.com`)), { code: 'IDENTITY_TAKEN' }, 'another user’s email');
    t.equal((await users.byId(other.user_id))?.identities.length, 1);
  });

  withUsers('setVerified marks one identity of one user', async (t, users) => {
    const erin = name('erin');
    const u = user({ identities: [username(erin), email(`${erin}@example.com`)] });
    await users.create(u);
    await users.setVerified(u.user_id, normalize(`${erin}@example.com`));
    t.same(
      (await users.byId(u.user_id))?.identities.map((i) => i.verified),
      [true, true],
    );
    await users.setVerified(uid(), normalize(`${erin}@example.com`));
    await users.setVerified(u.user_id, 'not-an-identity');
    t.pass('nothing to mark is no error');
  });

  withUsers('update changes the given fields and updated_at, and nothing else', async (t, users) => {
    const u = user({ identities: [username(name('frank'))], created_at: '2020-01-01T00:00:00.000Z', updated_at: '2020-01-01T00:00:00.000Z', password_hash: 'h1' });
    await users.create(u);
    await users.update(u.user_id, { role: 'admin', status: 'disabled', profile: { bio: 'hi' }, must_change_password: true });
    const got = (await users.byId(u.user_id)) as UserRecord;
    t.match(got, { role: 'admin', status: 'disabled', profile: { bio: 'hi' }, must_change_password: true, password_hash: 'h1', tokens_valid_after: null, created_at: u.created_at });
    t.same(got.profile, { bio: 'hi' }, 'the profile is replaced');
    t.ok(got.updated_at > u.updated_at, 'updated_at moves');
    await users.update(u.user_id, { password_hash: null, tokens_valid_after: 99 });
    t.match(await users.byId(u.user_id), { password_hash: null, tokens_valid_after: 99, role: 'admin' });
    await users.update(u.user_id, { role: undefined });
    t.equal((await users.byId(u.user_id))?.role, 'admin', 'an undefined field is left alone');
    await users.update(uid(), { role: 'admin' });
    t.pass('no such user: nothing happens');
  });

  withUsers('replacePasswordHash is a compare-and-set', async (t, users) => {
    const u = user({ identities: [username(name('gina'))], password_hash: 'old' });
    await users.create(u);
    t.equal(await users.replacePasswordHash(u.user_id, 'old', 'rehashed'), true);
    t.equal((await users.byId(u.user_id))?.password_hash, 'rehashed');
    // A password change landed meanwhile: the rehash of the old one must not undo it.
    await users.update(u.user_id, { password_hash: 'changed' });
    t.equal(await users.replacePasswordHash(u.user_id, 'rehashed', 'stale'), false);
    t.equal((await users.byId(u.user_id))?.password_hash, 'changed');
    t.equal(await users.replacePasswordHash(uid(), 'changed', 'x'), false, 'no such user');
    const racers = await Promise.all([users.replacePasswordHash(u.user_id, 'changed', 'a'), users.replacePasswordHash(u.user_id, 'changed', 'b')]);
    t.same(racers.filter(Boolean).length, 1, 'two rehashes at once: one wins');
  });

  withUsers('updateAndRevoke: the stamp moves strictly forward, with the patch, atomically', async (t, users) => {
    const u = user({ identities: [username(name('hank'))], password_hash: 'p0' });
    await users.create(u);
    const before = Date.now();
    const s1 = (await users.updateAndRevoke(u.user_id)) as number;
    t.ok(s1 >= before && s1 <= Date.now() + 1, 'the stamp is now');
    const s2 = (await users.updateAndRevoke(u.user_id, { password_hash: 'p1', must_change_password: false })) as number;
    t.ok(s2 > s1, 'strictly later, even within one millisecond');
    t.match(await users.byId(u.user_id), { password_hash: 'p1', tokens_valid_after: s2 });
    const far = Date.now() + 3_600_000;
    await users.update(u.user_id, { tokens_valid_after: far });
    t.equal(await users.updateAndRevoke(u.user_id, { role: 'admin' }), far + 1, 'a stamp ahead of the clock still moves forward');
    t.equal((await users.byId(u.user_id))?.role, 'admin');
    const many = await Promise.all(Array.from({ length: 10 }, () => users.updateAndRevoke(u.user_id)));
    t.equal(new Set(many).size, 10, 'concurrent revocations never share a stamp');
    t.equal(await users.updateAndRevoke(uid(), { role: 'admin' }), undefined, 'no such user');
  });

  withUsers('delete: the user, identities and tokens go; the deletion is remembered with a mark and a pending graph drop', async (t, users) => {
    const ivy = name('ivy');
    const u = user({ identities: [username(ivy), email(`${ivy}@example.com`)] });
    await users.create(u);
    await users.putOneTimeToken({ token_hash: name('tok'), user_id: u.user_id, kind: 'reset', identity: normalize(`${ivy}@example.com`), expires_at: Date.now() + 60_000 });
    const at = Date.now();
    const mark = await users.delete(u.user_id, at);
    t.equal(mark, at);
    t.equal(await users.byId(u.user_id), undefined);
    t.equal(await users.byIdentity(normalize(ivy)), undefined);
    t.notOk(await users.exists(u.user_id));
    t.ok(await users.wasDeleted(u.user_id));
    t.notOk(await users.wasDeleted(uid()));
    t.ok((await users.pendingGraphDrops()).includes(u.root_id), 'its graph is to be deleted');
    t.ok((await users.revocationsSince(at - 1)).some(([id, m]) => id === u.user_id && m === mark), 'its tokens stay void');
    // Identities are free again (for someone else).
    await users.create(user({ identities: [username(ivy), email(`${ivy}@example.com`)] }));
    t.pass('the identities can be used again');
  });

  withUsers('delete: the mark is after the user’s last stamp; an unknown id is remembered as deleted too', async (t, users) => {
    const u = user({ identities: [username(name('jack'))] });
    await users.create(u);
    const stamp = (await users.updateAndRevoke(u.user_id)) as number;
    t.equal(await users.delete(u.user_id, stamp - 10), stamp + 1, 'max(at, stamp + 1)');
    const ghost = uid();
    const at = Date.now();
    t.equal(await users.delete(ghost, at), at);
    t.ok(await users.wasDeleted(ghost));
    t.notOk((await users.pendingGraphDrops()).some((r) => r === userRecord({ user_id: ghost, role: 'user' }).root_id), 'no graph to drop for a user that never was');
  });

  withUsers('pending graph drops: oldest deletion first, forgotten once dropped', async (t, users) => {
    const a = user({ identities: [username(name('kim'))] });
    const b = user({ identities: [username(name('lou'))] });
    await users.create(a);
    await users.create(b);
    const now = Date.now();
    await users.delete(b.user_id, now - 1000);
    await users.delete(a.user_id, now);
    const mine = (await users.pendingGraphDrops()).filter((r) => r === a.root_id || r === b.root_id);
    t.same(mine, [b.root_id, a.root_id]);
    await users.graphDropped(b.root_id);
    t.notOk((await users.pendingGraphDrops()).includes(b.root_id));
    t.ok((await users.pendingGraphDrops()).includes(a.root_id));
    await users.graphDropped(b.root_id);
    t.pass('dropping twice is no error');
  });

  withUsers('revocationsSince: stamps and deletions after a moment', async (t, users) => {
    const a = user({ identities: [username(name('mia'))] });
    const b = user({ identities: [username(name('ned'))] });
    const c = user({ identities: [username(name('ola'))] });
    for (const u of [a, b, c]) await users.create(u);
    const since = Date.now() - 1;
    await users.update(a.user_id, { tokens_valid_after: since - 5000 });
    const sb = (await users.updateAndRevoke(b.user_id)) as number;
    const mc = await users.delete(c.user_id);
    const found = new Map(await users.revocationsSince(since));
    t.notOk(found.has(a.user_id), 'an older stamp is not listed');
    t.equal(found.get(b.user_id), sb);
    t.equal(found.get(c.user_id), mc);
    t.notOk(new Map(await users.revocationsSince(Math.max(sb, mc))).has(b.user_id), 'strictly after');
  });

  withUsers('list: newest first, paged, with the total; search by part of any identity, any case', async (t, users) => {
    const tag = name('pg').toLowerCase();
    const made: UserRecord[] = [];
    for (let i = 0; i < 5; i++) {
      const u = user({
        user_id: `${tag}-${i}`,
        created_at: new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
        identities: [username(`${tag}_U${i}`), email(`${tag}.m${i}@Example.com`)],
      });
      made.push(u);
      await users.create(u);
    }
    // Two created in the same instant: ordered by user id.
    const tieA = user({ user_id: `${tag}-t-a`, created_at: '2023-06-01T00:00:00.000Z', identities: [username(`${tag}_ta`)] });
    const tieB = user({ user_id: `${tag}-t-b`, created_at: '2023-06-01T00:00:00.000Z', identities: [username(`${tag}_tb`)] });
    await users.create(tieB);
    await users.create(tieA);
    const all = await users.list({ search: tag });
    t.equal(all.total, 7);
    t.same(
      all.users.map((u) => u.user_id),
      [...made.map((u) => u.user_id).reverse(), tieA.user_id, tieB.user_id],
    );
    t.same(all.users[0], made[4], 'whole records');
    const page = await users.list({ search: tag, limit: 2, offset: 1 });
    t.same(page.users.map((u) => u.user_id), [made[3]?.user_id, made[2]?.user_id]);
    t.equal(page.total, 7, 'the total counts every page');
    t.same((await users.list({ search: `${tag.toUpperCase()}_u3` })).users.map((u) => u.user_id), [made[3]?.user_id], 'a username, any case');
    t.same((await users.list({ search: `${tag}.M1@EXAMPLE` })).users.map((u) => u.user_id), [made[1]?.user_id], 'part of an email, any case');
    t.equal((await users.list({ search: `${tag}_zzz` })).total, 0);
    t.same(await users.list({ search: `${tag}%` }), { users: [], total: 0 }, '% is a character, not a wildcard');
    t.equal((await users.list({ search: `${tag}_u_` })).total, 0, '_ is a character, not a wildcard');
    t.equal((await users.list({ search: tag, limit: 0 })).users.length, 1, 'limit at least 1');
    t.equal((await users.list({ search: tag, limit: 10_000 })).users.length, 7, 'limit at most 500');
    t.equal((await users.list({ search: tag, offset: -5 })).users[0]?.user_id, made[4]?.user_id, 'offset at least 0');
    t.equal((await users.list({ search: tag, offset: 7 })).users.length, 0);
  });

  withUsers('list and count without a search cover every user; 50 a page by default', async (t, users) => {
    const base = await users.count();
    for (let i = 0; i < 55; i++) await users.create(user({ identities: [username(name('many'))] }));
    t.equal(await users.count(), base + 55);
    const page = await users.list({});
    t.equal(page.total, base + 55);
    t.equal(page.users.length, 50);
  });

  withUsers('one-time tokens: peek, then take once; kind and expiry count; newer tokens void older ones', async (t, users) => {
    const u = user({ identities: [username(name('pam'))] });
    await users.create(u);
    const hash = name('hash');
    const token = { token_hash: hash, user_id: u.user_id, kind: 'verify' as const, identity: 'pam@example.com', expires_at: Date.now() + 60_000 };
    await users.putOneTimeToken(token);
    t.same(await users.peekOneTimeToken(hash, 'verify'), { ...token, used_at: null });
    t.same(await users.peekOneTimeToken(hash, 'verify'), { ...token, used_at: null }, 'peeking spends nothing');
    t.equal(await users.peekOneTimeToken(hash, 'reset'), undefined, 'another kind');
    t.equal(await users.takeOneTimeToken(hash, 'reset'), undefined);
    const taken = await users.takeOneTimeToken(hash, 'verify');
    t.match(taken, { ...token, used_at: Number });
    t.equal(await users.takeOneTimeToken(hash, 'verify'), undefined, 'once only');
    t.equal(await users.peekOneTimeToken(hash, 'verify'), undefined);
    t.equal(await users.takeOneTimeToken(name('unknown'), 'verify'), undefined);

    const expired = name('expired');
    await users.putOneTimeToken({ ...token, token_hash: expired, expires_at: Date.now() - 1 });
    t.equal(await users.peekOneTimeToken(expired, 'verify'), undefined);
    t.equal(await users.takeOneTimeToken(expired, 'verify'), undefined);

    const older = name('older');
    const reset = name('reset');
    await users.putOneTimeToken({ ...token, token_hash: older });
    await users.putOneTimeToken({ ...token, token_hash: reset, kind: 'reset' });
    await users.voidOneTimeTokens(u.user_id, 'verify');
    t.equal(await users.takeOneTimeToken(older, 'verify'), undefined, 'voided');
    t.ok(await users.peekOneTimeToken(reset, 'reset'), 'a token of another kind is kept');
    const racers = await Promise.all(Array.from({ length: 5 }, () => users.takeOneTimeToken(reset, 'reset')));
    t.equal(racers.filter(Boolean).length, 1, 'taken once however many ask at once');
  });

  withUsers('a deleted user’s one-time tokens are gone', async (t, users) => {
    const u = user({ identities: [username(name('quin'))] });
    await users.create(u);
    const hash = name('h');
    await users.putOneTimeToken({ token_hash: hash, user_id: u.user_id, kind: 'reset', identity: 'x', expires_at: Date.now() + 60_000 });
    await users.delete(u.user_id);
    t.equal(await users.peekOneTimeToken(hash, 'reset'), undefined);
    t.equal(await users.takeOneTimeToken(hash, 'reset'), undefined);
  });

  withUsers('bySso: by provider and external id, never by another provider or as a username', async (t, users) => {
    const ext = name('sub');
    const google = sso('google', ext);
    const u = user({ identities: [username(name('sam')), google] });
    await users.create(u);
    t.same(await users.bySso('google', ext), u, 'the whole user');
    t.equal(await users.bySso('github', ext), undefined, 'the same external id at another provider');
    t.equal(await users.bySso('google', name('other')), undefined);
    t.equal(await users.bySso('google', `${ext.toUpperCase()}`), undefined, 'external ids are taken as they are');
    t.equal(await users.byIdentity(google.value_normalized), undefined);
    const other = user({ identities: [username(name('tom'))] });
    await users.create(other);
    const gh = sso('github', ext);
    await users.addIdentity(other.user_id, gh);
    t.equal((await users.bySso('github', ext))?.user_id, other.user_id, 'an added SSO identity is found');
    t.equal((await users.bySso('google', ext))?.user_id, u.user_id);
  });

  withUsers('SSO identities: one per provider and user; an account of a provider belongs to one user', async (t, users) => {
    const u = user({ identities: [username(name('uma')), sso('google', name('g'))] });
    await users.create(u);
    await t.rejects(users.addIdentity(u.user_id, sso('google', name('g2'))), { code: 'IDENTITY_TAKEN' }, 'a second google identity');
    await t.rejects(users.create(user({ identities: [sso('apple', name('a1')), sso('apple', name('a2'))] })), { code: 'IDENTITY_TAKEN' }, 'created with two of one provider');
    await users.addIdentity(u.user_id, sso('github', name('gh')));
    t.same((await users.byId(u.user_id))?.identities.map((i) => i.provider ?? i.type), ['username', 'google', 'github'], 'another provider is fine');
    const other = user({ identities: [username(name('vic'))] });
    await users.create(other);
    const google = u.identities[1] as Identity;
    await t.rejects(users.addIdentity(other.user_id, sso('google', google.external_id as string)), { code: 'IDENTITY_TAKEN' }, 'the same account on another user');
    await t.rejects(users.create(user({ identities: [sso('google', google.external_id as string)] })), { code: 'IDENTITY_TAKEN' }, 'the same account on a new user');
    t.equal((await users.byId(other.user_id))?.identities.length, 1, 'nothing added');
    t.equal((await users.bySso('google', google.external_id as string))?.user_id, u.user_id);
  });

  withUsers('removeSsoIdentity: removed, absent, or refused when it is the last way to sign in', async (t, users) => {
    const g = sso('google', name('g'));
    const withPassword = user({ identities: [username(name('wes')), g], password_hash: 'h' });
    await users.create(withPassword);
    t.equal(await users.removeSsoIdentity(withPassword.user_id, 'google'), 'removed', 'a password is left');
    t.same((await users.byId(withPassword.user_id))?.identities.map((i) => i.type), ['username'], 'the identity is gone');
    t.equal(await users.bySso('google', g.external_id as string), undefined);
    t.equal(await users.removeSsoIdentity(withPassword.user_id, 'google'), 'absent', 'once only');
    t.equal(await users.removeSsoIdentity(withPassword.user_id, 'github'), 'absent', 'none of that provider');
    t.equal(await users.removeSsoIdentity(uid(), 'google'), 'absent', 'no such user');
    await users.create(user({ identities: [sso('google', g.external_id as string)] }));
    t.pass('the account can be linked to someone else after');

    const only = sso('github', name('gh'));
    const ssoOnly = user({ identities: [only] });
    await users.create(ssoOnly);
    t.equal(await users.removeSsoIdentity(ssoOnly.user_id, 'github'), 'last', 'no password, no other provider');
    t.same((await users.byId(ssoOnly.user_id))?.identities, [only], 'nothing removed');
    t.equal((await users.bySso('github', only.external_id as string))?.user_id, ssoOnly.user_id);
    const noPasswordUsername = user({ identities: [username(name('xan')), sso('apple', name('ap'))] });
    await users.create(noPasswordUsername);
    t.equal(await users.removeSsoIdentity(noPasswordUsername.user_id, 'apple'), 'last', 'a username without a password is no way to sign in');

    const two = user({ identities: [sso('google', name('g')), sso('github', name('gh'))] });
    await users.create(two);
    t.equal(await users.removeSsoIdentity(two.user_id, 'google'), 'removed', 'another provider is left');
    t.equal(await users.removeSsoIdentity(two.user_id, 'github'), 'last', 'but not the one left');
    t.same((await users.byId(two.user_id))?.identities.map((i) => i.provider), ['github']);
    await users.update(two.user_id, { password_hash: 'set later' });
    t.equal(await users.removeSsoIdentity(two.user_id, 'github'), 'removed', 'once a password is set');
  });

  withUsers('removeSsoIdentity of both providers of a password-less user at once: one removed, one refused', async (t, users) => {
    for (let round = 0; round < 3; round++) {
      const u = user({ identities: [sso('google', name('g')), sso('github', name('gh'))] });
      await users.create(u);
      const results = await Promise.all([users.removeSsoIdentity(u.user_id, 'google'), users.removeSsoIdentity(u.user_id, 'github')]);
      t.same([...results].sort(), ['last', 'removed'], `round ${round}: exactly one removed`);
      t.equal((await users.byId(u.user_id))?.identities.length, 1, 'one way to sign in is left');
    }
  });

  withUsers('API keys: kept by hash, listed oldest first, deleted by their owner only', async (t, users) => {
    const u = user({ identities: [username(name('yan'))] });
    const other = user({ identities: [username(name('zed'))] });
    await users.create(u);
    await users.create(other);
    const a = apiKey(u.user_id, { created_at: '2024-05-06T07:08:10.000Z' });
    const b = apiKey(u.user_id, { created_at: '2024-05-06T07:08:09.000Z', walkers: null, expires_at: null });
    const c = apiKey(u.user_id, { created_at: '2024-05-06T07:08:10.000Z', api_key_id: `${a.api_key_id.slice(0, -1)}${a.api_key_id.endsWith('0') ? '1' : '0'}` });
    const theirs = apiKey(other.user_id, { walkers: [] });
    for (const k of [a, b, c, theirs]) await users.putApiKey(k);
    t.same(await users.apiKeyByHash(a.key_hash), a, 'every field');
    t.same(await users.apiKeyByHash(b.key_hash), b, 'walkers null (any) and expires_at null (never) come back null');
    t.same(await users.apiKeyByHash(theirs.key_hash), theirs, 'an empty list of walkers stays a list');
    t.equal(await users.apiKeyByHash('0'.repeat(64)), undefined);
    const sameTime = [a, c].sort((x, y) => (x.api_key_id < y.api_key_id ? -1 : 1));
    t.same(await users.apiKeysOf(u.user_id), [b, ...sameTime], 'created_at, then api_key_id');
    t.same(await users.apiKeysOf(other.user_id), [theirs]);
    t.same(await users.apiKeysOf(uid()), []);

    const got = (await users.apiKeyByHash(a.key_hash)) as ApiKeyRecord;
    (got.walkers as string[]).push('Sneaky');
    t.same((await users.apiKeyByHash(a.key_hash))?.walkers, a.walkers, 'what comes back is a copy');

    t.equal(await users.deleteApiKey(u.user_id, theirs.api_key_id), false, 'another user’s key is not theirs to delete');
    t.same(await users.apiKeyByHash(theirs.key_hash), theirs, 'and it is kept');
    t.equal(await users.deleteApiKey(u.user_id, a.api_key_id), true);
    t.equal(await users.deleteApiKey(u.user_id, a.api_key_id), false, 'once only');
    t.equal(await users.apiKeyByHash(a.key_hash), undefined);
    t.same(await users.apiKeysOf(u.user_id), [b, c]);
    t.equal(await users.deleteApiKey(u.user_id, name('nokey')), false);
  });

  withUsers('API keys: none for a user that is not there; a hash is one key’s', async (t, users) => {
    await t.rejects(users.putApiKey(apiKey(uid())), { code: 'NOT_FOUND' }, 'a user that never was');
    const u = user({ identities: [username(name('abe'))] });
    await users.create(u);
    const k = apiKey(u.user_id);
    await users.putApiKey(k);
    await t.rejects(users.putApiKey(apiKey(u.user_id, { key_hash: k.key_hash })), 'a duplicate hash');
    t.same(await users.apiKeysOf(u.user_id), [k], 'only the first is kept');
    await users.delete(u.user_id);
    await t.rejects(users.putApiKey(apiKey(u.user_id)), { code: 'NOT_FOUND' }, 'a deleted user');
    t.same(await users.apiKeysOf(u.user_id), []);
  });

  withUsers('delete: the user’s API keys and SSO identities go with them', async (t, users) => {
    const g = sso('google', name('g'));
    const u = user({ identities: [username(name('bea')), g] });
    await users.create(u);
    const k1 = apiKey(u.user_id);
    const k2 = apiKey(u.user_id, { created_at: '2025-01-01T00:00:00.000Z' });
    await users.putApiKey(k1);
    await users.putApiKey(k2);
    const keeper = user({ identities: [username(name('cal'))] });
    await users.create(keeper);
    const kept = apiKey(keeper.user_id);
    await users.putApiKey(kept);
    await users.delete(u.user_id);
    t.equal(await users.apiKeyByHash(k1.key_hash), undefined);
    t.equal(await users.apiKeyByHash(k2.key_hash), undefined);
    t.same(await users.apiKeysOf(u.user_id), []);
    t.same(await users.apiKeyByHash(kept.key_hash), kept, 'another user’s key is kept');
    t.equal(await users.bySso('google', g.external_id as string), undefined);
    const next = user({ identities: [g] });
    await users.create(next);
    t.equal((await users.bySso('google', g.external_id as string))?.user_id, next.user_id, 'the SSO account can be linked to a new user');
    t.equal(await users.deleteApiKey(u.user_id, k1.api_key_id), false);
  });

  t.test('a closed repository refuses', async (t) => {
    const users = await open();
    await users.close();
    await t.rejects(users.byId(uid()));
    await t.rejects(users.create(user()));
  });
}
