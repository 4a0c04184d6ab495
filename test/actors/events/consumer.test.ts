// Consumers are actors under a supervisor: a fault of a consumer's own loop crashes it and it is
// restarted (a fresh loop that reads its own pending entries first); a handler that throws is a retry,
// not a crash; drain stops fetching and lets the handlers in hand finish.
import t from 'tap';
import { ActorSystem } from '../../../kernel/index.ts';
import { Broker, Event, type StreamBackend } from '../../../actors/events/index.ts';
import { MemoryStreams } from '../../../stores/memory/index.ts';
import { startConsumers, subscribe, isSubscription, subscriptionsOf } from '../../../actors/events/index.ts';

const quiet = () => undefined;

async function until(done: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

t.test('a consumer whose loop fails is restarted by its supervisor and goes on delivering', async (t) => {
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const inner = new MemoryStreams();
  let faults = 2;
  // A read that answers nonsense twice: the loop itself fails (not a handler, not an outage).
  const streams: StreamBackend = Object.assign(Object.create(inner) as StreamBackend, {
    read: (...args: Parameters<StreamBackend['read']>) => (!args[5] && faults-- > 0 ? Promise.resolve(undefined as never) : inner.read(...args)),
  });
  const broker = new Broker({ streams, log: quiet });
  const handled: unknown[] = [];
  const consumers = startConsumers(system, broker, [
    { name: 'onJob', spec: { topic: 'jobs', group: 'g', startFrom: 'earliest', concurrency: 1, retry: broker.retry, handle: async (e) => void handled.push(e.data), blockMs: 20 } },
  ]);
  await broker.append('jobs', new Event({ data: 'after the crashes' }));
  await until(() => handled.length === 1);
  const [status] = await consumers.status();
  t.match(status, { name: 'onJob', topic: 'jobs', group: 'g' });
  t.equal(status?.starts, 3, 'started, then restarted twice');
  t.same(handled, ['after the crashes']);
  await consumers.drain(100);
});

t.test('a consumer restarted while a handler runs does not take that entry again', async (t) => {
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const inner = new MemoryStreams();
  let fault = false;
  const streams: StreamBackend = Object.assign(Object.create(inner) as StreamBackend, {
    read: (...args: Parameters<StreamBackend['read']>) => (!args[5] && fault ? ((fault = false), Promise.resolve(undefined as never)) : inner.read(...args)),
  });
  const broker = new Broker({ streams, log: quiet });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const starts: unknown[] = [];
  const consumers = startConsumers(system, broker, [
    { name: 'onJob', spec: { topic: 'jobs', group: 'g', startFrom: 'earliest', concurrency: 1, retry: broker.retry, blockMs: 20, handle: async (e) => { starts.push(e.data); await gate; } } },
  ]);
  await broker.append('jobs', new Event({ data: 1 }));
  await until(() => starts.length === 1);
  fault = true; // the loop fails while event 1 is in its handler
  await until(async () => (await consumers.status())[0]?.starts === 2);
  await broker.append('jobs', new Event({ data: 2 }));
  release();
  await until(() => starts.length === 2);
  await until(async () => (await broker.streams?.info('svc:events:jobs'))?.groups[0]?.pending === 0);
  t.same(starts, [1, 2], 'event 1 was handled once, by the incarnation that had it');
  await consumers.drain(100);
});

t.test('a handler that throws is retried, the consumer is not restarted', async (t) => {
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const broker = new Broker({ streams: new MemoryStreams(), log: quiet, retry: { maxAttempts: 2, backoffSeconds: [0] } });
  let tries = 0;
  const consumers = startConsumers(system, broker, [
    { name: 'onBad', spec: { topic: 'bad', group: 'g', startFrom: 'earliest', concurrency: 1, retry: broker.retry, handle: async () => {
          tries++;
          throw new Error('no');
        },
        blockMs: 20, } },
  ]);
  await broker.ensureGroup('bad.dlq', 'd', 'earliest');
  await broker.append('bad', new Event({ data: 1 }));
  await until(() => broker.counters.dead_lettered === 1);
  t.equal(tries, 2);
  t.equal((await consumers.status())[0]?.starts, 1, 'never restarted');
  await consumers.drain(100);
});

t.test('drain: no more fetching; what was fetched is handled and acknowledged', async (t) => {
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const broker = new Broker({ streams: new MemoryStreams(), log: quiet });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const done: unknown[] = [];
  const consumers = startConsumers(system, broker, [
    { name: 'onSlow', spec: { topic: 'slow', group: 'g', startFrom: 'earliest', concurrency: 1, retry: broker.retry, handle: async (e) => { await gate; done.push(e.data); }, blockMs: 20 } },
  ]);
  await broker.append('slow', new Event({ data: 1 }));
  await broker.append('slow', new Event({ data: 2 }));
  await until(async () => (await consumers.status())[0]?.holding === 2);
  const draining = consumers.drain(5000);
  await broker.append('slow', new Event({ data: 3 }));
  release();
  await draining;
  t.same(done, [1, 2], 'the fetched ones were handled; the one appended during the drain was not fetched');
  const info = await broker.streams?.info('svc:events:slow');
  t.match(info?.groups[0], { pending: 0, lag: 1 });
});

t.test('subscribe checks what it is given', async (t) => {
  t.throws(() => subscribe('', async () => undefined), /topic/);
  t.throws(() => subscribe('a', 'nope' as never), /function/);
  t.throws(() => subscribe('a', async () => undefined, { concurrency: 0 }), /concurrency/);
  t.throws(() => subscribe('a', async () => undefined, { retry: { maxAttempts: 0 } }), /maxAttempts/);
  t.throws(() => subscribe('a', async () => undefined, { retry: { backoffSeconds: [-1] } }), /backoffSeconds/);
  const sub = subscribe('a', async () => undefined);
  t.ok(isSubscription(sub));
  t.same(subscriptionsOf({ sub, other: 1 }).map(([name]) => name), ['sub']);
});

t.test('dedupe skips an event id handled successfully within the TTL; a failed one is tried again', async (t) => {
  const { dedupe } = await import('../../../actors/events/index.ts');
  const calls: string[] = [];
  let fail = true;
  const once = dedupe(async (e: Event) => {
    calls.push(e.id);
    if (e.id === 'b' && fail) throw new Error('not yet');
  }, { ttlSeconds: 60, max: 2 });
  const ev = (id: string) => new Event({ data: 1, id });
  await once(ev('a'));
  await once(ev('a'));
  t.same(calls, ['a'], 'a second delivery of a handled event is skipped');
  await t.rejects(once(ev('b')), /not yet/);
  fail = false;
  await once(ev('b'));
  t.same(calls, ['a', 'b', 'b'], 'a failed event is not remembered');
  await once(ev('c'));
  await once(ev('a'));
  t.same(calls, ['a', 'b', 'b', 'c', 'a'], 'past `max` ids the oldest is forgotten');
});
