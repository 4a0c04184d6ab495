// WebSocket rooms against real servers on both transports (two worker threads): joins from walker code and from
// clients, messages to a room, a user and a connection received exactly once and in order, refusals, presence and its
// notifications, and a client that reconnects and resumes (or is told to resync).
import t from 'tap';
import { LiveSocket, WalkerSocket } from 'svc/client';
import { typedFrames } from '../../helpers/ws.ts';
import { startServer, tokenFor, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/rooms-app.ts', import.meta.url).pathname;

type Frame = Record<string, unknown>;

/** A client of the Room walker that keeps every frame the server sent on its own. */
async function client(server: Server, user: string): Promise<ReturnType<typeof typedFrames>> {
  const ws = await WalkerSocket.connect(server.url, 'Room', { token: await tokenFor(user, { server }) });
  return typedFrames(ws);
}

const messages = (frames: Frame[]) => frames.filter((f) => f.type === 'message').map((f) => f.data);

for (const transport of ['uws', 'node'] as const) {
  t.test(`rooms on ${transport}`, async (t) => {
    const scrape = 'rooms-scrape-token-0123456789abcdef0123456789';
    const server = await startServer({ entry, workers: 2, env: { SVC_TRANSPORT: transport, SVC_METRICS_ENABLED: 'true', SVC_METRICS_SCRAPE_TOKEN: scrape } });
    t.teardown(() => server.stop());

    const ann1 = await client(server, 'ann');
    const ann2 = await client(server, 'ann');
    const bob = await client(server, 'bob');
    const cy = await client(server, 'cy');

    await t.test('walker joins; a room message reaches each member once, the others never', async (t) => {
      t.same((await ann1.ws.send({ op: 'join', room: 'chat:one', name: 'Ann' })).reports, [{ joined: 'chat:one' }]);
      const joined = ann1.frames.find((f) => f.type === 'joined');
      t.equal(joined?.room, 'chat:one', 'a joined frame came before the reply');
      t.type(joined?.ticket, 'string');
      await bob.ws.send({ op: 'join', room: 'chat:one', name: 'Bob' });
      const said = await ann1.ws.send({ op: 'say', room: 'chat:one', text: 'hello' });
      t.same(said.reports, [{ said: 'hello' }]);
      const [a] = await ann1.until((f) => f.type === 'message');
      const [b] = await bob.until((f) => f.type === 'message');
      t.same(a?.data, { from: 'ann', text: 'hello' });
      t.same(b, a, 'both got the same frame');
      t.match(a?.id, /^[0-9a-f]+-1$/, 'numbered in the room history');
      // A marker to the user of every client: by the time it arrives, anything sent before it has.
      for (const u of ['ann', 'bob', 'cy']) await fetch(`${server.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: u, text: 'marker-1' }) });
      for (const c of [ann1, ann2, bob, cy]) await c.until((f) => f.type === 'message' && (f.data as Frame).text === 'marker-1');
      t.same(messages(ann1.frames), [{ from: 'ann', text: 'hello' }, { text: 'marker-1' }], 'ann1: the room message once, then the marker');
      t.same(messages(bob.frames), [{ from: 'ann', text: 'hello' }, { text: 'marker-1' }], 'bob: the same');
      t.same(messages(ann2.frames), [{ text: 'marker-1' }], 'ann2 (not in the room) got only the message to its user');
      t.same(messages(cy.frames), [{ text: 'marker-1' }], 'cy got only its marker');
    });

    await t.test('a user, a connection; HTTP walkers and functions send too', async (t) => {
      const me = (await ann2.ws.send({ op: 'whoami' })).reports[0] as { connection: string };
      t.type(me.connection, 'string');
      await bob.ws.send({ op: 'dm', to: 'ann', text: 'psst' });
      await ann1.until((f) => (f.data as Frame | undefined)?.text === 'psst');
      await ann2.until((f) => (f.data as Frame | undefined)?.text === 'psst');
      const r = await fetch(`${server.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connection: me.connection, text: 'just you' }) });
      t.equal(r.status, 200);
      await ann2.until((f) => (f.data as Frame | undefined)?.text === 'just you');
      const w = await fetch(`${server.url}/walker/Shout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ room: 'chat:one', text: 'loud' }) });
      t.equal(w.status, 200);
      await bob.until((f) => (f.data as Frame | undefined)?.shout === 'loud');
      for (const u of ['ann', 'bob']) await fetch(`${server.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: u, text: 'marker-2' }) });
      for (const c of [ann1, ann2, bob]) await c.until((f) => (f.data as Frame | undefined)?.text === 'marker-2');
      t.same(messages(ann1.frames).slice(2), [{ from: 'bob', text: 'psst' }, { shout: 'loud' }, { text: 'marker-2' }], 'ann1: the dm, the shout');
      t.same(messages(ann2.frames).slice(1), [{ from: 'bob', text: 'psst' }, { text: 'just you' }, { text: 'marker-2' }], 'ann2: the dm and its own message');
      t.same(messages(bob.frames).slice(2), [{ shout: 'loud' }, { text: 'marker-2' }], 'bob: the shout only');
    });

    await t.test('one sender, many messages: in order, once each', async (t) => {
      const n = 40;
      await Promise.all(Array.from({ length: n }, (_, i) => fetch(`${server.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'cy', text: `seq-${i}` }) })));
      // Sent concurrently over HTTP, so their order is the server's: a WebSocket sender's order is checked instead.
      await cy.until((f) => String((f.data as Frame | undefined)?.text).startsWith('seq-'), n);
      const before = bob.frames.length;
      for (let i = 0; i < n; i++) void ann1.ws.send({ op: 'say', room: 'chat:one', text: `n${i}` });
      const got = await bob.until((f) => bob.frames.indexOf(f) >= before && f.type === 'message', n);
      t.same(
        got.map((f) => (f.data as Frame).text),
        Array.from({ length: n }, (_, i) => `n${i}`),
        'bob got every message of one sender once, in order',
      );
    });

    await t.test('refusals: a room no declaration matches, a private room of someone else, the limit, a failed run', async (t) => {
      await t.rejects(cy.ws.send({ op: 'join', room: 'nowhere' }), { code: 'ROOM_INVALID' });
      await t.rejects(cy.ws.send({ op: 'join', room: 'private:ann' }), { code: 'ROOM_FORBIDDEN' });
      t.same((await cy.ws.send({ op: 'join', room: 'private:cy' })).reports, [{ joined: 'private:cy' }]);
      // From the client: authorize decides.
      t.match(await cy.ws.request({ type: 'join', room: 'private:ann' }), { ok: false, error: { code: 'ROOM_FORBIDDEN' } });
      // A room joined through walkers only: the client needs a ticket.
      t.match(await cy.ws.request({ type: 'join', room: 'chat:one' }), { ok: false, error: { code: 'ROOM_FORBIDDEN' } });
      t.match(await cy.ws.request({ type: 'join', room: 'chat:one', ticket: 'forged' }), { ok: false, error: { code: 'ROOM_FORBIDDEN' } });
      await cy.ws.send({ op: 'join', room: 'chat:a' });
      await cy.ws.send({ op: 'join', room: 'chat:b' });
      await cy.ws.send({ op: 'join', room: 'chat:c' });
      await t.rejects(cy.ws.send({ op: 'join', room: 'chat:d' }), { code: 'ROOM_LIMIT' }, 'maxPerConnection: 3');
      await cy.ws.send({ op: 'leave', room: 'chat:a' });
      await cy.until((f) => f.type === 'left' && f.room === 'chat:a');
      await t.rejects(cy.ws.send({ op: 'fail', room: 'chat:e', text: 'never' }), { code: 'EXECUTION_ERROR' });
      t.same(
        (await cy.ws.send({ op: 'presence', room: 'chat:e' })).reports,
        [{ room: 'chat:e', users: [], guests: 0, connections: 0 }],
        'the failed run joined nothing',
      );
    });

    await t.test('presence: users and connections, notifications, a client gone without a close', async (t) => {
      const p = (await ann1.ws.send({ op: 'presence', room: 'chat:one' })).reports[0];
      t.same(p, { room: 'chat:one', users: [{ user: 'ann', connections: 1, meta: { name: 'Ann' } }, { user: 'bob', connections: 1, meta: { name: 'Bob' } }], guests: 0, connections: 2 });
      t.same(await ann1.ws.request({ type: 'presence', room: 'chat:one' }).then((f) => f.type), 'presence', 'a member may ask with a frame');
      t.match(await cy.ws.request({ type: 'presence', room: 'chat:one' }), { ok: false, error: { code: 'ROOM_NOT_JOINED' } });
      const dan = await client(server, 'dan');
      await dan.ws.send({ op: 'join', room: 'chat:one', name: 'Dan' });
      const [joinedEv] = await ann1.until((f) => f.type === 'presence' && f.event === 'join' && f.user === 'dan');
      t.match(joinedEv, { room: 'chat:one', meta: { name: 'Dan' } });
      dan.ws.ws.terminate();
      const [leftEv] = await ann1.until((f) => f.type === 'presence' && f.event === 'leave' && f.user === 'dan');
      t.match(leftEv, { room: 'chat:one', connection: joinedEv?.connection });
      const after = (await ann1.ws.send({ op: 'presence', room: 'chat:one' })).reports[0] as { users: { user: string }[] };
      t.same(after.users.map((u) => u.user), ['ann', 'bob']);
      await bob.ws.send({ op: 'leave', room: 'chat:one' });
      await bob.until((f) => f.type === 'left' && f.room === 'chat:one');
      await ann1.until((f) => f.type === 'presence' && f.event === 'leave' && f.user === 'bob');
    });

    await t.test('resume: a reconnecting client gets exactly what it missed; too far behind, it is told to resync', async (t) => {
      const token = await tokenFor('eve', { server });
      // The client asks for a token before each reconnection: held here until the test has sent what it is to miss.
      let away: Promise<void> = Promise.resolve();
      let back = () => undefined as void;
      const stayAway = () => (away = new Promise<void>((resolve) => (back = resolve)));
      const live = await LiveSocket.connect(server.url, 'Room', { token: async () => (await away, token), backoff: { minMs: 20, maxMs: 100 } });
      t.teardown(() => live.close());
      const got: unknown[] = [];
      live.onMessage((m) => got.push(m.data));
      await live.send({ op: 'join', room: 'chat:resume' });
      await live.send({ op: 'say', room: 'chat:resume', text: 'm0' });
      const announce = (text: string) => fetch(`${server.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ room: 'chat:resume', text }) });
      for (;;) if (got.length >= 1) break; else await new Promise((r) => setImmediate(r));
      const reopened = new Promise<void>((resolve) => live.onState((s) => s === 'open' && resolve()));
      stayAway();
      live.drop();
      for (const m of ['m1', 'm2', 'm3']) await announce(m);
      back();
      await reopened;
      while (got.length < 4) await new Promise((r) => setTimeout(r, 5));
      await announce('m4');
      while (got.length < 5) await new Promise((r) => setTimeout(r, 5));
      t.same(got, [{ from: 'eve', text: 'm0' }, { text: 'm1' }, { text: 'm2' }, { text: 'm3' }, { text: 'm4' }], 'every message once, in order, across the reconnect');
      t.equal(live.connections, 2);
      // History keeps 5: seven missed messages do not fit.
      const resynced = new Promise<string>((resolve) => live.onResync(resolve));
      const reopened2 = new Promise<void>((resolve) => live.onState((s) => s === 'open' && resolve()));
      stayAway();
      live.drop();
      for (let i = 0; i < 7; i++) await announce(`x${i}`);
      back();
      t.equal(await resynced, 'chat:resume', 'told to resync');
      await reopened2;
      await announce('after');
      while (!got.some((d) => (d as Frame).text === 'after')) await new Promise((r) => setTimeout(r, 5));
      t.notOk(got.some((d) => String((d as Frame).text).startsWith('x')), 'none of the missed messages came piecemeal');
    });

    await t.test('metrics: rooms, members, messages sent and fanned out, joins and leaves', async (t) => {
      const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${scrape}` } })).text();
      const sum = (name: string) =>
        text
          .split('\n')
          .filter((l) => l.startsWith(name))
          .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
      t.ok(sum('svc_websocket_rooms') >= 1, 'rooms with connections');
      t.ok(sum('svc_websocket_room_members') >= 4, 'connections in rooms');
      t.ok(sum('svc_websocket_room_messages_total{outcome="sent"') >= 40, 'messages sent');
      t.ok(sum('svc_websocket_room_messages_total{outcome="delivered"') >= 40, 'messages fanned out');
      t.ok(sum('svc_websocket_room_changes_total{op="join"') >= 8, 'joins');
      t.ok(sum('svc_websocket_room_changes_total{op="leave"') >= 2, 'leaves');
    });

    for (const c of [ann1, ann2, bob, cy]) await c.ws.close();
  });
}
