// Broadcast walkers: every reply reaches every connected client of the walker,
// on every worker thread, and only authenticated ones for a private walker;
// a client that stops reading is cut off instead of growing the server.
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { startServer, tokenFor, transport, type Server } from '../../kit/index.ts';
import { rawSocket } from '../../helpers/ws.ts';

const entry = new URL('../../fixtures/ws-app.ts', import.meta.url).pathname;
let server: Server;
t.before(async () => {
  server = await startServer({
    entry,
    workers: 2,
    env: { SVC_ACCESS_LOG: 'true', SVC_WS_MAX_FRAME_BYTES: '200000', SVC_WS_MAX_BUFFERED_BYTES: '262144', SVC_WS_AUTH_TIMEOUT_SECONDS: '60' },
  });
});
t.teardown(() => server.stop());

/** Worker ids of the `open` log lines for a walker, in order. */
function opens(walker: string): string[] {
  return server
    .output()
    .split('\n')
    .filter((l) => l.includes('"event":"open"') && l.includes(`"walker":"${walker}"`))
    .map((l) => (JSON.parse(l) as { worker: string }).worker);
}

/** Connect clients until they sit on at least two worker threads (uWS spreads connections per socket). */
async function spread(walker: string, min: number, connect: (i: number) => Promise<WalkerSocket>): Promise<{ clients: WalkerSocket[]; workers: Set<string> }> {
  const clients: WalkerSocket[] = [];
  const before = opens(walker).length;
  const wantThreads = transport() === 'node' ? 1 : 2; // node:http listens on one thread
  for (let i = 0; i < 64; i++) {
    clients.push(await connect(i));
    await server.waitFor(new RegExp(`"event":"open".*"walker":"${walker}"|"walker":"${walker}".*"event":"open"`), before + clients.length);
    if (clients.length >= min && new Set(opens(walker).slice(before)).size >= wantThreads) break;
  }
  return { clients, workers: new Set(opens(walker).slice(before)) };
}

t.test('a private broadcast walker: every authenticated client on every thread gets every reply; unauthenticated ones get nothing', async (t) => {
  const { clients, workers } = await spread('Chat', 8, async (i) => WalkerSocket.connect(server.url, 'Chat', { token: await tokenFor(`chat-user-${i}`, { server }) }));
  t.ok(workers.size >= (transport() === 'node' ? 1 : 2), `clients sit on ${[...workers].join(', ')}`);
  // A connection that never authenticates: it is open, but must receive nothing.
  const lurker = await rawSocket(server.port, '/ws/Chat');
  const got = clients.map(() => [] as unknown[]);
  const all = clients.map(
    (c, i) =>
      new Promise<void>((resolve) => {
        c.onBroadcast((data) => {
          got[i]?.push(data.reports[0]);
          if (got[i]?.length === clients.length - 1) resolve();
        });
      }),
  );
  const replies = await Promise.all(clients.map((c, i) => c.send({ text: `hello from ${i}` })));
  t.same(
    replies.map((r) => r.reports[0]),
    clients.map((_, i) => ({ from: `chat-user-${i}`, text: `hello from ${i}` })),
    'each sender gets its own reply (with its id)',
  );
  await Promise.all(all);
  for (let i = 0; i < clients.length; i++) {
    const texts = (got[i] as { text: string }[]).map((r) => r.text).sort();
    const expected = clients.map((_, j) => `hello from ${j}`).filter((x) => x !== `hello from ${i}`).sort();
    t.same(texts, expected, `client ${i} got every other client's message once`);
  }
  // The lurker authenticates only now: the answer to that frame comes after anything the server had sent it
  // before, so if a broadcast had reached it, it would be ahead of the answer.
  const answered = new Promise<void>((resolve) => {
    lurker.socket.on('data', () => lurker.texts.some((x) => x.includes('authenticated')) && resolve());
  });
  lurker.send(JSON.stringify({ token: await tokenFor('late-lurker', { server }), id: 'late' }));
  await answered;
  t.same(lurker.texts, ['{"type":"authenticated","id":"late"}'], 'an unauthenticated connection received no broadcast');
  lurker.socket.destroy();
  await Promise.all(clients.map((c) => c.close()));
});

t.test('a public broadcast walker reaches clients without a token', async (t) => {
  const { clients } = await spread('Lobby', 4, () => WalkerSocket.connect(server.url, 'Lobby'));
  const heard = clients.slice(1).map((c) => new Promise((resolve) => c.onBroadcast((d) => resolve(d.reports))));
  await (clients[0] as WalkerSocket).send({ text: 'to everyone' });
  t.same(await Promise.all(heard), clients.slice(1).map(() => ['to everyone']));
  await Promise.all(clients.map((c) => c.close()));
});

t.test('a sender that leaves right after sending: the others still hear it', async (t) => {
  const listener = await WalkerSocket.connect(server.url, 'Lobby');
  const heard = new Promise((resolve) => listener.onBroadcast((d) => resolve(d.reports)));
  const sender = await WalkerSocket.connect(server.url, 'Lobby');
  sender.ws.send(JSON.stringify({ text: 'said and gone' }));
  sender.ws.terminate();
  t.same(await heard, ['said and gone']);
  await listener.close();
});

t.test('a client that never reads is disconnected once it is max_buffered_bytes behind; the others keep up', async (t) => {
  const slow = await rawSocket(server.port, '/ws/Lobby', { paused: true });
  const reader = await WalkerSocket.connect(server.url, 'Lobby');
  const sender = await WalkerSocket.connect(server.url, 'Lobby');
  const closesBefore = server.output().split('\n').filter((l) => l.includes('"event":"close"') && l.includes('"walker":"Lobby"')).length;
  const text = 'x'.repeat(64 * 1024);
  const count = 400; // 25 MiB to each listener: more than loopback socket buffers hold
  let heard = 0;
  const allHeard = new Promise<void>((resolve) => reader.onBroadcast(() => ++heard === count && resolve()));
  for (let i = 0; i < count; i++) await sender.send({ text });
  await allHeard;
  t.equal(heard, count, 'the reading client got every message');
  // The server closed the slow one (its close shows in the access log)...
  await server.waitFor(/"event":"close".*"walker":"Lobby"|"walker":"Lobby".*"event":"close"/, closesBefore + 1);
  // ...and what the slow client can still read is far less than what was sent.
  slow.socket.resume();
  await slow.closeFrame;
  t.ok(slow.bytes < count * text.length, `the slow client was cut off after ${(slow.bytes / 2 ** 20).toFixed(1)} MiB of ${((count * text.length) / 2 ** 20).toFixed(0)} MiB`);
  await Promise.all([reader.close(), sender.close()]);
});

t.test('disconnects leave nothing behind: sessions, actors and handles return to where they were', async (t) => {
  const admin = await tokenFor('stats-admin', { server, role: 'admin' });
  const stats = async () => {
    const res = await fetch(`${server.url}/admin/stats`, { headers: { authorization: `Bearer ${admin}` } });
    return ((await res.json()) as { data: { workers: { worker: string; websockets: number; session_actors: number; actors: number; handles: number }[] } }).data.workers;
  };
  t.equal((await fetch(`${server.url}/admin/stats`)).status, 401, '/admin/stats needs a token');
  t.equal((await fetch(`${server.url}/admin/stats`, { headers: { authorization: `Bearer ${await tokenFor('u', { server })}` } })).status, 403, 'an admin token');
  const forged = await tokenFor('a', { server, role: 'admin', secret: 'another-secret-another-secret-0123456789' });
  t.equal((await fetch(`${server.url}/admin/stats`, { headers: { authorization: `Bearer ${forged}` } })).status, 401, 'a forged admin token');
  const expired = await tokenFor('a', { server, role: 'admin', expiresIn: Math.floor(Date.now() / 1000) - 10 });
  t.equal((await fetch(`${server.url}/admin/stats`, { headers: { authorization: `Bearer ${expired}` } })).status, 401, 'an expired admin token');
  const before = await stats();
  t.ok(before.every((w) => w.websockets === 0 && w.session_actors === 0), 'no connection open at the start');
  const token = await tokenFor('cycler', { server });
  for (let round = 0; round < 40; round++) {
    await Promise.all(
      Array.from({ length: 25 }, async (_, i) => {
        const c = await WalkerSocket.connect(server.url, i % 2 ? 'Echo' : 'Chat', i % 2 ? {} : { token });
        if (i % 3 === 0) await c.send(i % 2 ? { msg: 'x' } : { text: 'x' });
        if (i % 5 === 0) c.ws.terminate(); // some drop without a close handshake
        else await c.close();
      }),
    );
  }
  // Sessions end as their close is processed: ask until the server has caught up.
  // Sessions end as their close is processed: ask again (a bounded number of times) until the server has caught up.
  const settled = (ws: typeof before) => ws.every((w) => w.websockets === 0 && w.session_actors === 0);
  let after = await stats();
  for (let i = 0; i < 500 && !settled(after); i++) after = await stats();
  for (const w of after) {
    const b = before.find((x) => x.worker === w.worker);
    t.equal(w.websockets, 0, `${w.worker}: no session left after 1,000 connections`);
    t.equal(w.session_actors, 0, `${w.worker}: every session actor stopped`);
    // Partition actors of the roots the walkers ran on may still be active (they go when idle); nothing else is new.
    t.ok(w.actors <= (b?.actors ?? 0) + 2, `${w.worker}: ${w.actors} actors (before ${b?.actors})`);
    t.ok(w.handles <= (b?.handles ?? 0) + 2, `${w.worker}: handles ${w.handles} (before ${b?.handles})`);
  }
});
