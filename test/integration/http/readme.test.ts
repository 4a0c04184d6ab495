// What the README and the docs pages it links (the HTTP API reference, the programming model) state about the envelope,
// functions, ids and app errors, checked against a running app.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testApp } from 'svc/testing';

const entry = new URL('../../fixtures/errors-app/tour.ts', import.meta.url).pathname;
const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const page = (file: string) => readFileSync(new URL(`../../../docs/${file}`, import.meta.url), 'utf8');
const HTTP_API = page('reference/http-api.md');
const MODEL = page('concepts/model.md');

t.test('the envelope: data or error, the other null; /user/* repeats its status in meta.extra.http_status', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  const ok = await app.inject({ method: 'POST', url: '/walker/AddNote', body: { text: 'hi' } });
  t.same(Object.keys(ok.json()).sort(), ['data', 'error', 'meta', 'ok', 'type']);
  t.match(ok.json(), { ok: true, type: 'response', error: null, data: { result: null, reports: [{ text: 'hi' }] }, meta: { request_id: String } });
  t.equal(ok.json().meta.extra, undefined, 'walker answers carry no meta.extra');
  const reg = await app.inject({ method: 'POST', url: '/user/register', body: { identities: [{ type: 'username', value: 'zoe' }], credential: { type: 'password', password: 'correct horse battery staple' } } });
  t.equal(reg.status, 201);
  t.match(reg.json(), { ok: true, error: null, meta: { extra: { http_status: 201 } } });
  const bad = await app.inject({ method: 'POST', url: '/user/login', body: { identity: { type: 'username', value: 'zoe' }, credential: { type: 'password', password: 'wrong password here' } } });
  t.equal(bad.status, 401);
  t.match(bad.json(), { ok: false, data: null, error: { code: 'INVALID_CREDENTIALS' }, meta: { extra: { http_status: 401 } } }, 'errors too');
  const me = await app.inject({ url: '/user/me' });
  t.match([me.status, me.json().meta], [401, { extra: { http_status: 401 } }]);
  const nowhere = await app.inject({ url: '/user/nosuch' });
  t.match([nowhere.status, nowhere.json().meta], [404, { extra: { http_status: 404 } }]);
  const walker404 = await app.inject({ method: 'POST', url: '/walker/Nope', body: {} });
  t.equal(walker404.json().meta.extra, undefined, 'not on walker routes');
  t.match(HTTP_API, /`meta\.extra\.http_status`/, 'docs/reference/http-api.md says so');
});

t.test('node.id is the 32-hex id reports carry and /walker/<Name>/<node_id> takes; SvcError answers its own status', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  const [note] = (await app.inject({ method: 'POST', url: '/walker/AddNote', body: { text: 'milk' } })).json().data.reports as { id: string }[];
  t.match(note?.id, /^[0-9a-f]{32}$/);
  const at = await app.inject({ method: 'POST', url: `/walker/GetNote/${note?.id}`, body: {} });
  t.equal(at.status, 200);
  t.match(at.json().data.reports, [{ id: note?.id, type: 'Note', context: { text: 'milk' } }]);
  const root = await app.inject({ method: 'POST', url: '/walker/GetNote', body: {} });
  t.equal(root.status, 404);
  t.match(root.json().error, { code: 'NOTE_NOT_FOUND', message: 'no such note' });
  t.match(HTTP_API, /throw new SvcError\('NOTE_NOT_FOUND', 'no such note', \{ status: 404 \}\)/, 'docs/reference/http-api.md shows it');
});

t.test('fn’s second argument: ctx.root is the caller’s root, ctx.caller who calls', async (t) => {
  const app = await testApp({ entry });
  t.teardown(() => app.close());
  await app.inject({ method: 'POST', url: '/walker/AddNote', body: { text: 'a' } });
  const guest = (await app.inject({ method: 'POST', url: '/function/whoami', body: {} })).json().data.result;
  t.match(guest, { root: '00000000000000000000000000000000', rootIdOfCaller: '00000000000000000000000000000000', user: null, notes: 1 });
  await app.inject({ method: 'POST', url: '/user/register', body: { identities: [{ type: 'username', value: 'ann' }], credential: { type: 'password', password: 'correct horse battery staple' } } });
  const login = (await app.inject({ method: 'POST', url: '/user/login', body: { identity: { type: 'username', value: 'ann' }, credential: { type: 'password', password: 'correct horse battery staple' } } })).json().data;
  const mine = (await app.inject({ method: 'POST', url: '/function/whoami', headers: { authorization: `Bearer ${login.token}` }, body: {} })).json().data.result;
  t.match(mine, { root: login.root_id, rootIdOfCaller: login.root_id, user: login.user_id, notes: 0 });
  t.match(MODEL, /`ctx\.root` is\s+the caller's root node/, 'docs/concepts/model.md says so');
});

t.test('README: two commands on top, prerequisites first, no macOS-only `open`, no spec references (nor in the docs)', async (t) => {
  const firstSection = README.indexOf('\n## ', README.indexOf('## Run the tests') + 1);
  const top = README.slice(0, firstSection);
  const commands = [...top.matchAll(/```sh\n([^`]*)```/g)].map((m) => (m[1] as string).trim());
  t.same(commands, ['npm install && npm start', 'npm install && npm test'], 'exactly the two commands');
  t.ok(top.indexOf('Node ≥ 20') < top.indexOf('npm install && npm start'), 'prerequisites before the first command');
  t.notMatch(README, /^\s*open https?:/m, 'no macOS-only open');
  const docs = readdirSync(new URL('../../../docs', import.meta.url), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md') && !f.includes('node_modules') && !f.startsWith('.vitepress')).map((f) => join('docs', f));
  t.ok(docs.length > 40, `${docs.length} pages of docs/ read`);
  for (const file of ['README.md', ...docs]) {
    t.notMatch(readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8'), /seed\s*\d*\s*§|§\s*\d/, `${file}: plain words, no spec section numbers`);
  }
  t.match(README, /## Not built yet/);
});
