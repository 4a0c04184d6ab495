// Every protected route refuses a missing, forged, alg:none, expired or malformed token.
import t from 'tap';
import { post, tokenFor, TEST_SECRET } from '../../kit/index.ts';
import { startApp, type InProcessServer as Server } from '../../helpers/app.ts';

const entry = new URL('../../fixtures/http-app.ts', import.meta.url).pathname;
let server: Server;
t.before(async () => {
  server = await startApp({ entry });
});
t.teardown(() => server.stop());

function b64(x: unknown): string {
  return Buffer.from(JSON.stringify(x)).toString('base64url');
}

async function badTokens(): Promise<Record<string, string>> {
  const now = Math.floor(Date.now() / 1000);
  const good = await tokenFor('mallory', { server });
  const [h, p] = good.split('.') as [string, string];
  return {
    forged: await tokenFor('mallory', { server, secret: 'not-the-server-secret-not-the-server-secret' }),
    'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ user_id: 'mallory', exp: now + 3600, iat: now })}.`,
    'alg HS512 with the right secret': await tokenFor('mallory', { server, alg: 'HS512' }),
    expired: await tokenFor('mallory', { server, expiresIn: now - 10 }),
    'payload swapped': `${h}.${b64({ user_id: 'admin', role: 'admin', exp: now + 3600, iat: now })}.${good.split('.')[2]}`,
    malformed: 'not.a.jwt',
    'no user_id': `${h}.${p}`.replace(p, b64({ exp: now + 3600 })) + '.x',
  };
}

t.test('protected routes refuse bad tokens with 401 UNAUTHORIZED', async (t) => {
  const protectedRoutes = ['/walker/Whoami', '/walker/AddNote', '/function/secret', `/walker/ReadNote/${'a'.repeat(32)}`];
  const tokens = await badTokens();
  for (const path of protectedRoutes) {
    const none = await post(`${server.url}${path}`, { text: 'x' });
    t.equal(none.status, 401, `${path} without a token`);
    t.match(none.body, { ok: false, error: { code: 'UNAUTHORIZED' } });
    for (const [name, token] of Object.entries(tokens)) {
      const res = await post(`${server.url}${path}`, { text: 'x' }, { authorization: `Bearer ${token}` });
      t.equal(res.status, 401, `${path} with a ${name} token`);
      t.equal(res.body.error.code, 'UNAUTHORIZED');
    }
    const wrongScheme = await post(`${server.url}${path}`, { text: 'x' }, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` });
    t.equal(wrongScheme.status, 401, `${path} with Basic auth`);
  }
  const good = await tokenFor('alice', { server });
  const ok = await post(`${server.url}/walker/Whoami`, {}, { authorization: `Bearer ${good}` });
  t.equal(ok.status, 200, 'a good token still works');
  for (const variant of [`${good}=`, `${good}==`, good.replace(/-/g, '+').replace(/_/g, '/')]) {
    if (variant === good) continue;
    t.equal((await post(`${server.url}/walker/Whoami`, {}, { authorization: `Bearer ${variant}` })).status, 401, 'a re-encoded signature is refused');
  }
});

t.test('a bad token on a public route is refused too, not silently anonymous', async (t) => {
  const res = await post(`${server.url}/walker/Echo`, { msg: 'x' }, { authorization: 'Bearer not.a.jwt' });
  t.equal(res.status, 401);
  t.equal((await post(`${server.url}/walker/Echo`, { msg: 'x' })).status, 200, 'anonymous is fine');
});

t.test('the test secret is long enough to be accepted in production', async (t) => {
  t.ok(TEST_SECRET.length >= 32);
});
