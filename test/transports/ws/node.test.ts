// The `ws` socket layer (node:http) under the hub, in this process on a loopback port: an upgrade refused with the
// JSON envelope HTTP answers carry, a frame and its reply, a broadcast fanned out to the other client, and the hub
// told when a client goes.
import t from 'tap';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { ActorSystem } from 'svc/kernel';
import { APIProtocol, entry, Registry, restspec, Root, T, Walker } from 'svc';
import { attachNode, WsHub, wsRoutes } from '../../../transports/ws/index.ts';
import { Latch } from '../../kit/index.ts';

class Lobby extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET, broadcast: true });
  static has = T.Object({ text: T.String() });
  @entry(Root) go() {}
}

t.test('over a real socket: refusal, reply, broadcast, and the close reaching the hub', async (t) => {
  const system = new ActorSystem({ nodeId: 'p/w1' });
  const closes = new Latch();
  const hub = new WsHub({
    system,
    routes: wsRoutes(Registry.fromModule({ Lobby })),
    auth: {
      verify() {
        throw new Error('no tokens here');
      },
    },
    guest: { rootId: 'guest' },
    run: async (_walker, fields) => ({ json: JSON.stringify([fields.text]) }),
    errorOf: (error) => ({ code: 'INTERNAL_ERROR', message: (error as Error).message }),
    onEvent: (e) => void (e.event === 'close' && closes.hit()),
  });
  const server = createServer((_req, res) => res.writeHead(404).end());
  attachNode(server, hub);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `ws://127.0.0.1:${(server.address() as { port: number }).port}`;
  t.teardown(async () => {
    hub.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await system.shutdown();
  });

  const refused = new WebSocket(`${base}/ws/Nope`);
  refused.on('error', () => undefined); // the refusal, and the terminate below
  const [, res] = (await once(refused, 'unexpected-response')) as [unknown, IncomingMessage];
  let body = '';
  for await (const chunk of res) body += chunk;
  t.equal(res.statusCode, 404);
  t.match(JSON.parse(body), { ok: false, error: { code: 'NOT_FOUND', message: 'no WebSocket walker at /ws/Nope' } });
  refused.terminate();

  const open = async () => {
    const ws = new WebSocket(`${base}/ws/Lobby`);
    const got: string[] = [];
    const arrived = new Latch();
    ws.on('message', (data) => (got.push(String(data)), arrived.hit()));
    await once(ws, 'open');
    return { ws, got, arrived };
  };
  const a = await open();
  const b = await open();
  t.equal(hub.conns.size, 2);
  a.ws.send(JSON.stringify({ text: 'hello', id: 'x' }));
  await a.arrived.wait(1);
  await b.arrived.wait(1);
  t.same(a.got, ['{"ok":true,"data":{"result":null,"reports":["hello"]},"id":"x"}'], 'the sender gets its reply, with its id');
  t.same(b.got, ['{"ok":true,"data":{"result":null,"reports":["hello"]}}'], 'the other client gets the broadcast');

  a.ws.close(1000);
  await closes.wait(1);
  t.equal(hub.conns.size, 1, 'the hub forgot the closed connection');
  b.ws.send(JSON.stringify({ text: 'alone' }));
  await b.arrived.wait(2);
  t.same(a.got.length, 1, 'a closed client is sent nothing more');
  b.ws.close(1000);
  await closes.wait(2);
  t.equal(hub.conns.size, 0);
});
