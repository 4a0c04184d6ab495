// Single sign-on end to end: a REAL OpenID Connect provider (`oidc-provider`, started by the test kit on
// 127.0.0.1 with its development login and consent pages) and real `svc start` servers, driven
// through the whole browser flow by an HTTP client (redirects followed by hand, cookies kept — the
// provider's, and svc's browser binding — its forms submitted) and by headless Chromium. One server runs two worker threads:
// pending sign-ins live in shards spread over both, so most callbacks take a state made on
// another thread. The Google preset is configured against the same provider (as the seed's
// `idp_a`), to show the alias and to make "a state started for another platform".
// Also here: login CSRF (a callback URL presented from another browser), `bind_browser = false`, and
// account pre-hijacking (a password account whose email was never verified is taken over when linked).
import { createServer, type Server as HttpServer } from 'node:http';
import { once } from 'node:events';
import t from 'tap';
import { chromiumAvailable, launch } from '../../helpers/browser.ts';
import { bearer, GOOD_PASSWORD, login, register, tokenIn, tokenOf } from '../../helpers/identity.ts';
import { smtpEnv, startSmtp, skipRedis, startRedis, post, startServer, tokenFor, startCluster, startOidcIssuer, freePort, type Server } from '../../kit/index.ts';

// Page-side names for the functions that run in the browser (this file compiles without the DOM lib).
declare const document: { title: string };
declare const localStorage: { getItem(key: string): string | null };

// Starting three servers, a provider and Chromium on a busy machine takes longer than the default 120 s.
t.setTimeout(300_000);

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

async function listen(server: HttpServer): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

// ---- the provider, the app's page, and two svc servers -------------------------------------------

let issuer = '';
let svc: Server; // two worker threads, `?token=` (the seed's way)
let svcFragment: Server; // one worker thread, `#token=`
let unboundHost = ''; // where the server with `bind_browser = false` starts (its test starts it)
let smtp: Awaited<ReturnType<typeof startSmtp>>; // svc's mail (email verification links)
let clientPage = '';
let env: (host: string, extra?: Record<string, string>) => Record<string, string>;
const closers: (() => Promise<unknown> | unknown)[] = [];
t.teardown(async () => {
  for (const close of closers.reverse()) await close();
});

t.before(async () => {
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

  const [port, fragmentPort, unboundPort] = [await freePort(), await freePort(), await freePort()];
  const hosts = [`http://127.0.0.1:${port}`, `http://127.0.0.1:${fragmentPort}`, `http://127.0.0.1:${unboundPort}`];
  unboundHost = hosts[2] as string;
  smtp = await startSmtp();
  closers.push(() => smtp.close());
  // The provider before svc: svc reads its discovery URL at start, the provider registers svc's callback URLs.
  const provider = await startOidcIssuer(undefined, {
    clients: [
      { ...OIDC_CLIENT, redirectUris: [...hosts, CLUSTER_HOST].flatMap((h) => [`${h}/sso/oidc/callback`, `${h}/sso/oidc/login/callback`]) },
      { ...GOOGLE_CLIENT, redirectUris: hosts.flatMap((h) => [`${h}/sso/google/callback`, `${h}/sso/idp_a/callback`]) },
    ],
    claimsOf,
  });
  closers.push(() => provider.close());
  issuer = provider.issuer;

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
  svc = await startServer({ entry, workers: 2, port, env: env(hosts[0] as string, smtpEnv(smtp.port)) });
  closers.push(() => svc.stop());
  svcFragment = await startServer({ entry, port: fragmentPort, env: env(hosts[1] as string, { SVC_SSO_CALLBACK_STYLE: 'fragment' }) });
  closers.push(() => svcFragment.stop());
  if (svc.url !== hosts[0] || svcFragment.url !== hosts[1]) throw new Error('a chosen port was taken meanwhile; run again');
});

// ---- an HTTP client playing the browser ------------------------------------------------------------

/** Cookies of one site as a browser keeps them: by name, with the path they are sent under. */
class Jar {
  private readonly cookies = new Map<string, { value: string; path: string }>();

  /** The Cookie header for a request to `path` (any path: every cookie, as the provider's flow needs). */
  header(path?: string): string {
    const under = (p: string, c: string) => p === c || p.startsWith(c.endsWith('/') ? c : `${c}/`);
    return [...this.cookies]
      .filter(([, c]) => path === undefined || under(path, c.path))
      .map(([k, c]) => `${k}=${c.value}`)
      .join('; ');
  }

  get(name: string): string | undefined {
    return this.cookies.get(name)?.value;
  }

  keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      const gone = value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1] ?? '') < Date.now()));
      const path = attrs.map((a) => /^\s*path=(.*)$/i.exec(a)?.[1]?.trim()).find((p) => p) ?? '/';
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, { value, path });
    }
  }
}

/** One browser: its cookies of the provider, and of svc (every svc server here is on 127.0.0.1: cookies do not tell ports apart). */
class Browser {
  readonly provider = new Jar();
  readonly svc = new Jar();
}

/** One request of a browser, without following redirects; its cookies sent and kept. */
async function hop(url: string, browser: Browser, form?: Record<string, string>): Promise<Response> {
  const toProvider = url.startsWith(issuer);
  const jar = toProvider ? browser.provider : browser.svc;
  const cookie = toProvider ? jar.header() : jar.header(new URL(url).pathname);
  const res = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { ...(cookie ? { cookie } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  jar.keep(res);
  return res;
}

/**
 * Start a sign-in at `start` (svc's /sso/…/login) in `browser` and sign in
 * at the provider as `name` (its login form, then its consent form): the URL
 * the provider sends the browser back to (svc's callback, with code and
 * state), not visited yet.
 */
async function signInAtProvider(start: string, name: string, browser: Browser): Promise<string> {
  let res = await hop(start, browser);
  if (res.status !== 302) throw new Error(`${start}: ${res.status} ${await res.text()}`);
  let url = res.headers.get('location') as string;
  for (let steps = 0; steps < 20; steps++) {
    if (!url.startsWith(issuer)) return url;
    res = await hop(url, browser);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location') as string, url).href;
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt) throw new Error(`the provider answered ${res.status}: ${html.slice(0, 500)}`);
    res = await hop(new URL(action.replace(/&amp;/g, '&'), url).href, browser, prompt === 'login' ? { prompt, login: name, password: 'any password' } : { prompt });
    url = new URL(res.headers.get('location') as string, url).href;
  }
  throw new Error('the provider kept redirecting');
}

/**
 * Visit svc's callback in `browser` (undefined: one with no cookies at all),
 * by GET or posted (form_post): where svc sends the browser (the app's page
 * with token or error).
 */
async function callback(url: string, browser: Browser | undefined, form = false): Promise<{ status: number; location: URL; params: URLSearchParams; headers: Headers }> {
  const u = new URL(url);
  const cookie = browser?.svc.header(u.pathname);
  const headers: Record<string, string> = cookie ? { cookie } : {};
  const res = form
    ? await fetch(`${u.origin}${u.pathname}`, { method: 'POST', redirect: 'manual', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: u.search.slice(1) })
    : await fetch(url, { redirect: 'manual', headers });
  browser?.svc.keep(res);
  const location = new URL(res.headers.get('location') ?? 'http://none.invalid/');
  return { status: res.status, location, params: location.hash ? new URLSearchParams(location.hash.slice(1)) : location.searchParams, headers: res.headers };
}

/** A whole sign-in with the HTTP client, in a browser of its own (or `browser`): the token svc hands the app's page. */
async function signIn(name: string, platform = 'oidc', server: Server = svc, browser = new Browser()): Promise<string> {
  const r = await callback(await signInAtProvider(`${server.url}/sso/${platform}/login`, name, browser), browser);
  const token = r.params.get('token');
  if (r.status !== 302 || !token) throw new Error(`sign-in of ${name}: ${r.status} ${r.location.href}`);
  return token;
}

/** Where a sign-in started at svc in `browser` sends it: its state (the sign-in waits for its callback). */
async function started(platform: string, browser: Browser): Promise<string> {
  const res = await hop(`${svc.url}/sso/${platform}/login`, browser);
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
  const browser = new Browser();
  const callbackUrl = await signInAtProvider(`${svc.url}/sso/oidc/login`, 'alice', browser);
  t.match(callbackUrl, `${svc.url}/sso/oidc/callback?`, 'the provider sends the browser back to svc');
  t.match(browser.svc.get('svc_sso'), /^[A-Za-z0-9_-]{43}$/, 'the browser keeps the binding cookie svc set');
  const r = await callback(callbackUrl, browser);
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

t.test('a user registered with a password who verified the same email gets the provider linked on sign-in, and keeps the password', async (t) => {
  const bobId = await register(svc.url, 'bob', { email: 'bob@example.com' });
  const before = await tokenOf(svc.url, 'bob');
  // Bob verifies the email himself, with the mail's link.
  t.equal((await post(`${svc.url}/user/send-verification`, { identity: { type: 'email', value: 'bob@example.com' } }, bearer(before))).status, 202);
  t.equal((await post(`${svc.url}/user/verify-identity`, { token: tokenIn(await smtp.next()) })).status, 200, 'verified by the mail link');
  const token = await signIn('bob');
  const who = await me(token);
  t.equal(who.body.data.user_id, bobId, 'the same user');
  t.match(who.body.data.identities, [{ type: 'username', value: 'bob' }, { type: 'email', value: 'bob@example.com', verified: true }, { type: 'sso', provider: 'oidc' }]);
  t.equal((await login(svc.url, 'bob')).status, 200, 'the password still signs in');
  t.equal((await me(before)).status, 200, 'and his token from before the link still works');
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

t.test('pre-hijacking: an account registered with the address but never verified is taken over by the address’s owner: the password and older tokens die', async (t) => {
  // Someone registers the victim's address with a password of theirs, and keeps a token.
  const planted = await register(svc.url, 'squatter', { email: 'victim@example.com', password: 'hunter2 was never enough 9' });
  const plantedToken = await tokenOf(svc.url, 'victim@example.com', 'hunter2 was never enough 9');
  t.match((await me(plantedToken)).body.data.identities, [{ type: 'username' }, { type: 'email', value: 'victim@example.com', verified: false }], 'the email was never verified');
  // The victim signs in with the provider, whose account has that email, verified.
  const token = await signIn('victim');
  const who = await me(token);
  t.equal(who.status, 200);
  t.equal(who.body.data.user_id, planted, 'linked to that account (rule 8)');
  t.match(who.body.data.identities, [{ type: 'username', value: 'squatter' }, { type: 'email', value: 'victim@example.com', verified: true }, { type: 'sso', provider: 'oidc' }], 'the email is verified now');
  const old = await login(svc.url, 'victim@example.com', 'hunter2 was never enough 9');
  t.equal(old.status, 401, 'the planter’s password no longer signs in');
  t.equal(old.body.error.code, 'INVALID_CREDENTIALS');
  t.equal((await login(svc.url, 'squatter', 'hunter2 was never enough 9')).status, 401, 'by the username neither');
  t.equal((await me(plantedToken)).status, 401, 'a token issued before the link is refused');
  t.equal((await post(`${svc.url}/user/refresh-token`, { token: plantedToken })).status, 401, 'and cannot be refreshed');
  // The owner sets a password of their own through forgot-password (the email is verified now).
  t.equal((await post(`${svc.url}/user/forgot-password`, { identity: { type: 'email', value: 'victim@example.com' } })).status, 200);
  const reset = await post(`${svc.url}/user/reset-password`, { token: tokenIn(await smtp.next()), new_password: 'the real owner chose this one' });
  t.equal(reset.status, 200, 'a reset link reached the address’s owner');
  t.equal((await login(svc.url, 'victim@example.com', 'the real owner chose this one')).status, 200, 'their own password signs in');
  t.equal((await me(await signIn('victim'))).body.data.user_id, planted, 'and the provider still does');
});

t.test('an unverified email is refused: no account is created', async (t) => {
  const browser = new Browser();
  const r = await callback(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'mallory', browser), browser);
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
  // One browser throughout: every sign-in it starts carries its binding cookie.
  const browser = new Browser();
  const expectError = async (url: string, code: string, what: string, form = false) => {
    const r = await callback(url, browser, form);
    t.equal(r.status, 302, `${what}: a redirect`);
    t.equal(`${r.location.origin}${r.location.pathname}`, clientPage);
    t.equal(r.params.get('error'), code, `${what}: ${code}`);
    t.ok(r.params.get('message'), 'with a message');
    t.equal(r.params.get('token'), null);
    return r.params.get('message') as string;
  };
  const good = await signInAtProvider(`${svc.url}/sso/oidc/login`, 'carol', browser);
  t.ok((await callback(good, browser)).params.get('token'), 'the first use signs in');
  await expectError(good, 'SSO_INVALID_STATE', 'the same callback URL again');

  // A code for one sign-in, presented with the state of another (of another platform / made up).
  const fresh = new URL(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'carol', browser));
  const withState = (state: string) => {
    const u = new URL(fresh);
    u.searchParams.set('state', state);
    return u.href;
  };
  await expectError(withState(await started('google', browser)), 'SSO_INVALID_STATE', 'a state started for another platform');
  await expectError(withState('a-state-svc-never-handed-out-0123456789'), 'SSO_INVALID_STATE', 'a made-up state');
  const pkce = await expectError(withState(await started('oidc', browser)), 'SSO_EXCHANGE_FAILED', 'another sign-in’s state: its PKCE verifier does not fit the code');
  t.match(pkce, /invalid_grant/, 'the provider refused the code');

  const noCode = new URL(fresh);
  noCode.searchParams.delete('code');
  noCode.searchParams.set('state', await started('oidc', browser));
  await expectError(noCode.href, 'SSO_MISSING_CODE', 'a callback without code');
  noCode.searchParams.set('state', await started('oidc', browser));
  await expectError(noCode.href, 'SSO_MISSING_CODE', 'a callback without code, posted', true);
  const denied = new URL(noCode);
  denied.searchParams.set('state', await started('oidc', browser));
  denied.searchParams.set('error', 'access_denied');
  denied.searchParams.set('error_description', 'End-User aborted interaction');
  t.match(await expectError(denied.href, 'SSO_PROVIDER_ERROR', 'the provider refused'), /access_denied: End-User aborted interaction/);
});

t.test('login CSRF: a callback URL presented from another browser is sent back with SSO_INVALID_STATE, no token; the state is spent', async (t) => {
  // The binding cookie: its attributes, and one the browser holds already is kept (two tabs can sign in at once).
  const first = await fetch(`${svc.url}/sso/oidc/login`, { redirect: 'manual' });
  const line = first.headers.getSetCookie()[0] ?? '';
  t.match(line, /^svc_sso=[A-Za-z0-9_-]{43}; Path=\/sso; Max-Age=600; HttpOnly; SameSite=Lax$/, 'HttpOnly, under /sso, for the state’s TTL; SameSite=Lax over plain http');
  const value = /^svc_sso=([^;]+)/.exec(line)?.[1];
  const again = await fetch(`${svc.url}/sso/oidc/login`, { redirect: 'manual', headers: { cookie: `theme=dark; svc_sso=${value}` } });
  t.equal(/^svc_sso=([^;]+)/.exec(again.headers.getSetCookie()[0] ?? '')?.[1], value, 'a browser that has one keeps it');
  const forged = await fetch(`${svc.url}/sso/oidc/login`, { redirect: 'manual', headers: { cookie: 'svc_sso=short' } });
  t.match(forged.headers.getSetCookie()[0], /^svc_sso=[A-Za-z0-9_-]{43};/, 'a malformed one is replaced');

  const expectRefused = async (r: Awaited<ReturnType<typeof callback>>, what: string, message: RegExp) => {
    t.equal(r.status, 302, `${what}: sent back to the app’s page`);
    t.equal(`${r.location.origin}${r.location.pathname}`, clientPage);
    t.equal(r.params.get('error'), 'SSO_INVALID_STATE', `${what}: SSO_INVALID_STATE`);
    t.match(r.params.get('message'), message);
    t.equal(r.params.get('token'), null, `${what}: no token`);
  };
  // Browser A (the attacker's) signs in at the provider as oscar, and hands the callback URL to browser B.
  const attacker = new Browser();
  const handed = await signInAtProvider(`${svc.url}/sso/oidc/login`, 'oscar', attacker);
  await expectRefused(await callback(handed, new Browser()), 'a browser that never started a sign-in', /started in another browser/);
  await expectRefused(await callback(handed, attacker), 'the same URL from browser A afterwards', /unknown, expired, already finished/);
  // A victim browser with a binding of its own (it started a sign-in too).
  const victim = new Browser();
  await started('oidc', victim);
  t.ok(victim.svc.get('svc_sso') && victim.svc.get('svc_sso') !== attacker.svc.get('svc_sso'), 'B holds a binding of its own');
  await expectRefused(await callback(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'oscar', attacker), victim), 'a browser with another binding', /started in another browser/);
  await expectRefused(await callback(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'oscar', attacker), victim, true), 'the same, posted', /started in another browser/);
  const admin = await adminToken();
  const list = await fetch(`${svc.url}/admin/users?search=oscar`, { headers: bearer(admin) });
  t.equal(((await list.json()) as any).data.total, 0, 'nobody was signed in as oscar');

  // Two tabs of browser A: both sign-ins finish, in either order.
  const tab1 = await signInAtProvider(`${svc.url}/sso/oidc/register`, 'oscar', attacker);
  const tab2 = await signInAtProvider(`${svc.url}/sso/oidc/login`, 'oscar', attacker);
  const two = (await callback(tab2, attacker)).params.get('token');
  const one = (await callback(tab1, attacker)).params.get('token');
  t.ok(one && two, 'both tabs signed in');
  t.equal((await me(one as string)).body.data.user_id, (await me(two as string)).body.data.user_id, 'as the same user');
});

t.test('the callback posted (form_post), the older /login/callback path, and the seed’s idp_a alias (Google preset)', async (t) => {
  const browser = new Browser();
  // Posted from the same site here (a cross-site post from a provider brings the cookie only over https: SameSite=None; Secure).
  const posted = await callback(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'dave', browser), browser, true);
  t.ok(posted.params.get('token'), 'POST /sso/oidc/callback signs in');
  const older = new URL(await signInAtProvider(`${svc.url}/sso/oidc/login`, 'dave', browser));
  older.pathname = '/sso/oidc/login/callback';
  t.ok((await callback(older.href, browser)).params.get('token'), 'GET /sso/oidc/login/callback signs in (the cookie’s path, /sso, covers it)');
  // Another person: another browser (the provider would remember dave's session).
  const erin = new Browser();
  const viaAlias = await signInAtProvider(`${svc.url}/sso/idp_a/login`, 'erin', erin);
  t.match(viaAlias, `${svc.url}/sso/idp_a/callback?`, 'the redirect URI keeps the alias');
  const token = (await callback(viaAlias, erin)).params.get('token') as string;
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
  const browser = new Browser();
  const r = await callback(await signInAtProvider(`${svcFragment.url}/sso/oidc/login`, 'grace', browser), browser);
  t.equal(r.status, 302);
  t.equal(r.location.search, '', 'nothing in the query');
  t.match(r.location.hash, /^#token=/);
  t.equal((await me(r.params.get('token') as string, svcFragment)).status, 200);
});

t.test('[scale.sso] bind_browser = false (SVC_SSO_BIND_BROWSER): no cookie is set, and a callback without one signs in, as before', async (t) => {
  const unbound = await startServer({ entry, port: Number(new URL(unboundHost).port), env: env(unboundHost, { SVC_SSO_BIND_BROWSER: 'false' }) });
  t.teardown(() => unbound.stop());
  const browser = new Browser();
  const url = await signInAtProvider(`${unbound.url}/sso/oidc/login`, 'nadia', browser);
  t.equal(browser.svc.get('svc_sso'), undefined, 'no binding cookie');
  const r = await callback(url, undefined);
  t.equal(r.status, 302);
  const token = r.params.get('token');
  t.ok(token, 'a client without cookies finishes the sign-in');
  t.equal((await me(token as string, unbound)).status, 200);
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
    const binding = (await page.context().cookies(`${server.url}/sso/oidc/callback`)).find((c) => c.name === 'svc_sso');
    t.match(binding, { path: '/sso', httpOnly: true, sameSite: 'Lax', secure: false }, `${name}: the browser kept the binding cookie and brought it back`);
    await page.close();
  }
});

t.test('a cluster (KV_URL): a sign-in started on one member finishes on another, once; Redis holds no state in the clear', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 2, { redis, entry, env: env(CLUSTER_HOST) });
  const [one, two] = cluster.members as [Server, Server];
  const browser = new Browser();
  const atProvider = new URL(await signInAtProvider(`${one.url}/sso/oidc/login`, 'judy', browser));
  t.equal(atProvider.origin, CLUSTER_HOST, 'the provider sends the browser to the cluster’s public URL');
  const state = atProvider.searchParams.get('state') as string;
  const keys = await redis.client().keys('*sso*');
  t.ok(keys.length > 0 && keys.every((k) => !k.includes(state)), 'pending sign-ins are filed under a hash of the state');
  const toTwo = `${two.url}${atProvider.pathname}${atProvider.search}`;
  const r = await callback(toTwo, browser);
  t.ok(r.params.get('token'), 'finished on the other member');
  t.equal((await me(r.params.get('token') as string, one)).status, 200, 'the token works on both');
  const replay = await callback(`${one.url}${atProvider.pathname}${atProvider.search}`, browser);
  t.equal(replay.params.get('error'), 'SSO_INVALID_STATE', 'and the state was taken for the whole cluster');
});
