import t, { type Test } from 'tap';
import type { Redis } from 'ioredis';
import { RedisActivationLease, type RedisActivationLeaseOptions } from '../../../cluster/lease.ts';
import { SvcError } from '../../../kernel/index.ts';
import { openRedis, whenReady } from '../../../stores/redis/connection.ts';
import { deferred, skipRedis, startRedis, type RedisServer } from '../../kit/index.ts';

const CLUSTER = 'test';
const member = (id: string): string => `svc:{${CLUSTER}}:member:${id}`;

/** A process's lease, its own connection; its member key set (alive). */
async function processLease(t: Test, server: RedisServer, processId: string, options: Partial<RedisActivationLeaseOptions> = {}) {
  const redis = openRedis(server.url, { name: `lease-${processId}` });
  t.teardown(() => redis.disconnect());
  await whenReady(redis, 5_000);
  await redis.set(member(processId), '{}', 'PX', 60_000);
  const waits: string[] = [];
  const waiting = deferred<string>();
  const lease = new RedisActivationLease({
    redis,
    cluster: CLUSTER,
    processId,
    onWait: (kind, key, holder) => {
      waits.push(`${kind}/${key}@${holder}`);
      waiting.resolve(holder);
    },
    ...options,
  });
  t.teardown(() => lease.destroy());
  return { redis, lease, waits, waiting: waiting.promise };
}

t.test('a second process waits until the first releases', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const check = server.client();
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2', { retryMs: 60_000 }); // no polling: only the release message can wake it
  await p2.lease.start(); // heard from now on
  await p1.lease.acquire('partition', 'root-a');
  t.equal(await check.get(p1.lease.keyOf('partition', 'root-a')), 'p1');
  t.equal(p1.lease.keyOf('partition', 'root-a'), 'svc:{test}:lease:partition/root-a');
  let granted = false;
  const second = p2.lease.acquire('partition', 'root-a').then(() => (granted = true));
  t.equal(await p2.waiting, 'p1', 'p2 found it held by p1');
  t.notOk(granted, 'and waits');
  await p2.lease.acquire('partition', 'root-b'); // another key is free
  t.notOk(granted);
  p1.lease.release('partition', 'root-a');
  await second;
  t.equal(await check.get(p1.lease.keyOf('partition', 'root-a')), 'p2', 'p2 holds it now');
  t.same(p2.waits, ['partition/root-a@p1'], 'one wait reported');
});

t.test('a dead holder (no member key) is taken over at once', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const check = server.client();
  const p1 = await processLease(t, server, 'p1', { timeoutMs: 1_000 });
  await check.set(p1.lease.keyOf('partition', 'root-a'), 'p-dead');
  await p1.lease.acquire('partition', 'root-a');
  t.equal(await check.get(p1.lease.keyOf('partition', 'root-a')), 'p1');
  t.same(p1.waits, [], 'no wait');

  // A holder whose membership lapses while we wait is taken over by the next check.
  const p2 = await processLease(t, server, 'p2', { retryMs: 5 });
  const second = p2.lease.acquire('partition', 'root-a');
  await p2.waiting;
  await check.del(member('p1'));
  await second;
  t.equal(await check.get(p1.lease.keyOf('partition', 'root-a')), 'p2');
});

t.test('a release by a process that does not hold the lease does nothing', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const check = server.client();
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2');
  const key = p1.lease.keyOf('partition', 'root-a');
  // p2 holds it, dies (member key gone), p1 takes over, p2 comes back and releases what it thinks it holds.
  await p2.lease.acquire('partition', 'root-a');
  await check.del(member('p2'));
  await p1.lease.acquire('partition', 'root-a');
  await check.set(member('p2'), '{}');
  p2.lease.release('partition', 'root-a');
  await p2.redis.ping(); // the release ran before this on p2's connection
  t.equal(await check.get(key), 'p1', 'still p1');
  p2.lease.release('partition', 'never-held');
  p2.lease.release('partition', 'root-a'); // twice
  await p2.redis.ping();
  t.equal(await check.get(key), 'p1');
});

t.test('held twice in one process: given back in Redis with the last release', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const check = server.client();
  const p1 = await processLease(t, server, 'p1');
  const key = p1.lease.keyOf('partition', 'root-a');
  await p1.lease.acquire('partition', 'root-a');
  await p1.lease.acquire('partition', 'root-a');
  p1.lease.release('partition', 'root-a');
  await p1.redis.ping();
  t.equal(await check.get(key), 'p1', 'one activation still holds it');
  p1.lease.release('partition', 'root-a');
  await p1.redis.ping();
  t.equal(await check.exists(key), 0, 'released');
  t.same(p1.lease.holding(), []);
});

t.test('an acquire gives up after timeoutMs', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2', { timeoutMs: 150 });
  await p1.lease.acquire('partition', 'root-a');
  await t.rejects(p2.lease.acquire('partition', 'root-a'), { code: 'SVC_ERR_LEASE_TIMEOUT', message: /held by p1/ });
  t.same(p2.lease.holding(), []);
});

t.test('Redis down: an acquire is refused at once (no waiting out an outage), and granted once Redis is back', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const p1 = await processLease(t, server, 'p1'); // the default deadline: 10 s
  const closed = new Promise((resolve) => p1.redis.once('close', resolve));
  await server.stop();
  await closed;
  const started = Date.now();
  await t.rejects(p1.lease.acquire('partition', 'root-a'), { code: 'SVC_ERR_REDIS_UNREACHABLE', status: 503, message: /Redis is unreachable/ });
  t.ok(Date.now() - started < 1000, `refused at once, not after the 10 s deadline (${Date.now() - started} ms)`);
  t.same(p1.lease.holding(), []);
  await server.restart();
  await whenReady(p1.redis, 10_000);
  await p1.redis.set(member('p1'), '{}', 'PX', 60_000); // an empty Redis: the membership key again
  await p1.lease.acquire('partition', 'root-a');
  t.same(p1.lease.holding(), ['partition/root-a']);
});

t.test('a command that fails while the connection looks up fails the acquire at once', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  // A server that stops answering (paused): the connection stays open, the command times out.
  const redis = openRedis(server.url, { name: 'lease-paused', commandTimeoutMs: 200 });
  t.teardown(() => redis.disconnect());
  await whenReady(redis, 5_000);
  const lease = new RedisActivationLease({ redis, cluster: CLUSTER, processId: 'p1', subscriber: false });
  t.teardown(() => lease.destroy());
  const pid = Number((await redis.info('server')).match(/process_id:(\d+)/)?.[1]);
  process.kill(pid, 'SIGSTOP');
  try {
    const started = Date.now();
    await t.rejects(lease.acquire('partition', 'root-a'), { code: 'SVC_ERR_REDIS_UNREACHABLE', message: /did not answer/ });
    t.ok(Date.now() - started < 2000, `after one command's timeout, not the lease's deadline (${Date.now() - started} ms)`);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
});

t.test('a release that cannot reach Redis is retried once it is back', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const check = server.client();
  const errors: unknown[] = [];
  const p1 = await processLease(t, server, 'p1', { onError: (e) => errors.push(e) });
  await p1.lease.acquire('partition', 'root-a');
  // Our connection drops (the server keeps its data) and comes back after the backoff.
  const redis: Redis = p1.redis;
  const closed = new Promise((resolve) => redis.once('close', resolve));
  redis.disconnect(true);
  await closed;
  p1.lease.release('partition', 'root-a');
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(errors.length, 1, 'the failure was reported');
  t.equal(await check.get(p1.lease.keyOf('partition', 'root-a')), 'p1', 'still ours in Redis');
  await whenReady(redis, 10_000); // the lease's own 'ready' listener ran first and sent the release
  await redis.ping();
  t.equal(await check.exists(p1.lease.keyOf('partition', 'root-a')), 0, 'released once back');
});

t.test('releaseAll gives back every lease; a waiter gets it', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const check = server.client();
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2');
  await p1.lease.acquire('partition', 'a');
  await p1.lease.acquire('partition', 'a');
  await p1.lease.acquire('walker', 'b');
  const second = p2.lease.acquire('partition', 'a');
  await p2.waiting;
  await p1.lease.releaseAll();
  t.same(p1.lease.holding(), []);
  t.equal(await check.exists(p1.lease.keyOf('walker', 'b')), 0);
  await second;
  t.equal(await check.get(p1.lease.keyOf('partition', 'a')), 'p2');
});

t.test('destroy rejects waiting acquires', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2');
  await p1.lease.acquire('partition', 'a');
  const second = p2.lease.acquire('partition', 'a');
  await p2.waiting;
  p2.lease.destroy();
  await t.rejects(second, { code: 'SVC_ERR_SHUTDOWN' });
});

t.test('interrupt fails the acquires under way at once (the process lost its membership); later ones go on', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2');
  await p1.lease.acquire('partition', 'a');
  const second = p2.lease.acquire('partition', 'a');
  await p2.waiting;
  const started = Date.now();
  p2.lease.interrupt(new SvcError('SVC_ERR_NOT_MEMBER', 'lost its lease', { status: 503 }));
  await t.rejects(second, { code: 'SVC_ERR_NOT_MEMBER' });
  t.ok(Date.now() - started < 1000, 'at once, not at the deadline');
  t.same(p2.lease.holding(), []);
  await p2.lease.acquire('partition', 'b');
  t.same(p2.lease.holding(), ['partition/b'], 'an acquire after the interruption is granted');
});

t.test('without a subscriber, waiting acquires poll', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const p1 = await processLease(t, server, 'p1');
  const p2 = await processLease(t, server, 'p2', { subscriber: false, retryMs: 5 });
  await p1.lease.acquire('partition', 'a');
  const second = p2.lease.acquire('partition', 'a');
  await p2.waiting;
  p1.lease.release('partition', 'a');
  await second;
  t.same(p2.lease.holding(), ['partition/a']);
});
