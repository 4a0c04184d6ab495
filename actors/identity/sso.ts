/**
 * Single sign-on (README *Single sign-on*): start a
 * sign-in at a provider, finish it at the callback, and turn who the
 * provider says signed in into an account of ours — HTTP-free (the routes
 * hand it parsed parameters and turn its answers into redirects).
 *
 * Finishing a sign-in, in order: its `state` must be one we handed out, for
 * this platform, not used and not expired (SSO_INVALID_STATE); the provider's
 * `error` (SSO_PROVIDER_ERROR); no `code` (SSO_MISSING_CODE); the code
 * exchanged with the PKCE verifier (and for OpenID Connect the ID token's
 * nonce, issuer, audience checked) (SSO_EXCHANGE_FAILED). Then the account:
 *
 * 1. a user with this SSO identity (platform + subject) signs in;
 * 2. else, when the provider vouches for the email, the user with that email
 *    gets the SSO identity linked (and that email counts as verified; an
 *    account that had never verified it is taken over, below);
 * 3. else, with a vouched-for email and no such user, a new user: role
 *    `user`, no password, the email verified (the recovery identity), the
 *    SSO identity, their graph root;
 * 4. an email the provider does not vouch for (or none) creates nothing and
 *    links nothing: SSO_EMAIL_UNVERIFIED. (Unlike the original product, which links by
 *    any email: linking by an unverified one let strangers into accounts.)
 *
 * Every sign-in writes `profile.sso.<platform>` (display_name, first_name,
 * last_name, picture: those the provider gave; no key at all when it gave
 * none), leaving every other key of the profile as it was. A disabled user is refused as `/user/login`
 * refuses one (INVALID_CREDENTIALS).
 *
 * Browser binding (login CSRF, RFC 6749 §10.12): a sign-in is bound to the
 * browser that started it. `/login` (and `/register`) sets a cookie,
 * {@link SSO_BROWSER_COOKIE} — 32 random bytes, or the well-formed one the
 * browser sends already, so two tabs signing in at once both finish — and
 * the pending sign-in keeps only its SHA-256. The callback must bring that
 * cookie (its hash compared in constant time), else it fails as a bad state
 * does (SSO_INVALID_STATE), the state spent either way: without it, whoever
 * hands someone the callback URL of their own sign-in signs that person in
 * as themselves. `[scale.sso] bind_browser = false` turns this off, for
 * clients that keep no cookies (a native app driving the flow itself). The
 * cookie is `SameSite=None; Secure` when the redirect URI is https (a
 * provider posting the callback back, `form_post`, still brings it), and
 * `SameSite=Lax` on plain http (development), where a posted callback
 * cannot bring it: use the provider's GET (query) response, or https.
 * Limit: a host that can set cookies for this one (a sibling subdomain, or
 * plain http on the same host) can plant a binding of its own choosing.
 *
 * Account pre-hijacking: someone may register an address with a password
 * before its owner ever signs in with SSO. Rule 2 still links the owner to
 * that account, but takes it over: when the account never verified the email
 * itself, its password is removed, its API keys deleted and every token
 * issued before voided, on every thread and member (the security stamp moves
 * and the revocation is broadcast, as `Tokens.revoke` does) before the link
 * is made and the email marked verified. The owner sets a password, if they
 * want one, through forgot-password (their email is verified now). An
 * account that had verified the email itself keeps its password, keys and
 * tokens.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import * as oauth from 'oauth4webapi';
import { identityError, notFound } from './errors.ts';
import { FIELD_MAX, identityValue } from './schemas.ts';
import { GitHubProvider } from './sso-github.ts';
import { oidcProvider, SSO_PLATFORM_ALIASES, SSO_PLATFORMS, type ProviderAccount, type SsoPlatform, type SsoProfile, type SsoProvider, type SsoProviderOptions, type SsoProviderSettings } from './sso-providers.ts';
import { type SsoStateStore, stateKey } from './sso-states.ts';
import { type Identity, normalize, type UserPatch, type UserRecord, userRecord, type UsersRepository } from './users-repository.ts';

/** `[scale.sso]`. */
export interface SsoSettings {
  /** The server's public URL; empty: from the request's Host header (development). */
  host: string;
  /** The app's page the browser goes back to; empty: the callback answers JSON. */
  client_auth_callback_url: string;
  /** `fragment`: `#token=`; anything else: `?token=` (the original product's way). */
  callback_style: string;
  state_ttl_seconds: number;
  /** Bind each sign-in to the browser that started it (a cookie); false for clients that keep no cookies. */
  bind_browser: boolean;
}

export interface SsoServiceOptions {
  users: UsersRepository;
  states: SsoStateStore;
  /** One per platform (disabled ones included: they answer 501). */
  providers: readonly SsoProvider[];
  settings: SsoSettings;
  /** A token for a user, as `/user/login` issues (IdentityService.token). */
  token(user: UserRecord): Promise<string>;
  /** Change a user and void every token issued before, on every thread and member, before resolving (IdentityService.revokeTokens). */
  revokeTokens(userId: string, patch: UserPatch): Promise<void>;
  /** Creates a new user's graph root. */
  createRoot(rootId: string): Promise<void>;
  log?: (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, unknown>) => void;
  /** Now, in ms (tests). */
  now?: () => number;
}

/** The cookie that binds a sign-in to its browser (see the file's comment). */
export const SSO_BROWSER_COOKIE = 'svc_sso';

/** What a browser binding looks like: 32 bytes, base64url. */
const BINDING = /^[A-Za-z0-9_-]{43}$/;

/** The binding cookie `begin` asks the browser to keep: the route writes it on its redirect. */
export interface SsoBrowserBinding {
  /** The cookie's value (the one the browser sent, when well formed; else new). */
  value: string;
  /** The redirect URI is https: `SameSite=None; Secure` (else `SameSite=Lax`). */
  secure: boolean;
  /** As long as the sign-in may take (`state_ttl_seconds`). */
  maxAgeSeconds: number;
}

/** A started sign-in: where the browser goes, and the cookie it keeps meanwhile (none with `bind_browser = false`). */
export interface SsoStart {
  url: string;
  binding: SsoBrowserBinding | undefined;
}

/** A finished sign-in. */
export interface SsoResult {
  user: UserRecord;
  token: string;
  /** A new account was made. */
  created: boolean;
  /** The SSO identity was linked to an account that existed (by its email). */
  linked: boolean;
}

/** An entry of `/admin/sso/providers`. */
export interface SsoProviderInfo {
  platform: SsoPlatform;
  display_name: string;
  kind: 'oidc' | 'oauth2';
  enabled: boolean;
  aliases: string[];
  /** The redirect URI to register at the provider; null when `[scale.sso] host` is empty (then it follows each request's Host). */
  callback_url: string | null;
}

/**
 * The provider of a platform, from its `[scale.sso.<platform>]` settings.
 *
 * @example
 * const providers = SSO_PLATFORMS.map((p) => createSsoProvider(p, config[`scale.sso.${p}`]));
 */
export function createSsoProvider(platform: SsoPlatform, settings: SsoProviderSettings, options: SsoProviderOptions = {}): SsoProvider {
  return platform === 'github' ? new GitHubProvider(settings, options) : oidcProvider(platform, settings, options);
}

const HOST_HEADER = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * @example
 * const sso = new SsoService({ users, states, providers, settings: config['scale.sso'], token: (u) => identity.token(u), revokeTokens: (id, p) => identity.revokeTokens(id, p), createRoot });
 * const { url, binding } = await sso.begin('google', 'login', host, cookies.svc_sso); // 302 to url, Set-Cookie: svc_sso=binding.value
 * const { user, token, created } = await sso.finish('google', new URLSearchParams(query), cookies.svc_sso);
 */
export class SsoService {
  private readonly byPlatform = new Map<SsoPlatform, SsoProvider>();
  private readonly now: () => number;

  constructor(private readonly o: SsoServiceOptions) {
    for (const p of o.providers) this.byPlatform.set(p.platform, p);
    this.now = o.now ?? Date.now;
  }

  /** Where the browser goes back to with the token, and how; undefined: the callback answers JSON. */
  get clientCallback(): { url: string; style: 'query' | 'fragment' } | undefined {
    const url = this.o.settings.client_auth_callback_url;
    return url ? { url, style: this.o.settings.callback_style === 'fragment' ? 'fragment' : 'query' } : undefined;
  }

  /** The platform id of a URL segment (`google` or its alias `idp_a`, …); 404 NOT_FOUND for anything else. */
  platform(segment: string): SsoPlatform {
    if ((SSO_PLATFORMS as readonly string[]).includes(segment)) return segment as SsoPlatform;
    if (Object.hasOwn(SSO_PLATFORM_ALIASES, segment)) return SSO_PLATFORM_ALIASES[segment] as SsoPlatform;
    throw notFound(`no sign-in provider ${segment.slice(0, 64)} (there are ${SSO_PLATFORMS.join(', ')})`);
  }

  /** The enabled provider of a segment: 404 for an unknown one, 501 SSO_NOT_CONFIGURED for one without both client_id and client_secret. */
  provider(segment: string): SsoProvider {
    const platform = this.platform(segment);
    const provider = this.byPlatform.get(platform);
    if (!provider?.enabled) throw identityError('SSO_NOT_CONFIGURED', notConfigured(platform, provider?.displayName ?? platform));
    return provider;
  }

  /** Every provider, enabled or not (`/admin/sso/providers`). */
  providers(): SsoProviderInfo[] {
    const base = this.o.settings.host.replace(/\/+$/, '');
    return SSO_PLATFORMS.map((platform) => {
      const p = this.byPlatform.get(platform);
      return {
        platform,
        display_name: p?.displayName ?? platform,
        kind: p?.kind ?? (platform === 'github' ? 'oauth2' : 'oidc'),
        enabled: p?.enabled ?? false,
        aliases: Object.entries(SSO_PLATFORM_ALIASES)
          .filter(([, to]) => to === platform)
          .map(([alias]) => alias),
        callback_url: base ? `${base}/sso/${platform}/callback` : null,
      };
    });
  }

  /**
   * Start a sign-in: its state, PKCE verifier and nonce are made here and
   * kept server-side for `state_ttl_seconds`; the answer is the provider's
   * authorization URL (the browser is sent there), and — unless
   * `bind_browser` is off — the binding cookie the browser keeps meanwhile:
   * `browser`, the {@link SSO_BROWSER_COOKIE} it sent, when well formed, or
   * a new one. The redirect URI names the platform as the request did (an
   * alias stays an alias).
   */
  async begin(segment: string, mode: 'login' | 'register', requestHost?: string, browser?: string): Promise<SsoStart> {
    const provider = this.provider(segment);
    const redirectUri = `${this.base(requestHost)}/sso/${segment}/callback`;
    const state = oauth.generateRandomState();
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const nonce = provider.kind === 'oidc' ? oauth.generateRandomNonce() : null;
    const binding = this.o.settings.bind_browser ? (browser !== undefined && BINDING.test(browser) ? browser : randomBytes(32).toString('base64url')) : undefined;
    const url = await provider.authorizationUrl({ state, codeVerifier, nonce, redirectUri, mode });
    await this.o.states.put(
      stateKey(state),
      { platform: provider.platform, mode, code_verifier: codeVerifier, nonce, redirect_uri: redirectUri, browser: binding === undefined ? null : bindingHash(binding), created: this.now() },
      this.ttlMs(),
    );
    return { url: url.href, binding: binding === undefined ? undefined : { value: binding, secure: redirectUri.startsWith('https:'), maxAgeSeconds: this.o.settings.state_ttl_seconds } };
  }

  /**
   * Finish a sign-in from the callback's parameters (query, or form body for
   * `form_post`) and the {@link SSO_BROWSER_COOKIE} the browser sent (when
   * `bind_browser` is on, the one the sign-in was started with): see the
   * file's comment.
   */
  async finish(segment: string, params: URLSearchParams, browser?: string): Promise<SsoResult> {
    const provider = this.provider(segment);
    const given = params.getAll('state');
    const state = given.length === 1 ? (given[0] as string) : '';
    if (state === '' || state.length > 512) throw identityError('SSO_INVALID_STATE');
    // Taken (spent) before anything is checked: a state presented with the wrong cookie cannot be tried again.
    const pending = await this.o.states.take(stateKey(state));
    if (!pending || pending.platform !== provider.platform || this.now() - pending.created > this.ttlMs()) throw identityError('SSO_INVALID_STATE');
    if (this.o.settings.bind_browser && !sameBrowser(pending.browser, browser)) {
      throw identityError('SSO_INVALID_STATE', 'this sign-in was started in another browser (or this one did not keep its cookie): start it again here');
    }
    const who = await provider.finish(params, { state, codeVerifier: pending.code_verifier, nonce: pending.nonce, redirectUri: pending.redirect_uri, mode: pending.mode });
    // Two callbacks of one person at once (two tabs) may race to create or link: the loser looks again.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.signIn(provider, who);
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'IDENTITY_TAKEN' || attempt >= 2) throw error;
      }
    }
  }

  /**
   * Unlink the user's identity of a platform; the account stays. 404 when
   * none is linked; SSO_LAST_SIGN_IN when it is their only way to sign in
   * (no password, no other provider). `profile.sso.<platform>` goes too.
   */
  async unlink(userId: string, segment: string): Promise<{ status: 'unlinked'; platform: SsoPlatform }> {
    const platform = this.platform(segment);
    const outcome = await this.o.users.removeSsoIdentity(userId, platform);
    if (outcome === 'absent') throw notFound(`no ${platform} account is linked to this user`);
    if (outcome === 'last') throw identityError('SSO_LAST_SIGN_IN');
    const user = await this.o.users.byId(userId);
    const sso = user && isObject(user.profile.sso) ? { ...user.profile.sso } : undefined;
    if (user && sso && platform in sso) {
      delete sso[platform];
      const { sso: _old, ...rest } = user.profile;
      await this.o.users.update(userId, { profile: Object.keys(sso).length ? { ...rest, sso } : rest });
    }
    return { status: 'unlinked', platform };
  }

  /** A user's SSO accounts (admin), by username, email or user id; 404 for no such user. */
  async accountsOf(name: string): Promise<{ user_id: string; accounts: { platform: string; external_id: string; linked_at: string | null }[] }> {
    const user = name.length <= FIELD_MAX.identity ? ((await this.o.users.byIdentity(normalize(name))) ?? (await this.o.users.byId(name))) : undefined;
    if (!user) throw notFound(`no user ${name.slice(0, 64)}`);
    const accounts = user.identities.filter((i) => i.type === 'sso').map((i) => ({ platform: i.provider ?? '', external_id: i.external_id ?? '', linked_at: i.linked_at ?? null }));
    return { user_id: user.user_id, accounts };
  }

  private async signIn(provider: SsoProvider, who: ProviderAccount): Promise<SsoResult> {
    const { users } = this.o;
    const platform = provider.platform;
    let user = await users.bySso(platform, who.subject);
    let created = false;
    let linked = false;
    if (user) {
      refuseDisabled(user);
    } else {
      const email = vouchedEmail(who, provider.displayName);
      const normalized = normalize(email);
      const owner = await users.byIdentity(normalized);
      if (owner) {
        refuseDisabled(owner);
        if (owner.identities.some((i) => i.type === 'sso' && i.provider === platform)) {
          throw identityError('IDENTITY_TAKEN', `the account with this email is linked to another ${provider.displayName} account already`);
        }
        // Rule 8 links whether or not the account had verified this email itself; one that had not is taken over first
        // (pre-hijacking, see the file's comment): should a later step fail, the account is left without the
        // registrant's password, never linked with it.
        const local = owner.identities.find((i) => i.type === 'email' && i.value_normalized === normalized);
        if (!local?.verified) await this.takeOver(owner, platform);
        await users.addIdentity(owner.user_id, ssoIdentity(platform, who.subject, this.now()));
        // The provider vouches for the address: the account's own email identity is verified now.
        if (local && !local.verified) await users.setVerified(owner.user_id, normalized);
        user = owner;
        linked = true;
        this.o.log?.('info', 'sso identity linked to an account by its verified email', { user_id: owner.user_id, platform });
      } else {
        const record = userRecord({
          user_id: randomUUID(),
          role: 'user',
          profile: withSso({}, platform, who.profile),
          identities: [{ type: 'email', value_raw: email, value_normalized: normalized, verified: true, is_recovery: true }, ssoIdentity(platform, who.subject, this.now())],
        });
        await users.create(record);
        await this.o.createRoot(record.root_id);
        user = record;
        created = true;
      }
    }
    if (!created) {
      const current = (await users.byId(user.user_id)) ?? user;
      const profile = withSso(current.profile, platform, who.profile);
      if (!isDeepStrictEqual(profile, current.profile)) await users.update(user.user_id, { profile });
    }
    const fresh = await users.byId(user.user_id);
    if (!fresh) throw identityError('INVALID_CREDENTIALS');
    refuseDisabled(fresh);
    return { user: fresh, token: await this.o.token(fresh), created, linked };
  }

  /**
   * An account about to be linked by an email it never verified: whoever
   * registered it may not own the address. Its API keys go, then its
   * password, and every token issued before is void on every thread and
   * member once `revokeTokens` resolves (the same broadcast makes every
   * thread forget the keys it holds in memory).
   */
  private async takeOver(owner: UserRecord, platform: SsoPlatform): Promise<void> {
    const { users } = this.o;
    const removeKeys = async () => {
      let n = 0;
      for (const key of await users.apiKeysOf(owner.user_id)) if (await users.deleteApiKey(owner.user_id, key.api_key_id)) n++;
      return n;
    };
    let keys = await removeKeys();
    // No password left to change: a forced change would lock the new owner out.
    await this.o.revokeTokens(owner.user_id, { password_hash: null, must_change_password: false });
    // A key made by a request let in before the revocation may have landed after the first pass.
    keys += await removeKeys();
    const removed = owner.password_hash !== null ? 'its password was removed, its tokens and API keys voided' : 'its tokens and API keys voided (it had no password)';
    this.o.log?.('info', `sso sign-in took over an account whose email was never verified: ${removed}`, {
      user_id: owner.user_id,
      platform,
      password_removed: owner.password_hash !== null,
      api_keys_removed: keys,
    });
  }

  private ttlMs(): number {
    return this.o.settings.state_ttl_seconds * 1000;
  }

  /** `[scale.sso] host`, or (development) `http://` + the request's Host header. */
  private base(requestHost: string | undefined): string {
    const host = this.o.settings.host.replace(/\/+$/, '');
    if (host) return host;
    if (requestHost && HOST_HEADER.test(requestHost)) return `http://${requestHost}`;
    throw identityError('SSO_NOT_CONFIGURED', 'the redirect URI cannot be made: set [scale.sso] host (SVC_SSO_HOST) to the server’s public URL');
  }
}

function notConfigured(platform: SsoPlatform, name: string): string {
  const alias = Object.entries(SSO_PLATFORM_ALIASES).find(([, to]) => to === platform)?.[0];
  const env = `SVC_SSO_${platform.toUpperCase()}_`;
  const extra = platform === 'oidc' ? ', and discovery_url (SVC_SSO_OIDC_DISCOVERY_URL)' : '';
  return `${name} sign-in is not configured on this server: set client_id and client_secret in [scale.sso.${platform}]${alias ? ` (or [scale.sso.${alias}])` : ''}, or ${env}CLIENT_ID and ${env}CLIENT_SECRET${extra}`;
}

/** The email the provider vouches for, checked as registration checks one; SSO_EMAIL_UNVERIFIED otherwise. */
function vouchedEmail(who: ProviderAccount, name: string): string {
  if (!who.email || !who.emailVerified) throw identityError('SSO_EMAIL_UNVERIFIED', `${name} gives no verified email for this account: no account is created or linked`);
  try {
    return identityValue('email', who.email, 'email');
  } catch {
    throw identityError('SSO_EMAIL_UNVERIFIED', `the email ${name} gives is not one this server accepts: no account is created or linked`);
  }
}

function ssoIdentity(platform: SsoPlatform, subject: string, now: number): Identity {
  const value = `${platform}:${subject}`;
  return { type: 'sso', value_raw: value, value_normalized: value, verified: true, is_recovery: false, provider: platform, external_id: subject, linked_at: new Date(now).toISOString() };
}

/** What a pending sign-in keeps of its browser binding: its SHA-256, base64url. */
function bindingHash(binding: string): string {
  return createHash('sha256').update(binding).digest('base64url');
}

/** The cookie the callback came with hashes to the one the sign-in was started with (compared in constant time). */
function sameBrowser(expected: string | null | undefined, presented: string | undefined): boolean {
  if (!expected || presented === undefined || !BINDING.test(presented)) return false;
  const want = Buffer.from(expected, 'base64url');
  const got = createHash('sha256').update(presented).digest();
  return want.length === got.length && timingSafeEqual(want, got);
}

function refuseDisabled(user: UserRecord): void {
  if (user.status !== 'active') throw identityError('INVALID_CREDENTIALS');
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/**
 * The profile with `sso.<platform>` replaced by what the provider gave, every
 * other key as it was: gave nothing, no `sso.<platform>` (nor an `sso` left empty).
 */
function withSso(profile: Record<string, unknown>, platform: SsoPlatform, fields: SsoProfile): Record<string, unknown> {
  const { [platform]: _old, ...others } = isObject(profile.sso) ? profile.sso : {};
  const sso = Object.keys(fields).length > 0 ? { ...others, [platform]: { ...fields } } : others;
  const { sso: _sso, ...rest } = profile;
  return Object.keys(sso).length > 0 ? { ...rest, sso } : rest;
}
