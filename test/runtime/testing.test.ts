// testApp: a whole app in this process, requests injected without a socket; trace ids and the response observers.
import t from 'tap';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { testApp } from 'svc/testing';
import { HTTP_RESPONSE_CHANNEL, type ResponseInfo } from '../../transports/http/index.ts';

const entry = new URL('../fixtures/todo-app.ts', import.meta.url).pathname;

t.test('inject: walkers, functions, users and errors without a socket', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  t.equal(app.url, undefined, 'nothing listens');
  const refused = await app.inject({ method: 'POST', url: '/walker/ListTodos', body: {} });
  t.equal(refused.status, 401, 'a private walker without a token');
  t.equal(refused.json().error.code, 'UNAUTHORIZED');
  const sum = await app.inject({ method: 'POST', url: '/function/add', body: { a: 2, b: 3 } });
  t.equal(sum.status, 200);
  t.equal(sum.json().data.result, 5);
  t.equal(sum.headers['content-type'], 'application/json; charset=utf-8');
  const bad = await app.inject({ method: 'POST', url: '/function/add', headers: { 'content-type': 'application/json' }, body: '{"a":' });
  t.equal(bad.status, 400);
  t.equal(bad.json().error.code, 'INVALID_JSON');
  t.equal((await app.inject({ url: '/nowhere' })).status, 404);

  const reg = await app.inject({ method: 'POST', url: '/user/register', body: { identities: [{ type: 'username', value: 'ann' }], credential: { type: 'password', password: 'correct horse battery staple' } } });
  t.equal(reg.status, 201);
  const login = await app.fetch('/user/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ identity: { type: 'username', value: 'ann' }, credential: { type: 'password', password: 'correct horse battery staple' } }) });
  t.equal(login.status, 200, 'fetch goes through the same front');
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  const todo = await app.inject({ method: 'POST', url: '/walker/CreateTodo', headers: { authorization: `Bearer ${token}` }, body: { title: 'milk' } });
  t.equal(todo.status, 200);
  t.match(todo.json().data.reports, [{ type: 'Todo', context: { title: 'milk' } }]);
  const mine = await app.inject({ method: 'POST', url: '/walker/ListTodos', headers: { authorization: `Bearer ${token}` }, body: {} });
  t.match(mine.json().data.reports, [{ type: 'Todo', context: { title: 'milk' } }], 'on the caller’s own graph');
  t.equal(await app.store.count() > 0, true, 'the write reached the store');
});

t.test('trace ids: a valid X-Trace-Id is kept, anything else replaced by a new one; echoed, exposed to browsers, logged', async (t) => {
  const app = await testApp({ entry, env: { SVC_ACCESS_LOG: 'true' } });
  t.teardown(() => app.close());
  const w3c = '4bf92f3577b34da6a3ce929d0e0e4736';
  const uuid = '3f0c6c1e-9d1a-4c53-a3a7-1f7f2b8f4f11';
  for (const given of [w3c, uuid, 'a', 'span.1:x-Y_z', 'x'.repeat(128)]) {
    const res = await app.inject({ method: 'POST', url: '/function/add', headers: { 'x-trace-id': given }, body: { a: 1, b: 1 } });
    t.equal(res.headers['x-trace-id'], given, `kept: ${given.slice(0, 40)}`);
  }
  const made = new Set<string>();
  for (const given of [undefined, '', 'x'.repeat(129), 'has space', 'semi;colon', 'ünï', '<script>']) {
    const res = await app.inject({ method: 'POST', url: '/function/add', headers: given === undefined ? {} : { 'x-trace-id': given }, body: { a: 1, b: 1 } });
    const id = res.headers['x-trace-id'] as string;
    t.match(id, /^[0-9a-f]{32}$/, `made for ${JSON.stringify(given)}`);
    t.not(id, given);
    made.add(id);
  }
  t.equal(made.size, 7, 'each made id is new');
  const errored = await app.inject({ url: '/nowhere', headers: { 'x-trace-id': 'trace-of-a-404' } });
  t.equal(errored.headers['x-trace-id'], 'trace-of-a-404', 'error answers carry it too');
  const cors = await app.inject({ url: '/health', headers: { origin: 'https://example.com' } });
  t.match(cors.headers['access-control-expose-headers'], /x-trace-id/, 'browsers may read it');
  await app.inject({ method: 'POST', url: '/function/add', headers: { 'x-trace-id': 'logged-trace' }, body: { a: 1, b: 1 } });
  const line = JSON.parse(await app.waitFor(/logged-trace/)) as Record<string, unknown>;
  t.match(line, { trace_id: 'logged-trace', route: '/function/add', status: 200 }, 'in the access log');
});

t.test('Front.onResponse and the svc:http:response channel: route templates, never raw paths', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  const seen: ResponseInfo[] = [];
  const listener = (info: unknown) => seen.push(info as ResponseInfo);
  subscribe(HTTP_RESPONSE_CHANNEL, listener);
  t.teardown(() => unsubscribe(HTTP_RESPONSE_CHANNEL, listener));
  await app.inject({ method: 'POST', url: '/walker/Peek/0123456789abcdef0123456789abcdef', headers: { 'x-trace-id': 't1' } });
  await app.inject({ url: '/no/such/thing/42' });
  await app.inject({ url: '/no/such/thing/43' });
  await app.inject({ url: '/health' });
  await app.inject({ method: 'OPTIONS', url: '/walker/Peek' });
  t.same(
    seen.map((s) => [s.method, s.route, s.status]),
    [
      ['POST', '/walker/Peek/{node_id}', 401],
      ['GET', 'unmatched', 404],
      ['GET', 'unmatched', 404],
      ['GET', '/health', 200],
      ['OPTIONS', 'preflight', 204],
    ],
  );
  t.equal(seen[0]?.traceId, 't1');
  t.ok(seen.every((s) => typeof s.durationMs === 'number' && s.durationMs >= 0 && typeof s.requestId === 'string'));
});

t.test('fetch with FormData: multipart uploads reach the walker through inject', async (t) => {
  const app = await testApp({ entry: new URL('../fixtures/uploads-app.ts', import.meta.url).pathname });
  t.teardown(() => app.close());
  const form = new FormData();
  form.append('first', new Blob([Buffer.from('hello file')], { type: 'text/plain' }), 'a.txt');
  form.append('note', 'n1');
  const res = await app.fetch('/walker/Files', { method: 'POST', body: form });
  t.equal(res.status, 200);
  const body = (await res.json()) as { data: { reports: unknown[] } };
  t.match(body.data.reports, [{ first: { filename: 'a.txt', size: 10 }, second: null, note: 'n1' }]);
});

t.test('a request’s trace id reaches the walker: this.traceId, and this.log lines carry it', async (t) => {
  const { entry: onEntry, Root, Walker } = await import('svc');
  class Traced extends Walker {
    static access = 'pub' as const;
    @onEntry(Root) go() {
      this.log.info({ step: 1 }, 'walked');
      this.report(this.traceId ?? null);
    }
  }
  const app = await testApp({ app: { Traced } });
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/walker/Traced', headers: { 'x-trace-id': 'trace-for-walker' } });
  t.same(res.json().data.reports, ['trace-for-walker']);
  const line = JSON.parse(await app.waitFor(/"msg":"walked"/)) as Record<string, unknown>;
  t.match(line, { walker: 'Traced', trace_id: 'trace-for-walker', root: /^[0-9a-f]{32}$/, step: 1 });
  const made = await app.inject({ method: 'POST', url: '/walker/Traced' });
  t.equal(made.json().data.reports[0], made.headers['x-trace-id'], 'a made trace id too');
});
