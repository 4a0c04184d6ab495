// The microservice gateway: real svc modules (billing, shop) behind one port —
// merged OpenAPI, routing, collisions, unreachable modules, CORS, WebSocket
// relay, big bodies. A small stand-in module (node:http + ws) covers what a
// real one cannot show: the headers it receives, a client abort, a schema
// name clash, its side of a relayed WebSocket closing.
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { type Gateway, type GatewayCors, GatewayError, startGateway, type GatewayOptions } from '../../../transports/sv/index.ts';
import { startApp, type InProcessServer } from '../../helpers/app.ts';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { post, transport, deferred } from '../../kit/index.ts';

const fixture = (name: string) => new URL(`../../fixtures/gateway/${name}.ts`, import.meta.url).pathname;
const OPEN: GatewayCors = { allow_origins: ['*'], allow_methods: ['*'], allow_headers: ['*'], allow_credentials: false, expose_headers: [], max_age: 600 };

// billing and shop share one data folder (users, tokens) as sibling processes of one app do.
const shared = mkdtempSync(join(tmpdir(), 'svc-gateway-'));
t.teardown(() => rmSync(shared, { recursive: true, force: true }));
const appEnv = { SVC_DATA_DIR: shared };
// The modules' transport: `SVC_TRANSPORT=node` runs them on node:http (uWebSockets.js otherwise).
const moduleTransport = transport() === 'node' ? ({ transport: 'node' } as const) : {};
let billing: InProcessServer;
let shop: InProcessServer;
let gw: Gateway;
const logs: string[] = [];

async function gateway(t: Test, options: Partial<GatewayOptions> = {}): Promise<Gateway> {
  const g = await startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, billing: billing.url }, cors: OPEN, title: 'store', ...options });
  t.teardown(() => g.close());
  return g;
}

t.before(async () => {
  billing = await startApp({ entry: fixture('billing'), listen: true, ...moduleTransport, env: appEnv, config: { 'scale.server.max_body_bytes': 16 * 1024 * 1024 } });
  shop = await startApp({ entry: fixture('shop'), listen: true, ...moduleTransport, env: appEnv });
  gw = await startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, billing: billing.url }, cors: OPEN, title: 'store', log: (l) => logs.push(l) });
});
t.teardown(async () => {
  await gw?.close();
  await billing?.stop();
  await shop?.stop();
});

/** A plain HTTP request to the gateway, with any headers (fetch refuses some). */
function raw(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The status an upgrade is refused with. */
function refusal(url: string, options: WebSocket.ClientOptions = {}): Promise<number> {
  const ws = new WebSocket(url, options);
  ws.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error(`${url}: upgraded`)));
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode as number);
      ws.terminate();
    });
  });
}

const accessControl = (headers: Record<string, unknown>) => Object.keys(headers).filter((k) => k.startsWith('access-control-'));

t.test('the route table and the merged OpenAPI hold both modules', async (t) => {
  t.match(gw.routes, [], 'a list');
  const routes = gw.routes.map((r) => `${r.method} ${r.path} ${r.module}`);
  for (const r of ['POST /function/charge billing', 'POST /walker/Invoice billing', 'POST /walker/Invoice/{node_id} billing', 'GET /statement.txt billing', 'POST /function/prices shop', 'POST /walker/Order shop']) {
    t.ok(routes.includes(r), r);
  }
  t.notOk(routes.some((r) => r.includes('/user/')), 'built-ins are not in the table (they are main’s)');
  const res = await fetch(`${gw.url}/openapi.json`);
  t.equal(res.status, 200);
  const doc: any = await res.json();
  t.equal(doc.info.title, 'store');
  t.equal(doc.paths['/function/charge'].post['x-svc-module'], 'billing');
  t.equal(doc.paths['/walker/Order'].post['x-svc-module'], 'shop');
  t.equal(doc.paths['/statement.txt'].get['x-svc-module'], 'billing', 'a custom path');
  t.ok(doc.paths['/user/login'].post, 'main’s built-ins');
  t.notOk(doc.paths['/user/login'].post['x-svc-module']);
  t.ok(doc.components.schemas.Envelope, 'schemas merged');
  t.notOk(Object.keys(doc.components.schemas).some((k: string) => k.includes('_Envelope')), 'equal schemas are kept once');
  t.ok(doc.components.securitySchemes.bearerAuth);
  const docs = await fetch(`${gw.url}/docs`);
  t.equal(docs.status, 200, 'docs come from main');
  t.match(await docs.text(), /url: '\/openapi\.json'/, '…and load the gateway’s document');
});

t.test("each module's function and walker through the gateway", async (t) => {
  const charged = await post(`${gw.url}/function/charge`, { amount: 12.5 });
  t.equal(charged.status, 200);
  t.same(charged.body.data.result, { module: 'billing', charged: 12.5 });
  const ordered = await post(`${gw.url}/walker/Order`, { item: 'apple' });
  t.same(ordered.body.data.reports, [{ module: 'shop', item: 'apple' }]);
  t.same((await post(`${gw.url}/function/prices`, {})).body.data.result, { module: 'shop', apple: 2 });
  const made = await post(`${gw.url}/walker/Invoice?x=1`, { amount: 7 });
  t.equal(made.status, 200);
  const id = made.body.data.reports[0].id as string;
  t.match(id, /^[0-9a-f]{32}$/);
  const read = await post(`${gw.url}/walker/Invoice/${id}`, {});
  t.equal(read.status, 200, 'a path template matches the concrete path');
  t.same(read.body.data.reports, [{ module: 'billing', amount: 7 }]);
  const wrong = await raw(gw.url, 'GET', '/function/charge');
  t.equal(wrong.status, 405, 'another method on a module’s path: that module answers');
});

t.test('a token from main (register and login through the gateway) on both modules', async (t) => {
  const user = await register(gw.url, 'gateway-user');
  const token = await tokenOf(gw.url, 'gateway-user');
  t.equal((await post(`${gw.url}/walker/Cart`, {})).status, 401, 'no token: 401 from shop');
  t.equal((await post(`${gw.url}/walker/Balance`, {})).status, 401, 'no token: 401 from billing');
  const cart = await post(`${gw.url}/walker/Cart`, {}, bearer(token));
  t.equal(cart.status, 200);
  t.same(cart.body.data.reports, [{ module: 'shop', user }]);
  // The modules share the JWT secret and the users store (one data folder): billing knows the user too.
  const balance = await post(`${gw.url}/walker/Balance`, {}, bearer(token));
  t.equal(balance.status, 200);
  t.same(balance.body.data.reports, [{ module: 'billing', user }]);
});

t.test('a path no module serves goes to main, which answers its 404', async (t) => {
  const res = await raw(gw.url, 'GET', '/nowhere');
  t.equal(res.status, 404);
  t.match(JSON.parse(res.body), { ok: false, type: 'response', data: null, error: { code: 'NOT_FOUND', message: 'no route GET /nowhere' } });
  const fn = await post(`${gw.url}/function/nothing`, {});
  t.equal(fn.status, 404);
  t.equal(fn.body.error.code, 'NOT_FOUND');
  t.equal((await fetch(`${gw.url}/healthz`)).status, 200);
});

t.test('two modules serving one route refuse to start', async (t) => {
  const clash = await startApp({ entry: fixture('clash'), listen: true, ...moduleTransport });
  t.teardown(() => clash.stop());
  const error = await startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, billing: billing.url, clash: clash.url }, cors: OPEN }).catch((e: unknown) => e);
  t.ok(error instanceof GatewayError);
  t.equal((error as GatewayError).code, 'SVC_ERR_GATEWAY_ROUTE_COLLISION');
  t.equal((error as GatewayError).message, 'route POST /function/charge is served by both billing and clash');
});

t.test("another module's endpoint on a built-in route of main refuses to start", async (t) => {
  const squat = await docServer({ openapi: '3.1.0', info: { title: 'squat', version: '1' }, paths: { '/user/me': { get: { tags: ['functions'], responses: {} } } } });
  t.teardown(() => squat.close());
  await t.rejects(startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, squat: squat.url }, cors: OPEN }), {
    code: 'SVC_ERR_GATEWAY_ROUTE_COLLISION',
    message: 'route GET /user/me is served by both shop (built-in) and squat',
  });
});

t.test('bad options and a module that cannot be reached at start', async (t) => {
  const closed = await closedPort();
  const error = await startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, ghost: `http://127.0.0.1:${closed}` }, cors: OPEN }).catch((e: unknown) => e);
  t.ok(error instanceof GatewayError);
  t.equal((error as GatewayError).code, 'SVC_ERR_GATEWAY_UNREACHABLE');
  t.match((error as GatewayError).message, /^module ghost is unreachable at http:\/\/127\.0\.0\.1:\d+\/: ECONNREFUSED$/);
  await t.rejects(startGateway({ host: '127.0.0.1', port: 0, main: 'nope', modules: { shop: shop.url }, cors: OPEN }), { code: 'SVC_ERR_GATEWAY_CONFIG' });
  await t.rejects(startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: {}, cors: OPEN }), { code: 'SVC_ERR_GATEWAY_CONFIG' });
});

t.test('a stopped module answers 502 MODULE_UNREACHABLE; the others keep serving', async (t) => {
  const dying = await startApp({ entry: fixture('billing'), listen: true, ...moduleTransport });
  const lines: string[] = [];
  const g = await gateway(t, { modules: { shop: shop.url, billing: dying.url }, log: (l) => lines.push(l) });
  t.equal((await post(`${g.url}/function/charge`, { amount: 1 })).status, 200);
  await dying.stop();
  for (let i = 0; i < 2; i++) {
    const res = await post(`${g.url}/function/charge`, { amount: 1 }, { origin: 'https://a.example' });
    t.equal(res.status, 502);
    t.match(res.body, { ok: false, type: 'response', data: null, error: { code: 'MODULE_UNREACHABLE', message: /^module billing is unreachable: / }, meta: { request_id: String } });
    t.equal(res.headers.get('access-control-allow-origin'), '*', 'the gateway’s own answers carry its CORS headers');
  }
  t.same(lines, [`gateway: module billing is unreachable: ${lines[0]?.split(': ').pop()}`], 'said once, not per request');
  t.notMatch(lines.join('\n'), /127\.0\.0\.1:\d+/, 'no internal address in the envelope or the log');
  t.equal((await post(`${g.url}/walker/Order`, { item: 'pear' })).status, 200, 'shop still serves');
  t.equal(await refusal(`${g.url.replace('http', 'ws')}/ws/Ticker`), 502, 'an upgrade to an unreachable module: 502');
});

t.test('CORS: the default "*"', async (t) => {
  const res = await raw(gw.url, 'POST', '/function/charge', { origin: 'https://any.example', 'content-type': 'application/json' }, '{"amount":1}');
  t.equal(res.status, 200);
  t.equal(res.headers['access-control-allow-origin'], '*');
  t.same(accessControl(res.headers), ['access-control-allow-origin'], 'the module’s expose-headers is gone (none configured)');
  t.notMatch(String(res.headers.vary ?? ''), /origin/i, 'no Vary: Origin for "*"');
  const none = await raw(gw.url, 'POST', '/function/charge', { 'content-type': 'application/json' }, '{"amount":1}');
  t.same(accessControl(none.headers), [], 'no Origin, no CORS headers');
  const pre = await raw(gw.url, 'OPTIONS', '/walker/Order', { origin: 'https://any.example', 'access-control-request-method': 'QUERY', 'access-control-request-headers': 'x-one, content-type' });
  t.equal(pre.status, 204);
  t.equal(pre.headers['access-control-allow-origin'], '*');
  t.equal(pre.headers['access-control-allow-methods'], 'GET, POST, PUT, PATCH, DELETE, OPTIONS, QUERY', '"*": the usual methods and the one asked');
  t.equal(pre.headers['access-control-allow-headers'], 'x-one, content-type', '"*": the headers asked');
  t.equal(pre.headers['access-control-max-age'], '600');
  t.notOk(pre.headers['access-control-allow-credentials']);
});

t.test('CORS: an allow list, with credentials', async (t) => {
  const g = await gateway(t, {
    cors: { allow_origins: ['https://app.example'], allow_methods: ['GET', 'POST'], allow_headers: ['authorization', 'content-type'], allow_credentials: true, expose_headers: ['x-request-id'], max_age: 123 },
  });
  const ok = await raw(g.url, 'POST', '/walker/Order', { origin: 'https://app.example', 'content-type': 'application/json' }, '{"item":"x"}');
  t.equal(ok.status, 200);
  t.equal(ok.headers['access-control-allow-origin'], 'https://app.example', 'an allowed origin is echoed');
  t.equal(ok.headers['access-control-allow-credentials'], 'true');
  t.equal(ok.headers['access-control-expose-headers'], 'x-request-id');
  t.match(ok.headers.vary, /Origin/);
  const other = await raw(g.url, 'POST', '/walker/Order', { origin: 'https://evil.example', 'content-type': 'application/json' }, '{"item":"x"}');
  t.equal(other.status, 200, 'the request itself is served (the browser hides it)');
  t.same(accessControl(other.headers), [], 'another origin gets no CORS header');
  t.match(other.headers.vary, /Origin/);
  const pre = await raw(g.url, 'OPTIONS', '/function/charge', { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' });
  t.equal(pre.status, 204);
  t.same(
    { origin: pre.headers['access-control-allow-origin'], methods: pre.headers['access-control-allow-methods'], headers: pre.headers['access-control-allow-headers'], age: pre.headers['access-control-max-age'], credentials: pre.headers['access-control-allow-credentials'] },
    { origin: 'https://app.example', methods: 'GET, POST', headers: 'authorization, content-type', age: '123', credentials: 'true' },
  );
  const refused = await raw(g.url, 'OPTIONS', '/function/charge', { origin: 'https://evil.example', 'access-control-request-method': 'POST' });
  t.equal(refused.status, 204);
  t.same(accessControl(refused.headers), [], 'a preflight from another origin: no CORS header');
  // WebSockets have no CORS: the allow list is what stops another site's page.
  t.equal(await refusal(`${g.url.replace('http', 'ws')}/ws/Ticker`, { origin: 'https://evil.example' }), 403);
  const allowed = new WebSocket(`${g.url.replace('http', 'ws')}/ws/Ticker`, { origin: 'https://app.example' });
  await new Promise((resolve, reject) => allowed.once('open', resolve).once('error', reject));
  allowed.close();
});

t.test('CORS: "*" with credentials echoes the origin', async (t) => {
  const g = await gateway(t, { cors: { ...OPEN, allow_credentials: true } });
  const res = await raw(g.url, 'POST', '/function/prices', { origin: 'https://x.example', 'content-type': 'application/json' }, '{}');
  t.equal(res.headers['access-control-allow-origin'], 'https://x.example');
  t.equal(res.headers['access-control-allow-credentials'], 'true');
  t.match(res.headers.vary, /Origin/);
});

t.test('CORS: an empty allow list, no CORS headers at all', async (t) => {
  const g = await gateway(t, { cors: { ...OPEN, allow_origins: [] } });
  const res = await raw(g.url, 'POST', '/function/charge', { origin: 'https://x.example', 'content-type': 'application/json' }, '{"amount":1}');
  t.equal(res.status, 200);
  t.same(accessControl(res.headers), [], 'the module’s are stripped, none added');
  const pre = await raw(g.url, 'OPTIONS', '/function/charge', { origin: 'https://x.example', 'access-control-request-method': 'POST' });
  t.equal(pre.status, 204, 'the preflight went to the module as a plain OPTIONS');
  t.same(accessControl(pre.headers), []);
  const doc = await raw(g.url, 'GET', '/openapi.json', { origin: 'https://x.example' });
  t.same(accessControl(doc.headers), []);
});

t.test('a WebSocket through the gateway exchanges frames; closing either side closes the other', async (t) => {
  const url = `${gw.url.replace('http', 'ws')}/ws/Ticker`;
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const frames: unknown[] = [];
  const got = (n: number) => new Promise<void>((resolve) => {
    const check = () => (frames.length >= n ? resolve() : ws.once('message', (d) => (frames.push(JSON.parse(d.toString())), check())));
    check();
  });
  ws.send(JSON.stringify({ msg: 'one', id: 1 }));
  ws.send(JSON.stringify({ msg: 'two', id: 2 }));
  await got(2);
  t.same(frames, [
    { ok: true, data: { result: null, reports: [{ module: 'billing', msg: 'one' }] }, id: 1 },
    { ok: true, data: { result: null, reports: [{ module: 'billing', msg: 'two' }] }, id: 2 },
  ]);
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.close(1000, 'bye');
  t.equal(await closed, 1000, 'the client’s close frame reached the module, its answer came back');

  // The module closes: a frame over its limit (64 KiB), with the code it closes with when asked directly.
  const tooBig = async (url: string) => {
    const big = new WebSocket(url);
    await new Promise((resolve, reject) => big.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => big.once('close', (code) => resolve(code)));
    big.send(JSON.stringify({ msg: 'x'.repeat(100_000) }));
    return closed;
  };
  const direct = await tooBig(`${billing.url.replace('http', 'ws')}/ws/Ticker`);
  t.not(direct, 1006, 'the module closes with a code of its own');
  t.equal(await tooBig(url), direct, 'the module’s close reaches the client');

  // main's WebSocket walker: billing (asked first) answers 404, then shop has it.
  const bell = new WebSocket(`${gw.url.replace('http', 'ws')}/ws/Bell`);
  await new Promise((resolve, reject) => bell.once('open', resolve).once('error', reject));
  bell.send(JSON.stringify({ id: 'b' }));
  t.same(JSON.parse((await new Promise<Buffer>((resolve) => bell.once('message', resolve))).toString()), { ok: true, data: { result: null, reports: [{ module: 'shop', ring: true }] }, id: 'b' });
  bell.close();
  t.equal(await refusal(`${gw.url.replace('http', 'ws')}/ws/Nope`), 404, 'no module has it: 404');
});

t.test('big bodies stream through', async (t) => {
  const n = 5 * 1024 * 1024 + 3;
  const res = await fetch(`${gw.url}/statement.txt?n=${n}`);
  t.equal(res.status, 200);
  const text = await res.text();
  t.equal(text.length, n);
  t.equal(text.slice(0, 12), 'abcdefghijab');
  const file = randomBytes(6 * 1024 * 1024);
  const form = new FormData();
  form.append('file', new Blob([file], { type: 'application/octet-stream' }), 'big.bin');
  const up = await fetch(`${gw.url}/walker/Receipt`, { method: 'POST', body: form });
  t.equal(up.status, 200);
  t.same(((await up.json()) as any).data.reports, [{ size: file.length, sha256: createHash('sha256').update(file).digest('hex') }]);
});

t.test('against a stand-in module: headers, aborts, schema clashes, its WebSocket closing', async (t) => {
  const fake = await standIn();
  t.teardown(() => fake.close());
  const g = await gateway(t, { modules: { shop: shop.url, fake: fake.url }, cors: { ...OPEN, allow_origins: ['https://app.example'] } });
  t.equal(fake.specRequests, 2, 'a 503 for /openapi.json is retried');

  const doc: any = await (await fetch(`${g.url}/openapi.json`)).json();
  t.same(doc.components.schemas.fake_Envelope, { type: 'string' }, 'a clashing schema is renamed, not overwritten');
  t.ok(doc.components.schemas.Envelope.properties, 'main’s keeps its name');
  t.equal(doc.paths['/fake/headers'].get.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/fake_Envelope', '…and its refs follow');
  t.same(doc.paths['/fake/headers'].get.security, [{ fake_bearerAuth: [] }], 'a clashing security scheme too');
  t.equal(doc.paths['/user/login'].post['x-svc-module'], undefined, 'a built-in of another module is not routed: main’s stays');
  t.notOk(g.routes.some((r) => r.path === '/user/login'));

  const res = await raw(g.url, 'GET', '/fake/headers?q=1', { origin: 'https://app.example', 'x-forwarded-for': '10.0.0.1', 'proxy-authorization': 'Basic c2VjcmV0', 'x-custom': 'kept', connection: 'keep-alive, x-hop', 'x-hop': 'dropped' });
  const seen = JSON.parse(res.body) as Record<string, string>;
  t.equal(seen.url, '/fake/headers?q=1', 'path and query kept');
  t.equal(seen['x-forwarded-for'], '10.0.0.1, 127.0.0.1', 'the client’s address appended');
  t.equal(seen['x-forwarded-proto'], 'http');
  t.equal(seen['x-forwarded-host'], new URL(g.url).host);
  t.equal(seen.host, new URL(g.url).host, 'the original Host');
  t.equal(seen['x-custom'], 'kept');
  t.notOk(seen['proxy-authorization'], 'proxy-* headers are not relayed');
  t.notOk(seen['x-hop'], 'headers named by Connection are not relayed');
  t.equal(res.headers['access-control-allow-origin'], 'https://app.example', 'the gateway’s CORS, not the module’s');
  t.notOk(res.headers['access-control-allow-methods'], 'upstream access-control-* never leak');
  t.equal(res.headers['x-module'], 'fake', 'other response headers are kept');
  t.notOk(res.headers['x-hop-back'], 'response headers named by Connection are dropped');

  // A client gone mid-request: the module's request is aborted too.
  // A client gone while the module has not answered (no body: only the abort can end it).
  const req = httpRequest(`${g.url}/fake/slow`);
  req.on('error', () => undefined);
  req.end();
  await fake.slowArrived;
  req.destroy();
  t.equal(await fake.slowAborted, true, 'the upstream request was aborted');

  // The module's side of a relayed WebSocket.
  const ws = new WebSocket(`${g.url.replace('http', 'ws')}/ws/Raw`, { origin: 'https://app.example' });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const server = await fake.wsConnected;
  t.equal(server.headers['x-forwarded-for'], '127.0.0.1', 'x-forwarded-* on the upgrade too');
  ws.send('ping');
  t.equal((await new Promise<Buffer>((resolve) => ws.once('message', resolve))).toString(), 'echo ping');
  ws.terminate();
  t.equal(await server.closed, true, 'a client gone closes the module’s socket');

  const ws2 = new WebSocket(`${g.url.replace('http', 'ws')}/ws/Raw`);
  await new Promise((resolve, reject) => ws2.once('open', resolve).once('error', reject));
  const closed = new Promise<number>((resolve) => ws2.once('close', (code) => resolve(code)));
  await g.close();
  t.equal(await closed, 1006, 'close() ends relayed WebSockets');
  await g.close();
  await t.rejects(fetch(`${g.url}/healthz`), 'no longer listening; close() twice is fine');
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** A server that answers only `/openapi.json`, with `spec`. */
async function docServer(spec: unknown): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url === '/openapi.json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(spec));
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A module that is not svc: an OpenAPI of its own, a header echo, a slow endpoint, a WebSocket. */
async function standIn() {
  const slowArrived = deferred();
  const slowAborted = deferred<boolean>();
  const wsConnected = deferred<{ headers: IncomingMessage['headers']; closed: Promise<boolean> }>();
  let specRequests = 0;
  const spec = {
    openapi: '3.1.0',
    info: { title: 'fake', version: '1' },
    paths: {
      '/fake/headers': { get: { tags: ['functions'], security: [{ bearerAuth: [] }], responses: { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } } } } } },
      '/fake/slow': { get: { tags: ['functions'], responses: {} } },
      '/ws/Raw': { get: { tags: ['walkers'], responses: {} } },
      '/user/login': { post: { tags: ['users'], responses: {} } },
    },
    components: { schemas: { Envelope: { type: 'string' } }, securitySchemes: { bearerAuth: { type: 'apiKey', in: 'header', name: 'x-key' } } },
  };
  const server: HttpServer = createServer((req, res) => {
    if (req.url === '/openapi.json') {
      // Still starting the first time.
      if (++specRequests === 1) return void res.writeHead(503).end();
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(spec));
    }
    if (req.url?.startsWith('/fake/headers')) {
      res.writeHead(200, {
        'content-type': 'application/json',
        'access-control-allow-origin': 'https://leak.example',
        'access-control-allow-methods': 'DELETE',
        'x-module': 'fake',
        connection: 'x-hop-back',
        'x-hop-back': '1',
      });
      return void res.end(JSON.stringify({ ...req.headers, url: req.url }));
    }
    if (req.url === '/fake/slow') {
      // Never answered.
      res.once('close', () => slowAborted.resolve(!res.writableFinished));
      return slowArrived.resolve();
    }
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const closed = new Promise<boolean>((resolve) => ws.once('close', () => resolve(true)));
      ws.on('message', (d) => ws.send(`echo ${d.toString()}`));
      wsConnected.resolve({ headers: req.headers, closed });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    get specRequests() {
      return specRequests;
    },
    slowArrived: slowArrived.promise,
    slowAborted: slowAborted.promise,
    wsConnected: wsConnected.promise,
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
