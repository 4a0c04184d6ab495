// The transport-neutral hook dispatcher: which fields hooks get, who they run
// for, and how a report refuses — no socket, a fake spawn.
import t from 'tap';
import { entry, Root, T, Walker } from 'svc';
import { HookDispatcher, HookRefusal, Registry, type Caller } from '../../../actors/walker/index.ts';

class _Sees extends Walker {
  static has = T.Object({
    headers: T.Record(T.String(), T.String()),
    request: T.Object({ method: T.String(), path: T.String(), query: T.String(), body: T.String() }),
  });
  @entry(Root) run() {}
}

class _Bare extends Walker {
  static has = T.Object({ request: T.Object({ method: T.String(), path: T.String() }) });
  @entry(Root) run() {}
}

class Plain extends Walker {
  @entry(Root) run() {}
}

type Call = { walker: string; fields: Record<string, unknown>; caller: Caller; timeoutMs: number | undefined };

function dispatcher(answers: Record<string, unknown[] | Error>, exports: Record<string, unknown> = { _Sees, _Bare, Plain }) {
  const calls: Call[] = [];
  const hooks = new HookDispatcher(
    Registry.fromModule(exports),
    async (walker, fields, options) => {
      calls.push({ walker, fields, caller: options.caller, timeoutMs: options.timeoutMs });
      const a = answers[walker] ?? [];
      if (a instanceof Error) throw a;
      return { reports: a };
    },
    { timeoutMs: 1234 },
  );
  return { hooks, calls };
}

const req = { method: 'GET', path: '/ws/Chat', headers: { 'x-one': '1', authorization: 'Bearer t' }, query: 'token=abc', body: Buffer.from('{"a":1}') };
const alice: Caller = { userId: 'alice', rootId: 'r-alice' };

t.test('hooks run in order for the caller, with the headers and request they declare', async (t) => {
  const { hooks, calls } = dispatcher({});
  t.equal(hooks.active, true);
  t.equal(hooks.wantsHeaders, true, '_Sees declares headers');
  await hooks.run(req, alice);
  t.same(
    calls.map((c) => c.walker),
    ['_Sees', '_Bare'],
    'only `_` walkers, in declaration order',
  );
  t.same(calls[0]?.fields, { headers: req.headers, request: { method: 'GET', path: '/ws/Chat', query: 'token=abc', body: '{"a":1}' } }, 'query and raw body when declared');
  t.same(calls[1]?.fields, { request: { method: 'GET', path: '/ws/Chat' } }, 'only what the hook declares');
  t.equal(calls[0]?.caller, alice);
  t.equal(calls[0]?.timeoutMs, 1234);
});

t.test('no hooks: inactive, nothing runs', async (t) => {
  const { hooks, calls } = dispatcher({}, { Plain });
  t.equal(hooks.active, false);
  t.equal(hooks.wantsHeaders, false);
  await hooks.run(req, alice);
  t.equal(calls.length, 0);
  const bare = dispatcher({}, { _Bare }).hooks;
  t.equal(bare.wantsHeaders, false, 'a hook without `headers` does not need every header copied');
});

t.test('a report with a status from 400 to 599 refuses: typed error with status, code, message, details', async (t) => {
  const { hooks, calls } = dispatcher({ _Sees: ['fine', { status: 200 }, { status: 451, code: 'NO_WAY', message: 'not here', details: { why: 'test' } }, { status: 500 }] });
  const e = await hooks.run(req, alice).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(e instanceof HookRefusal);
  t.match(e, { status: 451, code: 'NO_WAY', message: 'not here', details: { why: 'test' }, hook: '_Sees' });
  t.same((e as HookRefusal).body, { code: 'NO_WAY', message: 'not here', details: { why: 'test' } });
  t.same(
    calls.map((c) => c.walker),
    ['_Sees'],
    'later hooks do not run',
  );
});

t.test('a refusal without code or message takes them from the status', async (t) => {
  const { hooks } = dispatcher({ _Bare: [{ status: 429 }] });
  await t.rejects(hooks.run(req, alice), { status: 429, code: 'TOO_MANY_REQUESTS', message: 'Too Many Requests' });
  const refused = await hooks.run(req, alice).catch((e: HookRefusal) => e);
  t.same((refused as HookRefusal).body, { code: 'TOO_MANY_REQUESTS', message: 'Too Many Requests' }, 'no details key when none was given');
});

t.test('statuses outside 400–599, non-integers and non-numbers do not refuse', async (t) => {
  const { hooks, calls } = dispatcher({ _Sees: [{ status: 399 }, { status: 600 }, { status: 404.5 }, { status: '403' }, null, 403, 'status'] });
  await hooks.run(req, alice);
  t.equal(calls.length, 2, 'both hooks ran');
});

t.test("a hook's own failure propagates as it is", async (t) => {
  const boom = new Error('boom');
  const { hooks } = dispatcher({ _Sees: boom });
  await t.rejects(hooks.run(req, alice), boom);
});

t.test('a string body is passed as it is', async (t) => {
  const { hooks, calls } = dispatcher({});
  await hooks.run({ ...req, body: '' }, alice);
  t.equal((calls[0]?.fields.request as { body: string }).body, '');
});
