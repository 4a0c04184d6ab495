// Issue 9, items 1, 3, 10, 12, 14, 15 against a real server: budgets, bounds,
// normalisation, token lifetimes and tokens of users that do not exist.
import t from 'tap';
import { spawn } from 'node:child_process';
import { SignJWT } from 'jose';
import { bearer, GOOD_PASSWORD, login, register } from '../../helpers/identity.ts';
import { post, startServer, TEST_SECRET, tokenFor, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;
const BIN = new URL('../../../bin/svc.mjs', import.meta.url).pathname;
let server: Server;

t.before(async () => {
  server = await startServer({
    entry,
    workers: 2,
    env: { SVC_LOGIN_SUCCESSES_PER_IDENTITY: '3', SVC_REGISTER_ATTEMPTS_PER_ADDRESS: '6', ADMIN_USERNAME: 'limits_admin', ADMIN_DEFAULT_PASSWORD: 'admin password for limits' },
  });
});
t.teardown(() => server.stop());

t.test('successful logins have a budget of their own per account', async (t) => {
  await register(server.url, 'budget_b');
  await register(server.url, 'budget_c');
  for (let i = 0; i < 3; i++) t.equal((await login(server.url, 'budget_b')).status, 200, `login ${i + 1}`);
  const spent = await login(server.url, 'budget_b');
  t.equal(spent.status, 429, 'the fourth success in the window is refused');
  t.equal(spent.body.error.code, 'TOO_MANY_REQUESTS');
  t.ok(Number(spent.headers.get('retry-after')) > 0, 'with Retry-After');
  t.equal((await login(server.url, 'budget_b', 'a wrong password')).status, 429, 'a wrong password too: the answer tells nothing');
  t.equal((await login(server.url, 'budget_c')).status, 200, 'another account is not limited');
});

t.test('POST /user/register is limited per client address', async (t) => {
  // Two registrations above: four more fit the budget of six.
  for (let i = 0; i < 4; i++) await register(server.url, `reg_user_${i}`);
  const refused = await post(`${server.url}/user/register`, { identities: [{ type: 'username', value: 'reg_user_x' }], credential: { type: 'password', password: GOOD_PASSWORD } });
  t.equal(refused.status, 429);
  t.equal(refused.body.error.code, 'TOO_MANY_REQUESTS');
  t.ok(refused.headers.get('retry-after'));
});

t.test('emails are normalised before they are validated', async (t) => {
  const fresh = await startServer({ entry });
  t.teardown(() => fresh.stop());
  const reg = (value: string) => post(`${fresh.url}/user/register`, { identities: [{ type: 'email', value }], credential: { type: 'password', password: GOOD_PASSWORD } });
  const sneaky = await reg('frank\uff20x@example.com'); // a fullwidth @ becomes a second @
  t.equal(sneaky.status, 400);
  t.match(sneaky.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'identities[0].value' }] });
  t.equal((await reg('\uff26\uff32\uff21\uff2e\uff2b@example.com')).status, 201, 'fullwidth letters are letters');
  t.equal((await login(fresh.url, 'frank@example.com', GOOD_PASSWORD, 'email')).status, 200, 'and the account is found by its plain form');
});

t.test('string fields of the built-in routes are bounded before any work', async (t) => {
  const long = 'x'.repeat(400);
  const cases: [string, unknown][] = [
    ['/admin/login', { username: 'a'.repeat(100_000), password: 'x' }],
    ['/admin/login', { username: 'admin', password: 'p'.repeat(2000) }],
    ['/user/login', { identity: { type: 'username', value: long }, credential: { type: 'password', password: 'x' } }],
    ['/user/refresh-token', { token: 't'.repeat(5000) }],
    ['/user/verify-identity', { token: long }],
    ['/user/reset-password', { token: long, new_password: GOOD_PASSWORD }],
    ['/user/forgot-password', { identity: { type: 'email', value: `${long}@example.com` } }],
  ];
  for (const [path, body] of cases) {
    const res = await post(`${server.url}${path}`, body);
    t.equal(res.status, 400, `${path}: 400`);
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
});

t.test('tokens living longer than max_token_days are refused', async (t) => {
  const user = await tokenFor('long_lived', { server }); // makes the user exist
  t.equal((await post(`${server.url}/walker/ListTodos`, {}, bearer(user))).status, 200);
  const sign = (exp: number) =>
    new SignJWT({ user_id: 'long_lived', role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(exp).sign(new TextEncoder().encode(TEST_SECRET));
  const now = Math.floor(Date.now() / 1000);
  const forever = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from(`{"user_id":"long_lived","iat":${now},"exp":1e308}`).toString('base64url')}`;
  const { createHmac } = await import('node:crypto');
  const huge = `${forever}.${createHmac('sha256', TEST_SECRET).update(forever).digest('base64url')}`;
  for (const [name, token] of [
    ['exp 1e308', huge],
    ['400 days', await sign(now + 400 * 86400)],
  ] as const) {
    const res = await post(`${server.url}/walker/ListTodos`, {}, bearer(token));
    t.equal(res.status, 401, `${name}: refused`);
    t.match(res.body.error, { code: 'UNAUTHORIZED', message: /max_token_days/ });
  }
  t.equal((await post(`${server.url}/walker/ListTodos`, {}, bearer(await sign(now + 300 * 86400)))).status, 200, '300 days is fine');
});

t.test('svc token refuses --days above max_token_days', async (t) => {
  const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const p = spawn(process.execPath, [BIN, 'token', 'someone', entry, '--days', '400'], { env: { ...process.env, SVC_DATA_DIR: server.dataDir, JWT_SECRET: TEST_SECRET } });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('exit', (code) => resolve({ code, stderr }));
  });
  t.equal(run.code, 1);
  t.match(run.stderr, /--days 400 is longer than \[scale.jwt\] max_token_days \(365\)/);
});

function svcToken(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, 'token', ...args], { env: { ...process.env, SVC_DATA_DIR: server.dataDir, JWT_SECRET: TEST_SECRET } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d));
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test('svc token: a service account an admin can manage; the role is the account’s; admin tokens live one session', async (t) => {
  const made = await svcToken(['robot-1', entry, '--create']);
  t.equal(made.code, 0, made.stderr);
  t.match(made.stderr, /created the service account robot-1/);
  t.equal((await post(`${server.url}/walker/ListTodos`, {}, bearer(made.stdout.trim()))).status, 200, 'its token works');
  const promote = await svcToken(['robot-1', entry, '--role', 'admin']);
  t.equal(promote.code, 1, 'an existing user’s role is not changed by minting a token');
  t.match(promote.stderr, /robot-1 has the role user, not admin/);
  const admin = await post(`${server.url}/admin/login`, { username: 'limits_admin', password: 'admin password for limits' });
  const changed = await fetch(`${server.url}/user/password`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...bearer(admin.body.data.token) },
    body: JSON.stringify({ current_password: 'admin password for limits', new_password: 'limits admin has a new one' }),
  });
  const adminToken = ((await changed.json()) as { data: { token: string } }).data.token;
  const disabled = await fetch(`${server.url}/admin/users/robot-1`, { method: 'PUT', headers: { 'content-type': 'application/json', ...bearer(adminToken) }, body: JSON.stringify({ status: 'disabled' }) });
  t.equal(disabled.status, 200, 'an admin finds a service account by its id and disables it');
  t.equal((await post(`${server.url}/walker/ListTodos`, {}, bearer(made.stdout.trim()))).status, 401, 'its token stops working');
  const longAdmin = await svcToken(['robot-admin', entry, '--create', '--role', 'admin', '--days', '30']);
  t.equal(longAdmin.code, 1);
  t.match(longAdmin.stderr, /an admin token lives at most \[scale.admin\] session_expiry_hours \(24 h\)/);
  const sign = (exp: string) =>
    new SignJWT({ user_id: '00000000-0000-0000-0000-000000000000', role: 'admin' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(exp).sign(new TextEncoder().encode(TEST_SECRET));
  const refused = await fetch(`${server.url}/admin/users`, { headers: bearer(await sign('3d')) });
  t.equal(refused.status, 401, 'an admin token signed elsewhere for 3 days is refused');
  t.match(((await refused.json()) as { error: { message: string } }).error.message, /an admin token lives at most 24 hours/);
  t.equal((await fetch(`${server.url}/admin/users`, { headers: bearer(await sign('2h')) })).status, 200, 'for 2 hours it is fine');
});

t.test('a correctly signed token of a user that does not exist runs nothing', async (t) => {
  const ghost = await tokenFor('never-registered'); // signed with the server's secret, no such user
  const walker = await post(`${server.url}/walker/ListTodos`, {}, bearer(ghost));
  t.equal(walker.status, 401, 'private walker: 401');
  t.match(walker.body.error, { code: 'UNAUTHORIZED', message: /does not exist/ });
  t.equal((await post(`${server.url}/walker/CreateTodo`, { title: 'x' }, bearer(ghost))).status, 401, 'even a public walker with that token');
  t.equal((await fetch(`${server.url}/user/me`, { headers: bearer(ghost) })).status, 401, '/user/me');
  t.equal((await post(`${server.url}/user/refresh-token`, { token: ghost })).status, 401, 'refresh');
  const real = await tokenFor('now-registered', { server });
  t.equal((await post(`${server.url}/walker/ListTodos`, {}, bearer(real))).status, 200, 'once the user exists, its token works');
});
