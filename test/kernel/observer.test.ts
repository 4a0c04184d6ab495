import dc from 'node:diagnostics_channel';
import t from 'tap';
import {
  ActorSystem,
  KERNEL_CHANNELS,
  ManualClock,
  flushMicrotasks,
  type ActivationEvent,
  type ActorLogic,
  type KernelObserver,
  type MailboxFullEvent,
  type Props,
  type ReceiveEvent,
  type RestartEvent,
  type SystemOptions,
} from 'svc/kernel';
import { deferred } from '../kit/index.ts';

type Events = {
  receive: ReceiveEvent[];
  restart: RestartEvent[];
  mailboxFull: MailboxFullEvent[];
  activation: ActivationEvent[];
  deactivation: ActivationEvent[];
};

function recorder(): { observer: KernelObserver; events: Events } {
  const events: Events = { receive: [], restart: [], mailboxFull: [], activation: [], deactivation: [] };
  const observer: KernelObserver = {
    onReceive: (e) => void events.receive.push(e),
    onRestart: (e) => void events.restart.push(e),
    onMailboxFull: (e) => void events.mailboxFull.push(e),
    onActivation: (e) => void events.activation.push(e),
    onDeactivation: (e) => void events.deactivation.push(e),
  };
  return { observer, events };
}

/** Answers its messages; `boom` throws. */
function echo(extra: Partial<Props<string, string>> = {}): Props<string, string> {
  return {
    ...extra,
    logic: (): ActorLogic<string, string> => ({
      receive(msg, ctx) {
        if (msg === 'boom') throw Object.assign(new Error('exploded'), { code: 'E_BOOM' });
        if (msg === 'spawn') {
          ctx.spawn(echo(), 'named');
          ctx.spawn(echo());
        }
        return msg;
      },
    }),
  };
}

/** Not ready until `gate` resolves: messages pile up in its mailbox meanwhile. */
function gated(gate: Promise<void>, extra: Partial<Props<number, number>>): Props<number, number> {
  return { ...extra, logic: () => ({ preStart: () => gate, receive: (n: number) => n }) };
}

/** A system whose errors land in `errors` (and never on the console). */
function system(options: SystemOptions = {}): { system: ActorSystem; errors: [unknown, string][] } {
  const errors: [unknown, string][] = [];
  return { system: new ActorSystem({ onError: (e, where) => void errors.push([e, where]), ...options }), errors };
}

/** Run the four kinds of event once: messages, a crash, a full mailbox, a virtual actor activated and deactivated. */
async function workload(sys: ActorSystem, clock: ManualClock): Promise<void> {
  const ref = sys.spawn(echo(), 'echo');
  await ref.ask('hi');
  await ref.ask('boom').catch(() => undefined);
  await ref.ask('again');
  const gate = deferred<void>();
  const full = sys.spawn(gated(gate.promise, { capacity: 1 }), 'full');
  full.tell(1);
  full.tell(2);
  gate.resolve();
  sys.defineKind<string, string>('counter', { props: () => echo(), idleAfterMs: 1000 });
  await sys.activate<string, string>('counter', 'alice').ask('x');
  clock.advance(1000);
  await flushMicrotasks();
}

t.test('onReceive: a bounded label, the path, the node and the messages still waiting', async (t) => {
  const { observer, events } = recorder();
  const { system: sys } = system({ observer, nodeId: 'n1' });
  const gate = deferred<void>();
  const ref = sys.spawn(gated(gate.promise, {}), 'counter');
  for (let i = 0; i < 3; i++) ref.tell(i);
  gate.resolve();
  await ref.ask(3);
  t.same(
    events.receive.map((e) => e.depth),
    [3, 2, 1, 0],
    'depth: what is left behind each message as it is taken',
  );
  t.same(events.receive[0], { label: '/user/counter', path: '/user/counter', node: 'n1', depth: 3 });

  const parent = sys.spawn(echo(), 'parent');
  await parent.ask('spawn');
  const named = sys.lookup<string, string>('parent/named');
  const anonymous = sys.lookup<string, string>('parent/$1');
  await named?.ask('a');
  await anonymous?.ask('b');
  t.same(
    events.receive.slice(-2).map((e) => [e.label, e.path]),
    [
      ['/user/parent/named', '/user/parent/named'],
      ['/user/parent/$', '/user/parent/$1'],
    ],
    'a generated name is labelled `$`',
  );

  sys.defineKind<string, string>('counter', {
    props: () => ({ logic: () => ({ receive: (m: string, ctx) => (m === 'spawn' ? ctx.spawn(echo(), 'child').ask('c') : m) }) }),
  });
  await sys.activate<string, string>('counter', 'alice/1').ask('spawn');
  t.same(
    events.receive.slice(-2).map((e) => [e.label, e.path]),
    [
      ['$counter', '/kinds/counter/alice%2F1'],
      ['$counter/child', '/kinds/counter/alice%2F1/child'],
    ],
    'an activation is labelled by its kind, without the key',
  );
  await sys.shutdown();
});

t.test('onRestart: the actor, the error and what the supervisor decided', async (t) => {
  const { observer, events } = recorder();
  const failures: unknown[] = [];
  const { system: sys } = system({ observer, onFailure: (e) => void failures.push(e) });

  const permanent = sys.spawn(echo(), 'permanent');
  await t.rejects(permanent.ask('boom'), { code: 'E_BOOM' });
  t.equal(await permanent.ask('after'), 'after', 'restarted, serving');
  t.equal(events.restart.length, 1);
  const [restart] = events.restart;
  t.match(restart, { label: '/user/permanent', path: '/user/permanent', node: 'local', decision: 'restart', delayMs: 0 });
  t.equal((restart?.error as { code?: string }).code, 'E_BOOM', 'the error the actor threw');

  const temporary = sys.spawn(echo({ restart: 'temporary' }), 'temporary');
  await t.rejects(temporary.ask('boom'));
  t.equal(events.restart[1]?.decision, 'stop', 'a temporary child is not restarted');

  // A kind whose activations may not restart: past the limit, only that activation stops.
  sys.defineKind<string, string>('fragile', { props: () => echo(), supervision: { maxRestarts: 0 } });
  await t.rejects(sys.activate<string, string>('fragile', 'k').ask('boom'));
  t.match(events.restart[2], { label: '$fragile', decision: 'stop' });

  const strict = new ActorSystem({ observer, guardian: { maxRestarts: 0 }, onFailure: (e) => void failures.push(e), onError: () => {} });
  await t.rejects(strict.spawn(echo(), 'strict').ask('boom'));
  t.match(events.restart[3], { path: '/user/strict', decision: 'escalate' });
  t.match(failures, [{ code: 'SVC_ERR_RESTART_LIMIT' }], 'escalated past the guardian to onFailure');

  const all = sys.spawn<string, string>({
    supervision: { strategy: 'one-for-all' },
    logic: () => ({ preStart: (ctx) => void ctx.spawn(echo(), 'a'), receive: (m) => m }),
  });
  await all.ask('ready');
  await t.rejects(sys.lookup<string, string>(`${all.path.slice('/user/'.length)}/a`)!.ask('boom'));
  t.match(events.restart[4], { label: '/user/$/a', decision: 'restart-all' });
  t.equal(events.restart.length, 5, 'one event a crash');
  await strict.shutdown();
  await sys.shutdown();
});

t.test('onMailboxFull: the actor, its capacity, and the message shed', async (t) => {
  const { observer, events } = recorder();
  const { system: sys } = system({ observer });
  const gate = deferred<void>();
  const reject = sys.spawn(gated(gate.promise, { capacity: 2 }), 'reject');
  const drop = sys.spawn(gated(gate.promise, { capacity: 2, overflow: 'drop-oldest' }), 'drop');
  t.ok(reject.tell(1) && reject.tell(2));
  t.notOk(reject.tell(3), 'the third message is refused');
  for (let i = 1; i <= 3; i++) drop.tell(i);
  t.same(events.mailboxFull, [
    { label: '/user/reject', path: '/user/reject', node: 'local', capacity: 2, overflow: 'reject', message: 3 },
    { label: '/user/drop', path: '/user/drop', node: 'local', capacity: 2, overflow: 'drop-oldest', message: 1 },
  ]);
  t.equal(sys.deadLetters.count, 2, 'still dead letters, as before');
  gate.resolve();
  await sys.shutdown();
});

t.test('onActivation and onDeactivation: kind, key, node and path of a virtual actor', async (t) => {
  const { observer, events } = recorder();
  const clock = new ManualClock();
  const { system: sys } = system({ observer, clock, nodeId: 'n7' });
  sys.defineKind<string, string>('counter', { props: () => echo(), idleAfterMs: 1000 });
  await sys.activate<string, string>('counter', 'alice').ask('x');
  await sys.activate<string, string>('counter', 'alice').ask('y');
  const alice = { kind: 'counter', key: 'alice', node: 'n7', path: '/kinds/counter/alice' };
  t.same(events.activation, [alice], 'activated once for two messages');
  t.same(events.deactivation, []);
  clock.advance(1000);
  await flushMicrotasks();
  t.same(events.deactivation, [alice], 'deactivated when idle');
  await sys.activate<string, string>('counter', 'alice').ask('z');
  t.equal(events.activation.length, 2, 'the next message activates it again');
  await sys.shutdown();
  t.equal(events.deactivation.length, 2, 'and shutdown deactivates it');
});

t.test('diagnostics_channel subscribers receive the same events as observers', async (t) => {
  const { observer, events } = recorder();
  const heard: Events = { receive: [], restart: [], mailboxFull: [], activation: [], deactivation: [] };
  const subscriptions = (Object.keys(KERNEL_CHANNELS) as (keyof typeof KERNEL_CHANNELS)[]).map((name) => {
    const fn = (e: unknown) => void (heard[name] as unknown[]).push(e);
    dc.subscribe(KERNEL_CHANNELS[name], fn);
    return () => dc.unsubscribe(KERNEL_CHANNELS[name], fn);
  });
  t.teardown(() => subscriptions.forEach((off) => off()));
  t.same(Object.values(KERNEL_CHANNELS), [
    'svc:kernel:receive',
    'svc:kernel:restart',
    'svc:kernel:mailbox-full',
    'svc:kernel:activation',
    'svc:kernel:deactivation',
  ]);

  const clock = new ManualClock();
  const { system: sys } = system({ observer, clock });
  await workload(sys, clock);
  for (const name of Object.keys(heard) as (keyof Events)[]) {
    t.ok(events[name].length > 0, `${name}: observed`);
    t.equal(heard[name].length, events[name].length, `${name}: as many on the channel`);
    t.ok(
      heard[name].every((e, i) => e === events[name][i]),
      `${name}: the very same event objects`,
    );
  }

  // A subscriber with no observer at all.
  heard.restart.length = 0;
  const bare = new ActorSystem({ onError: () => {} });
  await t.rejects(bare.spawn(echo(), 'c').ask('boom'));
  t.match(heard.restart, [{ path: '/user/c', decision: 'restart' }]);
  await bare.shutdown();
  await sys.shutdown();
});

t.test('an observer that throws is reported once and breaks nothing; the others still hear everything', async (t) => {
  const { observer: good, events } = recorder();
  const bad: KernelObserver = {
    onReceive: () => {
      throw new Error('receive observer broke');
    },
    onRestart: () => {
      throw new Error('restart observer broke');
    },
  };
  const { system: sys, errors } = system({ observer: [bad, good] });
  const ref = sys.spawn(echo(), 'echo');
  for (let i = 0; i < 5; i++) ref.tell(`m${i}`);
  t.equal(await ref.ask('last'), 'last', 'every message handled');
  await t.rejects(ref.ask('boom'), { code: 'E_BOOM' }, 'the actor error, not the observer error');
  t.equal(await ref.ask('after'), 'after', 'restarted by its supervisor as usual');
  await t.rejects(ref.ask('boom'));
  t.equal(events.receive.length, 9, 'the good observer heard every message');
  t.equal(events.restart.length, 2);
  t.same(
    errors.map(([e, where]) => [(e as Error).message, where]),
    [
      ['receive observer broke', 'observer[0].onReceive'],
      ['restart observer broke', 'observer[0].onRestart'],
    ],
    'each failing callback reported once, through onError',
  );
  await sys.shutdown();
});

t.test('with no observer and no subscriber, nothing is called', async (t) => {
  const published: string[] = [];
  for (const name of Object.values(KERNEL_CHANNELS)) {
    const ch = dc.channel(name);
    t.notOk(ch.hasSubscribers, `${name} has no subscribers`);
    const publish = ch.publish;
    ch.publish = (message: unknown) => {
      published.push(name);
      publish.call(ch, message);
    };
    t.teardown(() => {
      ch.publish = publish;
    });
  }
  const clock = new ManualClock();
  const { system: sys, errors } = system({ clock });
  await workload(sys, clock);
  t.same(published, [], 'no channel published to');
  t.same(errors, [], 'nothing reported');

  // An observer with one callback: the other events stay off.
  const restarts: RestartEvent[] = [];
  const partial = new ActorSystem({ clock, observer: { onRestart: (e) => void restarts.push(e) }, onError: () => {} });
  await workload(partial, clock);
  t.equal(restarts.length, 1);
  t.same(published, [], 'still nothing published');
  await partial.shutdown();
  await sys.shutdown();
});
