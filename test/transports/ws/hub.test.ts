// The WebSocket hub through its door, with sockets faked in a few lines: which walkers it serves, how it decides an
// upgrade, what a frame becomes (the walker's declared fields, its reply or an error frame), the bounds (frame size,
// bytes waiting), broadcast here and to the other threads, and a drain. No walker runs: `run` echoes what it is given.
import t from 'tap';
import { ActorSystem, type Broadcast } from 'svc/kernel';
import { APIProtocol, entry, Registry, restspec, Root, T, Walker } from 'svc';
import { DEFAULT_WS_LIMITS, WS_RELAY_TOPIC, WsHub, wsRoutes, type SocketHandle, type WsHubOptions } from '../../../transports/ws/index.ts';
import { deferred, Latch } from '../../kit/index.ts';

class Echo extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  static has = T.Object({ msg: T.String() });
  @entry(Root) go() {}
}
class Chat extends Walker {
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET, broadcast: true });
  static has = T.Object({ text: T.String(), id: T.Optional(T.String()) });
  @entry(Root) go() {}
}
class Plain extends Walker {
  static access = 'pub' as const;
  @entry(Root) go() {}
}
class _Internal extends Walker {
  static spec = restspec({ protocol: APIProtocol.WEBSOCKET });
  @entry(Root) go() {}
}
const registry = Registry.fromModule({ Echo, Chat, Plain, _Internal });

/** A socket as the socket layer hands it over: it keeps what it is told. */
function socket() {
  const s = {
    sent: [] as string[],
    ended: [] as { code: number; reason: string }[],
    topics: [] as string[],
    fromHere: [] as { topic: string; text: string }[],
    replies: new Latch(),
    gone: new Latch(),
    frames: () => s.sent.map((x) => JSON.parse(x) as Record<string, unknown>),
  };
  const handle: SocketHandle = {
    send: (text) => (s.sent.push(text), s.replies.hit()),
    end: (code, reason) => (s.ended.push({ code, reason }), s.gone.hit()),
    ping: () => undefined,
    subscribe: (topic) => void s.topics.push(topic),
    unsubscribe: (topic) => void s.topics.splice(s.topics.indexOf(topic), 1),
    publishFromHere: (topic, text) => void s.fromHere.push({ topic, text }),
  };
  return Object.assign(s, { handle });
}

function hub(t: { teardown(fn: () => unknown): void }, options: Partial<WsHubOptions> = {}) {
  const system = new ActorSystem({ nodeId: 'p/w1' });
  const runs: { walker: string; fields: Record<string, unknown>; user?: string; token?: string }[] = [];
  const events: { event: string; walker: string; code?: number; user?: string }[] = [];
  const h = new WsHub({
    system,
    routes: wsRoutes(registry),
    auth: {
      verify(token) {
        if (!token.startsWith('tok-')) throw Object.assign(new Error('bad token'), { code: 'UNAUTHORIZED' });
        const userId = token.slice(4);
        return { caller: { userId, rootId: `root-${userId}` }, userId, mustChangePassword: false };
      },
    },
    guest: { rootId: 'guest' },
    run: async (walker, fields, caller, token) => {
      runs.push({ walker, fields, ...(caller.userId ? { user: caller.userId } : {}), ...(token ? { token } : {}) });
      return { json: JSON.stringify([fields]) };
    },
    errorOf: (error) => ({ code: (error as { code?: string }).code ?? 'INTERNAL_ERROR', message: (error as Error).message, status: (error as { status?: number }).status }),
    onEvent: (e) => void events.push({ event: e.event, walker: e.walker, ...(e.code === undefined ? {} : { code: e.code }), ...(e.user === undefined ? {} : { user: e.user }) }),
    ...options,
  });
  t.teardown(async () => {
    h.stop();
    await system.shutdown();
  });
  /** Accept an upgrade to `path` and open a socket on it. */
  const connect = (path: string, query = '', authorization?: string) => {
    const verdict = h.upgrade(path, query, authorization);
    if (!verdict.ok) throw new Error(`refused: ${verdict.code}`);
    const s = socket();
    return { s, conn: h.open(verdict.route, verdict.token, s.handle) };
  };
  return { hub: h, system, runs, events, connect };
}

const send = (h: WsHub, conn: ReturnType<WsHub['open']>, value: unknown) => {
  const text = JSON.stringify(value);
  h.frame(conn, Buffer.from(text), Buffer.byteLength(text));
};

t.test('the walkers served: those declared for WebSocket, not the internal ones, each on its own topic', async (t) => {
  const routes = wsRoutes(registry);
  t.same(routes.map((r) => [r.name, r.access, r.broadcast, r.topic, [...r.fields]]).sort(), [
    ['Chat', 'priv', true, 'ws/Chat', ['text', 'id']],
    ['Echo', 'pub', false, 'ws/Echo', ['msg']],
  ]);
});

t.test('an upgrade: the walker by its (decoded) name, the token from the header or the query, never two different ones', async (t) => {
  const { hub: h } = hub(t);
  t.match(h.upgrade('/ws/Nope', ''), { ok: false, status: 404, code: 'NOT_FOUND', message: 'no WebSocket walker at /ws/Nope' });
  t.match(h.upgrade('/ws/Plain', ''), { ok: false, status: 404 }, 'an HTTP walker is not served here');
  t.match(h.upgrade('/ws/_Internal', ''), { ok: false, status: 404 });
  t.match(h.upgrade('/ws/%E0%A4%A', ''), { ok: false, status: 404 }, 'bad percent-encoding names no walker');
  t.match(h.upgrade('/ws/Ech%6F', ''), { ok: true, route: { name: 'Echo' }, token: undefined });
  t.match(h.upgrade('/ws/Chat', 'token=tok-ann&x=1'), { ok: true, token: 'tok-ann' });
  t.match(h.upgrade('/ws/Chat', '', 'Bearer tok-bob'), { ok: true, token: 'tok-bob' });
  t.match(h.upgrade('/ws/Chat', 'token=tok-bob', 'Bearer tok-bob'), { ok: true, token: 'tok-bob' }, 'the same token twice is one token');
  t.match(h.upgrade('/ws/Chat', 'token=tok-ann', 'Bearer tok-bob'), { ok: false, status: 400, code: 'BAD_REQUEST' });
  t.equal(h.checksHooks, false, 'no hooks, a synchronous auth: accepted at once');
  t.same(h.hookHeaders, ['authorization']);
  t.same(h.limits, DEFAULT_WS_LIMITS);
});

t.test('a frame runs the walker with its declared fields; the id comes back on the reply; undeclared fields are refused', async (t) => {
  const { hub: h, runs, connect } = hub(t);
  const { s, conn } = connect('/ws/Echo');
  send(h, conn, { msg: 'hi', id: 7 });
  await s.replies.wait(1);
  t.same(runs, [{ walker: 'Echo', fields: { msg: 'hi' } }], 'Echo declares no id: it is the frame’s correlation id only');
  t.same(s.frames(), [{ ok: true, data: { result: null, reports: [{ msg: 'hi' }] }, id: 7 }]);
  send(h, conn, { msg: 'hi', sneaky: true, id: 'q' });
  await s.replies.wait(2);
  t.match(s.frames()[1], { ok: false, error: { code: 'SVC_ERR_INVALID_FIELDS', message: /sneaky/ }, id: 'q' });
  t.equal(runs.length, 1, 'the refused frame ran nothing');
  t.equal(conn.inbound, 0, 'every byte received was taken');
});

t.test('a private walker: its user from the token, its broadcast subscribed, its id a field when it declares one', async (t) => {
  const { hub: h, runs, connect, events } = hub(t);
  const { s, conn } = connect('/ws/Chat', 'token=tok-ann');
  t.same(s.topics, ['ws/Chat', '#u:ann'], 'the walker\'s broadcasts, and the messages to its user');
  send(h, conn, { text: 'yo', id: 'm1' });
  await s.replies.wait(1);
  t.same(runs, [{ walker: 'Chat', fields: { text: 'yo', id: 'm1' }, user: 'ann', token: 'tok-ann' }]);
  t.same(s.fromHere, [{ topic: 'ws/Chat', text: '{"ok":true,"data":{"result":null,"reports":[{"text":"yo","id":"m1"}]}}' }], 'the others here hear it');
  t.equal(h.broadcasts, 1);
  h.closed(conn, 1000);
  t.same(events, [
    { event: 'open', walker: 'Chat' },
    { event: 'close', walker: 'Chat', code: 1000, user: 'ann' },
  ]);
  t.equal(h.conns.size, 0);
});

t.test('a bad query token closes at once (4401) and spawns no session', async (t) => {
  const { hub: h, connect } = hub(t);
  const { s, conn } = connect('/ws/Chat', 'token=nope');
  t.same(s.ended, [{ code: 4401, reason: 'bad token' }]);
  t.ok(conn.closed);
  t.equal(conn.ref, undefined);
  t.equal(h.sessionActors, 0);
});

t.test('bounds: a frame over the size closes with 4413; bytes waiting past the limit are refused with an error frame', async (t) => {
  const gate = deferred();
  const started = new Latch();
  const { hub: h, connect } = hub(t, {
    limits: { maxFrameBytes: 100, maxBufferedBytes: 60 },
    run: async (_walker, fields) => {
      started.hit();
      await gate.promise;
      return { json: JSON.stringify([fields]) };
    },
  });
  const big = connect('/ws/Echo');
  send(h, big.conn, { msg: 'x'.repeat(200) });
  t.same(big.s.ended, [{ code: 4413, reason: 'frames are limited to 100 bytes' }]);
  t.ok(big.conn.closed);

  const { s, conn } = connect('/ws/Echo');
  send(h, conn, { msg: 'a'.repeat(20), id: 1 }); // 36 bytes: taken by the session, its run held
  await started.wait(1);
  send(h, conn, { msg: 'b'.repeat(20), id: 2 }); // 36 more waiting: 36 ≤ 60
  send(h, conn, { msg: 'c'.repeat(20), id: 3 }); // 72 > 60: refused
  t.same(s.frames(), [{ ok: false, error: { code: 'SVC_ERR_MAILBOX_FULL', message: 'too many frames waiting on this connection: wait for replies before sending more' }, id: 3 }]);
  gate.resolve();
  await s.replies.wait(3);
  t.same(s.frames().slice(1).map((f) => f.id), [1, 2], 'the frames taken are answered, in order');
});

t.test('a close reason is cut to what a close frame holds, on a character boundary', async (t) => {
  const { hub: h, connect } = hub(t);
  const { s, conn } = connect('/ws/Echo');
  h.close(conn, 4000, 'é'.repeat(100));
  const [ended] = s.ended;
  t.ok(Buffer.byteLength(ended?.reason ?? '') <= 120, `${Buffer.byteLength(ended?.reason ?? '')} bytes`);
  t.match(ended, { code: 4000, reason: /^é+\.\.\.$/ });
  h.close(conn, 4001, 'again');
  t.equal(s.ended.length, 1, 'closed once');
});

t.test('broadcast from the server: to the subscribers here and, over the bus, on the other threads', async (t) => {
  const bus = { published: [] as { topic: string; msg: unknown }[], subscribers: new Map<string, (msg: unknown, from: string) => unknown>() };
  const fakeBus: Broadcast = {
    publish: (topic, msg) => void bus.published.push({ topic, msg }),
    subscribe: (topic, fn) => (bus.subscribers.set(topic, fn), () => bus.subscribers.delete(topic)),
    gather: async () => [],
  };
  const { hub: h } = hub(t, { bus: fakeBus });
  const local: { topic: string; text: string }[] = [];
  h.attach((topic, text) => void local.push({ topic, text }));
  await t.rejects(h.broadcast('Echo', {}, { rootId: 'r' }), TypeError, 'Echo is not a broadcast walker');
  const data = await h.broadcast('Chat', { text: 'news' }, { rootId: 'r' });
  t.equal(data, '{"result":null,"reports":[{"text":"news"}]}');
  const text = `{"ok":true,"data":${data}}`;
  t.same(local, [{ topic: 'ws/Chat', text }]);
  t.same(bus.published, [{ topic: WS_RELAY_TOPIC, msg: { topic: 'ws/Chat', text } }]);
  const relay = bus.subscribers.get(WS_RELAY_TOPIC);
  relay?.({ topic: 'ws/Chat', text: 'from w2' }, 'p/w2');
  relay?.({ topic: 'ws/Chat', text: 'from me' }, 'p/w1');
  t.same(local.slice(1), [{ topic: 'ws/Chat', text: 'from w2' }], "another thread's broadcast reaches this one's subscribers; this thread's own is not sent twice");
});

t.test('a private connection with no token in time is closed with 4408 by the sweep', async (t) => {
  const { hub: h, connect } = hub(t, { limits: { authTimeoutMs: 1 } });
  const { s } = connect('/ws/Chat');
  h.attach(() => undefined);
  // The sweep's timer does not hold the process open (unref): this one does, until the close comes.
  const alive = setInterval(() => undefined, 1_000);
  await s.gone.wait(1);
  clearInterval(alive);
  t.same(s.ended, [{ code: 4408, reason: 'no token in time' }]);
});

t.test('a drain: no new upgrades or frames; the frames taken are answered, then every connection is closed with 4503', async (t) => {
  const gate = deferred();
  const started = new Latch();
  const { hub: h, connect } = hub(t, {
    run: async (_w, fields) => {
      started.hit();
      await gate.promise;
      return { json: JSON.stringify([fields]) };
    },
  });
  const { s, conn } = connect('/ws/Echo');
  send(h, conn, { msg: 'in hand', id: 1 });
  await started.wait(1);
  const draining = h.drain(5_000);
  t.match(h.upgrade('/ws/Echo', ''), { ok: false, status: 503, code: 'SERVICE_UNAVAILABLE' });
  send(h, conn, { msg: 'late', id: 2 });
  t.same(s.frames(), [{ ok: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'the server is shutting down' }, id: 2 }]);
  gate.resolve();
  await draining;
  t.same(s.frames()[1], { ok: true, data: { result: null, reports: [{ msg: 'in hand' }] }, id: 1 }, 'the frame in hand was answered before the close');
  t.same(s.ended, [{ code: 4503, reason: 'the server is shutting down' }]);
  t.equal(h.conns.size, 0);
});
