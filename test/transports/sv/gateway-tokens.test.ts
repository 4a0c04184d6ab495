// The microservice gateway judges every token of a WebSocket upgrade with main: real modules laid
// out as microservice mode lays them out (main keeps the users; the vault module has its own data
// folder and takes any token main's secret signed, `accept_unknown_users`) behind a real gateway.
// A revoked, disabled or deleted user's token — in `?token=` or in the `Authorization` header — is
// refused before a byte reaches the module; a good one is served either way. WebSocket walkers are
// routed to the module whose document lists them (`x-svc-websockets`).
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { type Gateway, GatewayError, startGateway } from '../../../transports/sv/index.ts';
import { startApp, type InProcessServer } from '../../helpers/app.ts';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { post, transport } from '../../kit/index.ts';

const fixture = (name: string) => new URL(`../../fixtures/gateway/${name}.ts`, import.meta.url).pathname;
const OPEN = { allow_origins: ['*'], allow_methods: ['*'], allow_headers: ['*'], allow_credentials: false, expose_headers: [], max_age: 600 };
const moduleTransport = transport() === 'node' ? ({ transport: 'node' } as const) : {};
const ADMIN = { ADMIN_USERNAME: 'boss', ADMIN_DEFAULT_PASSWORD: 'initial chief password' };

let shop: InProcessServer;
let vault: InProcessServer;
let gw: Gateway;
let admin = '';

t.before(async () => {
  // Each its own data folder (removed at stop), as microservice mode starts them.
  shop = await startApp({ entry: fixture('shop'), listen: true, keepData: false, ...moduleTransport, env: ADMIN });
  vault = await startApp({ entry: fixture('vault'), listen: true, keepData: false, ...moduleTransport, config: { 'scale.jwt.accept_unknown_users': true } });
  gw = await startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, vault: vault.url }, cors: OPEN });
  const forced = (await post(`${gw.url}/admin/login`, { username: 'boss', password: 'initial chief password' })).body.data.token as string;
  admin = (await post(`${gw.url}/user/password`, { current_password: 'initial chief password', new_password: 'the chief picked this one' }, bearer(forced), 'PUT')).body.data.token as string;
});
t.teardown(async () => {
  await gw?.close();
  await vault?.stop();
  await shop?.stop();
});

type Reply = { ok: boolean; data?: { reports: { module: string; user: string | null; notes: string[] }[] }; error?: { code: string } };
type Opened = { ws: WebSocket; send(frame: Record<string, unknown>): Promise<Reply>; closed: Promise<number> };

/** Upgrade to `path`: the open socket, or the status and envelope it was refused with. */
function upgrade(t: Test, url: string, path: string, headers: Record<string, string> = {}): Promise<Opened | { status: number; body: any }> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}${path}`, { headers });
  ws.on('error', () => undefined);
  t.teardown(() => ws.terminate());
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode as number, body: text ? JSON.parse(text) : undefined });
        ws.terminate();
      });
    });
    ws.once('open', () => {
      const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
      resolve({
        ws,
        closed,
        send: (frame) =>
          new Promise<Reply>((r, j) => {
            ws.once('message', (d) => r(JSON.parse(String(d)) as Reply));
            ws.once('close', (code) => j(new Error(`closed ${code}`)));
            ws.send(JSON.stringify(frame));
          }),
      });
    });
    ws.once('error', reject);
  });
}

/** Open `path` and send one frame; the reply (a refused upgrade or a close is a failure of the test). */
async function exchange(t: Test, url: string, path: string, headers: Record<string, string>, frame: Record<string, unknown>): Promise<Reply> {
  const opened = await upgrade(t, url, path, headers);
  if (!('ws' in opened)) throw new Error(`refused ${opened.status} ${JSON.stringify(opened.body)}`);
  try {
    return await opened.send(frame);
  } finally {
    opened.ws.close();
  }
}

/** The refusal of an upgrade that must be refused (an open socket fails the test). */
async function refused(t: Test, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await upgrade(t, gw.url, path, headers);
  if ('ws' in r) {
    // What it can do: write to the user's notes and read them.
    const reply = await r.send({ text: 'intruder', id: 1 }).catch((e: Error) => ({ ok: false, error: { code: e.message } }) as Reply);
    r.ws.terminate();
    t.fail(`${path.replace(/token=[^&]+/, 'token=…')} was upgraded and answered ${JSON.stringify(reply)}`);
    return { status: 101, body: reply };
  }
  return r;
}

/** The user's notes, read over HTTP through the gateway with a good token. */
async function notes(token: string): Promise<string[]> {
  const res = await post(`${gw.url}/walker/Notes`, {}, bearer(token));
  if (res.status !== 200) throw new Error(`Notes: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.reports[0].notes as string[];
}

t.test('WebSocket walkers are routed to the module that lists them; two modules with one refuse to start', async (t) => {
  const routes = gw.routes.map((r) => `${r.method} ${r.path} ${r.module}`);
  t.ok(routes.includes('WS /ws/VaultWs vault'), 'the vault’s WebSocket walker');
  t.ok(routes.includes('WS /ws/Bell shop'), 'main’s');
  const doc: any = await (await fetch(`${gw.url}/openapi.json`)).json();
  t.match(doc['x-svc-websockets'], [{ path: '/ws/Bell', walker: 'Bell', access: 'pub', broadcast: false, module: 'shop' }, { path: '/ws/VaultWs', walker: 'VaultWs', access: 'priv', module: 'vault' }]);
  t.notOk(doc.paths['/ws/VaultWs'], 'not an OpenAPI path');
  const nope = await refused(t, '/ws/Nope');
  t.equal(nope.status, 404, 'a walker no module lists: main’s 404');

  const billing = await startApp({ entry: fixture('billing'), listen: true, keepData: false, ...moduleTransport });
  t.teardown(() => billing.stop());
  const clash = await startApp({ entry: fixture('ws-clash'), listen: true, keepData: false, ...moduleTransport });
  t.teardown(() => clash.stop());
  const error = await startGateway({ host: '127.0.0.1', port: 0, main: 'shop', modules: { shop: shop.url, billing: billing.url, clash: clash.url }, cors: OPEN }).catch((e: unknown) => e);
  t.ok(error instanceof GatewayError);
  t.equal((error as GatewayError).code, 'SVC_ERR_GATEWAY_ROUTE_COLLISION');
  t.equal((error as GatewayError).message, 'WebSocket walker /ws/Ticker is served by both billing and clash');
});

t.test('a good token is served over ?token= and over the Authorization header, on a module and on main', async (t) => {
  const user = await register(gw.url, 'vera');
  const token = await tokenOf(gw.url, 'vera');
  const byQuery = await exchange(t, gw.url, `/ws/VaultWs?token=${token}`, {}, { text: 'by query' });
  t.same(byQuery, { ok: true, data: { result: null, reports: [{ module: 'vault', user, notes: ['by query'] }] } });
  const byHeader = await exchange(t, gw.url, '/ws/VaultWs', bearer(token), { text: 'by header' });
  t.match(byHeader, { ok: true, data: { reports: [{ module: 'vault', user }] } }, 'the header token: the connection is the user’s');
  t.same(byHeader.data?.reports[0]?.notes.sort(), ['by header', 'by query']);
  t.equal((await exchange(t, vault.url, '/ws/VaultWs', bearer(token), {})).data?.reports[0]?.user, user, 'the header token directly on the module too');
  const both = await exchange(t, gw.url, `/ws/VaultWs?token=${token}`, bearer(token), {});
  t.equal(both.data?.reports[0]?.user, user, 'the same token both ways');
  const bell = await exchange(t, gw.url, '/ws/Bell', bearer(token), { id: 'b' });
  t.same(bell, { ok: true, data: { result: null, reports: [{ module: 'shop', ring: true }] }, id: 'b' }, 'main’s own walker with a header token');
  const none = await upgrade(t, gw.url, '/ws/VaultWs');
  if (!('ws' in none)) return void t.fail('a private walker upgrades without a token (the token may come in a frame)');
  none.ws.send(JSON.stringify({ text: 'nobody' }));
  t.equal(await none.closed, 4401, 'no token at all: the module closes 4401');
});

t.test('a token revoked by a password change is refused on a module’s WebSocket walker, over the query and the header', async (t) => {
  await register(gw.url, 'rita');
  const old = await tokenOf(gw.url, 'rita');
  t.same((await exchange(t, gw.url, `/ws/VaultWs?token=${old}`, {}, { text: 'mine' })).data?.reports[0]?.notes, ['mine']);
  const changed = await post(`${gw.url}/user/password`, { current_password: 'correct horse battery staple', new_password: 'a brand new secret phrase' }, bearer(old), 'PUT');
  t.equal(changed.status, 200);
  const fresh = changed.body.data.token as string;
  t.equal((await fetch(`${gw.url}/user/me`, { headers: bearer(old) })).status, 401, 'main refuses the old token');
  t.equal((await post(`${gw.url}/walker/Notes`, {}, bearer(old))).status, 401, 'so does the module’s HTTP walker, through the gateway');
  // The module alone would take it (its signature is good; the module never hears of the revocation):
  // what stops it is the gateway asking main.
  t.same((await exchange(t, vault.url, `/ws/VaultWs?token=${old}`, {}, {})).data?.reports[0]?.notes, ['mine'], 'directly, the module takes the old token');

  const query = await refused(t, `/ws/VaultWs?token=${old}`);
  t.equal(query.status, 401, '?token=: refused');
  t.match(query.body, { ok: false, error: { code: 'UNAUTHORIZED' } });
  t.equal((await refused(t, '/ws/VaultWs', bearer(old))).status, 401, 'the header: refused');
  t.equal((await refused(t, `/ws/VaultWs?token=${old}`, bearer(fresh))).status, 401, 'a revoked query token beside a good header: refused');
  t.equal((await refused(t, `/ws/VaultWs?token=${fresh}`, bearer(old))).status, 401, 'a revoked header beside a good query token: refused');
  t.equal((await refused(t, `/ws/VaultWs?x=1&token=${encodeURIComponent(old)}`)).status, 401, 'anywhere in the query');
  t.same(await notes(fresh), ['mine'], 'nothing was written with the revoked token');
  t.same((await exchange(t, gw.url, `/ws/VaultWs?token=${fresh}`, {}, { text: 'again' })).data?.reports[0]?.notes.sort(), ['again', 'mine'], 'the new token is served');
});

t.test('a disabled user’s and a deleted user’s tokens are refused on a module’s WebSocket walker', async (t) => {
  await register(gw.url, 'dora');
  await register(gw.url, 'dave');
  const dora = await tokenOf(gw.url, 'dora');
  const dave = await tokenOf(gw.url, 'dave');
  await exchange(t, gw.url, `/ws/VaultWs?token=${dora}`, {}, { text: 'dora was here' });
  await exchange(t, gw.url, '/ws/VaultWs', bearer(dave), { text: 'dave was here' });

  const disabled = await post(`${gw.url}/admin/users/dora`, { status: 'disabled' }, bearer(admin), 'PUT');
  t.equal(disabled.status, 200, 'disabled by the admin');
  t.equal((await refused(t, `/ws/VaultWs?token=${dora}`)).status, 401, 'disabled, ?token=');
  t.equal((await refused(t, '/ws/VaultWs', bearer(dora))).status, 401, 'disabled, header');
  await post(`${gw.url}/admin/users/dora`, { status: 'active' }, bearer(admin), 'PUT');
  t.same(await notes(await tokenOf(gw.url, 'dora')), ['dora was here'], 'nothing was written while disabled');

  t.equal((await post(`${gw.url}/admin/users/dave`, undefined, bearer(admin), 'DELETE')).status, 200);
  t.equal((await refused(t, `/ws/VaultWs?token=${dave}`)).status, 401, 'deleted, ?token=');
  t.equal((await refused(t, '/ws/VaultWs', bearer(dave))).status, 401, 'deleted, header');
});

/** An upgrade written by hand (a client library would drop or refuse a `#`): the status line and what followed. */
function rawUpgrade(url: string, target: string): Promise<{ status: number; text: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      // A switched socket stays open: what was answered is enough.
      if (status === 101) socket.destroy();
      else if (!socket.readableEnded) socket.once('end', () => resolve({ status, text }));
      if (status === 101) resolve({ status, text });
    });
    socket.on('error', reject);
  });
}

t.test('a # in the upgrade target does not hide the query token from main (the module reads past it)', async (t) => {
  await register(gw.url, 'hugo');
  const old = await tokenOf(gw.url, 'hugo');
  const changed = await post(`${gw.url}/user/password`, { current_password: 'correct horse battery staple', new_password: 'a brand new secret phrase' }, bearer(old), 'PUT');
  t.equal(changed.status, 200);
  // The module alone reads the token after the `#` (and would take it: it never hears of the revocation).
  t.equal((await rawUpgrade(vault.url, `/ws/VaultWs?#&token=${old}`)).status, 101, 'directly, the module switches with it');
  for (const target of [`/ws/VaultWs?#&token=${old}`, `/ws/VaultWs?x=1#&token=${old}`]) {
    const r = await rawUpgrade(gw.url, target);
    t.equal(r.status, 401, `${target.replace(old, '…')}: refused by main`);
    t.match(r.text, /UNAUTHORIZED/);
  }
  const fresh = changed.body.data.token as string;
  t.equal((await rawUpgrade(gw.url, `/ws/VaultWs?#&token=${fresh}`)).status, 101, 'a good token there is served');
});
