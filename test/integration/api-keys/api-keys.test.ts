// API keys over real HTTP (seed 000 §2.5, §4.3): create, list, revoke on a real `svc start`
// with two worker threads; keys persist across restarts; never shown again; every route refuses
// a missing, forged or expired token.
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { register, tokenOf } from '../../helpers/identity.ts';
import { startServer, tokenFor, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/keys-app.ts', import.meta.url).pathname;

type Envelope = { ok: boolean; data: Record<string, unknown>; error?: { code: string; message: string } };

async function call(server: Server, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: Envelope; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Envelope, text };
}

let server: Server;
let alice: string;
let bob: string;

t.before(async () => {
  server = await startServer({ entry, workers: 2, env: { SVC_MAX_API_KEYS_PER_USER: '3', WEBHOOK_SECRET: 'w'.repeat(40) } });
  await register(server.url, 'alice', { email: 'alice@example.com' });
  await register(server.url, 'bob');
  alice = await tokenOf(server.url, 'alice');
  bob = await tokenOf(server.url, 'bob');
});
t.teardown(() => server?.stop());

t.test('create: the key once, 256 random bits, a year by default; list never shows it', async (t) => {
  const before = Date.now();
  const made = await call(server, 'POST', '/api-key/create', alice, { name: 'payments' });
  t.equal(made.status, 201);
  const key = made.body.data as { api_key: string; api_key_id: string; name: string; created_at: string; expires_at: string; walkers: null };
  t.match(key.api_key, /^svc_[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
  t.match(key.api_key_id, /^[0-9a-f]{32}$/);
  t.equal(key.name, 'payments');
  t.equal(key.walkers, null);
  const created = Date.parse(key.created_at);
  t.ok(created >= before - 1000 && created <= Date.now() + 1000, 'created now');
  t.equal(Date.parse(key.expires_at) - created, 365 * 86_400_000, 'api_key_expiry_days (365) by default');

  const list = await call(server, 'GET', '/api-key/list', alice);
  t.equal(list.status, 200);
  const keys = list.body.data.api_keys as Record<string, unknown>[];
  t.equal(keys.length, 1);
  t.same(Object.keys(keys[0] as object).sort(), ['api_key_id', 'created_at', 'expired', 'expires_at', 'name', 'walkers']);
  t.notOk(list.text.includes(key.api_key), 'the key is not in the list');
  t.notOk(list.text.includes(createHash('sha256').update(key.api_key).digest('hex')), 'nor its hash');
  t.equal(keys[0]?.expired, false);

  const stored = readFileSync(join(server.dataDir, 'users.db')).toString('latin1');
  t.notOk(stored.includes(key.api_key), 'the users store does not hold the key itself');

  const other = await call(server, 'GET', '/api-key/list', bob);
  t.same(other.body.data.api_keys, [], "another user does not see alice's keys");
  await call(server, 'DELETE', `/api-key/${key.api_key_id}`, alice);
});

t.test('expiry: days as asked, 0 is permanent (null); two keys differ', async (t) => {
  const forever = await call(server, 'POST', '/api-key/create', alice, { name: 'forever', expires_in_days: 0 });
  t.equal(forever.status, 201);
  t.equal(forever.body.data.expires_at, null, 'permanent');
  const week = await call(server, 'POST', '/api-key/create', alice, { name: 'week', expires_in_days: 7 });
  t.equal(Date.parse(week.body.data.expires_at as string) - Date.parse(week.body.data.created_at as string), 7 * 86_400_000);
  t.not(forever.body.data.api_key, week.body.data.api_key);
  for (const k of [forever, week]) t.equal((await call(server, 'DELETE', `/api-key/${k.body.data.api_key_id as string}`, alice)).status, 200);
});

t.test('walkers: an allow-list of the app\'s webhook walkers only', async (t) => {
  const ok = await call(server, 'POST', '/api-key/create', alice, { name: 'pay only', walkers: ['OnPayment'] });
  t.equal(ok.status, 201);
  t.same(ok.body.data.walkers, ['OnPayment']);
  const notWebhook = await call(server, 'POST', '/api-key/create', alice, { name: 'x', walkers: ['Deliveries'] });
  t.equal(notWebhook.status, 400);
  t.equal(notWebhook.body.error?.code, 'VALIDATION_ERROR');
  const unknown = await call(server, 'POST', '/api-key/create', alice, { name: 'x', walkers: ['Nope'] });
  t.equal(unknown.status, 400);
  await call(server, 'DELETE', `/api-key/${ok.body.data.api_key_id as string}`, alice);
});

t.test('bad bodies: 400 VALIDATION_ERROR or INVALID_JSON, nothing created', async (t) => {
  const bodies: [unknown, string][] = [
    [{}, 'VALIDATION_ERROR'],
    [{ name: '' }, 'VALIDATION_ERROR'],
    [{ name: '   ' }, 'VALIDATION_ERROR'],
    [{ name: 'x'.repeat(101) }, 'VALIDATION_ERROR'],
    [{ name: 3 }, 'VALIDATION_ERROR'],
    [{ name: 'x', expires_in_days: -1 }, 'VALIDATION_ERROR'],
    [{ name: 'x', expires_in_days: '3' }, 'VALIDATION_ERROR'],
    [{ name: 'x', expires_in_days: 1.5 }, 'VALIDATION_ERROR'],
    [{ name: 'x', expires_in_days: 1e9 }, 'VALIDATION_ERROR'],
    [{ name: 'x', walkers: 'OnPayment' }, 'VALIDATION_ERROR'],
    [{ name: 'x', walkers: ['OnPayment', 'OnPayment'] }, 'VALIDATION_ERROR'],
    [[], 'VALIDATION_ERROR'],
    [{ name: 'x', expires_days: 3 }, 'VALIDATION_ERROR'],
    ['{"name":', 'INVALID_JSON'],
  ];
  for (const [body, code] of bodies) {
    const res = await call(server, 'POST', '/api-key/create', alice, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.error?.code, code, JSON.stringify(body));
  }
  t.same((await call(server, 'GET', '/api-key/list', alice)).body.data.api_keys, [], 'nothing was created');
});

t.test('revoke: only your own, once; a bad id is 404', async (t) => {
  const k = await call(server, 'POST', '/api-key/create', alice, { name: 'r' });
  const id = k.body.data.api_key_id as string;
  const byBob = await call(server, 'DELETE', `/api-key/${id}`, bob);
  t.equal(byBob.status, 404, "bob cannot revoke alice's key");
  t.equal((await call(server, 'GET', '/api-key/list', alice)).body.data.total, 1, 'still there');
  const gone = await call(server, 'DELETE', `/api-key/${id}`, alice);
  t.equal(gone.status, 200);
  t.same(gone.body.data, { revoked: true, api_key_id: id });
  t.equal((await call(server, 'DELETE', `/api-key/${id}`, alice)).status, 404, 'twice: 404');
  for (const bad of ['nope', '..%2F..%2Fetc', 'x'.repeat(300), '%00']) {
    const res = await call(server, 'DELETE', `/api-key/${bad}`, alice);
    t.equal(res.status, 404, bad);
  }
});

t.test('a user holds at most max_api_keys_per_user keys (409 TOO_MANY_API_KEYS)', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await call(server, 'POST', '/api-key/create', bob, { name: `k${i}` })).body.data.api_key_id as string);
  const over = await call(server, 'POST', '/api-key/create', bob, { name: 'k3' });
  t.equal(over.status, 409);
  t.equal(over.body.error?.code, 'TOO_MANY_API_KEYS');
  await call(server, 'DELETE', `/api-key/${ids[0] as string}`, bob);
  t.equal((await call(server, 'POST', '/api-key/create', bob, { name: 'k3' })).status, 201, 'room again after a revoke');
  const list = (await call(server, 'GET', '/api-key/list', bob)).body.data.api_keys as { api_key_id: string; name: string }[];
  t.same(list.map((k) => k.name), ['k1', 'k2', 'k3'], 'oldest first');
  for (const k of list) await call(server, 'DELETE', `/api-key/${k.api_key_id}`, bob);
});

t.test('every route refuses a missing, forged or expired token (401)', async (t) => {
  const forged = await tokenFor('alice', { secret: 'another-secret-another-secret-another-secret' });
  const expired = await tokenFor('someone', { expiresIn: -60, server });
  for (const [method, path, body] of [
    ['POST', '/api-key/create', { name: 'x' }],
    ['GET', '/api-key/list', undefined],
    ['DELETE', `/api-key/${'0'.repeat(32)}`, undefined],
  ] as const) {
    for (const [label, token] of [['missing', undefined], ['forged', forged], ['expired', expired], ['garbage', 'not.a.token']] as const) {
      const res = await call(server, method, path, token, body);
      t.equal(res.status, 401, `${method} ${path} ${label}`);
      t.equal(res.body.error?.code, 'UNAUTHORIZED');
    }
  }
});

t.test('the admin sees a user\'s keys (no secrets); a forced password reset revokes them all', async (t) => {
  await register(server.url, 'dave');
  const dave = await tokenOf(server.url, 'dave');
  const k1 = await call(server, 'POST', '/api-key/create', dave, { name: 'one' });
  await call(server, 'POST', '/api-key/create', dave, { name: 'two', expires_in_days: 0 });
  const admin = await tokenFor('keys-admin', { role: 'admin', server });
  const seen = await call(server, 'GET', '/admin/users/dave', admin);
  t.equal(seen.status, 200);
  t.same((seen.body.data.api_keys as { name: string }[]).map((k) => k.name), ['one', 'two']);
  t.notOk(seen.text.includes(k1.body.data.api_key as string), 'no key in the admin view');
  const reset = await call(server, 'POST', '/admin/users/dave/force-password-reset', admin);
  t.equal(reset.status, 200);
  t.equal(reset.body.data.api_keys_revoked, 2);
  t.same((await call(server, 'GET', '/admin/users/dave', admin)).body.data.api_keys, [], 'gone');
});

t.test('keys survive a restart; /openapi.json documents the routes', async (t) => {
  const k = await call(server, 'POST', '/api-key/create', alice, { name: 'durable' });
  const dataDir = server.dataDir;
  await server.stop();
  server = await startServer({ entry, workers: 2, env: { SVC_DATA_DIR: dataDir, SVC_MAX_API_KEYS_PER_USER: '3', WEBHOOK_SECRET: 'w'.repeat(40) } });
  alice = await tokenOf(server.url, 'alice');
  const list = (await call(server, 'GET', '/api-key/list', alice)).body.data.api_keys as { api_key_id: string }[];
  t.ok(list.some((x) => x.api_key_id === k.body.data.api_key_id), 'still listed after the restart');
  const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { security?: unknown }>> };
  t.ok(spec.paths['/api-key/create']?.post?.security, 'create needs a bearer token');
  t.ok(spec.paths['/api-key/list']?.get);
  t.ok(spec.paths['/api-key/{api_key_id}']?.delete);
});
