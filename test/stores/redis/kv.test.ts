// The kv backend of kvstore() on a real redis-server: every method of the seed, namespacing, values,
// errors; and the locks made of it.
import t from 'tap';
import { kvstore, mutex, debounce } from 'svc';
import { startRedis, skipRedis } from '../../kit/index.ts';
import { closeKvstores } from '../../../actors/data/index.ts';

t.test('kv on Redis', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  t.teardown(() => closeKvstores());
  const kv = kvstore('app', 'kv', redis.url);
  const raw = redis.client();

  t.test('get, set, delete, exists: strings under namespaced keys', async (t) => {
    t.equal(await kv.get('missing'), null);
    await kv.set('greeting', 'hello');
    t.equal(await kv.get('greeting'), 'hello');
    t.equal(await raw.get('app:greeting'), 'hello', 'stored under the namespace dbName:');
    t.equal(await kv.exists('greeting'), true);
    await kv.set('n', 42);
    t.equal(await kv.get('n'), '42', 'a number is stored as its text, as Redis holds it');
    t.equal(await kv.delete('greeting'), true);
    t.equal(await kv.delete('greeting'), false);
    t.equal(await kv.exists('greeting'), false);
    await t.rejects(kv.set('o', { a: 1 } as never), { code: 'INVALID_QUERY' }, 'objects are refused: setJson is the helper');
    await t.rejects(() => kv.get(''), { code: 'INVALID_NAME' });
    await kv.setJson('doc', { a: [1, 2] });
    t.same(await kv.getJson('doc'), { a: [1, 2] });
  });

  t.test('two databases do not see each other', async (t) => {
    const other = kvstore('other', 'kv', redis.url);
    await kv.set('shared-name', 'mine');
    t.equal(await other.get('shared-name'), null);
    await other.set('shared-name', 'theirs');
    t.equal(await kv.get('shared-name'), 'mine');
  });

  t.test('setWithTtl and expire', async (t) => {
    await kv.setWithTtl('short', 'v', 30);
    const pttl = await raw.pttl('app:short');
    t.ok(pttl > 29_000 && pttl <= 30_000, `expires in 30 s (${pttl} ms)`);
    t.equal(await kv.expire('short', 0.5), true);
    t.ok((await raw.pttl('app:short')) <= 500);
    t.equal(await kv.expire('nope', 10), false, 'no such key');
    await t.rejects(kv.setWithTtl('bad', 'v', 0), { code: 'INVALID_QUERY' });
    await t.rejects(kv.setWithTtl('bad', 'v', -1), { code: 'INVALID_QUERY' });
  });

  t.test('incr counts from zero, atomically', async (t) => {
    t.equal(await kv.incr('hits'), 1);
    await Promise.all(Array.from({ length: 99 }, () => kv.incr('hits')));
    t.equal(await kv.get('hits'), '100');
  });

  t.test('scanKeys matches a glob, without the namespace, sorted', async (t) => {
    const ns = kvstore('scan', 'kv', redis.url);
    for (let i = 0; i < 2500; i++) await ns.set(`user:${i}`, 'x');
    await ns.set('other', 'x');
    await raw.set('scanx:user:1', 'not ours');
    const keys = await ns.scanKeys('user:*');
    t.equal(keys.length, 2500, 'every key, over several SCAN pages');
    t.ok(keys.every((k) => k.startsWith('user:')));
    t.same(await ns.scanKeys('oth*'), ['other']);
    t.equal((await ns.scanKeys()).length, 2501);
  });

  t.test('setNxWithTtl and deleteIfEquals', async (t) => {
    t.equal(await kv.setNxWithTtl('once', 'a', 10), true);
    t.equal(await kv.setNxWithTtl('once', 'b', 10), false, 'set only if absent');
    t.equal(await kv.get('once'), 'a');
    const pttl = await raw.pttl('app:once');
    t.ok(pttl > 0 && pttl <= 10_000, 'always with an expiry');
    t.equal(await kv.deleteIfEquals('once', 'b'), false, 'not the holder: kept');
    t.equal(await kv.get('once'), 'a');
    t.equal(await kv.deleteIfEquals('once', 'a'), true);
    t.equal(await kv.exists('once'), false);
    t.equal(await kv.deleteIfEquals('once', 'a'), false);
  });

  t.test('methods of another backend throw NOT_IMPLEMENTED naming it', async (t) => {
    await t.rejects(kv.findOne('c', {}), { code: 'NOT_IMPLEMENTED', message: /docdb/ });
    await t.rejects(kv.insertOne('c', {}), { code: 'NOT_IMPLEMENTED' });
    await t.rejects(kv.findNodes(class {} as never), { code: 'NOT_IMPLEMENTED' });
    const doc = kvstore('app', 'docdb', ':memory:');
    await t.rejects(doc.setWithTtl('k', 'v', 1), { code: 'NOT_IMPLEMENTED', message: /kv backend/ });
    await t.rejects(doc.scanKeys('*'), { code: 'NOT_IMPLEMENTED' });
    await t.rejects(mutex(doc as never, 'k'), { code: 'NOT_IMPLEMENTED' }, 'docdb has no locks');
    await t.rejects(debounce(doc as never, 'k', 100), { code: 'NOT_IMPLEMENTED' });
    t.throws(() => kvstore('app', 'cloudstore'), { code: 'NOT_IMPLEMENTED', message: /not provided/ });
    t.throws(() => kvstore('app', 'nosuch' as never), { code: 'INVALID_NAME' });
    t.throws(() => kvstore('../x', 'kv', redis.url), { code: 'INVALID_NAME' });
    t.throws(() => kvstore('svc', 'kv', redis.url), { code: 'RESERVED_COLLECTION' }, "the runtime's keys are out of reach");
  });

  t.test('without a URL kv says how to configure it', async (t) => {
    const before = process.env.KV_URL;
    delete process.env.KV_URL;
    t.teardown(() => void (before === undefined ? delete process.env.KV_URL : (process.env.KV_URL = before)));
    await t.rejects(kvstore('app', 'kv').get('x'), { code: 'KV_NOT_CONFIGURED', message: /KV_URL/ }, 'at the first call (a handle made at module load serves the runtime that runs it)');
    process.env.KV_URL = redis.url;
    const fromEnv = kvstore('app', 'kv');
    await fromEnv.set('env', 'yes');
    t.equal(await raw.get('app:env'), 'yes', 'KV_URL from the environment');
  });

  t.test('mutex: held, released only by its holder, LOCK_TIMEOUT when held', async (t) => {
    const lock = await mutex(kv, 'job', { ttlMs: 5_000 });
    t.equal(await raw.get('app:lock:job'), lock.fence, 'the key holds the fence');
    t.match(lock.fence, /^[0-9a-f]{32}$/);
    const started = Date.now();
    await t.rejects(mutex(kv, 'job', { retry: { timeoutMs: 150 } }), { code: 'LOCK_TIMEOUT' });
    t.ok(Date.now() - started >= 150, 'kept trying until its budget');
    await t.rejects(mutex(kv, 'job', { retry: false }), { code: 'LOCK_TIMEOUT' }, 'one attempt');
    t.equal(await lock.extend(8_000), true);
    t.ok((await raw.pttl('app:lock:job')) > 5_000, 'extended');
    t.equal(await lock.release(), true);
    t.equal(await lock.release(), false, 'twice: already released');
    // A holder whose lock expired and was taken by another does not release the other's.
    const a = await mutex(kv, 'short', { ttlMs: 50 });
    const b = await mutex(kv, 'short', { ttlMs: 5_000, retry: { timeoutMs: 2_000 } });
    t.not(a.fence, b.fence);
    t.equal(await a.release(), false, 'expired: not ours any more');
    t.equal(await a.extend(), false);
    t.equal(await raw.get('app:lock:short'), b.fence, "the new holder's lock stands");
    {
      await using _held = b;
    }
    t.equal(await raw.exists('app:lock:short'), 0, 'await using released it');
  });

  t.test('mutex waits and takes the lock once it is released', async (t) => {
    const first = await mutex(kv, 'handoff');
    const second = mutex(kv, 'handoff');
    await first.release();
    const got = await second;
    t.not(got.fence, first.fence);
    await got.release();
  });

  t.test('debounce: one true per window, across callers', async (t) => {
    const results = await Promise.all(Array.from({ length: 20 }, () => debounce(kv, 'digest', 10_000)));
    t.equal(results.filter(Boolean).length, 1);
    t.equal(await debounce(kv, 'other-window', 10_000), true);
  });

  t.test('an unreachable Redis answers KV_UNAVAILABLE, not a hang', async (t) => {
    const dead = kvstore('app', 'kv', 'redis://127.0.0.1:1');
    await t.rejects(dead.get('x'), { code: 'KV_UNAVAILABLE' });
  });
});

t.test('kv errors: data refused is INVALID_QUERY, Redis gone fails at once', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  t.teardown(() => closeKvstores());
  const kv = kvstore('errs', 'kv', redis.url);
  await kv.set('word', 'hello');
  await t.rejects(kv.incr('word'), { code: 'INVALID_QUERY', message: /not an integer/ }, 'INCR of a word: the data, not an outage');
  await t.rejects(kv.getJson('word'), { code: 'INVALID_QUERY', message: /not JSON/ });
  await redis.stop();
  await t.rejects(kv.get('word'), { code: 'KV_UNAVAILABLE' });
  const started = Date.now();
  for (let i = 0; i < 5; i++) await t.rejects(kv.get('word'), { code: 'KV_UNAVAILABLE' });
  t.ok(Date.now() - started < 2_500, `five calls while it is down answered at once (${Date.now() - started} ms)`);
});

t.test('lock and TTL arguments out of range are INVALID_QUERY, never a hang or an outage', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  t.teardown(() => closeKvstores());
  const kv = kvstore('args', 'kv', redis.url);
  await t.rejects(mutex(kv, 'k', { ttlMs: 1e300 }), { code: 'INVALID_QUERY' });
  await t.rejects(mutex(kv, 'k', { retry: { timeoutMs: Number.NaN } }), { code: 'INVALID_QUERY' });
  await t.rejects(debounce(kv, 'k', Number.POSITIVE_INFINITY), { code: 'INVALID_QUERY' });
  await t.rejects(kv.setWithTtl('k', 'v', 1e300), { code: 'INVALID_QUERY' });
  await t.rejects(kv.expire('k', Number.NaN), { code: 'INVALID_QUERY' });
  const lock = await mutex(kv, 'k');
  await t.rejects(lock.extend(1e300), { code: 'INVALID_QUERY' });
  t.equal(await lock.release(), true);
});
