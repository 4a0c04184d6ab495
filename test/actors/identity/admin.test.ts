// The bootstrap admin, the forced first password change (enforced by the
// server), protected accounts and every /admin/* user endpoint.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { bearer, claimsOf, GOOD_PASSWORD, login, register, tokenOf } from '../../helpers/identity.ts';
import { post } from '../../kit/index.ts';
import { startApp, type InProcessServer as Server } from '../../helpers/app.ts';
import { SqliteUsersRepository } from '../../../stores/sqlite/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;

async function call(server: Server, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? bearer(token) : {}) },
    body: body === undefined || method === 'GET' ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

t.test('without ADMIN_DEFAULT_PASSWORD: a random password, printed once and kept under the data folder', async (t) => {
  const first = await startApp({ entry });
  const line = await first.waitFor(/admin account "admin" created/);
  const printed = /: (\S+)$/.exec(line)?.[1] as string;
  t.ok(printed && printed.length >= 16, 'a long random password is printed');
  const file = join(first.dataDir, 'admin_password');
  t.equal(readFileSync(file, 'utf8').trim(), printed, 'and kept in admin_password');
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by the owner only');
  t.match(first.output(), /must change that password at first login/);
  const res = await post(`${first.url}/admin/login`, { username: 'admin', password: printed });
  t.equal(res.status, 200);
  t.equal(res.body.data.must_change_password, true);
  for (const guess of ['admin', 'password', 'admin123', 'changeme']) t.equal((await post(`${first.url}/admin/login`, { username: 'admin', password: guess })).status, 401, `no fixed default (${guess})`);
  await first.stop();
  const second = await startApp({ entry, env: { SVC_DATA_DIR: first.dataDir } });
  t.teardown(() => second.stop());
  t.notMatch(second.output(), /admin account/, 'a second start creates and prints nothing');
  t.equal((await post(`${second.url}/admin/login`, { username: 'admin', password: printed })).status, 200, 'the same admin');
  const other = await startApp({ entry });
  t.teardown(() => other.stop());
  const otherPassword = /: (\S+)$/.exec(await other.waitFor(/admin account "admin" created/))?.[1];
  t.not(otherPassword, printed, 'another data folder, another password');
});

t.test('a weak ADMIN_DEFAULT_PASSWORD stops the start with a clear message', async (t) => {
  await t.rejects(startApp({ entry, env: { ADMIN_DEFAULT_PASSWORD: 'admin' } }), /ADMIN_DEFAULT_PASSWORD: must be at least 8 characters/);
});

let server: Server;
let admin = '';
t.test('setup: admin from [scale.admin] env', async () => {
  server = await startApp({ entry, env: { ADMIN_USERNAME: 'boss', ADMIN_EMAIL: 'boss@example.com', ADMIN_DEFAULT_PASSWORD: 'initial chief password' } });
});
t.teardown(() => server?.stop());

t.test('the first admin login must change the password: the server refuses everything else', async (t) => {
  t.match(server.output(), /admin account "boss" created with ADMIN_DEFAULT_PASSWORD/);
  const res = await post(`${server.url}/admin/login`, { username: 'boss', password: 'initial chief password' });
  t.equal(res.status, 200);
  const forced = res.body.data.token as string;
  t.equal(claimsOf(forced).pwd_change, true);
  t.equal(claimsOf(forced).role, 'admin');
  const viaUserLogin = await login(server.url, 'boss@example.com', 'initial chief password');
  t.equal(viaUserLogin.body.data.must_change_password, true, '/user/login says so too');
  for (const [method, path] of [
    ['GET', '/admin/users'],
    ['POST', '/walker/ListTodos'],
    ['POST', '/user/add-identity'],
    ['DELETE', '/admin/users/someone'],
  ] as const) {
    const r = await call(server, method, path, forced, {});
    t.equal(r.status, 403, `${method} ${path} before the change`);
    t.equal(r.body.error.code, 'PASSWORD_CHANGE_REQUIRED');
  }
  t.equal((await call(server, 'GET', '/user/me', forced)).status, 200, '/user/me is allowed');
  const changed = await call(server, 'PUT', '/user/password', forced, { current_password: 'initial chief password', new_password: 'the real chief secret' });
  t.equal(changed.status, 200);
  admin = changed.body.data.token;
  t.notOk(claimsOf(admin).pwd_change, 'the new token carries no pwd_change');
  t.equal((await call(server, 'GET', '/admin/users', forced)).status, 401, 'the forced token is revoked');
  t.equal((await call(server, 'GET', '/admin/users', admin)).status, 200, 'the new token works');
  const again = await post(`${server.url}/admin/login`, { username: 'boss', password: 'the real chief secret' });
  t.equal(again.body.data.must_change_password, false);
  const session = claimsOf(again.body.data.token);
  t.equal((session.exp as number) - (session.iat as number), 24 * 3600, 'an admin session lasts [scale.admin] session_expiry_hours');
});

t.test('list, search and page users', async (t) => {
  for (const name of ['kate_k', 'kim_k', 'leo_l']) await register(server.url, name, { email: `${name}@example.com` });
  const all = await call(server, 'GET', '/admin/users', admin);
  t.equal(all.status, 200);
  t.ok(all.body.data.total >= 5, 'guest, admin and three users');
  t.ok(all.body.data.users.every((u: any) => !JSON.stringify(u).includes('$argon2')), 'no hashes');
  const k = await call(server, 'GET', '/admin/users?search=_K', admin);
  t.same(k.body.data.users.map((u: any) => u.username).sort(), ['kate_k', 'kim_k']);
  t.equal((await call(server, 'GET', '/admin/users?search=%25', admin)).body.data.total, 0, 'LIKE wildcards in a search are literal');
  const byEmail = await call(server, 'GET', '/admin/users?search=LEO_L%40', admin);
  t.same(byEmail.body.data.users.map((u: any) => u.username), ['leo_l'], 'search by email, any case');
  const page = await call(server, 'GET', '/admin/users?limit=2&offset=1', admin);
  t.equal(page.body.data.users.length, 2);
  t.equal(page.body.data.total, all.body.data.total);
  for (const q of ['limit=x', 'limit=0', 'limit=501', 'offset=-1', 'offset=1e20', 'offset=1.5']) {
    const bad = await call(server, 'GET', `/admin/users?${q}`, admin);
    t.equal(bad.status, 400, q);
    t.equal(bad.body.error.code, 'VALIDATION_ERROR', q);
  }
  const one = await call(server, 'GET', '/admin/users/KATE_K', admin);
  t.match(one.body.data, { role: 'user', status: 'active', protected: false, identities: [{ type: 'username', value: 'kate_k' }, { type: 'email' }] });
  t.equal((await call(server, 'GET', '/admin/users/nobody_at_all', admin)).status, 404);
});

t.test('create a user: 201, a temporary password when none is given, changed at first login', async (t) => {
  const made = await call(server, 'POST', '/admin/users', admin, { username: 'mia_m', email: 'mia@example.com' });
  t.equal(made.status, 201);
  t.match(made.body.data, { user_id: String, username: 'mia_m', role: 'user', temporary_password: String });
  const first = await login(server.url, 'mia_m', made.body.data.temporary_password);
  t.equal(first.status, 200);
  t.equal(first.body.data.must_change_password, true);
  t.equal((await call(server, 'POST', '/walker/ListTodos', first.body.data.token, {})).status, 403, 'walkers wait for the change');
  const withPassword = await call(server, 'POST', '/admin/users', admin, { username: 'ned_n', password: GOOD_PASSWORD, role: 'admin' });
  t.equal(withPassword.status, 201);
  t.notOk('temporary_password' in withPassword.body.data);
  const dup = await call(server, 'POST', '/admin/users', admin, { username: 'MIA_M' });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'IDENTITY_TAKEN');
  for (const [body, field] of [
    [{ username: 'x' }, 'username.value'],
    [{ username: 'olga_o', role: 'root' }, 'role'],
    [{ username: 'olga_o', password: 'short' }, 'password'],
    [{ username: 'olga_o', email: 'nope' }, 'email.value'],
  ] as const) {
    const r = await call(server, 'POST', '/admin/users', admin, body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(r.body.error.details[0].field, field);
  }
});

t.test('edit: role, profile; disable revokes tokens and refuses login; enable again', async (t) => {
  const userToken = await tokenOf(server.url, 'kate_k');
  const edited = await call(server, 'PUT', '/admin/users/kate_k', admin, { profile: { team: 'blue' } });
  t.equal(edited.status, 200);
  t.same(edited.body.data.profile, { team: 'blue' });
  t.equal((await call(server, 'GET', '/user/me', userToken)).status, 200, 'a profile edit revokes nothing');
  const disabled = await call(server, 'PUT', '/admin/users/kate_k', admin, { status: 'disabled' });
  t.equal(disabled.body.data.status, 'disabled');
  t.equal((await call(server, 'GET', '/user/me', userToken)).status, 401, 'tokens of a disabled user are void');
  const refused = await login(server.url, 'kate_k');
  const wrong = await login(server.url, 'kate_k', 'wrong password 123');
  t.equal(refused.status, 401, 'a disabled account with the right password: refused');
  t.equal(refused.body.error.code, 'INVALID_CREDENTIALS');
  t.same([wrong.status, wrong.body.error], [refused.status, refused.body.error], 'the same answer with a wrong password: it confirms no password');
  await call(server, 'PUT', '/admin/users/kate_k', admin, { status: 'active' });
  t.equal((await login(server.url, 'kate_k')).status, 200, 'enabled again');
  const promoted = await call(server, 'PUT', '/admin/users/kim_k', admin, { role: 'admin' });
  t.equal(promoted.body.data.role, 'admin');
  const kim = await tokenOf(server.url, 'kim_k');
  t.equal((await call(server, 'GET', '/admin/users', kim)).status, 200, 'a promoted user is an admin');
  await call(server, 'PUT', '/admin/users/kim_k', admin, { role: 'user' });
  t.equal((await call(server, 'GET', '/admin/users', kim)).status, 401, 'demotion voids the admin token');
  t.equal((await call(server, 'PUT', '/admin/users/kim_k', admin, { status: 'gone' })).status, 400);
  t.equal((await call(server, 'PUT', '/admin/users/kim_k', admin, { profile: { sso: 'x' } })).status, 400);
});

t.test('force password reset: tokens void, the next login must change the password', async (t) => {
  const before = await tokenOf(server.url, 'leo_l');
  const res = await call(server, 'POST', '/admin/users/leo_l/force-password-reset', admin);
  t.equal(res.status, 200);
  t.same(res.body.data, { status: 'password_change_required', api_keys_revoked: 0 });
  t.equal((await call(server, 'GET', '/user/me', before)).status, 401);
  const next = await login(server.url, 'leo_l');
  t.equal(next.body.data.must_change_password, true);
  t.equal((await call(server, 'POST', '/walker/ListTodos', next.body.data.token, {})).status, 403);
  const changed = await call(server, 'PUT', '/user/password', next.body.data.token, { current_password: GOOD_PASSWORD, new_password: 'leo picks a new one' });
  t.equal(changed.status, 200);
  t.equal((await call(server, 'POST', '/walker/ListTodos', changed.body.data.token, {})).status, 200);
});

t.test('protected accounts cannot be deleted, disabled or demoted; admins cannot remove themselves', async (t) => {
  for (const name of ['boss', '__guest__']) {
    const del = await call(server, 'DELETE', `/admin/users/${name}`, admin);
    t.equal(del.status, 403, `delete ${name}`);
    t.equal(del.body.error.code, 'PROTECTED_ACCOUNT');
  }
  t.equal((await call(server, 'PUT', '/admin/users/boss', admin, { role: 'user' })).body.error.code, 'PROTECTED_ACCOUNT');
  t.equal((await call(server, 'PUT', '/admin/users/boss', admin, { status: 'disabled' })).body.error.code, 'PROTECTED_ACCOUNT');
  const first = await tokenOf(server.url, 'ned_n');
  const ned = (await call(server, 'PUT', '/user/password', first, { current_password: GOOD_PASSWORD, new_password: 'ned has his own now' })).body.data.token;
  t.equal((await call(server, 'DELETE', '/admin/users/ned_n', ned)).status, 400, 'no self-delete');
  t.equal((await call(server, 'PUT', '/admin/users/ned_n', ned, { status: 'disabled' })).status, 400, 'no self-disable');
  t.equal((await call(server, 'PUT', '/admin/users/ned_n', ned, { role: 'user' })).status, 400, 'no self-demotion');
  const refreshed = await post(`${server.url}/user/refresh-token`, { token: ned });
  const c = claimsOf(refreshed.body.data.token);
  t.equal((c.exp as number) - (c.iat as number), 24 * 3600, 'a refreshed admin token lives no longer than an admin session');
  t.equal((claimsOf(ned).exp as number) - (claimsOf(ned).iat as number), 24 * 3600, 'so does one from a password change');
  t.equal((await login(server.url, 'boss', 'the real chief secret')).status, 200, 'the bootstrap admin is still there');
});

t.test('protected accounts refuse a forced password reset, and profile edits by another (403 PROTECTED_ACCOUNT): nothing changes', async (t) => {
  // Another admin, signed in for real.
  t.equal((await call(server, 'POST', '/admin/users', admin, { username: 'vic_v', password: 'vic has a long one', role: 'admin' })).status, 201);
  const first = (await login(server.url, 'vic_v', 'vic has a long one')).body.data.token;
  const vic = (await call(server, 'PUT', '/user/password', first, { current_password: 'vic has a long one', new_password: 'vic changed it already' })).body.data.token as string;
  const before = { boss: (await call(server, 'GET', '/admin/users/boss', admin)).body.data, guest: (await call(server, 'GET', '/admin/users/__guest__', admin)).body.data };
  t.match(before.guest, { role: 'system', protected: true });
  const refusals: [string, string, string][] = [
    ['__guest__', admin, 'the bootstrap admin'],
    ['__guest__', vic, 'another admin'],
    ['boss', vic, 'another admin'],
  ];
  for (const [name, token, who] of refusals) {
    const reset = await call(server, 'POST', `/admin/users/${name}/force-password-reset`, token);
    t.equal(reset.status, 403, `${who}: a forced reset of ${name}`);
    t.match(reset.body, { ok: false, error: { code: 'PROTECTED_ACCOUNT', message: /protected account/ } });
    for (const body of [{ profile: { team: 'red' } }, { status: 'active', profile: { team: 'red' } }]) {
      const edit = await call(server, 'PUT', `/admin/users/${name}`, token, body);
      t.equal(edit.status, 403, `${who}: ${JSON.stringify(body)} on ${name}`);
      t.equal(edit.body.error.code, 'PROTECTED_ACCOUNT');
    }
  }
  const self = await call(server, 'POST', '/admin/users/boss/force-password-reset', admin);
  t.equal(self.status, 403, 'the bootstrap admin forcing its own reset: it changes its password itself');
  t.equal(self.body.error.code, 'PROTECTED_ACCOUNT');
  t.same((await call(server, 'GET', '/admin/users/boss', admin)).body.data, before.boss, 'the bootstrap admin is unchanged (profile, must_change_password, updated_at)');
  t.same((await call(server, 'GET', '/admin/users/__guest__', vic)).body.data, before.guest, 'the guest is unchanged');
  t.equal((await call(server, 'GET', '/user/me', admin)).status, 200, 'the bootstrap admin’s token still stands');
  const next = await login(server.url, 'boss', 'the real chief secret');
  t.equal(next.status, 200, 'it signs in with its password');
  t.notOk(next.body.data.must_change_password, 'and is not forced to change it');
  const same = await call(server, 'PUT', '/admin/users/boss', vic, { profile: before.boss.profile });
  t.equal(same.status, 200, 'a profile sent as it is changes nothing: not refused');
  for (const [name, token, body] of [['__guest__', vic, { profile: {}, status: 'active' }], ['boss', vic, { status: 'active', role: 'admin' }]] as const) {
    t.equal((await call(server, 'PUT', `/admin/users/${name}`, token, body)).status, 200, `${name} resent as it is`);
  }
  t.same((await call(server, 'GET', '/admin/users/boss', admin)).body.data, before.boss, 'resending changes nothing, updated_at included');
  t.same((await call(server, 'GET', '/admin/users/__guest__', vic)).body.data, before.guest, 'nor for the guest');
  const own = await call(server, 'PUT', '/admin/users/boss', admin, { profile: { team: 'founders' } });
  t.equal(own.status, 200, 'the bootstrap admin edits its own profile');
  t.same(own.body.data.profile, { team: 'founders' });
  const other = await call(server, 'POST', '/admin/users/vic_v/force-password-reset', admin);
  t.equal(other.status, 200, 'an admin that is not protected: reset as any user');
});

t.test('delete: the user, their identities, tokens and graph are gone; the name is free again', async (t) => {
  const token = await tokenOf(server.url, 'kim_k');
  for (const title of ['one', 'two', 'three']) t.equal((await call(server, 'POST', '/walker/CreateTodo', token, { title })).status, 200);
  const rootId = (await call(server, 'GET', '/admin/users/kim_k', admin)).body.data.root_id as string;
  const stored = () => {
    const db = new Database(join(server.dataDir, 'anchor_store.db'), { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM anchors WHERE root = ?').get(rootId) as { n: number }).n;
    } finally {
      db.close();
    }
  };
  t.equal(stored(), 7, 'kim’s graph: the root, three todos, three edges');
  const del = await call(server, 'DELETE', '/admin/users/kim_k', admin);
  t.equal(del.status, 200);
  t.match(del.body.data, { deleted: String, graph_documents_deleted: 7 });
  t.equal(stored(), 0, 'the graph is deleted from the store');
  t.equal((await call(server, 'GET', '/user/me', token)).status, 401, 'their token is void');
  t.equal((await login(server.url, 'kim_k')).status, 401);
  t.equal((await call(server, 'GET', '/admin/users/kim_k', admin)).status, 404);
  t.equal((await call(server, 'DELETE', '/admin/users/kim_k', admin)).status, 404, 'deleting twice: 404');
  await register(server.url, 'kim_k', { email: 'kim_k@example.com' });
  t.equal((await login(server.url, 'kim_k@example.com')).status, 200, 'identities are free again');
});

t.test("a deleted user's tokens stay void after a restart (an admin's too)", async (t) => {
  await register(server.url, 'otto_o');
  const user = await tokenOf(server.url, 'otto_o');
  await call(server, 'POST', '/walker/CreateTodo', user, { title: 'before' });
  const made = await call(server, 'POST', '/admin/users', admin, { username: 'pia_p', role: 'admin', password: 'pia has a long one' });
  t.equal(made.status, 201);
  const first = (await login(server.url, 'pia_p', 'pia has a long one')).body.data.token;
  const pia = (await call(server, 'PUT', '/user/password', first, { current_password: 'pia has a long one', new_password: 'pia changed it now' })).body.data.token;
  t.equal((await call(server, 'GET', '/admin/users', pia)).status, 200);
  for (const name of ['otto_o', 'pia_p']) t.equal((await call(server, 'DELETE', `/admin/users/${name}`, admin)).status, 200);
  const dataDir = server.dataDir;
  await server.stop();
  server = await startApp({ entry, env: { SVC_DATA_DIR: dataDir, ADMIN_USERNAME: 'boss', ADMIN_DEFAULT_PASSWORD: 'initial chief password' } });
  t.equal((await call(server, 'GET', '/admin/users', pia)).status, 401, "the deleted admin's token is refused");
  t.equal((await call(server, 'PUT', '/admin/users/boss', pia, { status: 'disabled' })).status, 401);
  t.equal((await call(server, 'POST', '/walker/ListTodos', user, {})).status, 401, "the deleted user's token runs no walker");
  t.equal((await call(server, 'POST', '/walker/CreateTodo', user, { title: 'ghost' })).status, 401);
  t.equal((await call(server, 'GET', '/admin/users', admin)).status, 200, 'the remaining admin still works');
});

t.test('a graph deletion cut short (the user row gone, the graph not) is finished at the next start', async (t) => {
  await register(server.url, 'quinn_q');
  const quinn = await tokenOf(server.url, 'quinn_q');
  for (const title of ['a', 'b']) await call(server, 'POST', '/walker/CreateTodo', quinn, { title });
  const { user_id: userId, root_id: rootId } = (await call(server, 'GET', '/admin/users/quinn_q', admin)).body.data as { user_id: string; root_id: string };
  const dataDir = server.dataDir;
  await server.stop();
  // As if the process died between deleting the user and deleting their graph.
  const users = SqliteUsersRepository.open(join(dataDir, 'users.db'));
  await users.delete(userId);
  t.same(await users.pendingGraphDrops(), [rootId], 'the drop is recorded with the deletion');
  await users.close();
  const count = () => {
    const db = new Database(join(dataDir, 'anchor_store.db'), { readonly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM anchors WHERE root = ?').get(rootId) as { n: number }).n;
    } finally {
      db.close();
    }
  };
  t.equal(count(), 5, 'the graph is still stored');
  server = await startApp({ entry, env: { SVC_DATA_DIR: dataDir, SVC_ACCESS_LOG: 'false' } });
  await server.waitFor(/the graph of a deleted user is deleted/);
  t.equal(count(), 0, 'the start finished it');
  const again = SqliteUsersRepository.open(join(dataDir, 'users.db'));
  t.same(await again.pendingGraphDrops(), [], 'and forgot it');
  await again.close();
});
