// The broker over memory streams, on an injected clock: retries at exactly the configured delays,
// then the dead-letter topic with the reason; pull, ack and redelivery after the visibility timeout;
// trimming; the CloudEvents wire form; a disabled broker; publishing while the streams fail.
import t from 'tap';
import { ManualClock } from '../../../kernel/index.ts';
import { Broker, decodeEvent, encodeEvent, Event, sharedBudgetMemory, sharedByteBudget, stamp, type StreamBackend, SubscriptionRunner } from '../../../actors/events/index.ts';
import { MemoryStreams } from '../../../stores/memory/index.ts';
import { RedisStreams } from '../../../stores/redis/index.ts';
import { Latch, skipRedis, startRedis } from '../../kit/index.ts';

const quiet = () => undefined;

function setup(options: { maxAttempts?: number; backoffSeconds?: number[]; visibilityMs?: number } = {}) {
  const clock = new ManualClock();
  const streams = new MemoryStreams({ clock });
  const broker = new Broker({
    streams,
    clock,
    visibilityMs: options.visibilityMs ?? 30_000,
    retry: { maxAttempts: options.maxAttempts ?? 3, backoffSeconds: options.backoffSeconds ?? [1, 5, 30] },
    consumerName: 'test/1',
    log: quiet,
  });
  return { clock, streams, broker };
}

async function until(clock: ManualClock, done: () => boolean, stepMs = 50, maxMs = 120_000): Promise<void> {
  for (let waited = 0; !done(); waited += stepMs) {
    if (waited > maxMs) throw new Error('condition not reached');
    await clock.advanceAsync(stepMs);
  }
}

t.test('the wire form is CloudEvents 1.0 JSON; delivery fields are not serialised', async (t) => {
  const event = stamp(new Event({ data: { n: 1 }, traceId: '0af7651916cd43dd8448eb211c80319c', headers: { a: 'b' } }), 'orders', { source: '/svc/app' });
  event.deliveryId = '1-0';
  event.attempt = 2;
  const wire = JSON.parse(encodeEvent(event));
  t.same(Object.keys(wire).sort(), ['data', 'datacontenttype', 'id', 'source', 'specversion', 'svcheaders', 'time', 'traceid', 'type']);
  t.match(wire, { specversion: '1.0', type: 'orders', source: '/svc/app', data: { n: 1 }, traceid: '0af7651916cd43dd8448eb211c80319c', svcheaders: '{"a":"b"}' });
  t.match(wire.id, /^[0-9a-f-]{36}$/);
  t.ok(!Number.isNaN(Date.parse(wire.time)));
  const back = decodeEvent(JSON.stringify(wire));
  t.same({ data: back.data, type: back.eventType, id: back.id, trace: back.traceId, headers: back.headers }, { data: { n: 1 }, type: 'orders', id: event.id, trace: event.traceId, headers: { a: 'b' } });
  t.equal(back.deliveryId, undefined);
  t.throws(() => decodeEvent('{"specversion":"0.3","type":"x","id":"1"}'), /CloudEvents 1.0/);
  t.throws(() => new Event({} as never), /data is required/);
});

t.test('a failing handler is tried max_attempts times at the configured delays, then dead-lettered with its reason', async (t) => {
  const { clock, broker, streams } = setup({ maxAttempts: 3, backoffSeconds: [1, 5] });
  const tries: number[] = [];
  const runner = new SubscriptionRunner(broker, {
    topic: 'poison',
    group: 'g',
    startFrom: 'earliest',
    concurrency: 1,
    retry: broker.retry,
    handle: async (event) => {
      tries.push(clock.now());
      t.equal(event.attempt, tries.length, 'the attempt number is counted');
      throw new Error(`bad ${event.data}`);
    },
  });
  await broker.ensureGroup('poison', 'g', 'earliest');
  await broker.ensureGroup('poison.dlq', 'dead', 'earliest');
  const id = await broker.append('poison', new Event({ data: 'pill' }));
  void runner.run();
  await until(clock, () => tries.length >= 3 && broker.counters.dead_lettered === 1);
  t.same(tries.map((at) => at - (tries[0] as number)), [0, 1000, 6000], 'tried at 0 s, then 1 s and 5 s later (the last delay reused past the list)');
  await clock.advanceAsync(60_000);
  t.equal(tries.length, 3, 'exactly max_attempts tries');
  const [dead] = await broker.consume('poison.dlq', 10, 0, 'earliest', 'dead');
  t.ok(dead, 'the event is on <topic>.dlq, an ordinary topic');
  t.equal(dead?.data, 'pill');
  t.match(dead?.headers, { 'svc-dlq-reason': 'Error: bad pill', 'svc-dlq-topic': 'poison', 'svc-dlq-attempts': '3', 'svc-dlq-entry': id, 'svc-dlq-group': 'g' });
  const info = await streams.info('svc:events:poison');
  t.equal(info?.groups[0]?.pending, 0, 'the original is acknowledged');
  await runner.stopAndDrain(0);
});

t.test('a handler that fails once is retried and its event acknowledged; the event id is stable', async (t) => {
  const { clock, broker, streams } = setup({ backoffSeconds: [2] });
  const seen: { id: string; attempt: number; at: number }[] = [];
  const runner = new SubscriptionRunner(broker, {
    topic: 'flaky',
    group: 'g',
    startFrom: 'earliest',
    concurrency: 1,
    retry: broker.retry,
    handle: async (event) => {
      seen.push({ id: event.id, attempt: event.attempt, at: clock.now() });
      if (event.attempt === 1) throw new Error('once');
    },
  });
  await broker.append('flaky', new Event({ data: 1 }));
  void runner.run();
  await until(clock, () => broker.counters.handled === 1);
  t.equal(seen.length, 2);
  t.equal(seen[0]?.id, seen[1]?.id);
  t.equal((seen[1]?.at as number) - (seen[0]?.at as number), 2000);
  t.equal((await streams.info('svc:events:flaky'))?.groups[0]?.pending, 0);
  t.equal(broker.counters.retried, 1);
  await runner.stopAndDrain(0);
});

t.test('pull: consume and ack; an event not acknowledged comes back after the visibility timeout', async (t) => {
  const { clock, broker } = setup({ visibilityMs: 5000 });
  await broker.ensureGroup('jobs', broker.group, 'earliest');
  for (const n of [1, 2, 3]) await broker.append('jobs', new Event({ data: n }));
  const first = await broker.consume('jobs', 2, 0);
  t.same(first.map((e) => e.data), [1, 2]);
  t.equal(await broker.ack(first[0] as Event), true);
  t.equal(await broker.ack(first[0] as Event), false, 'a second ack finds nothing pending');
  const next = await broker.consume('jobs', 10, 0);
  t.same(next.map((e) => e.data), [3], 'the unacknowledged one is not delivered again at once');
  await broker.ack(next[0] as Event);
  t.same(await broker.consume('jobs', 10, 0), []);
  clock.advance(5001);
  const again = await broker.consume('jobs', 10, 0);
  t.same(again.map((e) => e.data), [2], 'redelivered once the visibility timeout passed');
  t.equal(again[0]?.id, first[1]?.id, 'with the same event id');
  await t.rejects(async () => broker.ack(new Event({ data: 1 })), /an event a consumer received/);
});

t.test('a consumer that dies: its entries are claimed by another after the visibility timeout, and read back by itself at once on restart', async (t) => {
  const { clock, broker, streams } = setup({ visibilityMs: 3000 });
  await broker.ensureGroup('work', 'g', 'earliest');
  for (const n of [1, 2]) await broker.append('work', new Event({ data: n }));
  // "dead" took both and never acknowledged them.
  await streams.read('svc:events:work', 'g', 'dead/1', 10, 0);
  const handled: unknown[] = [];
  const spec = { topic: 'work', group: 'g', startFrom: 'earliest', concurrency: 2, retry: broker.retry, handle: async (e: Event) => void handled.push(e.data) };
  const other = new SubscriptionRunner(broker, spec);
  void other.run();
  await clock.advanceAsync(1000);
  t.same(handled, [], 'not before the visibility timeout');
  await until(clock, () => handled.length === 2);
  t.same(handled.sort(), [1, 2], 'claimed and handled by the live consumer');
  await other.stopAndDrain(0);
  // The same consumer name after a restart takes back its own pending entries at once.
  await broker.append('work', new Event({ data: 3 }));
  await streams.read('svc:events:work', 'g', 'test/1', 10, 0);
  const again = new SubscriptionRunner(broker, spec);
  void again.run();
  await until(clock, () => handled.length === 3, 1, 500);
  t.equal(handled[2], 3, 'its own pending entry first, without waiting for the timeout');
  await again.stopAndDrain(0);
});

t.test('streams are trimmed to max_len', async (t) => {
  const clock = new ManualClock();
  const broker = new Broker({ streams: new MemoryStreams({ clock }), maxLen: 10, clock, log: quiet });
  for (let i = 0; i < 25; i++) await broker.append('trim', new Event({ data: i }));
  const [topic] = await broker.topics();
  t.equal(topic?.length, 10);
});

t.test('a disabled broker does nothing', async (t) => {
  const broker = new Broker({ streams: undefined });
  t.equal(broker.kind, 'disabled');
  broker.publish('orders', new Event({ data: 1 }));
  t.same(await broker.consume('orders', 10, 5), [], 'consume answers at once, empty');
  t.same(await broker.topics(), []);
  t.throws(() => broker.publish('has space', new Event({ data: 1 })), /topic/);
  t.throws(() => broker.publish('orders', { data: 1 } as never), /new Event/);
});

t.test('publishing while the streams fail: counted, buffered in order, sent once they work; overflow dropped and counted', async (t) => {
  const clock = new ManualClock();
  const inner = new MemoryStreams({ clock });
  let down = true;
  const streams: StreamBackend = Object.assign(Object.create(inner) as StreamBackend, {
    add: (s: string, p: string, m: number) => (down ? Promise.reject(new Error('ECONNREFUSED')) : inner.add(s, p, m)),
  });
  const lines: string[] = [];
  const broker = new Broker({ streams, clock, bufferLimit: 5, log: (level, message) => void lines.push(`${level} ${message}`) });
  await broker.ensureGroup('o', broker.group, 'earliest');
  for (let i = 0; i < 7; i++) broker.publish('o', new Event({ data: i }));
  await clock.advanceAsync(0);
  t.equal(broker.counters.buffered, 5);
  t.equal(broker.counters.dropped, 2, 'past the buffer: dropped and counted');
  t.ok(broker.counters.publish_failures >= 1);
  t.match(lines.join('\n'), /cannot be reached/);
  t.match(lines.join('\n'), /buffer is full/);
  await clock.advanceAsync(1000);
  t.equal(broker.counters.buffered, 5, 'still down: kept');
  down = false;
  await until(clock, () => broker.counters.buffered === 0);
  const got = await broker.consume('o', 10, 0);
  t.same(got.map((e) => e.data), [0, 1, 2, 3, 4], 'sent in the order published');
  t.match(lines.join('\n'), /reached again: 5 buffered events sent/);
});

t.test('after the broker closes, a publish is counted as dropped and said once', async (t) => {
  const lines: string[] = [];
  const broker = new Broker({ streams: new MemoryStreams(), log: (_level, message) => void lines.push(message) });
  await broker.close();
  broker.publish('t', new Event({ data: 1 }));
  broker.publish('t', new Event({ data: 2 }));
  t.equal(broker.counters.dropped, 2);
  t.equal(lines.filter((l) => /after the broker closed/.test(l)).length, 1);
});

t.test('retry settings that cannot work are refused', async (t) => {
  t.throws(() => new Broker({ streams: undefined, retry: { deadLetterSuffix: '' } }), /deadLetterSuffix must not be empty/);
  t.throws(() => new Broker({ streams: undefined, retry: { maxAttempts: 0 } }), /maxAttempts/);
  t.throws(() => new Broker({ streams: undefined, visibilityMs: 0 }), /visibility/);
  t.throws(() => new Broker({ streams: undefined }).publish('a b', new Event({ data: 1 })), { code: 'INVALID_TOPIC', status: 400 });
  t.throws(() => new Broker({ streams: new MemoryStreams(), log: quiet }).publish('t', new Event({ data: { n: 1n } })), /publish\('t'\): the event's data cannot be written as JSON/);
});

t.test('pull after the streams restarted empty: the group is made again, from the start of the new stream', async (t) => {
  let inner = new MemoryStreams();
  const streams = new Proxy({} as StreamBackend, { get: (_target, name) => (inner as unknown as Record<string | symbol, unknown>)[name] instanceof Function ? (inner as any)[name].bind(inner) : (inner as any)[name] });
  const broker = new Broker({ streams, log: quiet });
  t.same(await broker.consume('jobs', 10, 0), [], 'the group is made (and remembered)');
  inner = new MemoryStreams(); // Redis restarted without its data
  await broker.append('jobs', new Event({ data: 'after' }));
  const got = await broker.consume('jobs', 10, 0);
  t.same(got.map((e) => e.data), ['after']);
  t.equal(await broker.ack(got[0] as Event), true);
  inner = new MemoryStreams();
  t.equal(await broker.ack(got[0] as Event), false, 'an ack whose group is gone finds nothing pending');
});

t.test('an event larger than max_event_bytes is refused (EVENT_TOO_LARGE, 413), counted, and logged at most once per 10 s without its content', async (t) => {
  const clock = new ManualClock();
  const lines: { message: string; extra: unknown }[] = [];
  const broker = new Broker({ streams: new MemoryStreams({ clock }), clock, maxEventBytes: 2_000, log: (_level, message, extra) => void lines.push({ message, extra }) });
  const secret = 'the-secret-payload-'.repeat(200);
  for (let i = 0; i < 3; i++) t.throws(() => broker.publish('big', new Event({ data: { secret } })), { code: 'EVENT_TOO_LARGE', status: 413, details: { topic: 'big', max_event_bytes: 2_000 } });
  t.throws(() => broker.prepare('big', new Event({ data: 'é'.repeat(950) })), { code: 'EVENT_TOO_LARGE' }, 'measured in UTF-8 bytes (1,900 for 950 é: with the envelope over 2,000, while 950 characters would not be)');
  broker.publish('big', new Event({ data: 'x'.repeat(1_500) }));
  t.equal(broker.counters.refused, 4);
  t.equal(lines.length, 1, 'one line for the four refusals within 10 s');
  t.match(lines[0]?.message, /of \d+ bytes published on big was refused: larger than max_event_bytes \(2000\)/);
  t.notMatch(JSON.stringify(lines), /secret/, 'never the content');
  clock.advance(10_000);
  t.throws(() => broker.publish('big', new Event({ data: { secret } })), { code: 'EVENT_TOO_LARGE' });
  t.equal(lines.length, 2);
  t.match(lines[1]?.extra, { refused_since_last_line: 4 });
  await broker.flush();
  const [topic] = await broker.topics();
  t.equal(topic?.length, 1, 'only the one within the limit was sent');
});

t.test('the outage buffer is bounded by bytes: past them events are dropped and counted; what was kept is sent in order once the streams work', async (t) => {
  const clock = new ManualClock();
  const inner = new MemoryStreams({ clock });
  let down = true;
  const streams: StreamBackend = Object.assign(Object.create(inner) as StreamBackend, {
    add: (s: string, p: string, m: number, b?: number) => (down ? Promise.reject(new Error('ECONNREFUSED')) : inner.add(s, p, m, b)),
  });
  const lines: string[] = [];
  const broker = new Broker({ streams, clock, bufferBytes: 10_000, log: (level, message) => void lines.push(`${level} ${message}`) });
  await broker.ensureGroup('o', broker.group, 'earliest');
  // About 3 KB each: three fit in 10,000 bytes, the rest do not.
  for (let i = 0; i < 8; i++) broker.publish('o', new Event({ data: { i, pad: 'p'.repeat(3_000) } }));
  await clock.advanceAsync(0);
  t.equal(broker.counters.buffered, 3);
  t.ok(broker.counters.buffered_bytes > 9_000 && broker.counters.buffered_bytes <= 10_000, `${broker.counters.buffered_bytes} bytes held`);
  t.equal(broker.counters.dropped, 5, 'past the bytes: dropped and counted');
  t.match(lines.join('\n'), /buffer is full \(3 events, \d+ bytes; at most 10000 events and 10000 bytes per process\)/);
  down = false;
  await until(clock, () => broker.counters.buffered === 0);
  t.equal(broker.counters.buffered_bytes, 0);
  t.same((await broker.consume('o', 10, 0)).map((e) => (e.data as { i: number }).i), [0, 1, 2], 'all that was kept, in order');
  down = true;
  for (let i = 0; i < 3; i++) broker.publish('o', new Event({ data: { i, pad: 'p'.repeat(3_000) } }));
  await clock.advanceAsync(0);
  t.equal(broker.counters.buffered, 3, 'the bytes sent were given back: three fit again');
});

t.test('a shared byte budget: brokers of several threads stay within it together; a thread that replaces a dead one starts afresh', async (t) => {
  const memory = sharedBudgetMemory();
  const w1 = sharedByteBudget(1_000, memory, 1);
  const w2 = sharedByteBudget(1_000, memory, 2);
  t.ok(w1.take(600));
  t.notOk(w2.take(600), 'the other thread’s bytes count');
  t.ok(w2.take(400));
  t.notOk(w1.take(1));
  w1.give(600);
  t.ok(w2.take(500));
  // w2 dies holding 900 bytes; its replacement claims the slot: those bytes died with it.
  const w2again = sharedByteBudget(1_000, memory, 2);
  t.ok(w2again.take(1_000));
  w2.give(900);
  t.notOk(w2.take(1), 'the dead one can no longer touch the slot');
  w2again.give(1_000);
  t.ok(w1.take(1_000), 'and the replacement’s give counted');
});

t.test('streams are trimmed by bytes too (max_stream_bytes): the oldest entries go first', async (t) => {
  const clock = new ManualClock();
  const broker = new Broker({ streams: new MemoryStreams({ clock }), maxStreamBytes: 20_000, clock, log: quiet });
  for (let i = 0; i < 30; i++) await broker.append('fat', new Event({ data: { i, pad: 'p'.repeat(1_800) } }));
  const [topic] = await broker.topics();
  t.ok((topic?.length ?? 0) >= 9 && (topic?.length ?? 0) <= 10, `about 20,000 bytes of 2 KB events kept (${topic?.length})`);
  t.same((await broker.consume('fat', 100, 0, 'earliest')).map((e) => (e.data as { i: number }).i).at(-1), 29, 'the newest kept');
});

/**
 * Memory streams that also append in batches (`addMany`, as Redis does), each batch answered a turn
 * after it was sent; `down` refuses everything, `partial` makes the next batch append only its first n.
 */
function batchingStreams() {
  const inner = new MemoryStreams();
  const batches: { stream: string; size: number }[] = [];
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  const state = { down: false, partial: undefined as number | undefined, failing: undefined as string | undefined, held: undefined as Promise<void> | undefined, heldStream: undefined as string | undefined };
  const backend: StreamBackend = Object.assign(Object.create(inner) as StreamBackend, {
    add: (s: string, p: string, m: number, b?: number) => (state.down ? Promise.reject(new Error('ECONNREFUSED')) : inner.add(s, p, m, b)),
    addMany: async (stream: string, payloads: readonly string[], maxLen: number, maxBytes?: number) => {
      batches.push({ stream, size: payloads.length });
      inFlight.set(stream, (inFlight.get(stream) ?? 0) + 1);
      most.set(stream, Math.max(most.get(stream) ?? 0, inFlight.get(stream) ?? 0));
      await new Promise((resolve) => setImmediate(resolve));
      if (state.heldStream === stream) await state.held;
      inFlight.set(stream, (inFlight.get(stream) ?? 0) - 1);
      if (state.down || state.failing === stream) throw new Error('ECONNREFUSED');
      const n = state.partial ?? payloads.length;
      state.partial = undefined;
      const ids: string[] = [];
      for (const p of payloads.slice(0, n)) ids.push(await inner.add(stream, p, maxLen, maxBytes));
      return n < payloads.length ? { ids, error: new Error('OOM command not allowed when used memory > maxmemory') } : { ids };
    },
  });
  const sizes = (stream: string) => batches.filter((b) => b.stream === stream).map((b) => b.size);
  return { backend, state, batches, sizes, most };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const dataOf = async (broker: Broker, topic: string) => (await broker.consume(topic, 10_000, 0, 'earliest')).map((e) => e.data);

t.test('on a backend that appends in batches: the events of a turn leave together, one batch of a stream on its way at a time, in order; flush waits for them', async (t) => {
  const s = batchingStreams();
  const broker = new Broker({ streams: s.backend, log: quiet });
  t.teardown(() => broker.close());
  for (let i = 0; i < 1200; i++) broker.publish('a', new Event({ data: i }));
  for (let i = 0; i < 3; i++) broker.publish('b', new Event({ data: i }));
  t.equal(s.batches.length, 0, 'nothing leaves in the turn of the publishes');
  await turn();
  t.same(s.batches, [{ stream: 'svc:events:a', size: 512 }, { stream: 'svc:events:b', size: 3 }], 'at the next turn: a batch per stream, at most 512 events');
  for (let i = 1200; i < 1210; i++) broker.publish('a', new Event({ data: i }));
  t.equal(await broker.flush(), 0);
  t.same(s.sizes('svc:events:a'), [512, 512, 186], 'the rest of a stream leaves once its batch is answered, with what was published meanwhile');
  t.equal(s.most.get('svc:events:a'), 1, 'one batch of a stream on its way at a time');
  t.equal(broker.counters.published, 1213);
  t.same(await dataOf(broker, 'a'), Array.from({ length: 1210 }, (_, i) => i), 'appended in the order published');
  t.same(await dataOf(broker, 'b'), [0, 1, 2]);
  // A batch is bounded by its payloads' size too: events of ~300 KB leave three at a time.
  for (let i = 0; i < 7; i++) broker.publish('big', new Event({ data: { i, pad: 'p'.repeat(300_000) } }));
  await broker.flush();
  t.same(s.sizes('svc:events:big'), [3, 3, 1]);
});

t.test('on a backend that appends in batches: a batch that fails is buffered, with what waited behind it, in order; all of it is sent once the streams work', async (t) => {
  const s = batchingStreams();
  const lines: string[] = [];
  const broker = new Broker({ streams: s.backend, log: (level, message) => void lines.push(`${level} ${message}`) });
  t.teardown(() => broker.close());
  s.state.down = true;
  for (let i = 0; i < 5; i++) broker.publish('o', new Event({ data: i }));
  await turn(); // the batch is on its way…
  for (let i = 5; i < 8; i++) broker.publish('o', new Event({ data: i })); // …these wait behind it
  t.equal(await broker.flush(), 8, 'all eight in the buffer (the batch failed, the others went behind it)');
  t.equal(broker.counters.buffered, 8);
  t.ok(broker.counters.publish_failures >= 5, `the failed batch counted (${broker.counters.publish_failures})`);
  t.match(lines.join('\n'), /cannot be reached/);
  broker.publish('o', new Event({ data: 8 }));
  t.equal(broker.counters.buffered, 9, 'published while the buffer holds events: behind them');
  s.state.down = false;
  t.equal(await broker.flush(), 0);
  t.equal(broker.counters.published, 9);
  t.same(await dataOf(broker, 'o'), [0, 1, 2, 3, 4, 5, 6, 7, 8], 'each once, in the order published');

  // Refused part way: the first ones are appended, the rest buffered and sent after them.
  const failures = broker.counters.publish_failures;
  s.state.partial = 2;
  for (let i = 0; i < 5; i++) broker.publish('p', new Event({ data: i }));
  t.equal(await broker.flush(), 0);
  t.equal(broker.counters.publish_failures - failures, 3, 'the three refused counted as failures');
  t.same(await dataOf(broker, 'p'), [0, 1, 2, 3, 4], 'each once, in order');
});

t.test("on a backend that appends in batches: another stream's failure does not reorder a stream whose batch is on its way", async (t) => {
  const s = batchingStreams();
  const broker = new Broker({ streams: s.backend, log: quiet });
  t.teardown(() => broker.close());
  let release: () => void = () => {};
  s.state.heldStream = 'svc:events:y';
  s.state.held = new Promise<void>((r) => (release = r));
  broker.publish('y', new Event({ data: 0 }));
  await turn(); // y's batch is on its way (held)…
  broker.publish('y', new Event({ data: 1 })); // …this waits behind it
  s.state.failing = 'svc:events:x';
  broker.publish('x', new Event({ data: 'x' }));
  while (broker.counters.buffered === 0) await turn(); // x's batch failed: the buffer holds it
  broker.publish('y', new Event({ data: 2 }));
  s.state.failing = undefined;
  s.state.heldStream = undefined;
  release();
  t.equal(await broker.flush(), 0);
  t.same(await dataOf(broker, 'y'), [0, 1, 2], 'appended in the order published');
  t.same(await dataOf(broker, 'x'), ['x']);
});

t.test('an event prepared in a run is written again when it is published (changes and its trace id of then)', async (t) => {
  const broker = new Broker({ streams: new MemoryStreams(), log: quiet });
  t.teardown(() => broker.close());
  const event = new Event({ data: { n: 1 } });
  broker.prepare('t', event, '0af7651916cd43dd8448eb211c80319c');
  broker.publish('t', event, 'ignored: the event has its trace id');
  await broker.flush();
  const [got] = await broker.consume('t', 10, 0, 'earliest');
  t.same(got?.data, { n: 1 });
  t.equal(got?.traceId, '0af7651916cd43dd8448eb211c80319c');
});

t.test('on Redis: events published in batches reach a subscription each once, in order; while Redis is down they wait in the buffer, then follow in order', { skip: skipRedis }, async (t) => {
  const server = await startRedis(t);
  const broker = new Broker({ streams: new RedisStreams({ url: server.url, name: 'broker-batches' }), consumerName: 'test/1', log: quiet });
  await broker.ensureGroup('o', broker.group, 'earliest');
  const got: number[] = [];
  const handled = new Latch();
  const runner = new SubscriptionRunner(broker, {
    topic: 'o',
    group: broker.group,
    startFrom: 'earliest',
    concurrency: 1,
    retry: broker.retry,
    blockMs: 50,
    handle: async (e) => {
      got.push(e.data as number);
      handled.hit();
    },
  });
  void runner.run();
  for (let i = 0; i < 2_000; i++) broker.publish('o', new Event({ data: i }));
  await turn();
  for (let i = 2_000; i < 3_000; i++) broker.publish('o', new Event({ data: i }));
  t.equal(await broker.flush(), 0);
  await handled.wait(3_000);
  t.same(got, Array.from({ length: 3_000 }, (_, i) => i), 'each once, in the order published');
  t.equal(broker.counters.published, 3_000);

  await server.stop();
  for (let i = 3_000; i < 3_010; i++) broker.publish('o', new Event({ data: i }));
  t.equal(await broker.flush(), 10, 'kept while Redis is down');
  for (let i = 3_010; i < 3_020; i++) broker.publish('o', new Event({ data: i }));
  t.equal(broker.counters.buffered, 20, 'published while the buffer holds events: behind them');
  await server.restart(); // empty: the runner makes the group again, from the start of the new stream
  await handled.wait(3_020); // the broker's own retries send the buffer
  t.same(got.slice(3_000), Array.from({ length: 20 }, (_, i) => 3_000 + i), 'then those published while down, in order');
  t.equal(broker.counters.buffered, 0);
  await runner.stopAndDrain(1_000);
  await broker.close();
});
