// The README's tour, against the example app `npm start` serves: every step
// answers what the README says it does.
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { bearer } from '../helpers/identity.ts';
import { post, startServer, type Server } from '../helpers/server.ts';

const entry = new URL('../../examples/todo/app.ts', import.meta.url).pathname;
let server: Server;
t.before(async () => {
  server = await startServer({ entry, workers: 2 });
});
t.teardown(() => server.stop());

t.test('the tour', async (t) => {
  const anon = await post(`${server.url}/walker/AddTodo`, { title: 'milk' });
  t.equal(anon.status, 200);
  t.match(anon.body, { ok: true, data: { result: null, reports: [{ id: /^[0-9a-f]{32}$/, type: 'Todo', context: { title: 'milk', done: false } }] } });
  t.equal((await post(`${server.url}/walker/ListTodos`, {})).status, 401, 'private walkers need a token');

  const credential = { type: 'password', password: 'a long passphrase' };
  t.equal((await post(`${server.url}/user/register`, { identities: [{ type: 'username', value: 'alice' }], credential })).status, 201);
  const login = await post(`${server.url}/user/login`, { identity: { type: 'username', value: 'alice' }, credential });
  const token = login.body.data.token as string;
  const auth = bearer(token);
  const eggs = await post(`${server.url}/walker/AddTodo`, { title: 'eggs' }, auth);
  const id = eggs.body.data.reports[0].id as string;
  const list = await post(`${server.url}/walker/ListTodos`, {}, auth);
  t.same(
    list.body.data.reports.map((r: { context: { title: string } }) => r.context.title),
    ['eggs'],
    "alice's own graph: the anonymous todo is not in it",
  );
  const one = await fetch(`${server.url}/todos/${id}`, { headers: auth });
  t.equal(one.status, 200);
  t.match(await one.json(), { data: { reports: [{ id, context: { title: 'eggs' } }] } });
  await post(`${server.url}/walker/ToggleTodo`, { id }, auth);
  t.same((await post(`${server.url}/function/stats`, {}, auth)).body.data.result, { total: 1, done: 1 });
  t.match((await fetch(`${server.url}/user/me`, { headers: auth }).then((r) => r.json())) as object, { ok: true, data: { identities: [{ type: 'username', value: 'alice' }] } });
  t.equal((await fetch(`${server.url}/docs`)).status, 200);
  t.equal((await fetch(`${server.url}/admin`)).status, 200);

  // The live channel: signed-in clients hear each other; anonymous ones are refused.
  const a = await WalkerSocket.connect(server.url, 'Announce', { token });
  const b = await WalkerSocket.connect(server.url, 'Announce', { token });
  const heard = new Promise((resolve) => b.onBroadcast((d) => resolve(d.reports)));
  await a.send({ text: 'lunch?' });
  t.same(await heard, [{ from: login.body.data.user_id, text: 'lunch?' }]);
  const anonymous = await WalkerSocket.connect(server.url, 'Announce');
  await anonymous.send({ text: 'hi' }).catch(() => undefined);
  t.equal((await anonymous.closed).code, 4401);
  await Promise.all([a.close(), b.close()]);
});
