/** The request and response a transport hands the front, whatever the socket layer. */

export interface HttpRequest {
  /** Upper case. */
  method: string;
  /** Decoded path, without the query. */
  path: string;
  /** The raw query string (no `?`). */
  query: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The raw body (empty for GET). */
  body: Buffer;
  /** The client address (text), when the server was asked to fill it; otherwise empty. */
  remoteAddress: string;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  /** Close the connection after this response (the server is draining). */
  close?: boolean;
}

/** A route the runtime serves itself (users, admin), ahead of the app's routes. */
export interface BuiltinRoute {
  method: string;
  /** `{name}` segments are parameters. */
  path: string;
  /** `token`: a valid bearer token; `admin`: one with the admin role. */
  auth: 'none' | 'token' | 'admin';
  /** `forbidden`: a missing, malformed, expired or revoked token answers 403 FORBIDDEN as a non-admin one does, not 401 (the metrics endpoint, as scrapers expect). */
  authFailure?: 'forbidden';
  /**
   * A static bearer credential this route also takes, besides the tokens `auth` asks for (the metrics endpoint's
   * `[scale.metrics] scrape_token`): true lets the request in without claims (`claims.user_id` and `token` empty). It
   * must compare in constant time (admin-routes.ts `staticTokenCheck`); other routes never see it.
   */
  staticToken?: (token: string) => boolean;
  /** The app's hook walkers (`_Name`) run first, as before the app's own routes (routes that run walkers on the caller's graph). */
  hooks?: boolean;
  /** Served even when the token says the password must be changed first. */
  duringPasswordChange?: boolean;
  /** The handler reads the client address (login rate limits). */
  needsAddress?: boolean;
  /** For /openapi.json: what it does, its JSON body's schema, its success status (200) and content type (JSON). */
  doc?: {
    summary: string;
    body?: Record<string, unknown>;
    status?: number;
    produces?: string;
    tag?: string;
    /** The schema of the envelope's `data` on success. */
    data?: Record<string, unknown>;
    /** Query parameters. */
    query?: { name: string; schema: Record<string, unknown>; description?: string }[];
    /** Other error answers, by status: what they mean. */
    errors?: Record<string, string>;
  };
  handler(ctx: BuiltinContext): Promise<BuiltinResult> | BuiltinResult;
}

export interface BuiltinContext {
  req: HttpRequest;
  params: Record<string, string>;
  /** The JSON body as an object (`{}` when empty); throws INVALID_JSON / VALIDATION_ERROR. */
  body(): Record<string, unknown>;
  /** The verified claims (routes with auth). */
  claims: Record<string, unknown> & { user_id: string };
  /** The bearer token as sent (routes with auth). */
  token: string;
  /** The request's trace id. */
  traceId: string;
}

/** `data` goes in the envelope (with `status`, 200 by default); `json`: the data as JSON text already; `raw` is sent as it is. */
export type BuiltinResult = { status?: number; data: unknown } | { json: string } | { raw: HttpResponse };
