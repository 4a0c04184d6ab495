import t, { type Test } from 'tap';
import { WindowTable, type RateLimiter } from '../../../actors/identity/index.ts';
import { RedisRateLimiter } from '../../../stores/redis/rate-limit.ts';
import { openRedis, whenReady } from '../../../stores/redis/connection.ts';
import { skipRedis, startRedis, type RedisServer } from '../../kit/index.ts';

/** A process's own limiter, in memory (stands for the ActorRateLimiter). */
function localLimiter(): RateLimiter & { table: WindowTable } {
  const table = new WindowTable(1000);
  return {
    table,
    hit: async (key, limit, windowMs) => table.hit(key, limit, windowMs, Date.now()),
    peek: async (key, limit) => table.peek(key, limit, Date.now()),
    refund: (key) => table.refund(key),
  };
}

/** A limiter as one process would have it: its own connection, its own fallback. */
async function processLimiter(t: Test, server: RedisServer, options: { salt?: string; cluster?: string } = {}) {
  const redis = openRedis(server.url, { name: 'rate-limit' });
  t.teardown(() => redis.disconnect());
  await whenReady(redis, 5_000);
  const fallback = localLimiter();
  const errors: unknown[] = [];
  const limiter = new RedisRateLimiter({ redis, cluster: options.cluster ?? 'test', salt: options.salt ?? 'pepper', fallback, onError: (e) => errors.push(e) });
  return { redis, limiter, fallback, errors };
}

/** Poll `check` (a real window has to pass in Redis: no event tells us) until it holds, or fail after `ms`. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}

t.test('limits count across processes', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processLimiter(t, server);
  const b = await processLimiter(t, server);
  t.same(await a.limiter.hit('login:alice', 3, 60_000), { allowed: true, retryAfterMs: 0 });
  t.same(await b.limiter.hit('login:alice', 3, 60_000), { allowed: true, retryAfterMs: 0 });
  t.same(await a.limiter.hit('login:alice', 3, 60_000), { allowed: true, retryAfterMs: 0 });
  const over = await b.limiter.hit('login:alice', 3, 60_000);
  t.equal(over.allowed, false, 'the fourth, wherever it lands, is over the limit');
  t.ok(over.retryAfterMs > 59_000 && over.retryAfterMs <= 60_000, `retry after the window (${over.retryAfterMs} ms)`);
  t.equal((await a.limiter.peek('login:alice', 3, 60_000)).allowed, false, 'the other process sees it too');
  t.equal((await a.limiter.hit('login:bob', 3, 60_000)).allowed, true, 'another key has its own window');
  t.same(a.errors, [], 'no outage');
});

t.test('concurrent hits are all counted', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processLimiter(t, server);
  const b = await processLimiter(t, server);
  const verdicts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).limiter.hit('k', 10, 60_000)));
  t.equal(verdicts.filter((v) => v.allowed).length, 10, 'exactly the limit is allowed');
});

t.test('a window expires', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const { limiter } = await processLimiter(t, server);
  await limiter.hit('k', 1, 200);
  const over = await limiter.hit('k', 1, 200);
  t.equal(over.allowed, false);
  t.ok(over.retryAfterMs > 0 && over.retryAfterMs <= 200, `retryAfterMs within the window (${over.retryAfterMs})`);
  t.ok(await eventually(async () => (await limiter.peek('k', 1, 200)).allowed, 2_000), 'allowed again once the window passed');
  t.same(await limiter.hit('k', 1, 200), { allowed: true, retryAfterMs: 0 }, 'a new window');
});

t.test('peek does not count', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const { limiter } = await processLimiter(t, server);
  for (let i = 0; i < 5; i++) t.same(await limiter.peek('k', 2, 60_000), { allowed: true, retryAfterMs: 0 });
  t.equal((await limiter.hit('k', 2, 60_000)).allowed, true);
  t.equal((await limiter.peek('k', 2, 60_000)).allowed, true, 'one more would be allowed');
  t.equal((await limiter.hit('k', 2, 60_000)).allowed, true);
  const full = await limiter.peek('k', 2, 60_000);
  t.equal(full.allowed, false, 'one more would not');
  t.ok(full.retryAfterMs > 0);
});

t.test('refund gives an attempt back, never below 0, never a key without expiry', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const { limiter, redis } = await processLimiter(t, server);
  const check = server.client();
  await limiter.hit('k', 2, 60_000);
  await limiter.hit('k', 2, 60_000);
  t.equal((await limiter.peek('k', 2, 60_000)).allowed, false);
  limiter.refund('k');
  await redis.ping(); // the refund went before it on this connection
  t.equal((await limiter.peek('k', 2, 60_000)).allowed, true, 'room for one again');
  limiter.refund('k');
  limiter.refund('k');
  limiter.refund('k');
  await redis.ping();
  t.equal(await check.get(limiter.keyOf('k')), '0', 'not below 0');
  t.ok((await check.pttl(limiter.keyOf('k'))) > 0, 'the window keeps its expiry');
  limiter.refund('never-hit');
  await redis.ping();
  t.equal(await check.exists(limiter.keyOf('never-hit')), 0, 'a refund creates no key');
});

t.test('keys are hashed: no identity in clear in Redis', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processLimiter(t, server, { salt: 'one' });
  const b = await processLimiter(t, server, { salt: 'two' });
  await a.limiter.hit('login:alice@example.com', 5, 60_000);
  await a.limiter.hit('login:addr:203.0.113.7', 5, 60_000);
  await b.limiter.hit('login:alice@example.com', 5, 60_000);
  const keys = await server.client().keys('*');
  t.equal(keys.length, 3, 'one key per (salt, key)');
  for (const key of keys) {
    t.match(key, /^svc:\{test\}:rl:[A-Za-z0-9_-]{43}$/, 'under the cluster prefix, a hash');
    t.notMatch(key, /alice|example|203\.0\.113/);
  }
  t.not(a.limiter.keyOf('x'), b.limiter.keyOf('x'), 'the salt changes the key');
});

t.test('Redis down: counts per process, reported once; back: counts in Redis again', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processLimiter(t, server);
  t.equal((await a.limiter.hit('k', 2, 60_000)).allowed, true);
  const closed = new Promise((resolve) => a.redis.once('close', resolve));
  await server.stop();
  await closed;
  t.same(await a.limiter.hit('k', 2, 60_000), { allowed: true, retryAfterMs: 0 }, 'logins keep working');
  t.equal((await a.limiter.hit('k', 2, 60_000)).allowed, true, 'the local window starts empty');
  t.equal((await a.limiter.hit('k', 2, 60_000)).allowed, false, 'but the limit holds per process');
  t.equal((await a.limiter.peek('k', 2, 60_000)).allowed, false, 'peek falls back too');
  a.limiter.refund('k');
  a.limiter.refund('k'); // three counted locally, the third over the limit
  t.equal((await a.limiter.peek('k', 2, 60_000)).allowed, true, 'refund falls back too');
  t.equal(a.errors.length, 1, 'one report for the outage');
  t.ok(a.limiter.degraded);

  await server.restart(); // empty, as after a crash
  await whenReady(a.redis, 10_000);
  t.same(await a.limiter.hit('k', 2, 60_000), { allowed: true, retryAfterMs: 0 });
  t.notOk(a.limiter.degraded, 'recovered');
  const check = server.client();
  t.equal(await check.get(a.limiter.keyOf('k')), '1', 'counted in Redis again');

  // A command that fails while the client still thinks it is ready also falls back.
  const broken = new RedisRateLimiter({ redis: check, cluster: 'test', salt: 'pepper', fallback: a.fallback, onError: (e) => a.errors.push(e) });
  await check.set(broken.keyOf('bad'), 'not a number');
  t.equal((await broken.hit('bad', 5, 60_000)).allowed, true, 'a script error falls back');
  t.equal(a.errors.length, 2);
});
