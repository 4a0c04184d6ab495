// Single sign-on presets (Google, GitHub, Microsoft) against local FAKES of their endpoints: the real
// providers cannot be reached from here. Each fake is a small node:http server on 127.0.0.1 that speaks
// the provider's side as documented — discovery, JWKS, token endpoint (checking the client secret, the
// redirect URI and the PKCE verifier against the challenge), UserInfo, GitHub's REST API — and signs its
// ID tokens with a key of its own (jose). The authorization step (a person at the provider's page) is
// played by the test: it reads the authorization URL svc made and mints a code bound to it.
// Every flow carries the browser binding cookie as a browser would (BrowserSso, below).
// Also here: the pending sign-in stores (in-process actors, Redis), unlinking, and the admin's view;
// login CSRF (a callback from another browser), and account pre-hijacking (linking to an account whose
// email was never verified takes it over).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import t from 'tap';
import { ActorSystem, ManualClock, workerPlacement } from 'svc/kernel';
import { MemoryNet } from '../../helpers/memory-transport.ts';
import { ActorSsoStates, createSsoProvider, MICROSOFT_CONSUMER_TENANT, normalize, PendingTable, SsoService, type SsoServiceOptions, type SsoStart, stateKey, userRecord, type PendingSignIn, type SsoProvider, type UserPatch } from '../../../actors/identity/index.ts';
import { MemoryUsersRepository } from '../../../stores/memory/index.ts';
import { RedisSsoStates } from '../../../stores/redis/index.ts';
import { openRedis, whenReady } from '../../../stores/redis/index.ts';
import { skipRedis, startRedis } from '../../kit/index.ts';

const CLIENT_ID = 'svc-test-client';
const CLIENT_SECRET = 'svc-test-secret-0123456789';
const ORG_TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';

interface Http {
  origin: string;
  close(): Promise<void>;
}

/** A node:http server on a free loopback port; `handle` answers with a status and a JSON body. */
async function serve(handle: (req: IncomingMessage, url: URL, body: string) => Promise<{ status: number; json: unknown }> | { status: number; json: unknown } | 'hang'): Promise<Http> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const out = await handle(req, url, Buffer.concat(chunks).toString('utf8'));
      if (out === 'hang') return; // never answers (a provider that is down behind a load balancer)
      res.writeHead(out.status, { 'content-type': 'application/json' }).end(JSON.stringify(out.json));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** The client as the token request authenticates it (client_secret_basic or client_secret_post). */
function clientOf(req: IncomingMessage, form: URLSearchParams): { id: string; secret: string } {
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (basic) {
    const [id = '', secret = ''] = Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent);
    return { id, secret };
  }
  return { id: form.get('client_id') ?? '', secret: form.get('client_secret') ?? '' };
}

interface Grant {
  challenge: string;
  redirectUri: string;
  nonce: string | null;
  claims: Record<string, unknown>;
}

/** What the fakes share: codes bound to the authorization request they answer, taken once at the token endpoint. */
class Codes {
  readonly grants = new Map<string, Grant>();
  tokenRequests = 0;

  /** Play the person at the provider's page: check the authorization URL, mint a code, answer as the redirect would. */
  authorize(authorizationUrl: string, claims: Record<string, unknown>, expect: { scope?: string; nonce: boolean }): URLSearchParams {
    const u = new URL(authorizationUrl);
    const q = u.searchParams;
    if (q.get('client_id') !== CLIENT_ID) throw new Error('wrong client_id');
    if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) throw new Error('no PKCE S256 challenge');
    if (!q.get('state') || q.get('state')!.length < 32) throw new Error('no random state');
    if (expect.nonce && (!q.get('nonce') || q.get('nonce')!.length < 32)) throw new Error('no random nonce');
    if (expect.scope && !(q.get('scope') ?? '').split(' ').includes(expect.scope)) throw new Error(`scope ${expect.scope} not asked for`);
    const code = randomBytes(16).toString('hex');
    this.grants.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')!, nonce: q.get('nonce'), claims });
    return new URLSearchParams({ code, state: q.get('state')! });
  }

  /** The token endpoint's checks; the grant, or an OAuth error. */
  redeem(req: IncomingMessage, body: string): Grant | { status: number; json: unknown } {
    this.tokenRequests++;
    const form = new URLSearchParams(body);
    const client = clientOf(req, form);
    if (client.id !== CLIENT_ID || client.secret !== CLIENT_SECRET) return { status: 401, json: { error: 'invalid_client' } };
    if (form.get('grant_type') !== 'authorization_code') return { status: 400, json: { error: 'unsupported_grant_type' } };
    const grant = this.grants.get(form.get('code') ?? '');
    this.grants.delete(form.get('code') ?? '');
    if (!grant) return { status: 400, json: { error: 'invalid_grant', error_description: 'unknown or used code' } };
    if (form.get('redirect_uri') !== grant.redirectUri) return { status: 400, json: { error: 'invalid_grant', error_description: 'redirect_uri mismatch' } };
    if (s256(form.get('code_verifier') ?? '') !== grant.challenge) return { status: 400, json: { error: 'invalid_grant', error_description: 'PKCE verification failed' } };
    return grant;
  }
}

interface FakeOidc extends Http {
  discoveryUrl: string;
  codes: Codes;
  /** Claims put in the ID token, overriding (to forge a nonce, an issuer, …). */
  tamper: Record<string, unknown>;
}

/**
 * A local fake of an OpenID Connect provider's endpoints. `issuerPath` and
 * `issuerOf` shape it as Google (issuer = origin) or Microsoft (discovery
 * under /common/v2.0, issuer template `/{tenantid}/v2.0`, `iss` per tenant).
 * With `userinfoOnly`, email claims travel in UserInfo only.
 */
async function fakeOidc(options: { discoveryPath: string; issuer: (origin: string) => string; tokenIss: (origin: string, claims: Record<string, unknown>) => string; userinfoOnly?: boolean }): Promise<FakeOidc> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Codes();
  const tokens = new Map<string, Record<string, unknown>>();
  const fake: FakeOidc = {
    origin: '',
    discoveryUrl: '',
    codes,
    tamper: {},
    close: async () => undefined,
  };
  const http = await serve(async (req, url, body) => {
    const origin = fake.origin;
    if (req.method === 'GET' && url.pathname === options.discoveryPath) {
      return {
        status: 200,
        json: {
          issuer: options.issuer(origin),
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          userinfo_endpoint: `${origin}/userinfo`,
          jwks_uri: `${origin}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
          code_challenge_methods_supported: ['S256'],
        },
      };
    }
    if (req.method === 'GET' && url.pathname === '/jwks') return { status: 200, json: { keys: [jwk] } };
    if (req.method === 'POST' && url.pathname === '/token') {
      const grant = codes.redeem(req, body);
      if (!('claims' in grant)) return grant;
      const access = randomBytes(16).toString('hex');
      tokens.set(access, grant.claims);
      const { sub, ...rest } = grant.claims;
      const inToken = options.userinfoOnly ? { tid: rest.tid } : rest;
      const claims = { ...inToken, ...(grant.nonce ? { nonce: grant.nonce } : {}), ...fake.tamper };
      const idToken = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer((fake.tamper.iss as string | undefined) ?? options.tokenIss(origin, grant.claims))
        .setAudience(CLIENT_ID)
        .setSubject(sub as string)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      return { status: 200, json: { access_token: access, token_type: 'Bearer', expires_in: 300, id_token: idToken } };
    }
    if (req.method === 'GET' && url.pathname === '/userinfo') {
      const claims = tokens.get(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
      return claims ? { status: 200, json: claims } : { status: 401, json: { error: 'invalid_token' } };
    }
    return { status: 404, json: { error: 'not_found' } };
  });
  fake.origin = http.origin;
  fake.discoveryUrl = `${http.origin}${options.discoveryPath}`;
  fake.close = http.close;
  return fake;
}

const fakeGoogle = () => fakeOidc({ discoveryPath: '/.well-known/openid-configuration', issuer: (o) => o, tokenIss: (o) => o });
const fakeMicrosoft = () =>
  fakeOidc({
    discoveryPath: '/common/v2.0/.well-known/openid-configuration',
    issuer: (o) => `${o}/{tenantid}/v2.0`,
    tokenIss: (o, claims) => `${o}/${claims.tid as string}/v2.0`,
  });

interface FakeGitHub extends Http {
  codes: Codes;
  emails: unknown[];
  user: Record<string, unknown>;
}

/** A local fake of GitHub's OAuth endpoints (github.com/login/oauth/…) and REST API (/user, /user/emails). */
async function fakeGitHub(): Promise<FakeGitHub> {
  const codes = new Codes();
  const tokens = new Set<string>();
  const fake: FakeGitHub = { origin: '', codes, emails: [], user: {}, close: async () => undefined };
  const http = await serve((req, url, body) => {
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      if (!(req.headers.accept ?? '').includes('application/json')) return { status: 406, json: { error: 'ask for JSON' } };
      const grant = codes.redeem(req, body);
      // GitHub answers a refused code with 200 and an error field.
      if (!('claims' in grant)) return { status: 200, json: { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' } };
      const access = `gho_${randomBytes(12).toString('hex')}`;
      tokens.add(access);
      return { status: 200, json: { access_token: access, token_type: 'bearer', scope: 'read:user,user:email' } };
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (req.method === 'GET' && url.pathname.startsWith('/api/')) {
      if (!tokens.has(bearer)) return { status: 401, json: { message: 'Bad credentials' } };
      if (!req.headers['user-agent']) return { status: 403, json: { message: 'a User-Agent is required' } };
      if (url.pathname === '/api/user') return { status: 200, json: fake.user };
      if (url.pathname === '/api/user/emails') return { status: 200, json: fake.emails };
    }
    return { status: 404, json: { message: 'Not Found' } };
  });
  fake.origin = http.origin;
  fake.close = http.close;
  return fake;
}

const SETTINGS = { host: 'https://app.example', client_auth_callback_url: '', callback_style: 'query', state_ttl_seconds: 600, bind_browser: true };

/**
 * The service as one browser drives it through the routes: the binding
 * cookie `begin` hands out is kept (`cookie`, as the browser's jar) and
 * brought to every callback. Set `cookie` to play another browser (or one
 * that keeps no cookies: undefined).
 */
class BrowserSso extends SsoService {
  cookie: string | undefined;

  override async begin(segment: string, mode: 'login' | 'register', requestHost?: string): Promise<SsoStart> {
    const started = await super.begin(segment, mode, requestHost, this.cookie);
    if (started.binding) this.cookie = started.binding.value;
    return started;
  }

  override finish(segment: string, params: URLSearchParams) {
    return super.finish(segment, params, this.cookie);
  }
}

/** An SsoService over a memory users repository and the in-process state store; `revoked` lists the revocations asked for. */
function setup(t: { teardown(fn: () => unknown): void }, providers: SsoProvider[], settings = SETTINGS, extra: Partial<SsoServiceOptions> = {}) {
  const system = new ActorSystem();
  const users = new MemoryUsersRepository();
  const roots: string[] = [];
  const revoked: { userId: string; patch: UserPatch }[] = [];
  t.teardown(async () => {
    await system.shutdown();
    await users.close();
  });
  const states = new ActorSsoStates(system, { placement: (_k, nodes) => nodes[0] as string, ttlMs: 600_000 });
  const sso = new BrowserSso({
    users,
    states,
    providers,
    settings,
    token: async (u) => `jwt-for-${u.user_id}`,
    revokeTokens: async (userId, patch) => {
      revoked.push({ userId, patch });
      await users.updateAndRevoke(userId, patch);
    },
    createRoot: async (r) => void roots.push(r),
    ...extra,
  });
  return { sso, users, roots, states, revoked };
}

const config = (extra: Record<string, unknown> = {}) => ({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, scopes: ['openid', 'email', 'profile'], ...extra });
const code = (e: unknown) => (e as { code?: string }).code;

t.test('Google, against a local fake of Google’s endpoints: a verified email creates the account; the next sign-in finds it', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const { sso, users, roots } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))]);
  const claims = { sub: '1094', email: 'Ada@Example.com', email_verified: true, name: 'Ada Lovelace', given_name: 'Ada', family_name: 'Lovelace', picture: 'https://pics.example/ada.png' };

  const { url } = await sso.begin('google', 'login');
  t.match(url, `${google.origin}/authorize?`, 'the browser goes to the provider');
  t.equal(new URL(url).searchParams.get('redirect_uri'), 'https://app.example/sso/google/callback', 'the redirect URI is [scale.sso] host’s');
  t.equal(new URL(url).searchParams.get('scope'), 'openid email profile');
  const first = await sso.finish('google', google.codes.authorize(url, claims, { scope: 'openid', nonce: true }));
  t.equal(first.created, true);
  t.equal(first.linked, false);
  t.equal(first.token, `jwt-for-${first.user.user_id}`);
  t.same(roots, [first.user.root_id], 'their graph root is created');
  t.equal(first.user.role, 'user');
  t.equal(first.user.password_hash, null, 'no password');
  t.match(first.user.identities, [
    { type: 'email', value_raw: 'Ada@Example.com', verified: true, is_recovery: true },
    { type: 'sso', provider: 'google', external_id: '1094', value_normalized: 'google:1094' },
  ]);
  t.same(first.user.profile, { sso: { google: { display_name: 'Ada Lovelace', first_name: 'Ada', last_name: 'Lovelace', picture: 'https://pics.example/ada.png' } } });

  // The developer's own profile fields are never touched; the provider's are refreshed.
  await users.update(first.user.user_id, { profile: { ...first.user.profile, nickname: 'countess' } });
  const { url: again } = await sso.begin('google', 'login');
  const second = await sso.finish('google', google.codes.authorize(again, { ...claims, name: 'Ada King', picture: undefined }, { nonce: true }));
  t.equal(second.user.user_id, first.user.user_id, 'the same account');
  t.equal(second.created, false);
  t.equal(second.linked, false);
  t.same(second.user.profile, { nickname: 'countess', sso: { google: { display_name: 'Ada King', first_name: 'Ada', last_name: 'Lovelace' } } });
  t.equal(await users.count(), 1);
});

t.test('Google, against a local fake of Google’s endpoints: an unverified email creates nothing and links nothing', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const { sso, users } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))]);
  await users.create(userRecord({ user_id: 'c0ffee00-0000-4000-8000-000000000001', role: 'user', identities: [{ type: 'email', value_raw: 'eve@example.com', value_normalized: 'eve@example.com', verified: false, is_recovery: true }] }));
  for (const claims of [
    { sub: 'g-1', email: 'eve@example.com', email_verified: false },
    { sub: 'g-2', email: 'new@example.com', email_verified: false },
    { sub: 'g-3', email: 'str@example.com', email_verified: 'true' }, // a string is not the boolean true
    { sub: 'g-4' },
  ]) {
    const { url } = await sso.begin('google', 'login');
    await t.rejects(sso.finish('google', google.codes.authorize(url, claims, { nonce: true })), { code: 'SSO_EMAIL_UNVERIFIED', status: 403 }, `refused: ${JSON.stringify(claims)}`);
  }
  t.equal(await users.count(), 1, 'no account created');
  t.equal((await users.byIdentity('eve@example.com'))?.identities.length, 1, 'nothing linked to the account with that email');
  t.equal(await users.bySso('google', 'g-1'), undefined);
});

const PASSWORD_HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo';

t.test('Google, against a local fake: a password account that verified the same email gets the identity linked, and keeps its password', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const { sso, users, revoked } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))]);
  const owner = userRecord({
    user_id: 'c0ffee00-0000-4000-8000-000000000002',
    role: 'user',
    password_hash: PASSWORD_HASH,
    profile: { bio: 'mine' },
    identities: [
      { type: 'username', value_raw: 'grace', value_normalized: 'grace', verified: true, is_recovery: false },
      { type: 'email', value_raw: 'Grace@Example.com', value_normalized: 'grace@example.com', verified: false, is_recovery: true },
    ],
  });
  await users.create(owner);
  // Verified by the account itself (as the mail link does).
  await users.setVerified(owner.user_id, 'grace@example.com');
  const { url } = await sso.begin('idp_a', 'login');
  t.equal(new URL(url).searchParams.get('redirect_uri'), 'https://app.example/sso/idp_a/callback', 'the seed’s alias idp_a is Google, and stays in the redirect URI');
  const r = await sso.finish('idp_a', google.codes.authorize(url, { sub: 'g-grace', email: 'grace@EXAMPLE.com', email_verified: true, name: 'Grace Hopper' }, { nonce: true }));
  t.equal(r.user.user_id, owner.user_id, 'the same user');
  t.equal(r.linked, true);
  t.equal(r.created, false);
  t.equal(r.user.password_hash, PASSWORD_HASH, 'the account verified its email itself: its password stays');
  t.same(revoked, [], 'and its tokens');
  t.equal(r.user.tokens_valid_after, null);
  t.match(r.user.identities.find((i) => i.type === 'email'), { verified: true });
  t.match(r.user.identities.find((i) => i.type === 'sso'), { provider: 'google', external_id: 'g-grace' }, 'stored under the platform id, not the alias');
  t.same(r.user.profile, { bio: 'mine', sso: { google: { display_name: 'Grace Hopper' } } });
  t.same(await sso.accountsOf('grace'), { user_id: owner.user_id, accounts: [{ platform: 'google', external_id: 'g-grace', linked_at: r.user.identities.find((i) => i.type === 'sso')?.linked_at }] });

  // Unlinking: the account stays (it has a password); profile.sso.google goes.
  t.same(await sso.unlink(owner.user_id, 'google'), { status: 'unlinked', platform: 'google' });
  t.same((await users.byId(owner.user_id))?.profile, { bio: 'mine' });
  await t.rejects(sso.unlink(owner.user_id, 'google'), { code: 'NOT_FOUND', status: 404 }, 'nothing linked any more');
  await t.rejects(sso.unlink(owner.user_id, 'nope'), { code: 'NOT_FOUND' });
  await t.rejects(sso.accountsOf('nobody'), { code: 'NOT_FOUND' });
});

t.test('Google, against a local fake: linking to an account that never verified the email takes it over (pre-hijacking): its password, tokens and API keys are gone', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const logs: { level: string; message: string; extra?: Record<string, unknown> }[] = [];
  const { sso, users, revoked } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))], SETTINGS, { log: (level, message, extra) => logs.push({ level, message, extra }) });
  // Someone registered the victim's address with a password of theirs (and forced a change, to check it is cleared too).
  const planted = userRecord({
    user_id: 'c0ffee00-0000-4000-8000-000000000004',
    role: 'user',
    password_hash: PASSWORD_HASH,
    must_change_password: true,
    profile: { bio: 'planted' },
    identities: [
      { type: 'username', value_raw: 'mallory', value_normalized: 'mallory', verified: true, is_recovery: false },
      { type: 'email', value_raw: 'victim@example.com', value_normalized: 'victim@example.com', verified: false, is_recovery: true },
    ],
  });
  await users.create(planted);
  await users.putApiKey({ api_key_id: 'a'.repeat(32), user_id: planted.user_id, name: 'planted key', key_hash: 'b'.repeat(64), walkers: null, created_at: new Date().toISOString(), expires_at: null });
  const { url } = await sso.begin('google', 'login');
  const r = await sso.finish('google', google.codes.authorize(url, { sub: 'g-victim', email: 'Victim@example.com', email_verified: true, name: 'Victim' }, { nonce: true }));
  t.equal(r.user.user_id, planted.user_id, 'rule 8 still links: the same account');
  t.equal(r.linked, true);
  t.equal(r.user.password_hash, null, 'the registrant’s password is removed');
  t.equal(r.user.must_change_password, false, 'no password to change: no forced change either');
  t.same(revoked, [{ userId: planted.user_id, patch: { password_hash: null, must_change_password: false } }], 'through the revocation that reaches every thread');
  t.ok((r.user.tokens_valid_after ?? 0) > 0, 'the security stamp moved: every older token is void');
  t.same(await users.apiKeysOf(planted.user_id), [], 'its API keys are deleted');
  t.match(r.user.identities.find((i) => i.type === 'email'), { verified: true }, 'the email is verified (the provider vouched for it)');
  t.match(r.user.identities.find((i) => i.type === 'sso'), { provider: 'google', external_id: 'g-victim' });
  t.match(logs, [{ level: 'info', message: /password was removed/, extra: { user_id: planted.user_id, platform: 'google', password_removed: true, api_keys_removed: 1 } }], 'logged');
  t.notOk(JSON.stringify(logs).includes('argon2'), 'no secret in the log');
  // The next sign-in finds the link (rule 1): nothing is revoked again.
  const again = await sso.finish('google', google.codes.authorize((await sso.begin('google', 'login')).url, { sub: 'g-victim', email: 'victim@example.com', email_verified: true }, { nonce: true }));
  t.equal(again.user.user_id, planted.user_id);
  t.equal(again.linked, false);
  t.equal(revoked.length, 1);
});

t.test('Google, against a local fake: state, provider errors, missing code, PKCE, nonce, client secret — each refused with its code', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const github = await fakeGitHub();
  t.teardown(github.close);
  const { sso, users } = setup(t, [
    createSsoProvider('google', config({ discovery_url: google.discoveryUrl })),
    createSsoProvider('github', config({ base_url: github.origin, api_url: `${github.origin}/api`, scopes: ['read:user', 'user:email'] })),
    createSsoProvider('microsoft', { client_id: '', client_secret: '', scopes: [] }),
  ]);
  const claims = { sub: 'g-9', email: 'nine@example.com', email_verified: true };
  const rejects = (p: Promise<unknown>, c: string, what: string) => t.rejects(p, { code: c }, what);

  const { url } = await sso.begin('google', 'login');
  const params = google.codes.authorize(url, claims, { nonce: true });
  await sso.finish('google', params);
  await rejects(sso.finish('google', params), 'SSO_INVALID_STATE', 'a replayed callback: the state was taken');
  await rejects(sso.finish('google', new URLSearchParams({ code: 'x', state: 'made-up-state-0123456789abcdef0123' })), 'SSO_INVALID_STATE', 'a made-up state');
  await rejects(sso.finish('google', new URLSearchParams({ code: 'x' })), 'SSO_INVALID_STATE', 'no state');
  const { url: forGitHub } = await sso.begin('github', 'login');
  await rejects(sso.finish('google', github.codes.authorize(forGitHub, {}, { nonce: false })), 'SSO_INVALID_STATE', 'a state started for another platform');
  const { url: twice } = await sso.begin('google', 'login');
  const s = new URL(twice).searchParams.get('state')!;
  await rejects(sso.finish('google', new URLSearchParams([['state', s], ['state', s], ['code', 'x']])), 'SSO_INVALID_STATE', 'two states');

  const { url: denied } = await sso.begin('google', 'login');
  const err = await sso.finish('google', new URLSearchParams({ state: new URL(denied).searchParams.get('state')!, error: 'access_denied', error_description: 'The user said no' })).catch((e: Error) => e);
  t.equal(code(err), 'SSO_PROVIDER_ERROR');
  t.match((err as Error).message, /access_denied: The user said no/, 'the provider’s description is in the message');

  const { url: nocode } = await sso.begin('google', 'login');
  await rejects(sso.finish('google', new URLSearchParams({ state: new URL(nocode).searchParams.get('state')! })), 'SSO_MISSING_CODE', 'a callback without code');

  // A code bound to one sign-in's PKCE challenge, presented with another sign-in's state (and so its verifier).
  const { url: a } = await sso.begin('google', 'login');
  const { url: b } = await sso.begin('google', 'login');
  const codeOfA = google.codes.authorize(a, claims, { nonce: true }).get('code')!;
  google.codes.authorize(b, claims, { nonce: true });
  const wrong = await sso.finish('google', new URLSearchParams({ code: codeOfA, state: new URL(b).searchParams.get('state')! })).catch((e: Error) => e);
  t.equal(code(wrong), 'SSO_EXCHANGE_FAILED', 'the wrong PKCE verifier: the provider refuses the code');
  t.match((wrong as Error).message, /invalid_grant: PKCE verification failed/);

  google.tamper = { nonce: 'not-the-nonce-we-sent' };
  const { url: n } = await sso.begin('google', 'login');
  await rejects(sso.finish('google', google.codes.authorize(n, claims, { nonce: true })), 'SSO_EXCHANGE_FAILED', 'an ID token with another nonce');
  google.tamper = { iss: 'https://accounts.evil.example' };
  const { url: i } = await sso.begin('google', 'login');
  await rejects(sso.finish('google', google.codes.authorize(i, claims, { nonce: true })), 'SSO_EXCHANGE_FAILED', 'an ID token from another issuer');
  google.tamper = {};

  const wrongSecret = setup(t, [createSsoProvider('google', { ...config({ discovery_url: google.discoveryUrl }), client_secret: 'wrong' })]).sso;
  const { url: w } = await wrongSecret.begin('google', 'login');
  await rejects(wrongSecret.finish('google', google.codes.authorize(w, claims, { nonce: true })), 'SSO_EXCHANGE_FAILED', 'a wrong client secret');

  await rejects(sso.begin('microsoft', 'login'), 'SSO_NOT_CONFIGURED', 'an unconfigured provider');
  const e501 = await sso.begin('idp_c', 'login').catch((e: Error) => e);
  t.match(e501, { status: 501, message: /\[scale\.sso\.microsoft\] \(or \[scale\.sso\.idp_c\]\).*SVC_SSO_MICROSOFT_CLIENT_ID and SVC_SSO_MICROSOFT_CLIENT_SECRET/ }, 'the message names the settings');
  await rejects(sso.begin('oidc', 'login'), 'SSO_NOT_CONFIGURED', 'a platform with no provider given');
  for (const unknown of ['facebook', 'idp_d', '__proto__', 'Google']) await t.rejects(sso.begin(unknown, 'login'), { code: 'NOT_FOUND', status: 404 }, `unknown platform ${unknown}`);
  t.equal(await users.count(), 1, 'only the one good sign-in made an account');
});

t.test('login CSRF: a sign-in is bound to the browser that started it; a callback from another browser is refused, and spends the state', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const { sso, users, states } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))]);
  const attacker = { sub: 'g-attacker', email: 'attacker@example.com', email_verified: true };
  const sha = (v: string) => createHash('sha256').update(v).digest('base64url');

  // Browser A (the attacker's) starts a sign-in and signs in at the provider, but does not visit the callback URL.
  const started = await sso.begin('google', 'login');
  t.match(started.binding, { value: /^[A-Za-z0-9_-]{43}$/, secure: true, maxAgeSeconds: 600 }, 'a binding cookie: 32 random bytes, Secure (the redirect URI is https), for the state’s TTL');
  const browserA = sso.cookie as string;
  const params = google.codes.authorize(started.url, attacker, { nonce: true });
  const exchanges = google.codes.tokenRequests;

  // Browser B (the victim's) is handed that URL: it has no cookie.
  sso.cookie = undefined;
  await t.rejects(sso.finish('google', params), { code: 'SSO_INVALID_STATE', status: 400, message: /started in another browser/ }, 'no cookie: refused as a bad state');
  // The same from browser A now: the state was spent.
  sso.cookie = browserA;
  await t.rejects(sso.finish('google', params), { code: 'SSO_INVALID_STATE', message: /unknown, expired, already finished/ }, 'the state was spent by the refused callback');

  // Browser B with a binding of its own (it started a sign-in too): still not the one this sign-in was started with.
  const second = await sso.begin('google', 'login');
  const paramsA = google.codes.authorize(second.url, attacker, { nonce: true });
  sso.cookie = undefined;
  await sso.begin('google', 'login');
  t.not(sso.cookie, browserA, 'B got a binding of its own');
  await t.rejects(sso.finish('google', paramsA), { code: 'SSO_INVALID_STATE', message: /started in another browser/ }, 'another cookie: refused');
  sso.cookie = browserA;
  const third = google.codes.authorize((await sso.begin('google', 'login')).url, attacker, { nonce: true });
  sso.cookie = `${browserA.startsWith('A') ? 'B' : 'A'}${browserA.slice(1)}`;
  await t.rejects(sso.finish('google', third), { code: 'SSO_INVALID_STATE', message: /started in another browser/ }, 'a cookie one character off: refused');
  sso.cookie = 'not-a-binding';
  const replaced = await sso.begin('google', 'login');
  t.match(replaced.binding?.value, /^[A-Za-z0-9_-]{43}$/, 'a malformed cookie is never reused: /login sets a new one');
  t.equal(google.codes.tokenRequests, exchanges, 'no refused callback reached the provider’s token endpoint');
  t.equal(await users.count(), 0, 'nobody was signed in');

  // Two tabs of one browser: the binding it holds is reused, so both finish, in any order.
  sso.cookie = browserA;
  const tab1 = await sso.begin('google', 'login');
  const tab2 = await sso.begin('google', 'register');
  t.equal(tab1.binding?.value, browserA, 'the browser’s binding is reused');
  t.equal(tab2.binding?.value, browserA);
  t.equal((await sso.finish('google', google.codes.authorize(tab2.url, attacker, { nonce: true }))).created, true, 'the second tab finishes');
  t.equal((await sso.finish('google', google.codes.authorize(tab1.url, attacker, { nonce: true }))).created, false, 'and the first');

  // The pending sign-in keeps a hash of the binding, never the binding.
  const kept = await sso.begin('google', 'login');
  const record = await states.take(stateKey(new URL(kept.url).searchParams.get('state') as string));
  t.equal(record?.browser, sha(browserA), 'its SHA-256');
  t.notOk(JSON.stringify(record).includes(browserA), 'not the cookie itself');
});

t.test('[scale.sso] bind_browser = false: no cookie, and a callback without one finishes (as before: clients that keep no cookies)', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const { sso, states } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))], { ...SETTINGS, bind_browser: false });
  const started = await sso.begin('google', 'login');
  t.equal(started.binding, undefined, 'no binding cookie to set');
  t.equal(sso.cookie, undefined);
  const r = await sso.finish('google', google.codes.authorize(started.url, { sub: 'native', email: 'native@example.com', email_verified: true }, { nonce: true }));
  t.equal(r.created, true, 'a callback without a cookie signs in');
  const kept = await sso.begin('google', 'login');
  t.equal((await states.take(stateKey(new URL(kept.url).searchParams.get('state') as string)))?.browser, null, 'the pending sign-in holds no binding');
});

t.test('Google, against a local fake: discovery failures answer 502 and are retried; a provider that hangs times out', async (t) => {
  const google = await fakeGoogle();
  const discoveryUrl = google.discoveryUrl;
  await google.close(); // nothing listens there now
  const { sso } = setup(t, [createSsoProvider('google', config({ discovery_url: discoveryUrl }), { discoveryRetryMs: 0 })]);
  await t.rejects(sso.begin('google', 'login'), { code: 'SSO_PROVIDER_UNAVAILABLE', status: 502 }, 'unreachable');
  const hang = await serve(() => 'hang');
  t.teardown(hang.close);
  const slow = setup(t, [createSsoProvider('google', config({ discovery_url: `${hang.origin}/.well-known/openid-configuration` }), { timeoutMs: 200 })]).sso;
  await t.rejects(slow.begin('google', 'login'), { code: 'SSO_PROVIDER_UNAVAILABLE', message: /did not answer in time/ }, 'no answer within the timeout');
  const fine = await fakeGoogle();
  t.teardown(fine.close);
  let broken = true;
  const flaky = await serve(async (_req, url) => {
    if (broken) return { status: 500, json: {} };
    const res = await fetch(`${fine.origin}${url.pathname}`);
    return { status: res.status, json: { ...((await res.json()) as object), issuer: flakyOrigin } };
  });
  t.teardown(flaky.close);
  const flakyOrigin = flaky.origin;
  const retried = setup(t, [createSsoProvider('google', config({ discovery_url: `${flaky.origin}/.well-known/openid-configuration` }), { discoveryRetryMs: 0 })]).sso;
  await t.rejects(retried.begin('google', 'login'), { code: 'SSO_PROVIDER_UNAVAILABLE' }, 'a failing discovery');
  broken = false;
  t.match((await retried.begin('google', 'login')).url, `${fine.origin}/authorize`, 'the next sign-in discovers again (a failure is not cached)');
});

t.test('GitHub, against a local fake of GitHub’s endpoints: the primary verified email from /user/emails, the numeric id', async (t) => {
  const github = await fakeGitHub();
  t.teardown(github.close);
  const { sso, users } = setup(t, [createSsoProvider('github', config({ base_url: github.origin, api_url: `${github.origin}/api`, scopes: ['read:user', 'user:email'] }))]);
  github.user = { id: 583231, login: 'octocat', name: 'Mona Lisa Octocat', email: 'public@example.com', avatar_url: 'https://avatars.example/583231' };
  github.emails = [
    { email: 'unverified-primary@example.com', primary: false, verified: false },
    { email: 'old@example.com', primary: false, verified: true },
    { email: 'Mona@Example.com', primary: true, verified: true },
  ];
  const { url } = await sso.begin('idp_b', 'register');
  t.match(url, `${github.origin}/login/oauth/authorize?`);
  t.equal(new URL(url).searchParams.get('nonce'), null, 'OAuth 2: no nonce');
  t.equal(new URL(url).searchParams.get('scope'), 'read:user user:email');
  const r = await sso.finish('idp_b', github.codes.authorize(url, {}, { scope: 'user:email', nonce: false }));
  t.equal(r.created, true);
  t.match(r.user.identities, [
    { type: 'email', value_normalized: 'mona@example.com', verified: true },
    { type: 'sso', provider: 'github', external_id: '583231' },
  ]);
  t.same(r.user.profile.sso, { github: { display_name: 'Mona Lisa Octocat', first_name: 'Mona', last_name: 'Lisa Octocat', picture: 'https://avatars.example/583231' } });

  // Only a verified email counts: a primary one that is not verified is skipped for any verified one.
  github.user = { id: 9, login: 'second', name: null };
  github.emails = [
    { email: 'p@example.com', primary: true, verified: false },
    { email: 'v@example.com', primary: false, verified: true },
  ];
  const { url: u2 } = await sso.begin('github', 'login');
  const second = await sso.finish('github', github.codes.authorize(u2, {}, { nonce: false }));
  t.match(second.user.identities[0], { value_normalized: 'v@example.com' });
  t.same(second.user.profile.sso, { github: { display_name: 'second' } }, 'no name: the login is the display name');

  github.user = { id: 10, login: 'ghost', name: 'Ghost', email: 'ghost@example.com' };
  github.emails = [{ email: 'ghost@example.com', primary: true, verified: false }];
  const { url: u3 } = await sso.begin('github', 'login');
  await t.rejects(sso.finish('github', github.codes.authorize(u3, {}, { nonce: false })), { code: 'SSO_EMAIL_UNVERIFIED' }, 'no verified email (the public profile email does not count)');
  t.equal(await users.bySso('github', '10'), undefined);

  const { url: a } = await sso.begin('github', 'login');
  const { url: b } = await sso.begin('github', 'login');
  const codeOfA = github.codes.authorize(a, {}, { nonce: false }).get('code')!;
  const wrong = await sso.finish('github', new URLSearchParams({ code: codeOfA, state: new URL(b).searchParams.get('state')! })).catch((e: Error) => e);
  t.equal(code(wrong), 'SSO_EXCHANGE_FAILED', 'a wrong PKCE verifier');
  t.match((wrong as Error).message, /bad_verification_code/, 'GitHub’s 200-with-error answer is read as the refusal it is');
  t.equal(await users.count(), 2);
});

t.test('Microsoft, against a local fake of Microsoft’s endpoints: the common tenant’s issuer template, and xms_edov', async (t) => {
  const ms = await fakeMicrosoft();
  t.teardown(ms.close);
  const { sso, users } = setup(t, [createSsoProvider('microsoft', config({ tenant: 'common', discovery_url: ms.discoveryUrl }))]);
  const run = async (claims: Record<string, unknown>) => {
    const { url } = await sso.begin('microsoft', 'login');
    return sso.finish('microsoft', ms.codes.authorize(url, claims, { scope: 'openid', nonce: true }));
  };
  const r = await run({ sub: 'ms-1', tid: ORG_TENANT, email: 'alan@contoso.example', xms_edov: true, name: 'Alan Turing' });
  t.equal(r.created, true, 'iss = the template with the token’s tid; the email domain owner is verified (xms_edov)');
  t.match(r.user.identities[1], { provider: 'microsoft', external_id: 'ms-1' });
  t.equal((await run({ sub: 'ms-2', tid: ORG_TENANT, email: 'two@contoso.example', xms_edov: '1' })).created, true, 'xms_edov as "1"');
  t.equal((await run({ sub: 'ms-3', tid: MICROSOFT_CONSUMER_TENANT, email: 'personal@outlook.example' })).created, true, 'a personal account (the consumer tenant)');
  // nOAuth: a tenant admin can type anyone's address into `email`; without a verification claim it links nothing.
  await users.create(userRecord({ user_id: 'c0ffee00-0000-4000-8000-000000000003', role: 'user', identities: [{ type: 'email', value_raw: 'victim@example.com', value_normalized: 'victim@example.com', verified: true, is_recovery: true }] }));
  await t.rejects(run({ sub: 'ms-evil', tid: ORG_TENANT, email: 'victim@example.com' }), { code: 'SSO_EMAIL_UNVERIFIED' }, 'a plain email claim is not verified');
  await t.rejects(run({ sub: 'ms-evil', tid: ORG_TENANT, email: 'victim@example.com', xms_edov: false }), { code: 'SSO_EMAIL_UNVERIFIED' });
  t.equal((await users.byIdentity('victim@example.com'))?.identities.length, 1, 'the victim’s account got no link');
  // The issuer must be the template with the token's own tenant.
  ms.tamper = { iss: `${ms.origin}/${MICROSOFT_CONSUMER_TENANT}/v2.0` };
  await t.rejects(run({ sub: 'ms-4', tid: ORG_TENANT, email: 'x@contoso.example', xms_edov: true }), { code: 'SSO_EXCHANGE_FAILED' }, 'an iss of another tenant than tid');
  ms.tamper = {};
  await t.rejects(run({ sub: 'ms-5', email: 'x@contoso.example', xms_edov: true }), { code: 'SSO_EXCHANGE_FAILED' }, 'no tid at all');
  t.equal(await users.count(), 4);
});

t.test('OpenID Connect (generic), against a local fake: email from UserInfo when the ID token has none; the last way to sign in stays', async (t) => {
  const idp = await fakeOidc({ discoveryPath: '/realms/x/.well-known/openid-configuration', issuer: (o) => `${o}/realms/x`, tokenIss: (o) => `${o}/realms/x`, userinfoOnly: true });
  t.teardown(idp.close);
  const { sso, users } = setup(t, [createSsoProvider('oidc', config({ discovery_url: idp.discoveryUrl, display_name: 'Keycloak' }))]);
  const { url } = await sso.begin('oidc', 'login');
  const r = await sso.finish('oidc', idp.codes.authorize(url, { sub: 'kc-1', email: 'kc@example.com', email_verified: true, given_name: 'K' }, { nonce: true }));
  t.equal(r.created, true);
  t.same(r.user.profile.sso, { oidc: { first_name: 'K' } });
  t.match(sso.providers().find((p) => p.platform === 'oidc'), { display_name: 'Keycloak', kind: 'oidc', enabled: true, aliases: [], callback_url: 'https://app.example/sso/oidc/callback' });
  await t.rejects(sso.unlink(r.user.user_id, 'oidc'), { code: 'SSO_LAST_SIGN_IN', status: 409 }, 'no password, no other provider');
  t.ok(await users.bySso('oidc', 'kc-1'), 'still linked');
  await users.update(r.user.user_id, { status: 'disabled' });
  const { url: again } = await sso.begin('oidc', 'login');
  await t.rejects(sso.finish('oidc', idp.codes.authorize(again, { sub: 'kc-1', email: 'kc@example.com', email_verified: true }, { nonce: true })), { code: 'INVALID_CREDENTIALS', status: 401 }, 'a disabled user is refused as login refuses one');
});

const pending = (n = 0): PendingSignIn => ({ platform: 'google', mode: 'login', code_verifier: `v${n}`, nonce: `n${n}`, redirect_uri: 'https://app.example/sso/google/callback', browser: `b${n}`, created: n });

t.test('pending sign-ins in memory: taken once, gone after the TTL, bounded (the oldest go)', async (t) => {
  const table = new PendingTable(3);
  table.put('a', pending(1), 1000, 0);
  t.same(table.take('a', 10), pending(1));
  t.equal(table.take('a', 10), undefined, 'once');
  table.put('b', pending(2), 1000, 0);
  t.equal(table.take('b', 1000), undefined, 'expired');
  for (const k of ['c', 'd', 'e', 'f']) table.put(k, pending(3), 1000, 100);
  t.equal(table.size, 3);
  t.equal(table.take('c', 200), undefined, 'the oldest went past the bound');
  t.ok(table.take('f', 200));
  t.equal(stateKey('abc'), createHash('sha256').update('abc').digest('base64url'), 'filed under the state’s SHA-256');

  const clock = new ManualClock();
  const system = new ActorSystem({ clock });
  t.teardown(() => system.shutdown());
  const states = new ActorSsoStates(system, { placement: (_k, nodes) => nodes[0] as string, ttlMs: 60_000, maxPending: 80 });
  for (let i = 0; i < 500; i++) await states.put(stateKey(`s${i}`), pending(i), 60_000);
  t.ok((await states.size()) <= 80, `500 sign-ins started, ${await states.size()} kept (max 80)`);
  const key = stateKey('s499');
  const takes = await Promise.all(Array.from({ length: 10 }, () => states.take(key)));
  t.equal(takes.filter(Boolean).length, 1, 'ten callbacks at once: one takes it');
  await states.put(stateKey('late'), pending(), 60_000);
  clock.advance(61_000);
  t.equal(await states.take(stateKey('late')), undefined, 'expired');
});

t.test('pending sign-ins across worker threads: started on one, taken on another, shards on both', async (t) => {
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('p/main') });
  const threads = ['p/w1', 'p/w2'].map((id) => new ActorSystem({ transport: net.transport(id) }));
  t.teardown(async () => {
    for (const s of [...threads, main]) await s.shutdown();
  });
  const [w1, w2] = threads.map((system) => new ActorSsoStates(system, { placement: workerPlacement(), ttlMs: 60_000 })) as [ActorSsoStates, ActorSsoStates];
  for (let i = 0; i < 64; i++) await w1.put(stateKey(`cross-${i}`), pending(i), 60_000);
  let found = 0;
  for (let i = 0; i < 64; i++) if ((await w2.take(stateKey(`cross-${i}`)))?.created === i) found++;
  t.equal(found, 64, 'every sign-in started on w1 is found from w2');
  t.equal(await w1.take(stateKey('cross-0')), undefined, 'and taken once, whichever thread asks');
  t.ok(threads.every((system) => system.activationCount('sso-states') > 0), 'the shards live on both worker threads (so most callbacks cross threads)');
  t.equal(main.activationCount('sso-states'), 0, 'none on the main thread');
});

t.test('pending sign-ins in Redis: taken once, with a TTL, bounded', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const client = redis.client();
  // The runtime's kind of client: no offline queue, so a command while Redis is down fails at once.
  const runtimeClient = openRedis(redis.url, { name: 'sso-test' });
  t.teardown(() => runtimeClient.disconnect());
  await whenReady(runtimeClient, 5000);
  const states = new RedisSsoStates(runtimeClient, { prefix: 'svc:{test}:sso:', maxPending: 3 });
  await states.put('k1', pending(1), 60_000);
  const ttl = await client.pttl('svc:{test}:sso:state:k1');
  t.ok(ttl > 50_000 && ttl <= 60_000, `SET … PX: ${ttl} ms left`);
  t.same(await states.take('k1'), pending(1));
  t.equal(await states.take('k1'), undefined, 'once');
  for (const k of ['a', 'b', 'c', 'd', 'e']) await states.put(k, pending(2), 60_000);
  t.equal(await states.take('a'), undefined, 'past the bound the oldest went');
  t.equal(await states.take('b'), undefined);
  t.ok(await states.take('e'));
  await states.put('race', pending(3), 60_000);
  const takes = await Promise.all(Array.from({ length: 10 }, () => states.take('race')));
  t.equal(takes.filter(Boolean).length, 1, 'ten callbacks at once: one takes it');
  t.equal(await client.exists('svc:{test}:sso:state:race'), 0);
  await states.put('short', pending(4), 1);
  await new Promise((r) => setTimeout(r, 20)); // Redis expires keys on its own clock
  t.equal(await states.take('short'), undefined, 'expired');
  await redis.stop();
  await t.rejects(states.put('x', pending(), 1000), { code: 'SVC_ERR_STORE_UNAVAILABLE', status: 503 }, 'Redis down: 503, not a crash');
});

t.test('the email of a created account is as registration checks it; a taken SSO identity of the same provider is refused', async (t) => {
  const google = await fakeGoogle();
  t.teardown(google.close);
  const { sso, users } = setup(t, [createSsoProvider('google', config({ discovery_url: google.discoveryUrl }))]);
  const { url } = await sso.begin('google', 'login');
  await t.rejects(sso.finish('google', google.codes.authorize(url, { sub: 'bad', email: 'not an email', email_verified: true }, { nonce: true })), { code: 'SSO_EMAIL_UNVERIFIED' });
  const first = await sso.finish('google', google.codes.authorize((await sso.begin('google', 'login')).url, { sub: 'one', email: 'same@example.com', email_verified: true }, { nonce: true }));
  // Another Google account claiming the same email: the account is linked to a Google account already.
  await t.rejects(sso.finish('google', google.codes.authorize((await sso.begin('google', 'login')).url, { sub: 'two', email: 'same@example.com', email_verified: true }, { nonce: true })), { code: 'IDENTITY_TAKEN', status: 409 });
  t.equal((await users.byIdentity(normalize('same@example.com')))?.user_id, first.user.user_id);
});

t.test('without [scale.sso] host the redirect URI follows the Host header (development); a bad Host header is refused', async (t) => {
  const github = await fakeGitHub();
  t.teardown(github.close);
  const { sso } = setup(t, [createSsoProvider('github', config({ base_url: github.origin, api_url: `${github.origin}/api` }))], { ...SETTINGS, host: '' });
  const { url, binding } = await sso.begin('github', 'login', '127.0.0.1:8080');
  t.equal(new URL(url).searchParams.get('redirect_uri'), 'http://127.0.0.1:8080/sso/github/callback');
  t.equal(binding?.secure, false, 'an http redirect URI: the binding cookie is not Secure (SameSite=Lax)');
  for (const host of [undefined, '', 'evil.example/path', 'a b', 'x@y']) await t.rejects(sso.begin('github', 'login', host), { code: 'SSO_NOT_CONFIGURED', message: /SVC_SSO_HOST/ }, `Host ${JSON.stringify(host)}`);
  t.same(sso.providers().find((p) => p.platform === 'github')?.callback_url, null, 'the admin sees no fixed callback URL');
});
