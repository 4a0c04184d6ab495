/**
 * A real OpenID Connect issuer for the sign-in tests: `oidc-provider` (a certified implementation) on a free
 * loopback port, with its development login and consent pages (any login name signs in; its claims come from
 * `claimsOf`), PKCE required, its clients registered up front. `intercept` sees every request first and may answer
 * it itself (a 500, a dropped connection) to play a provider that is down; what it leaves goes to the issuer.
 *
 * `oidc-provider` is loaded when an issuer starts, so importing the kit does not load it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';

/** A client of the issuer: its credentials and the redirect URIs it may use. */
export interface OidcClient {
  id: string;
  secret: string;
  redirectUris: string[];
}

export interface OidcIssuer {
  /** `http://127.0.0.1:<port>`: the issuer identifier, and where it answers. */
  issuer: string;
  /** `<issuer>/.well-known/openid-configuration` */
  discoveryUrl: string;
  /** Stop listening and drop open connections (also done when `t` ends). */
  close(): Promise<void>;
}

/** The claims each scope gives, unless `scopes` says otherwise. */
const SCOPES = { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name'] };

/**
 * @example
 * const idp = await startOidcIssuer(t, {
 *   clients: [{ id: 'svc', secret: 'svc-secret-0123456789abcdef', redirectUris: [`${host}/sso/oidc/callback`] }],
 *   claimsOf: (login) => ({ sub: login, email: `${login}@example.com`, email_verified: true }),
 * });
 * env.SVC_SSO_OIDC_DISCOVERY_URL = idp.discoveryUrl;
 */
export async function startOidcIssuer(
  t: { teardown(fn: () => unknown): void } | undefined,
  options: {
    clients: OidcClient[];
    /** The claims of the account a login name signs in as. */
    claimsOf(login: string): Record<string, unknown>;
    /** The claims each scope gives (default: openid → sub; email → email, email_verified; profile → name, given_name, family_name). */
    scopes?: Record<string, string[]>;
    /** Sees each request first; returns true when it answered the request itself. */
    intercept?(req: IncomingMessage, res: ServerResponse): boolean;
  },
): Promise<OidcIssuer> {
  let provider: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const http = createServer((req, res) => {
    if (options.intercept?.(req, res)) return;
    if (provider) provider(req, res);
    else res.writeHead(503).end();
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const issuer = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await new Promise((r) => http.close(r).closeAllConnections());
  };
  t?.teardown(close);
  const { default: Provider } = await import('oidc-provider');
  provider = new Provider(issuer, {
    clients: options.clients.map((c) => ({ client_id: c.id, client_secret: c.secret, grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: c.redirectUris })),
    async findAccount(_ctx: unknown, id: string) {
      return { accountId: id, claims: async () => options.claimsOf(id) };
    },
    claims: options.scopes ?? SCOPES,
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: ['a-test-cookie-key-0123456789abcdef'] },
  }).callback();
  return { issuer, discoveryUrl: `${issuer}/.well-known/openid-configuration`, close };
}
