/**
 * The gateway's CORS policy (`[scale.microservices.cors]`, README
 * *Microservice mode*): the headers of its answers and preflights, in place
 * of the modules' own, and the origins a WebSocket upgrade is refused from.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** `[scale.microservices.cors]`. */
export interface GatewayCors {
  /** `["*"]` (any origin), a list of origins, or `[]` (no CORS at all). */
  allow_origins: string[];
  /** `["*"]`: the requested method (with GET, POST, PUT, PATCH, DELETE, OPTIONS). */
  allow_methods: string[];
  /** `["*"]`: the requested headers. */
  allow_headers: string[];
  allow_credentials: boolean;
  expose_headers: string[];
  /** Seconds a browser may cache a preflight answer (negative: no header). */
  max_age: number;
}

const STANDARD_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** The CORS headers of `[scale.microservices.cors]`. */
export class CorsPolicy {
  readonly enabled: boolean;
  private readonly any: boolean;
  private readonly origins: Set<string>;

  constructor(private readonly c: GatewayCors) {
    this.enabled = c.allow_origins.length > 0;
    this.any = c.allow_origins.includes('*');
    this.origins = new Set(c.allow_origins.map(normalOrigin));
  }

  /** Whether responses depend on the request's Origin (then they say `Vary: Origin`). */
  private get echoes(): boolean {
    return !this.any || this.c.allow_credentials;
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

  /** Add the CORS headers of an actual response to `headers` (the module's were taken out already). */
  apply(origin: string | undefined, headers: OutgoingHttpHeaders): void {
    if (!this.enabled) return;
    if (this.echoes) addVary(headers);
    const allowed = this.allowOrigin(origin);
    if (allowed === undefined) return;
    headers['access-control-allow-origin'] = allowed;
    if (this.c.allow_credentials) headers['access-control-allow-credentials'] = 'true';
    if (this.c.expose_headers.length > 0) headers['access-control-expose-headers'] = this.c.expose_headers.join(', ');
  }

  /** The headers of the 204 answering a preflight. */
  preflight(origin: string, req: IncomingHttpHeaders): OutgoingHttpHeaders {
    const headers: OutgoingHttpHeaders = {};
    if (this.echoes) addVary(headers);
    const allowed = this.allowOrigin(origin);
    if (allowed === undefined) return headers;
    headers['access-control-allow-origin'] = allowed;
    if (this.c.allow_credentials) headers['access-control-allow-credentials'] = 'true';
    // Only a method token (RFC 9110) is echoed: anything else (a non-ASCII byte…) could not even be written as a header.
    const asked = String(req['access-control-request-method']);
    const method = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/.test(asked) ? asked.toUpperCase() : undefined;
    const methods = this.c.allow_methods.includes('*') ? [...STANDARD_METHODS, ...(method === undefined || STANDARD_METHODS.includes(method) ? [] : [method])] : this.c.allow_methods;
    if (methods.length > 0) headers['access-control-allow-methods'] = methods.join(', ');
    const askedHeaders = req['access-control-request-headers'];
    if (!this.c.allow_headers.includes('*')) {
      if (this.c.allow_headers.length > 0) headers['access-control-allow-headers'] = this.c.allow_headers.join(', ');
    } else if (askedHeaders !== undefined && /^[!#$%&'*+.^_`|~0-9A-Za-z, \t-]*$/.test(askedHeaders)) headers['access-control-allow-headers'] = askedHeaders;
    if (this.c.max_age >= 0) headers['access-control-max-age'] = String(this.c.max_age);
    return headers;
  }
}

/** `https://App.example.com/` → `https://app.example.com` (origins compare without case or a trailing slash). */
function normalOrigin(origin: string): string {
  return origin.trim().replace(/\/+$/, '').toLowerCase();
}

function addVary(headers: OutgoingHttpHeaders): void {
  const vary = headers.vary;
  const text = Array.isArray(vary) ? vary.join(', ') : vary === undefined ? '' : String(vary);
  if (text.trim() === '*' || /(^|,)\s*origin\s*(,|$)/i.test(text)) return;
  headers.vary = text ? `${text}, Origin` : 'Origin';
}
