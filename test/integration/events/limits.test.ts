// Event buffers bounded in bytes, not only in events, against a real `svc start` and a real
// redis-server: with Redis killed, 600 publishes of 900 KB grow the server process by at most 200 MB
// (before, 300 of them grew it by 226 MB: the buffer held 10,000 events of any size); what the
// buffer kept is delivered, all of it and in order, once Redis is back; an event over
// max_event_bytes is refused with 413 EVENT_TOO_LARGE from a request, counted (/admin/events and
// the svc_events_total metric) and logged without its content; with Redis up, a stream keeps at
// most max_stream_bytes of payloads however many entries MAXLEN would allow.
import t from 'tap';
import { post, startServer, tokenFor, skipRedis, startRedis, type Server } from '../../kit/index.ts';

t.setTimeout(600_000);
const entry = new URL('../../fixtures/events-app.ts', import.meta.url).pathname;
const KB900 = 'b'.repeat(900 * 1024);
const MB = 1024 * 1024;

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server process's resident memory, after a full collection (`SVC_EXPOSE_GC`), and its counters. */
async function stats(server: Server, admin: string): Promise<{ rss: number; counters: Record<string, number> }> {
  const auth = { headers: { authorization: `Bearer ${admin}` } };
  const mem = (await (await fetch(`${server.url}/admin/stats?gc=1`, auth)).json()) as { data: { rss_bytes: number } };
  const events = (await (await fetch(`${server.url}/admin/events`, auth)).json()) as { data: { counters: Record<string, number> } };
  return { rss: mem.data.rss_bytes, counters: events.data.counters };
}

/** Run `count` calls, `width` at a time. */
async function pool(count: number, width: number, call: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await call(next++);
  }));
}

t.test('with Redis down: 600 publishes of 900 KB stay within the byte bound; what was kept is delivered once Redis is back', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const server = await startServer({ entry, env: { SVC_EVENTS_ENABLED: 'true', SVC_EVENTS_URL: redis.url, SVC_EVENTS_CONSUMER_GROUP: 'limits', SVC_METRICS_ENABLED: 'true', SVC_EXPOSE_GC: '1' } });
  t.teardown(() => server.stop());
  const admin = await tokenFor('root', { server, role: 'admin' });
  // Warm: the route, the codec and the streams have run with big bodies once.
  for (let i = 0; i < 5; i++) t.equal((await post(`${server.url}/function/emitBlob`, { topic: 'warm', i, blob: KB900 })).status, 200);
  await until(() => stats(server, admin), (s) => (s.counters.published ?? 0) >= 5);
  const before = await stats(server, admin);

  await redis.kill();
  let peak = before.rss;
  await pool(600, 4, async (i) => {
    const res = await post(`${server.url}/function/emitBlob`, { topic: 'blobs', i, blob: KB900 });
    if (res.status !== 200) throw new Error(`publish ${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    if (i % 100 === 99) peak = Math.max(peak, (await stats(server, admin)).rss);
  });
  const after = await stats(server, admin);
  peak = Math.max(peak, after.rss);
  const grown = (peak - before.rss) / MB;
  t.ok(grown <= 200, `the process grew by ${grown.toFixed(0)} MB at most (rss ${(before.rss / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} MB) for 600 × 900 KB published while Redis was down`);
  const { buffered, buffered_bytes: bytes, dropped } = after.counters as { buffered: number; buffered_bytes: number; dropped: number };
  t.ok(bytes <= 64 * MB, `the buffer holds ${buffered} events, ${(bytes / MB).toFixed(1)} MB: within the default 64 MiB`);
  t.ok(buffered >= 60, 'and it was used: as many as fit');
  t.equal(buffered + dropped, 600, 'every publish is either buffered or dropped and counted');
  await server.waitFor(/the local event buffer is full/);
  t.notMatch(server.output(), /bbbbbbbbbb/, 'no event content in the log');

  // Bigger than max_event_bytes (1 MiB by default): refused from the request, counted, logged without content.
  const big = await post(`${server.url}/function/emitBlob`, { topic: 'blobs', i: -1, blob: 'z'.repeat(600 * 1024), times: 2 });
  t.equal(big.status, 413);
  t.match(big.body.error, { code: 'EVENT_TOO_LARGE', details: { topic: 'blobs', max_event_bytes: MB } });
  const refused = await stats(server, admin);
  t.equal(refused.counters.refused, 1, 'counted in /admin/events');
  const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })).text();
  t.match(metrics, /svc_events_total\{outcome="refused"\} 1\b/, 'and in svc_events_total');
  t.match(metrics, /svc_events_buffered_bytes \d+/);
  await server.waitFor(/published on blobs was refused: larger than max_event_bytes/);
  t.notMatch(server.output(), /zzzzzzzzzz/, 'never its content');

  await redis.restart();
  await until(() => stats(server, admin), (s) => s.counters.buffered === 0, 120_000);
  const client = redis.client();
  const ids: number[] = [];
  for (const [, fields] of await client.xrange('svc:events:blobs', '-', '+')) {
    const at = fields.indexOf('e');
    ids.push((JSON.parse(fields[at + 1] as string) as { data: { i: number } }).data.i);
  }
  t.equal(ids.length, buffered, `all ${buffered} events the buffer kept were delivered`);
  t.equal(new Set(ids).size, ids.length, 'each once');
  // Four requests in flight: the first events published are those numbered below buffered + 3, never a later (dropped) one.
  t.ok(ids.every((i) => i >= 0 && i < buffered + 3), `the first ones published (${Math.min(...ids)}…${Math.max(...ids)})`);
});

t.test('with Redis up: a stream keeps at most max_stream_bytes of payloads, MAXLEN or not', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const server = await startServer({ entry, env: { SVC_EVENTS_ENABLED: 'true', SVC_EVENTS_URL: redis.url, SVC_EVENTS_MAX_STREAM_BYTES: String(8 * MB) } });
  t.teardown(() => server.stop());
  const admin = await tokenFor('root', { server, role: 'admin' });
  for (let i = 0; i < 60; i++) t.equal((await post(`${server.url}/function/emitBlob`, { topic: 'fat', i, blob: KB900 })).status, 200);
  await until(() => stats(server, admin), (s) => (s.counters.published ?? 0) >= 60);
  const client = redis.client();
  const entries = await client.xrange('svc:events:fat', '-', '+');
  const bytes = entries.reduce((n, [, fields]) => n + Buffer.byteLength(fields[fields.indexOf('e') + 1] as string), 0);
  t.ok(bytes <= 8 * MB, `${entries.length} entries, ${(bytes / MB).toFixed(1)} MB kept (60 published: 53 MB with MAXLEN alone)`);
  t.ok(entries.length >= 8, 'as many as fit');
  const memory = Number(await client.memory('USAGE', 'svc:events:fat'));
  t.ok(memory <= 10 * MB, `Redis holds ${(memory / MB).toFixed(1)} MB for the stream (the payloads, rounded up by its allocator)`);
  const last = JSON.parse(entries.at(-1)?.[1][1] as string) as { data: { i: number } };
  t.equal(last.data.i, 59, 'the newest kept');
});
