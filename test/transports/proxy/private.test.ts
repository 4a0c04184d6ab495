// Private mode of the sandbox proxy: only a signed, unexpired preview token for that sandbox passes — as the
// X-Svc-Preview-Token header, the svc_preview_token query parameter (exchanged for a cookie and a redirect), the
// cookie, or a WebSocket subprotocol — and the token never reaches the pod. Missing, forged, expired and other
// sandboxes' tokens get 401 with nothing sent to the pod.
import t from 'tap';
import { once } from 'node:events';
import { SignJWT } from 'jose';
import WebSocket from 'ws';
import { PROXY_CONFIG_CODE, proxySettings, RouteTable, signPreviewToken, startSandboxProxy, verifyPreviewToken } from '../../../transports/proxy/index.ts';
import { ask, sandboxPod, standInPods, type SocketSeen } from './pods.ts';

const A = 'sbx-00000000000000a1';
const B = 'sbx-00000000000000b2';
const SECRET = 'preview-secret-preview-secret-0123456789';
const host = (id: string) => `${id}.preview.example.test`;

t.test('preview tokens: signed, expiring, for one sandbox', async (t) => {
  const token = await signPreviewToken(SECRET, { sandbox_id: A, user: 'ada', ttlSeconds: 60 });
  const claims = await verifyPreviewToken(SECRET, token, A);
  t.match(claims, { sandbox_id: A, user: 'ada' });
  t.ok(claims && claims.exp - claims.iat === 60, 'exp = iat + ttl');
  t.equal(await verifyPreviewToken(SECRET, token, B), undefined, 'another sandbox');
  t.equal(await verifyPreviewToken(`${SECRET}x`, token, A), undefined, 'another secret');
  t.equal(await verifyPreviewToken(SECRET, 'not.a.token', A), undefined);
  t.throws(() => proxySettings({ PREVIEW_SECRET: 'short' }), { code: PROXY_CONFIG_CODE }, 'a secret under 32 bytes is refused');
  await t.rejects(startSandboxProxy({ port: 0, host: '127.0.0.1', previewSecret: 'short' }), { code: PROXY_CONFIG_CODE });
  t.match(proxySettings({}), { namespace: 'svc-sandboxes', label: 'svc-sandbox=true', internalPort: 8000, port: 8080, host: '0.0.0.0' });
  t.throws(() => proxySettings({ PROXY_PORT: 'eighty' }), { code: PROXY_CONFIG_CODE });
});

t.test('private mode: who passes, and what reaches the pod', async (t) => {
  const [pod] = await standInPods(['127.0.0.17']);
  if (!pod) throw new Error('no stand-in');
  t.teardown(() => pod.close());
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, pod.ip));
  const proxy = await startSandboxProxy({ routes, internalPort: pod.port, port: 0, host: '127.0.0.1', previewSecret: SECRET });
  t.teardown(() => proxy.close());
  const valid = await signPreviewToken(SECRET, { sandbox_id: A, user: 'ada', ttlSeconds: 600 });
  const forged = await signPreviewToken('another-secret-another-secret-0123456789', { sandbox_id: A, user: 'ada' });
  const forB = await signPreviewToken(SECRET, { sandbox_id: B, user: 'ada' });
  const now = Math.floor(Date.now() / 1000);
  const expired = await new SignJWT({ user: 'ada' }).setProtectedHeader({ alg: 'HS256' }).setSubject(A).setAudience('svc-preview').setIssuedAt(now - 120).setExpirationTime(now - 60).sign(new TextEncoder().encode(SECRET));
  const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: A, user: 'ada', aud: 'svc-preview', exp: now + 600, iat: now })).toString('base64url')}.`;

  for (const [what, headers] of [
    ['no token', {}],
    ['a forged token', { 'x-svc-preview-token': forged }],
    ['an expired token', { 'x-svc-preview-token': expired }],
    ["another sandbox's token", { 'x-svc-preview-token': forB }],
    ['an unsigned token', { 'x-svc-preview-token': unsigned }],
    ['a forged cookie', { cookie: `svc_preview=${forged}` }],
  ] as const) {
    const answer = await ask(proxy.port, host(A), { headers: { accept: 'application/json', ...headers } });
    t.equal(answer.status, 401, `${what}: 401`);
    t.equal(JSON.parse(answer.body).error.code, 'PREVIEW_TOKEN', `${what}: PREVIEW_TOKEN`);
  }
  const forgedQuery = await ask(proxy.port, host(A), { path: `/?svc_preview_token=${expired}` });
  t.equal(forgedQuery.status, 401, 'an expired token in the query: 401, no cookie');
  t.notOk(forgedQuery.headers['set-cookie']);
  const unknown = await ask(proxy.port, host(B), { headers: { accept: 'application/json' } });
  t.equal(unknown.status, 401, 'without a token, an unknown sandbox is not told apart');
  t.equal(pod.requests.length, 0, 'nothing reached the pod');

  // The header: passes, stripped.
  const byHeader = await ask(proxy.port, host(A), { path: '/h?x=1', headers: { 'X-Svc-Preview-Token': valid, cookie: 'theme=dark' } });
  t.equal(byHeader.status, 200, 'a valid header token passes');
  let seen = pod.requests.at(-1);
  t.equal(seen?.url, '/h?x=1');
  t.notOk('x-svc-preview-token' in (seen?.headers ?? {}), 'the header does not reach the pod');
  t.equal(seen?.headers.cookie, 'theme=dark', 'other cookies do');

  const requestsBefore = pod.requests.length;
  // The query parameter: a 302 to the same URL without it, with the cookie.
  const byQuery = await ask(proxy.port, host(A), { path: `/app/page?a=1&svc_preview_token=${valid}&b=2`, headers: { 'x-forwarded-proto': 'https' } });
  t.equal(byQuery.status, 302);
  t.equal(byQuery.headers.location, '/app/page?a=1&b=2', 'redirected without the parameter');
  const cookie = String(byQuery.headers['set-cookie']?.[0]);
  t.match(cookie, new RegExp(`^svc_preview=${valid.replace(/\./g, '\\.')}; `), 'the token in a cookie');
  t.match(cookie, /HttpOnly/);
  t.match(cookie, /SameSite=Lax/);
  t.match(cookie, /Secure/, 'Secure behind HTTPS');
  t.match(cookie, /Path=\//);
  t.notMatch(cookie, /Domain=/, 'scoped to this host');
  const maxAge = Number(/Max-Age=(\d+)/.exec(cookie)?.[1]);
  t.ok(maxAge > 590 && maxAge <= 600, `Max-Age to the token's expiry (${maxAge})`);
  const plain = await ask(proxy.port, host(A), { path: `/?svc_preview_token=${valid}` });
  t.notMatch(String(plain.headers['set-cookie']?.[0]), /Secure/, 'not Secure over plain HTTP');
  t.equal(pod.requests.length, requestsBefore, 'the redirects themselves reached no pod');

  // The cookie: passes, stripped (other cookies kept).
  const byCookie = await ask(proxy.port, host(A), { path: '/app/page?a=1&b=2', headers: { cookie: `theme=dark; svc_preview=${valid}; lang=en` } });
  t.equal(byCookie.status, 200, 'the cookie passes');
  seen = pod.requests.at(-1);
  t.equal(seen?.headers.cookie, 'theme=dark; lang=en', 'the token cookie does not reach the pod');
  const onlyCookie = await ask(proxy.port, host(A), { headers: { cookie: `svc_preview=${valid}` } });
  t.equal(onlyCookie.status, 200);
  t.notOk('cookie' in (pod.requests.at(-1)?.headers ?? {}), 'no Cookie header left');

  // A POST with the parameter: no redirect (its body would be lost), passes with the parameter stripped.
  const post = await ask(proxy.port, host(A), { method: 'POST', path: `/api?svc_preview_token=${valid}`, body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  t.equal(post.status, 200);
  t.equal(pod.requests.at(-1)?.url, '/api');
  t.equal(pod.requests.at(-1)?.body, '{"a":1}');

  for (const r of pod.requests) t.notMatch(JSON.stringify(r), valid, `${r.method} ${r.url}: the token never reached the pod`);

  // WebSockets: the subprotocol, or the cookie; refused without.
  const connect = (protocols: string[], headers: Record<string, string> = {}) =>
    new Promise<{ ws?: WebSocket; status?: number; seen?: SocketSeen }>((resolve) => {
      const seenBy = new Promise<SocketSeen>((r) => (pod.onSocket = r));
      const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/hmr`, protocols, { headers: { host: host(A), ...headers } });
      ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode }));
      ws.once('error', () => undefined);
      ws.once('open', () => void seenBy.then((seen) => resolve({ ws, seen })));
    });
  const viaProtocol = await connect(['vite-hmr', `svc-preview.${valid}`]);
  t.ok(viaProtocol.ws, 'a token subprotocol passes');
  t.equal(viaProtocol.ws?.protocol, 'vite-hmr');
  t.equal(viaProtocol.seen?.headers['sec-websocket-protocol'], 'vite-hmr', 'the token subprotocol does not reach the pod');
  viaProtocol.ws?.send('hi');
  t.equal(String((await once(viaProtocol.ws as WebSocket, 'message'))[0]), 'hi', 'and it relays');
  viaProtocol.ws?.close();
  const onlyToken = await connect([`svc-preview.${valid}`]);
  t.ok(onlyToken.ws, 'the token as the only subprotocol: selected for the client, as the pod selects none');
  t.equal(onlyToken.seen?.headers['sec-websocket-protocol'], undefined, 'no subprotocol reaches the pod');
  onlyToken.ws?.close();
  const viaCookie = await connect(['vite-hmr'], { cookie: `svc_preview=${valid}` });
  t.ok(viaCookie.ws, 'the cookie passes a handshake');
  t.equal(viaCookie.seen?.headers.cookie, undefined, 'the token cookie does not reach the pod');
  viaCookie.ws?.close();
  const sockets = pod.sockets.length;
  t.equal((await connect(['vite-hmr'])).status, 401, 'no token: 401');
  t.equal((await connect(['vite-hmr', `svc-preview.${forged}`])).status, 401, 'a forged token: 401');
  t.equal((await connect(['vite-hmr', `svc-preview.${forB}`])).status, 401, "another sandbox's: 401");
  t.equal(pod.sockets.length, sockets, 'no refused handshake reached the pod');
});
