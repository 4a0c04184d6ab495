/**
 * CORS, one policy for every server of svc: a single process or a cluster
 * member (`[scale.server.cors]`, through the front) and the microservice
 * gateway (`[scale.microservices.cors]`, transports/sv). README *CORS* says
 * what each key does.
 *
 * Decisions:
 * - `allow_origins = ["*"]` without credentials answers `*` and does not
 *   depend on the Origin: no `Vary: Origin`, and its headers are made once
 *   ({@link CorsPolicy.apply} then costs one `Object.assign` per browser request,
 *   as the fixed headers always did).
 * - A list of origins echoes the matching origin and says `Vary: Origin` on every
 *   answer (also those to another origin, or none: a cache must not hand one
 *   origin's answer to another); origins compare without case or trailing slash.
 * - `allow_credentials = true` with `["*"]` echoes the request's origin (never
 *   `*` with credentials, which browsers refuse), as common gateways do: any
 *   site's page may then call with the user's cookies — configure a list.
 * - `[]` turns CORS off: no CORS header at all, and browsers refuse cross-origin calls.
 * - A preflight echoes only what is a valid token (RFC 9110): a method or header
 *   list with other bytes is left out rather than written back.
 */

/** A CORS section (`[scale.server.cors]`, `[scale.microservices.cors]`): the same keys, the same meaning. */
export interface CorsSettings {
  /** `["*"]` (any origin), a list of origins, or `[]` (no CORS at all). */
  allow_origins: string[];
  /** `["*"]`: the requested method (with GET, POST, PUT, PATCH, DELETE, OPTIONS). */
  allow_methods: string[];
  /** `["*"]`: the requested headers (`*` when none are asked and credentials are off). */
  allow_headers: string[];
  /** `Access-Control-Allow-Credentials: true`, and the origin echoed (never `*`). */
  allow_credentials: boolean;
  /** Response headers a page's script may read. */
  expose_headers: string[];
  /** Seconds a browser may cache a preflight answer (negative: no header). */
  max_age: number;
}

/** Headers as node:http and the front keep them (a header bag {@link CorsPolicy} adds to). */
export type HeaderBag = Record<string, string | number | string[] | undefined>;

/** What a preflight is read from: the request's headers (node:http's, or the front's copies). */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

const STANDARD_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const METHOD_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z, \t-]*$/;

/**
 * The CORS headers of a {@link CorsSettings}: those of actual answers, of
 * preflights, and whether a WebSocket upgrade's origin is refused.
 *
 * @example
 * const cors = new CorsPolicy({ allow_origins: ['https://app.example'], allow_methods: ['*'], allow_headers: ['*'], allow_credentials: true, expose_headers: [], max_age: 600 });
 * const headers: HeaderBag = { 'content-type': 'application/json' };
 * cors.apply('https://app.example', headers); // access-control-allow-origin: https://app.example, vary: Origin, …
 */
export class CorsPolicy {
  readonly enabled: boolean;
  private readonly any: boolean;
  private readonly origins: Set<string>;
  /** The headers of every answer to a request with an Origin when they do not depend on which one (`*`, no credentials). */
  private readonly fixed: Readonly<Record<string, string>> | undefined;
  private readonly expose: string | undefined;

  constructor(private readonly c: CorsSettings) {
    this.enabled = c.allow_origins.length > 0;
    this.any = c.allow_origins.includes('*');
    this.origins = new Set(c.allow_origins.map(normalOrigin));
    this.expose = c.expose_headers.length > 0 ? c.expose_headers.join(', ') : undefined;
    this.fixed = this.enabled && this.any && !c.allow_credentials ? Object.freeze({ 'access-control-allow-origin': '*', ...(this.expose === undefined ? {} : { 'access-control-expose-headers': this.expose }) }) : undefined;
  }

  /** Whether answers depend on the request's Origin (then they say `Vary: Origin`). */
  private get echoes(): boolean {
    return this.enabled && this.fixed === undefined;
  }

  /** The Access-Control-Allow-Origin value for `origin`, if it is allowed. */
  private allowOrigin(origin: string | undefined): string | undefined {
    if (!this.enabled || origin === undefined) return undefined;
    if (this.any) return this.c.allow_credentials ? origin : '*';
    return this.origins.has(normalOrigin(origin)) ? origin : undefined;
  }

  /** An upgrade from a browser origin a non-`*` allow list leaves out. */
  refusesUpgrade(origin: string): boolean {
    return this.enabled && !this.any && !this.origins.has(normalOrigin(origin));
  }

  /** Add the CORS headers of an actual answer to `headers` (the request's `origin`, if it has one). */
  apply(origin: string | undefined, headers: HeaderBag): void {
    const fixed = this.fixed;
    if (fixed !== undefined) {
      if (origin !== undefined) Object.assign(headers, fixed);
      return;
    }
    if (!this.enabled) return;
    addVary(headers);
    const allowed = this.allowOrigin(origin);
    if (allowed === undefined) return;
    headers['access-control-allow-origin'] = allowed;
    if (this.c.allow_credentials) headers['access-control-allow-credentials'] = 'true';
    if (this.expose !== undefined) headers['access-control-expose-headers'] = this.expose;
  }

  /**
   * The CORS headers of an answer a server writes without the front (a 413, a
   * 408, a malformed request): as {@link apply}, and `*` even without an Origin
   * under the permissive default (as such answers always were).
   */
  rawHeaders(origin: string | undefined): Record<string, string> {
    if (this.fixed !== undefined) return { 'access-control-allow-origin': '*' };
    const headers: HeaderBag = {};
    this.apply(origin, headers);
    return headers as Record<string, string>;
  }

  /** The whole answer to a preflight (`OPTIONS` with an Origin and `Access-Control-Request-Method`): its headers. */
  preflight(origin: string, req: RequestHeaders): HeaderBag {
    const headers: HeaderBag = {};
    if (this.echoes) addVary(headers);
    const allowed = this.allowOrigin(origin);
    if (allowed === undefined) return headers;
    headers['access-control-allow-origin'] = allowed;
    if (this.c.allow_credentials) headers['access-control-allow-credentials'] = 'true';
    return Object.assign(headers, this.grants(req));
  }

  /**
   * What a preflight is allowed (methods, headers, max age), without the
   * origin's headers ({@link apply} adds those): for an allowed origin, or
   * for any `OPTIONS` when the policy does not depend on the origin.
   */
  preflightGrants(origin: string | undefined, req: RequestHeaders): Record<string, string> {
    if (!this.enabled || (this.fixed === undefined && this.allowOrigin(origin) === undefined)) return {};
    return this.grants(req);
  }

  private grants(req: RequestHeaders): Record<string, string> {
    const out: Record<string, string> = {};
    const asked = one(req['access-control-request-method']);
    // Only a method token (RFC 9110) is echoed: anything else (a non-ASCII byte…) could not even be written as a header.
    const method = asked !== undefined && METHOD_TOKEN.test(asked) ? asked.toUpperCase() : undefined;
    const methods = this.c.allow_methods.includes('*') ? [...STANDARD_METHODS, ...(method === undefined || STANDARD_METHODS.includes(method) ? [] : [method])] : this.c.allow_methods;
    if (methods.length > 0) out['access-control-allow-methods'] = methods.join(', ');
    const askedHeaders = one(req['access-control-request-headers']);
    if (!this.c.allow_headers.includes('*')) {
      if (this.c.allow_headers.length > 0) out['access-control-allow-headers'] = this.c.allow_headers.join(', ');
    } else if (askedHeaders !== undefined && askedHeaders !== '') {
      if (HEADER_LIST.test(askedHeaders)) out['access-control-allow-headers'] = askedHeaders;
    } else if (!this.c.allow_credentials) out['access-control-allow-headers'] = '*';
    if (this.c.max_age >= 0) out['access-control-max-age'] = String(this.c.max_age);
    return out;
  }
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** `https://App.example.com/` → `https://app.example.com` (origins compare without case or a trailing slash). */
function normalOrigin(origin: string): string {
  return origin.trim().replace(/\/+$/, '').toLowerCase();
}

function addVary(headers: HeaderBag): void {
  const vary = headers.vary;
  const text = Array.isArray(vary) ? vary.join(', ') : vary === undefined ? '' : String(vary);
  if (text.trim() === '*' || /(^|,)\s*origin\s*(,|$)/i.test(text)) return;
  headers.vary = text ? `${text}, Origin` : 'Origin';
}
