/**
 * Event streaming benchmark, against one real `redis-server` started here:
 *
 *  1. ceiling: `redis-benchmark` sending `XADD <stream> MAXLEN ~ 100000 * e <payload>`
 *     (a payload the size of one of our CloudEvents), 50 clients, no pipelining:
 *     appends/s Redis itself takes on this machine.
 *  2. end to end: events/s from `publish` to handler acknowledged, through the
 *     broker and a subscription's delivery loop (the code `svc start` runs: the
 *     Broker, RedisStreams, SubscriptionRunner), N events published as fast as the
 *     broker takes them, timed until the last is acknowledged; at concurrency 1
 *     (the default) and 16. Ratio to (1).
 *  3. latency publish → handler at 50% of the measured maximum (open loop: a
 *     publish every 1/rate s, whatever the handler does), p50/p99.
 *  4. across processes: two `svc start` processes on one Redis; a WebSocket
 *     client of B (`/ws/Feed`); events published on A (`POST /function/emitFeed`
 *     carries the send time), B's subscription broadcasts each to its clients;
 *     p50/p99 from the HTTP call on A to the frame on B, 300 events one after
 *     the other.
 *
 * Everything shares the machine's cores (2 here); nothing is pinned.
 *
 *   npm run bench:events      (--quick: fewer events)
 *
 * Writes bench/results/events-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { Broker, Event, SubscriptionRunner, encodeEvent, stamp } from '../actors/events/index.ts';
import { RedisStreams } from '../stores/redis/index.ts';
import { startRedis, post, startServer, fixture } from '../test/kit/index.ts';
import { WalkerSocket } from '../client/index.ts';
import { machine, percentile, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const EVENTS = quick ? 20_000 : 100_000;
const quiet = () => undefined;

const redis = await startRedis();
const payload = encodeEvent(stamp(new Event({ data: { order: 12345, item: 'bench', qty: 1 } }), 'bench', { source: '/svc/bench', traceId: '0af7651916cd43dd8448eb211c80319c' }));

// 1. The ceiling: Redis's own XADD rate from redis-benchmark.
const rb = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(redis.port), '-c', '50', '-n', String(EVENTS), '-q', 'XADD', 'bench:ceiling', 'MAXLEN', '~', '100000', '*', 'e', payload], { encoding: 'utf8' });
const rbRps = Number(/([\d.]+) requests per second/.exec(rb.stdout)?.[1] ?? NaN);
console.log(`redis-benchmark XADD: ${round(rbRps, 0)} /s`);

async function endToEnd(topic: string, concurrency: number, count: number): Promise<{ events_per_s: number; ms: number }> {
  const broker = new Broker({ streams: new RedisStreams({ url: redis.url, name: `bench-${topic}` }), consumerName: 'bench/1', log: quiet });
  await broker.ensureGroup(topic, broker.group, 'latest');
  let acked = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const runner = new SubscriptionRunner(broker, {
    topic,
    group: broker.group,
    startFrom: 'latest',
    concurrency,
    retry: broker.retry,
    handle: async () => {
      if (++acked === count) queueMicrotask(resolveDone);
    },
  });
  void runner.run();
  const start = performance.now();
  // As fast as the broker takes them: in rounds, so the process does not queue all N sends at once.
  for (let i = 0; i < count; i++) {
    broker.publish(topic, new Event({ data: { order: i, item: 'bench', qty: 1 } }));
    if (i % 1000 === 999) await new Promise((resolve) => setImmediate(resolve));
  }
  await done;
  const ms = performance.now() - start;
  // The last handler returned; its ack follows: wait for the group to hold nothing pending.
  for (;;) {
    const info = await broker.streams?.info(broker.key(topic));
    if (info?.groups[0]?.pending === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const total = performance.now() - start;
  await runner.stopAndDrain(1000);
  await broker.close();
  return { events_per_s: round((count / total) * 1000, 0), ms: round(ms, 1) };
}

const e2e1 = await endToEnd('bench-c1', 1, EVENTS);
console.log(`end to end, concurrency 1: ${e2e1.events_per_s} events/s (${round(e2e1.events_per_s / rbRps, 3)} of XADD)`);
const e2e16 = await endToEnd('bench-c16', 16, EVENTS);
console.log(`end to end, concurrency 16: ${e2e16.events_per_s} events/s (${round(e2e16.events_per_s / rbRps, 3)} of XADD)`);

// 3. Latency at half the maximum, open loop.
async function latencyAt(rate: number, seconds: number): Promise<{ rate: number; p50_ms: number; p99_ms: number; max_ms: number; samples: number }> {
  const broker = new Broker({ streams: new RedisStreams({ url: redis.url, name: 'bench-latency' }), consumerName: 'bench/1', log: quiet });
  const topic = 'bench-latency';
  await broker.ensureGroup(topic, broker.group, 'latest');
  const samples: number[] = [];
  const total = Math.floor(rate * seconds);
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const runner = new SubscriptionRunner(broker, {
    topic,
    group: broker.group,
    startFrom: 'latest',
    concurrency: 1,
    retry: broker.retry,
    handle: async (event) => {
      samples.push(performance.now() - (event.data as { at: number }).at);
      if (samples.length === total) resolveDone();
    },
  });
  void runner.run();
  const start = performance.now();
  let sent = 0;
  // Open loop: each event is sent at its scheduled time (several per timer tick when a tick is late).
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
    for (; sent < due; sent++) broker.publish(topic, new Event({ data: { at: start + (sent / rate) * 1000 } }));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await done;
  await runner.stopAndDrain(1000);
  await broker.close();
  const sorted = samples.sort((a, b) => a - b);
  return { rate: round(rate, 0), p50_ms: round(percentile(sorted, 50), 2), p99_ms: round(percentile(sorted, 99), 2), max_ms: round(sorted[sorted.length - 1] ?? NaN, 2), samples: sorted.length };
}

const half = await latencyAt(e2e1.events_per_s / 2, quick ? 3 : 5);
console.log(`latency at ${half.rate}/s (50% of the concurrency-1 maximum): p50 ${half.p50_ms} ms, p99 ${half.p99_ms} ms`);

// 4. Process A publishes, process B's subscriber pushes to its WebSocket client.
const entry = fixture('events-app.ts');
const env = (group: string) => ({ SVC_EVENTS_ENABLED: 'true', SVC_EVENTS_URL: redis.url, SVC_EVENTS_CONSUMER_GROUP: group });
const a = await startServer({ entry, env: env('bench-a') });
const b = await startServer({ entry, env: env('bench-b') });
const feed = await WalkerSocket.connect(b.url, 'Feed');
const cross: number[] = [];
const MESSAGES = quick ? 100 : 300;
for (let i = 0; i < MESSAGES + 20; i++) {
  const text = `m${i}`;
  const got = new Promise<void>((resolve) => {
    const off = feed.onBroadcast((data) => {
      if ((data.reports[0] as { text: string }).text !== text) return;
      off();
      resolve();
    });
  });
  const t0 = performance.now();
  await post(`${a.url}/function/emitFeed`, { text });
  await got;
  if (i >= 20) cross.push(performance.now() - t0); // the first 20 warm up
}
await feed.close();
await a.stop();
await b.stop();
const crossSorted = cross.sort((x, y) => x - y);
const crossProcess = { messages: cross.length, p50_ms: round(percentile(crossSorted, 50), 2), p99_ms: round(percentile(crossSorted, 99), 2) };
console.log(`process A publish → WebSocket client of B: p50 ${crossProcess.p50_ms} ms, p99 ${crossProcess.p99_ms} ms`);

await redis.stop();
const file = save('events', {
  machine: machine(),
  redis: spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.trim(),
  load_before: loadavg(),
  events: EVENTS,
  payload_bytes: Buffer.byteLength(payload),
  ceiling_xadd_per_s: rbRps,
  end_to_end: {
    concurrency_1: { ...e2e1, ratio_to_xadd: round(e2e1.events_per_s / rbRps, 3) },
    concurrency_16: { ...e2e16, ratio_to_xadd: round(e2e16.events_per_s / rbRps, 3) },
  },
  latency_at_half_max: half,
  cross_process_websocket: crossProcess,
});
console.log(file);
process.exit(0);
