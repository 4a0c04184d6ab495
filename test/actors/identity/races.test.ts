// Tokens minted from a user record read before a change are void, however late they
// are signed (issue 9, item 1): logins racing a password change, a forced reset, a
// disable, a demotion or a deletion; and the same after a restart.
import t, { type Test } from 'tap';
import { bearer, claimsOf, GOOD_PASSWORD, login, register, tokenOf } from '../../helpers/identity.ts';
import { post, startServer, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;
const ADMIN = { ADMIN_USERNAME: 'race_admin', ADMIN_DEFAULT_PASSWORD: 'admin password for races' };
let server: Server;
let admin = '';

async function call(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? bearer(token) : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

t.before(async () => {
  server = await startServer({ entry, workers: 2, env: { ...ADMIN, SVC_LOGIN_ATTEMPTS_PER_ADDRESS: '10000', SVC_REGISTER_ATTEMPTS_PER_ADDRESS: '10000' } });
  const first = await post(`${server.url}/admin/login`, { username: ADMIN.ADMIN_USERNAME, password: ADMIN.ADMIN_DEFAULT_PASSWORD });
  const changed = await call('PUT', '/user/password', first.body.data.token, { current_password: ADMIN.ADMIN_DEFAULT_PASSWORD, new_password: 'the admin picked a new one' });
  admin = changed.body.data.token;
});
t.teardown(() => server.stop());

/** Every token a racing login got must be refused once the change is acknowledged. */
const minted: { what: string; token: string; probe: (token: string) => Promise<number> }[] = [];

/**
 * Logins of `username` read the record as they arrive, then queue for the
 * hashing threads. The change is sent once the first of them has answered —
 * the others read the record before it and are still hashing while it lands
 * — and a few more logins right after it. `keep` picks the tokens minted
 * from the record as it was before the change: every one must be refused.
 */
async function race(t: Test, what: string, username: string, change: () => Promise<{ status: number }>, probe: (token: string) => Promise<number>, keep = (_token: string) => true) {
  // Open connections first, so that every request of the race goes out at once, in the order sent.
  await Promise.all(Array.from({ length: 12 }, async () => (await fetch(`${server.url}/health`)).text()));
  const before = Array.from({ length: 10 }, () => login(server.url, username));
  await Promise.race(before);
  const changed = change();
  const after = Array.from({ length: 4 }, () => login(server.url, username));
  const results = await Promise.all([...before, ...after]);
  t.equal((await changed).status, 200, `${what}: acknowledged`);
  const tokens = results.filter((r) => r.status === 200).map((r) => r.body.data.token as string).filter(keep);
  t.ok(tokens.length > 0, `${what}: ${tokens.length} of 14 racing logins got a token from the record before the change`);
  for (const token of tokens) {
    t.equal(await probe(token), 401, `${what}: a token minted from the record read before is refused`);
    minted.push({ what, token, probe });
  }
}

const me = async (token: string) => (await call('GET', '/user/me', token)).status;

t.test('a password change voids the tokens of logins that read the old record', async (t) => {
  await register(server.url, 'race_pw');
  const token = await tokenOf(server.url, 'race_pw');
  await race(t, 'password change', 'race_pw', () => call('PUT', '/user/password', token, { current_password: GOOD_PASSWORD, new_password: 'race picked another one' }), me);
  t.equal((await login(server.url, 'race_pw', 'race picked another one')).status, 200, 'the new password works');
});

t.test('a forced reset voids them', async (t) => {
  await register(server.url, 'race_force');
  // Logins after it get a token that may only change the password (pwd_change): those are fine.
  await race(t, 'forced reset', 'race_force', () => call('POST', '/admin/users/race_force/force-password-reset', admin), me, (token) => claimsOf(token).pwd_change !== true);
});

t.test('a disable voids them', async (t) => {
  await register(server.url, 'race_off');
  await race(t, 'disable', 'race_off', () => call('PUT', '/admin/users/race_off', admin, { status: 'disabled' }), me);
});

t.test('a demotion voids every admin token racing it', async (t) => {
  await register(server.url, 'race_boss');
  t.equal((await call('PUT', '/admin/users/race_boss', admin, { role: 'admin' })).status, 200);
  const users = async (token: string) => (await call('GET', '/admin/users', token)).status;
  await race(t, 'demotion', 'race_boss', () => call('PUT', '/admin/users/race_boss', admin, { role: 'user' }), users, (token) => claimsOf(token).role === 'admin');
  const now = await tokenOf(server.url, 'race_boss');
  t.equal(await users(now), 403, 'a login after it is a user');
});

t.test('a deletion voids them', async (t) => {
  await register(server.url, 'race_gone');
  const walker = async (token: string) => (await call('POST', '/walker/ListTodos', token, {})).status;
  await race(t, 'deletion', 'race_gone', () => call('DELETE', '/admin/users/race_gone', admin), walker);
});

t.test('after a restart every one of them is still refused', async (t) => {
  const dataDir = server.dataDir;
  await server.stop();
  server = await startServer({ entry, workers: 2, env: { ...ADMIN, SVC_DATA_DIR: dataDir } });
  t.ok(minted.length >= 5);
  for (const { what, token, probe } of minted) t.equal(await probe(token), 401, `${what}: still refused`);
});
