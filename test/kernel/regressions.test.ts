// Defects found in review, each pinned by a test.
import t from 'tap';
import { ActorSystem, ManualClock, flushMicrotasks, fromReceive, type ActorContext, type ActorLogic } from 'svc/kernel';
import { Deadlines, PendingAsk, quantize } from '../../kernel/pending-ask.ts';
import { deferred } from '../kit/index.ts';

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flushMicrotasks();
}

t.test('destroy() processes nothing more: queued messages become dead letters', async (t) => {
  const system = new ActorSystem();
  let handled = 0;
  const ref = system.spawn(fromReceive(() => void handled++, { capacity: 200 }));
  for (let i = 0; i < 100; i++) ref.tell(i);
  await ref.cell.destroy();
  t.equal(handled, 0);
  t.equal(system.deadLetters.count, 100);
  await system.shutdown();
});

t.test('a crash while stopping is reported, not swallowed', async (t) => {
  const errors: unknown[] = [];
  const system = new ActorSystem({ onError: (e) => errors.push(e) });
  const ref = system.spawn(
    fromReceive((m: string) => {
      if (m === 'boom') throw new Error('late boom');
    }),
  );
  ref.tell('a');
  ref.tell('boom');
  ref.tell('c');
  await system.stop(ref);
  t.match(errors, [{ message: 'late boom' }]);
  t.ok(system.deadLetters.recent().some((d) => d.message === 'c' && d.reason === 'forced-stop'));
  await system.shutdown();
});

t.test('a restarted supervisor starts with a clean restart count', async (t) => {
  const system = new ActorSystem({ guardian: { maxRestarts: 10 } });
  const crashy: () => ActorLogic<string, number> = () => ({
    receive(m: string) {
      if (m === 'boom') throw new Error('boom');
      return 1;
    },
  });
  const sup = system.spawn<string, void>(
    {
      supervision: { maxRestarts: 2, backoff: { minMs: 0, maxMs: 0, factor: 1 } },
      logic: () => ({
        preStart: (ctx: ActorContext<string>) => void ctx.spawn({ logic: crashy }, 'kid'),
        receive: () => undefined,
      }),
    },
    'sup',
  );
  await settle();
  for (let i = 0; i < 3; i++) {
    await system.lookup<string, number>('sup/kid')?.ask('boom').catch(() => undefined);
    await settle();
  }
  t.equal(sup.cell.incarnations, 2, 'escalated once');
  const fresh = system.lookup<string, number>('sup/kid');
  await fresh?.ask('boom').catch(() => undefined);
  await settle();
  t.equal(sup.cell.incarnations, 2, 'one crash of the fresh child does not escalate again');
  t.equal(fresh?.cell.incarnations, 2);
  await system.shutdown();
});

t.test('timers cannot be armed by an abandoned incarnation', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const gate = deferred<void>();
  let late: unknown;
  const ref = system.spawn<string, void>({
    logic: () => ({
      async receive(_m: string, ctx: ActorContext<string>) {
        await gate.promise;
        try {
          ctx.timers.startPeriodic('p', 'tick', 10);
        } catch (e) {
          late = e;
        }
      },
    }),
  });
  ref.tell('work');
  await flushMicrotasks();
  const stopped = system.stop(ref, 50);
  clock.advance(50);
  await stopped;
  gate.resolve();
  await settle();
  t.match(late, { code: 'SVC_ERR_ACTOR_STOPPED' });
  t.equal(clock.pending, 0, 'no timer armed');
  await system.shutdown();
});

t.test('ask timeout lists are shared by similar timeouts and dropped when empty', async (t) => {
  const clock = new ManualClock();
  const deadlines = new Deadlines(clock);
  for (let i = 0; i < 1000; i++) {
    const ask = new PendingAsk('x');
    deadlines.track(ask, 5000 - i * 0.37);
    ask.resolve(i);
  }
  t.ok(deadlines.size <= 5, `${deadlines.size} lists for 1000 distinct timeouts`);
  clock.advance(6000);
  t.equal(deadlines.size, 0, 'empty lists are dropped');
  t.equal(quantize(42.2), 43);
  t.equal(quantize(1234), 1300);
  t.ok(quantize(9999) <= 9999 * 1.1);
});

t.test('a name stays reserved while a permanent child waits to be revived', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock, guardian: { maxRestarts: 10, backoff: { minMs: 100, maxMs: 100, factor: 1 } } });
  const props = {
    logic: () => ({
      receive: (m: string, ctx: ActorContext) => {
        if (m === 'quit') void ctx.stop();
        return m;
      },
    }),
  };
  const w = system.spawn(props, 'w');
  await w.ask('quit');
  await settle();
  await w.ask('quit'); // second normal exit: revive delayed by backoff
  await settle();
  t.throws(() => system.spawn(props, 'w'), { code: 'SVC_ERR_NAME_TAKEN' });
  clock.advance(100);
  await settle();
  t.equal(await w.ask('back'), 'back');
  await system.shutdown();
  t.equal(w.status, 'stopped');
});

t.test('a pending revive is cancelled by shutdown', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock, guardian: { maxRestarts: 10, backoff: { minMs: 100, maxMs: 100, factor: 1 } } });
  const w = system.spawn(
    { logic: () => ({ receive: (m: string, ctx: ActorContext) => void (m === 'quit' && ctx.stop()) }) },
    'w',
  );
  await w.ask('quit');
  await settle();
  await w.ask('quit');
  await settle();
  await system.shutdown();
  clock.advance(1000);
  await settle();
  t.equal(w.status, 'stopped', 'not revived after shutdown');
});

t.test('virtual actors: each activation has its own restart limit; other keys keep their state', async (t) => {
  const errors: unknown[] = [];
  const system = new ActorSystem({ onError: (e) => errors.push(e), onFailure: (e) => errors.push(e) });
  system.defineKind<string, number>('c', {
    props: () => ({
      logic: () => {
        let n = 0;
        return {
          receive(m: string) {
            if (m === 'boom') throw new Error('boom');
            return ++n;
          },
        };
      },
    }),
  });
  const keep = system.activate<string, number>('c', 'keep');
  t.equal(await keep.ask('inc'), 1);
  for (let i = 0; i < 10; i++) await system.activate<string, number>('c', `other${i}`).ask('boom').catch(() => undefined);
  const flaky = system.activate<string, number>('c', 'flaky');
  for (let i = 0; i < 5; i++) {
    await flaky.ask('boom').catch(() => undefined);
    await settle();
  }
  t.equal(await keep.ask('inc'), 2, 'an unrelated activation kept its state');
  t.match(errors, [{ code: 'SVC_ERR_RESTART_LIMIT' }], 'the flaky key hit its own limit, reported');
  t.equal(await flaky.ask('inc'), 1, 'the next message starts a fresh activation');
  await system.shutdown();
  await t.rejects(keep.ask('inc'), { code: 'SVC_ERR_SHUTDOWN' });
  t.equal(keep.tell('inc'), false, 'tell after shutdown is refused, not thrown');
});

t.test('virtual actors: a props factory that throws fails the ask, never throws', async (t) => {
  const system = new ActorSystem();
  system.defineKind('k', {
    props: (key) => {
      if (key === 'bad') throw new Error('bad key');
      return fromReceive((m: string) => m);
    },
  });
  await t.rejects(system.activate('k', 'bad').ask('x'), { message: 'bad key' });
  t.equal(system.activate('k', 'bad').tell('x'), false);
  t.equal(await system.activate('k', 'good').ask('x'), 'x');
  await system.shutdown();
});

t.test('a throwing dead-letter listener is reported and does not break a tell', async (t) => {
  const errors: unknown[] = [];
  const system = new ActorSystem({ onError: (e) => errors.push(e) });
  system.deadLetters.subscribe(() => {
    throw new Error('listener broke');
  });
  const ref = system.spawn(fromReceive(() => 1));
  await system.stop(ref);
  t.equal(ref.tell(1), false);
  t.match(errors, [{ message: 'listener broke' }]);
  await system.shutdown();
});
