import t, { type Test } from 'tap';
import type { Redis } from 'ioredis';
import { Invalidation, parseEvent, type InvalidationEvent } from '../../../cluster/invalidation.ts';
import { openRedis, whenReady } from '../../../stores/redis/connection.ts';
import { skipRedis, startRedis, type RedisServer } from '../../kit/index.ts';

const CHANNEL = 'svc:anchor:invalidate';

/** One process's channel, recording what it hears; `until(root)` resolves once an event for `root` arrived. */
async function processChannel(t: Test, server: RedisServer, processId: string, subscriber?: Redis) {
  const redis = openRedis(server.url, { name: `l1-${processId}` });
  t.teardown(() => redis.disconnect());
  await whenReady(redis, 5_000);
  const errors: unknown[] = [];
  const channel = new Invalidation({ redis, subscriber, channel: CHANNEL, processId, onError: (e) => errors.push(e) });
  t.teardown(() => channel.close());
  const heard: InvalidationEvent[] = [];
  const waiting = new Map<string, () => void>();
  await channel.subscribe((event) => {
    heard.push(event);
    waiting.get(event.root)?.();
  });
  const until = (root: string): Promise<void> =>
    heard.some((e) => e.root === root) ? Promise.resolve() : new Promise((resolve) => waiting.set(root, resolve));
  return { redis, channel, heard, until, errors };
}

t.test('two processes hear each other exactly once, never themselves', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processChannel(t, server, 'p-a');
  const b = await processChannel(t, server, 'p-b');
  await a.channel.publish({ t: 'claim', root: 'r1', by: 'p-a' });
  await b.channel.publish({ t: 'delete', root: 'r2', by: 'p-b' });
  await a.channel.publish({ t: 'claim', root: 'r3' }); // by defaults to the process
  // A marker from a third party, after everything: when both heard it, they heard all before it.
  await server.client().publish(CHANNEL, JSON.stringify({ t: 'claim', root: 'marker', by: 'tester' }));
  await Promise.all([a.until('marker'), b.until('marker')]);
  t.same(a.heard, [
    { t: 'delete', root: 'r2', by: 'p-b' },
    { t: 'claim', root: 'marker', by: 'tester' },
  ]);
  t.same(b.heard, [
    { t: 'claim', root: 'r1', by: 'p-a' },
    { t: 'claim', root: 'r3', by: 'p-a' },
    { t: 'claim', root: 'marker', by: 'tester' },
  ]);
  t.same([...a.errors, ...b.errors], []);
});

t.test('garbage on the channel is ignored', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processChannel(t, server, 'p-a');
  const raw = server.client();
  const junk = ['not json', '', 'null', '42', '[]', '"claim"', '{"t":"x","root":"r","by":"q"}', '{"t":"claim","root":"","by":"q"}', '{"t":"claim","root":7,"by":"q"}', '{"t":"delete","root":"r"}', '{"t":"claim","root":"r","by":""}'];
  for (const message of junk) await raw.publish(CHANNEL, message);
  await raw.publish(CHANNEL, JSON.stringify({ t: 'delete', root: 'marker', by: 'q' }));
  await a.until('marker');
  t.same(a.heard, [{ t: 'delete', root: 'marker', by: 'q' }]);
  t.equal(a.channel.malformed, junk.length, 'counted');
  t.same(a.errors, [], 'not errors');
});

t.test('a listener that throws is reported; the others still hear', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processChannel(t, server, 'p-a');
  await a.channel.subscribe(() => {
    throw new Error('listener broke');
  });
  await server.client().publish(CHANNEL, JSON.stringify({ t: 'claim', root: 'marker', by: 'q' }));
  await a.until('marker');
  t.equal(a.heard.length, 1);
  t.match(a.errors, [{ message: 'listener broke' }]);
});

t.test('publish never throws: a failure is reported', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const a = await processChannel(t, server, 'p-a');
  await server.stop();
  await a.channel.publish({ t: 'claim', root: 'r1' });
  t.equal(a.errors.length, 1, 'reported');
});

t.test('events are parsed strictly', async (t) => {
  t.same(parseEvent('{"t":"claim","root":"r","by":"p","extra":1}'), { t: 'claim', root: 'r', by: 'p' }, 'extra fields dropped');
  t.equal(parseEvent('{"t":"claim","root":"r"'), undefined);
});

t.test('the subscription comes back after Redis restarts', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const subscriber = openRedis(server.url, { name: 'l1-sub' });
  t.teardown(() => subscriber.disconnect());
  const a = await processChannel(t, server, 'p-a', subscriber);
  const closed = new Promise((resolve) => subscriber.once('close', resolve));
  await server.restart();
  await closed;
  await whenReady(subscriber, 10_000);
  await subscriber.ping(); // ioredis sent SUBSCRIBE again on 'ready', before this
  await server.client().publish(CHANNEL, JSON.stringify({ t: 'claim', root: 'back', by: 'q' }));
  await a.until('back');
  t.same(a.heard, [{ t: 'claim', root: 'back', by: 'q' }]);
  await a.channel.close();
  t.equal(subscriber.status, 'ready', 'a subscriber given is not ours to close');
});
