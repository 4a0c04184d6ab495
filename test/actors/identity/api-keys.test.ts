// ApiKeys on its own: keys hashed, checked from memory, forgotten on revocation, expiry and
// owner changes; malformed keys never reach the store. A fake clock and an in-memory users
// repository (the backends' conformance suite covers the stores themselves).
import t from 'tap';
import { ApiKeys, hashKey, RevocationTable, userRecord, type UsersRepository } from '../../../actors/identity/index.ts';
import { MemoryUsersRepository } from '../../../stores/memory/index.ts';
import type { Broadcast } from 'svc/kernel';

/** Counts store reads of keys. */
function counting(users: UsersRepository): { users: UsersRepository; reads: () => number } {
  let reads = 0;
  const original = users.apiKeyByHash.bind(users);
  users.apiKeyByHash = (hash) => {
    reads++;
    return original(hash);
  };
  return { users, reads: () => reads };
}

/** A broadcast of one member (what a single thread sees). */
function localBus(): Broadcast {
  const subs = new Map<string, ((msg: unknown, from: string) => unknown)[]>();
  return {
    publish: (topic, msg) => subs.get(topic)?.forEach((fn) => fn(msg, 'local')),
    subscribe: (topic, fn) => {
      subs.set(topic, [...(subs.get(topic) ?? []), fn]);
      return () => undefined;
    },
    gather: async <R>(topic: string, msg: unknown) => Promise.all((subs.get(topic) ?? []).map((fn) => fn(msg, 'local'))) as Promise<R[]>,
  };
}

async function setup(options: { webhookWalkers?: Set<string> } = {}) {
  const repo = new MemoryUsersRepository();
  const { users, reads } = counting(repo);
  const user = userRecord({ user_id: 'u-1', role: 'user' });
  await users.create(user);
  let now = Date.parse('2026-01-01T00:00:00Z');
  const revocations = new RevocationTable();
  const bus = localBus();
  const keys = new ApiKeys({ users, revocations, bus, expiryDays: 365, maxPerUser: 5, clock: () => now, ...options });
  // A second thread: its own memory, the same store and bus.
  const other = new ApiKeys({ users, revocations, bus, expiryDays: 365, maxPerUser: 5, clock: () => now });
  return { users, reads, user, keys, other, revocations, advance: (ms: number) => (now += ms) };
}

t.test('a key is stored as its hash only, and checks out to its owner on their root', async (t) => {
  const { users, user, keys } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  const stored = await users.apiKeysOf(user.user_id);
  t.equal(stored.length, 1);
  t.equal(stored[0]?.key_hash, hashKey(made.api_key));
  t.notOk(JSON.stringify(stored).includes(made.api_key), 'the key itself is nowhere in the store');
  const holder = await keys.check(made.api_key);
  t.same(holder?.caller, { userId: user.user_id, rootId: user.root_id, role: 'user' });
  t.equal(holder?.keyId, made.api_key_id);
  t.ok(Object.isFrozen(holder?.caller), 'shared: frozen');
});

t.test('checked from memory after the first read; malformed keys never reach the store', async (t) => {
  const { reads, user, keys } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  await keys.check(made.api_key);
  const after = reads();
  const again = keys.check(made.api_key);
  t.notOk(again instanceof Promise, 'answered synchronously from memory');
  t.equal(reads(), after, 'no store read');
  for (const bad of ['', 'svc_', `svc_${'A'.repeat(42)}`, `svc_${'A'.repeat(44)}`, `xyz_${'A'.repeat(43)}`, `svc_${'A'.repeat(42)}=`, 'x'.repeat(10_000)]) {
    t.equal(keys.check(bad), undefined, `malformed: ${bad.slice(0, 20)}`);
  }
  t.equal(reads(), after, 'malformed keys cost no read');
  t.equal(await keys.check(`svc_${'A'.repeat(43)}`), undefined, 'well-formed but unknown');
  t.equal(reads(), after + 1);
  t.equal(await keys.check(`svc_${'A'.repeat(43)}`), undefined, 'unknown keys are remembered too');
  t.equal(reads(), after + 1);
});

t.test('concurrent checks of one key read the store once', async (t) => {
  const { reads, user, keys } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  const before = reads();
  const all = await Promise.all(Array.from({ length: 50 }, () => keys.check(made.api_key)));
  t.ok(all.every((h) => h?.userId === user.user_id));
  t.equal(reads() - before, 1);
});

t.test('a revoked key is refused at once on every thread', async (t) => {
  const { user, keys, other } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  t.ok(await other.check(made.api_key), 'the other thread knows it');
  await keys.revoke(user.user_id, made.api_key_id);
  t.equal(await other.check(made.api_key), undefined, 'the other thread refuses it at once');
  t.equal(await keys.check(made.api_key), undefined);
  await t.rejects(keys.revoke(user.user_id, made.api_key_id), { code: 'NOT_FOUND' });
});

t.test('expiry: refused from the moment it passes, even from memory; 0 days is permanent', async (t) => {
  const { user, keys, advance } = await setup();
  const day = await keys.create(user.user_id, { name: 'day', expires_in_days: 1 });
  const forever = await keys.create(user.user_id, { name: 'forever', expires_in_days: 0 });
  t.equal(forever.expires_at, null);
  t.ok(await keys.check(day.api_key));
  advance(86_400_000 - 1);
  t.ok(keys.check(day.api_key), 'a millisecond before');
  advance(1);
  t.equal(await keys.check(day.api_key), undefined, 'refused at expiry');
  t.ok((await keys.list(user.user_id)).find((k) => k.name === 'day')?.expired, 'listed as expired');
  advance(100 * 365 * 86_400_000);
  t.ok(await keys.check(forever.api_key), 'a permanent key after a century');
});

t.test('the owner disabled or deleted: refused (their revocation drops the key from memory)', async (t) => {
  const { users, user, keys, other, revocations } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  t.ok(await keys.check(made.api_key));
  t.ok(await other.check(made.api_key));
  await users.updateAndRevoke(user.user_id, { status: 'disabled' });
  revocations.set(user.user_id, Date.now());
  t.equal(await keys.check(made.api_key), undefined, 'disabled owner');
  t.equal(await other.check(made.api_key), undefined, 'on the other thread too');
  await users.update(user.user_id, { status: 'active' });
  revocations.set(user.user_id, Date.now() + 1);
  t.ok(await keys.check(made.api_key), 'active again');
  await users.delete(user.user_id);
  revocations.set(user.user_id, Date.now() + 2);
  t.equal(await keys.check(made.api_key), undefined, 'deleted owner');
  t.same(await users.apiKeysOf(user.user_id), [], 'their keys are gone from the store');
});

t.test('memory is read again after cacheMs (another process revoked it without a shared bus)', async (t) => {
  const { users, user, keys, advance } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  t.ok(await keys.check(made.api_key));
  await users.deleteApiKey(user.user_id, made.api_key_id); // behind this thread's back
  t.ok(keys.check(made.api_key), 'still in memory');
  advance(5000);
  t.equal(await keys.check(made.api_key), undefined, 'read again: gone');
});

t.test('create: limits, walkers allow-list, unknown users', async (t) => {
  const { user, keys } = await setup({ webhookWalkers: new Set(['OnPay']) });
  await t.rejects(keys.create(user.user_id, { name: 'x', walkers: ['Other'] }), { code: 'VALIDATION_ERROR' });
  const ok = await keys.create(user.user_id, { name: 'x', walkers: ['OnPay'] });
  t.same((await keys.check(ok.api_key))?.walkers, ['OnPay']);
  await t.rejects(keys.create('nobody', { name: 'x' }), { code: 'NOT_FOUND' });
  for (let i = 0; i < 4; i++) await keys.create(user.user_id, { name: `k${i}` });
  await t.rejects(keys.create(user.user_id, { name: 'one too many' }), { code: 'TOO_MANY_API_KEYS' });
  await t.rejects(keys.revoke(user.user_id, '../x'), { code: 'NOT_FOUND' });
});

t.test('a store read under way when the key is revoked does not put it back in memory', async (t) => {
  const { users, user, keys } = await setup();
  const made = await keys.create(user.user_id, { name: 'ci' });
  // The next read of the key is held until we let it go: it has read the key before the revocation.
  const original = users.apiKeyByHash.bind(users);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  users.apiKeyByHash = async (hash) => {
    const found = await original(hash);
    await held;
    return found;
  };
  const early = keys.check(made.api_key); // began before the revocation
  users.apiKeyByHash = original;
  await keys.revoke(user.user_id, made.api_key_id);
  const late = keys.check(made.api_key); // began after it: a read of its own
  release();
  t.ok(await early, 'the read that began before the revocation may answer what it read');
  t.equal(await late, undefined, 'a check after the revocation is refused');
  t.equal(await keys.check(made.api_key), undefined, 'and memory does not hold the stale read');
});

t.test('creations racing past the limit: never more than max_api_keys_per_user kept', async (t) => {
  const { users, user, keys } = await setup();
  const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => keys.create(user.user_id, { name: `k${i}` })));
  t.ok(results.some((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'TOO_MANY_API_KEYS'), 'some are refused');
  t.ok((await users.apiKeysOf(user.user_id)).length <= 5, 'at most 5 kept');
});
