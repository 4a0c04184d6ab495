/**
 * Single sign-on over HTTP (README *Single sign-on*): the browser is
 * sent to the provider (`/sso/{platform}/login`, `/register`), comes back to
 * `/sso/{platform}/callback` (GET, or POST for providers that post back;
 * `/sso/{platform}/login/callback` is the older name), and is sent on to the
 * app's page, `[scale.sso] client_auth_callback_url`, with the token —
 * `?token=` (the original product's way) or, with `callback_style = "fragment"`,
 * `#token=`: a fragment never reaches a server, a log or a Referer header
 * (recommended). Failures go there too, as `error=<code>&message=<text>`.
 * Without that URL the callback answers JSON.
 *
 * `{platform}` is `google`, `github`, `microsoft`, `oidc`, or the original's
 * `idp_a`, `idp_b`, `idp_c` (the first three). An unknown one answers 404
 * before anything else; one not configured 501.
 *
 * The redirect to the provider sets the browser binding cookie (`svc_sso`:
 * `HttpOnly`, `Path=/sso`, `Max-Age` = `[scale.sso] state_ttl_seconds`,
 * `SameSite=None; Secure` for an https redirect URI, else `SameSite=Lax`)
 * and the callback reads it back (see `actors/identity/sso.ts`); the runtime
 * has the servers copy the `cookie` and `host` request headers when a
 * provider is enabled.
 */
import { SSO_BROWSER_COOKIE, type SsoBrowserBinding, type SsoService } from '../../actors/identity/index.ts';
import type { BuiltinContext, BuiltinResult, BuiltinRoute, HttpResponse } from './types.ts';

const PLATFORMS = 'google, github, microsoft, oidc (or idp_a, idp_b, idp_c)';

/** Headers of every redirect that may carry a token: never cached, never sent on as a Referer. */
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache', 'referrer-policy': 'no-referrer' };

const CALLBACK_QUERY = [
  { name: 'state', schema: { type: 'string' }, description: 'the state handed out at /login (taken once)' },
  { name: 'code', schema: { type: 'string' }, description: 'the authorization code' },
  { name: 'error', schema: { type: 'string' }, description: 'the provider refused (with error_description)' },
  { name: 'error_description', schema: { type: 'string' } },
  { name: 'iss', schema: { type: 'string' }, description: 'the issuer, where the provider sends it (checked)' },
];

const CALLBACK_DATA = {
  type: 'object',
  properties: {
    user_id: { type: 'string' },
    token: { type: 'string' },
    root_id: { type: 'string' },
    role: { type: 'string' },
    created: { type: 'boolean', description: 'a new account was made' },
    linked: { type: 'boolean', description: 'the provider account was linked to the account with its verified email' },
  },
};

const CALLBACK_ERRORS = {
  '400': 'SSO_INVALID_STATE (unknown, used, expired, started for another platform, or started in another browser: no or another svc_sso cookie), SSO_PROVIDER_ERROR, SSO_MISSING_CODE, SSO_EXCHANGE_FAILED (a wrong code or PKCE verifier, an ID token that does not check out)',
  '401': 'INVALID_CREDENTIALS (the account is disabled)',
  '403': 'SSO_EMAIL_UNVERIFIED (no verified email from the provider: nothing created or linked)',
  '404': `NOT_FOUND (no such platform: ${PLATFORMS})`,
  '409': 'IDENTITY_TAKEN (the account with that email has another account of this provider linked)',
  '501': 'SSO_NOT_CONFIGURED (client_id and client_secret are not both set)',
  '502': 'SSO_PROVIDER_UNAVAILABLE (the provider cannot be reached or did not answer in time)',
};

/**
 * @example
 * const routes = [...identityRoutes(identity, auth), ...ssoRoutes(sso)];
 */
export function ssoRoutes(sso: SsoService): BuiltinRoute[] {
  const begin = (mode: 'login' | 'register') => async (c: BuiltinContext): Promise<BuiltinResult> => {
    const segment = c.params.platform as string;
    // Unknown (404) and unconfigured (501) answer as they are, before anything else.
    sso.provider(segment);
    try {
      const { url, binding } = await sso.begin(segment, mode, c.req.headers.host, bindingCookie(c.req.headers.cookie));
      const res = redirect(url);
      if (binding) res.headers['set-cookie'] = setBindingCookie(binding);
      return { raw: res };
    } catch (error) {
      return failed(sso, error);
    }
  };
  const callback = async (c: BuiltinContext): Promise<BuiltinResult> => {
    const segment = c.params.platform as string;
    sso.platform(segment); // an unknown platform: 404, never a redirect
    try {
      const { user, token, created, linked } = await sso.finish(segment, callbackParams(c), bindingCookie(c.req.headers.cookie));
      const target = sso.clientCallback;
      if (!target) return { data: { user_id: user.user_id, token, root_id: user.root_id, role: user.role, created, linked } };
      return { raw: redirect(withParams(target, { token })) };
    } catch (error) {
      return failed(sso, error);
    }
  };
  const callbackDoc = (older: boolean) => ({
    summary: `${older ? 'The OAuth callback under its older name (as /sso/{platform}/callback)' : 'The OAuth callback: finishes the sign-in'}; with client_auth_callback_url a 302 there with ?token= (or #token=), and failures as ?error=<code>&message=, else JSON (below)`,
    tag: 'sso',
    data: CALLBACK_DATA,
    query: CALLBACK_QUERY,
    errors: CALLBACK_ERRORS,
  });
  const beginDoc = (what: string) => ({
    summary: `${what}: a 302 to the provider (state, PKCE S256 and, for OpenID Connect, a nonce are kept server-side), setting the svc_sso cookie the callback needs (unless [scale.sso] bind_browser = false)`,
    status: 302,
    // The answer is a redirect (Location), with an empty body.
    produces: 'text/plain',
    tag: 'sso',
    errors: {
      '404': `NOT_FOUND (no such platform: ${PLATFORMS})`,
      '501': 'SSO_NOT_CONFIGURED (client_id and client_secret are not both set; the message names the settings)',
      '502': 'SSO_PROVIDER_UNAVAILABLE (the discovery document cannot be read; with client_auth_callback_url: a 302 there with error and message)',
    },
  });
  const routes: BuiltinRoute[] = [
    { method: 'GET', path: '/sso/{platform}/login', auth: 'none', doc: beginDoc('Sign in with a provider'), handler: begin('login') },
    { method: 'GET', path: '/sso/{platform}/register', auth: 'none', doc: beginDoc('Sign up with a provider (its sign-up page where it has one)'), handler: begin('register') },
  ];
  for (const path of ['/sso/{platform}/callback', '/sso/{platform}/login/callback']) {
    for (const method of ['GET', 'POST']) routes.push({ method, path, auth: 'none', doc: callbackDoc(path.includes('/login/')), handler: callback });
  }
  routes.push(
    {
      method: 'DELETE',
      path: '/user/sso/{platform}',
      auth: 'token',
      doc: {
        summary: 'Unlink the signed-in user’s account of a provider (the user account stays)',
        tag: 'sso',
        data: { type: 'object', properties: { status: { type: 'string', const: 'unlinked' }, platform: { type: 'string' } } },
        errors: {
          '401': 'UNAUTHORIZED (no valid token)',
          '404': 'NOT_FOUND (no such platform, or no account of it linked)',
          '409': 'SSO_LAST_SIGN_IN (the only way left to sign in: no password and no other provider)',
        },
      },
      handler: async (c) => ({ data: await sso.unlink(c.claims.user_id, c.params.platform as string) }),
    },
    {
      method: 'GET',
      path: '/admin/sso/providers',
      auth: 'admin',
      doc: {
        summary: 'The sign-in providers: platform, name, kind (oidc or oauth2), enabled, aliases, the callback URL to register',
        tag: 'sso',
        errors: { '401': 'UNAUTHORIZED (no valid token)', '403': 'FORBIDDEN (not an admin)' },
      },
      handler: () => ({ data: { providers: sso.providers() } }),
    },
    {
      method: 'GET',
      path: '/admin/sso/users/{username}/accounts',
      auth: 'admin',
      doc: {
        summary: 'A user’s linked provider accounts (by username, email or user id): platform, external_id, linked_at',
        tag: 'sso',
        errors: { '401': 'UNAUTHORIZED (no valid token)', '403': 'FORBIDDEN (not an admin)', '404': 'NOT_FOUND (no such user)' },
      },
      handler: async (c) => ({ data: await sso.accountsOf(c.params.username as string) }),
    },
  );
  return routes;
}

/** The callback's parameters: a `form_post` body (POST), else the query string. */
function callbackParams(c: BuiltinContext): URLSearchParams {
  const type = (c.req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (c.req.method === 'POST' && type === 'application/x-www-form-urlencoded' && c.req.body.length > 0) return new URLSearchParams(c.req.body.toString('utf8'));
  return new URLSearchParams(c.req.query);
}

/** The binding cookie's value in a Cookie header (the first of that name: a browser sends the most specific path first). */
function bindingCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === SSO_BROWSER_COOKIE) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * The Set-Cookie of a binding. Cross-site, a provider's redirect back (GET)
 * carries a Lax cookie but a posted callback (`form_post`) carries only a
 * `SameSite=None` one, which browsers accept only with `Secure` (https).
 */
function setBindingCookie(b: SsoBrowserBinding): string {
  return `${SSO_BROWSER_COOKIE}=${b.value}; Path=/sso; Max-Age=${b.maxAgeSeconds}; HttpOnly; ${b.secure ? 'SameSite=None; Secure' : 'SameSite=Lax'}`;
}

function redirect(location: string): HttpResponse {
  return { status: 302, headers: { location, ...NO_STORE }, body: '' };
}

/** The client's page with these parameters: in its query (kept as it is otherwise) or in its fragment. */
function withParams(target: { url: string; style: 'query' | 'fragment' }, params: Record<string, string>): string {
  const url = new URL(target.url);
  if (target.style === 'fragment') {
    url.hash = new URLSearchParams(params).toString();
  } else {
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  }
  return url.href;
}

/**
 * A failure, sent on to the client's page when there is one (`error`,
 * `message`); else thrown (the error envelope with its status). Failures
 * that are the server's own (a 5xx other than the provider's) are thrown
 * either way, so they are logged.
 */
function failed(sso: SsoService, error: unknown): BuiltinResult {
  const target = sso.clientCallback;
  const e = error as { code?: unknown; status?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const status = typeof e.status === 'number' ? e.status : 500;
  if (!target || !code || (status >= 500 && !code.startsWith('SSO_'))) throw error;
  return { raw: redirect(withParams(target, { error: code, message: typeof e.message === 'string' ? e.message : code })) };
}
