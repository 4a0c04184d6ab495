// list_examples and get_example: the repository's example apps and the tool server's snippet apps,
// by name only (no path reaches outside them) — and each snippet app really works as its header says.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { testApp, type TestApp } from 'svc/testing';
import { EXAMPLE_FOLDERS, getExample, listExamples } from '../../mcp/tools/examples.ts';
import { ToolInputError } from '../../mcp/types.ts';

const SNIPPETS = ['access-grants', 'basic-walker', 'function-endpoint', 'graph-traversal', 'hooks-and-errors'];

t.test('the categories: the repository\'s apps, then the snippet apps', async (t) => {
  const { categories } = listExamples({});
  const names = categories.map((c) => c.name);
  for (const name of ['todo', ...SNIPPETS]) t.ok(names.includes(name), `${name} is listed`);
  t.ok(names.indexOf('todo') < names.indexOf('basic-walker'), 'examples/ first');
  t.same(EXAMPLE_FOLDERS, ['examples', 'mcp/examples']);
  for (const c of categories) {
    t.ok(c.description.length > 10 && c.description !== 'An svc example', `${c.name}: a description of its own`);
    t.ok(c.files.length > 0, `${c.name}: files`);
    t.notOk(c.files.some((f) => f.split('/').some((part) => part.startsWith('.') || part === 'node_modules')), `${c.name}: no dot files or packages`);
    t.match(c.source, /^(examples|mcp\/examples)\//);
  }
  t.same(listExamples({ category: 'TODO' }).categories.map((c) => c.name), ['todo'], 'a category by name, any case');
  t.match(listExamples({ category: 'nope' }), { categories: [], error: /no example category "nope"; known: .*todo/ });
  t.throws(() => listExamples({ category: 3 as unknown as string }), ToolInputError);
});

t.test('get_example: the files as on disk; unknown and path-like names are errors', async (t) => {
  const todo = getExample({ name: 'todo' });
  t.ok('files' in todo);
  if ('files' in todo) {
    t.same(todo.files.map((f) => f.path), ['app.ts']);
    t.equal(todo.files[0]?.content, readFileSync(new URL('../../examples/todo/app.ts', import.meta.url), 'utf8'));
  }
  for (const name of SNIPPETS) {
    const example = getExample({ name });
    t.ok('files' in example && example.files.some((f) => f.path === 'app.ts' && f.content.includes("from 'svc'")), `${name}: an app importing svc`);
  }
  for (const name of ['nope', '../examples/todo', 'todo/../../package.json', '/etc/passwd', '..', '.', '.svc', 'todo/app.ts', '%2e%2e']) {
    t.match(getExample({ name }), { error: /no example named/ }, `${JSON.stringify(name)} is not an example`);
  }
  t.throws(() => getExample({ name: '' }), ToolInputError);
  t.throws(() => getExample({ name: undefined as unknown as string }), ToolInputError);
});

// ---------------------------------------------------------------- the snippet apps run

async function start(t: Test, name: string): Promise<TestApp> {
  const app = await testApp({ entry: new URL(`../../mcp/examples/${name}/app.ts`, import.meta.url).pathname });
  t.teardown(() => app.close());
  return app;
}

async function signIn(app: TestApp, username: string): Promise<{ headers: Record<string, string>; root: string }> {
  const credential = { type: 'password', password: 'a long passphrase' };
  await app.inject({ method: 'POST', url: '/user/register', body: { identities: [{ type: 'username', value: username }], credential } });
  const res = await app.inject({ method: 'POST', url: '/user/login', body: { identity: { type: 'username', value: username }, credential } });
  return { headers: { authorization: `Bearer ${res.json().data.token}` }, root: res.json().data.root_id };
}

t.test('basic-walker: a public writer, a private reader', async (t) => {
  const app = await start(t, 'basic-walker');
  const ann = await signIn(app, 'ann');
  const greet = await app.inject({ method: 'POST', url: '/walker/Greet', headers: ann.headers, body: { name: 'Ada' } });
  t.match(greet.json().data.reports[0], { type: 'Greeting', context: { name: 'Ada', text: 'Hello, Ada!' } });
  t.equal((await app.inject({ method: 'POST', url: '/walker/Greetings' })).status, 401);
  t.equal((await app.inject({ method: 'POST', url: '/walker/Greetings', headers: ann.headers })).json().data.reports.length, 1);
});

t.test('function-endpoint: pure, stateful and raw functions', async (t) => {
  const app = await start(t, 'function-endpoint');
  const ann = await signIn(app, 'ann');
  t.equal((await app.inject({ method: 'POST', url: '/function/add', body: { a: 1, b: 2 } })).json().data.result, 3);
  t.match((await app.inject({ method: 'POST', url: '/function/recall', headers: ann.headers, body: { key: 'k' } })).json(), { error: { code: 'MEMO_NOT_FOUND' } });
  await app.inject({ method: 'POST', url: '/function/remember', headers: ann.headers, body: { key: 'k', value: 'v' } });
  t.equal((await app.inject({ method: 'POST', url: '/function/recall', headers: ann.headers, body: { key: 'k' } })).json().data.result, 'v');
  const raw = await app.inject({ method: 'GET', url: '/version.txt' });
  t.equal(raw.body, '1.0.0\n');
});

t.test('graph-traversal: disengage, skip, node abilities, spawning at a node', async (t) => {
  const app = await start(t, 'graph-traversal');
  const ann = await signIn(app, 'ann');
  const top = (await app.inject({ method: 'POST', url: '/walker/MakeTree', headers: ann.headers })).json().data.reports[0].id as string;
  const found = (await app.inject({ method: 'POST', url: '/walker/Find', headers: ann.headers, body: { name: 'api' } })).json().data.reports;
  t.match(found, [{ context: { name: 'api' } }], 'one report: the walk stopped at the match');
  const sizes = (await app.inject({ method: 'POST', url: '/walker/Sizes', headers: ann.headers })).json().data.reports;
  t.same(sizes, [{ name: '/', depth: 0 }, { filesSoFar: 1 }, { name: 'docs', depth: 1 }, { name: 'src', depth: 1 }, { name: 'api', depth: 2 }], 'breadth first, hidden skipped');
  const children = (await app.inject({ method: 'POST', url: `/walker/Children/${top}`, headers: ann.headers })).json().data.reports[0];
  t.same(children.map((c: { name: string }) => c.name), ['docs', 'src', '.cache']);
});

t.test('access-grants: private by default, READ, CONNECT and WRITE grants', async (t) => {
  const app = await start(t, 'access-grants');
  const ann = await signIn(app, 'ann');
  const bob = await signIn(app, 'bob');
  const id = (await app.inject({ method: 'POST', url: '/walker/CreateBoard', headers: ann.headers, body: { title: 'Trip' } })).json().data.reports[0].id as string;
  const status = async (url: string, who: { headers: Record<string, string> }, body: object = {}) => (await app.inject({ method: 'POST', url, headers: who.headers, body })).status;
  t.equal(await status(`/walker/Follow/${id}`, bob), 404, 'not readable: 404, like a missing node');
  t.equal(await status('/walker/ShareBoard', ann, { id, level: 'read' }), 200);
  t.equal(await status(`/walker/Follow/${id}`, bob), 403, 'READ is not CONNECT');
  t.equal(await status(`/walker/Rename/${id}`, bob, { title: 'x' }), 403, 'READ is not WRITE');
  t.equal(await status('/walker/ShareBoard', bob, { id, level: 'write' }), 404, 'only the owner shares');
  t.equal(await status('/walker/ShareBoard', ann, { id, level: 'write', to: bob.root }), 200);
  t.equal(await status(`/walker/Follow/${id}`, bob), 200);
  t.equal(await status(`/walker/Rename/${id}`, bob, { title: 'Trip 2' }), 200);
  t.match((await app.inject({ method: 'POST', url: '/walker/MyBoards', headers: bob.headers })).json().data.reports, [{ id, title: 'Trip 2', mine: false }]);
  t.match((await app.inject({ method: 'POST', url: '/walker/MyBoards', headers: ann.headers })).json().data.reports, [{ id, title: 'Trip 2', mine: true }]);
});

t.test('hooks-and-errors: a hook refuses, SvcError answers its status, nothing of a failed run is kept', async (t) => {
  const app = await start(t, 'hooks-and-errors');
  const key = { 'x-demo-key': 'demo' };
  t.match((await app.inject({ method: 'POST', url: '/walker/Deposit', body: { cents: 5 } })).json(), { error: { code: 'DEMO_KEY_REQUIRED' } });
  const refused = await app.inject({ method: 'POST', url: '/walker/Withdraw', headers: key, body: { cents: 1 } });
  t.match({ status: refused.status, code: refused.json().error.code }, { status: 409, code: 'INSUFFICIENT_FUNDS' });
  t.equal((await app.inject({ method: 'POST', url: '/walker/Deposit', headers: key, body: { cents: '5' } })).status, 400, 'not coerced');
  t.same((await app.inject({ method: 'POST', url: '/walker/Deposit', headers: key, body: { cents: 500 } })).json().data.reports, [{ balance: 500 }]);
  t.equal((await app.inject({ method: 'POST', url: '/walker/Withdraw', headers: key, body: { cents: 900 } })).status, 409);
  t.same((await app.inject({ method: 'POST', url: '/walker/Withdraw', headers: key, body: { cents: 200 } })).json().data.reports, [{ balance: 300 }], 'the refused withdrawal changed nothing');
});
