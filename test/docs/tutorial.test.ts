// The tutorial (docs/tutorial/bookmarks.md), run: its whole app (the ```ts file=app.ts block)
// is written into a new project (svc linked to this checkout), started with `svc start`, and
// every request the page shows is sent with the same body and must answer what the page says.
// The page's own test file (```ts file=test/app.test.ts) is run too, as the page says to run it.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { post, startServer, type Server } from '../kit/index.ts';

const REPO = new URL('../..', import.meta.url).pathname;
const PAGE = readFileSync(join(REPO, 'docs/tutorial/bookmarks.md'), 'utf8');

/** The body of the one fenced ```ts block whose info string names `file`. */
function block(file: string): string {
  const found = [...PAGE.matchAll(/^```ts file=(\S+)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === file);
  if (found.length !== 1) throw new Error(`docs/tutorial/bookmarks.md: ${found.length} blocks marked \`\`\`ts file=${file} (want 1)`);
  return (found[0] as RegExpMatchArray)[2] as string;
}

/** Each body sent below is written on the page as a curl `-d '…'`: a change to either shows here. */
function shown(body: unknown): string {
  const text = JSON.stringify(body);
  if (!PAGE.includes(`-d '${text}'`)) throw new Error(`the tutorial shows no request with the body ${text}`);
  return text;
}

const project = mkdtempSync(join(tmpdir(), 'svc-tutorial-'));
mkdirSync(join(project, 'node_modules'));
symlinkSync(REPO, join(project, 'node_modules/svc'), 'dir');
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'bookmarks', private: true, type: 'module' }));
writeFileSync(join(project, 'app.ts'), block('app.ts'));
mkdirSync(join(project, 'test'));
writeFileSync(join(project, 'test/app.test.ts'), block('test/app.test.ts'));

let server: Server;
t.before(async () => {
  server = await startServer({ entry: join(project, 'app.ts'), cwd: project });
});
t.teardown(async () => {
  await server?.stop();
  rmSync(project, { recursive: true, force: true });
});

t.test('every request of the tutorial answers what the page says', async (t) => {
  const u = server.url;
  const json = (body: unknown) => JSON.parse(shown(body));
  t.match(server.output(), /svc: 12 endpoints from app\.ts/, 'step 9: the endpoint count the page prints');

  // Step 3: private walkers.
  const refused = await post(`${u}/walker/ListBookmarks`, {});
  t.equal(refused.status, 401);
  t.match(refused.body, { ok: false, error: { code: 'UNAUTHORIZED', message: 'walker ListBookmarks needs a bearer token' } });
  const credential = { type: 'password', password: 'a long passphrase' };
  const registered = await post(`${u}/user/register`, json({ identities: [{ type: 'username', value: 'alice' }], credential }));
  t.equal(registered.status, 201);
  t.match(registered.body, { ok: true, data: { user_id: String, message: 'registered' } });
  const login = await post(`${u}/user/login`, json({ identity: { type: 'username', value: 'alice' }, credential }));
  const token = login.body.data.token as string;
  const userId = login.body.data.user_id as string;
  t.type(token, 'string');
  const auth = { authorization: `Bearer ${token}` };

  const node = await post(`${u}/walker/AddBookmark`, json({ url: 'https://nodejs.org', title: 'Node.js', tags: ['js', 'runtime'] }), auth);
  t.equal(node.status, 200);
  t.match(node.body, { ok: true, type: 'response', data: { result: null, reports: [{ id: /^[0-9a-f]{32}$/, type: 'Bookmark', context: { url: 'https://nodejs.org', title: 'Node.js' } }] }, error: null, meta: { request_id: String } });
  const id = node.body.data.reports[0].id as string;
  t.equal((await post(`${u}/walker/AddBookmark`, json({ url: 'https://www.typescriptlang.org', tags: ['js'] }), auth)).status, 200);
  const tagged = await post(`${u}/walker/ListBookmarks`, json({ tag: 'runtime' }), auth);
  t.same(tagged.body.data, { result: null, reports: [{ id, url: 'https://nodejs.org', title: 'Node.js', tags: ['js', 'runtime'] }] });
  const invalid = await post(`${u}/walker/AddBookmark`, json({ url: '' }), auth);
  t.equal(invalid.status, 400);
  t.equal(invalid.body.error.code, 'VALIDATION_ERROR');

  // Step 4: public walkers on the guest graph.
  const suggested = await post(`${u}/walker/Suggest`, json({ url: 'https://example.org' }));
  t.equal(suggested.status, 200);
  t.match(suggested.body.data, { result: null, reports: [{ type: 'Bookmark', context: { url: 'https://example.org', title: '' } }] });
  const suggestions = await post(`${u}/walker/Suggestions`, {});
  t.same(suggestions.body.data, { result: null, reports: [{ urls: ['https://example.org'] }] });
  const alices = await post(`${u}/walker/ListBookmarks`, {}, auth);
  t.notOk(alices.body.data.reports.some((b: { url: string }) => b.url === 'https://example.org'), "the guest graph's suggestion is not in alice's graph");
  t.same((await post(`${u}/walker/Suggestions`, {}, auth)).body.data.reports, [{ urls: ['https://nodejs.org', 'https://www.typescriptlang.org'] }], 'with a token, a public walker runs on the caller\'s graph');

  // Step 5: GET with a path parameter, an error of the app's own.
  const one = await fetch(`${u}/bookmarks/${id}`, { headers: auth });
  t.equal(one.status, 200);
  t.match(await one.json(), { data: { result: null, reports: [{ id, type: 'Bookmark', context: { url: 'https://nodejs.org', title: 'Node.js' } }] } });
  const missing = await fetch(`${u}/bookmarks/0123`, { headers: auth });
  t.equal(missing.status, 404);
  t.match(await missing.json(), { ok: false, error: { code: 'BOOKMARK_NOT_FOUND', message: 'no such bookmark' } });

  // Step 6: a function.
  t.same((await post(`${u}/function/stats`, {}, auth)).body.data, { result: { bookmarks: 2, tags: 2 }, reports: [] });

  // Step 7: the hook.
  const old = await post(`${u}/walker/Suggestions`, {}, { 'x-api-version': '2' });
  t.equal(old.status, 400);
  t.match(old.body, { ok: false, error: { code: 'UNSUPPORTED_VERSION', message: 'API version 2 is not served (POST /walker/Suggestions)' } });
  const current = await post(`${u}/walker/Suggestions`, {}, { 'x-api-version': '1' });
  t.equal(current.status, 200);
  t.same(current.body.data.reports, [{ urls: ['https://example.org'] }]);
  t.equal((await post(`${u}/walker/_ApiVersion`, {})).status, 404, 'a hook is not a route of its own');

  // Step 8: the WebSocket walker.
  const tab2 = await WalkerSocket.connect(u, 'Share', { token });
  const heard = new Promise((resolve) => tab2.onBroadcast((data) => resolve(data.reports)));
  const tab1 = await WalkerSocket.connect(u, 'Share', { token });
  t.same(await tab1.send({ url: 'https://svc.example' }), { result: null, reports: [{ from: userId, url: 'https://svc.example' }] });
  t.same(await heard, [{ from: userId, url: 'https://svc.example' }], 'the other client hears it');
  const anonymous = await WalkerSocket.connect(u, 'Share');
  await anonymous.send({ url: 'https://svc.example' }).catch(() => undefined);
  t.equal((await anonymous.closed).code, 4401, 'no token: closed with 4401');
  await Promise.all([tab1.close(), tab2.close()]);
});

t.test('each step shows a piece of the whole app, word for word', async (t) => {
  // The steps' blocks are fragments (the type-check of the docs skips them): they are checked here instead.
  const whole = block('app.ts').replace(/^[ \t]*\/\*\*.*\*\/\n/gm, '');
  const steps = [...PAGE.matchAll(/^```ts fragment\n([\s\S]*?)^```$/gm)].map((m) => (m[1] as string).trim());
  t.ok(steps.length >= 6, `${steps.length} steps`);
  for (const step of steps) t.ok(whole.includes(step), `in the whole app: ${step.split('\n')[0]}`);
});

t.test("the tutorial's own test file passes, run as the page says (node --import tsx --test test/app.test.ts)", async (t) => {
  t.match(PAGE, /```sh\nnode --import tsx --test test\/app\.test\.ts\n```/);
  // The project has no tsx of its own (a scaffold's devDependencies carry it): this checkout's.
  const tsx = import.meta.resolve('tsx');
  const proc = spawn(process.execPath, ['--import', tsx, '--test', 'test/app.test.ts'], { cwd: project, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => proc.once('exit', resolve));
  t.equal(code, 0, `node --test exited 0:\n${code === 0 ? '' : out}`);
  t.match(out, /# pass 2\b/, 'both tests of the page pass');
  t.match(out, /# fail 0\b/);
});
