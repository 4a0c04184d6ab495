// The fields of a request as the front collects them: validation errors read as sentences, and
// fields the client sent that the endpoint does not declare are refused (or, with
// `strict_fields = false`, accepted with one warning per walker and field). In process (testApp).
import t from 'tap';
import { testApp, type TestApp } from 'svc/testing';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;

let app: TestApp;
t.before(async () => {
  app = await testApp({ entry });
});
t.teardown(() => app.close());

const post = (url: string, body: unknown, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url, headers, body });

t.test('validation errors read as sentences, with the same words per field in details', async (t) => {
  const missing = await post('/walker/AddNote', {}, { authorization: `Bearer ${await tokenOf(app)}` });
  t.equal(missing.status, 400);
  t.match(missing.json().error, { code: 'VALIDATION_ERROR', message: 'AddNote: missing required field "text"', details: [{ field: 'text', message: 'missing required field' }] });
  const wrongType = await post('/walker/Echo', { msg: 5 });
  t.match(wrongType.json().error, { code: 'VALIDATION_ERROR', message: 'Echo: field "msg" must be a string', details: [{ field: 'msg', message: 'must be a string' }] });
  const range = await post('/walker/Echo', { msg: 'x', times: 0 });
  t.equal(range.json().error.message, 'Echo: field "times" must be at least 1');
  const notCoerced = await post('/function/add', { a: '3', b: 1 });
  t.equal(notCoerced.json().error.message, 'add: field "a" must be a number');
});

t.test('an undeclared field in a JSON body is refused with 400, naming it (and what else is wrong)', async (t) => {
  const typo = await post('/walker/Echo', { msg: 'hi', mgs: 'x' });
  t.equal(typo.status, 400);
  t.same(typo.json().error, { code: 'VALIDATION_ERROR', message: 'Echo: unknown field "mgs"', details: [{ field: 'mgs', message: 'unknown field' }] });
  const instead = await post('/walker/Echo', { mgs: 'hi' });
  t.equal(instead.json().error.message, 'Echo: unknown field "mgs"; missing required field "msg"', 'one answer names both');
  t.same(instead.json().error.details, [
    { field: 'mgs', message: 'unknown field' },
    { field: 'msg', message: 'missing required field' },
  ]);
  const fn = await post('/function/add', { a: 1, b: 2, c: 3 });
  t.equal(fn.status, 400);
  t.equal(fn.json().error.message, 'add: unknown field "c"', 'functions too');
  const proto = await app.inject({ method: 'POST', url: '/walker/Echo', headers: { 'content-type': 'application/json' }, body: '{"msg":"x","__proto__":{"times":5}}' });
  t.equal(proto.status, 400);
  t.match(proto.json().error, { code: 'RESERVED_KEY', message: /^body\.__proto__: / }, 'a __proto__ key is refused as such (kernel/reserved-key.ts), never taken as the prototype');
  const ok = await post('/walker/Echo', { msg: 'hi', times: 2 });
  t.same(ok.json().data.reports, ['hi', 'hi'], 'declared fields only: as before');
});

t.test('multipart forms: an undeclared part is refused', async (t) => {
  const form = new FormData();
  form.append('file', new Blob(['x']), 'x.txt');
  form.append('notes', 'typo of note');
  const res = await app.fetch('/walker/Upload', { method: 'POST', body: form });
  t.equal(res.status, 400);
  t.match(await res.json(), { error: { code: 'VALIDATION_ERROR', message: 'Upload: unknown field "notes"' } });
});

t.test('GET: path parameters still work; unknown query parameters are refused, except _-prefixed ones (cache-busters)', async (t) => {
  const item = await app.inject({ url: '/items/42?q=milk&limit=5' });
  t.equal(item.status, 200);
  t.same(item.json().data.reports, [{ item_id: 42, q: 'milk', limit: 5, exact: false }]);
  const busted = await app.inject({ url: '/items/42?_=1712345678&q=milk' });
  t.equal(busted.status, 200, '?_=… passes');
  const typo = await app.inject({ url: '/items/42?limt=5' });
  t.equal(typo.status, 400);
  t.equal(typo.json().error.message, 'Item: unknown field "limt"');
  const put = await app.inject({ method: 'PUT', url: '/things/pi', body: { value: 3.14 } });
  t.same(put.json().data.reports, [{ name: 'pi', value: 3.14 }], 'a path parameter with a body');
  const spawnAt = await post(`/walker/ReadNote/${'0'.repeat(32)}`, { node: 'x' }, { authorization: `Bearer ${await tokenOf(app)}` });
  t.equal(spawnAt.json().error.message, 'ReadNote: unknown field "node"', '/walker/<Name>/<node_id> reads its body the same way');
});

t.test('the runtime’s own fields: hooks still get headers and request; a declared headers field is filled, not taken from the body', async (t) => {
  t.equal((await post('/walker/Echo', { msg: 'x' }, { 'x-block': 'yes' })).status, 418, 'the hook walker ran with its headers and request');
  t.equal((await post('/walker/Echo', { msg: 'x' }, { 'x-block': 'no' })).status, 200);
  const agent = await post('/walker/Agent', { name: 'a', headers: { 'x-agent': 'forged' } }, { 'x-agent': 'real' });
  t.equal(agent.status, 200);
  t.same(agent.json().data.reports, [{ agent: 'real', name: 'a' }]);
  const undeclared = await post('/walker/Echo', { msg: 'x', headers: {} });
  t.equal(undeclared.json().error.message, 'Echo: unknown field "headers"', 'undeclared, it is the client’s: unknown');
});

t.test('a walker reading the raw body takes any fields', async (t) => {
  const raw = '{"x": 1, "event": "push", "request": "ignored"}';
  const res = await app.inject({ method: 'POST', url: '/walker/RawBody', headers: { 'content-type': 'application/json' }, body: raw });
  t.equal(res.status, 200);
  t.same(res.json().data.reports, [{ method: 'POST', path: '/walker/RawBody', body: raw }]);
});

t.test('strict_fields = false: accepted as before, one warning per walker and field', async (t) => {
  const loose = await testApp({ entry, env: { SVC_STRICT_FIELDS: 'false' } });
  t.teardown(() => loose.close());
  t.equal(loose.config['scale.server'].strict_fields, false);
  for (let i = 0; i < 3; i++) {
    const res = await loose.inject({ method: 'POST', url: '/walker/Echo', body: { msg: 'hi', mgs: 'x' } });
    t.equal(res.status, 200);
    t.same(res.json().data.reports, ['hi']);
  }
  t.equal((await loose.inject({ url: '/items/1?limt=5' })).status, 200, 'query parameters too');
  const warnings = loose
    .output()
    .split('\n')
    .filter((line) => line.includes('unknown field'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; endpoint: string; field: string });
  t.match(warnings, [
    { level: 40, msg: 'Echo: unknown field "mgs" ignored (strict_fields is off; told once per walker and field)', endpoint: 'Echo', field: 'mgs' },
    { level: 40, endpoint: 'Item', field: 'limt' },
  ]);
  t.equal(warnings.length, 2, 'once per walker and field, not per request');
  const invalid = await loose.inject({ method: 'POST', url: '/walker/Echo', body: { mgs: 'x' } });
  t.equal(invalid.json().error.message, 'Echo: missing required field "msg"', 'the declared fields are still validated');
});

let token: string | undefined;

/** A token for a user made on the spot (AddNote and ReadNote are private). */
async function tokenOf(app: TestApp): Promise<string> {
  if (token) return token;
  const credential = { type: 'password', password: 'correct horse battery staple' };
  await app.inject({ method: 'POST', url: '/user/register', body: { identities: [{ type: 'username', value: 'fields' }], credential } });
  const login = await app.inject({ method: 'POST', url: '/user/login', body: { identity: { type: 'username', value: 'fields' }, credential } });
  return (token = login.json().data.token as string);
}
