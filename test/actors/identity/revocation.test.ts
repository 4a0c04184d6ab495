// Revocation holds on every worker the moment the change is answered, and
// after a restart; registration races between workers have one winner.
import { request } from 'node:http';
import t from 'tap';
import { bearer, GOOD_PASSWORD, register, tokenOf } from '../../helpers/identity.ts';
import { startServer, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;

/** GET on a fresh connection each time, so requests spread over the workers. */
function fresh(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { ...bearer(token), connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

let server: Server;
t.before(async () => {
  server = await startServer({ entry, workers: 2 });
});
t.teardown(() => server?.stop());

t.test('a password change revokes old tokens on every worker before it answers', async (t) => {
  await register(server.url, 'uma_u');
  const old = await tokenOf(server.url, 'uma_u');
  const before = await Promise.all(Array.from({ length: 20 }, () => fresh(`${server.url}/user/me`, old)));
  t.same(new Set(before), new Set([200]), 'valid everywhere before');
  const res = await fetch(`${server.url}/user/password`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...bearer(old) },
    body: JSON.stringify({ current_password: GOOD_PASSWORD, new_password: 'uma picked another' }),
  });
  t.equal(res.status, 200);
  const after = await Promise.all(Array.from({ length: 20 }, () => fresh(`${server.url}/user/me`, old)));
  t.same(new Set(after), new Set([401]), 'refused everywhere right after');
});

t.test('two workers registering the same name at once: one 201, the others 409', async (t) => {
  const body = JSON.stringify({ identities: [{ type: 'username', value: 'Victor_V' }], credential: { type: 'password', password: GOOD_PASSWORD } });
  const statuses = await Promise.all(
    Array.from(
      { length: 8 },
      (_, i) =>
        new Promise<number>((resolve, reject) => {
          const req = request(`${server.url}/user/register`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } }, (r) => {
            r.resume();
            r.on('end', () => resolve(r.statusCode ?? 0));
          });
          req.on('error', reject);
          req.end(i % 2 ? body : body.replace('Victor_V', 'victor_v'));
        }),
    ),
  );
  t.same(statuses.filter((s) => s === 201).length, 1, 'one winner');
  t.same(statuses.filter((s) => s === 409).length, 7, 'the rest are IDENTITY_TAKEN');
});

t.test('revocations survive a restart', async (t) => {
  await register(server.url, 'wendy_w');
  const old = await tokenOf(server.url, 'wendy_w');
  await fetch(`${server.url}/user/password`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...bearer(old) },
    body: JSON.stringify({ current_password: GOOD_PASSWORD, new_password: 'wendy picked another' }),
  });
  const dataDir = server.dataDir;
  await server.stop();
  server = await startServer({ entry, workers: 2, env: { SVC_DATA_DIR: dataDir } });
  const statuses = await Promise.all(Array.from({ length: 10 }, () => fresh(`${server.url}/user/me`, old)));
  t.same(new Set(statuses), new Set([401]), 'the old token is still refused');
  const now = await tokenOf(server.url, 'wendy_w', 'wendy picked another');
  t.equal(await fresh(`${server.url}/user/me`, now), 200);
});
