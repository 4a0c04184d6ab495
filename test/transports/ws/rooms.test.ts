// A thread's rooms through the ws room's door, with one actor system and no bus (this thread alone): joins from runs
// and clients, tickets, limits, history numbering, resume and resync, leaves and cleanup.
import t from 'tap';
import { ActorSystem } from 'svc/kernel';
import { APIProtocol, entry, Registry, restspec, Root, rooms, T, Walker } from 'svc';
import { RoomHub, roomTopic, userTopic, WsHub, wsRoutes, type RoomConn } from '../../../transports/ws/index.ts';
import { toTarget } from '../../../actors/walker/index.ts';
import { Latch } from '../../kit/index.ts';

const chat = rooms({ pattern: 'chat:*', history: { size: 3, ttlSeconds: 60 }, maxPerConnection: 2 });
const open = rooms({ pattern: /^open:[a-z]+$/, authorize: (_room, caller) => caller.userId === 'ann' });
const specs = [chat, open];

function setup(t: { teardown(fn: () => unknown): void }) {
  const system = new ActorSystem({ nodeId: 'p/w1' });
  t.teardown(() => system.shutdown());
  const published: { topic: string; text: string }[] = [];
  const hub = new RoomHub({ system, specs: () => specs, ticketKey: Buffer.alloc(32, 7), maxRooms: 3 });
  hub.attach((topic, text) => void published.push({ topic, text }));
  t.teardown(() => hub.stop());
  const conn = (user?: string) => {
    const c = {
      id: hub.newId(),
      rooms: undefined,
      user: undefined as string | undefined,
      closed: false,
      sent: [] as Record<string, unknown>[],
      topics: new Set<string>(),
      socket: {
        send: (text: string) => void c.sent.push(JSON.parse(text) as Record<string, unknown>),
        subscribe: (topic: string) => void c.topics.add(topic),
        unsubscribe: (topic: string) => void c.topics.delete(topic),
      },
    };
    hub.opened(c as RoomConn);
    if (user) hub.identified(c as RoomConn, user);
    return c;
  };
  return { hub, conn, published };
}

t.test('a run’s joins, leaves and messages; history numbered; resume and resync; cleanup', async (t) => {
  const { hub, conn, published } = setup(t);
  const ann = conn('ann');
  t.ok(ann.topics.has(userTopic('ann')), 'a user’s connection gets its user’s messages');
  await hub.apply(ann as RoomConn, { rooms: [{ op: 'join', room: 'chat:a', meta: '{"n":1}' }], sends: [{ to: { k: 'r', n: 'chat:a' }, data: '"hi"' }] });
  t.ok(ann.topics.has(roomTopic('chat:a')));
  const joined = ann.sent.find((f) => f.type === 'joined');
  t.match(joined, { room: 'chat:a', last: /^[0-9a-f]{8}-0$/ }, 'an empty history: its epoch and 0');
  // The room actor numbers the message; the local publish follows its turn.
  for (let i = 0; i < 20 && published.length === 0; i++) await new Promise((r) => setImmediate(r));
  const first = JSON.parse(published[0]?.text ?? '{}') as { id: string; data: unknown };
  t.match(first, { type: 'message', room: 'chat:a', data: 'hi' });
  t.match(first.id, /^[0-9a-f]{8}-1$/);
  t.equal(published[0]?.topic, roomTopic('chat:a'));
  for (const d of ['"2"', '"3"', '"4"']) hub.send({ k: 'r', n: 'chat:a' }, d);
  for (let i = 0; i < 20 && published.length < 4; i++) await new Promise((r) => setImmediate(r));
  const epoch = first.id.split('-')[0];

  // A second connection of ann resumes from message 2: it gets 3 and 4.
  const again = conn('ann');
  const answers: Record<string, unknown>[] = [];
  await hub.clientJoin(again as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:a', ticket: joined?.ticket, meta: { n: 1 }, since: `${epoch}-2` }, (b) => void answers.push(b));
  t.same(again.sent.map((f) => f.data), ['3', '4'], 'what it missed, in order');
  t.match(answers, [{ type: 'joined', room: 'chat:a', last: `${epoch}-4` }]);
  // Messages sent while a resume is under way: after the history, once each, in order.
  const racing = conn('ann');
  const resumed = hub.clientJoin(racing as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:a', ticket: joined?.ticket, meta: { n: 1 }, since: `${epoch}-3` }, (b) => void racing.sent.push(b));
  hub.send({ k: 'r', n: 'chat:a' }, '"5"');
  hub.send({ k: 'r', n: 'chat:a' }, '"6"');
  await resumed;
  for (let i = 0; i < 20 && racing.sent.length < 4; i++) await new Promise((r) => setImmediate(r));
  t.same(
    racing.sent.map((f) => (f.type === 'joined' ? 'joined' : f.data)),
    ['4', 'joined', '5', '6'],
    'the missed one, the answer, then what came meanwhile: once each',
  );
  racing.closed = true;
  hub.closed(racing as RoomConn);
  // From message 0 it is too late: only 3 are kept.
  const late = conn('ann');
  await hub.clientJoin(late as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:a', ticket: joined?.ticket, meta: { n: 1 }, since: `${epoch}-0` }, () => undefined);
  t.same(late.sent[0], { type: 'resync', room: 'chat:a' });
  // Another epoch (the room actor was restarted elsewhere): resync.
  const other = conn('ann');
  await hub.clientJoin(other as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:a', ticket: joined?.ticket, meta: { n: 1 }, since: 'ffffffff-4' }, () => undefined);
  t.same(other.sent[0], { type: 'resync', room: 'chat:a' });

  t.same(hub.size, { rooms: 1, members: 4 });
  for (const c of [ann, again, late, other]) {
    c.closed = true;
    hub.closed(c as RoomConn);
  }
  t.same(hub.size, { rooms: 0, members: 0 }, 'the room is gone with its last connection');
  t.match(hub.counts, { joins: 5, leaves: 5 });
});

t.test('client joins: authorize, tickets, limits', async (t) => {
  const { hub, conn } = setup(t);
  const bob = conn('bob');
  const ann = conn('ann');
  const noop = () => undefined;
  await t.rejects(hub.clientJoin(bob as RoomConn, { userId: 'bob', rootId: 'r' }, { room: 'nowhere' }, noop), { code: 'ROOM_INVALID' });
  await t.rejects(hub.clientJoin(bob as RoomConn, { userId: 'bob', rootId: 'r' }, { room: 'open:x' }, noop), { code: 'ROOM_FORBIDDEN' }, 'authorize says no');
  await hub.clientJoin(ann as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'open:x' }, noop);
  t.ok(ann.rooms && (ann.rooms as Map<string, unknown>).has('open:x'), 'authorize says yes');
  await t.rejects(hub.clientJoin(bob as RoomConn, { userId: 'bob', rootId: 'r' }, { room: 'chat:b' }, noop), { code: 'ROOM_FORBIDDEN' }, 'no authorize and no ticket');
  // ann's ticket for chat:b is not bob's.
  await hub.apply(ann as RoomConn, { rooms: [{ op: 'join', room: 'chat:b' }], sends: [] });
  const annTicket = ann.sent.find((f) => f.type === 'joined' && f.room === 'chat:b')?.ticket;
  await t.rejects(hub.clientJoin(bob as RoomConn, { userId: 'bob', rootId: 'r' }, { room: 'chat:b', ticket: annTicket }, noop), { code: 'ROOM_FORBIDDEN' }, 'a ticket is its user’s');
  const ann2 = conn('ann');
  await hub.clientJoin(ann2 as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:b', ticket: annTicket }, noop);
  t.ok(ann2.topics.has(roomTopic('chat:b')), 'the user’s ticket lets another of its connections rejoin');
  await hub.clientJoin(ann2 as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'open:y' }, noop);
  await hub.apply(ann2 as RoomConn, { rooms: [{ op: 'join', room: 'chat:c' }], sends: [] });
  await t.rejects(hub.clientJoin(ann2 as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'open:z' }, noop), { code: 'ROOM_LIMIT' }, 'max rooms per connection (3)');
  // A ticket carries its expiry, signed: a later expiry is a forgery, and an expired one is refused.
  const [exp, sig] = String(annTicket).split('.');
  const later = `${(parseInt(String(exp), 36) + 3600).toString(36)}.${sig}`;
  await t.rejects(hub.clientJoin(conn('ann') as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:b', ticket: later }, noop), { code: 'ROOM_FORBIDDEN' }, 'its expiry is signed');
  const now = Date.now;
  Date.now = () => now() + 25 * 3600_000;
  try {
    await t.rejects(hub.clientJoin(conn('ann') as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:b', ticket: annTicket }, noop), { code: 'ROOM_FORBIDDEN' }, 'a day later it has expired');
  } finally {
    Date.now = now;
  }
  const ann3 = conn('ann');
  await hub.apply(ann3 as RoomConn, { rooms: [{ op: 'join', room: 'chat:b' }, { op: 'join', room: 'chat:c' }], sends: [] });
  await t.rejects(hub.clientJoin(ann3 as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:d', ticket: 'x' }, noop), { code: 'ROOM_FORBIDDEN' });
  t.throws(() => hub.clientLeave(bob as RoomConn, { room: 'chat:b' }, noop), { code: 'ROOM_NOT_JOINED' });
  const left: unknown[] = [];
  hub.clientLeave(ann3 as RoomConn, { room: 'chat:b' }, (b) => void left.push(b));
  t.same(left, [{ type: 'left', room: 'chat:b' }]);
  t.notOk(ann3.topics.has(roomTopic('chat:b')));
});

class Typed extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  static has = T.Object({ type: T.String(), room: T.String() });
  @entry(Root) go() {}
}
class Untyped extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  static has = T.Object({ room: T.String() });
  @entry(Root) go() {}
}

t.test('a walker declaring a `type` field takes {"type": "join"} frames; the others’ connections send them to their rooms', async (t) => {
  const system = new ActorSystem({ nodeId: 'p/w1' });
  const runs: string[] = [];
  const h = new WsHub({
    system,
    routes: wsRoutes(Registry.fromModule({ Typed, Untyped })),
    auth: { verify: () => { throw new Error('no tokens'); } },
    guest: { rootId: 'guest' },
    run: async (walker) => {
      runs.push(walker);
      return { json: '[]' };
    },
    errorOf: (error) => ({ code: (error as { code?: string }).code ?? 'INTERNAL_ERROR', message: (error as Error).message }),
    rooms: { specs: () => [] },
  });
  t.teardown(async () => {
    h.stop();
    await system.shutdown();
  });
  const frames = (name: string) => {
    const verdict = h.upgrade(`/ws/${name}`, '');
    if (!verdict.ok) throw new Error(verdict.code);
    const sent: Record<string, unknown>[] = [];
    const got = new Latch();
    const conn = h.open(verdict.route, undefined, {
      send: (text) => (sent.push(JSON.parse(text) as Record<string, unknown>), got.hit()),
      end: () => undefined,
      ping: () => undefined,
      subscribe: () => undefined,
      unsubscribe: () => undefined,
      publishFromHere: () => undefined,
    });
    const text = JSON.stringify({ type: 'join', room: 'chat:x', id: 1 });
    h.frame(conn, Buffer.from(text), text.length);
    return got.wait(1).then(() => sent);
  };
  t.match(await frames('Typed'), [{ ok: true, id: 1 }], 'the walker ran');
  t.same(runs, ['Typed']);
  t.match(await frames('Untyped'), [{ ok: false, error: { code: 'ROOM_INVALID' }, id: 1 }], 'a room frame (no declaration matches)');
  t.same(runs, ['Typed'], 'the walker did not run');
});

t.test('a room with history that cannot take more: send answers false and counts it; sendTo() would throw ROOM_BUSY', async (t) => {
  const { hub } = setup(t);
  let refused = 0;
  // One turn of the loop: the room actor handles nothing meanwhile.
  for (let i = 0; i < 70_000; i++) if (!hub.send({ k: 'r', n: 'chat:busy' }, String(i))) refused++;
  t.equal(refused, 70_000 - 65_536, 'everything past its mailbox is refused');
  t.equal(hub.counts.dropped, refused, 'and counted');
  t.ok(hub.send({ k: 'r', n: 'open:x' }, '1'), 'a room without history is not held up');
});

t.test('what the review found: an empty room resumes, lone surrogates are not room names, the meta a walker chose cannot be rewritten, odd values are refused with their codes', async (t) => {
  const { hub, conn } = setup(t);
  const noop = () => undefined;
  const ann = conn('ann');
  await hub.apply(ann as RoomConn, { rooms: [{ op: 'join', room: 'chat:empty', meta: '{"name":"Ann"}' }], sends: [] });
  const joined = ann.sent.find((f) => f.type === 'joined') as { last: string; ticket: string; meta: unknown };
  t.same(joined.meta, { name: 'Ann' });
  hub.send({ k: 'r', n: 'chat:empty' }, '"missed"');
  // A client that saw nothing yet resumes from the empty history's id: it gets what came since.
  const back = conn('ann');
  await hub.clientJoin(back as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:empty', ticket: joined.ticket, meta: { name: 'Ann' }, since: joined.last }, noop);
  t.same(back.sent.map((f) => f.data ?? f.type), ['missed'], 'the message sent after an empty join');
  // The ticket is for the meta the walker chose.
  await t.rejects(hub.clientJoin(conn('ann') as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:empty', ticket: joined.ticket, meta: { name: 'Bob', role: 'moderator' } }, noop), { code: 'ROOM_FORBIDDEN' });
  await t.rejects(hub.clientJoin(conn('ann') as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:empty', ticket: joined.ticket }, noop), { code: 'ROOM_FORBIDDEN' }, 'nor without it');
  // Lone surrogates would be rewritten on their way between threads: not room names, not targets.
  await t.rejects(hub.clientJoin(conn('ann') as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:\ud800' }, noop), { code: 'ROOM_INVALID' });
  t.throws(() => toTarget({ user: 'x\udc00' }), { code: 'ROOM_BAD_MESSAGE' });
  t.ok(toTarget('chat:\ud83d\ude00'), 'a pair is text');
  // Whatever comes instead of a room name: its code, never an internal error.
  await t.rejects(hub.clientJoin(conn('ann') as RoomConn, { userId: 'ann', rootId: 'r' }, { room: { toString: 1 } }, noop), { code: 'ROOM_INVALID' });
  t.throws(() => hub.clientLeave(ann as RoomConn, { room: { toString: 1 } }, noop), { code: 'ROOM_NOT_JOINED' });
  // An id that is not one of this history's: resync.
  for (const since of [`${joined.last.split('-')[0]}-0x1`, `${joined.last.split('-')[0]}-+1`, `${joined.last.split('-')[0]}-1.0`, '-1', '']) {
    const c = conn('ann');
    await hub.clientJoin(c as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'chat:empty', ticket: joined.ticket, meta: { name: 'Ann' }, since }, noop);
    t.same(c.sent[0], { type: 'resync', room: 'chat:empty' }, `since ${JSON.stringify(since)}`);
  }
});

t.test('history is bounded in bytes too', async (t) => {
  const small = rooms({ pattern: 'small:*', history: { size: 100, ttlSeconds: 60, maxBytes: 350 } });
  const system = new ActorSystem({ nodeId: 'p/w1' });
  t.teardown(() => system.shutdown());
  const hub = new RoomHub({ system, specs: () => [small], ticketKey: Buffer.alloc(32, 1), maxRooms: 3 });
  hub.attach(() => undefined);
  t.teardown(() => hub.stop());
  for (let i = 0; i < 10; i++) hub.send({ k: 'r', n: 'small:a' }, JSON.stringify('x'.repeat(50) + i));
  const c = { id: hub.newId(), rooms: undefined, user: 'ann', closed: false, sent: [] as Record<string, unknown>[], socket: { send: (x: string) => void c.sent.push(JSON.parse(x) as Record<string, unknown>), subscribe: () => undefined, unsubscribe: () => undefined } };
  hub.opened(c as RoomConn);
  const epoch = await new Promise<string>((resolve) => {
    void Promise.resolve(hub.apply(c as RoomConn, { rooms: [{ op: 'join', room: 'small:a' }], sends: [] })).then(() => resolve(String(String((c.sent.find((f) => f.type === 'joined') as { last: string }).last).split('-')[0])));
  });
  const d = { ...c, id: hub.newId(), sent: [] as Record<string, unknown>[], rooms: undefined };
  d.socket = { send: (x: string) => void d.sent.push(JSON.parse(x) as Record<string, unknown>), subscribe: () => undefined, unsubscribe: () => undefined };
  hub.opened(d as RoomConn);
  await hub.apply(d as RoomConn, { rooms: [], sends: [] });
  await hub.clientJoin(d as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'small:a', ticket: (c.sent.find((f) => f.type === 'joined') as { ticket: string }).ticket, since: `${epoch}-7` }, () => undefined);
  t.same(d.sent.map((f) => f.data), ['x'.repeat(50) + 7, 'x'.repeat(50) + 8, 'x'.repeat(50) + 9], 'the last ones that fit (messages 8 to 10: their data ends in 7 to 9)');
  const e = { ...c, id: hub.newId(), sent: [] as Record<string, unknown>[], rooms: undefined };
  e.socket = { send: (x: string) => void e.sent.push(JSON.parse(x) as Record<string, unknown>), subscribe: () => undefined, unsubscribe: () => undefined };
  hub.opened(e as RoomConn);
  await hub.clientJoin(e as RoomConn, { userId: 'ann', rootId: 'r' }, { room: 'small:a', ticket: (c.sent.find((f) => f.type === 'joined') as { ticket: string }).ticket, since: `${epoch}-2` }, () => undefined);
  t.same(e.sent[0], { type: 'resync', room: 'small:a' }, 'older than what 350 bytes hold: resync');
});
