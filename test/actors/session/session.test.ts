// One WebSocket connection as an actor, through its door, with no socket: a sink that keeps what the session sends
// and closes, an auth that knows three tokens, a walker run that echoes its fields. Frames go in order; every answer,
// close code and reason is checked as the client would read it.
import t from 'tap';
import { ActorSystem } from 'svc/kernel';
import { Latch } from '../../kit/index.ts';
import { CLOSE, Session, sessionProps, SESSION_MAILBOX, type SessionCaller, type SessionEnv, type SessionSink } from '../../../actors/session/index.ts';

const USERS: Record<string, { userId: string; mustChangePassword?: boolean }> = {
  'tok-ann': { userId: 'ann' },
  'tok-ann-2': { userId: 'ann' },
  'tok-bob': { userId: 'bob' },
  'tok-new': { userId: 'neo', mustChangePassword: true },
};

class AuthError extends Error {
  code = 'UNAUTHORIZED';
}

interface Fake {
  session: Session;
  sent: string[];
  /** Parsed frames the session sent. */
  frames(): Record<string, unknown>[];
  closes: { code: number; reason: string }[];
  published: string[];
  subscribed: number;
  taken: number;
  runs: { fields: Record<string, unknown>; caller: SessionCaller; token?: string }[];
  /** Tokens no longer good (expired, revoked). */
  revoked: Set<string>;
  frame(value: unknown): Promise<void>;
}

function fake(options: { isPublic?: boolean; broadcast?: boolean; run?: SessionEnv['run']; prepare?: (token: string) => Promise<void> | undefined } = {}): Fake {
  const revoked = new Set<string>();
  const f: Omit<Fake, 'session' | 'frame' | 'frames'> = { sent: [], closes: [], published: [], subscribed: 0, taken: 0, runs: [], revoked };
  const sink: SessionSink = {
    send: (text) => void f.sent.push(text),
    close: (code, reason) => void f.closes.push({ code, reason }),
    subscribe: () => void f.subscribed++,
    publish: (text) => void f.published.push(text),
    taken: (bytes) => void (f.taken += bytes),
  };
  const env: SessionEnv = {
    walker: 'Chat',
    isPublic: options.isPublic ?? false,
    broadcast: options.broadcast ?? false,
    auth: {
      verify(token) {
        const user = USERS[token];
        if (!user || revoked.has(token)) throw new AuthError(`token ${token} is not good`);
        return { caller: { userId: user.userId, rootId: `root-${user.userId}`, role: 'user' }, userId: user.userId, mustChangePassword: user.mustChangePassword === true };
      },
      ...(options.prepare ? { prepare: options.prepare } : {}),
    },
    run:
      options.run ??
      (async (fields, caller, token) => {
        f.runs.push({ fields, caller, ...(token === undefined ? {} : { token }) });
        return { json: JSON.stringify([{ echo: fields, by: caller.userId ?? null }]) };
      }),
    errorOf: (error) => ({ code: (error as { code?: string }).code ?? 'INTERNAL_ERROR', message: (error as Error).message }),
    guest: { rootId: 'guest-root' },
  };
  const session = new Session(env, sink);
  return Object.assign(f, {
    session,
    frames: () => f.sent.map((s) => JSON.parse(s) as Record<string, unknown>),
    frame: (value: unknown) => {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return session.receive({ t: 'frame', text, bytes: Buffer.byteLength(text) });
    },
  });
}

t.test('a public walker: the guest runs it with no token; the reply carries the reports and the frame id', async (t) => {
  const s = fake({ isPublic: true, broadcast: true });
  s.session.start(undefined);
  t.equal(s.subscribed, 1, 'a broadcast walker subscribes the guest at once');
  t.notOk(s.session.awaitingToken);
  await s.frame({ text: 'hi', id: 'q1' });
  t.same(s.runs, [{ fields: { text: 'hi', id: 'q1' }, caller: { rootId: 'guest-root' } }], 'the id goes with the fields (the transport keeps what the walker declares)');
  t.same(s.frames(), [{ ok: true, data: { result: null, reports: [{ echo: { text: 'hi', id: 'q1' }, by: null }] }, id: 'q1' }]);
  t.same(s.published, ['{"ok":true,"data":{"result":null,"reports":[{"echo":{"text":"hi","id":"q1"},"by":null}]}}'], 'the others get the reply without the id');
  t.equal(s.taken, Buffer.byteLength('{"text":"hi","id":"q1"}'), 'the frame is taken off the inbound count');
});

t.test('a private walker: no token, no run — the first frame must bring one (4401)', async (t) => {
  const s = fake();
  s.session.start(undefined);
  t.ok(s.session.awaitingToken);
  await s.frame({ text: 'hi' });
  t.same(s.closes, [{ code: CLOSE.UNAUTHORIZED, reason: 'walker Chat needs a token (query parameter "token" or a first frame {"token": "..."})' }]);
  t.same(s.runs, []);
  await s.frame({ token: 'tok-ann' });
  t.same(s.sent, [], 'a closed session sends nothing more');
  t.equal(s.closes.length, 1, 'and closes once');

  const bad = fake();
  bad.session.start(undefined);
  await bad.frame('not json');
  t.same(bad.closes, [{ code: 4401, reason: 'the first frame must be a JSON object with a token' }], 'nor may the first frame be anything but an object');
});

t.test('a first frame with a token authenticates; later frames run as its user, with its token', async (t) => {
  const s = fake({ broadcast: true });
  s.session.start(undefined);
  await s.frame({ token: 'tok-ann', id: 1 });
  t.same(s.frames(), [{ type: 'authenticated', id: 1 }]);
  t.equal(s.session.user, 'ann');
  t.equal(s.subscribed, 1, 'subscribed once authenticated');
  await s.frame({ text: 'x' });
  t.same(s.runs, [{ fields: { text: 'x' }, caller: { userId: 'ann', rootId: 'root-ann', role: 'user' }, token: 'tok-ann' }]);
  await s.frame({ token: 'tok-ann-2', text: 'y' });
  t.same(s.runs[1], { fields: { text: 'y' }, caller: { userId: 'ann', rootId: 'root-ann', role: 'user' }, token: 'tok-ann-2' }, 'a token in a walker frame is taken first, then the walker runs');
  t.equal(s.subscribed, 1, 'a second token of the same user does not subscribe again');
});

t.test('a query token: good, bad, or one that must change its password first', async (t) => {
  const good = fake();
  good.session.start('tok-bob');
  t.equal(good.session.user, 'bob');
  t.same(good.closes, []);

  const bad = fake();
  bad.session.start('tok-nobody');
  t.same(bad.closes, [{ code: CLOSE.UNAUTHORIZED, reason: 'token tok-nobody is not good' }]);
  t.notOk(bad.session.awaitingToken, 'a closed session waits for nothing');

  const fresh = fake();
  fresh.session.start('tok-new');
  t.same(fresh.closes, [{ code: CLOSE.FORBIDDEN, reason: 'change the password first (PUT /user/password)' }]);
});

t.test("refresh swaps the token of the same user; another user's token closes with 4403", async (t) => {
  const s = fake();
  s.session.start('tok-ann');
  await s.frame({ type: 'refresh', token: 'tok-ann-2', id: 'r' });
  t.same(s.frames(), [{ type: 'refreshed', id: 'r' }]);
  s.revoked.add('tok-ann');
  await s.frame({ text: 'after' });
  t.equal(s.runs[0]?.token, 'tok-ann-2', 'runs go on with the new token (the old one may be revoked)');
  await s.frame({ type: 'refresh', id: 'x' });
  t.same(s.frames().at(-1), { ok: false, error: { code: 'VALIDATION_ERROR', message: 'refresh needs a token' }, id: 'x' });
  await s.frame({ type: 'refresh', token: 'tok-bob' });
  t.same(s.closes, [{ code: CLOSE.FORBIDDEN, reason: 'a refreshed token must be for the same user' }]);
  t.equal(s.session.user, 'ann', 'the user stays who it was');
});

t.test('every frame checks the token again; recheck closes a listener whose token went bad', async (t) => {
  const s = fake();
  s.session.start('tok-ann');
  s.revoked.add('tok-ann');
  await s.frame({ text: 'x' });
  t.same(s.closes, [{ code: 4401, reason: 'token tok-ann is not good' }]);
  t.same(s.runs, [], 'nothing ran');

  const listener = fake();
  listener.session.start('tok-bob');
  listener.session.recheck();
  t.same(listener.closes, [], 'a good token stays');
  listener.revoked.add('tok-bob');
  listener.session.recheck();
  t.same(listener.closes, [{ code: 4401, reason: 'token tok-bob is not good' }]);
  listener.session.recheck();
  t.equal(listener.closes.length, 1, 'closed once');
});

t.test('control frames and frames that are not walker fields', async (t) => {
  const s = fake({ isPublic: true });
  s.session.start(undefined);
  await s.frame({ type: 'ping', id: 5 });
  await s.frame('{oops');
  await s.frame([1, 2]);
  await s.frame(JSON.stringify({ a: 1 }).replace('"a":1', '"a":{"__proto__":{"x":1}}'));
  await s.frame({ type: 'ping', extra: 1 });
  const frames = s.frames();
  t.same(frames[0], { type: 'pong', id: 5 });
  t.match(frames[1], { ok: false, error: { code: 'INVALID_JSON', message: /^the frame is not valid JSON: / } });
  t.notOk('id' in (frames[1] as object));
  t.same(frames[2], { ok: false, error: { code: 'VALIDATION_ERROR', message: 'a frame must be a JSON object of walker fields' } });
  t.match(frames[3], { ok: false, error: { code: 'RESERVED_KEY', message: /^frame\.a\.__proto__: a key named __proto__ cannot be taken/ } });
  t.same(s.runs.map((r) => r.fields), [{ type: 'ping', extra: 1 }], 'a type among other fields is a walker field, not a control frame');
  t.same(s.closes, [], 'none of it closes the connection');
});

t.test('a run that fails answers an error frame; one that ends after the socket went still reaches the others', async (t) => {
  const failing = fake({ isPublic: true, run: async () => Promise.reject(Object.assign(new Error('the walker broke'), { code: 'WALKER_ERROR' })) });
  failing.session.start(undefined);
  await failing.frame({ n: 1, id: 9 });
  t.same(failing.frames(), [{ ok: false, error: { code: 'WALKER_ERROR', message: 'the walker broke' }, id: 9 }]);

  let release!: (json: string) => void;
  const slow = fake({ isPublic: true, broadcast: true, run: () => new Promise((r) => (release = (json) => r({ json }))) });
  slow.session.start(undefined);
  const running = slow.frame({ n: 1 });
  slow.session.detach();
  release('[1]');
  await running;
  t.same(slow.sent, [], 'nothing is sent to a socket that is gone');
  t.same(slow.published, ['{"ok":true,"data":{"result":null,"reports":[1]}}'], 'the committed run is still heard by the others');
});

t.test('a token whose user must be learnt first: waited for; a database that cannot be reached closes with 1013', async (t) => {
  const learnt: string[] = [];
  const s = fake({ prepare: (token) => (learnt.push(token), Promise.resolve()) });
  s.session.start(undefined);
  await s.frame({ token: 'tok-ann' });
  t.same(learnt, ['tok-ann']);
  t.same(s.frames(), [{ type: 'authenticated' }]);

  const down = fake({ prepare: () => Promise.reject(Object.assign(new Error('the users database cannot be reached'), { code: 'SVC_ERR_STORE_UNAVAILABLE' })) });
  down.session.start(undefined);
  await down.frame({ token: 'tok-ann' });
  t.same(down.closes, [{ code: CLOSE.TRY_AGAIN, reason: 'the users database cannot be reached' }]);
  t.equal(down.session.user, undefined);

  const empty = fake();
  empty.session.start(undefined);
  await empty.frame({ token: '' });
  t.same(empty.closes, [{ code: 4401, reason: 'the token must be a non-empty string' }]);
});

t.test('hooks that judged the guest judge a token for someone else; their refusal closes with 4403', async (t) => {
  const judged: (string | undefined)[] = [];
  const s = fake({ isPublic: true });
  s.session.start(undefined, async (caller) => {
    judged.push(caller.userId);
    return caller.userId === 'bob' ? { code: 'FORBIDDEN', message: 'no bobs' } : undefined;
  });
  await s.frame({ token: 'tok-ann' });
  t.same(s.frames(), [{ type: 'authenticated' }]);
  await s.frame({ token: 'tok-ann-2' });
  t.same(judged, ['ann'], 'the same user again is not judged again');
  const other = fake({ isPublic: true });
  other.session.start(undefined, async (caller) => (caller.userId === 'bob' ? { code: 'FORBIDDEN', message: 'no bobs' } : undefined));
  await other.frame({ token: 'tok-bob', text: 'x' });
  t.same(other.closes, [{ code: 4403, reason: 'FORBIDDEN: no bobs' }]);
  t.same(other.runs, [], 'the refused frame runs nothing');
});

t.test('as an actor: frames are handled one at a time, in order; the mailbox is bounded and the actor never restarts', async (t) => {
  const props = sessionProps(fake().session);
  t.equal(props.capacity, SESSION_MAILBOX);
  t.equal(props.overflow, 'reject');
  t.equal(props.restart, 'temporary');

  const order: string[] = [];
  const gates: ((json: string) => void)[] = [];
  const started = new Latch();
  const s = fake({
    isPublic: true,
    run: (fields) => {
      order.push(`start ${fields.n}`);
      const gate = new Promise<{ json: string }>((resolve) => gates.push((json) => (order.push(`end ${fields.n}`), resolve({ json }))));
      started.hit();
      return gate;
    },
  });
  s.session.start(undefined);
  const system = new ActorSystem();
  t.teardown(() => system.shutdown());
  const ref = system.spawn(sessionProps(s.session));
  for (const n of [1, 2, 3]) t.ok(ref.tell({ t: 'frame', text: JSON.stringify({ n }), bytes: 7 }));
  // Each run is let go only once it started: the next frame waits for the one before.
  for (let i = 0; i < 3; i++) {
    await started.wait(i + 1);
    t.equal(gates.length, 1, `run ${i + 1} alone is under way`);
    (gates.shift() as (json: string) => void)(String(i));
  }
  await system.stop(ref, 1000);
  t.same(order, ['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  t.same(s.sent, ['{"ok":true,"data":{"result":null,"reports":0}}', '{"ok":true,"data":{"result":null,"reports":1}}', '{"ok":true,"data":{"result":null,"reports":2}}']);
});
