// The rate limiter keeps bounded memory whatever keys arrive (issue 9, item 3).
import t from 'tap';
import { ActorSystem, ManualClock } from 'svc/kernel';
import { ActorRateLimiter, IdentityService, Passwords, RevocationTable, WindowTable } from '../../../actors/identity/index.ts';
import { MemoryUsersRepository } from '../../../stores/memory/index.ts';

t.test('a window table holds at most maxKeys windows: the least recently hit goes first', async (t) => {
  const table = new WindowTable(1000);
  for (let i = 0; i < 100_000; i++) table.hit(`login:id:${i}`, 10, 60_000, 0);
  t.equal(table.size, 1000, '100,000 distinct keys, 1,000 kept');
  table.hit('kept', 1, 60_000, 1);
  for (let i = 0; i < 999; i++) table.hit(`more:${i}`, 10, 60_000, 2);
  table.hit('kept', 1, 60_000, 3); // hit again: most recently used
  for (let i = 0; i < 500; i++) table.hit(`even:${i}`, 10, 60_000, 4);
  t.equal(table.peek('kept', 1, 5).allowed, false, 'a key hit recently keeps its count');
});

t.test('a flood of fresh keys does not push out a counter that is holding someone back', async (t) => {
  const table = new WindowTable(100);
  for (let i = 0; i < 10; i++) table.hit('login:user:victim', 5, 60_000, 0);
  t.equal(table.peek('login:user:victim', 5, 0).allowed, false, 'the victim’s account is limited');
  for (let i = 0; i < 100_000; i++) table.hit(`forgot:id:${i}`, 5, 60_000, 1);
  t.equal(table.size, 100);
  t.equal(table.peek('login:user:victim', 5, 2).allowed, false, 'still limited after 100,000 fresh keys (it is the oldest window)');
});

t.test('expired windows are swept and counted afresh', async (t) => {
  const table = new WindowTable(100);
  t.same(table.hit('k', 1, 1000, 0), { allowed: true, retryAfterMs: 0 });
  t.same(table.hit('k', 1, 1000, 400), { allowed: false, retryAfterMs: 600 });
  t.equal(table.peek('k', 1, 500).allowed, false, 'peek does not count');
  t.equal(table.peek('k', 1, 1000).allowed, true, 'the window is over');
  for (let i = 0; i < 50; i++) table.hit(`x${i}`, 1, 1000, 0);
  table.sweep(2000);
  t.equal(table.size, 0, 'every expired window is gone');
  t.same(table.hit('k', 1, 1000, 2000), { allowed: true, retryAfterMs: 0 });
});

t.test('shards: a bounded total, and idle shards deactivate (nothing live is lost)', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  t.teardown(() => system.shutdown());
  const limiter = new ActorRateLimiter(system, { placement: (_k, nodes) => nodes[0] as string, maxKeys: 800, windowMs: 60_000 });
  for (let i = 0; i < 5000; i++) await limiter.hit(`k${i}`, 5, 60_000);
  t.ok((await limiter.size()) <= 800, `5,000 distinct keys: ${await limiter.size()} kept (max 800)`);
  t.ok(system.activationCount('ratelimit') > 0);
  clock.advance(61_000);
  t.equal(system.activationCount('ratelimit'), 0, 'idle for a whole window: the shards are gone');
  t.same(await limiter.hit('k1', 5, 60_000), { allowed: true, retryAfterMs: 0 }, 'and come back on the next attempt');
});

t.test('login: an attempt the address limit refuses records nothing for the identity; long identities are refused before any work', async (t) => {
  const system = new ActorSystem();
  const users = new MemoryUsersRepository();
  const passwords = Passwords.local(1);
  t.teardown(async () => {
    await system.shutdown();
    await users.close();
    await passwords.close();
  });
  const limiter = new ActorRateLimiter(system, { placement: (_k, nodes) => nodes[0] as string });
  const identity = new IdentityService({
    users,
    passwords,
    system,
    revocations: new RevocationTable(),
    limiter,
    createRoot: async () => undefined,
    dropRoot: async () => 0,
    emailer: undefined,
    emailDisabledReason: 'none',
    jwt: { secret: 'x'.repeat(40), algorithm: 'HS256', expDays: 1 },
    auth: {
      verify_token_ttl_seconds: 60,
      reset_token_ttl_seconds: 60,
      verify_url_template: '',
      reset_url_template: '',
      login_attempts_per_identity: 5,
      login_attempts_per_address: 2,
      login_successes_per_identity: 5,
      register_attempts_per_address: 5,
      forgot_attempts_per_identity: 5,
      rate_window_seconds: 60,
    },
    adminSessionHours: 1,
    log: () => undefined,
  });
  const attempt = (name: string) => identity.login({ identity: { type: 'username', value: name }, credential: { type: 'password', password: 'wrong password' } }, '10.0.0.1');
  await t.rejects(attempt('someone_1'), { code: 'INVALID_CREDENTIALS' });
  await t.rejects(attempt('someone_2'), { code: 'INVALID_CREDENTIALS' });
  const before = await limiter.size();
  for (let i = 0; i < 200; i++) await t.rejects(attempt(`someone_${i + 3}`), { code: 'TOO_MANY_REQUESTS' });
  t.equal(await limiter.size(), before, '200 refused attempts with distinct identities: no new key');
  const huge = 'a'.repeat(1_000_000);
  await t.rejects(identity.login({ username: huge, password: 'x' }, '10.0.0.2', true), { code: 'VALIDATION_ERROR' }, '/admin/login: a 1 MB username');
  await t.rejects(identity.login({ identity: { type: 'username', value: huge }, credential: { type: 'password', password: 'x' } }, '10.0.0.2'), { code: 'VALIDATION_ERROR' });
  await t.rejects(identity.login({ username: 'admin', password: huge }, '10.0.0.2', true), { code: 'VALIDATION_ERROR' }, 'a 1 MB password');
  t.equal(await limiter.size(), before, 'none of them counted anything');
});
