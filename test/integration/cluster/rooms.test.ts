// WebSocket rooms across three `svc start` processes on one real Redis: a message to a room, a user or a connection
// reaches its connections on every member once; presence counts every member's connections; after kill -9 of a
// member, its connections leave (presence and notifications) within the cluster's failure bound.
import t from 'tap';
import { WalkerSocket } from 'svc/client';
import { typedFrames } from '../../helpers/ws.ts';
import { fixture, skipRedis, startCluster, startRedis, tokenFor, type Server } from '../../kit/index.ts';

t.setTimeout(360_000);

type Frame = Record<string, unknown>;

async function client(server: Server, user: string, tokenServer: Server) {
  const ws = await WalkerSocket.connect(server.url, 'Room', { token: await tokenFor(user, { server: tokenServer }) });
  return typedFrames(ws);
}

const text = (f: Frame) => (f.data as Frame | undefined)?.text;

t.test('rooms across a cluster of three', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 3, { redis, entry: fixture('rooms-app.ts') });
  const [a, b, c] = cluster.members as [Server, Server, Server];
  const ann = await client(a, 'ann', a);
  const bob = await client(b, 'bob', a);
  const cy = await client(c, 'cy', a);
  const bob2 = await client(c, 'bob', a);
  for (const x of [ann, bob, cy]) await x.ws.send({ op: 'join', room: 'chat:all', name: 'n' });

  await t.test('a room, a user, a connection: once each, wherever they are', async (t) => {
    for (let i = 0; i < 20; i++) void ann.ws.send({ op: 'say', room: 'chat:all', text: `r${i}` });
    for (const x of [ann, bob, cy]) {
      const got = await x.until((f) => f.type === 'message' && String(text(f)).startsWith('r'), 20);
      t.same(got.map(text), Array.from({ length: 20 }, (_, i) => `r${i}`), 'in order, once each');
    }
    await cy.ws.send({ op: 'dm', to: 'bob', text: 'to bob' });
    await bob.until((f) => text(f) === 'to bob');
    await bob2.until((f) => text(f) === 'to bob');
    const me = (await cy.ws.send({ op: 'whoami' })).reports[0] as { connection: string };
    const r = await fetch(`${a.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ connection: me.connection, text: 'to cy' }) });
    t.equal(r.status, 200);
    await cy.until((f) => text(f) === 'to cy');
    // A marker to each user: everything sent before has arrived.
    for (const u of ['ann', 'bob', 'cy']) await fetch(`${b.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: u, text: 'marker' }) });
    for (const x of [ann, bob, bob2, cy]) await x.until((f) => text(f) === 'marker');
    const count = (x: typeof ann, s: string) => x.frames.filter((f) => text(f) === s).length;
    t.same([count(bob, 'to bob'), count(bob2, 'to bob'), count(ann, 'to bob'), count(cy, 'to bob')], [1, 1, 0, 0], 'the user message reached both of bob’s connections only');
    t.same([count(cy, 'to cy'), count(ann, 'to cy'), count(bob, 'to cy'), count(bob2, 'to cy')], [1, 0, 0, 0], 'the connection message reached that connection only');
    t.equal(bob2.frames.filter((f) => f.type === 'message' && String(text(f)).startsWith('r')).length, 0, 'bob’s second connection is in no room');
  });

  await t.test('presence counts every member’s connections', async (t) => {
    const p = (await bob.ws.send({ op: 'presence', room: 'chat:all' })).reports[0] as { users: { user: string; connections: number }[]; connections: number };
    t.same(p.users.map((u) => [u.user, u.connections]), [['ann', 1], ['bob', 1], ['cy', 1]]);
    t.equal(p.connections, 3);
  });

  await t.test('kill -9 of a member: its connections leave, told to the others, within the failure bound', async (t) => {
    const killedAt = Date.now();
    c.proc.kill('SIGKILL');
    const [ev] = await ann.until((f) => f.type === 'presence' && f.event === 'leave' && f.user === 'cy');
    const told = Date.now() - killedAt;
    t.match(ev, { room: 'chat:all' });
    t.comment(`ann heard that cy left ${told} ms after the kill`);
    t.ok(told < 15_000, `within the failure bound (${told} ms)`);
    await bob.until((f) => f.type === 'presence' && f.event === 'leave' && f.user === 'cy');
    const p = (await ann.ws.send({ op: 'presence', room: 'chat:all' })).reports[0] as { users: { user: string }[] };
    t.same(
      p.users.map((u) => u.user),
      ['ann', 'bob'],
      'presence no longer counts the dead member’s connections',
    );
  });

  for (const x of [ann, bob]) await x.ws.close();
});
