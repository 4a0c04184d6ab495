// Microservice mode end to end: `svc start` with [scale.microservices] enabled is a gateway in front of one
// process per module (main.ts, billing.ts, search.ts): one OpenAPI, each route served by its own process,
// sign-in on the main module honoured by the others, CORS from the config, WebSockets relayed; a route two
// modules serve refuses to start.
import t from 'tap';
import WebSocket from 'ws';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post, runSvc, startServer, TEST_SECRET, tokenFor } from '../../kit/index.ts';
import { bearer, register, tokenOf } from '../../helpers/identity.ts';
import { gone } from './processes.ts';

t.setTimeout(360_000);

const MICRO = new URL('../../fixtures/sv/micro/', import.meta.url).pathname;
const CLASH = new URL('../../fixtures/sv/micro-clash/', import.meta.url).pathname;


/** Write `request` on a raw connection and read until the server closes it (at most 10 s). */
async function rawExchange(port: number, request: string, encoding: BufferEncoding = 'utf8'): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.write(Buffer.from(request, encoding));
  let out = '';
  socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
  const timer = setTimeout(() => socket.destroy(), 10_000);
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  clearTimeout(timer);
  return out;
}


t.test('a gateway in front of three module processes', async (t) => {
  const gw = await startServer({ entry: `${MICRO}main.ts`, cwd: MICRO });
  t.teardown(() => gw.stop());
  t.match(gw.output(), /svc: microservice mode: 3 modules \(main at http:\/\/127\.0\.0\.1:18\d{3}, billing at http:\/\/127\.0\.0\.1:18\d{3}, search at http:\/\/127\.0\.0\.1:18\d{3}\)/);

  const spec = (await (await fetch(`${gw.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
  for (const path of ['/function/hello', '/function/charge', '/walker/AddCharge', '/function/find', '/user/login']) t.ok(spec.paths[path], `the merged OpenAPI has ${path}`);

  const hello = await post(`${gw.url}/function/hello`, {});
  const charge = await post(`${gw.url}/function/charge`, { amount: 3 });
  const find = await post(`${gw.url}/function/find`, { q: 'shoes' });
  t.match(hello.body.data.result, { hello: 'you' });
  t.match(charge.body.data.result, { charged: 3, user: null });
  t.same(find.body.data.result.found, ['shoes']);
  const pids = [hello, charge, find].map((r) => r.body.data.result.pid as number);
  t.equal(new Set([...pids, gw.proc.pid]).size, 4, 'each module answered from its own process, none from the gateway');

  // Signed in through the gateway (the main module's users): another module runs on that user's graph.
  await register(gw.url, 'ada');
  const token = await tokenOf(gw.url, 'ada');
  const first = await post(`${gw.url}/walker/AddCharge`, { amount: 1 }, bearer(token));
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.match(first.body.data.reports[0], { count: 1, pid: pids[1] });
  t.equal(typeof first.body.data.reports[0].user, 'string');
  t.equal((await post(`${gw.url}/walker/AddCharge`, { amount: 2 }, bearer(token))).body.data.reports[0].count, 2);
  t.equal((await post(`${gw.url}/walker/AddCharge`, { amount: 2 })).status, 401, 'a private walker without a token: 401 from its module');
  t.equal((await post(`${gw.url}/walker/AddCharge`, { amount: 2 }, bearer(`${token.slice(0, -4)}AAAA`))).status, 401, 'a forged token: 401');
  const expired = await tokenFor(first.body.data.reports[0].user, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
  t.equal((await post(`${gw.url}/walker/AddCharge`, { amount: 2 }, bearer(expired))).status, 401, 'an expired token: 401');
  // A module importing another: through the gateway to that module's process, the caller's token with it.
  const via = await post(`${gw.url}/function/viaBilling`, { amount: 4 }, bearer(token));
  t.equal(via.status, 200, JSON.stringify(via.body));
  t.match(via.body.data.result, { charged: 4, user: first.body.data.reports[0].user, pid: pids[1] });
  t.notMatch(gw.output(), /svc: service billing \(billing\.ts\) ready at .*\n[^]*svc: service billing \(billing\.ts\) ready at/, 'no second billing was started');

  // A revoked token is refused on every module at once, not only on the one that keeps the users.
  const before = await tokenOf(gw.url, 'ada');
  const changed = await post(`${gw.url}/user/password`, { current_password: 'correct horse battery staple', new_password: 'another correct horse battery' }, bearer(before), 'PUT');
  t.equal(changed.status, 200, JSON.stringify(changed.body));
  const revoked = await post(`${gw.url}/walker/AddCharge`, { amount: 1 }, bearer(before));
  t.equal(revoked.status, 401, 'a token revoked by a password change: 401 on another module');
  t.equal(revoked.body.error.code, 'UNAUTHORIZED');
  const fresh = await tokenOf(gw.url, 'ada', 'another correct horse battery');

  // An upgrade that is not switched gets its one answer, then the connection closes: no tunnel to a module,
  // and what was pipelined behind it never reaches the module (the charges are counted before and after).
  const counted = async (): Promise<number> => (await post(`${gw.url}/walker/AddCharge`, { amount: 1 }, bearer(fresh))).body.data.reports[0].count as number;
  const charges = await counted();
  const smuggled = `POST /walker/AddCharge HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${fresh}\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"amount":1}`;
  const tunnel = await rawExchange(gw.port, `GET /function/charge HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n${smuggled}`);
  t.notMatch(tunnel, /^HTTP\/1\.1 101/);
  t.equal((tunnel.match(/HTTP\/1\.1 \d{3}/g) ?? []).length, 1, 'one answer, and the socket closed');
  t.equal(await counted(), charges + 1, 'the request pipelined behind the refused upgrade was not run');
  // A preflight with a method that is no HTTP token: answered, nothing crashes.
  const odd = await rawExchange(gw.port, 'OPTIONS /function/find HTTP/1.1\r\nHost: x\r\nOrigin: https://shop.example\r\nAccess-Control-Request-Method: \u00b5\r\nConnection: close\r\n\r\n', 'latin1');
  t.match(odd, /^HTTP\/1\.1 204/);
  t.equal((await post(`${gw.url}/walker/AddCharge`, { amount: 1 }, bearer(fresh))).status, 200, 'the gateway still serves');

  const unknown = await post(`${gw.url}/function/nothing`, {});
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error.code, 'NOT_FOUND');

  // CORS as configured: only https://shop.example, with credentials; the modules' own permissive policy never leaks.
  const allowed = await fetch(`${gw.url}/function/charge`, { method: 'POST', headers: { origin: 'https://shop.example', 'content-type': 'application/json' }, body: '{"amount":1}' });
  t.equal(allowed.headers.get('access-control-allow-origin'), 'https://shop.example');
  t.equal(allowed.headers.get('access-control-allow-credentials'), 'true');
  t.match(allowed.headers.get('access-control-expose-headers') ?? '', /x-request-id/);
  const other = await fetch(`${gw.url}/function/charge`, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{"amount":1}' });
  t.equal(other.status, 200);
  t.equal(other.headers.get('access-control-allow-origin'), null, 'another origin gets no CORS header');
  const preflight = await fetch(`${gw.url}/function/find`, { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' } });
  t.equal(preflight.status, 204);
  t.equal(preflight.headers.get('access-control-max-age'), '120');
  t.match(preflight.headers.get('access-control-allow-headers') ?? '', /authorization/);

  // A WebSocket walker of the billing module, through the gateway.
  const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/ws/Ticker`);
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const reply = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
  ws.send(JSON.stringify({ msg: 'tick' }));
  t.match(JSON.parse(await reply), { ok: true, data: { reports: [{ echo: 'tick', pid: pids[1] }] } });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.close(1000);
  t.equal(await closed, 1000, 'closed through the relay');

  // The gateway stops its modules with it.
  await gw.stop();
  for (const pid of pids) t.ok(await gone(pid), `module process ${pid} stopped`);
});

t.test('two modules serving one route: the gateway refuses to start, naming both', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-clash-'));
  const run = await runSvc(['start', `${CLASH}main.ts`, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], { cwd: CLASH, env: { SVC_DATA_DIR: dataDir, JWT_SECRET: TEST_SECRET } });
  t.equal(run.code, 1, run.stdout + run.stderr);
  t.match(run.stderr, /route POST \/function\/charge is served by both (main and other|other and main)/);
});
