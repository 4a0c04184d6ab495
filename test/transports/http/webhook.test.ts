// Webhook walkers in process (seed 000 §4.1 rule 6, §4.5, §5.7): POST /webhook/<Name> only, an API key and an
// HMAC-SHA256 of the raw body keyed with the webhook secret; every refusal with its status and code.
import t from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import { hashKey } from '../../../actors/identity/index.ts';
import { startApp, type InProcessServer as Server } from '../../helpers/app.ts';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { post, tokenFor } from '../../kit/index.ts';

const entry = new URL('../../fixtures/webhook-app.ts', import.meta.url).pathname;
const hookEntry = new URL('../../fixtures/webhook-hook-app.ts', import.meta.url).pathname;

const sign = (secret: string, body: string, ts?: string) => createHmac('sha256', secret).update(ts === undefined ? body : `${ts}.${body}`).digest('hex');
const nowSeconds = () => String(Math.floor(Date.now() / 1000));

/** A raw POST: the body bytes exactly as given, the headers exactly as given (no content type added). */
async function send(server: Server, path: string, body: string, headers: Record<string, string>) {
  const res = await server.app.inject({ method: 'POST', url: path, headers, body });
  return { status: res.status, body: res.json() };
}

interface User {
  id: string;
  name: string;
  token: string;
}

async function user(server: Server, name: string): Promise<User> {
  const id = await register(server.url, name);
  return { id, name, token: await tokenOf(server.url, name) };
}

async function createKey(server: Server, u: User, body: Record<string, unknown> = { name: 'test' }) {
  const res = await post(`${server.url}/api-key/create`, body, bearer(u.token));
  if (res.status !== 201) throw new Error(`api-key/create: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { api_key: string; api_key_id: string };
}

let server: Server;
let secret: string;
let alice: User;
let aliceKey: string;
t.before(async () => {
  server = await startApp({ entry });
  secret = server.app.webhookSecret;
  alice = await user(server, 'alice_w');
  aliceKey = (await createKey(server, alice)).api_key;
});
t.teardown(() => server.stop());

/** A signed webhook request of `payload` (or of raw text) with alice's key. */
function signed(payload: unknown, extra: Record<string, string> = {}) {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return { body, headers: { 'content-type': 'application/json', 'x-api-key': aliceKey, 'x-webhook-signature': sign(secret, body), ...extra } };
}

t.test('a good signature runs the walker on the key owner\'s root; another user does not see it', async (t) => {
  const { body, headers } = signed({ amount: 12.5, ref: 'inv-1' });
  const res = await send(server, '/webhook/Paid', body, headers);
  t.equal(res.status, 200);
  t.match(res.body, { ok: true, type: 'response', error: null, data: { result: null, reports: [{ user: alice.id, amount: 12.5, ref: 'inv-1' }] } });
  const mine = await post(`${server.url}/walker/Payments`, {}, bearer(alice.token));
  t.same(mine.body.data.reports, [{ amount: 12.5, ref: 'inv-1' }], 'alice\'s own walker sees the payment on her root');
  const bob = await user(server, 'bob_w');
  t.same((await post(`${server.url}/walker/Payments`, {}, bearer(bob.token))).body.data.reports, [], 'bob does not');
  const guest = await server.app.inject({ method: 'POST', url: '/walker/Payments', body: {} });
  t.equal(guest.status, 401);
});

t.test('the signature: sha256= prefix and upper-case hex accepted; anything else is INVALID_SIGNATURE', async (t) => {
  const { body, headers } = signed({ amount: 1 });
  const good = headers['x-webhook-signature'];
  t.equal((await send(server, '/webhook/Paid', body, { ...headers, 'x-webhook-signature': `sha256=${good}` })).status, 200, 'sha256= prefix');
  t.equal((await send(server, '/webhook/Paid', body, { ...headers, 'x-webhook-signature': good.toUpperCase() })).status, 200, 'upper-case hex');
  const { 'x-webhook-signature': _, ...unsigned } = headers;
  const bad: Record<string, Record<string, string>> = {
    missing: unsigned,
    empty: { ...headers, 'x-webhook-signature': '' },
    'of another body': { ...headers, 'x-webhook-signature': sign(secret, JSON.stringify({ amount: 2 })) },
    'keyed with the API key (the seed\'s reading)': { ...headers, 'x-webhook-signature': sign(aliceKey, body) },
    'one character short': { ...headers, 'x-webhook-signature': good.slice(1) },
    'one character more': { ...headers, 'x-webhook-signature': `${good}0` },
    'not hex': { ...headers, 'x-webhook-signature': `${good.slice(0, 63)}g` },
    base64: { ...headers, 'x-webhook-signature': Buffer.from(good, 'hex').toString('base64') },
    'sha1= prefix': { ...headers, 'x-webhook-signature': `sha1=${good}` },
    'two values': { ...headers, 'x-webhook-signature': `${good}, ${good}` },
  };
  for (const [name, h] of Object.entries(bad)) {
    const res = await send(server, '/webhook/Paid', body, h);
    t.equal(res.status, 401, name);
    t.equal(res.body.error.code, 'INVALID_SIGNATURE', name);
  }
});

t.test('the raw bytes are signed: a signature of the re-serialised body is refused', async (t) => {
  const raw = '{ "ref" : "inv-9",\n  "amount": 9 }';
  const reserialised = JSON.stringify(JSON.parse(raw));
  t.not(raw, reserialised);
  const { headers } = signed(raw);
  const res = await send(server, '/webhook/Paid', raw, { ...headers, 'x-webhook-signature': sign(secret, reserialised) });
  t.equal(res.status, 401);
  t.equal(res.body.error.code, 'INVALID_SIGNATURE');
  t.equal((await send(server, '/webhook/Paid', raw, headers)).status, 200, 'the raw body\'s own signature passes');
});

t.test('keys: missing, unknown, malformed, expired, revoked and a deleted user\'s are one 401 UNAUTHORIZED', async (t) => {
  const { body, headers } = signed({ amount: 1 });
  const refusals: Record<string, Record<string, string>> = {};
  const { 'x-api-key': _, ...keyless } = headers;
  refusals.missing = keyless;
  refusals.empty = { ...headers, 'x-api-key': '' };
  refusals.unknown = { ...headers, 'x-api-key': `svc_${randomBytes(32).toString('base64url')}` };
  refusals.malformed = { ...headers, 'x-api-key': 'hello' };
  refusals['a bearer token instead'] = { ...headers, 'x-api-key': alice.token };

  // Expired: written straight into the users store (the API counts whole days).
  const expired = `svc_${randomBytes(32).toString('base64url')}`;
  await server.app.users.putApiKey({
    api_key_id: randomBytes(16).toString('hex'),
    user_id: alice.id,
    name: 'expired',
    key_hash: hashKey(expired),
    walkers: null,
    created_at: new Date(Date.now() - 2 * 86_400_000).toISOString(),
    expires_at: new Date(Date.now() - 1000).toISOString(),
  });
  refusals.expired = { ...headers, 'x-api-key': expired };

  // Revoked: used once (so it is in memory), then revoked: refused at once.
  const revoked = await createKey(server, alice, { name: 'to revoke' });
  t.equal((await send(server, '/webhook/Paid', body, { ...headers, 'x-api-key': revoked.api_key })).status, 200, 'the key works before it is revoked');
  const del = await fetch(`${server.url}/api-key/${revoked.api_key_id}`, { method: 'DELETE', headers: bearer(alice.token) });
  t.equal(del.status, 200);
  refusals.revoked = { ...headers, 'x-api-key': revoked.api_key };

  // A deleted user's key (used once first, so that memory holds it).
  const carol = await user(server, 'carol_w');
  const carolKey = (await createKey(server, carol)).api_key;
  t.equal((await send(server, '/webhook/Paid', body, { ...headers, 'x-api-key': carolKey })).status, 200);
  const admin = await tokenFor('webhook-admin', { server, role: 'admin' });
  t.equal((await fetch(`${server.url}/admin/users/carol_w`, { method: 'DELETE', headers: bearer(admin) })).status, 200);
  refusals['of a deleted user'] = { ...headers, 'x-api-key': carolKey };

  const messages = new Set<string>();
  for (const [name, h] of Object.entries(refusals)) {
    const res = await send(server, '/webhook/Paid', body, h);
    t.equal(res.status, 401, name);
    t.equal(res.body.error.code, 'UNAUTHORIZED', name);
    messages.add(res.body.error.message);
  }
  t.equal(messages.size, 1, 'one message for every kind of bad key: no oracle');
});

t.test('the signature is checked before the key: a bad key with a bad signature is INVALID_SIGNATURE (a leaked key alone learns nothing)', async (t) => {
  const { body, headers } = signed({ amount: 1 });
  const res = await send(server, '/webhook/Paid', body, { ...headers, 'x-api-key': 'nope', 'x-webhook-signature': 'bad' });
  t.equal(res.body.error.code, 'INVALID_SIGNATURE');
  const good = await send(server, '/webhook/Paid', body, { ...headers, 'x-api-key': 'nope' });
  t.equal(good.body.error.code, 'UNAUTHORIZED', 'a good signature with a bad key');
});

t.test('only application/json: text/plain, a form, XML or no content type is 415', async (t) => {
  const { body, headers } = signed({ amount: 1 });
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/vnd.api+json']) {
    const res = await send(server, '/webhook/Paid', body, { ...headers, 'content-type': type });
    t.equal(res.status, 415, type);
    t.equal(res.body.error.code, 'UNSUPPORTED_MEDIA_TYPE', type);
  }
  const { 'content-type': _, ...untyped } = headers;
  t.equal((await send(server, '/webhook/Paid', body, untyped)).status, 415, 'no content type');
  for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8']) {
    t.equal((await send(server, '/webhook/Paid', body, { ...headers, 'content-type': type })).status, 200, type);
  }
});

t.test('timestamps: <ts>.<body> within the window passes; old, future or malformed is INVALID_TIMESTAMP', async (t) => {
  const { body, headers } = signed({ amount: 3 });
  const ts = nowSeconds();
  const withTs = (stamp: string, signature = sign(secret, body, stamp)) => ({ ...headers, 'x-webhook-timestamp': stamp, 'x-webhook-signature': signature });
  t.equal((await send(server, '/webhook/Paid', body, withTs(ts))).status, 200, 'fresh <ts>.<body>');
  t.equal((await send(server, '/webhook/Paid', body, withTs(ts, sign(secret, body)))).status, 200, 'the bare body\'s signature with a timestamp (not required here)');
  const now = Number(ts);
  for (const [name, stamp] of Object.entries({
    'ten minutes old': String(now - 600),
    'ten minutes ahead': String(now + 600),
    milliseconds: String(Date.now()),
    negative: String(-now),
    decimal: `${now}.5`,
    words: 'yesterday',
    'ISO date': new Date().toISOString(),
  })) {
    const res = await send(server, '/webhook/Paid', body, withTs(stamp));
    t.equal(res.status, 401, name);
    t.equal(res.body.error.code, 'INVALID_TIMESTAMP', name);
  }
  // A captured <ts>.<body> request replayed with a fresh timestamp: the signature no longer matches.
  const old = String(now - 100);
  const res = await send(server, '/webhook/Paid', body, withTs(String(now), sign(secret, body, old)));
  t.equal(res.body.error.code, 'INVALID_SIGNATURE', 'a swapped timestamp');
});

t.test('an allow-list key runs only the walkers it names: 403 for the others', async (t) => {
  const key = (await createKey(server, alice, { name: 'shipping only', walkers: ['Shipped'] })).api_key;
  const paid = signed({ amount: 1 });
  const res = await send(server, '/webhook/Paid', paid.body, { ...paid.headers, 'x-api-key': key });
  t.equal(res.status, 403);
  t.equal(res.body.error.code, 'FORBIDDEN');
  const shipped = signed({ parcel: 'p-1' });
  const ok = await send(server, '/webhook/Shipped', shipped.body, { ...shipped.headers, 'x-api-key': key });
  t.equal(ok.status, 200);
  t.match(ok.body.data.reports, [{ parcel: 'p-1', user: alice.id }], 'a pub webhook walker runs for the key owner too');
  const other = await post(`${server.url}/api-key/create`, { name: 'x', walkers: ['Payments'] }, bearer(alice.token));
  t.equal(other.status, 400, 'an allow-list names webhook walkers only');
});

t.test('a webhook walker is 404 under /walker/ (with or without a token, at a node or not) and 405 for GET', async (t) => {
  const { body, headers } = signed({ amount: 1 });
  for (const path of ['/walker/Paid', `/walker/Paid/${'a'.repeat(32)}`, '/walker/Shipped', `/webhook/Paid/${'a'.repeat(32)}`]) {
    for (const extra of [{}, bearer(alice.token)]) {
      const res = await send(server, path, body, { ...headers, ...extra });
      t.equal(res.status, 404, path);
      t.equal(res.body.error.code, 'NOT_FOUND');
    }
  }
  const get = await server.app.inject({ method: 'GET', url: '/webhook/Paid', headers });
  t.equal(get.status, 405);
  t.equal((await send(server, '/webhook/Nope', body, headers)).status, 404, 'an unknown webhook');
  t.equal((await send(server, '/webhook/Payments', body, headers)).status, 404, 'an ordinary walker is not a webhook');
});

t.test('undeclared body fields are accepted and not passed to the walker', async (t) => {
  const { body, headers } = signed({ amount: 4, extra: 'sender metadata', headers: { forged: true }, nested: { deep: [1, 2] } });
  const res = await send(server, '/webhook/Paid', body, headers);
  t.equal(res.status, 200);
  t.match(res.body.data.reports, [{ amount: 4, ref: 'none', extra: 'absent' }], 'the walker saw neither the extra field nor it under its name');
});

t.test('bad bodies with a good signature are 400, never 500', async (t) => {
  for (const [name, raw, code] of [
    ['malformed JSON', '{"amount": 1', 'INVALID_JSON'],
    ['an array', '[1, 2]', 'VALIDATION_ERROR'],
    ['a string', '"x"', 'VALIDATION_ERROR'],
    ['a missing field', '{}', 'VALIDATION_ERROR'],
    ['a wrong type (never coerced)', '{"amount": "3"}', 'VALIDATION_ERROR'],
    ['an empty body', '', 'VALIDATION_ERROR'],
  ] as const) {
    const { headers } = signed(raw);
    const res = await send(server, '/webhook/Paid', raw, headers);
    t.equal(res.status, 400, name);
    t.equal(res.body.error.code, code, name);
  }
});

t.test('/openapi.json documents the webhook routes and their security schemes', async (t) => {
  const doc = (await server.app.inject({ url: '/openapi.json' })).json();
  const op = doc.paths['/webhook/Paid']?.post;
  t.ok(op, 'POST /webhook/Paid');
  t.notOk(doc.paths['/walker/Paid'], 'no /walker/Paid');
  t.notOk(doc.paths['/walker/Paid/{node_id}'], 'no /walker/Paid/{node_id}');
  t.same(op.security, [{ apiKeyAuth: [], webhookSignature: [] }]);
  t.match(op.requestBody.content['application/json'].schema, { properties: { amount: { type: 'number' }, ref: { type: 'string' } }, required: ['amount'] });
  for (const status of ['200', '401', '403', '415']) t.ok(op.responses[status], `documents ${status}`);
  t.match(Object.keys(op.responses['401'].content['application/json'].examples), ['UNAUTHORIZED', 'INVALID_SIGNATURE', 'INVALID_TIMESTAMP']);
  t.match(op.parameters, [{ name: 'X-Webhook-Timestamp', in: 'header', required: false }]);
  t.match(doc.components.securitySchemes, {
    apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    webhookSignature: { type: 'apiKey', in: 'header', name: 'X-Webhook-Signature', description: /HMAC-SHA256 of the raw request body/ },
  });
});

t.test('hooks run before a webhook walker, as the key owner', async (t) => {
  const hooked = await startApp({ entry: hookEntry });
  t.teardown(() => hooked.stop());
  const u = await user(hooked, 'dora_w');
  const key = (await createKey(hooked, u)).api_key;
  const body = JSON.stringify({ amount: 1 });
  const headers = { 'content-type': 'application/json', 'x-api-key': key, 'x-webhook-signature': sign(hooked.app.webhookSecret, body) };
  t.equal((await send(hooked, '/webhook/Paid', body, headers)).status, 200);
  const res = await send(hooked, '/webhook/Paid', body, { ...headers, 'x-block': '1' });
  t.equal(res.status, 403);
  t.match(res.body.error, { code: 'BLOCKED_BY_HOOK', details: { user: u.id } }, 'the hook saw the key owner');
  t.same((await post(`${hooked.url}/walker/Payments`, {}, bearer(u.token))).body.data.reports.length, 1, 'the refused request did not run the walker');
  const unsigned = await send(hooked, '/webhook/Paid', body, { ...headers, 'x-webhook-signature': '0'.repeat(64), 'x-block': '1' });
  t.equal(unsigned.body.error.code, 'INVALID_SIGNATURE', 'no hook runs for a request that is not admitted');
});

t.test('require_timestamp: no timestamp is INVALID_TIMESTAMP, a bare-body signature is INVALID_SIGNATURE', async (t) => {
  const strict = await startApp({ entry, env: { SVC_WEBHOOK_REQUIRE_TIMESTAMP: 'true', WEBHOOK_SECRET: 'a-configured-webhook-secret-of-40-chars!!' } });
  t.teardown(() => strict.stop());
  t.equal(strict.app.webhookSecret, 'a-configured-webhook-secret-of-40-chars!!', 'WEBHOOK_SECRET is the secret');
  const u = await user(strict, 'erin_w');
  const key = (await createKey(strict, u)).api_key;
  const s = strict.app.webhookSecret;
  const body = JSON.stringify({ amount: 5 });
  const base = { 'content-type': 'application/json', 'x-api-key': key };
  const none = await send(strict, '/webhook/Paid', body, { ...base, 'x-webhook-signature': sign(s, body) });
  t.equal(none.status, 401);
  t.equal(none.body.error.code, 'INVALID_TIMESTAMP');
  const ts = nowSeconds();
  const bare = await send(strict, '/webhook/Paid', body, { ...base, 'x-webhook-timestamp': ts, 'x-webhook-signature': sign(s, body) });
  t.equal(bare.status, 401);
  t.equal(bare.body.error.code, 'INVALID_SIGNATURE');
  t.equal((await send(strict, '/webhook/Paid', body, { ...base, 'x-webhook-timestamp': ts, 'x-webhook-signature': sign(s, body, ts) })).status, 200);
  const doc = (await strict.app.inject({ url: '/openapi.json' })).json();
  t.match(doc.paths['/webhook/Paid'].post.parameters, [{ name: 'X-Webhook-Timestamp', required: true }]);
});

t.test('verify_signature = false: the key alone admits; no key is still 401', async (t) => {
  const open = await startApp({ entry, env: { SVC_WEBHOOK_VERIFY_SIGNATURE: 'false' } });
  t.teardown(() => open.stop());
  const u = await user(open, 'finn_w');
  const key = (await createKey(open, u)).api_key;
  const body = JSON.stringify({ amount: 6 });
  t.equal((await send(open, '/webhook/Paid', body, { 'content-type': 'application/json', 'x-api-key': key })).status, 200);
  t.equal((await send(open, '/webhook/Paid', body, { 'content-type': 'application/json' })).status, 401);
  const doc = (await open.app.inject({ url: '/openapi.json' })).json();
  t.same(doc.paths['/webhook/Paid'].post.security, [{ apiKeyAuth: [] }]);
  t.notOk(doc.components.securitySchemes.webhookSignature);
});

t.test('a custom signature header name', async (t) => {
  const custom = await startApp({ entry, env: { SVC_WEBHOOK_SIGNATURE_HEADER: 'X-Hub-Signature-256' } });
  t.teardown(() => custom.stop());
  const u = await user(custom, 'gus_w');
  const key = (await createKey(custom, u)).api_key;
  const body = JSON.stringify({ amount: 7 });
  const sig = `sha256=${sign(custom.app.webhookSecret, body)}`;
  t.equal((await send(custom, '/webhook/Paid', body, { 'content-type': 'application/json', 'x-api-key': key, 'x-hub-signature-256': sig })).status, 200);
  t.equal((await send(custom, '/webhook/Paid', body, { 'content-type': 'application/json', 'x-api-key': key, 'x-webhook-signature': sig })).body.error.code, 'INVALID_SIGNATURE');
  t.ok(custom.app.front.headerNames === 'all' || custom.app.front.headerNames.includes('x-hub-signature-256'), 'the servers copy the configured header');
});
