import t from 'tap';
import { ActorSystem, fromReceive, ManualClock, flushMicrotasks, replyLater, type ActorContext } from 'svc/kernel';
import { deferred } from '../kit/index.ts';

t.test('messages are processed one at a time, in order, async handlers awaited', async (t) => {
  const system = new ActorSystem({ clock: new ManualClock() });
  const seen: number[] = [];
  let active = 0;
  let maxActive = 0;
  const ref = system.spawn(
    fromReceive(async (n: number) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await flushMicrotasks();
      seen.push(n);
      active--;
      return n;
    }),
  );
  const replies = [];
  for (let i = 0; i < 50; i++) {
    if (i % 2) ref.tell(i);
    else replies.push(ref.ask(i));
  }
  await Promise.all(replies);
  await ref.ask(-1);
  t.same(seen, [...Array.from({ length: 50 }, (_, i) => i), -1]);
  t.equal(maxActive, 1, 'never two handlers at once');
  await system.shutdown();
});

t.test('ask fails with SVC_ERR_ASK_TIMEOUT once its timeout passes (injected clock)', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const never = deferred<void>();
  const ref = system.spawn(fromReceive(() => never.promise));
  const asked = ref.ask('x', 100);
  const second = ref.ask('y', 300);
  clock.advance(99);
  await flushMicrotasks();
  let settled = false;
  asked.then(
    () => (settled = true),
    () => (settled = true),
  );
  await flushMicrotasks();
  t.equal(settled, false, 'not before the timeout');
  clock.advance(1);
  await t.rejects(asked, { code: 'SVC_ERR_ASK_TIMEOUT' });
  clock.advance(200);
  await t.rejects(second, { code: 'SVC_ERR_ASK_TIMEOUT' });
  never.resolve();
  await system.destroy();
});

t.test('a reply before the timeout resolves and disarms it', async (t) => {
  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  const ref = system.spawn(fromReceive((n: number) => n + 1));
  t.equal(await ref.ask(1, 50), 2);
  clock.advance(1000);
  t.equal(await ref.ask(2, 50), 3);
  await system.shutdown();
});

t.test('reject policy: a full mailbox refuses with SVC_ERR_MAILBOX_FULL, depth is observable', async (t) => {
  const system = new ActorSystem({ clock: new ManualClock() });
  const gate = deferred<void>();
  const handled: string[] = [];
  const ref = system.spawn(
    fromReceive(
      async (m: string) => {
        await gate.promise;
        handled.push(m);
      },
      { capacity: 3, overflow: 'reject' },
    ),
  );
  ref.tell('busy'); // taken out of the mailbox, handler waits on the gate
  await flushMicrotasks();
  t.equal(ref.mailboxSize, 0);
  t.ok(ref.tell('a'));
  t.ok(ref.tell('b'));
  const c = ref.ask('c');
  t.equal(ref.mailboxSize, 3);
  t.notOk(ref.tell('d'), 'tell reports the refusal');
  await t.rejects(ref.ask('e'), { code: 'SVC_ERR_MAILBOX_FULL', status: 503 });
  t.equal(system.deadLetters.count, 2);
  t.same(
    system.deadLetters.recent().map((d) => [d.message, d.reason]),
    [
      ['d', 'mailbox-full'],
      ['e', 'mailbox-full'],
    ],
  );
  gate.resolve();
  await c;
  t.same(handled, ['busy', 'a', 'b', 'c']);
  await system.shutdown();
});

t.test('drop-oldest policy: the oldest waiting message makes room', async (t) => {
  const system = new ActorSystem({ clock: new ManualClock() });
  const gate = deferred<void>();
  const handled: string[] = [];
  const ref = system.spawn(
    fromReceive(
      async (m: string) => {
        await gate.promise;
        handled.push(m);
      },
      { capacity: 2, overflow: 'drop-oldest' },
    ),
  );
  ref.tell('busy');
  await flushMicrotasks();
  const a = ref.ask('a');
  ref.tell('b');
  t.ok(ref.tell('c'), 'the new message is accepted');
  await t.rejects(a, { code: 'SVC_ERR_MESSAGE_DROPPED' });
  t.equal(ref.mailboxSize, 2);
  t.equal(system.deadLetters.recent()[0]?.reason, 'dropped-oldest');
  gate.resolve();
  await ref.ask('d'); // the mailbox holds [b, c]: 'd' drops 'b'
  t.same(handled, ['busy', 'c', 'd']);
  t.same(
    system.deadLetters.recent().map((l) => l.message),
    ['a', 'b'],
  );
  await system.shutdown();
});

t.test('a handler that yields after its budget lets other actors run', async (t) => {
  const system = new ActorSystem();
  const order: string[] = [];
  const a = system.spawn(fromReceive((m: string) => void order.push(m), { throughput: 2, capacity: 100 }));
  const b = system.spawn(fromReceive((m: string) => void order.push(m), { throughput: 2, capacity: 100 }));
  for (let i = 0; i < 4; i++) a.tell(`a${i}`);
  for (let i = 0; i < 4; i++) b.tell(`b${i}`);
  await a.ask('a-end');
  await b.ask('b-end');
  t.same(order.slice(0, 4), ['a0', 'a1', 'b0', 'b1'], 'interleaved by budget');
  await system.shutdown();
});

t.test('context: self, name, path, parent and children', async (t) => {
  const system = new ActorSystem();
  let seen: ActorContext | undefined;
  const parent = system.spawn(
    {
      logic: () => ({
        preStart(ctx: ActorContext) {
          ctx.spawn(fromReceive((_m: unknown, c: ActorContext) => c.path), 'kid');
        },
        receive(_m: unknown, ctx: ActorContext) {
          seen = ctx;
          return ctx.children().map((c) => c.path);
        },
      }),
    },
    'parent',
  );
  t.same(await parent.ask('list'), ['/user/parent/kid']);
  t.equal(seen?.name, 'parent');
  t.equal(seen?.self, parent);
  t.equal(await system.lookup('parent/kid')?.ask('path'), '/user/parent/kid');
  t.throws(() => system.spawn(fromReceive(() => 1), 'parent'), { code: 'SVC_ERR_NAME_TAKEN' });
  await system.shutdown();
});

t.test('replyLater answers when its promise settles while the mailbox moves on', async (t) => {
  const system = new ActorSystem();
  const gate = deferred<string>();
  const order: string[] = [];
  const ref = system.spawn(
    fromReceive((m: string) => {
      order.push(m);
      if (m === 'slow') return replyLater(gate.promise);
      if (m === 'bad') return replyLater(Promise.reject(Object.assign(new Error('later no'), { code: 'E_LATER' })));
      return m;
    }),
  );
  const slow = ref.ask('slow');
  t.equal(await ref.ask('fast'), 'fast', 'the next message was handled while the first waits');
  gate.resolve('done');
  t.equal(await slow, 'done');
  await t.rejects(ref.ask('bad'), { code: 'E_LATER' });
  t.equal(await ref.ask('alive'), 'alive', 'a rejected later reply does not crash the actor');
  t.equal(ref.cell.incarnations, 1);
  t.same(order, ['slow', 'fast', 'bad', 'alive']);
  await system.shutdown();
});
