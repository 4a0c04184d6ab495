/**
 * Single sign-on providers (README *Single sign-on*): the authorization code
 * flow, always with `state` and PKCE (S256), and a nonce for OpenID Connect,
 * spoken through `oauth4webapi` (a maintained, certified client library).
 * Presets: Google and Microsoft (OpenID Connect, by discovery; here), GitHub
 * (OAuth 2 with its REST API for the verified email; `sso-github.ts`), and
 * any OpenID Connect issuer by its discovery URL (`oidc`; here).
 *
 * A provider answers who signed in — subject, email, whether the provider
 * vouches for that email, profile fields — and nothing about accounts (see
 * `sso.ts`). Only `https` endpoints are spoken to; plain `http` only on a
 * loopback host (127.0.0.0/8, ::1, localhost: tests and local fakes), where
 * oauth4webapi's `allowInsecureRequests` is set for that one request.
 * Every outbound request gives up after `timeoutMs`; a provider that answers
 * 5xx or cannot be reached, at any step (discovery, token exchange,
 * UserInfo, JWKS, GitHub's API), is down: SSO_PROVIDER_UNAVAILABLE (502),
 * never a client error (see {@link httpOptions}).
 */
import * as oauth from 'oauth4webapi';
import { identityError } from './errors.ts';

export type SsoPlatform = 'google' | 'github' | 'microsoft' | 'oidc';
export const SSO_PLATFORMS: readonly SsoPlatform[] = ['google', 'github', 'microsoft', 'oidc'];
/**
 * The original product's platform names (`idp_a`, `idp_b`, `idp_c`), accepted in URLs for the first three.
 *
 * @example
 * SSO_PLATFORM_ALIASES.idp_b // 'github'
 */
export const SSO_PLATFORM_ALIASES: Readonly<Record<string, SsoPlatform>> = { idp_a: 'google', idp_b: 'github', idp_c: 'microsoft' };

/** `[scale.sso.<platform>]` as configured. */
export interface SsoProviderSettings {
  client_id: string;
  client_secret: string;
  scopes: readonly string[];
  /** OpenID Connect: the discovery document (or the issuer URL itself). */
  discovery_url?: string;
  /** GitHub: where users sign in, and the REST API. */
  base_url?: string;
  api_url?: string;
  /** Microsoft: `common`, `organizations`, `consumers` or a tenant id. */
  tenant?: string;
  /** `oidc`: the name shown. */
  display_name?: string;
}

/** What `profile.sso.<platform>` holds: only the fields the provider gave, as strings. */
export interface SsoProfile {
  display_name?: string;
  first_name?: string;
  last_name?: string;
  picture?: string;
}

/** Who signed in, as the provider says. */
export interface ProviderAccount {
  /** The provider's subject (GitHub: the numeric user id, as a string). */
  subject: string;
  email: string | undefined;
  /** The provider vouches for the email (each preset's rule; see there). */
  emailVerified: boolean;
  profile: SsoProfile;
}

/** One sign-in's secrets, made by `begin` and kept server-side until its callback. */
export interface AuthorizationRequest {
  state: string;
  codeVerifier: string;
  /** OpenID Connect only. */
  nonce: string | null;
  redirectUri: string;
  mode: 'login' | 'register';
}

/**
 * @example
 * const google = createSsoProvider('google', config['scale.sso.google']);
 * const url = await google.authorizationUrl({ state, codeVerifier, nonce, redirectUri, mode: 'login' });
 * const who = await google.finish(callbackParams, { state, codeVerifier, nonce, redirectUri, mode: 'login' });
 */
export interface SsoProvider {
  readonly platform: SsoPlatform;
  readonly displayName: string;
  readonly kind: 'oidc' | 'oauth2';
  /** Both `client_id` and `client_secret` are set (and, for `oidc`, `discovery_url`). */
  readonly enabled: boolean;
  authorizationUrl(request: AuthorizationRequest): Promise<URL>;
  /** Check the callback's parameters, exchange the code (with the verifier), and say who signed in. */
  finish(params: URLSearchParams, request: AuthorizationRequest): Promise<ProviderAccount>;
}

export interface SsoProviderOptions {
  /** Each outbound request gives up after this long (default 10 s). */
  timeoutMs?: number;
  /** After a failed discovery, sign-ins fail at once for this long before one tries again (default 2 s). */
  discoveryRetryMs?: number;
}

/**
 * The provider of an OpenID Connect platform (Google, Microsoft, any issuer), from its settings.
 *
 * @example
 * oidcProvider('microsoft', { client_id, client_secret, tenant: 'common', scopes: ['openid', 'email', 'profile'] });
 */
export function oidcProvider(platform: Exclude<SsoPlatform, 'github'>, settings: SsoProviderSettings, options: SsoProviderOptions = {}): SsoProvider {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const retryMs = options.discoveryRetryMs ?? 2_000;
  switch (platform) {
    case 'google':
      return new OidcProvider('google', 'Google', settings, timeoutMs, GOOGLE, retryMs);
    case 'microsoft':
      return new OidcProvider('microsoft', 'Microsoft', settings, timeoutMs, microsoft(settings.tenant || 'common'), retryMs);
    case 'oidc':
      return new OidcProvider('oidc', settings.display_name || 'OpenID Connect', settings, timeoutMs, GENERIC, retryMs);
  }
}

/**
 * Whether a URL is plain http to this machine (tests, local fakes): the only http oauth4webapi is allowed.
 *
 * @example
 * isLoopbackHttp('http://127.0.0.1:8080/token') // true
 * isLoopbackHttp('http://idp.example/token')    // false: only https there
 */
export function isLoopbackHttp(url: string | undefined): boolean {
  if (!url) return false;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:') return false;
  const host = u.hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

// ---- OpenID Connect: Google, Microsoft, any issuer --------------------------------------------

/** What differs between OpenID Connect presets. */
interface OidcPreset {
  /** Issuers the discovery document may name, from the issuer identifier the discovery URL gives. */
  issuers(identifier: string): string[];
  /** The `iss` an ID token must carry, from its (not yet verified) claims; the discovered issuer by default. */
  tokenIssuer?(discovered: string, claims: Record<string, unknown>): string;
  /** Whether the provider vouches for the email in these (verified) claims. */
  emailVerified(claims: Record<string, unknown>): boolean;
}

const GENERIC: OidcPreset = {
  issuers: (identifier) => [identifier],
  emailVerified: (claims) => claims.email_verified === true,
};

const GOOGLE: OidcPreset = {
  issuers: (identifier) => [identifier],
  // Google's documentation allows both forms in ID tokens.
  tokenIssuer: (discovered, claims) => (discovered === 'https://accounts.google.com' && claims.iss === 'accounts.google.com' ? 'accounts.google.com' : discovered),
  emailVerified: (claims) => claims.email_verified === true,
};

/** Personal Microsoft accounts (outlook.com, …) sign in under this tenant. */
export const MICROSOFT_CONSUMER_TENANT = '9188040d-6c67-4c5b-b112-36a304b66dad';
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Microsoft identity platform (v2.0 endpoints). With a multi-tenant
 * authority (`common`, `organizations`) the discovered issuer is a template,
 * `…/{tenantid}/v2.0`: an ID token's `iss` must be that template with the
 * token's own `tid` put in.
 *
 * The email: Microsoft's plain `email` claim is whatever the tenant's admin
 * typed — not verified ("nOAuth": apps that linked accounts by it were taken
 * over). It counts as verified only when `email_verified` is true, when the
 * `xms_edov` claim (email domain owner verified; an optional claim the app
 * registration asks for) is true, or for personal accounts (the consumer
 * tenant, whose emails Microsoft has verified).
 */
function microsoft(tenant: string): OidcPreset {
  return {
    issuers(identifier) {
      const out = [identifier];
      const segment = `/${tenant}/`;
      if (identifier.includes(segment)) {
        if (tenant === 'common' || tenant === 'organizations') out.push(identifier.replace(segment, '/{tenantid}/'));
        if (tenant === 'consumers') out.push(identifier.replace(segment, `/${MICROSOFT_CONSUMER_TENANT}/`));
      }
      return out;
    },
    tokenIssuer(discovered, claims) {
      if (!discovered.includes('{tenantid}')) return discovered;
      const tid = typeof claims.tid === 'string' && GUID.test(claims.tid) ? claims.tid : 'missing-tid';
      return discovered.replace('{tenantid}', tid);
    },
    emailVerified(claims) {
      const edov = claims.xms_edov;
      return claims.email_verified === true || edov === true || edov === 1 || edov === '1' || claims.tid === MICROSOFT_CONSUMER_TENANT;
    },
  };
}

const WELL_KNOWN = '/.well-known/openid-configuration';
/** Discovered metadata is read again after this long (the old copy serves on while a refresh fails). */
const METADATA_TTL_MS = 24 * 3_600_000;

class OidcProvider implements SsoProvider {
  readonly kind = 'oidc';
  private readonly client: oauth.Client;
  private good: { as: oauth.AuthorizationServer; at: number } | undefined;
  private pending: Promise<oauth.AuthorizationServer> | undefined;
  private failedAt = 0;
  private failure: unknown;

  constructor(
    readonly platform: SsoPlatform,
    readonly displayName: string,
    private readonly s: SsoProviderSettings,
    private readonly timeoutMs: number,
    private readonly preset: OidcPreset,
    private readonly retryMs: number,
  ) {
    this.client = { client_id: s.client_id };
  }

  get enabled(): boolean {
    return Boolean(this.s.client_id && this.s.client_secret && this.discoveryUrl());
  }

  private discoveryUrl(): string {
    if (this.s.discovery_url) return this.s.discovery_url;
    return this.platform === 'microsoft' ? `https://login.microsoftonline.com/${encodeURIComponent(this.s.tenant || 'common')}/v2.0${WELL_KNOWN}` : '';
  }

  /**
   * The discovered metadata, cached. A failure is not cached (the next
   * sign-in tries again, after `retryMs`); once read, a copy older than a day
   * is refreshed in the background while it serves on.
   */
  private metadata(): Promise<oauth.AuthorizationServer> {
    const now = Date.now();
    const retry = now - this.failedAt >= this.retryMs;
    if (this.good) {
      if (now - this.good.at >= METADATA_TTL_MS && !this.pending && retry) this.refresh().catch(() => undefined);
      return Promise.resolve(this.good.as);
    }
    if (this.pending) return this.pending;
    if (!retry) return Promise.reject(this.failure);
    return this.refresh();
  }

  private refresh(): Promise<oauth.AuthorizationServer> {
    this.pending = this.discover().then(
      (as) => {
        this.good = { as, at: Date.now() };
        this.pending = undefined;
        return as;
      },
      (error: unknown) => {
        this.pending = undefined;
        this.failedAt = Date.now();
        this.failure = failure(error, 'discovery');
        throw this.failure;
      },
    );
    return this.pending;
  }

  private async discover(): Promise<oauth.AuthorizationServer> {
    const url = this.discoveryUrl();
    const identifier = url.endsWith(WELL_KNOWN) ? url.slice(0, -WELL_KNOWN.length) : url.replace(/\/+$/, '');
    const res = await oauth.discoveryRequest(new URL(identifier), this.http(identifier));
    // The document names its issuer; it must be one this preset expects for that URL.
    const named = await res
      .clone()
      .json()
      .then((body) => (body as { issuer?: unknown } | null)?.issuer)
      .catch(() => undefined);
    const candidates = this.preset.issuers(identifier);
    const expected = candidates.find((c) => typeof named === 'string' && sameUrl(c, named)) ?? (candidates[0] as string);
    const as = await oauth.processDiscoveryResponse(new URL(expected), res);
    if (!as.authorization_endpoint || !as.token_endpoint) throw new Error('the discovery document names no authorization or token endpoint');
    return as;
  }

  private http(url: string | undefined) {
    return httpOptions(url, this.timeoutMs);
  }

  private clientAuth(as: oauth.AuthorizationServer): oauth.ClientAuth {
    // client_secret_basic is the default of the standard; post where the provider offers only that.
    const methods = as.token_endpoint_auth_methods_supported;
    return methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post') ? oauth.ClientSecretPost(this.s.client_secret) : oauth.ClientSecretBasic(this.s.client_secret);
  }

  async authorizationUrl(r: AuthorizationRequest): Promise<URL> {
    const as = await this.metadata();
    const url = new URL(as.authorization_endpoint as string);
    url.searchParams.set('client_id', this.s.client_id);
    url.searchParams.set('redirect_uri', r.redirectUri);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', scopes(this.s.scopes, 'openid'));
    url.searchParams.set('state', r.state);
    url.searchParams.set('nonce', r.nonce ?? '');
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(r.codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    // Registration: the provider's sign-up page where it has one (OpenID Connect "prompt=create").
    if (r.mode === 'register' && Array.isArray(as.prompt_values_supported) && as.prompt_values_supported.includes('create')) url.searchParams.set('prompt', 'create');
    return url;
  }

  async finish(params: URLSearchParams, r: AuthorizationRequest): Promise<ProviderAccount> {
    const as = await this.metadata();
    const checked = callbackParams(as, this.client, params, r.state);
    let tokens: oauth.TokenEndpointResponse;
    let claims: oauth.IDToken;
    let response: Response;
    try {
      response = await oauth.authorizationCodeGrantRequest(as, this.client, this.clientAuth(as), checked, r.redirectUri, r.codeVerifier, this.http(as.token_endpoint));
      // The `iss` the ID token must carry may depend on the token (Microsoft's tenant template).
      const issuer = this.preset.tokenIssuer?.(as.issuer, await unverifiedIdTokenClaims(response)) ?? as.issuer;
      const checkAs: oauth.AuthorizationServer = issuer === as.issuer ? as : { ...as, issuer };
      tokens = await oauth.processAuthorizationCodeResponse(checkAs, this.client, response, { expectedNonce: r.nonce ?? oauth.expectNoNonce, requireIdToken: true });
      claims = oauth.getValidatedIdTokenClaims(tokens) as oauth.IDToken;
      // Over TLS the token endpoint's word is enough (OpenID Connect Core 3.1.3.7); the signature is checked too, as
      // it costs one cached JWKS read per provider.
      if (as.jwks_uri) await oauth.validateApplicationLevelSignature(as, response, this.http(as.jwks_uri));
    } catch (error) {
      throw failure(error, 'exchange');
    }
    let all: Record<string, unknown> = { ...claims };
    if (typeof claims.email !== 'string' && as.userinfo_endpoint) {
      try {
        const res = await oauth.userInfoRequest(as, this.client, tokens.access_token, this.http(as.userinfo_endpoint));
        const info = await oauth.processUserInfoResponse(as, this.client, claims.sub, res);
        // What the ID token says wins; the email (and whether it is verified) come from UserInfo together.
        all = { ...info, ...claims, email: info.email, email_verified: info.email_verified };
      } catch (error) {
        throw failure(error, 'exchange');
      }
    }
    const email = typeof all.email === 'string' && all.email !== '' ? all.email : undefined;
    return {
      subject: claims.sub,
      email,
      emailVerified: email !== undefined && this.preset.emailVerified(all),
      profile: profileOf({ display_name: all.name, first_name: all.given_name, last_name: all.family_name, picture: all.picture }),
    };
  }
}

// ---- shared with the GitHub preset (sso-github.ts) -------------------------------------------------

/**
 * Outbound request options: a timeout, plain http only to a loopback host,
 * and {@link providerFetch} for every request oauth4webapi makes with them.
 */
export function httpOptions(url: string | undefined, timeoutMs: number): { signal: () => AbortSignal; [oauth.allowInsecureRequests]: boolean; [oauth.customFetch]: typeof providerFetch } {
  return { signal: () => AbortSignal.timeout(timeoutMs), [oauth.allowInsecureRequests]: isLoopbackHttp(url), [oauth.customFetch]: providerFetch };
}

/**
 * `fetch` to a provider: no answer (refused, reset, timed out) or a 5xx
 * answer is the provider's outage, SSO_PROVIDER_UNAVAILABLE, whichever step
 * asked. oauth4webapi reads only 4xx bodies as the provider's word and calls
 * a 5xx "not a conform response", which would read as the client's fault.
 */
async function providerFetch(url: string, init: oauth.CustomFetchOptions<string, unknown>): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, init as RequestInit);
  } catch (error) {
    const name = (error as { name?: unknown } | null)?.name;
    throw identityError('SSO_PROVIDER_UNAVAILABLE', name === 'TimeoutError' || name === 'AbortError' ? 'the sign-in provider did not answer in time' : 'the sign-in provider cannot be reached');
  }
  // 429: the provider sheds load (it asks us to come back later) — an outage for the client, as a 5xx is.
  if (res.status >= 500 || res.status === 429) {
    await res.body?.cancel().catch(() => undefined);
    throw identityError('SSO_PROVIDER_UNAVAILABLE', `the sign-in provider answered ${res.status} (${stepOf(url)})`);
  }
  return res;
}

/** Which step a provider URL is, for a message (its path's last segment; never a query). */
function stepOf(url: string): string {
  try {
    const path = new URL(url).pathname;
    return path.endsWith(WELL_KNOWN) ? 'discovery' : (path.split('/').filter(Boolean).pop() ?? '/');
  } catch {
    return 'request';
  }
}

/**
 * The callback's parameters checked by oauth4webapi (state, `iss` where the
 * provider sends it), then: the provider's `error` (SSO_PROVIDER_ERROR), no
 * `code` (SSO_MISSING_CODE).
 */
export function callbackParams(as: oauth.AuthorizationServer, client: oauth.Client, params: URLSearchParams, state: string): URLSearchParams {
  let checked: URLSearchParams;
  try {
    checked = oauth.validateAuthResponse(as, client, params, state);
  } catch (error) {
    throw failure(error, 'callback');
  }
  if (!checked.get('code')) throw identityError('SSO_MISSING_CODE');
  return checked;
}

/** The claims of the ID token in a token response, unverified: only to choose which issuer to verify it against. */
async function unverifiedIdTokenClaims(response: Response): Promise<Record<string, unknown>> {
  try {
    const body = (await response.clone().json()) as { id_token?: unknown };
    if (typeof body.id_token !== 'string') return {};
    const payload = body.id_token.split('.')[1] ?? '';
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function scopes(configured: readonly string[], required?: string): string {
  const set = new Set(configured.filter((s) => s.trim() !== ''));
  if (required) set.add(required);
  return [...set].join(' ');
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}

/** Only string fields, trimmed and capped at the profile's value length (1024). */
export function profileOf(fields: Record<keyof SsoProfile, unknown>): SsoProfile {
  const out: SsoProfile = {};
  for (const [k, v] of Object.entries(fields) as [keyof SsoProfile, unknown][]) {
    if (typeof v === 'string' && v.trim() !== '') out[k] = v.trim().slice(0, 1024);
  }
  return out;
}

/** Provider text for a message: printable, short (it reaches the client's page). */
export function clean(text: string, max: number): string {
  return text.replace(/[^\x20-\x7e\u00a0-\uffff]/g, ' ').slice(0, max);
}

/** A thrown fetch or oauth4webapi error as one of our codes; never a token, code or secret in the message. */
export function failure(error: unknown, phase: 'discovery' | 'callback' | 'exchange'): Error {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof Error && typeof code === 'string' && code.startsWith('SSO_')) return error;
  const name = (error as { name?: unknown })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return identityError('SSO_PROVIDER_UNAVAILABLE', 'the sign-in provider did not answer in time');
  if (error instanceof TypeError && error.message === 'fetch failed') return identityError('SSO_PROVIDER_UNAVAILABLE', 'the sign-in provider cannot be reached');
  if (phase === 'discovery') return identityError('SSO_PROVIDER_UNAVAILABLE', `the provider’s discovery document could not be used: ${clean(error instanceof Error ? error.message : String(error), 200)}`);
  // The provider's own word that it is down (RFC 6749 §4.1.2.1 on the redirect; also seen in token answers): an outage, not a refusal.
  const said = error instanceof oauth.AuthorizationResponseError || error instanceof oauth.ResponseBodyError ? error.error : undefined;
  if (said === 'temporarily_unavailable' || said === 'server_error') return identityError('SSO_PROVIDER_UNAVAILABLE', `the sign-in provider is unavailable (it said ${said})`);
  if (error instanceof oauth.AuthorizationResponseError) {
    return identityError('SSO_PROVIDER_ERROR', `the provider refused the sign-in (${clean(error.error, 64)}${error.error_description ? `: ${clean(error.error_description, 200)}` : ''})`);
  }
  if (error instanceof oauth.ResponseBodyError) {
    if (error.status >= 500) return identityError('SSO_PROVIDER_UNAVAILABLE', `the provider answered ${error.status}`);
    return identityError('SSO_EXCHANGE_FAILED', `the provider refused the code (${clean(error.error, 64)}${error.error_description ? `: ${clean(error.error_description, 200)}` : ''})`);
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) return identityError('SSO_EXCHANGE_FAILED', `the provider refused the access token (${error.status})`);
  const message = error instanceof Error ? error.message : String(error);
  return identityError('SSO_EXCHANGE_FAILED', `the provider’s answer could not be verified: ${clean(message, 200)}`);
}
