// A sign-in provider that is down is not the client's fault: a REAL OpenID Connect provider
// (`oidc-provider` on 127.0.0.1 from the test kit, its development login and consent pages) whose
// HTTP server passes every request on to it — or, when this test tells it to, answers one of the
// provider's endpoints itself with a 500/503, or drops the connection without an answer. svc (in
// process, `svc/testing`) is driven through the whole sign-in by an HTTP client playing the browser.
// Whatever the step that fails — discovery, JWKS, the token exchange, UserInfo — the callback answers
// 502 SSO_PROVIDER_UNAVAILABLE; the provider's own refusals stay 400. Also: a provider that gives no
// name or picture leaves no `profile.sso.<platform>` behind.
import t, { type Test } from 'tap';
import { startApp, type InProcessServer } from '../../helpers/app.ts';
import { bearer } from '../../helpers/identity.ts';
import { startOidcIssuer } from '../../kit/index.ts';

const CLIENT = { id: 'svc-outage', secret: 'svc-outage-secret-0123456789abcdef' };
/** svc's public URL as the provider knows it (never reached: the test delivers each callback to the app itself). */
const PUBLIC = 'http://svc-outage.invalid';

/** Accounts of the provider: `plain` gives no name at all; `nameless` gives one until told otherwise. */
const claims: Record<string, Record<string, unknown>> = {};
function claimsOf(login: string): Record<string, unknown> {
  const base = { sub: login, email: `${login}@example.com`, email_verified: true };
  return login === 'plain' ? base : { ...base, name: `${login} Tester`, given_name: login, family_name: 'Tester', ...claims[login] };
}

/** What the server in front of the provider does with a request to `path`: pass it on, answer a status, or drop it. */
type Fault = number | 'drop' | { status: number; json: Record<string, unknown> };
const faults = new Map<string, Fault>();
const hits = new Map<string, number>();
let issuer = '';
let svc: InProcessServer;
const closers: (() => Promise<unknown> | unknown)[] = [];
t.teardown(async () => {
  for (const close of closers.reverse()) await close();
});

t.before(async () => {
  const oidc = await startOidcIssuer(undefined, {
    clients: [{ ...CLIENT, redirectUris: [`${PUBLIC}/sso/oidc/callback`] }],
    claimsOf,
    scopes: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name', 'picture'] },
    // The server in front of the provider: a path with a fault is answered (or dropped) here; the rest passes on.
    intercept(req, res) {
      const path = new URL(req.url ?? '/', 'http://front').pathname;
      const fault = faults.get(path);
      if (fault === undefined) return false;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (fault === 'drop') req.socket.destroy();
      else if (typeof fault === 'number') res.writeHead(fault, { 'content-type': 'text/html' }).end(`<html><body>${fault}: the provider is down</body></html>`);
      else res.writeHead(fault.status, { 'content-type': 'application/json' }).end(JSON.stringify(fault.json));
      return true;
    },
  });
  closers.push(() => oidc.close());
  issuer = oidc.issuer;
  // No client page: the callback answers JSON, so its status is the one the client sees.
  svc = await startApp({
    entry: new URL('../../fixtures/todo-app.ts', import.meta.url).pathname,
    keepData: false,
    env: {
      SVC_SSO_HOST: PUBLIC,
      SVC_SSO_OIDC_CLIENT_ID: CLIENT.id,
      SVC_SSO_OIDC_CLIENT_SECRET: CLIENT.secret,
      SVC_SSO_OIDC_DISCOVERY_URL: `${issuer}/.well-known/openid-configuration`,
    },
  });
  closers.push(() => svc.stop());
});

/** The cookies of one site, by name. */
class Jar {
  private readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0] ?? '';
      const at = pair.indexOf('=');
      const value = pair.slice(at + 1).trim();
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(pair.slice(0, at).trim());
      else this.cookies.set(pair.slice(0, at).trim(), value);
    }
  }
}

/** One request of the browser (no redirect followed), its cookies for that site sent and kept. */
async function hop(url: string, jar: Jar, form?: Record<string, string>): Promise<Response> {
  const cookie = jar.header();
  const res = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { ...(cookie ? { cookie } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  jar.keep(res);
  return res;
}

interface Answer {
  status: number;
  body: any;
}

/** Start a sign-in at svc: the redirect to the provider, or svc's answer. */
async function begin(svcJar: Jar): Promise<{ location: string } | Answer> {
  const res = await hop(`${svc.url}/sso/oidc/login`, svcJar);
  if (res.status === 302) return { location: res.headers.get('location') as string };
  return { status: res.status, body: await res.json() };
}

/** A whole sign-in as `login`: through the provider's login and consent pages, then svc's callback; svc's answer. */
async function signIn(login: string): Promise<Answer> {
  const svcJar = new Jar();
  const providerJar = new Jar();
  const started = await begin(svcJar);
  if (!('location' in started)) throw new Error(`login: ${started.status} ${JSON.stringify(started.body)}`);
  let url = started.location;
  for (let steps = 0; steps < 20 && url.startsWith(issuer); steps++) {
    const res = await hop(url, providerJar);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location') as string, url).href;
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action || !prompt) throw new Error(`the provider answered ${res.status}: ${html.slice(0, 300)}`);
    const next = await hop(new URL(action.replace(/&amp;/g, '&'), url).href, providerJar, prompt === 'login' ? { prompt, login, password: 'any password' } : { prompt });
    url = new URL(next.headers.get('location') as string, url).href;
  }
  if (!url.startsWith(`${PUBLIC}/sso/oidc/callback?`)) throw new Error(`the provider did not send the browser back: ${url}`);
  const back = new URL(url);
  const res = await hop(`${svc.url}${back.pathname}${back.search}`, svcJar);
  return { status: res.status, body: await res.json() };
}

/** A sign-in while `path` fails as `fault`: svc's answer, after checking the faulty endpoint was asked. */
async function signInWhile(t: Test, path: string, fault: Fault, login = 'olga'): Promise<Answer> {
  faults.set(path, fault);
  hits.delete(path);
  try {
    const answer = await signIn(login);
    t.ok((hits.get(path) ?? 0) > 0, `svc asked ${path}`);
    return answer;
  } finally {
    faults.delete(path);
  }
}

async function me(token: string): Promise<Answer> {
  const res = await fetch(`${svc.url}/user/me`, { headers: bearer(token) });
  return { status: res.status, body: await res.json() };
}

const unavailable = { ok: false, data: null, error: { code: 'SSO_PROVIDER_UNAVAILABLE', message: String } };

t.test('discovery that answers 503: 502 SSO_PROVIDER_UNAVAILABLE; read again once the provider is back', async (t) => {
  faults.set('/.well-known/openid-configuration', 503);
  const down = await begin(new Jar());
  t.match(down, { status: 502, body: unavailable });
  faults.delete('/.well-known/openid-configuration');
  // A failed discovery is retried after a short pause (2 s): wait for the provider to be read again.
  const deadline = Date.now() + 10_000;
  let up = await begin(new Jar());
  while (!('location' in up) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    up = await begin(new Jar());
  }
  t.ok('location' in up, 'the sign-in starts once discovery answers');
});

// The JWKS is read once and then cached by svc: its outage shows on the first sign-in only.
t.test('JWKS that answers 500 on the first sign-in: 502 SSO_PROVIDER_UNAVAILABLE, not the client’s fault', async (t) => {
  t.match(await signInWhile(t, '/jwks', 500), { status: 502, body: unavailable });
  const fine = await signIn('olga');
  t.equal(fine.status, 200, 'the next sign-in, the provider back: signed in');
  t.equal((await me(fine.body.data.token)).status, 200);
});

t.test('the token endpoint answering 503 or 500, or dropping the connection: 502 SSO_PROVIDER_UNAVAILABLE', async (t) => {
  for (const fault of [503, 500, 'drop'] as const) {
    const answer = await signInWhile(t, '/token', fault);
    t.match(answer, { status: 502, body: unavailable }, `token endpoint ${fault}`);
    t.notMatch(JSON.stringify(answer.body), /secret|code_verifier|<html/i, 'no secret and no provider page in the answer');
  }
});

t.test('a provider that says it is overloaded or down (429, temporarily_unavailable, server_error): 502 SSO_PROVIDER_UNAVAILABLE', async (t) => {
  const saying = (error: string) => ({ status: 400, json: { error, error_description: 'come back later' } });
  for (const fault of [429, saying('temporarily_unavailable'), saying('server_error')]) {
    t.match(await signInWhile(t, '/token', fault), { status: 502, body: unavailable }, `token endpoint ${JSON.stringify(fault)}`);
  }
  t.match(await signInWhile(t, '/me', 429), { status: 502, body: unavailable }, 'UserInfo 429');
  // On the redirect back (RFC 6749 §4.1.2.1): the provider's error codes for its own trouble.
  for (const error of ['temporarily_unavailable', 'server_error']) {
    const jar = new Jar();
    const started = await begin(jar);
    if (!('location' in started)) return void t.fail('the sign-in did not start');
    const state = new URL(started.location).searchParams.get('state') as string;
    const res = await hop(`${svc.url}/sso/oidc/callback?${new URLSearchParams({ error, state, iss: issuer })}`, jar);
    t.equal(res.status, 502, `the callback with error=${error}`);
    t.match(await res.json(), unavailable);
  }
  // A refusal it means stays the client's.
  t.match(await signInWhile(t, '/token', saying('invalid_grant')), { status: 400, body: { error: { code: 'SSO_EXCHANGE_FAILED' } } }, 'invalid_grant: 400');
});

t.test('UserInfo answering 503, or dropping the connection: 502 SSO_PROVIDER_UNAVAILABLE', async (t) => {
  for (const fault of [503, 'drop'] as const) t.match(await signInWhile(t, '/me', fault), { status: 502, body: unavailable }, `UserInfo ${fault}`);
});

t.test('the provider’s own refusal stays the client’s: a code it never issued is 400 SSO_EXCHANGE_FAILED', async (t) => {
  const jar = new Jar();
  const started = await begin(jar);
  if (!('location' in started)) return void t.fail('the sign-in did not start');
  const state = new URL(started.location).searchParams.get('state') as string;
  const res = await hop(`${svc.url}/sso/oidc/callback?${new URLSearchParams({ code: 'a-code-the-provider-never-issued', state, iss: issuer })}`, jar);
  t.equal(res.status, 400);
  t.match(await res.json(), { error: { code: 'SSO_EXCHANGE_FAILED', message: /invalid_grant/ } });
});

t.test('a provider that gives no name or picture leaves no profile.sso.<platform>; one that stops giving them, none either', async (t) => {
  const plain = await signIn('plain');
  t.equal(plain.status, 200);
  const who = await me(plain.body.data.token);
  t.same(who.body.data.profile, {}, 'a new account: an empty profile, no sso key');
  t.same((await me((await signIn('plain')).body.data.token)).body.data.profile, {}, 'signed in again: still nothing written');

  const named = await signIn('nadia');
  t.same((await me(named.body.data.token)).body.data.profile, { sso: { oidc: { display_name: 'nadia Tester', first_name: 'nadia', last_name: 'Tester' } } });
  claims.nadia = { name: undefined, given_name: undefined, family_name: undefined };
  const bare = await signIn('nadia');
  t.same((await me(bare.body.data.token)).body.data.profile, {}, 'the provider gives no name now: the old one is not kept, and no empty object');
});
