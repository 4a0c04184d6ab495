// Event streaming with `svc start` processes: memory streams shared by a process's worker threads;
// Redis Streams (a real redis-server) shared by processes — an event published on one process reaches
// a subscriber on another, a consumer killed with SIGKILL mid-batch loses nothing (its own pending
// entries are read back at once by a process restarted on the same folder, or claimed by another
// process after the visibility timeout), publishing while Redis is down is buffered and delivered once
// it is back, and streams are trimmed to max_len.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { post, startServer, tokenFor, skipRedis, startRedis, startCluster, type RedisServer, type Server } from '../../kit/index.ts';
import { WalkerSocket } from 'svc/client';

t.setTimeout(300_000);
const entry = new URL('../../fixtures/events-app.ts', import.meta.url).pathname;

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const seen = async (server: Server, topic: string) => (await post(`${server.url}/walker/ListSeen`, { topic })).body.data.reports as { key: string; attempt?: number; note?: string }[];
const handled = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => line.split('\t') as [string, string]);
const handledKeys = (file: string) => handled(file).map(([key]) => key);

t.test('memory streams: events published on any worker thread reach the subscription', async (t) => {
  const server = await startServer({ entry, workers: 2, env: { SVC_EVENTS_ENABLED: 'true' } });
  t.teardown(() => server.stop());
  // Requests land on both threads (uWebSockets.js shares the port); every event reaches the one consumer.
  await Promise.all(Array.from({ length: 20 }, (_, i) => post(`${server.url}/function/emit`, { topic: 'orders', key: `m${i}` })));
  const got = await until(() => seen(server, 'orders'), (r) => r.length >= 20);
  t.equal(new Set(got.map((s) => s.key)).size, 20);
  t.match(server.output(), /event streaming on: memory broker, 7 subscriptions/);
});

t.test('Redis Streams', { skip: skipRedis }, async (t) => {
  // Each case has a Redis of its own (one stops it, others count what a stream holds), so they run side by side:
  // most of their time is waiting for `svc start` processes and timeouts, not the CPU.
  t.jobs = 3;
  const env = (redis: RedisServer, extra: Record<string, string> = {}) => ({ SVC_EVENTS_ENABLED: 'true', SVC_EVENTS_URL: redis.url, ...extra });

  t.test('an event published on one process reaches a subscriber on another', async (t) => {
    const redis = await startRedis(t);
    const a = await startServer({ entry, env: env(redis, { SVC_EVENTS_CONSUMER_GROUP: 'group-a' }) });
    t.teardown(() => a.stop());
    const b = await startServer({ entry, env: env(redis, { SVC_EVENTS_CONSUMER_GROUP: 'group-b' }) });
    t.teardown(() => b.stop());
    t.match(a.output(), /event streaming on: redis broker, 7 subscriptions/);
    t.notMatch(a.output(), new RegExp(redis.url.replace(/[/.]/g, '\\$&') + '.*password'), 'no credentials');
    await post(`${a.url}/walker/PlaceOrder`, { key: 'from-a' });
    const onB = await until(() => seen(b, 'orders'), (r) => r.length > 0);
    t.same(onB.map((s) => s.key), ['from-a'], 'B (its own group) handled what A published');
    const onA = await until(() => seen(a, 'orders'), (r) => r.length > 0);
    t.same(onA.map((s) => s.key), ['from-a'], 'and A (group-a) too');
    const admin = await tokenFor('root', { server: a, role: 'admin' });
    // A subscriber on B pushes to B's WebSocket clients what A published.
    const feed = await WalkerSocket.connect(b.url, 'Feed');
    t.teardown(() => feed.close());
    const pushed = new Promise<unknown>((resolve) => feed.onBroadcast((data) => resolve(data)));
    await post(`${a.url}/function/emitFeed`, { text: 'to the sockets of B' });
    t.match(await pushed, { reports: [{ text: 'to the sockets of B' }] }, 'published on A, pushed to a WebSocket client of B by its subscriber');
    const stats = (await (await fetch(`${a.url}/admin/events`, { headers: { authorization: `Bearer ${admin}` } })).json()) as any;
    t.match(stats.data, { broker: 'redis', consumer_group: 'group-a' });
    const orders = stats.data.topics.find((x: { topic: string }) => x.topic === 'orders');
    t.same(orders.groups.map((g: { name: string }) => g.name).sort(), ['group-a', 'group-b']);
  });

  t.test('on Redis too: pull with ack, redelivery after the visibility timeout, retries and the dead-letter topic', async (t) => {
    const redis = await startRedis(t);
    const server = await startServer({ entry, env: env(redis, { SVC_EVENTS_CONSUMER_GROUP: 'pulls', SVC_EVENTS_VISIBILITY_TIMEOUT_SECONDS: '0.5' }) });
    t.teardown(() => server.stop());
    await post(`${server.url}/function/emit`, { topic: 'redis-jobs', key: 'r', count: 3 });
    const first = (await post(`${server.url}/function/pull`, { topic: 'redis-jobs', max: 2 })).body.data.result;
    t.equal(first.kind, 'redis');
    t.same(first.events.map((e: { key: string }) => e.key), ['r-0', 'r-1']);
    const unacked = (await post(`${server.url}/function/pull`, { topic: 'redis-jobs', max: 5, ack: false })).body.data.result;
    t.same(unacked.events.map((e: { key: string }) => e.key), ['r-2']);
    const again = await until(
      async () => (await post(`${server.url}/function/pull`, { topic: 'redis-jobs', max: 5 })).body.data.result.events as { key: string; id: string }[],
      (r) => r.length > 0,
    );
    t.same(again.map((e) => [e.key, e.id]), [['r-2', unacked.events[0].id]], 'the same event, redelivered once the visibility timeout passed');
    await post(`${server.url}/function/emit`, { topic: 'poison', key: 'rp' });
    const dead = await until(() => seen(server, 'poison.dlq'), (r) => r.some((s) => s.key === 'rp'));
    t.equal((dead.find((s) => s.key === 'rp') as { note?: string }).note, 'Error: poison pill|3|poison');
    const tries = (await seen(server, 'poison')).filter((s) => s.key === 'rp') as { attempt?: number }[];
    t.same(tries.map((s) => s.attempt).sort(), [1, 2, 3], 'exactly max_attempts tries');
  });

  t.test('SIGKILL mid-batch: restarted on the same folder, the process takes back its own pending entries at once', async (t) => {
    const redis = await startRedis(t);
    const file = join(mkdtempSync(join(tmpdir(), 'svc-events-')), 'handled');
    writeFileSync(file, '');
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-data-'));
    // A visibility timeout far longer than the test: only the restarted consumer's own re-read can finish it.
    const opts = env(redis, { SVC_DATA_DIR: dataDir, SVC_TEST_EVENTS_FILE: file, SVC_EVENTS_VISIBILITY_TIMEOUT_SECONDS: '600', SVC_EVENTS_CONSUMER_GROUP: 'kill-same' });
    const first = await startServer({ entry, env: opts });
    t.teardown(() => first.stop('SIGKILL'));
    await post(`${first.url}/function/emit`, { topic: 'slow', key: 's', count: 40, ms: 50 });
    await until(async () => handledKeys(file).length, (n) => n >= 4);
    await first.stop('SIGKILL');
    const before = handledKeys(file).length;
    t.ok(before < 40, `killed mid-batch (${before} of 40 handled)`);
    const second = await startServer({ entry, env: opts });
    t.teardown(() => second.stop());
    const keys = await until(async () => new Set(handledKeys(file)), (s) => s.size >= 40, 60_000);
    t.equal(keys.size, 40, 'every event handled at least once, none lost');
  });

  t.test('SIGKILL mid-batch: another process claims the dead consumer’s entries after the visibility timeout', async (t) => {
    const redis = await startRedis(t);
    const file = join(mkdtempSync(join(tmpdir(), 'svc-events-')), 'handled');
    writeFileSync(file, '');
    const opts = env(redis, { SVC_TEST_EVENTS_FILE: file, SVC_EVENTS_VISIBILITY_TIMEOUT_SECONDS: '1', SVC_EVENTS_CONSUMER_GROUP: 'kill-other' });
    const first = await startServer({ entry, env: opts });
    t.teardown(() => first.stop('SIGKILL'));
    await post(`${first.url}/function/emit`, { topic: 'slow', key: 'c', count: 40, ms: 50 });
    await until(async () => handledKeys(file).length, (n) => n >= 4);
    await first.stop('SIGKILL');
    t.ok(handledKeys(file).length < 40, 'killed mid-batch');
    // Another data folder: another consumer name.
    const other = await startServer({ entry, env: opts });
    t.teardown(() => other.stop());
    const keys = await until(async () => new Set(handledKeys(file)), (s) => s.size >= 40, 60_000);
    t.equal(keys.size, 40, 'every event handled at least once, none lost');
  });

  t.test('Redis down while publishing: the request answers, events are counted and buffered, then delivered once Redis is back', async (t) => {
    const redis = await startRedis(t);
    const server = await startServer({ entry, env: env(redis, { SVC_EVENTS_CONSUMER_GROUP: 'outage' }) });
    t.teardown(() => server.stop());
    const admin = await tokenFor('root', { server, role: 'admin' });
    t.same((await post(`${server.url}/function/pull`, { topic: 'pulled' })).body.data.result.events, [], 'pull made its group');
    await redis.stop();
    for (let i = 0; i < 5; i++) t.equal((await post(`${server.url}/walker/PlaceOrder`, { key: `down-${i}` })).status, 200, 'fire-and-forget: the walker answers');
    const stats = (await (await fetch(`${server.url}/admin/events`, { headers: { authorization: `Bearer ${admin}` } })).json()) as any;
    t.equal(stats.ok, true, '/admin/events answers while Redis is down');
    t.match(stats.data, { topics: null, streams_error: /cannot be read/ });
    t.ok(stats.data.counters.publish_failures >= 1 && stats.data.counters.buffered === 5, JSON.stringify(stats.data.counters));
    await server.waitFor(/cannot be reached: published events wait in a local buffer/);
    await redis.restart();
    const got = await until(() => seen(server, 'orders'), (r) => r.filter((s) => s.key.startsWith('down-')).length >= 5);
    t.same(got.map((s) => s.key).filter((k) => k.startsWith('down-')).sort(), ['down-0', 'down-1', 'down-2', 'down-3', 'down-4'], 'all five delivered after Redis returned (empty)');
    await server.waitFor(/reached again: 5 buffered events sent/);
    await post(`${server.url}/function/emit`, { topic: 'pulled', key: 'p' });
    const pulled = await post(`${server.url}/function/pull`, { topic: 'pulled' });
    t.same(pulled.body.data.result.events.map((e: { key: string }) => e.key), ['p'], 'pull works again after Redis came back empty (its group made again)');
  });

  t.test('a cluster (KV_URL): the streams are its Redis, and every member consumes its share', async (t) => {
    const redis = await startRedis(t);
    const file = join(mkdtempSync(join(tmpdir(), 'svc-events-')), 'handled');
    writeFileSync(file, '');
    const cluster = await startCluster(t, 2, { redis, entry, env: { SVC_EVENTS_ENABLED: 'true', SVC_TEST_EVENTS_FILE: file, SVC_EVENTS_CONSUMER_GROUP: 'cluster' } });
    const [a, b] = cluster.members as [Server, Server];
    t.match(b.output(), /event streaming on: redis broker/);
    // More events than one member fetches ahead (32 per unit of concurrency: 128 for `slow`): the run's events leave
    // in one batch, appended in one step, and whichever member reads first cannot take them all.
    await post(`${a.url}/function/emit`, { topic: 'slow', key: 'k', count: 200, ms: 10 });
    // The group starts at the stream's earliest entry: whatever else is on `slow` is handled too; these are `k-*`.
    const all = await until(async () => handled(file).filter(([key]) => key.startsWith('k-')), (rows) => new Set(rows.map(([key]) => key)).size >= 200, 60_000);
    t.equal(new Set(all.map(([key]) => key)).size, 200, 'every event handled');
    t.equal(new Set(all.map(([, pid]) => pid)).size, 2, 'by both members');
    t.ok(b.proc.pid !== undefined && all.some(([, pid]) => pid === String(b.proc.pid)), 'published on A, handled on B too');
  });

  t.test('SIGTERM: fetching stops, what was fetched is handled and acknowledged, then the process exits', async (t) => {
    const redis = await startRedis(t);
    const file = join(mkdtempSync(join(tmpdir(), 'svc-events-')), 'handled');
    writeFileSync(file, '');
    const server = await startServer({ entry, env: env(redis, { SVC_TEST_EVENTS_FILE: file, SVC_EVENTS_CONSUMER_GROUP: 'drain' }) });
    t.teardown(() => server.stop('SIGKILL'));
    const client = redis.client();
    // The group starts at the earliest entry: whatever is already on `slow` is handled first (this Redis is the test's own).
    const before = Number(await client.xlen('svc:events:slow'));
    await until(async () => handledKeys(file).length, (n) => n >= before);
    await post(`${server.url}/function/emit`, { topic: 'slow', key: 'd', count: 8, ms: 1000 });
    // Concurrency 4, fetched ahead: all eight held (pending, not acknowledged yet).
    await until(async () => (await client.xpending('svc:events:slow', 'drain')) as [number], ([n]) => n === 8);
    const stopped = Date.now();
    const exit = server.stop('SIGTERM');
    await server.waitFor(/SIGTERM/);
    // Appended while it drains: not fetched any more.
    for (let i = 0; i < 3; i++) await client.xadd('svc:events:slow', '*', 'e', JSON.stringify({ specversion: '1.0', type: 'slow', id: `late-${i}`, source: 'test', data: { key: `late-${i}`, ms: 0 } }));
    t.equal(await exit, 0, 'exits cleanly');
    t.ok(Date.now() - stopped < 10_000, 'within the 10 s deadline');
    t.equal(handledKeys(file).filter((k) => k.startsWith('d-')).length, 8, 'the eight fetched finished');
    t.same(((await client.xpending('svc:events:slow', 'drain')) as [number])[0], 0, 'and were acknowledged');
    const groups = (await client.xinfo('GROUPS', 'svc:events:slow')) as unknown[][];
    const drain = groups.map((g) => Object.fromEntries(Array.from({ length: g.length / 2 }, (_, i) => [g[2 * i], g[2 * i + 1]]))).find((g) => g.name === 'drain');
    t.equal(drain?.lag, 3, 'the three appended during the drain were not fetched: they wait for the next consumer');
  });

  t.test('streams are trimmed to max_len (MAXLEN ~)', async (t) => {
    const redis = await startRedis(t);
    const server = await startServer({ entry, env: env(redis, { SVC_EVENTS_MAX_LEN: '100' }) });
    t.teardown(() => server.stop());
    await post(`${server.url}/function/emit`, { topic: 'trimmed', key: 't', count: 1000 });
    const client = redis.client();
    const admin = await tokenFor('root', { server, role: 'admin' });
    const counters = await until(
      async () => ((await (await fetch(`${server.url}/admin/events`, { headers: { authorization: `Bearer ${admin}` } })).json()) as any).data.counters,
      (c) => c.published >= 1000,
    );
    t.equal(counters.published, 1000);
    const length = await client.xlen('svc:events:trimmed');
    t.ok(length >= 100 && length < 300, `about 100 entries kept (${length})`);
  });
});
