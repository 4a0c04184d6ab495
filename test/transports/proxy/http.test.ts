// The sandbox proxy's HTTP side, for real on loopback: stand-in pods on 127.0.0.11–13 behind a route table;
// method, path, query, body and headers both ways (hop-by-hop headers removed, X-Forwarded-* added, repeats kept);
// the health answer; unknown vs not-ready sandboxes for a browser and an API caller; a pod refusing connections.
import t from 'tap';
import { request, type IncomingMessage } from 'node:http';
import { RouteTable, startSandboxProxy, sandboxIdOf } from '../../../transports/proxy/index.ts';
import { ask, sandboxPod, standInPods } from './pods.ts';

const A = 'sbx-00000000000000a1';
const B = 'sbx-00000000000000b2';
const C = 'sbx-00000000000000c3';
const host = (id: string) => `${id}.preview.example.test:8080`;

t.test('the Host header names the sandbox', async (t) => {
  t.equal(sandboxIdOf('SBX-00000000000000A1.preview.example.test:8080'), A, 'lowercased, port stripped');
  t.equal(sandboxIdOf(`${A}:8080`), A, 'a bare id');
  t.equal(sandboxIdOf('www.example.test'), undefined);
  t.equal(sandboxIdOf('sbx-xyz.preview.example.test'), undefined, 'not an id');
  t.equal(sandboxIdOf('[::1]:8080'), undefined);
  t.equal(sandboxIdOf(undefined), undefined);
});

t.test('HTTP through the proxy: both ways, as it came', async (t) => {
  const [a, b] = await standInPods(['127.0.0.11', '127.0.0.12']);
  t.teardown(() => Promise.all([a?.close(), b?.close()]));
  if (!a || !b) throw new Error('no stand-ins');
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, a.ip));
  routes.update('ADDED', sandboxPod('pod-b', B, b.ip));
  routes.update('ADDED', sandboxPod('warm-1', undefined, '127.0.0.99'));
  const proxy = await startSandboxProxy({ routes, internalPort: a.port, port: 0, host: '127.0.0.1' });
  t.teardown(() => proxy.close());

  const health = await ask(proxy.port, '10.0.0.5:8080', { path: '/_proxy/health' });
  t.equal(health.status, 200);
  t.equal(health.body, 'ok (2 routes)', 'warm pods are not routes');

  const body = JSON.stringify({ hello: 'world', n: [1, 2, 3] });
  const answer = await ask(proxy.port, host(A), {
    method: 'PUT',
    path: '/api/items/7?x=1&y=two%20words&x=3',
    headers: { 'content-type': 'application/json', 'X-Custom': 'Kept', 'x-multi': ['one', 'two'], connection: 'keep-alive, x-hop', 'x-hop': 'dropped', 'keep-alive': 'timeout=5', 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' },
    body,
  });
  t.equal(answer.status, 200);
  const seen = JSON.parse(answer.body) as { method: string; url: string; headers: Record<string, string>; rawHeaders: string[]; body: string; pod: string };
  t.equal(seen.pod, a.ip, 'routed by Host to its pod');
  t.equal(seen.method, 'PUT');
  t.equal(seen.url, '/api/items/7?x=1&y=two%20words&x=3', 'path and query as sent');
  t.equal(seen.body, body, 'body passed');
  t.equal(seen.headers['content-type'], 'application/json');
  t.ok(seen.rawHeaders.includes('X-Custom'), 'header case kept');
  t.same(seen.rawHeaders.filter((_, i, all) => i % 2 === 1 && all[i - 1] === 'x-multi'), ['one', 'two'], 'repeated headers kept');
  t.notOk('x-hop' in seen.headers, 'a header named by Connection is hop-by-hop');
  t.notOk('keep-alive' in seen.headers, 'Keep-Alive dropped');
  t.equal(seen.headers.host, `${a.ip}:${a.port}`, 'Host is the pod');
  t.equal(seen.headers['x-forwarded-host'], host(A), 'the original Host forwarded');
  t.equal(seen.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1', 'the client appended');
  t.equal(seen.headers['x-forwarded-proto'], 'https', 'a proto from the ingress kept');
  t.equal(answer.headers['x-pod'], a.ip, 'response headers passed');
  t.same(answer.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/'], 'both Set-Cookie headers');

  const other = await ask(proxy.port, host(B), { path: '/?status=418', method: 'POST', body: 'x'.repeat(100_000), headers: { 'content-type': 'text/plain' } });
  t.equal(other.status, 418, 'status passed');
  const otherSeen = JSON.parse(other.body) as { pod: string; body: string; headers: Record<string, string> };
  t.equal(otherSeen.pod, b.ip);
  t.equal(otherSeen.body.length, 100_000);
  t.equal(otherSeen.headers['x-forwarded-proto'], 'http');

  const head = await ask(proxy.port, host(A), { method: 'HEAD', path: '/x' });
  t.equal(head.status, 200);
  t.equal(head.body, '', 'HEAD: no body');

  const chunked = await ask(proxy.port, host(A), { method: 'POST', path: '/count', headers: { 'transfer-encoding': 'chunked' }, body: Buffer.alloc(3_000_000, 7) });
  t.same(JSON.parse(chunked.body), { bytes: 3_000_000 }, 'a chunked upload streams through');

  const download = await ask(proxy.port, host(B), { path: '/download?bytes=5000000' });
  t.equal(download.body.length, 5_000_000, 'a download streams back');
});

t.test('unknown, not ready and unreachable sandboxes: a loading page for browsers, 502/503 envelopes for API callers', async (t) => {
  const [a] = await standInPods(['127.0.0.13']);
  t.teardown(() => a?.close());
  if (!a) throw new Error('no stand-in');
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, a.ip, false));
  // Nothing listens on 127.0.0.14 at that port: the pod refuses connections (its dev server restarting).
  routes.update('ADDED', sandboxPod('pod-c', C, '127.0.0.14'));
  const proxy = await startSandboxProxy({ routes, internalPort: a.port, port: 0, host: '127.0.0.1' });
  t.teardown(() => proxy.close());
  const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
  const api = { accept: 'application/json' };

  const unknownPage = await ask(proxy.port, host(B), { headers: html });
  t.equal(unknownPage.status, 503, 'the loading page is a 503');
  t.match(unknownPage.headers['content-type'], /text\/html/);
  t.match(unknownPage.body, /<meta http-equiv="refresh" content="2">/, 'reloads every 2 s');
  t.equal(unknownPage.headers['retry-after'], '2');
  t.equal(unknownPage.headers['cache-control'], 'no-store');
  const unknownApi = await ask(proxy.port, host(B), { headers: api, path: '/api/x' });
  t.equal(unknownApi.status, 502);
  t.equal(JSON.parse(unknownApi.body).error.code, 'PREVIEW_UNKNOWN_SANDBOX');

  const notReadyPage = await ask(proxy.port, host(A), { headers: html });
  t.equal(notReadyPage.status, 503);
  t.match(notReadyPage.body, /http-equiv="refresh"/);
  const notReadyApi = await ask(proxy.port, host(A), { headers: api, method: 'POST', body: '{}' });
  t.equal(notReadyApi.status, 503);
  t.equal(JSON.parse(notReadyApi.body).error.code, 'PREVIEW_NOT_READY');
  t.equal(a.requests.length, 0, 'nothing reached the pod that is not ready');

  const refusedApi = await ask(proxy.port, host(C), { headers: api });
  t.equal(refusedApi.status, 502);
  t.equal(JSON.parse(refusedApi.body).error.code, 'PREVIEW_UNREACHABLE');
  const refusedUpload = await ask(proxy.port, host(C), { headers: api, method: 'POST', body: Buffer.alloc(5_000_000, 1) });
  t.equal(refusedUpload.status, 502, 'an upload to a pod that refuses: still an answer, not a cut connection');
  const refusedPage = await ask(proxy.port, host(C), { headers: html });
  t.equal(refusedPage.status, 503, 'a browser gets the loading page while the dev server restarts');
  t.match(refusedPage.body, /http-equiv="refresh"/);

  const noSandbox = await ask(proxy.port, 'www.example.test', { headers: api });
  t.equal(noSandbox.status, 404);
  t.equal(JSON.parse(noSandbox.body).error.code, 'PREVIEW_NO_SANDBOX');

  // Ready now: the same route answers.
  routes.update('MODIFIED', sandboxPod('pod-a', A, a.ip, true));
  const ready = await ask(proxy.port, host(A), { headers: html, path: '/page' });
  t.equal(ready.status, 200);
  t.equal(a.requests.length, 1);
});

t.test('close() lets a request in flight finish, then stops', async (t) => {
  const [a] = await standInPods(['127.0.0.13']);
  t.teardown(() => a?.close());
  if (!a) throw new Error('no stand-in');
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, a.ip));
  const proxy = await startSandboxProxy({ routes, internalPort: a.port, port: 0, host: '127.0.0.1' });
  // A download in flight while closing (its answer has begun, the body not yet read): it completes.
  const res = await new Promise<IncomingMessage>((resolve, reject) => request({ host: '127.0.0.1', port: proxy.port, path: '/download?bytes=20000000', headers: { host: host(A) } }, resolve).on('error', reject).end());
  const closing = proxy.close(5000);
  let bytes = 0;
  for await (const chunk of res) bytes += (chunk as Buffer).length;
  await closing;
  t.equal(bytes, 20_000_000, 'the request in flight finished');
  await t.rejects(ask(proxy.port, host(A)), 'no longer accepting');
});
