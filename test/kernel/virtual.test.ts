import t from 'tap';
import { ActorSystem, ManualClock, flushMicrotasks, type ActorLogic } from 'svc/kernel';
import { deferred } from '../kit/index.ts';

type Msg = { type: 'inc' } | { type: 'get' };

t.test('concurrent activation of one key yields one instance', async (t) => {
  const system = new ActorSystem();
  let instances = 0;
  const loaded = deferred<void>();
  system.defineKind<Msg, number>('counter', {
    props: () => ({
      logic: (): ActorLogic<Msg, number> => {
        instances++;
        let n = 0;
        return {
          preStart: () => loaded.promise, // a slow load: callers pile up meanwhile
          receive: (m) => (m.type === 'inc' ? ++n : n),
        };
      },
    }),
  });
  const asks = Array.from({ length: 500 }, () => system.activate<Msg, number>('counter', 'alice').ask({ type: 'inc' }));
  loaded.resolve();
  const results = await Promise.all(asks);
  t.equal(instances, 1, 'one instance for 500 concurrent callers');
  t.same(
    [...results].sort((a, b) => a - b),
    Array.from({ length: 500 }, (_, i) => i + 1),
    'every increment applied exactly once',
  );
  t.equal(system.activationCount('counter'), 1);
  await system.activate<Msg, number>('counter', 'bob').ask({ type: 'inc' });
  t.equal(instances, 2, 'another key, another instance');
  await system.shutdown();
});

t.test('idle activations are deactivated; the next message starts a new one only after the old one stopped', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const store = new Map<string, number>();
  const events: string[] = [];
  const flushGate = deferred<void>();
  let gateFlush = false;
  system.defineKind<Msg, number>('counter', {
    idleAfterMs: 1000,
    props: (key) => ({
      logic: (): ActorLogic<Msg, number> => {
        let n = 0;
        return {
          preStart() {
            n = store.get(key) ?? 0;
            events.push(`load ${n}`);
          },
          receive: (m) => (m.type === 'inc' ? ++n : n),
          async postStop() {
            if (gateFlush) await flushGate.promise;
            store.set(key, n);
            events.push(`flush ${n}`);
          },
        };
      },
    }),
  });
  const ref = system.activate<Msg, number>('counter', 'k');
  await ref.ask({ type: 'inc' });
  await ref.ask({ type: 'inc' });
  clock.advance(999);
  await flushMicrotasks();
  t.equal(system.activationCount('counter'), 1, 'still active before the idle timeout');
  await ref.ask({ type: 'get' }); // activity pushes deactivation back
  clock.advance(999);
  await flushMicrotasks();
  t.equal(system.activationCount('counter'), 1);
  gateFlush = true;
  clock.advance(1);
  await flushMicrotasks();
  t.equal(system.activationCount('counter'), 0, 'deactivated after 1000 ms idle');
  // The old activation is still flushing: a new message must wait for it.
  const next = ref.ask({ type: 'inc' });
  await flushMicrotasks();
  t.same(events, ['load 0'], 'the new activation has not loaded before the old one flushed');
  flushGate.resolve();
  t.equal(await next, 3, 'state carried over through the store');
  t.same(events, ['load 0', 'flush 2', 'load 2']);
  await system.shutdown();
  t.same(events, ['load 0', 'flush 2', 'load 2', 'flush 3']);
});

t.test('unknown kinds are a typed error', async (t) => {
  const system = new ActorSystem();
  t.throws(() => system.activate('nope', 'x'), { code: 'SVC_ERR_UNKNOWN_KIND' });
  await system.shutdown();
});

t.test('a crashing activation is restarted by its kind guardian and keeps serving', async (t) => {
  const system = new ActorSystem();
  system.defineKind<string, string>('fragile', {
    props: () => ({
      logic: () => ({
        receive(m: string) {
          if (m === 'boom') throw new Error('boom');
          return m;
        },
      }),
    }),
  });
  const ref = system.activate<string, string>('fragile', 'x');
  await t.rejects(ref.ask('boom'), { message: 'boom' });
  t.equal(await ref.ask('ok'), 'ok');
  t.equal(system.activation('fragile', 'x')?.cell.incarnations, 2);
  await system.shutdown();
});

t.test('stopActivations fails at once what every activation had — waiting for its lease, in a handler, queued, stopping — with the reason given', async (t) => {
  const system = new ActorSystem();
  const lease = deferred<void>();
  const slow = deferred<number>();
  const released: string[] = [];
  let started = 0;
  system.defineKind<{ type: 'slow' } | { type: 'get' }, number>('account', {
    // 'waiting' never gets its lease: it has not started when the activations are stopped.
    lease: { acquire: (_kind, key) => (key === 'waiting' ? lease.promise : Promise.resolve()), release: (_kind, key) => void released.push(key) },
    props: () => ({
      logic: () => {
        started++;
        return { receive: (m) => (m.type === 'slow' ? slow.promise : 1) };
      },
    }),
  });
  const ref = (key: string) => system.activate<{ type: 'slow' } | { type: 'get' }, number>('account', key);
  const waiting = ref('waiting').ask({ type: 'get' });
  const inHandler = ref('busy').ask({ type: 'slow' });
  const queued = ref('busy').ask({ type: 'get' });
  // One stopping gracefully: it would wait for its handler up to the stop deadline (5 s).
  const stopping = ref('draining').ask({ type: 'slow' });
  await flushMicrotasks();
  void system.stop(system.activation('account', 'draining') as NonNullable<ReturnType<typeof system.activation>>);
  const reason = Object.assign(new Error('this member lost its lease'), { code: 'SVC_ERR_NOT_MEMBER', status: 503 });
  const started0 = started;
  const at = Date.now();
  await system.stopActivations('account', reason);
  t.ok(Date.now() - at < 1000, 'at once, not at a stop deadline');
  for (const [what, p] of [['waiting for its lease', waiting], ['in its handler', inHandler], ['queued', queued], ['stopping', stopping]] as const) {
    t.equal(await p.catch((e: unknown) => e), reason, `the ask ${what} fails with the reason`);
  }
  t.equal(system.activationCount('account'), 0, 'nothing is active');
  t.same(released.sort(), ['busy', 'draining'], 'the leases held are given back');
  slow.resolve(7);
  lease.resolve();
  await flushMicrotasks();
  t.equal(started, started0, 'the one waiting for its lease does not start when it comes');
  t.equal(await ref('busy').ask({ type: 'get' }), 1, 'the next message activates afresh');
  await system.shutdown();
});
