// The chat example (examples/chat/app.ts) as its README says it works, with real clients over two worker threads:
// two users in a room hear each other once each, in order; presence lists both (and told each join); a function
// announces to the room at once; a LiveSocket that loses its connection rejoins and receives what it missed.
import t from 'tap';
import { LiveSocket, WalkerSocket } from 'svc/client';
import { typedFrames } from '../../helpers/ws.ts';
import { post, startServer, tokenFor, type Server } from '../../kit/index.ts';

t.setTimeout(60_000);

const entry = new URL('../../../examples/chat/app.ts', import.meta.url).pathname;

type Frame = Record<string, unknown>;

/** A WalkerSocket to the Chat walker that keeps the frames the server sends on its own, and waits for some. */
async function chatter(server: Server, user: string) {
  const ws = await WalkerSocket.connect(server.url, 'Chat', { token: await tokenFor(user, { server }) });
  return typedFrames(ws);
}

const text = (f: Frame) => (f.data as Frame | undefined)?.text;
const isMessage = (f: Frame) => f.type === 'message';

let server: Server;
t.before(async () => {
  server = await startServer({ entry, workers: 2 });
});
t.teardown(() => server.stop());

t.test('two users in a room hear each other; presence lists both; announce reaches them', async (t) => {
  const ann = await chatter(server, 'ann');
  const bob = await chatter(server, 'bob');
  t.teardown(async () => {
    await ann.ws.close();
    await bob.ws.close();
  });

  t.same((await ann.ws.send({ op: 'join', room: 'lobby', name: 'Ann' })).reports, [{ joined: 'chat:lobby' }]);
  t.match(ann.frames.find((f) => f.type === 'joined'), { room: 'chat:lobby', ticket: String, last: /^[0-9a-f]{8}-0$/ }, 'a joined frame before the reply');
  await bob.ws.send({ op: 'join', room: 'lobby', name: 'Bob' });
  const [bobJoined] = await ann.until((f) => f.type === 'presence' && f.event === 'join' && f.user === 'bob');
  t.match(bobJoined, { room: 'chat:lobby', meta: { name: 'Bob' } }, 'ann was told bob joined');

  await ann.ws.send({ op: 'say', room: 'lobby', text: 'hi bob' });
  await bob.ws.send({ op: 'say', room: 'lobby', text: 'hi ann' });
  await ann.ws.send({ op: 'say', room: 'lobby', text: 'how are you?' });
  for (const c of [ann, bob]) {
    const got = await c.until(isMessage, 3);
    t.same(got.map(text), ['hi bob', 'hi ann', 'how are you?'], 'each message once, in the order sent');
    t.match(got[0], { room: 'chat:lobby', id: /^[0-9a-f]+-\d+$/, data: { from: 'ann' } }, 'numbered in the room history');
  }

  const who = (await bob.ws.send({ op: 'who', room: 'lobby' })).reports[0];
  t.same(who, {
    room: 'chat:lobby',
    users: [
      { user: 'ann', connections: 1, meta: { name: 'Ann' } },
      { user: 'bob', connections: 1, meta: { name: 'Bob' } },
    ],
    guests: 0,
    connections: 2,
  });

  const announced = await post(`${server.url}/function/announce`, { room: 'lobby', text: 'closing soon' }, { authorization: `Bearer ${await tokenFor('ops', { server })}` });
  t.equal(announced.status, 200);
  t.same(announced.body.data.result, { connections: 2 });
  for (const c of [ann, bob]) await c.until((f) => isMessage(f) && text(f) === 'closing soon');

  t.same((await bob.ws.send({ op: 'leave', room: 'lobby' })).reports, [{ left: 'chat:lobby' }]);
  await ann.until((f) => f.type === 'presence' && f.event === 'leave' && f.user === 'bob');
  const after = (await ann.ws.send({ op: 'who', room: 'lobby' })).reports[0] as { users: { user: string }[] };
  t.same(after.users.map((u) => u.user), ['ann'], 'bob left');

  const script = await fetch(`${server.url}/svc/live.js`);
  t.equal(script.status, 200, 'the browser client the README points pages at is served');
  t.match(await script.text(), /class LiveSocket/);

  const guest = await WalkerSocket.connect(server.url, 'Chat');
  await t.rejects(guest.send({ op: 'join', room: 'lobby' }), 'the walker is private: a guest is refused');
  await guest.closed;
});

t.test('a LiveSocket that loses its connection rejoins and receives what it missed, once each', async (t) => {
  const ann = await chatter(server, 'ann');
  t.teardown(() => ann.ws.close());
  await ann.ws.send({ op: 'join', room: 'resume', name: 'Ann' });

  const token = await tokenFor('cy', { server });
  // The token is asked for at every (re)connection: holding it back keeps cy away while the missed messages are sent.
  let away: Promise<void> = Promise.resolve();
  let back: () => void = () => undefined;
  const live = await LiveSocket.connect(server.url, 'Chat', { token: async () => (await away, token), backoff: { minMs: 20, maxMs: 100 } });
  t.teardown(() => live.close());
  const got: unknown[] = [];
  let wake: () => void = () => undefined;
  live.onMessage((m) => {
    got.push(text(m as unknown as Frame));
    wake();
  });
  const received = async (n: number) => {
    while (got.length < n) await new Promise<void>((resolve) => (wake = resolve));
  };
  const resynced: string[] = [];
  live.onResync((room) => resynced.push(room));

  await live.send({ op: 'join', room: 'resume', name: 'Cy' });
  t.ok(live.rooms.has('chat:resume'), 'LiveSocket knows the room the walker joined');
  await ann.ws.send({ op: 'say', room: 'resume', text: 'before' });
  await received(1);

  const reopened = new Promise<void>((resolve) => live.onState((s) => s === 'open' && resolve()));
  away = new Promise<void>((resolve) => (back = resolve));
  live.drop();
  // Sent while cy is away (ann waits for each to be committed and sent).
  for (const m of ['missed 1', 'missed 2', 'missed 3']) await ann.ws.send({ op: 'say', room: 'resume', text: m });
  back();
  await reopened;
  t.equal(live.connections, 2, 'reconnected once');
  await received(4);
  await ann.ws.send({ op: 'say', room: 'resume', text: 'after' });
  await received(5);
  t.same(got, ['before', 'missed 1', 'missed 2', 'missed 3', 'after'], 'every message once, in order, across the reconnect');
  t.same(resynced, [], 'no resync: the history reached back');

  const who = (await live.send({ op: 'who', room: 'resume' })).reports[0] as { users: { user: string; connections: number; meta: unknown }[] };
  t.same(who.users.map((u) => [u.user, u.connections]), [['ann', 1], ['cy', 1]], 'cy is in the room again, once');
  // The walker gave the join its meta; LiveSocket rejoins with the meta of its own join() only (none here).
  t.same(who.users[1]?.meta, { name: 'Cy' }, 'cy keeps the name it joined with');
});
