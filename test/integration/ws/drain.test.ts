// Shutting down with WebSocket connections open: each is closed with 4503,
// new upgrades are refused, and the process exits 0.
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { startServer, tokenFor } from '../../kit/index.ts';

const entry = new URL('../../fixtures/ws-app.ts', import.meta.url).pathname;

t.test('SIGTERM closes open connections with 4503 and exits 0', async (t) => {
  const server = await startServer({ entry, workers: 2 });
  t.teardown(() => server.stop('SIGKILL'));
  const clients = await Promise.all([
    ...Array.from({ length: 4 }, () => WalkerSocket.connect(server.url, 'Echo')),
    ...Array.from({ length: 4 }, async (_, i) => WalkerSocket.connect(server.url, 'Chat', { token: await tokenFor(`drain-${i}`, { server }) })),
  ]);
  for (const c of clients.slice(0, 4)) t.same((await c.send({ msg: 'up' })).reports, ['up']);
  server.proc.kill('SIGTERM');
  const closes = await Promise.all(clients.map((c) => c.closed));
  t.same(
    closes.map((c) => c.code),
    clients.map(() => 4503),
    'every connection closed with 4503',
  );
  t.match(closes[0]?.reason, /shutting down/);
  t.equal(await server.exited, 0, 'the process exits 0');
});
