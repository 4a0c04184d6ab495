// Single sign-on end to end: a REAL OpenID Connect provider (`oidc-provider`, started here on
// 127.0.0.1 with its development login and consent pages) and real `svc start` servers, driven
// through the whole browser flow by an HTTP client (redirects followed by hand, the provider's
// cookies kept, its forms submitted) and by headless Chromium. One server runs two worker threads:
// pending sign-ins live in shards spread over both, so most callbacks take a state made on
// another thread. The Google preset is configured against the same provider (as the seed's
// `idp_a`), to show the alias and to make "a state started for another platform".
import { createServer, type Server as HttpServer } from 'node:http';
import { once } from 'node:events';
import t from 'tap';
// @ts-expect-error -- oidc-provider ships no type declarations (a dev-only test dependency)
import OidcProvider from 'oidc-provider';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';
import { bearer, GOOD_PASSWORD, login, register } from '../../helpers/identity.ts';
import { skipRedis, startRedis } from '../../helpers/redis.ts';
import { post, startServer, tokenFor, type Server } from '../../helpers/server.ts';
import { startCluster } from '../cluster/helpers.ts';

// Page-side names for the functions that run in the browser (this file compiles without the DOM lib).
declare const document: { title: string };
declare const localStorage: { getItem(key: string): string | null };

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;
const OIDC_CLIENT = { id: 'svc-oidc', secret: 'svc-oidc-secret-0123456789abcdef' };
const GOOGLE_CLIENT = { id: 'svc-google', secret: 'svc-google-secret-0123456789abcd' };
const ADMIN_PASSWORD = 'first chief password of the tests';
/** The public URL of a cluster's members (a load balancer that is never reached: the test delivers callbacks itself). */
const CLUSTER_HOST = 'http://svc-cluster.invalid';

/** Accounts of the provider by login name: `mallory`'s email is not verified; anyone else's is. */
function claimsOf(login: string): Record<string, unknown> {
  return {
    sub: login,
    email: `${login}@example.com`,
    email_verified: login !== 'mallory',
    name: `${login[0]?.toUpperCase()}${login.slice(1)} Tester`,
    given_name: `${login[0]?.toUpperCase()}${login.slice(1)}`,
    family_name: 'Tester',
  };
}

async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

async function listen(server: HttpServer): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

// ---- the provider, the app's page, and two svc servers -------------------------------------------

let issuer = '';
let svc: Server; // two worker threads, `?token=` (the seed's way)
let svcFragment: Server; // one worker thread, `#token=`
let clientPage = '';
let env: (host: string, extra?: Record<string, string>) => Record<string, string>;
const closers: (() => Promise<unknown> | unknown)[] = [];
t.teardown(async () => {
  for (const close of closers.reverse()) await close();
});

t.before(async () => {
  // The provider's port first: svc reads its discovery URL at start, the provider registers svc's callback URLs.
  let handler: ((req: unknown, res: unknown) => void) | undefined;
  const providerHttp = createServer((req, res) => (handler ? handler(req, res) : res.writeHead(503).end()));
  const providerPort = await listen(providerHttp);
  closers.push(() => new Promise((r) => providerHttp.close(r).closeAllConnections()));
  issuer = `http://127.0.0.1:${providerPort}`;

  // The app's page the browser is sent back to: it keeps the token (query or fragment) in localStorage.
  const page = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<!doctype html><title>app</title><script>const p = new URLSearchParams(location.hash.slice(1) || location.search.slice(1)); ` +
          `if (p.get('token')) localStorage.setItem('svc_token', p.get('token')); document.title = p.get('token') ? 'signed in' : 'error ' + p.get('error');</script>`,
      ),
  );
  clientPage = `http://127.0.0.1:${await listen(page)}/done`;
  closers.push(() => new Promise((r) => page.close(r).closeAllConnections()));

  const [port, fragmentPort] = [await freePort(), await freePort()];
  const hosts = [`http://127.0.0.1:${port}`, `http://127.0.0.1:${fragmentPort}`];
  const provider = new OidcProvider(issuer, {
    clients: [
      { client_id: OIDC_CLIENT.id, client_secret: OIDC_CLIENT.secret, grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: [...hosts, CLUSTER_HOST].flatMap((h) => [`${h}/sso/oidc/callback`, `${h}/sso/oidc/login/callback`]) },
      { client_id: GOOGLE_CLIENT.id, client_secret: GOOGLE_CLIENT.secret, grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: hosts.flatMap((h) => [`${h}/sso/google/callback`, `${h}/sso/idp_a/callback`]) },
    ],
    async findAccount(_ctx: unknown, id: string) {
      return { accountId: id, claims: async () => claimsOf(id) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name'] },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: ['a-test-cookie-key-0123456789abcdef'] },
  });
  handler = provider.callback();

  env = (host: string, extra: Record<string, string> = {}) => ({
    SVC_SSO_HOST: host,
    SVC_SSO_CLIENT_AUTH_CALLBACK_URL: clientPage,
    SVC_SSO_OIDC_CLIENT_ID: OIDC_CLIENT.id,
    SVC_SSO_OIDC_CLIENT_SECRET: OIDC_CLIENT.secret,
    SVC_SSO_OIDC_DISCOVERY_URL: `${issuer}/.well-known/openid-configuration`,
    SVC_SSO_OIDC_DISPLAY_NAME: 'Test Issuer',
    SVC_SSO_GOOGLE_CLIENT_ID: GOOGLE_CLIENT.id,
    SVC_SSO_GOOGLE_CLIENT_SECRET: GOOGLE_CLIENT.secret,
    SVC_SSO_GOOGLE_DISCOVERY_URL: `${issuer}/.well-known/openid-configuration`,
    ADMIN_DEFAULT_PASSWORD: ADMIN_PASSWORD,
    ...extra,
  });
  svc = await startServer({ entry, workers: 2, port, env: env(hosts[0] as string) });
  closers.push(() => svc.stop());
  svcFragment = await startServer({ entry, port: fragmentPort, env: env(hosts[1] as string, { SVC_SSO_CALLBACK_STYLE: 'fragment' }) });
  closers.push(() => svcFragment.stop());
  if (svc.url !== hosts[0] || svcFragment.url !== hosts[1]) throw new Error('a chosen port was taken meanwhile; run again');
});

// ---- an HTTP client playing the browser ------------------------------------------------------------

/** The provider's cookies of one browser session (names and values; the provider is one origin). */
class Jar {
  private readonly cookies = new Map<string, string>();

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      const gone = value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1] ?? '') < Date.now()));
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
}

/** One request without following redirects; the provider's cookies sent and kept. */
async function hop(url: string, jar: Jar, form?: Record<string, string>): Promise<Response> {
  const toProvider = url.startsWith(issuer);
  const res = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { ...(toProvider && jar.header() ? { cookie: jar.header() } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  if (toProvider) jar.keep(res);
  return res;
}

/**
 * Start a sign-in at `start` (svc's /sso/…/login) and sign in at the
 * provider as `name` (its login form, then its consent form): the URL the
 * provider sends the browser back to (svc's callback, with code and state),
 * not visited yet.
 */
async function signInAtProvider(start: string, name: string): Promise<string> {
  const jar = new Jar();
  let res = await hop(start, jar);
  if (res.status !== 302) throw new Error(`${start}: ${res.status} ${await res.text()}`);
  let url = res.headers.get('location') as string;
  for (let steps = 0; steps < 20; steps++) {
    if (!url.startsWith(issuer)) return url;
    res = await hop(url, jar);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location') as string, url).href;
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt) throw new Error(`the provider answered ${res.status}: ${html.slice(0, 500)}`);
    res = await hop(new URL(action.replace(/&amp;/g, '&'), url).href, jar, prompt === 'login' ? { prompt, login: name, password: 'any password' } : { prompt });
    url = new URL(res.headers.get('location') as string, url).href;
  }
  throw new Error('the provider kept redirecting');
}

/** Visit svc's callback: where it sends the browser (the app's page with token or error). */
async function callback(url: string, form = false): Promise<{ status: number; location: URL; params: URLSearchParams; headers: Headers }> {
  const u = new URL(url);
  const res = form
    ? await fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: u.search.slice(1) })
    : await fetch(url, { redirect: 'manual' });
  const location = new URL(res.headers.get('location') ?? 'http://none.invalid/');
  return { status: res.status, location, params: location.hash ? new URLSearchParams(location.hash.slice(1)) : location.searchParams, headers: res.headers };
}

/** A whole sign-in with the HTTP client: the token svc hands the app's page. */
async function signIn(name: string, platform = 'oidc', server: Server = svc): Promise<string> {
  const r = await callback(await signInAtProvider(`${server.url}/sso/${platform}/login`, name));
  const token = r.params.get('token');
  if (r.status !== 302 || !token) throw new Error(`sign-in of ${name}: ${r.status} ${r.location.href}`);
  return token;
}

/** Where a sign-in started at svc sends the browser: its state (the sign-in waits for its callback). */
async function started(platform = 'oidc'): Promise<string> {
  const res = await fetch(`${svc.url}/sso/${platform}/login`, { redirect: 'manual' });
  return new URL(res.headers.get('location') as string).searchParams.get('state') as string;
}

async function me(token: string, server: Server = svc) {
  const res = await fetch(`${server.url}/user/me`, { headers: bearer(token) });
  return { status: res.status, body: (await res.json()) as any };
}

let admin: Promise<string> | undefined;
/** The bootstrap admin's token (its first login must change the password: done once). */
function adminToken(): Promise<string> {
  admin ??= (async () => {
    const first = await post(`${svc.url}/admin/login`, { username: 'admin', password: ADMIN_PASSWORD });
    const changed = await post(`${svc.url}/user/password`, { current_password: ADMIN_PASSWORD, new_password: 'changed chief password of the tests' }, bearer(first.body.data.token), 'PUT');
    return changed.body.data.token as string;
  })();
  return admin;
}

// ---- the tests ----------------------------------------------------------------------------------

let alice = '';
let aliceId = '';

t.test('the first sign-in creates the account: the token works, the identities show the provider and a verified email', async (t) => {
  const callbackUrl = await signInAtProvider(`${svc.url}/sso/oidc/login`, 'alice');
  t.match(callbackUrl, `${svc.url}/sso/oidc/callback?`, 'the provider sends the browser back to svc');
  const r = await callback(callbackUrl);
  t.equal(r.status, 302);
  t.equal(`${r.location.origin}${r.location.pathname}`, clientPage, 'then svc sends it to the app’s page');
  t.equal(r.headers.get('cache-control'), 'no-store', 'a redirect carrying a token is not cached');
  t.equal(r.headers.get('referrer-policy'), 'no-referrer');
  alice = r.params.get('token') as string;
  const who = await me(alice);
  t.equal(who.status, 200);
  aliceId = who.body.data.user_id;
  t.match(who.body.data.identities, [
    { type: 'email', value: 'alice@example.com', verified: true, is_recovery: true },
    { type: 'sso', provider: 'oidc' },
  ]);
  t.notOk(JSON.stringify(who.body).includes('external_id'), '/user/me shows no external id');
  t.same(who.body.data.profile, { sso: { oidc: { display_name: 'Alice Tester', first_name: 'Alice', last_name: 'Tester' } } });
  // Again: the same account.
  t.equal((await me(await signIn('alice'))).body.data.user_id, aliceId, 'the second sign-in finds the account');
});

t.test('a user registered with a password and the same email gets the provider linked on sign-in', async (t) => {
  const bobId = await register(svc.url, 'bob', { email: 'bob@example.com' });
  const token = await signIn('bob');
  const who = await me(token);
  t.equal(who.body.data.user_id, bobId, 'the same user');
  t.match(who.body.data.identities, [{ type: 'username', value: 'bob' }, { type: 'email', value: 'bob@example.com', verified: true }, { type: 'sso', provider: 'oidc' }]);
  t.equal((await login(svc.url, 'bob')).status, 200, 'the password still signs in');
  // Unlinking keeps the account (it has a password); for an SSO-only account it is the last way in.
  const bobUnlink = await fetch(`${svc.url}/user/sso/oidc`, { method: 'DELETE', headers: bearer(token) });
  t.equal(bobUnlink.status, 200);
  t.same(((await bobUnlink.json()) as any).data, { status: 'unlinked', platform: 'oidc' });
  t.notOk((await me(token)).body.data.identities.some((i: { type: string }) => i.type === 'sso'), 'the sso identity is gone');
  t.equal((await login(svc.url, 'bob')).status, 200, 'and the account stays');
  const again = await fetch(`${svc.url}/user/sso/oidc`, { method: 'DELETE', headers: bearer(token) });
  t.equal(again.status, 404, 'nothing left to unlink');
  const last = await fetch(`${svc.url}/user/sso/oidc`, { method: 'DELETE', headers: bearer(alice) });
  t.equal(last.status, 409);
  t.equal(((await last.json()) as any).error.code, 'SSO_LAST_SIGN_IN');
  t.equal((await fetch(`${svc.url}/user/sso/oidc`, { method: 'DELETE' })).status, 401, 'no token: 401');
});

t.test('an unverified email is refused: no account is created', async (t) => {
  const r = await callback(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'mallory'));
  t.equal(r.status, 302);
  t.equal(r.params.get('error'), 'SSO_EMAIL_UNVERIFIED');
  t.match(r.params.get('message'), /no verified email/);
  t.equal(r.params.get('token'), null);
  const admin = await adminToken();
  const list = await fetch(`${svc.url}/admin/users?search=mallory`, { headers: bearer(admin) });
  t.equal(((await list.json()) as any).data.total, 0, 'no user with that email');
  t.equal((await post(`${svc.url}/user/register`, { identities: [{ type: 'email', value: 'mallory@example.com' }], credential: { type: 'password', password: GOOD_PASSWORD } })).status, 201, 'the email is free to register');
});

t.test('a replayed or foreign state, a wrong PKCE verifier, a callback without code, a provider error: each sent back with its error', async (t) => {
  const expectError = async (url: string, code: string, what: string, form = false) => {
    const r = await callback(url, form);
    t.equal(r.status, 302, `${what}: a redirect`);
    t.equal(`${r.location.origin}${r.location.pathname}`, clientPage);
    t.equal(r.params.get('error'), code, `${what}: ${code}`);
    t.ok(r.params.get('message'), 'with a message');
    t.equal(r.params.get('token'), null);
    return r.params.get('message') as string;
  };
  const good = await signInAtProvider(`${svc.url}/sso/oidc/login`, 'carol');
  t.ok((await callback(good)).params.get('token'), 'the first use signs in');
  await expectError(good, 'SSO_INVALID_STATE', 'the same callback URL again');

  // A code for one sign-in, presented with the state of another (of another platform / made up).
  const fresh = new URL(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'carol'));
  const withState = (state: string) => {
    const u = new URL(fresh);
    u.searchParams.set('state', state);
    return u.href;
  };
  await expectError(withState(await started('google')), 'SSO_INVALID_STATE', 'a state started for another platform');
  await expectError(withState('a-state-svc-never-handed-out-0123456789'), 'SSO_INVALID_STATE', 'a made-up state');
  const pkce = await expectError(withState(await started('oidc')), 'SSO_EXCHANGE_FAILED', 'another sign-in’s state: its PKCE verifier does not fit the code');
  t.match(pkce, /invalid_grant/, 'the provider refused the code');

  const noCode = new URL(fresh);
  noCode.searchParams.delete('code');
  noCode.searchParams.set('state', await started('oidc'));
  await expectError(noCode.href, 'SSO_MISSING_CODE', 'a callback without code');
  noCode.searchParams.set('state', await started('oidc'));
  await expectError(noCode.href, 'SSO_MISSING_CODE', 'a callback without code, posted', true);
  const denied = new URL(noCode);
  denied.searchParams.set('state', await started('oidc'));
  denied.searchParams.set('error', 'access_denied');
  denied.searchParams.set('error_description', 'End-User aborted interaction');
  t.match(await expectError(denied.href, 'SSO_PROVIDER_ERROR', 'the provider refused'), /access_denied: End-User aborted interaction/);
});

t.test('the callback posted (form_post), the older /login/callback path, and the seed’s idp_a alias (Google preset)', async (t) => {
  const posted = await callback(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'dave'), true);
  t.ok(posted.params.get('token'), 'POST /sso/oidc/callback signs in');
  const older = new URL(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'dave'));
  older.pathname = '/sso/oidc/login/callback';
  t.ok((await callback(older.href)).params.get('token'), 'GET /sso/oidc/login/callback signs in');
  const viaAlias = await signInAtProvider(`${svc.url}/sso/idp_a/login`, 'erin');
  t.match(viaAlias, `${svc.url}/sso/idp_a/callback?`, 'the redirect URI keeps the alias');
  const token = (await callback(viaAlias)).params.get('token') as string;
  t.match((await me(token)).body.data.identities, [{ type: 'email', value: 'erin@example.com' }, { type: 'sso', provider: 'google' }], 'stored as google');
});

t.test('unconfigured providers answer 501 with a descriptive message; unknown ones 404, never a redirect', async (t) => {
  for (const platform of ['microsoft', 'idp_c', 'github', 'idp_b']) {
    const res = await fetch(`${svc.url}/sso/${platform}/login`, { redirect: 'manual' });
    t.equal(res.status, 501, `${platform}: 501`);
    const body = (await res.json()) as any;
    t.equal(body.error.code, 'SSO_NOT_CONFIGURED');
    t.match(body.error.message, /client_id and client_secret in \[scale\.sso\.(microsoft|github)\].*SVC_SSO_(MICROSOFT|GITHUB)_CLIENT_ID/);
  }
  for (const path of ['/sso/facebook/login', '/sso/facebook/register', '/sso/facebook/callback?state=x&code=y', '/sso/idp_d/login']) {
    const res = await fetch(`${svc.url}${path}`, { redirect: 'manual' });
    t.equal(res.status, 404, `${path}: 404`);
    t.equal(((await res.json()) as any).error.code, 'NOT_FOUND');
  }
  const reg = await fetch(`${svc.url}/sso/oidc/register`, { redirect: 'manual' });
  t.equal(reg.status, 302, '/register sends the browser to the provider too');
  t.match(reg.headers.get('location'), `${issuer}/auth?`);
});

t.test('admin: the providers, a user’s accounts; without, with a forged or an expired token: 401; a user’s token: 403', async (t) => {
  const admin = await adminToken();
  const providers = await fetch(`${svc.url}/admin/sso/providers`, { headers: bearer(admin) });
  t.equal(providers.status, 200);
  const list = ((await providers.json()) as any).data.providers;
  t.match(list, [
    { platform: 'google', enabled: true, kind: 'oidc', aliases: ['idp_a'], callback_url: `${svc.url}/sso/google/callback` },
    { platform: 'github', enabled: false, kind: 'oauth2', aliases: ['idp_b'] },
    { platform: 'microsoft', enabled: false, aliases: ['idp_c'] },
    { platform: 'oidc', enabled: true, display_name: 'Test Issuer', aliases: [], callback_url: `${svc.url}/sso/oidc/callback` },
  ]);
  t.notOk(JSON.stringify(list).includes('secret'), 'no secret listed');
  const accounts = await fetch(`${svc.url}/admin/sso/users/alice@example.com/accounts`, { headers: bearer(admin) });
  t.equal(accounts.status, 200);
  t.match(((await accounts.json()) as any).data, { user_id: aliceId, accounts: [{ platform: 'oidc', external_id: 'alice', linked_at: String }] });
  t.equal((await fetch(`${svc.url}/admin/sso/users/nobody/accounts`, { headers: bearer(admin) })).status, 404);
  const forged = await tokenFor('00000000-0000-0000-0000-000000000000', { role: 'admin', secret: 'not-the-server-secret-not-the-server-secret' });
  const expired = await tokenFor('00000000-0000-0000-0000-000000000000', { role: 'admin', expiresIn: Math.floor(Date.now() / 1000) - 60 });
  for (const path of ['/admin/sso/providers', '/admin/sso/users/alice@example.com/accounts']) {
    t.equal((await fetch(`${svc.url}${path}`)).status, 401, `${path} without a token`);
    t.equal((await fetch(`${svc.url}${path}`, { headers: bearer(forged) })).status, 401, `${path} with a forged token`);
    t.equal((await fetch(`${svc.url}${path}`, { headers: bearer(expired) })).status, 401, `${path} with an expired token`);
    t.equal((await fetch(`${svc.url}${path}`, { headers: bearer(alice) })).status, 403, `${path} with a user’s token`);
  }
});

t.test('deleting a user frees their SSO link: the next sign-in makes a new account', async (t) => {
  const admin = await adminToken();
  const first = (await me(await signIn('frank'))).body.data.user_id;
  const del = await fetch(`${svc.url}/admin/users/frank@example.com`, { method: 'DELETE', headers: bearer(admin) });
  t.equal(del.status, 200);
  const second = (await me(await signIn('frank'))).body.data.user_id;
  t.ok(second && second !== first, 'a new account');
});

t.test('fragment style: the token travels after #, out of the server’s sight', async (t) => {
  const r = await callback(await signInAtProvider(`${svcFragment.url}/sso/oidc/login`, 'grace'));
  t.equal(r.status, 302);
  t.equal(r.location.search, '', 'nothing in the query');
  t.match(r.location.hash, /^#token=/);
  t.equal((await me(r.params.get('token') as string, svcFragment)).status, 200);
});

t.test('headless Chromium: the whole flow in a browser, the app’s page keeps the token', { skip: chromiumAvailable() ? false : 'no Chromium (apt-get install chromium)' }, async (t) => {
  const browser = await launch();
  t.teardown(() => browser.close());
  for (const [server, name] of [
    [svcFragment, 'heidi'],
    [svc, 'ivan'],
  ] as const) {
    const page = await browser.newPage();
    await page.goto(`${server.url}/sso/oidc/login`);
    t.match(page.url(), `${issuer}/interaction/`, 'the provider’s login page');
    await page.fill('input[name=login]', name);
    await page.fill('input[name=password]', 'whatever');
    await Promise.all([page.waitForURL(/\/interaction\//), page.click('button[type=submit]')]);
    await Promise.all([page.waitForURL((u) => u.href.startsWith(clientPage)), page.click('button[type=submit]')]);
    await page.waitForFunction(() => document.title !== 'app');
    t.equal(await page.title(), 'signed in');
    const token = (await page.evaluate(() => localStorage.getItem('svc_token'))) as string;
    const who = await me(token, server);
    t.equal(who.status, 200, `${name}: the token the page kept works`);
    t.match(who.body.data.identities, [{ type: 'email', value: `${name}@example.com`, verified: true }, { type: 'sso', provider: 'oidc' }]);
    await page.close();
  }
});

t.test('a cluster (KV_URL): a sign-in started on one member finishes on another, once; Redis holds no state in the clear', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 2, { redis, entry, env: env(CLUSTER_HOST) });
  const [one, two] = cluster.members as [Server, Server];
  const atProvider = new URL(await signInAtProvider(`${one.url}/sso/oidc/login`, 'judy'));
  t.equal(atProvider.origin, CLUSTER_HOST, 'the provider sends the browser to the cluster’s public URL');
  const state = atProvider.searchParams.get('state') as string;
  const keys = await redis.client().keys('*sso*');
  t.ok(keys.length > 0 && keys.every((k) => !k.includes(state)), 'pending sign-ins are filed under a hash of the state');
  const toTwo = `${two.url}${atProvider.pathname}${atProvider.search}`;
  const r = await callback(toTwo);
  t.ok(r.params.get('token'), 'finished on the other member');
  t.equal((await me(r.params.get('token') as string, one)).status, 200, 'the token works on both');
  const replay = await callback(`${one.url}${atProvider.pathname}${atProvider.search}`);
  t.equal(replay.params.get('error'), 'SSO_INVALID_STATE', 'and the state was taken for the whole cluster');
});
