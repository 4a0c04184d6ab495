// Hooks and the run they guard in one message to the partition (`SpawnOptions.hooks`): each hook is a run of its own,
// in order, committed before the next; the first refusal is the caller's HookRefusal and nothing after it runs; a
// hook's failure is the caller's error; no other message of that root runs between the hooks and the run.
import t from 'tap';
import { entry, fn, Node, Root, T, Walker } from 'svc';
import { HookRefusal } from '../../../actors/walker/index.ts';
import { newCaller, openGraph } from '../../helpers/graph.ts';

const log: string[] = [];
let release: () => void = () => {};

class Mark extends Node {
  static has = T.Object({ by: T.String() });
  declare by: string;
}

class _First extends Walker {
  static has = T.Object({ headers: T.Record(T.String(), T.String()) });
  declare headers: Record<string, string>;
  @entry(Root) async first(here: Root) {
    log.push('first');
    if (this.headers.wait === 'yes') await new Promise<void>((r) => (release = r));
    if (this.headers.sleep) await new Promise((r) => setTimeout(r, Number(this.headers.sleep)));
    if (this.headers.mark === 'yes') await here.connect(new Mark({ by: 'first' }));
    if (this.headers.fail === 'yes') throw new Error('hook failed');
  }
}

class _Second extends Walker {
  static has = T.Object({ headers: T.Record(T.String(), T.String()) });
  declare headers: Record<string, string>;
  @entry(Root) second() {
    log.push('second');
    if (this.headers.refuse === 'yes') this.report({ status: 429, code: 'SLOW_DOWN', message: 'too many', details: { retry: 1 } });
  }
}

class Guarded extends Walker {
  @entry(Root) async go(here: Root) {
    log.push('walker');
    this.report((await here.out(Mark)).map((m) => m.by));
  }
}

/** Writes a node after a while. */
class Slow extends Walker {
  @entry(Root) async go(here: Root) {
    await new Promise((r) => setTimeout(r, 120));
    await here.connect(new Mark({ by: 'slow' }));
  }
}

class Other extends Walker {
  @entry(Root) go() {
    log.push('other');
  }
}

const sum = fn({ params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => {
  log.push('fn');
  return a + b;
});

const app = { Mark, _First, _Second, Guarded, Slow, Other, sum };
const hooks = (headers: Record<string, string>) => [
  { walker: '_First', fields: { headers } },
  { walker: '_Second', fields: { headers } },
];

t.test('hooks run first, in order, then the walker, which sees what they committed', async (t) => {
  const g = openGraph({ app });
  t.teardown(() => g.close());
  const caller = newCaller();
  log.length = 0;
  const { reports } = await g.graph.spawn('Guarded', {}, { caller, hooks: hooks({ mark: 'yes' }) });
  t.same(log, ['first', 'second', 'walker']);
  t.same(reports, [['first']], "the first hook's node is there when the walker runs");
  log.length = 0;
  t.same(await g.graph.call('sum', { a: 1, b: 2 }, { caller, hooks: hooks({}) }), { result: 3 }, 'functions too');
  t.same(log, ['first', 'second', 'fn']);
});

t.test('a refusal is the answer: later hooks and the walker do not run', async (t) => {
  const g = openGraph({ app });
  t.teardown(() => g.close());
  const caller = newCaller();
  log.length = 0;
  const error = await g.graph.spawn('Guarded', {}, { caller, hooks: [...hooks({ refuse: 'yes' }), { walker: '_First', fields: { headers: {} } }] }).catch((e: unknown) => e);
  t.ok(error instanceof HookRefusal, 'a HookRefusal');
  t.match(error, { hook: '_Second', status: 429, code: 'SLOW_DOWN', message: 'too many', details: { retry: 1 } });
  t.same(log, ['first', 'second'], 'nothing after the refusing hook ran');
  const failed = await g.graph.spawn('Guarded', {}, { caller, hooks: hooks({ fail: 'yes' }) }).catch((e: unknown) => e);
  t.match(failed, { message: /hook failed/ }, "a hook's failure is the caller's error");
  t.notOk(failed instanceof HookRefusal);
  t.same(log, ['first', 'second', 'first'], 'and nothing after it ran');
  const unknown = await g.graph.spawn('Guarded', {}, { caller, hooks: [{ walker: '_Nope', fields: {} }] }).catch((e: unknown) => e);
  t.match(unknown, { code: 'SVC_ERR_UNKNOWN_WALKER' }, 'an unknown hook is refused before anything runs');
});

t.test("no other message of the root runs between the hooks and the walker (one message), another root's does", async (t) => {
  const g = openGraph({ app });
  t.teardown(() => g.close());
  const caller = newCaller();
  await g.graph.spawn('Other', {}, { caller }); // the partition is active: the next ask goes straight to it
  log.length = 0;
  const guarded = g.graph.spawn('Guarded', {}, { caller, hooks: hooks({ wait: 'yes' }) });
  while (!log.includes('first')) await new Promise((r) => setImmediate(r));
  const other = g.graph.spawn('Other', {}, { caller });
  await g.graph.spawn('Other', {}, { caller: newCaller() });
  t.same(log, ['first', 'other'], "another root's run went on while the hook waited");
  release();
  await Promise.all([guarded, other]);
  t.same(log, ['first', 'other', 'second', 'walker', 'other'], "this root's next message waited for the walker");
});

t.test('the hooks and the run share one deadline: a run that would end past it is dropped, not committed', async (t) => {
  const g = openGraph({ app, runTimeoutMs: 200 });
  t.teardown(() => g.close());
  const caller = newCaller();
  log.length = 0;
  // The hook takes 150 ms of the 200; the walker needs 120 more (alone, it would have had 200).
  const error = await g.graph.spawn('Slow', {}, { caller, hooks: hooks({ sleep: '150' }) }).catch((e: unknown) => e);
  t.match(error, { code: 'SVC_ERR_WALKER_TIMEOUT' });
  const { reports } = await g.graph.spawn('Guarded', {}, { caller });
  t.same(reports, [[]], "the slow walker's node was not stored");
});

t.test('fields nested too deep are refused after the hooks ran, each alone; their refusal comes first', async (t) => {
  const g = openGraph({ app });
  t.teardown(() => g.close());
  const caller = newCaller();
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 80; i++) deep = { deep };
  log.length = 0;
  const refused = await g.graph.call('sum', deep, { caller, hooks: hooks({ refuse: 'yes' }) }).catch((e: unknown) => e);
  t.ok(refused instanceof HookRefusal, "the hook's refusal");
  t.same(log, ['first', 'second']);
  log.length = 0;
  const invalid = await g.graph.spawn('Guarded', deep, { caller, hooks: hooks({}) }).catch((e: unknown) => e);
  t.match(invalid, { code: 'SVC_ERR_INVALID_FIELDS' });
  t.same(log, ['first', 'second'], 'the hooks ran, the walker did not');
});
