// Webhooks against a real `svc start`, on uWebSockets.js and on the node:http fallback: the headers the front needs
// reach it through each server, revocation reaches every worker thread at once, the body limit holds, and the start
// refuses production without a webhook secret (and makes one in development).
import t from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { post, runSvc, startServer, tokenFor, type Server } from '../../kit/index.ts';

// Every case starts real svc processes (two transports, several settings): longer than tap's default 120 s on two cores.
t.setTimeout(600_000);
// The cases share nothing (a server, a data folder each): three at a time, as most of their time is waiting on `svc start`.
t.jobs = 3;

const entry = new URL('../../fixtures/webhook-app.ts', import.meta.url).pathname;
const SECRET = `whsec-${randomBytes(24).toString('hex')}`;

const sign = (secret: string, body: string, ts?: string) => createHmac('sha256', secret).update(ts === undefined ? body : `${ts}.${body}`).digest('hex');

/** A POST with the body bytes exactly as given; `type: null` sends no Content-Type at all. */
async function raw(url: string, body: string, headers: Record<string, string>, type: string | null = 'application/json') {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...(type === null ? {} : { 'content-type': type }), ...headers },
    // Bytes: fetch adds no Content-Type of its own for them (a string would be text/plain).
    body: Buffer.from(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed };
}

async function createKey(url: string, token: string, body: Record<string, unknown> = { name: 'test' }) {
  const res = await post(`${url}/api-key/create`, body, bearer(token));
  if (res.status !== 201) throw new Error(`api-key/create: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { api_key: string; api_key_id: string };
}

function start(transport: string, env: Record<string, string> = {}, workers = 2): Promise<Server> {
  return startServer({ entry, workers, env: { SVC_TRANSPORT: transport, WEBHOOK_SECRET: SECRET, SVC_MAX_BODY_BYTES: '65536', ...env } });
}

for (const transport of ['uws', 'node']) {
  t.test(`on ${transport}`, async (t) => {
    const server = await start(transport);
    t.teardown(() => server.stop());
    const url = server.url;
    const hook = `${url}/webhook/Paid`;
    const annId = await register(url, `ann_${transport}`);
    const ann = await tokenOf(url, `ann_${transport}`);
    const key = (await createKey(url, ann)).api_key;
    const headers = (body: string, extra: Record<string, string> = {}) => ({ 'x-api-key': key, 'x-webhook-signature': sign(SECRET, body), ...extra });

    await t.test('a good signature: 200 with the envelope, the walker ran on the key owner\'s root', async (t) => {
      const body = JSON.stringify({ amount: 10, ref: 'a' });
      const res = await raw(hook, body, headers(body));
      t.equal(res.status, 200);
      t.match(res.body, { ok: true, type: 'response', error: null, data: { result: null, reports: [{ user: annId, amount: 10, ref: 'a' }] } });
      t.same((await post(`${url}/walker/Payments`, {}, bearer(ann))).body.data.reports, [{ amount: 10, ref: 'a' }]);
      await register(url, `ben_${transport}`);
      const ben = await tokenOf(url, `ben_${transport}`);
      t.same((await post(`${url}/walker/Payments`, {}, bearer(ben))).body.data.reports, [], 'another user does not see it');
      t.equal((await raw(hook, body, { ...headers(body), 'x-webhook-signature': `sha256=${sign(SECRET, body)}` })).status, 200, 'sha256= prefix');
      t.equal((await raw(hook, body, { ...headers(body), 'x-webhook-signature': sign(SECRET, body).toUpperCase() })).status, 200, 'upper-case hex');
    });

    await t.test('keys: missing, wrong, revoked (on every worker at once), a deleted user\'s → 401 UNAUTHORIZED', async (t) => {
      const body = JSON.stringify({ amount: 1 });
      const { 'x-api-key': _, ...keyless } = headers(body);
      for (const [name, h] of Object.entries({ missing: keyless, wrong: { ...headers(body), 'x-api-key': `svc_${randomBytes(32).toString('base64url')}` } })) {
        const res = await raw(hook, body, h);
        t.equal(res.status, 401, name);
        t.equal(res.body.error.code, 'UNAUTHORIZED', name);
      }
      // Used over many connections first, so that both worker threads hold it in memory.
      const doomed = await createKey(url, ann, { name: 'doomed' });
      const use = () => Promise.all(Array.from({ length: 12 }, () => raw(hook, body, { ...headers(body), 'x-api-key': doomed.api_key, connection: 'close' })));
      t.same((await use()).map((r) => r.status), Array(12).fill(200), 'the key works on every worker');
      const del = await fetch(`${url}/api-key/${doomed.api_key_id}`, { method: 'DELETE', headers: bearer(ann) });
      t.equal(del.status, 200);
      t.same((await use()).map((r) => r.status), Array(12).fill(401), 'refused at once, whichever worker answers');

      await register(url, `cy_${transport}`);
      const cy = await tokenOf(url, `cy_${transport}`);
      const cyKey = (await createKey(url, cy)).api_key;
      t.equal((await raw(hook, body, { ...headers(body), 'x-api-key': cyKey })).status, 200);
      const admin = await tokenFor(`admin-${transport}`, { server, role: 'admin' });
      t.equal((await fetch(`${url}/admin/users/cy_${transport}`, { method: 'DELETE', headers: bearer(admin) })).status, 200);
      const gone = await raw(hook, body, { ...headers(body), 'x-api-key': cyKey });
      t.equal(gone.status, 401, 'the key of a deleted user');
      t.equal(gone.body.error.code, 'UNAUTHORIZED');
    });

    await t.test('signatures: missing, wrong, of the re-serialised body → 401 INVALID_SIGNATURE', async (t) => {
      const rawBody = '{ "ref": "b",   "amount": 2 }';
      const { 'x-webhook-signature': _, ...unsigned } = headers(rawBody);
      const cases = {
        missing: unsigned,
        wrong: { ...unsigned, 'x-webhook-signature': sign('another-secret', rawBody) },
        're-serialised body': { ...unsigned, 'x-webhook-signature': sign(SECRET, JSON.stringify(JSON.parse(rawBody))) },
      };
      for (const [name, h] of Object.entries(cases)) {
        const res = await raw(hook, rawBody, h);
        t.equal(res.status, 401, name);
        t.equal(res.body.error.code, 'INVALID_SIGNATURE', name);
      }
      t.equal((await raw(hook, rawBody, headers(rawBody))).status, 200, 'the raw bytes\' signature passes');
    });

    await t.test('content types: text/plain, a form, none → 415', async (t) => {
      const body = JSON.stringify({ amount: 1 });
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', null]) {
        const res = await raw(hook, body, headers(body), type);
        t.equal(res.status, 415, String(type));
        t.equal(res.body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
      }
    });

    await t.test('timestamps: a fresh <ts>.<body> passes, an old or future one is 401 INVALID_TIMESTAMP', async (t) => {
      const body = JSON.stringify({ amount: 3 });
      const now = Math.floor(Date.now() / 1000);
      const at = (ts: number) => headers(body, { 'x-webhook-timestamp': String(ts), 'x-webhook-signature': sign(SECRET, body, String(ts)) });
      t.equal((await raw(hook, body, at(now))).status, 200);
      for (const ts of [now - 3600, now + 3600]) {
        const res = await raw(hook, body, at(ts));
        t.equal(res.status, 401);
        t.equal(res.body.error.code, 'INVALID_TIMESTAMP');
      }
    });

    await t.test('an allow-list key for another walker → 403; /walker/ routes of a webhook walker → 404', async (t) => {
      const only = (await createKey(url, ann, { name: 'shipping', walkers: ['Shipped'] })).api_key;
      const body = JSON.stringify({ amount: 1 });
      const res = await raw(hook, body, { ...headers(body), 'x-api-key': only });
      t.equal(res.status, 403);
      t.equal(res.body.error.code, 'FORBIDDEN');
      for (const path of ['/walker/Paid', `/walker/Paid/${'0'.repeat(32)}`]) {
        const r = await raw(`${url}${path}`, body, { ...headers(body), ...bearer(ann) });
        t.equal(r.status, 404, path);
      }
    });

    await t.test('undeclared fields are ignored; malformed JSON is 400 INVALID_JSON; an oversized body is 413', async (t) => {
      const body = JSON.stringify({ amount: 5, extra: 'x', source: { id: 1 } });
      const res = await raw(hook, body, headers(body));
      t.equal(res.status, 200);
      t.match(res.body.data.reports, [{ amount: 5, extra: 'absent' }]);
      const bad = '{"amount": 5,';
      const invalid = await raw(hook, bad, headers(bad));
      t.equal(invalid.status, 400);
      t.equal(invalid.body.error.code, 'INVALID_JSON');
      const big = JSON.stringify({ amount: 1, pad: 'x'.repeat(70_000) });
      const large = await raw(hook, big, headers(big));
      t.equal(large.status, 413);
    });

    await t.test('/openapi.json lists the webhook route with its security and schemes', async (t) => {
      const doc = (await (await fetch(`${url}/openapi.json`)).json()) as any;
      t.same(doc.paths['/webhook/Paid'].post.security, [{ apiKeyAuth: [], webhookSignature: [] }]);
      t.notOk(doc.paths['/walker/Paid']);
      t.match(doc.components.securitySchemes, { apiKeyAuth: { in: 'header', name: 'X-API-Key' }, webhookSignature: { in: 'header', name: 'X-Webhook-Signature' } });
    });

    t.notOk(server.output().includes(SECRET), 'the secret is never printed');
    t.match(server.output(), /webhooks: signatures verified \(X-Webhook-Signature\) with the secret from WEBHOOK_SECRET/);
  });

  t.test(`require_timestamp and verify_signature = false on ${transport}`, async (t) => {
    const strict = await start(transport, { SVC_WEBHOOK_REQUIRE_TIMESTAMP: 'true' }, 1);
    t.teardown(() => strict.stop());
    await register(strict.url, 'dee');
    const key = (await createKey(strict.url, await tokenOf(strict.url, 'dee'))).api_key;
    const body = JSON.stringify({ amount: 1 });
    const noTs = await raw(`${strict.url}/webhook/Paid`, body, { 'x-api-key': key, 'x-webhook-signature': sign(SECRET, body) });
    t.equal(noTs.status, 401);
    t.equal(noTs.body.error.code, 'INVALID_TIMESTAMP');
    const ts = String(Math.floor(Date.now() / 1000));
    const bare = await raw(`${strict.url}/webhook/Paid`, body, { 'x-api-key': key, 'x-webhook-timestamp': ts, 'x-webhook-signature': sign(SECRET, body) });
    t.equal(bare.status, 401);
    t.equal(bare.body.error.code, 'INVALID_SIGNATURE');
    t.equal((await raw(`${strict.url}/webhook/Paid`, body, { 'x-api-key': key, 'x-webhook-timestamp': ts, 'x-webhook-signature': sign(SECRET, body, ts) })).status, 200);

    const open = await start(transport, { SVC_WEBHOOK_VERIFY_SIGNATURE: 'false', WEBHOOK_SECRET: '' }, 1);
    t.teardown(() => open.stop());
    await register(open.url, 'eve');
    const openKey = (await createKey(open.url, await tokenOf(open.url, 'eve'))).api_key;
    t.equal((await raw(`${open.url}/webhook/Paid`, body, { 'x-api-key': openKey })).status, 200, 'the key alone suffices');
    t.equal((await raw(`${open.url}/webhook/Paid`, body, {})).status, 401, 'no key is still refused');
    t.match(open.output(), /signatures NOT verified/);
  });
}

t.test('production: no WEBHOOK_SECRET with a webhook walker refuses to start; with one it starts', async (t) => {
  // The three starts side by side, a data folder each (two first starts in one folder would both make its admin account).
  const env = () => ({ NODE_ENV: 'production', JWT_SECRET: 'a-production-jwt-secret-of-more-than-32-chars', WEBHOOK_SECRET: '', SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-webhook-prod-')), ADMIN_DEFAULT_PASSWORD: 'correct horse battery staple 42' });
  const args = ['start', entry, '--port', '0', '--workers', '1', '--host', '127.0.0.1'];
  const started = startServer({ entry, env: { ...env(), WEBHOOK_SECRET: SECRET } });
  t.teardown(() => started.then((server) => server.stop(), () => undefined));
  const [refused, short] = await Promise.all([runSvc(args, { env: env() }), runSvc(args, { env: { ...env(), WEBHOOK_SECRET: 'short' } })]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /WEBHOOK_SECRET \(or \[scale\.webhook\] secret\) is required in production for the app's webhook walkers/);
  t.equal(short.code, 1);
  t.match(short.stderr, /WEBHOOK_SECRET is shorter than 32 characters/);
  const server = await started;
  t.equal((await fetch(`${server.url}/healthz`)).status, 200);
  t.notOk(existsSync(join(new URL('../../fixtures/', import.meta.url).pathname, '.svc', 'webhook_secret')), 'nothing generated');
});

t.test('development without a secret: one is generated once in .svc/webhook_secret (0600), its value never printed', async (t) => {
  const dir = t.testdir({
    'main.ts': `import { APIProtocol, entry, restspec, Root, T, Walker } from 'svc';
export class Ping extends Walker {
  static spec = restspec({ protocol: APIProtocol.WEBHOOK });
  static has = T.Object({ n: T.Integer() });
  declare n: number;
  @entry(Root) ping() { this.report(this.n); }
}
`,
  });
  const first = await startServer({ entry: '', noEntry: true, cwd: dir, env: { WEBHOOK_SECRET: '' } });
  t.teardown(() => first.stop());
  const file = join(dir, '.svc', 'webhook_secret');
  t.match(first.output(), /webhooks: signatures verified \(X-Webhook-Signature\) with the development secret generated in .*\.svc\/webhook_secret/);
  t.equal(statSync(file).mode & 0o777, 0o600);
  const secret = readFileSync(file, 'utf8').trim();
  t.ok(secret.length >= 32);
  t.notOk(first.output().includes(secret), 'the value is not printed');
  await register(first.url, 'fay');
  const key = (await createKey(first.url, await tokenOf(first.url, 'fay'))).api_key;
  const body = JSON.stringify({ n: 7 });
  const res = await raw(`${first.url}/webhook/Ping`, body, { 'x-api-key': key, 'x-webhook-signature': sign(secret, body) });
  t.equal(res.status, 200);
  t.same(res.body.data.reports, [7]);
  await first.stop();
  const second = await startServer({ entry: '', noEntry: true, cwd: dir, env: { WEBHOOK_SECRET: '' } });
  t.teardown(() => second.stop());
  t.match(second.output(), /with the development secret from .*\.svc\/webhook_secret/);
  t.equal(readFileSync(file, 'utf8').trim(), secret, 'the same secret across restarts');
});
