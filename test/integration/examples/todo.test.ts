// The README's tour, against the example app `npm start` serves: every step
// answers what the README says it does.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { bearer } from '../../helpers/identity.ts';
import { post, startServer, TEST_SECRET, type Server } from '../../kit/index.ts';

const entry = new URL('../../../examples/todo/app.ts', import.meta.url).pathname;
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

t.test('`npm start` (the README\'s first command) serves the example app', async (t) => {
  const root = new URL('../../..', import.meta.url).pathname;
  const proc = spawn('npm', ['start', '--', '--port', '0', '--host', '127.0.0.1', '--workers', '1'], {
    cwd: root,
    env: { ...process.env, SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-npm-start-')), JWT_SECRET: TEST_SECRET, SVC_ACCESS_LOG: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // npm starts a shell that starts node: stop the whole group
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
  t.teardown(async () => {
    try {
      process.kill(-(proc.pid as number), 'SIGTERM');
    } catch {
      // already gone
    }
    await exited;
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onLine = (line: string) => {
      out += `${line}\n`;
      const m = /Server ready at (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1] as string);
    };
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', onLine);
    void exited.then((code) => reject(new Error(`npm start exited (${code}):\n${out}`)));
  });
  const res = await post(`${url}/walker/AddTodo`, { title: 'from npm start' });
  t.equal(res.status, 200);
  t.match(res.body.data.reports, [{ type: 'Todo', context: { title: 'from npm start' } }]);
});
