import t from 'tap';
import { ActorSystem, ManualClock, flushMicrotasks, type ActorContext, type ActorLogic, type Props, type RestartType, type SupervisorSpec, type LocalRef } from 'svc/kernel';

type Msg = 'inc' | 'get' | 'boom' | 'quit';

/** A counter that records its lifecycle into `log` under `name`. */
function counter(log: string[], name: string, restart: RestartType = 'permanent'): Props<Msg, number> {
  return {
    restart,
    logic: (): ActorLogic<Msg, number> => {
      let n = 0;
      return {
        preStart: () => void log.push(`${name}:start`),
        postStop: () => void log.push(`${name}:stop`),
        receive(msg, ctx) {
          if (msg === 'boom') throw Object.assign(new Error(`${name} exploded`), { code: 'E_BOOM' });
          if (msg === 'quit') {
            void ctx.stop();
            return n;
          }
          if (msg === 'inc') n++;
          return n;
        },
      };
    },
  };
}

/** A supervisor whose children are started in preStart. */
function supervisor(log: string[], kids: [string, RestartType][], supervision: Partial<SupervisorSpec>): Props<string, string[]> {
  return {
    supervision,
    logic: () => ({
      preStart(ctx: ActorContext<string>) {
        log.push('sup:start');
        for (const [name, type] of kids) ctx.spawn(counter(log, name, type), name);
      },
      postStop: () => void log.push('sup:stop'),
      receive: (_m: string, ctx: ActorContext<string>) => ctx.children().map((c) => c.path),
    }),
  };
}

async function settle(clock?: ManualClock): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await flushMicrotasks();
    clock?.advance(0);
  }
}

function child(system: ActorSystem, path: string): LocalRef<Msg, number> {
  const ref = system.lookup<Msg, number>(path);
  if (!ref) throw new Error(`no actor at ${path}`);
  return ref;
}

t.test('the crashing message fails its ask with the error; a permanent actor restarts with fresh state and keeps its mailbox', async (t) => {
  const log: string[] = [];
  const system = new ActorSystem();
  const ref = system.spawn(counter(log, 'c'), 'c');
  ref.tell('inc');
  ref.tell('inc');
  const crash = ref.ask('boom');
  const after = ref.ask('inc'); // queued behind the crash: handled by the new incarnation
  await t.rejects(crash, { code: 'E_BOOM', message: 'c exploded' });
  t.equal(await after, 1, 'state reset, queued message kept');
  t.same(log, ['c:start', 'c:stop', 'c:start']);
  t.equal(ref.cell.incarnations, 2);
  await system.shutdown();
});

t.test('restart types: permanent restarts after a normal exit, transient only after a crash, temporary never', async (t) => {
  const log: string[] = [];
  const system = new ActorSystem();
  system.spawn(supervisor(log, [['p', 'permanent'], ['tr', 'transient'], ['tmp', 'temporary']], { maxRestarts: 10 }), 'sup');
  await settle();
  const p = child(system, 'sup/p');
  const tr = child(system, 'sup/tr');
  const tmp = child(system, 'sup/tmp');

  await p.ask('quit');
  await settle();
  t.equal(system.lookup('sup/p')?.cell.incarnations, 2, 'permanent: restarted after a normal exit');
  t.equal(await p.ask('get'), 0);

  await tr.ask('boom').catch(() => undefined);
  await settle();
  t.equal(tr.cell.incarnations, 2, 'transient: restarted after a crash');
  await tr.ask('quit');
  await settle();
  t.equal(system.lookup('sup/tr'), undefined, 'transient: not restarted after a normal exit');

  await tmp.ask('boom').catch(() => undefined);
  await settle();
  t.equal(system.lookup('sup/tmp'), undefined, 'temporary: not restarted after a crash');
  await t.rejects(tmp.ask('get'), { code: 'SVC_ERR_ACTOR_STOPPED' });
  t.notOk(tmp.tell('inc'));
  t.ok(system.deadLetters.recent().some((d) => d.recipient === '/user/sup/tmp' && d.reason === 'stopped'), 'counted as dead letters');
  await system.shutdown();
});

t.test('one-for-one: siblings keep running and keep their state', async (t) => {
  const log: string[] = [];
  const system = new ActorSystem();
  system.spawn(supervisor(log, [['a', 'permanent'], ['b', 'permanent']], { strategy: 'one-for-one' }), 'sup');
  await settle();
  const a = child(system, 'sup/a');
  const b = child(system, 'sup/b');
  await b.ask('inc');
  await a.ask('boom').catch(() => undefined);
  await settle();
  t.equal(a.cell.incarnations, 2);
  t.equal(b.cell.incarnations, 1);
  t.equal(await b.ask('get'), 1, 'sibling state intact');
  await system.shutdown();
});

t.test('one-for-all: siblings are stopped in reverse start order and all restarted in start order', async (t) => {
  const log: string[] = [];
  const system = new ActorSystem();
  system.spawn(supervisor(log, [['a', 'permanent'], ['b', 'permanent'], ['c', 'permanent']], { strategy: 'one-for-all' }), 'sup');
  await settle();
  const a = child(system, 'sup/a');
  const c = child(system, 'sup/c');
  await c.ask('inc');
  log.length = 0;
  await a.ask('boom').catch(() => undefined);
  await settle();
  t.same(log, ['c:stop', 'b:stop', 'a:stop', 'a:start', 'b:start', 'c:start']);
  t.equal(await c.ask('get'), 0, 'sibling state reset');
  for (const name of ['a', 'b', 'c']) t.equal(child(system, `sup/${name}`).cell.incarnations, 2, `${name} restarted once`);
  await system.shutdown();
});

t.test('restarts back off: the second restart within the window waits minMs (injected clock)', async (t) => {
  const log: string[] = [];
  const clock = new ManualClock();
  const system = new ActorSystem({ clock, guardian: { maxRestarts: 10, backoff: { minMs: 50, maxMs: 1000, factor: 2 } } });
  const ref = system.spawn(counter(log, 'c'), 'c');
  await ref.ask('boom').catch(() => undefined);
  await settle(clock);
  t.equal(ref.cell.incarnations, 2, 'first restart is immediate');
  await ref.ask('boom').catch(() => undefined);
  await settle(clock);
  t.equal(ref.cell.incarnations, 2, 'second waits');
  clock.advance(49);
  await settle();
  t.equal(ref.cell.incarnations, 2);
  clock.advance(1);
  await settle();
  t.equal(ref.cell.incarnations, 3, 'restarted after 50 ms');
  await ref.ask('boom').catch(() => undefined);
  await settle();
  clock.advance(99);
  await settle();
  t.equal(ref.cell.incarnations, 3);
  clock.advance(1);
  await settle();
  t.equal(ref.cell.incarnations, 4, 'third waited 100 ms');
  await system.shutdown();
});

t.test('restart limit: past maxRestarts within the window the supervisor fails with SVC_ERR_RESTART_LIMIT and its parent restarts it', async (t) => {
  const log: string[] = [];
  const failures: unknown[] = [];
  const system = new ActorSystem({ onFailure: (e) => failures.push(e), guardian: { maxRestarts: 5 } });
  const sup = system.spawn(supervisor(log, [['a', 'permanent']], { maxRestarts: 2, withinMs: 10_000, backoff: { minMs: 0, maxMs: 0, factor: 1 } }), 'sup');
  await settle();
  const first = child(system, 'sup/a');
  for (let i = 0; i < 2; i++) {
    await first.ask('boom').catch(() => undefined);
    await settle();
  }
  t.equal(first.cell.incarnations, 3, 'two restarts allowed');
  t.equal(sup.cell.incarnations, 1);
  await first.ask('boom').catch(() => undefined);
  await settle();
  t.equal(sup.cell.incarnations, 2, 'the supervisor itself was restarted by its parent');
  t.equal(first.isAlive, false, 'the old child is gone');
  const fresh = child(system, 'sup/a');
  t.not(fresh, first, 'a fresh child was started by the new supervisor');
  t.equal(fresh.cell.incarnations, 1);
  t.same(failures, [], 'the guardian handled it');
  await system.shutdown();
});

t.test('an unsupervised failure is never swallowed: a guardian that gives up reports to onFailure', async (t) => {
  const log: string[] = [];
  const failures: { error: unknown; path: string }[] = [];
  const system = new ActorSystem({
    onFailure: (error, path) => failures.push({ error, path }),
    guardian: { maxRestarts: 1, backoff: { minMs: 0, maxMs: 0, factor: 1 } },
  });
  const ref = system.spawn(counter(log, 'c'), 'c');
  await ref.ask('boom').catch(() => undefined);
  await settle();
  t.equal(failures.length, 0);
  await ref.ask('boom').catch(() => undefined);
  await settle();
  t.equal(failures.length, 1);
  t.match(failures[0], { path: '/user', error: { code: 'SVC_ERR_RESTART_LIMIT' } });
  t.match((failures[0]?.error as Error).cause, { code: 'E_BOOM' }, 'cause kept');
  t.equal(ref.isAlive, false);
  await system.shutdown();
});

t.test('the default onFailure rethrows in a macrotask', async (t) => {
  const system = new ActorSystem({ guardian: { maxRestarts: 0 } });
  const caught = new Promise<Error>((resolve) => process.once('uncaughtException', resolve));
  // tap installs its own handler; ours runs too.
  const ref = system.spawn(counter([], 'c'), 'c');
  await ref.ask('boom').catch(() => undefined);
  const error = await caught;
  t.match(error, { code: 'SVC_ERR_RESTART_LIMIT' });
  await system.shutdown();
});

t.test('a crash in preStart is supervised like any other', async (t) => {
  let starts = 0;
  const system = new ActorSystem();
  const ref = system.spawn({
    logic: () => ({
      preStart() {
        if (++starts === 1) throw new Error('cold start');
      },
      receive: () => starts,
    }),
  });
  t.equal(await ref.ask('x'), 2, 'restarted; the queued message waited');
  await system.shutdown();
});
