import t from 'tap';
import { ActorSystem, ManualClock, flushMicrotasks, fromReceive, type ActorContext, type Props } from 'svc/kernel';
import { deferred } from '../kit/index.ts';

t.test('timers deliver to the actor, single and periodic, and die with it', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const got: string[] = [];
  const ref = system.spawn<string, number>({
    logic: () => ({
      preStart(ctx: ActorContext<string>) {
        ctx.timers.startSingle('once', 'once', 100);
        ctx.timers.startPeriodic('tick', 'tick', 30);
      },
      receive(msg: string, ctx: ActorContext<string>) {
        got.push(`${msg}@${ctx.clock.now()}`);
        return ctx.timers.size;
      },
    }),
  });
  await flushMicrotasks();
  for (let i = 0; i < 10; i++) {
    clock.advance(10);
    await flushMicrotasks();
  }
  t.same(got, ['tick@30', 'tick@60', 'tick@90', 'once@100']);
  t.equal(await ref.ask('count', Infinity), 1, 'the single timer is gone once fired');
  await system.stop(ref);
  t.equal(clock.pending, 0, 'no timer outlives its actor');
  clock.advance(1000);
  await flushMicrotasks();
  t.equal(got.length, 5);
});

t.test('timers are cancelled when the actor restarts', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const got: string[] = [];
  const ref = system.spawn<string, void>({
    logic: () => ({
      receive(msg: string, ctx: ActorContext<string>) {
        if (msg === 'arm') ctx.timers.startSingle('t', 'fired', 50);
        else if (msg === 'boom') throw new Error('boom');
        else got.push(msg);
      },
    }),
  });
  await ref.ask('arm');
  await ref.ask('boom').catch(() => undefined);
  clock.advance(100);
  await flushMicrotasks();
  t.same(got, [], 'the timer died with the old incarnation');
  await system.shutdown();
});

t.test('registry and dead letters: lookup by name; messages to a stopped actor are counted', async (t) => {
  const system = new ActorSystem();
  const ref = system.spawn(fromReceive((n: number) => n), 'echo');
  t.equal(system.lookup('echo'), ref);
  t.equal(system.lookup('/user/echo'), ref);
  const letters: string[] = [];
  system.deadLetters.subscribe((d) => letters.push(`${d.recipient}:${d.reason}`));
  await system.stop(ref);
  t.equal(system.lookup('echo'), undefined);
  t.notOk(ref.tell(1));
  await t.rejects(ref.ask(2), { code: 'SVC_ERR_ACTOR_STOPPED' });
  t.equal(system.deadLetters.count, 2);
  t.same(letters, ['/user/echo:stopped', '/user/echo:stopped']);
  await system.shutdown();
});

function recorder(log: string[], name: string, kids: string[] = []): Props<string, string> {
  return {
    logic: () => ({
      preStart(ctx: ActorContext<string>) {
        for (const k of kids) ctx.spawn(recorder(log, k), k);
      },
      async receive(msg: string) {
        await flushMicrotasks();
        log.push(`${name}:${msg}`);
        return msg;
      },
      postStop: () => void log.push(`${name}:stopped`),
    }),
  };
}

t.test('graceful shutdown drains mailboxes, then stops children in reverse start order', async (t) => {
  const log: string[] = [];
  const system = new ActorSystem();
  const a = system.spawn(recorder(log, 'a', ['a1', 'a2']), 'a');
  const b = system.spawn(recorder(log, 'b'), 'b');
  const c = system.spawn(recorder(log, 'c'), 'c');
  for (const [ref, name] of [
    [a, 'a'],
    [b, 'b'],
    [c, 'c'],
  ] as const) {
    ref.tell(`${name}-m1`);
    ref.tell(`${name}-m2`);
  }
  await system.shutdown({ deadlineMs: 5000 });
  const stops = log.filter((l) => l.endsWith(':stopped'));
  t.same(stops, ['c:stopped', 'b:stopped', 'a2:stopped', 'a1:stopped', 'a:stopped'], 'reverse start order, children before their parent');
  for (const name of ['a', 'b', 'c']) {
    const handled = log.indexOf(`${name}:${name}-m2`);
    t.ok(handled >= 0 && handled < log.indexOf(`${name}:stopped`), `${name} drained before stopping`);
  }
  t.equal(log.filter((l) => l.includes('-m')).length, 6, 'every queued message handled');
  t.equal(system.deadLetters.count, 0);
});

t.test('the drain deadline: past it, the rest fails with SVC_ERR_ACTOR_STOPPED and the stop completes', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const gate = deferred<void>();
  let postStopped = false;
  const ref = system.spawn<string, string>({
    logic: () => ({
      receive: async (m: string) => {
        await gate.promise;
        return m;
      },
      postStop: () => void (postStopped = true),
    }),
  });
  const inFlight = ref.ask('slow');
  const queued = ref.ask('queued');
  await flushMicrotasks();
  const stopped = system.shutdown({ deadlineMs: 200 });
  t.notOk(ref.tell('late'), 'no new messages once stopping');
  clock.advance(199);
  await flushMicrotasks();
  t.notOk(postStopped, 'still draining');
  clock.advance(1);
  await stopped;
  t.ok(postStopped);
  await t.rejects(inFlight, { code: 'SVC_ERR_ACTOR_STOPPED' });
  await t.rejects(queued, { code: 'SVC_ERR_ACTOR_STOPPED' });
  t.ok(system.deadLetters.recent().some((d) => d.message === 'queued' && d.reason === 'forced-stop'));
  gate.resolve();
});

t.test('a throwing postStop is reported, not swallowed, and the stop completes', async (t) => {
  const errors: unknown[] = [];
  const system = new ActorSystem({ onError: (e) => errors.push(e) });
  system.spawn({
    logic: () => ({
      receive: () => undefined,
      postStop() {
        throw new Error('cleanup failed');
      },
    }),
  });
  await system.shutdown();
  t.match(errors, [{ message: 'cleanup failed' }]);
});
