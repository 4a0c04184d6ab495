// Every generation rule and the envelope, against a real listening server.
import t from 'tap';
import { post, startServer, tokenFor, transport, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;
let server: Server;

t.before(async () => {
  server = await startServer({ entry, workers: 2 });
});
t.teardown(() => server.stop());
t.comment(`transport: ${transport()}`);

const envelopeKeys = ['data', 'error', 'meta', 'ok', 'type'];

t.test('POST /walker/<Name>: fields in, reports out, in the envelope', async (t) => {
  const res = await post(`${server.url}/walker/Echo`, { msg: 'hi', times: 2 });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), envelopeKeys);
  t.match(res.body, { ok: true, type: 'response', data: { result: null, reports: ['hi', 'hi'] }, error: null });
  t.match(res.body.meta.request_id, /\S+/);
  t.equal(res.headers.get('x-request-id'), res.body.meta.request_id);
  const fromBrowser = await post(`${server.url}/walker/Echo`, { msg: 'hi' }, { origin: 'https://app.example' });
  t.equal(fromBrowser.headers.get('access-control-allow-origin'), '*', 'CORS headers for requests with an Origin');
  t.equal(fromBrowser.headers.get('access-control-expose-headers'), 'x-request-id, x-trace-id');
  t.match(fromBrowser.headers.get('x-trace-id'), /^[0-9a-f]{32}$/, 'a trace id made for a request without one');
  const given = await post(`${server.url}/walker/Echo`, { msg: 'x' }, { 'x-request-id': 'my-trace-123' });
  t.equal(given.body.meta.request_id, 'my-trace-123', 'a caller request id is kept');
  const traced = await post(`${server.url}/walker/Echo`, { msg: 'x' }, { 'x-trace-id': '4bf92f3577b34da6a3ce929d0e0e4736' });
  t.equal(traced.headers.get('x-trace-id'), '4bf92f3577b34da6a3ce929d0e0e4736', 'a caller trace id comes back over a real socket');
  const unfit = await post(`${server.url}/walker/Echo`, { msg: 'x' }, { 'x-trace-id': 'not/a trace' });
  t.match(unfit.headers.get('x-trace-id'), /^[0-9a-f]{32}$/, 'an unfit one is replaced');
});

t.test('POST /function/<name>: the return value in data.result', async (t) => {
  const res = await post(`${server.url}/function/add`, { a: 2, b: 40 });
  t.match(res.body, { ok: true, data: { result: 42, reports: [] } });
});

t.test('private walkers and functions need a token; with one they run on the user’s own root', async (t) => {
  const anon = await post(`${server.url}/walker/Whoami`, {});
  t.equal(anon.status, 401);
  t.match(anon.body, { ok: false, data: null, error: { code: 'UNAUTHORIZED' } });
  t.equal((await post(`${server.url}/function/secret`, {})).status, 401);
  const token = await tokenFor('alice', { server, role: 'admin' });
  const me = await post(`${server.url}/walker/Whoami`, {}, { authorization: `Bearer ${token}` });
  t.equal(me.status, 200);
  t.match(me.body.data.reports[0], { user: 'alice', role: 'admin', root: /^[0-9a-f]{32}$/ });
  const bob = await post(`${server.url}/walker/Whoami`, {}, { authorization: `Bearer ${await tokenFor('bob', { server })}` });
  t.not(bob.body.data.reports[0].root, me.body.data.reports[0].root, 'each user has a root');
  const fnRes = await post(`${server.url}/function/secret`, {}, { authorization: `Bearer ${token}` });
  t.equal(fnRes.body.data.result.root, me.body.data.reports[0].root);
});

t.test('unknown walkers and functions are 404 with or without a token', async (t) => {
  const token = await tokenFor('alice', { server });
  for (const path of ['/walker/Nope', '/function/nope', '/walker/_Guard']) {
    t.equal((await post(`${server.url}${path}`, {})).status, 404, `${path} anonymous`);
    const withToken = await post(`${server.url}${path}`, {}, { authorization: `Bearer ${token}` });
    t.equal(withToken.status, 404, `${path} with token`);
    t.match(withToken.body, { ok: false, error: { code: 'NOT_FOUND' } });
  }
});

t.test('/walker/<Name>/<node_id> spawns at a node; another user gets 404', async (t) => {
  const alice = { authorization: `Bearer ${await tokenFor('alice', { server })}` };
  const made = await post(`${server.url}/walker/AddNote`, { text: 'note one' }, alice);
  const id = made.body.data.reports[0].id as string;
  t.match(id, /^[0-9a-f]{32}$/);
  const read = await post(`${server.url}/walker/ReadNote/${id}`, {}, alice);
  t.match(read.body, { ok: true, data: { reports: [{ id, type: 'Note', context: { text: 'note one' } }] } });
  const bob = await post(`${server.url}/walker/ReadNote/${id}`, {}, { authorization: `Bearer ${await tokenFor('bob', { server })}` });
  t.equal(bob.status, 404, 'not readable by bob: 404, never the data');
  t.notOk(JSON.stringify(bob.body).includes('note one'));
  t.equal((await post(`${server.url}/walker/ReadNote/${'0'.repeat(31)}f`, {}, alice)).status, 404);
});

t.test('restspec: GET with a path parameter and query parameters converted to their types', async (t) => {
  const res = await fetch(`${server.url}/items/42?q=milk&limit=5&exact=true`);
  const body = (await res.json()) as { data: { reports: unknown[] } };
  t.equal(res.status, 200);
  t.same(body.data.reports, [{ item_id: 42, q: 'milk', limit: 5, exact: true }]);
  const bad = await fetch(`${server.url}/items/not-a-number`);
  t.equal(bad.status, 400);
  t.match(await bad.json(), { error: { code: 'VALIDATION_ERROR', message: 'Item: field "item_id" must be an integer' } });
  const typo = await fetch(`${server.url}/items/42?limt=5`);
  t.equal(typo.status, 400);
  t.match(await typo.json(), { error: { code: 'VALIDATION_ERROR', message: 'Item: unknown field "limt"' } }, 'an unknown query parameter is refused');
  t.equal((await fetch(`${server.url}/items/42?_=1712345678`)).status, 200, 'a cache-buster (_-prefixed) is not');
  const put = await fetch(`${server.url}/things/pi`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 3.14 }) });
  t.same(((await put.json()) as { data: { reports: unknown[] } }).data.reports, [{ name: 'pi', value: 3.14 }]);
  const wrongMethod = await fetch(`${server.url}/things/pi`, { method: 'POST', body: '{}' });
  t.equal(wrongMethod.status, 405);
  t.match(wrongMethod.headers.get('allow'), /PUT/);
  t.match(await wrongMethod.json(), { ok: false, error: { code: 'METHOD_NOT_ALLOWED' } });
});

t.test('multipart uploads for T.Upload() fields', async (t) => {
  const form = new FormData();
  form.append('file', new Blob(['hello upload'], { type: 'text/plain' }), 'greeting.txt');
  form.append('note', 'a note');
  form.append('copies', '3');
  const res = await fetch(`${server.url}/walker/Upload`, { method: 'POST', body: form });
  t.equal(res.status, 200);
  t.same(((await res.json()) as { data: { reports: unknown[] } }).data.reports, [
    { filename: 'greeting.txt', mimetype: 'text/plain', size: 12, text: 'hello upload', note: 'a note', copies: 3 },
  ]);
});

t.test('envelope: false with produces; functions are served ahead of static files', async (t) => {
  const res = await fetch(`${server.url}/install.sh`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/x-shellscript; charset=utf-8');
  t.equal(await res.text(), '#!/bin/sh\necho installed\n', 'the function wins over public/install.sh');
  const file = await fetch(`${server.url}/hello.txt`);
  t.equal(await file.text(), 'hello static\n');
  t.match(file.headers.get('content-type'), /text\/plain/);
  const home = await fetch(`${server.url}/`);
  t.match(await home.text(), /static home/);
  for (const path of ['/../package.json', '/..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/package.json', '/hello.txt%00.js']) {
    const r = await fetch(`${server.url}${path}`);
    t.not(r.status, 200, `${path} does not leave public/`);
    t.notOk((await r.text()).includes('"name"'));
  }
});

t.test('the raw body reaches a walker that asks for it', async (t) => {
  const raw = '{"x": 1,   "request": "ignored"}';
  const res = await post(`${server.url}/walker/RawBody`, raw);
  t.same(res.body.data.reports, [{ method: 'POST', path: '/walker/RawBody', body: raw }]);
});

t.test('hook walkers run before every generated route and can answer early', async (t) => {
  const blocked = await post(`${server.url}/walker/Echo`, { msg: 'x' }, { 'x-block': 'yes' });
  t.equal(blocked.status, 418);
  t.match(blocked.body, { ok: false, error: { code: 'BLOCKED_BY_HOOK', message: 'blocked POST /walker/Echo' } });
  t.equal((await post(`${server.url}/function/add`, { a: 1, b: 2 }, { 'x-block': 'yes' })).status, 418, 'functions too');
  t.equal((await post(`${server.url}/walker/Echo`, { msg: 'x' }, { 'x-block': 'no' })).status, 200);
  // Hooks go with the run in one message to its partition: on the other worker for about half of these users' graphs.
  for (let i = 0; i < 8; i++) {
    const auth = { authorization: `Bearer ${await tokenFor(`hooked-${i}`, { server })}` };
    const refused = await post(`${server.url}/walker/Whoami`, {}, { ...auth, 'x-block': 'yes' });
    t.match([refused.status, refused.body.error?.code], [418, 'BLOCKED_BY_HOOK'], `refused on user ${i}'s graph`);
    t.equal((await post(`${server.url}/walker/Whoami`, {}, auth)).status, 200, `let through on user ${i}'s graph`);
  }
});

t.test('failures: each class answers a 4xx/5xx envelope with a stable code, and the server keeps serving', async (t) => {
  const cases: [string, () => Promise<{ status: number; body: any }>, number, string][] = [
    ['malformed JSON', () => post(`${server.url}/walker/Echo`, '{"msg": '), 400, 'INVALID_JSON'],
    ['a JSON array', () => post(`${server.url}/walker/Echo`, '[1,2]'), 400, 'VALIDATION_ERROR'],
    ['wrong type (no coercion)', () => post(`${server.url}/walker/Echo`, { msg: 5 }), 400, 'VALIDATION_ERROR'],
    ['"3" is not a number', () => post(`${server.url}/function/add`, { a: '3', b: 1 }), 400, 'VALIDATION_ERROR'],
    ['missing field', () => post(`${server.url}/walker/Echo`, {}), 400, 'VALIDATION_ERROR'],
    ['out of range', () => post(`${server.url}/walker/Echo`, { msg: 'x', times: 1000 }), 400, 'VALIDATION_ERROR'],
    ['unknown field', () => post(`${server.url}/walker/Echo`, { msg: 'x', titel: 'y' }), 400, 'VALIDATION_ERROR'],
    ['unknown route', () => post(`${server.url}/nowhere`, {}), 404, 'NOT_FOUND'],
    ['walker throws', () => post(`${server.url}/walker/Boom`, {}), 500, 'EXECUTION_ERROR'],
    ['function throws', () => post(`${server.url}/function/failing`, {}), 500, 'EXECUTION_ERROR'],
    ['report is not JSON', () => post(`${server.url}/walker/BadReport`, {}), 500, 'EXECUTION_ERROR'],
  ];
  for (const [name, call, status, code] of cases) {
    const res = await call();
    t.equal(res.status, status, `${name}: ${status}`);
    t.match(res.body, { ok: false, type: 'response', data: null, error: { code, message: String } }, `${name}: ${code}`);
    t.notOk(JSON.stringify(res.body).includes('    at '), `${name}: no stack trace`);
  }
  const boom = await post(`${server.url}/walker/Boom`, {});
  t.equal(boom.body.error.message, 'kaboom from the walker');
  const fields = await post(`${server.url}/walker/Echo`, { msg: 5 });
  t.equal(fields.body.error.message, 'Echo: field "msg" must be a string', 'a sentence naming the field');
  t.same(fields.body.error.details, [{ field: 'msg', message: 'must be a string' }], 'details name the field');
  const missing = await post(`${server.url}/walker/Echo`, {});
  t.same(missing.body.error, { code: 'VALIDATION_ERROR', message: 'Echo: missing required field "msg"', details: [{ field: 'msg', message: 'missing required field' }] });
  const typo = await post(`${server.url}/walker/Echo`, { msg: 'x', tims: 2 });
  t.equal(typo.status, 400, 'an undeclared field is refused');
  t.same(typo.body.error, { code: 'VALIDATION_ERROR', message: 'Echo: unknown field "tims"', details: [{ field: 'tims', message: 'unknown field' }] });
  t.equal((await post(`${server.url}/walker/Echo`, { msg: 'still up' })).status, 200);
});

t.test('a body over the limit is 413', async (t) => {
  const big = JSON.stringify({ msg: 'x'.repeat(1024 * 1024 + 10) });
  const res = await post(`${server.url}/walker/Echo`, big);
  t.equal(res.status, 413);
  t.match(res.body, { ok: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  t.equal((await post(`${server.url}/walker/Echo`, { msg: 'after' })).status, 200);
});

t.test('a body over the limit, declared or streamed, always gets its 413 before the connection closes', async (t) => {
  // Closing on a client that is still sending resets the connection: the client then sees no answer.
  const big = Buffer.alloc(4 * 1024 * 1024, 120);
  for (let i = 0; i < 8; i++) {
    const declared = await fetch(`${server.url}/walker/Echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    t.equal(declared.status, 413, `declared length, try ${i}`);
    t.match(await declared.json(), { error: { code: 'PAYLOAD_TOO_LARGE' } });
    const chunks = [big.subarray(0, 1 << 20), big.subarray(1 << 20, 2 << 20), big.subarray(2 << 20)];
    const streamed = await fetch(`${server.url}/walker/Echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    t.equal(streamed.status, 413, `chunked, try ${i}`);
    t.match(await streamed.json(), { error: { code: 'PAYLOAD_TOO_LARGE' } });
  }
  t.equal((await post(`${server.url}/walker/Echo`, { msg: 'after' })).status, 200);
});

t.test('CORS: permissive, with preflight', async (t) => {
  const res = await fetch(`${server.url}/walker/Echo`, {
    method: 'OPTIONS',
    headers: { origin: 'https://example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  t.equal(res.status, 204);
  t.equal(res.headers.get('access-control-allow-origin'), '*');
  t.match(res.headers.get('access-control-allow-methods'), /POST/);
  t.equal(res.headers.get('access-control-allow-headers'), 'authorization, content-type');
});

t.test('health and readiness', async (t) => {
  for (const [path, body] of [
    ['/healthz', { status: 'ok' }],
    ['/healthz/live', { status: 'alive' }],
    ['/healthz/ready', { status: 'ready' }],
    ['/health', { status: 'ok' }],
    ['/ready', { status: 'ready' }],
  ] as const) {
    const res = await fetch(`${server.url}${path}`);
    t.equal(res.status, 200, path);
    t.match(await res.json(), body, path);
  }
});

t.test('path, query and form values convert strictly', async (t) => {
  for (const [path, ok] of [
    ['/items/7', true],
    ['/items/1.5', false],
    ['/items/%20', false],
    ['/items/0x10', false],
    ['/items/1e3', false],
    ['/items/-3', true],
    ['/items/7?limit=2.5', false],
    ['/items/7?limit=', false],
    ['/items/7?exact=yes', false],
    ['/items/7?exact=false', true],
  ] as const) {
    const res = await fetch(`${server.url}${path}`);
    t.equal(res.status, ok ? 200 : 400, path);
  }
  const form = new FormData();
  form.append('file', new Blob(['x']), 'x.txt');
  form.append('copies', '2.7');
  t.equal((await fetch(`${server.url}/walker/Upload`, { method: 'POST', body: form })).status, 400, 'multipart 2.7 is not an integer');
});

t.test('HEAD answers like GET, without a body', async (t) => {
  const headers = { 'x-request-id': 'same-id-for-both' }; // the envelope holds it: same length both ways
  for (const path of ['/healthz', '/hello.txt', '/items/3', '/install.sh']) {
    const get = await fetch(`${server.url}${path}`, { headers });
    const getBody = await get.arrayBuffer();
    const head = await fetch(`${server.url}${path}`, { method: 'HEAD', headers });
    t.equal(head.status, get.status, `${path}: same status`);
    t.equal(head.headers.get('content-type'), get.headers.get('content-type'), `${path}: same type`);
    t.equal(Number(head.headers.get('content-length')), getBody.byteLength, `${path}: the GET body's length`);
    t.equal((await head.arrayBuffer()).byteLength, 0, `${path}: no body`);
  }
  t.equal(await (await fetch(`${server.url}/install.sh`, { method: 'HEAD' })).text(), '');
});

t.test('content types: JSON-ish bodies are read, others are 415; multipart needs a boundary', async (t) => {
  const xml = await fetch(`${server.url}/walker/Echo`, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<msg>x</msg>' });
  t.equal(xml.status, 415);
  t.match(await xml.json(), { error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
  const curlStyle = await fetch(`${server.url}/walker/Echo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '{"msg":"curl -d"}' });
  t.equal(curlStyle.status, 200, 'curl -d bodies (form-urlencoded) are read as JSON');
  const noBoundary = await fetch(`${server.url}/walker/Upload`, { method: 'POST', headers: { 'content-type': 'multipart/form-data' }, body: 'x' });
  t.equal(noBoundary.status, 400);
  t.match(await noBoundary.json(), { error: { code: 'VALIDATION_ERROR', message: /boundary/ } });
});

t.test('a multipart part named after filename= is read by its own name', async (t) => {
  const body = '--zzz\r\nContent-Disposition: form-data; filename="a.txt"; name="file"\r\n\r\nDATA\r\n--zzz--\r\n';
  const res = await fetch(`${server.url}/walker/Upload`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=zzz' }, body });
  t.equal(res.status, 200);
  t.match(await res.json(), { data: { reports: [{ filename: 'a.txt', text: 'DATA' }] } });
});

t.test('hooks run before authentication', async (t) => {
  const res = await post(`${server.url}/walker/Whoami`, {}, { 'x-block': 'yes' });
  t.equal(res.status, 418, 'the hook answers even without a token');
});
