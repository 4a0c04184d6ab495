// The sandbox proxy under attack, for real on loopback: no open redirect from the token exchange, no request
// smuggled past it to a pod (a body a GET declares stays that request's), absolute-form targets reduced to a path, a
// pod's cookies kept to its own host, any valid token among stale ones lets its owner in, a broken encoding is a 401,
// a WebSocket with the token in a cookie and a subprotocol gets a subprotocol back, and an address a new pod took no
// longer routes to the old pod's sandbox.
import t from 'tap';
import { once } from 'node:events';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { proxySettings, RouteTable, signPreviewToken, startSandboxProxy } from '../../../transports/proxy/index.ts';
import { ask, sandboxPod, standInPods } from './pods.ts';

const A = 'sbx-00000000000000c3';
const B = 'sbx-00000000000000d4';
const SECRET = 'attack-secret-attack-secret-0123456789abc';
const host = (id: string) => `${id}.preview.example.test`;

/** Raw bytes to the proxy; everything it answers until it closes (or `ms`). */
async function raw(port: number, bytes: string, ms = 1500): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  socket.write(bytes);
  await Promise.race([once(socket, 'close'), new Promise((r) => setTimeout(r, ms))]);
  socket.destroy();
  return text;
}

t.test('with PREVIEW_DOMAIN, only hosts of the previews name a sandbox', async (t) => {
  const [pod] = await standInPods(['127.0.0.54']);
  if (!pod) throw new Error('no stand-in');
  t.teardown(() => pod.close());
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, pod.ip));
  const { previewDomain } = proxySettings({ PREVIEW_DOMAIN: 'Preview.Example.Test.' });
  t.equal(previewDomain, 'preview.example.test');
  const proxy = await startSandboxProxy({ routes, internalPort: pod.port, port: 0, host: '127.0.0.1', ...(previewDomain ? { previewDomain } : {}) });
  t.teardown(() => proxy.close());
  for (const good of [host(A), `${host(A).toUpperCase()}:8080`, `${host(A)}.`]) t.equal((await ask(proxy.port, good)).status, 200, `${good}: routed`);
  for (const bad of [`${A}.attacker.example`, A, `x.${host(A)}`, `${A}.preview.example.test.evil.com`]) {
    const answer = await ask(proxy.port, bad, { headers: { accept: 'application/json' } });
    t.equal(answer.status, 404, `${bad}: no sandbox`);
    t.equal(JSON.parse(answer.body).error.code, 'PREVIEW_NO_SANDBOX');
  }
  t.throws(() => proxySettings({ PREVIEW_DOMAIN: 'not a domain' }), { code: 'SVC_ERR_PROXY_CONFIG' });
});

t.test('attacks on the proxy', async (t) => {
  const [pod, other] = await standInPods(['127.0.0.51', '127.0.0.52']);
  if (!pod || !other) throw new Error('no stand-ins');
  t.teardown(() => Promise.all([pod.close(), other.close()]));
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, pod.ip));
  routes.update('ADDED', sandboxPod('pod-b', B, other.ip));
  const proxy = await startSandboxProxy({ routes, internalPort: pod.port, port: 0, host: '127.0.0.1', previewSecret: SECRET });
  t.teardown(() => proxy.close());
  const valid = await signPreviewToken(SECRET, { sandbox_id: A, user: 'ada', ttlSeconds: 600 });
  const forB = await signPreviewToken(SECRET, { sandbox_id: B, user: 'bob', ttlSeconds: 600 });

  for (const path of [`//evil.example/x?svc_preview_token=${valid}`, `/\\evil.example/x?svc_preview_token=${valid}`]) {
    const answer = await ask(proxy.port, host(A), { path });
    t.equal(answer.status, 302);
    t.match(answer.headers.location, /^\/[^/\\]/, `no open redirect: ${answer.headers.location}`);
  }
  const absolute = await raw(proxy.port, `GET http://evil.example/x?svc_preview_token=${valid} HTTP/1.1\r\nHost: ${host(A)}\r\nConnection: close\r\n\r\n`);
  t.match(absolute, /^HTTP\/1\.1 302/);
  t.match(absolute, /\r\nlocation: \/x\r\n/i, 'an absolute-form target redirects to its path only');

  const broken = await ask(proxy.port, host(A), { path: '/?svc_preview_token=%E0%A4%A', headers: { accept: 'application/json' } });
  t.equal(broken.status, 401, 'a broken encoding is a refused token');
  const stale = await ask(proxy.port, host(A), { headers: { 'x-svc-preview-token': forB, cookie: `svc_preview=junk; svc_preview=${valid}` } });
  t.equal(stale.status, 200, "a stale header and a planted cookie do not lock the owner out");

  const planted = await ask(proxy.port, host(A), { path: '/?plant=1', headers: { 'x-svc-preview-token': valid } });
  const cookies = ([] as string[]).concat(planted.headers['set-cookie'] ?? []);
  t.ok(cookies.some((c) => c.startsWith('svc_preview=junk')), "the pod's cookie is passed on");
  t.notOk(cookies.some((c) => /domain=/i.test(c)), 'without its Domain: it stays with its own host');

  const before = pod.requests.length;
  const smuggle = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
  await raw(proxy.port, `GET /first HTTP/1.1\r\nHost: ${host(A)}\r\nX-Svc-Preview-Token: ${valid}\r\nContent-Length: ${smuggle.length}\r\nConnection: content-length\r\n\r\n${smuggle}`);
  await raw(proxy.port, `GET /first-chunked HTTP/1.1\r\nHost: ${host(A)}\r\nX-Svc-Preview-Token: ${valid}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${smuggle.length.toString(16)}\r\n${smuggle}\r\n0\r\n\r\n`);
  await ask(proxy.port, host(A), { path: '/after', headers: { 'x-svc-preview-token': valid } });
  const urls = pod.requests.slice(before).map((r) => r.url);
  t.notOk(urls.includes('/smuggled'), `nothing smuggled to the pod (it saw ${urls.join(', ')})`);
  t.ok(urls.includes('/after'), 'and the next request is answered as itself');

  const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/hmr`, [`svc-preview.${valid}`], { headers: { host: host(A), cookie: `svc_preview=${valid}` } });
  await once(ws, 'open');
  t.equal(ws.protocol, `svc-preview.${valid}`, 'a token subprotocol is selected even when the cookie let it in');
  ws.close();

  // The pod behind A goes; a new pod of B gets A's old address before A's DELETE arrives.
  routes.update('MODIFIED', sandboxPod('pod-b2', B, pod.ip));
  t.notOk(routes.get(A)?.ready, "A's route is not ready: its address is B's pod's now");
  routes.update('ADDED', { metadata: { name: 'x', namespace: 'svc-sandboxes', labels: { 'svc-sandbox-id': '../../x' } }, status: { phase: 'Running', podIP: '127.0.0.53' } });
  t.notOk(routes.list().some((r) => r.sandbox_id === '../../x'), 'a label that is not a sandbox id is no route');
});
