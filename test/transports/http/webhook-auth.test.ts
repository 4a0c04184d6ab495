// The webhook gate on its own (a fake clock, a stand-in for the API keys), and the routes webhook walkers get.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { APIProtocol, entry, restspec, Root, T, Walker } from 'svc';
import { Registry } from '../../../actors/walker/index.ts';
import type { ApiKeyHolder } from '../../../actors/identity/index.ts';
import { buildRoutes } from '../../../transports/http/router.ts';
import { parseSignature, webhookSignature, WebhookGate, type WebhookOptions } from '../../../transports/http/webhook-auth.ts';
import type { HttpRequest } from '../../../transports/http/types.ts';

const SECRET = 'unit-test-webhook-secret-unit-test-webhook-secret';
const holder: ApiKeyHolder = { keyId: 'k', userId: 'u1', caller: { userId: 'u1', rootId: 'r1' }, walkers: null };

function gate(over: Partial<WebhookOptions> = {}, clockMs = 1_700_000_000_000) {
  const checked: string[] = [];
  const g = new WebhookGate({
    apiKeys: {
      check: (key) => {
        checked.push(key);
        return key === 'good' ? holder : key === 'slow' ? Promise.resolve(holder) : undefined;
      },
    },
    secret: SECRET,
    signatureHeader: 'X-Webhook-Signature',
    verifySignature: true,
    timestampHeader: 'X-Webhook-Timestamp',
    toleranceSeconds: 300,
    requireTimestamp: false,
    clock: () => clockMs,
    ...over,
  });
  return { g, checked };
}

function req(body: string, headers: Record<string, string>): HttpRequest {
  return { method: 'POST', path: '/webhook/W', query: '', headers: { 'content-type': 'application/json', 'x-api-key': 'good', ...headers }, body: Buffer.from(body), remoteAddress: '' };
}

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'admitted';
  } catch (error) {
    return (error as { body?: { code?: string } }).body?.code ?? String(error);
  }
};

t.test('webhookSignature and parseSignature agree; parsing is strict', async (t) => {
  const sig = webhookSignature(SECRET, '{"a":1}');
  t.equal(sig, createHmac('sha256', SECRET).update('{"a":1}').digest('hex'));
  t.equal(webhookSignature(SECRET, '{"a":1}', '17'), createHmac('sha256', SECRET).update('17.{"a":1}').digest('hex'));
  t.same(parseSignature(sig), Buffer.from(sig, 'hex'));
  t.same(parseSignature(`sha256=${sig.toUpperCase()}`), Buffer.from(sig, 'hex'));
  t.same(parseSignature(`SHA256=${sig}`), Buffer.from(sig, 'hex'));
  for (const bad of [undefined, '', sig.slice(2), `${sig}00`, ` ${sig}`, `${sig} `, `sha256:${sig}`, `sha256=sha256=${sig}`, 'z'.repeat(64)]) t.equal(parseSignature(bad), undefined, JSON.stringify(bad));
});

t.test('the timestamp window: within ±tolerance inclusive passes, one second beyond is refused', async (t) => {
  const now = 1_700_000_000;
  const { g } = gate({}, now * 1000);
  const body = '{"x":1}';
  const at = (ts: number) => req(body, { 'x-webhook-timestamp': String(ts), 'x-webhook-signature': webhookSignature(SECRET, body, String(ts)) });
  t.equal(await code(g.admit(at(now - 300), 'W')), 'admitted');
  t.equal(await code(g.admit(at(now + 300), 'W')), 'admitted');
  t.equal(await code(g.admit(at(now - 301), 'W')), 'INVALID_TIMESTAMP');
  t.equal(await code(g.admit(at(now + 301), 'W')), 'INVALID_TIMESTAMP');
  t.equal(await code(g.admit(req(body, { 'x-webhook-timestamp': '', 'x-webhook-signature': webhookSignature(SECRET, body) }), 'W')), 'admitted', 'an empty header is no header');
});

t.test('the order of checks: content type, timestamp, signature, key, allow-list', async (t) => {
  const { g, checked } = gate();
  const body = '{}';
  const sig = webhookSignature(SECRET, body);
  t.equal(await code(g.admit({ ...req(body, {}), headers: { 'x-api-key': 'bad' } }, 'W')), 'UNSUPPORTED_MEDIA_TYPE');
  t.same(checked, [], 'a 415 does not look the key up');
  t.equal(await code(g.admit(req(body, { 'x-api-key': 'bad', 'x-webhook-timestamp': 'bad', 'x-webhook-signature': sig }), 'W')), 'INVALID_TIMESTAMP');
  t.equal(await code(g.admit(req(body, { 'x-api-key': 'bad' }), 'W')), 'INVALID_SIGNATURE', 'the signature before the key: a leaked key alone learns nothing');
  t.same(checked, [], 'no key is looked up before the signature holds');
  t.equal(await code(g.admit(req(body, { 'x-api-key': 'bad', 'x-webhook-signature': sig }), 'W')), 'UNAUTHORIZED');
  t.equal(await code(g.admit(req(body, { 'x-api-key': 'slow', 'x-webhook-signature': sig }), 'W')), 'admitted', 'a key read from the store (a promise)');
  const limited = gate({ apiKeys: { check: () => ({ ...holder, walkers: ['Other'] }) } }).g;
  t.equal(await code(limited.admit(req(body, { 'x-webhook-signature': sig }), 'W')), 'FORBIDDEN');
});

t.test('a timestamped signature is not the bare signature of `<ts>.<body>` sent without the header', async (t) => {
  const { g } = gate();
  const body = '{"parcel":"p"}';
  const ts = String(Math.floor(Date.now() / 1000) - 30 * 86_400);
  const captured = webhookSignature(SECRET, body, ts);
  t.equal(await code(g.admit(req(`${ts}.${body}`, { 'x-webhook-signature': captured }), 'W')), 'INVALID_SIGNATURE');
});

t.test('verify_signature without a secret is refused at construction', async (t) => {
  t.throws(() => gate({ secret: '' }), /no secret is set/);
  t.doesNotThrow(() => gate({ secret: '', verifySignature: false }));
  t.same(gate({ signatureHeader: 'X-Sig', timestampHeader: 'X-TS' }).g.headerNames, ['x-api-key', 'x-sig', 'x-ts']);
});

t.test('a webhook walker is one route: POST /webhook/<Name>, taking any fields; a path or another method stops the start', async (t) => {
  class Hook extends Walker {
    static spec = restspec({ protocol: APIProtocol.WEBHOOK });
    static has = T.Object({ a: T.String() });
    @entry(Root) run() {}
  }
  const routes = buildRoutes(Registry.fromModule({ Hook }));
  t.equal(routes.length, 1);
  t.match(routes[0], { kind: 'walker', name: 'Hook', method: 'POST', template: '/webhook/Hook', webhook: true, takesAny: true, spawnAt: false });
  class Pathed extends Walker {
    static spec = restspec({ protocol: APIProtocol.WEBHOOK, path: '/hooks/p' });
  }
  t.throws(() => buildRoutes(Registry.fromModule({ Pathed })), /restspec path does not apply/);
  class Got extends Walker {
    static spec = restspec({ protocol: APIProtocol.WEBHOOK, method: 'GET' });
  }
  t.throws(() => buildRoutes(Registry.fromModule({ Got })), /POST only/);
});
