// Abuse resistance: rate limits on login and forgot-password (per identity and
// per client address, shared by every worker), and every protected identity
// route refusing a missing, forged, alg:none or expired token.
import t from 'tap';
import { bearer, GOOD_PASSWORD, login, register, tokenOf } from '../../helpers/identity.ts';
import { post, startServer, tokenFor, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;
let server: Server;
t.before(async () => {
  server = await startServer({
    entry,
    workers: 2,
    env: { SVC_LOGIN_ATTEMPTS_PER_IDENTITY: '3', SVC_LOGIN_ATTEMPTS_PER_ADDRESS: '12', ADMIN_DEFAULT_PASSWORD: 'admin password for tests', ADMIN_USERNAME: 'root_admin' },
  });
});
t.teardown(() => server.stop());

function b64(x: unknown): string {
  return Buffer.from(JSON.stringify(x)).toString('base64url');
}

t.test('login: failures per identity are limited with a 429 envelope; successes do not count', async (t) => {
  await register(server.url, 'ivan_i');
  for (let i = 0; i < 5; i++) t.equal((await login(server.url, 'ivan_i')).status, 200, `good login ${i + 1} is not counted`);
  for (let i = 0; i < 3; i++) t.equal((await login(server.url, 'ivan_i', 'wrong password here')).status, 401, `failure ${i + 1}`);
  const limited = await login(server.url, 'IVAN_I', GOOD_PASSWORD);
  t.equal(limited.status, 429, 'the next attempt, even with the right password and another case, is refused');
  t.match(limited.body, { ok: false, error: { code: 'TOO_MANY_REQUESTS', message: /retry in \d+ s/, details: { retry_after_seconds: Number } } });
  t.equal(limited.headers.get('retry-after'), String(limited.body.error.details.retry_after_seconds), 'Retry-After says the same');
  t.equal((await login(server.url, 'nobody_x', 'wrong password here')).status, 401, 'another identity is not limited yet');
});

t.test("login: all identities of an account share one budget", async (t) => {
  await register(server.url, 'jane_j', { email: 'jane_j@example.com' });
  for (let i = 0; i < 3; i++) t.equal((await login(server.url, 'jane_j', 'wrong password here')).status, 401);
  t.equal((await login(server.url, 'jane_j@example.com')).status, 429, 'the email identity is limited too');
});

t.test('PUT /user/password: guesses of the current password are limited', async (t) => {
  await register(server.url, 'karl_k');
  const token = await tokenOf(server.url, 'karl_k');
  const change = (current: string) =>
    fetch(`${server.url}/user/password`, { method: 'PUT', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify({ current_password: current, new_password: 'karl picked another one' }) });
  for (let i = 0; i < 3; i++) t.equal((await change(`guess number ${i}`)).status, 400, `wrong guess ${i + 1}`);
  const limited = await change('guess number 4');
  t.equal(limited.status, 429, 'a wrong guess past the budget is refused');
  t.equal(((await limited.json()) as any).error.code, 'TOO_MANY_REQUESTS');
  t.equal((await login(server.url, 'karl_k', 'a wrong one again')).status, 429, 'the guesses spent the account’s login budget');
  const right = await change(GOOD_PASSWORD);
  t.equal(right.status, 200, 'the right current password is never refused for rate reasons');
});

t.test('send-verification: limited per user', async (t) => {
  await register(server.url, 'lena_l', { email: 'lena_l@example.com' });
  const token = await tokenOf(server.url, 'lena_l');
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await post(`${server.url}/user/send-verification`, { identity: { type: 'email', value: 'lena_l@example.com' } }, bearer(token))).status);
  t.same(statuses.slice(0, 5), [503, 503, 503, 503, 503], 'no emailer here: EMAIL_DISABLED');
  t.equal(statuses[5], 429);
});

t.test('forgot-password: limited per identity', async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await post(`${server.url}/user/forgot-password`, { identity: { type: 'email', value: 'target@example.com' } })).status);
  t.same(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
  t.equal(statuses[5], 429);
});

t.test('every protected identity route refuses a missing, forged, alg:none or expired token', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const victim = '00000000-0000-0000-0000-000000000000';
  const good = await tokenFor(victim, { server, role: 'admin' });
  const [h] = good.split('.') as [string, string];
  const bad: Record<string, string | undefined> = {
    missing: undefined,
    forged: await tokenFor(victim, { server, role: 'admin', secret: 'not-the-server-secret-not-the-server-secret' }),
    'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ user_id: victim, role: 'admin', exp: now + 3600, iat: now })}.`,
    expired: await tokenFor(victim, { server, role: 'admin', expiresIn: now - 10 }),
    'payload swapped': `${h}.${b64({ user_id: victim, role: 'admin', exp: now + 3600, iat: now })}.${good.split('.')[2]}`,
  };
  const routes: [string, string, unknown?][] = [
    ['GET', '/user/me'],
    ['PUT', '/user/password', { current_password: 'a', new_password: 'b' }],
    ['POST', '/user/add-identity', { identity: { type: 'email', value: 'a@b.cd' } }],
    ['POST', '/user/send-verification', { identity: { type: 'email', value: 'a@b.cd' } }],
    ['GET', '/admin/users'],
    ['POST', '/admin/users', { username: 'someone' }],
    ['GET', '/admin/users/root_admin'],
    ['PUT', '/admin/users/root_admin', { status: 'disabled' }],
    ['DELETE', '/admin/users/ivan_i'],
    ['POST', '/admin/users/ivan_i/force-password-reset'],
  ];
  for (const [method, path, body] of routes) {
    for (const [name, token] of Object.entries(bad)) {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...(token ? bearer(token) : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      t.equal(res.status, 401, `${method} ${path} with a ${name} token`);
      t.equal(((await res.json()) as any).error.code, 'UNAUTHORIZED');
    }
  }
  for (const [name, token] of Object.entries(bad)) {
    if (!token) continue;
    t.equal((await post(`${server.url}/user/refresh-token`, { token })).status, 401, `refresh-token with a ${name} token`);
  }
  t.equal((await fetch(`${server.url}/user/me`, { headers: bearer(good) })).status, 200, 'the good token passes (the checks are not blanket refusals)');
  t.equal((await fetch(`${server.url}/admin/users/ivan_i`, { headers: bearer(good) })).status, 200);
});

t.test('a user token is not an admin token', async (t) => {
  await register(server.url, 'judy_j');
  const token = await tokenOf(server.url, 'judy_j');
  const res = await fetch(`${server.url}/admin/users`, { headers: bearer(token) });
  t.equal(res.status, 403);
  t.equal(((await res.json()) as any).error.code, 'FORBIDDEN');
  const forgedRole = await tokenFor('some-user', { server, role: 'admin', secret: 'not-the-server-secret-not-the-server-secret' });
  t.equal((await fetch(`${server.url}/admin/users`, { headers: bearer(forgedRole) })).status, 401);
  const adminLogin = await post(`${server.url}/admin/login`, { username: 'judy_j', password: GOOD_PASSWORD });
  t.equal(adminLogin.status, 403, 'the admin login refuses a non-admin');
});

t.test('login: attempts per client address are limited across identities', async (t) => {
  let status = 0;
  let tries = 0;
  // Last: it spends the whole address budget (12), partly spent by the tests above.
  while (tries < 20) {
    tries++;
    status = (await login(server.url, `spray_${tries}`, 'wrong password here')).status;
    if (status === 429) break;
  }
  t.equal(status, 429, `limited after ${tries} sprayed names`);
  t.ok(tries <= 12, 'within the address budget');
});
