// Hook walkers run on WebSocket upgrades as they run on HTTP requests: the
// same `headers` and `request` ({method: 'GET', path: '/ws/<Name>'}), the
// same caller (a good token's user — Authorization header or query token —
// else the guest); a refusal answers the upgrade with its status and an error
// envelope instead of upgrading. CI runs this once per transport (SVC_TRANSPORT).
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { post, startServer, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/ws-hook-app.ts', import.meta.url).pathname;
let server: Server;
let token: string;
let userId: string;
t.before(async () => {
  server = await startServer({ entry });
  userId = await register(server.url, 'hooked');
  token = await tokenOf(server.url, 'hooked');
});
t.teardown(() => server.stop());

const wsUrl = (path: string) => `${server.url.replace('http', 'ws')}${path}`;

type Attempt = { refused: true; status: number; body: any; headers: Record<string, string | string[] | undefined> } | { refused: false; ws: WebSocket; send(frame: unknown): Promise<any> };

/** Try an upgrade: the refusal (status, parsed body), or the open socket. */
function attempt(path: string, headers: Record<string, string> = {}): Promise<Attempt> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(path), { headers });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        ws.terminate();
        resolve({ refused: true, status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers });
      });
    });
    ws.once('open', () =>
      resolve({
        refused: false,
        ws,
        send: (frame) =>
          new Promise((r) => {
            ws.once('message', (data) => r(JSON.parse(data.toString())));
            ws.send(JSON.stringify(frame));
          }),
      }),
    );
    ws.once('error', reject);
  });
}

async function refused(t: Test, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const a = await attempt(path, headers);
  if (!a.refused) {
    a.ws.close();
    t.fail(`${path} was upgraded`);
    return { status: 101, body: undefined };
  }
  t.match(a.headers['content-type'], /^application\/json/);
  return a;
}

t.test('an allowed upgrade works as before: the hook runs and lets it through', async (t) => {
  const a = await attempt('/ws/Echo', { 'x-probe': 'fine' });
  t.equal(a.refused, false, 'upgraded');
  if (a.refused) return;
  t.same(await a.send({ msg: 'hi', id: 1 }), { ok: true, data: { result: null, reports: ['hi'] }, id: 1 });
  a.ws.close();
});

t.test('a hook that refuses answers the upgrade with its status and an error envelope', async (t) => {
  const r = await refused(t, '/ws/Echo', { 'x-block': '1', 'x-probe': 'seen' });
  t.equal(r.status, 403);
  t.match(r.body, {
    ok: false,
    type: 'response',
    data: null,
    error: { code: 'BLOCKED_BY_HOOK', message: 'blocked GET /ws/Echo', details: { path: '/ws/Echo', probe: 'seen', user: null } },
    meta: { request_id: String },
  });
});

t.test('the same hook gives the same answer over HTTP', async (t) => {
  const http = await post(`${server.url}/walker/Hello`, {}, { 'x-block': '1', 'x-probe': 'seen' });
  t.equal(http.status, 403);
  t.same(http.body.error, { code: 'BLOCKED_BY_HOOK', message: 'blocked POST /walker/Hello', details: { path: '/walker/Hello', probe: 'seen', user: null } });
  t.equal((await post(`${server.url}/walker/Hello`, {})).status, 200);
});

t.test('the hook sees request.path per walker; a refusal with a bare status takes its code and message from it', async (t) => {
  const r = await refused(t, '/ws/Closed');
  t.equal(r.status, 451);
  t.match(r.body.error, { code: 'UNAVAILABLE_FOR_LEGAL_REASONS', message: 'Unavailable For Legal Reasons' });
  t.notOk('details' in r.body.error, 'no details when the report has none');
  const other = await attempt('/ws/Echo');
  t.equal(other.refused, false, 'another path is let through');
  if (!other.refused) other.ws.close();
});

t.test('hooks run for the token user: Authorization header, else the query token, else the guest', async (t) => {
  const header = await refused(t, '/ws/Echo', { 'x-block': '1', ...bearer(token) });
  t.equal(header.body.error.details.user, userId, 'the bearer header');
  const query = await refused(t, `/ws/Echo?token=${token}`, { 'x-block': '1' });
  t.equal(query.body.error.details.user, userId, 'the query token');
  const bad = await refused(t, '/ws/Echo?token=not.a.token', { 'x-block': '1' });
  t.equal(bad.status, 403, 'a bad token is not refused for itself: the hook decides, as the guest');
  t.equal(bad.body.error.details.user, null);
});

t.test('a private walker upgraded past the hook keeps its token', async (t) => {
  const a = await attempt(`/ws/Mine?token=${token}`);
  t.equal(a.refused, false);
  if (a.refused) return;
  t.same(await a.send({ id: 'w' }), { ok: true, data: { result: null, reports: [{ user: userId }] }, id: 'w' });
  a.ws.close();
  const blocked = await refused(t, `/ws/Mine?token=${token}`, { 'x-block': '1' });
  t.equal(blocked.status, 403, 'and is refused like the others when the hook says so');
});

t.test('a hook that fails refuses the upgrade as HTTP answers the request (500 EXECUTION_ERROR, no stack)', async (t) => {
  const r = await refused(t, '/ws/Echo', { 'x-crash': '1' });
  t.equal(r.status, 500);
  t.equal(r.body.error.code, 'EXECUTION_ERROR');
  t.notMatch(JSON.stringify(r.body), /at .*\.ts:\d+/, 'no stack');
  const http = await post(`${server.url}/walker/Hello`, {}, { 'x-crash': '1' });
  t.equal(http.status, 500);
  t.equal(http.body.error.code, 'EXECUTION_ERROR');
});

t.test('an unknown walker is still 404, before any hook', async (t) => {
  const r = await refused(t, '/ws/Nope', { 'x-block': '1' });
  t.equal(r.status, 404);
  t.equal(r.body.error.code, 'NOT_FOUND');
});

t.test('a client that leaves while the hooks run does not upset the server', async (t) => {
  const ws = new WebSocket(wsUrl('/ws/Echo'));
  ws.on('error', () => undefined);
  ws.once('upgrade', () => undefined);
  // Gone right after the request is sent, before the hooks answer.
  setImmediate(() => ws.terminate());
  await new Promise((r) => ws.once('close', r));
  const a = await attempt('/ws/Echo');
  t.equal(a.refused, false, 'the next upgrade is served');
  if (!a.refused) {
    t.same((await a.send({ msg: 'still' })).data.reports, ['still']);
    a.ws.close();
  }
});

t.test('no way around a hook that refuses a user: a later frame token, two tokens, an encoded name', async (t) => {
  const deny = { 'x-deny-user': userId };
  // Upgraded as the guest (the hook lets guests in), then the token arrives in a frame: judged again.
  const guest = await attempt('/ws/Mine', deny);
  t.equal(guest.refused, false, 'the guest is let in');
  if (!guest.refused) {
    const closed = new Promise<number>((resolve) => guest.ws.once('close', (code) => resolve(code)));
    guest.ws.send(JSON.stringify({ token, id: 1 }));
    t.equal(await closed, 4403, 'the frame token for the denied user closes the connection');
  }
  // The same with a user the hook allows: the frame token is judged and accepted.
  const other = await attempt('/ws/Mine', { 'x-deny-user': 'someone-else' });
  if (!other.refused) {
    t.match(await other.send({ token, id: 2 }), { type: 'authenticated', id: 2 }, 'the frame token for an allowed user is accepted');
    t.match(await other.send({ id: 3 }), { ok: true, data: { reports: [{ user: userId }] } });
    other.ws.close();
  }
  t.equal((await refused(t, `/ws/Mine?token=${token}`, deny)).status, 403, 'the query token for the denied user');
  t.equal((await refused(t, '/ws/Mine', { ...deny, ...bearer(token) })).status, 403, 'the header token for the denied user');
  // Two different tokens: the hooks cannot judge one and the session run as the other.
  const second = await tokenOf(server.url, 'hooked');
  const both = await refused(t, `/ws/Mine?token=${token}`, { authorization: `Bearer ${second}x` });
  t.equal(both.status, 400);
  // A header-only token runs the session as that user (the one the hooks judged).
  const headerOnly = await attempt('/ws/Mine', bearer(token));
  if (!headerOnly.refused) {
    t.match(await headerOnly.send({ id: 4 }), { ok: true, data: { reports: [{ user: userId }] } });
    headerOnly.ws.close();
  }
  // Percent-encoding the name does not change the path the hook sees.
  t.equal((await refused(t, '/ws/%43losed')).status, 451, 'an encoded name is judged as the walker it names');
});
