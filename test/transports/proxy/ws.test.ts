// WebSockets through the sandbox proxy, for real on loopback: the `vite-hmr` subprotocol forwarded and selected,
// text and binary frames both ways, close codes from either side, a handshake for an unknown sandbox refused.
import t from 'tap';
import { once } from 'node:events';
import WebSocket from 'ws';
import { RouteTable, startSandboxProxy } from '../../../transports/proxy/index.ts';
import { sandboxPod, standInPods, type SocketSeen } from './pods.ts';

const A = 'sbx-00000000000000a1';

/** The next message of a client, with whether it was binary. */
function next(ws: WebSocket): Promise<{ data: Buffer; binary: boolean }> {
  return new Promise((resolve) => ws.once('message', (data, binary) => resolve({ data: data as Buffer, binary })));
}

t.test('WebSocket relay: vite-hmr subprotocol, text and binary both ways, close codes from either side', async (t) => {
  const [pod] = await standInPods(['127.0.0.15']);
  if (!pod) throw new Error('no stand-in');
  t.teardown(() => pod.close());
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, pod.ip));
  const proxy = await startSandboxProxy({ routes, internalPort: pod.port, port: 0, host: '127.0.0.1' });
  t.teardown(() => proxy.close());
  const url = `ws://127.0.0.1:${proxy.port}/?token=hmr`;
  const open = (): Promise<{ ws: WebSocket; seen: SocketSeen }> =>
    new Promise((resolve, reject) => {
      const seenBy = new Promise<SocketSeen>((r) => (pod.onSocket = r));
      const ws = new WebSocket(url, ['vite-hmr'], { headers: { host: `${A}.preview.example.test` } });
      ws.once('error', reject);
      ws.once('open', () => void seenBy.then((seen) => resolve({ ws, seen })));
    });

  const { ws, seen } = await open();
  t.equal(ws.protocol, 'vite-hmr', 'the pod selected vite-hmr, and the client sees it');
  t.equal(seen.protocol, 'vite-hmr');
  t.equal(seen.url, '/?token=hmr', 'path and query forwarded');
  t.equal(seen.headers['x-forwarded-host'], `${A}.preview.example.test`);

  ws.send('{"type":"ping"}');
  const text = await next(ws);
  t.equal(text.binary, false, 'text stays text');
  t.equal(text.data.toString(), '{"type":"ping"}');
  const bytes = Buffer.from([0, 1, 2, 250, 255]);
  ws.send(bytes);
  const binary = await next(ws);
  t.equal(binary.binary, true, 'binary stays binary');
  t.same([...binary.data], [...bytes]);
  const big = Buffer.alloc(3 * 1024 * 1024, 9);
  ws.send(big);
  const bigBack = await next(ws);
  t.equal(bigBack.data.length, big.length, 'a 3 MB message both ways');

  // The pod pushes on its own (an HMR update).
  const pushed = next(ws);
  seen.socket.send('{"type":"update"}');
  t.equal((await pushed).data.toString(), '{"type":"update"}', 'pod → browser');

  // The client closes with a code: the pod sees it.
  ws.close(4000, 'client leaves');
  t.same(await seen.closed, { code: 4000, reason: 'client leaves' }, 'the close code reaches the pod');

  // The pod closes with a code: the client sees it.
  const second = await open();
  const [code, reason] = (await Promise.all([once(second.ws, 'close'), second.ws.send('close 4123')]))[0] as [number, Buffer];
  t.equal(code, 4123, 'the pod\'s close code reaches the client');
  t.equal(reason.toString(), 'closed by the pod');

  // A pod that goes away: the client's socket ends.
  const third = await open();
  const ended = once(third.ws, 'close');
  third.seen.socket.terminate();
  const [abnormal] = (await ended) as [number];
  t.equal(abnormal, 1006, 'a pod gone without a close frame: 1006 at the client');
});

t.test('WebSocket handshakes the proxy refuses', async (t) => {
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('pod-a', A, '127.0.0.16'));
  const proxy = await startSandboxProxy({ routes, internalPort: 1, port: 0, host: '127.0.0.1' });
  t.teardown(() => proxy.close());
  const status = (host: string) =>
    new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${proxy.port}/`, { headers: { host } });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('opened')));
      ws.once('error', () => undefined);
    });
  t.equal(await status('sbx-00000000000000ff.preview.example.test'), 502, 'unknown sandbox');
  t.equal(await status(`${A}.preview.example.test`), 502, 'a pod refusing the connection');
  t.equal(await status('example.test'), 404, 'no sandbox in the Host');
});
