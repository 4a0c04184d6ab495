// The stream backends of the event broker: one conformance suite, in memory and on a real Redis; and how RedisStreams fails while Redis is down.
import t from 'tap';
import { MemoryStreams } from '../../../stores/memory/streams.ts';
import { RedisStreams } from '../../../stores/redis/streams.ts';
import { skipRedis, startRedis } from '../../kit/index.ts';
import { streamsConformance } from '../../conformance/streams.ts';

/** Poll `check` until it holds, or give up after `ms` (a reconnect takes its backoff: no event tells the test). */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

streamsConformance(t, 'MemoryStreams', async () => {
  const backend = new MemoryStreams();
  return { backend, cleanup: () => backend.close() };
});

if (skipRedis) {
  t.comment(`SKIPPED LOUDLY: ${skipRedis}`);
  t.pass(`RedisStreams skipped: ${skipRedis}`);
} else {
  t.test('RedisStreams', async (t) => {
    const server = await startRedis(t);
    streamsConformance(t, 'RedisStreams', async () => {
      const backend = new RedisStreams({ url: server.url, name: 'streams-test' });
      return { backend, cleanup: () => backend.close() };
    });
  });

  t.test('RedisStreams: while Redis is down commands reject at once; they work again when it is back', async (t) => {
    const server = await startRedis(t);
    const errors: unknown[] = [];
    const streams = new RedisStreams({ url: server.url, name: 'streams-outage', onError: (e) => errors.push(e) });
    t.teardown(() => streams.close());
    t.equal(streams.kind, 'redis');
    await streams.ensureGroup('s', 'g', 'earliest');
    await streams.add('s', 'before', 100);
    // A reader's blocking connection, made before the outage.
    t.same((await streams.read('s', 'g', 'c', 10, 50)).map((e) => e.payload), ['before']);

    await server.stop();
    const started = Date.now();
    await t.rejects(streams.add('s', 'during', 100));
    t.ok(Date.now() - started < 500, `add rejected quickly (${Date.now() - started} ms)`);
    const reading = Date.now();
    await t.rejects(streams.read('s', 'g', 'c', 10, 1_000));
    t.ok(Date.now() - reading < 500, `a blocking read rejected quickly (${Date.now() - reading} ms)`);
    await t.rejects(streams.read('s', 'g', 'c2', 10, 1_000), 'also for a reader with no connection yet');
    await t.rejects(streams.info('s'));
    t.ok(await eventually(async () => errors.length >= 1, 2_000), 'the outage was reported (a reconnect attempt failed)');

    await server.restart();
    t.ok(await eventually(async () => typeof (await streams.add('s', 'after', 100)) === 'string', 5_000), 'add works again');
    // The restarted Redis kept nothing (no persistence): the group is made again.
    t.equal(await streams.ensureGroup('s', 'g', 'earliest'), true);
    t.ok(await eventually(async () => (await streams.read('s', 'g', 'c', 10, 100)).some((e) => e.payload === 'after'), 5_000), 'a blocking read works again');
  });

  t.test('RedisStreams: addMany is one command for the batch; a refusal says what was appended (nothing here) and accounts nothing', async (t) => {
    const server = await startRedis(t);
    const client = server.client();
    const streams = new RedisStreams({ url: server.url, name: 'streams-many' });
    t.teardown(() => streams.close());
    await streams.add('warm', 'x', 10, 1_000); // the script is loaded: the count below is the batch's alone
    await client.call('CONFIG', 'RESETSTAT');
    const batch = Array.from({ length: 300 }, (_, i) => `e${i}`);
    const { ids } = await streams.addMany('s', batch, 10_000, 1_000_000);
    t.equal(ids.length, 300);
    const stats = String(await client.call('INFO', 'commandstats'));
    t.match(stats, /cmdstat_evalsha:calls=1,/, 'one script call');
    t.notMatch(stats, /cmdstat_eval:/, 'sent by its hash');
    t.equal(Number(await client.hget('s bytes', 'a')), batch.reduce((n, p) => n + p.length, 0), 'the account ends where the last entry does');

    await client.set('not-a-stream', 'x');
    const refused = await streams.addMany('not-a-stream', ['a', 'b'], 10_000, 1_000_000);
    t.same(refused.ids, [], 'nothing appended');
    t.match(refused.error?.message, /WRONGTYPE/);
    t.equal(await client.exists('not-a-stream bytes'), 0, 'nothing accounted');
    await t.rejects(streams.add('not-a-stream', 'a', 10_000, 1_000_000), /WRONGTYPE/, 'add of one rejects with the refusal');

    await server.stop();
    const started = Date.now();
    await t.rejects(streams.addMany('s', ['during'], 10_000, 1_000_000));
    t.ok(Date.now() - started < 500, `rejected quickly while Redis is down (${Date.now() - started} ms)`);
  });

  t.test('RedisStreams: a blocked read rejects when Redis goes away, rather than hang', async (t) => {
    const server = await startRedis(t);
    const streams = new RedisStreams({ url: server.url, name: 'streams-kill' });
    t.teardown(() => streams.close());
    await streams.ensureGroup('s', 'g', 'latest');
    await streams.read('s', 'g', 'c', 10, 20); // the reader's connection is up
    const started = Date.now();
    const reading = streams.read('s', 'g', 'c', 10, 10_000);
    const outcome = reading.then(() => undefined, (e: unknown) => e); // it may settle while the kill is awaited
    await new Promise((r) => setTimeout(r, 50));
    await server.kill();
    t.type(await outcome, Error, 'rejected');
    t.ok(Date.now() - started < 2_000, `rejected quickly (${Date.now() - started} ms)`);
  });
}
