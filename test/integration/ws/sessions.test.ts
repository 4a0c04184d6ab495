// WebSocket walkers at /ws/<Name>: auth paths, frames, ordering, errors, close
// codes, keep-alive — a real `svc start` and real `ws` clients.
import t from 'tap';
import WebSocket from 'ws';
import { WalkerSocket, WalkerSocketError } from 'svc/client';
import { SignJWT } from 'jose';
import { bearer, GOOD_PASSWORD, register, tokenOf } from '../../helpers/identity.ts';
import { post, startServer, TEST_SECRET, tokenFor, type Server } from '../../kit/index.ts';
import { rawSocket } from '../../helpers/ws.ts';
import { testApp } from 'svc/testing';

const entry = new URL('../../fixtures/ws-app.ts', import.meta.url).pathname;
let server: Server;
t.before(async () => {
  server = await startServer({
    entry,
    env: { SVC_WS_AUTH_TIMEOUT_SECONDS: '1', SVC_WS_IDLE_TIMEOUT_SECONDS: '2', SVC_WS_PING_INTERVAL_SECONDS: '0.5', SVC_WS_MAX_FRAME_BYTES: '4096', SVC_WS_MAX_BUFFERED_BYTES: '65536' },
  });
});
t.teardown(() => server.stop());

const wsUrl = (path: string) => `${server.url.replace('http', 'ws')}${path}`;

/** A raw client: every frame it gets, in order, and how it closed. */
function raw(path: string): Promise<{ ws: WebSocket; frames: any[]; next(): Promise<any>; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(wsUrl(path));
  const frames: any[] = [];
  const waiting: ((f: any) => void)[] = [];
  let taken = 0;
  ws.on('message', (data) => {
    const f = JSON.parse(data.toString());
    frames.push(f);
    const w = waiting.shift();
    if (w) {
      taken++;
      w(f);
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        ws,
        frames,
        next: () => (taken < frames.length ? Promise.resolve(frames[taken++]) : new Promise((r) => waiting.push(r))),
        closed,
      }),
    );
    ws.once('error', reject);
  });
}

t.test('a public walker: no token, frames of fields, replies in the envelope with the id', async (t) => {
  const c = await raw('/ws/Echo');
  c.ws.send(JSON.stringify({ msg: 'hello', id: 7 }));
  t.same(await c.next(), { ok: true, data: { result: null, reports: ['hello'] }, id: 7 });
  c.ws.send(JSON.stringify({ msg: 'no id' }));
  t.same(await c.next(), { ok: true, data: { result: null, reports: ['no id'] } });
  c.ws.send(JSON.stringify({ type: 'ping', id: 'p' }));
  t.same(await c.next(), { type: 'pong', id: 'p' });
  c.ws.close();
  t.equal((await c.closed).code, 1005);
});

t.test('bad frames get an error frame and the connection stays', async (t) => {
  const c = await raw('/ws/Echo');
  c.ws.send('{not json');
  t.match(await c.next(), { ok: false, error: { code: 'INVALID_JSON', message: /not valid JSON/ } });
  c.ws.send('[1,2]');
  t.match(await c.next(), { ok: false, error: { code: 'VALIDATION_ERROR' } });
  c.ws.send(JSON.stringify({ msg: 12, id: 'a' }));
  t.match(await c.next(), { ok: false, error: { code: 'VALIDATION_ERROR', message: 'Echo: field "msg" must be a string' }, id: 'a' });
  c.ws.send(JSON.stringify({ id: 'b' }));
  t.same(await c.next(), { ok: false, error: { code: 'VALIDATION_ERROR', message: 'Echo: missing required field "msg"' }, id: 'b' }, 'a missing field');
  c.ws.send(JSON.stringify({ msg: 'x', delay: 5, id: 'u' }));
  t.same(await c.next(), { ok: false, error: { code: 'VALIDATION_ERROR', message: 'Echo: unknown field "delay"' }, id: 'u' }, 'an undeclared field is refused, as in HTTP bodies (id is the frame’s own)');
  c.ws.send(JSON.stringify({ msg: 'still here', id: 'c' }));
  t.match(await c.next(), { ok: true, data: { reports: ['still here'] }, id: 'c' });
  c.ws.close();
});

t.test('strict_fields = false: undeclared fields in frames are accepted, with one warning per walker and field', async (t) => {
  const loose = await testApp({ entry, listen: true, env: { SVC_STRICT_FIELDS: 'false' } });
  t.teardown(() => loose.close());
  const s = await WalkerSocket.connect(loose.url as string, 'Echo');
  t.same((await s.send({ msg: 'hi', extra: 1 })).reports, ['hi']);
  t.same((await s.send({ msg: 'again', extra: 2 })).reports, ['again']);
  await s.close();
  const warnings = loose.output().split('\n').filter((line) => line.includes('unknown field'));
  t.equal(warnings.length, 1, 'once, not per frame');
  t.match(JSON.parse(warnings[0] as string), { level: 40, msg: 'Echo: unknown field "extra" ignored (strict_fields is off; told once per walker and field)' });
});

t.test('a walker that throws: an EXECUTION_ERROR frame, no stack, the connection serves on', async (t) => {
  const s = await WalkerSocket.connect(server.url, 'Boom');
  const error = await s.send({ fail: true }).catch((e: WalkerSocketError) => e);
  t.ok(error instanceof WalkerSocketError);
  t.equal((error as WalkerSocketError).code, 'EXECUTION_ERROR');
  t.match((error as WalkerSocketError).message, /boom on purpose/);
  t.notMatch((error as WalkerSocketError).message, /at .*\.ts:\d+/, 'no stack trace');
  t.same((await s.send({ fail: false })).reports, ['fine']);
  await s.close();
});

t.test('frames of one connection are handled in order, even when earlier ones take longer', async (t) => {
  const c = await raw('/ws/Echo');
  for (let i = 0; i < 20; i++) c.ws.send(JSON.stringify({ msg: `m${i}`, delay_ms: i % 3 === 0 ? 30 : 0, id: i }));
  const got: any[] = [];
  for (let i = 0; i < 20; i++) got.push(await c.next());
  t.same(
    got.map((f) => f.id),
    Array.from({ length: 20 }, (_, i) => i),
  );
  t.same(
    got.map((f) => f.data.reports[0]),
    Array.from({ length: 20 }, (_, i) => `m${i}`),
  );
  c.ws.close();
});

t.test('a private walker with a query token runs on the caller’s own graph', async (t) => {
  const [a, b] = [await tokenFor('ws-user-a', { server }), await tokenFor('ws-user-b', { server })];
  const sa = await WalkerSocket.connect(server.url, 'Log', { token: a });
  const sb = await WalkerSocket.connect(server.url, 'Log', { token: b, tokenIn: 'frame' });
  t.same((await sa.send({ n: 1 })).reports, [{ user: 'ws-user-a', n: 1, count: 1 }]);
  t.same((await sa.send({ n: 2 })).reports, [{ user: 'ws-user-a', n: 2, count: 2 }]);
  t.same((await sb.send({ n: 9 })).reports, [{ user: 'ws-user-b', n: 9, count: 1 }], 'b sees only its own entries');
  await Promise.all([sa.close(), sb.close()]);
});

t.test('a first frame carrying the token and fields authenticates and runs', async (t) => {
  const c = await raw('/ws/Log');
  c.ws.send(JSON.stringify({ token: await tokenFor('ws-user-c', { server }), n: 5, id: 1 }));
  t.match(await c.next(), { ok: true, data: { reports: [{ user: 'ws-user-c', n: 5 }] }, id: 1 });
  c.ws.close();
});

t.test('4401: no token, a forged one, alg none, an expired one, garbage as the first frame', async (t) => {
  const none = await raw('/ws/Log');
  none.ws.send(JSON.stringify({ n: 1 }));
  t.equal((await none.closed).code, 4401, 'a first frame without a token');
  t.same(none.frames, [], 'and nothing was run or sent');

  const garbage = await raw('/ws/Log');
  garbage.ws.send('nope');
  t.equal((await garbage.closed).code, 4401, 'a first frame that is not JSON');

  const forged = await raw(`/ws/Log?token=${await tokenFor('x', { server, secret: 'another-secret-another-secret-0123456789' })}`);
  t.equal((await forged.closed).code, 4401, 'a forged query token closes at once');

  const ghost = await raw(`/ws/Log?token=${await tokenFor('ws-never-registered')}`);
  const closedGhost = await ghost.closed;
  t.equal(closedGhost.code, 4401, 'a good signature for a user that does not exist');
  t.match(closedGhost.reason, /does not exist/);

  const body = Buffer.from(JSON.stringify({ user_id: 'x', exp: Math.floor(Date.now() / 1000) + 600 })).toString('base64url');
  const algNone = await raw(`/ws/Log?token=${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${body}.`);
  const closedNone = await algNone.closed;
  t.equal(closedNone.code, 4401, 'alg none');
  t.match(closedNone.reason, /algorithm/);

  const expired = await raw('/ws/Log');
  expired.ws.send(JSON.stringify({ token: await tokenFor('x', { server, expiresIn: Math.floor(Date.now() / 1000) - 10 }), n: 1 }));
  const e = await expired.closed;
  t.equal(e.code, 4401, 'an expired first-frame token');
  t.match(e.reason, /expired/);

  const client = await WalkerSocket.connect(server.url, 'Log', { token: 'a.b.c' }).catch((err) => err);
  t.ok(client instanceof WalkerSocket, 'the upgrade itself succeeds…');
  t.equal((await (client as WalkerSocket).closed).code, 4401, '…and the session closes with 4401');
});

t.test('a token revoked during the connection ends it at the next frame (4401); refresh swaps it (same user only, else 4403)', async (t) => {
  await register(server.url, 'wsuser_h');
  const first = await tokenOf(server.url, 'wsuser_h');
  const s = await WalkerSocket.connect(server.url, 'Log', { token: first });
  t.match((await s.send({ n: 1 })).reports, [{ n: 1, count: 1 }]);
  // A second login of the same user: the connection swaps to its token. (Not a token from a password
  // change: that revokes `first`, and the server's sweep may rightly close the connection before the refresh arrives.)
  const second = await tokenOf(server.url, 'wsuser_h');
  await s.refresh(second);
  t.match((await s.send({ n: 2 })).reports, [{ n: 2, count: 2 }], 'served on the refreshed token');
  await s.request({ type: 'refresh', token: await tokenFor('someone-else', { server }) }).catch(() => undefined);
  t.equal((await s.closed).code, 4403, 'a token of another user: 4403');

  const s2 = await WalkerSocket.connect(server.url, 'Log', { token: second });
  t.match((await s2.send({ n: 3 })).reports, [{ n: 3 }]);
  // A password change revokes every earlier token on every worker before it answers.
  const again = await post(`${server.url}/user/password`, { current_password: GOOD_PASSWORD, new_password: 'hanna picked another' }, { ...bearer(second) }, 'PUT');
  t.equal(again.status, 200);
  await s2.send({ n: 4 }).catch(() => undefined);
  const closed = await s2.closed;
  t.equal(closed.code, 4401, 'the next frame on a revoked token closes with 4401');
  t.match(closed.reason, /revoked/);
});

t.test('an expired query token: 4401', async (t) => {
  const c = await raw(`/ws/Log?token=${await tokenFor('x', { server, expiresIn: Math.floor(Date.now() / 1000) - 10 })}`);
  const closed = await c.closed;
  t.equal(closed.code, 4401);
  t.match(closed.reason, /expired/);
});

t.test('4403: a token that must change its password first', async (t) => {
  await tokenFor('ws-user-g', { server }); // the user exists
  const token = await new SignJWT({ user_id: 'ws-user-g', role: 'user', pwd_change: true })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(TEST_SECRET));
  const c = await raw(`/ws/Log?token=${token}`);
  const closed = await c.closed;
  t.equal(closed.code, 4403);
  t.match(closed.reason, /password/);
});

t.test('4408: a private connection that never sends its token', async (t) => {
  const c = await raw('/ws/Log');
  const closed = await c.closed;
  t.equal(closed.code, 4408);
  t.match(closed.reason, /token/);
});

t.test('keep-alive: the server pings; a client that answers stays, one that does not is closed with 4408', async (t) => {
  const alive = await raw('/ws/Echo');
  let pings = 0;
  alive.ws.on('ping', () => pings++);
  const mute = await rawSocket(server.port, '/ws/Echo');
  const close = await mute.closeFrame;
  t.equal(close.code, 4408, 'the client that never answers pings is closed with 4408');
  t.match(close.reason, /idle/);
  t.ok(mute.pings >= 1, `it was pinged first (${mute.pings})`);
  t.ok(pings >= 1, `the live client got pinged too (${pings})`);
  alive.ws.send(JSON.stringify({ msg: 'still open', id: 1 }));
  t.match(await alive.next(), { ok: true, id: 1 }, 'and is still served');
  alive.ws.close();
  mute.socket.destroy();
});

t.test('4413: a frame over max_frame_bytes', async (t) => {
  const c = await raw('/ws/Echo');
  c.ws.send(JSON.stringify({ msg: 'x'.repeat(5000) }));
  t.equal((await c.closed).code, 4413);
});

t.test('upgrades to unknown walkers, HTTP walkers or functions are 404', async (t) => {
  for (const path of ['/ws/Nope', '/ws/Plain', '/ws/']) {
    const err = await WalkerSocket.connect(server.url, path.slice(4)).catch((e) => e);
    t.ok(err instanceof WalkerSocketError, path);
    t.equal((err as WalkerSocketError).code, 'NOT_FOUND', path);
  }
  for (const path of ['/walker/Plain', '/admin/stats', '/']) {
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(wsUrl(path));
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.once('open', () => {
        resolve(101);
        ws.terminate();
      });
      ws.once('error', () => undefined);
    });
    t.equal(status, 404, `an upgrade to ${path} is 404`);
  }
  const plain = await fetch(`${server.url}/walker/Plain`, { method: 'POST' });
  t.equal(plain.status, 200, 'HTTP walkers are still served over HTTP');
  const echoHttp = await fetch(`${server.url}/walker/Echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"msg":"x"}' });
  t.equal(echoHttp.status, 404, 'a WebSocket walker is not an HTTP endpoint');
});

t.test('the server sends nothing before the first frame', async (t) => {
  const c = await raw('/ws/Echo');
  c.ws.send(JSON.stringify({ type: 'ping', id: 'first' }));
  t.same(await c.next(), { type: 'pong', id: 'first' }, 'the first frame received is the answer to ours');
  c.ws.close();
});

t.test('a listener that never sends a frame is closed (4401) once its token is revoked', async (t) => {
  await register(server.url, 'wsuser_l');
  const token = await tokenOf(server.url, 'wsuser_l');
  const listener = await WalkerSocket.connect(server.url, 'Chat', { token });
  const changed = await post(`${server.url}/user/password`, { current_password: GOOD_PASSWORD, new_password: 'listener picked another' }, { ...bearer(token) }, 'PUT');
  t.equal(changed.status, 200);
  const closed = await listener.closed;
  t.equal(closed.code, 4401);
  t.match(closed.reason, /revoked/);
});

t.test('a token in a frame is verified whatever else the frame holds', async (t) => {
  const guest = await WalkerSocket.connect(server.url, 'WhoPub');
  t.same((await guest.send({})).reports, [{ user: null }], 'a public walker without a token runs as the guest');
  t.same(await guest.request({ token: await tokenFor('ws-user-m', { server }) }), { type: 'authenticated', id: 'c2' }, 'a token frame on a public walker authenticates');
  t.same((await guest.send({})).reports, [{ user: 'ws-user-m' }], 'and the connection runs as that user from then on');
  t.same(await guest.request({ token: await tokenFor('ws-user-m', { server }) }), { type: 'authenticated', id: 'c4' }, 'a fresh token of the same user is taken');
  await guest.request({ token: await tokenFor('ws-user-n', { server }) }).catch(() => undefined);
  t.equal((await guest.closed).code, 4403, "another user's token in a later frame: 4403");

  const viaClient = await WalkerSocket.connect(server.url, 'WhoPub', { token: await tokenFor('ws-user-o', { server }), tokenIn: 'frame' });
  t.same((await viaClient.send({})).reports, [{ user: 'ws-user-o' }], 'the client helper authenticates a public walker by frame');
  await viaClient.close();

  const garbage = await raw('/ws/WhoPub');
  garbage.ws.send(JSON.stringify({ token: 'garbage', id: 1 }));
  t.equal((await garbage.closed).code, 4401, 'a bad token in a frame closes the connection, public walker or not');
  t.same(garbage.frames, []);

  const refresh = await WalkerSocket.connect(server.url, 'Log', { token: await tokenFor('ws-user-p', { server }) });
  await refresh.request({ type: 'refresh', token: await tokenFor('ws-user-q', { server }), n: 1 }).catch(() => undefined);
  t.equal((await refresh.closed).code, 4403, 'a refresh-looking frame with extra keys still has its token checked first');
});

t.test('frames waiting on a connection are bounded in bytes; refusals carry the id', async (t) => {
  const c = await raw('/ws/Echo');
  const big = 'y'.repeat(3500);
  for (let i = 0; i < 40; i++) c.ws.send(JSON.stringify({ msg: big, delay_ms: i === 0 ? 300 : 0, id: i }));
  const got: any[] = [];
  for (let i = 0; i < 40; i++) got.push(await c.next());
  const refused = got.filter((f) => f.ok === false);
  t.ok(refused.length > 0, `${refused.length} of 40 frames refused while the first one ran`);
  t.ok(refused.every((f) => f.error.code === 'SVC_ERR_MAILBOX_FULL' && typeof f.id === 'number'), 'each refusal names its frame');
  t.ok(got.filter((f) => f.ok === true).length >= 10, 'the rest were answered');
  c.ws.send(JSON.stringify({ msg: 'after', id: 'after' }));
  t.match(await c.next(), { ok: true, id: 'after' }, 'and the connection serves on');
  c.ws.close();
});

t.test('values nested too deeply are a VALIDATION_ERROR (WebSocket and HTTP), not a transport error', async (t) => {
  const deep = `${'['.repeat(1500)}${']'.repeat(1500)}`;
  const c = await raw('/ws/Echo');
  c.ws.send(`{"msg":${deep},"id":1}`);
  t.match(await c.next(), { ok: false, error: { code: 'VALIDATION_ERROR', message: /nested/ }, id: 1 });
  c.ws.close();
  const res = await post(`${server.url}/walker/Plain`, `{"x":${deep}}`);
  t.not(res.status, 500, 'HTTP: no 500');
});

t.test('the id of a request can be the caller’s own', async (t) => {
  const s = await WalkerSocket.connect(server.url, 'Echo');
  t.same(await s.request({ msg: 'mine', id: 'my-id' }), { ok: true, data: { result: null, reports: ['mine'] }, id: 'my-id' });
  await s.close();
});
