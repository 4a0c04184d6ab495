/**
 * The GitHub preset of single sign-on (see `sso-providers.ts` for the
 * others and what they share): OAuth 2 — GitHub issues no ID tokens — with
 * its REST API for who signed in and their verified email.
 */
import * as oauth from 'oauth4webapi';
import { identityError } from './errors.ts';
import { type AuthorizationRequest, callbackParams, clean, failure, httpOptions, type ProviderAccount, profileOf, scopes, type SsoProvider, type SsoProviderOptions, type SsoProviderSettings } from './sso-providers.ts';

/**
 * GitHub (or GitHub Enterprise): OAuth 2 without ID tokens, so no nonce —
 * still `state` and PKCE (S256), which GitHub supports. The user is
 * `GET /user` (the numeric id is the subject); the email is the primary
 * verified one of `GET /user/emails`, else any verified one (the `email`
 * of `/user` is only the public one, and says nothing of verification).
 *
 * @example
 * new GitHubProvider({ client_id, client_secret, scopes: ['read:user', 'user:email'] });
 */
export class GitHubProvider implements SsoProvider {
  readonly platform = 'github' as const;
  readonly displayName = 'GitHub';
  readonly kind = 'oauth2' as const;
  private readonly as: oauth.AuthorizationServer;
  private readonly client: oauth.Client;
  private readonly api: string;
  private readonly timeoutMs: number;

  constructor(
    private readonly s: SsoProviderSettings,
    options: SsoProviderOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    const base = (s.base_url || 'https://github.com').replace(/\/+$/, '');
    this.api = (s.api_url || 'https://api.github.com').replace(/\/+$/, '');
    this.as = { issuer: base, authorization_endpoint: `${base}/login/oauth/authorize`, token_endpoint: `${base}/login/oauth/access_token` };
    this.client = { client_id: s.client_id };
  }

  get enabled(): boolean {
    return Boolean(this.s.client_id && this.s.client_secret);
  }

  private http(url: string | undefined) {
    return httpOptions(url, this.timeoutMs);
  }

  async authorizationUrl(r: AuthorizationRequest): Promise<URL> {
    const url = new URL(this.as.authorization_endpoint as string);
    url.searchParams.set('client_id', this.s.client_id);
    url.searchParams.set('redirect_uri', r.redirectUri);
    url.searchParams.set('scope', scopes(this.s.scopes));
    url.searchParams.set('state', r.state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(r.codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('allow_signup', 'true');
    return url;
  }

  async finish(params: URLSearchParams, r: AuthorizationRequest): Promise<ProviderAccount> {
    const checked = callbackParams(this.as, this.client, params, r.state);
    let accessToken: string;
    try {
      const res = await oauth.authorizationCodeGrantRequest(this.as, this.client, oauth.ClientSecretPost(this.s.client_secret), checked, r.redirectUri, r.codeVerifier, {
        ...this.http(this.as.token_endpoint),
        headers: { accept: 'application/json' },
      });
      // GitHub answers a refused code with 200 and an `error` field.
      const body = (await res
        .clone()
        .json()
        .catch(() => ({}))) as { error?: unknown; error_description?: unknown };
      if (typeof body.error === 'string') throw identityError('SSO_EXCHANGE_FAILED', `GitHub refused the code (${clean(body.error, 64)}${typeof body.error_description === 'string' ? `: ${clean(body.error_description, 200)}` : ''})`);
      accessToken = (await oauth.processAuthorizationCodeResponse(this.as, this.client, res)).access_token;
    } catch (error) {
      throw failure(error, 'exchange');
    }
    const user = (await this.get(accessToken, '/user')) as { id?: unknown; login?: unknown; name?: unknown; avatar_url?: unknown };
    if (typeof user.id !== 'number' || !Number.isSafeInteger(user.id)) throw identityError('SSO_EXCHANGE_FAILED', 'GitHub’s /user answer has no numeric id');
    const emails = await this.get(accessToken, '/user/emails');
    const list = (Array.isArray(emails) ? emails : []) as { email?: unknown; primary?: unknown; verified?: unknown }[];
    const verified = list.filter((e) => e.verified === true && typeof e.email === 'string');
    const chosen = verified.find((e) => e.primary === true) ?? verified[0];
    const name = typeof user.name === 'string' && user.name.trim() !== '' ? user.name.trim() : undefined;
    const [first, ...rest] = name ? name.split(/\s+/) : [];
    return {
      subject: String(user.id),
      email: chosen?.email as string | undefined,
      emailVerified: chosen !== undefined,
      profile: profileOf({ display_name: name ?? user.login, first_name: first, last_name: rest.length ? rest.join(' ') : undefined, picture: user.avatar_url }),
    };
  }

  private async get(accessToken: string, path: string): Promise<unknown> {
    const url = `${this.api}${path}`;
    try {
      const headers = new Headers({ accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'svc' });
      const res = await oauth.protectedResourceRequest(accessToken, 'GET', new URL(url), headers, null, this.http(url));
      if (res.status !== 200) throw identityError('SSO_EXCHANGE_FAILED', `GitHub’s API answered ${res.status} to ${path}`);
      return await res.json();
    } catch (error) {
      throw failure(error, 'exchange');
    }
  }
}
