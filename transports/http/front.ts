/**
 * The front: turns a request into a walker or function run on the caller's
 * partition and writes the reply as the response envelope. Knows nothing of
 * sockets — the uWebSockets.js and node:http servers both hand it an
 * {@link HttpRequest} and write back the {@link HttpResponse}.
 */
import type { TSchema } from 'typebox';
import type { Graph, SpawnOptions } from '../../actors/graph/index.ts';
import { type Authenticated, type Authenticator, bearer, type Claims } from '../../actors/identity/index.ts';
import { type Caller, fillRequestFields, HookDispatcher, HookRefusal, type Registry, Root, UnknownFields } from '../../actors/walker/index.ts';
import type { Docs } from './docs.ts';
import { LIVE_CLIENT_PATH, liveClientScript } from './client-script.ts';
import { failure, newRequestId, success, successJson } from './envelope.ts';
import { httpError, HttpError, toHttpError, unauthorizedAsHttp } from './errors.ts';
import { collectFields, jsonBody } from './params.ts';
import { type EndpointRoute, parseTemplate, Router } from './router.ts';
import { boundaryOf } from './multipart.ts';
import type { UploadPlan } from './upload-stream.ts';
import type { StaticFiles } from './static.ts';
import type { ClientAddresses } from './client-address.ts';
import type { BuiltinRoute, HttpRequest, HttpResponse } from './types.ts';
import { traceIdOf } from './trace.ts';
import { WebhookGate, type WebhookOptions } from './webhook-auth.ts';
import { CorsPolicy, type CorsSettings } from './cors.ts';
import { channel } from 'node:diagnostics_channel';

/** One access-log line. */
export interface AccessEntry {
  req_id: string;
  trace_id: string;
  method: string;
  path: string;
  /** The route template (bounded: never a raw id). */
  route: string;
  status: number;
  ms: number;
}

/**
 * What {@link FrontOptions.onResponse} and the `svc:http:response` diagnostics
 * channel are told of every answered request (metrics subscribe; the front
 * calls nothing of theirs).
 */
export interface ResponseInfo {
  method: string;
  /** The route template (`/walker/Peek/{node_id}`), a fixed path (`/health`), `static`, `preflight` or `unmatched`: never a raw id. */
  route: string;
  status: number;
  /** From the request handed to the front to its answer, in milliseconds. */
  durationMs: number;
  traceId: string;
  requestId: string;
}

/** The diagnostics channel every answered request is published on (with {@link ResponseInfo}), when someone subscribes. */
export const HTTP_RESPONSE_CHANNEL = 'svc:http:response';
const responses = channel(HTTP_RESPONSE_CHANNEL);

/** The route label of a request no route matched (one label for every unknown path). */
export const UNMATCHED_ROUTE = 'unmatched';

export interface FrontOptions {
  /** Why this server is not ready besides starting and draining (e.g. a cluster member not joined), or undefined when it is. */
  readiness?: () => string | undefined;
  /** Routes the runtime serves itself (users, admin), matched before the app's. */
  builtinRoutes?: BuiltinRoute[];
  graph: Graph;
  registry: Registry;
  routes: EndpointRoute[];
  /** Turns a bearer token into a caller (identity's, shared with the WebSocket hub). */
  auth: Authenticator;
  /** Hook walkers (shared with the WebSocket hub); by default built from the registry, run on the graph. */
  hooks?: HookDispatcher;
  openapi: Record<string, unknown>;
  docs: Docs | undefined;
  statics: StaticFiles | undefined;
  requestTimeoutMs: number;
  /** Stack traces (the app's frames) in error envelopes (never outside `--dev`). */
  dev: boolean;
  /** The project folder: its files' frames are the app's in stacks (logs, `--dev` answers). */
  projectRoot?: string;
  accessLog: ((entry: AccessEntry) => void) | undefined;
  /** Told of every answered request (route template, status, duration, trace id), independent of the access log. */
  onResponse?: (info: ResponseInfo) => void;
  suppressHealthLogs: boolean;
  /** Reports every 5xx that is not a deliberate answer (the app's failures among them), with the route that failed and, for the app's endpoints, the walker or function. */
  onError: (error: unknown, requestId: string, route: string, traceId?: string, endpoint?: { kind: 'walker' | 'function'; name: string }) => void;
  /** Who the client is behind trusted proxies (default: the peer). */
  clientAddresses?: ClientAddresses;
  /** Paths left out of {@link Front.inFlight}, `onResponse` and the diagnostics channel (the metrics endpoints: a scrape is not in its own figures). */
  untrackedPaths?: ReadonlySet<string>;
  /** Fields the client sent that the endpoint does not declare: refused (the default) or warned about (`[scale.server] strict_fields`). */
  unknownFields?: UnknownFields;
  /** `[scale.webhook]`: API keys, the signature secret and headers. Required when some route is a webhook walker's. */
  webhook?: WebhookOptions;
  /**
   * Request headers the servers copy besides the front's own, for built-in
   * routes that read them (single sign-on: `host` and `cookie`, set by the
   * runtime only when a provider is enabled). Each is a native call per
   * request on uWS: none by default.
   */
  extraHeaders?: readonly string[];
  /** The app calls other services (`sv.import`): runs keep the request's `Authorization` header for them to forward. */
  forwardAuthorization?: () => boolean;
  /** `[scale.server.cors]` (default {@link PERMISSIVE_CORS}): the CORS headers of every answer, the app's routes and the runtime's alike. */
  cors?: CorsSettings;
}

/** The 503s a retry does not fix (a missing configuration): every other 503 is answered with `Retry-After: 1`. */
const RETRY_NEVER = new Set(['EMAIL_DISABLED']);

const QUIET_PATHS = new Set(['/', '/docs', '/redoc', '/openapi.json', '/favicon.ico', '/health', '/ready', '/healthz', '/healthz/ready', '/healthz/live']);

/**
 * The CORS of a front not told otherwise (`[scale.server.cors]`'s defaults):
 * any origin, without credentials; a page's script may read the request and trace ids.
 *
 * @example
 * new Front({ ...options, cors: { ...PERMISSIVE_CORS, allow_origins: ['https://app.example'] } });
 */
export const PERMISSIVE_CORS: Readonly<CorsSettings> = Object.freeze({
  allow_origins: ['*'],
  allow_methods: ['*'],
  allow_headers: ['*'],
  allow_credentials: false,
  expose_headers: ['x-request-id', 'x-trace-id'],
  max_age: 600,
});

const JSON_TYPE = 'application/json; charset=utf-8';

/** Sent by `sv` calls (another service calling this one): `1`. */
export const SV_HEADER = 'x-svc-sv';

/** The request headers the front reads itself. */
const FRONT_HEADERS = ['content-type', 'content-length', 'transfer-encoding', 'authorization', 'x-request-id', 'x-trace-id', 'origin', 'access-control-request-headers', SV_HEADER];

export class Front {
  readonly router: Router;
  /**
   * Which headers servers must copy from the request: only those the front
   * reads (with the webhook headers of an app that serves webhooks, and the
   * {@link FrontOptions.extraHeaders}), unless some walker or hook declares a
   * `headers` field (then all). Copying every header costs a native callback each.
   */
  readonly headerNames: readonly string[] | 'all';
  private ready = false;
  private draining = false;
  private readonly builtins = new Map<string, () => HttpResponse>();
  private readonly hooks: HookDispatcher;
  private readonly unknownFields: UnknownFields;
  /** The webhook walkers' names (a 404 under /walker/ says where they are). */
  private readonly webhookNames: ReadonlySet<string>;
  /** Webhook routes' checks (key, signature, timestamp); undefined when the app has none. */
  private readonly webhook: WebhookGate | undefined;
  private readonly builtinRouter: Router<{ method: string; template: string; pathParams: string[]; segments: (string | null)[]; route: BuiltinRoute }>;
  /** Paths whose handlers read the client address (servers fill it for these only). */
  readonly addressPaths: Set<string>;
  /** Requests handed to {@link handle} and not answered yet (the untracked path left out). */
  inFlight = 0;
  /** `[scale.server.cors]`, made once: the servers add its headers to the answers they write themselves too. */
  readonly cors: CorsPolicy;

  constructor(private readonly o: FrontOptions) {
    this.router = new Router(o.routes);
    this.cors = new CorsPolicy(o.cors ?? PERMISSIVE_CORS);
    this.unknownFields = o.unknownFields ?? new UnknownFields();
    this.hooks = o.hooks ?? new HookDispatcher(o.registry, (walker, fields, options) => o.graph.spawn(walker, fields, options), { timeoutMs: o.requestTimeoutMs });
    const wantsAll = o.routes.some((r) => 'headers' in (r.schema.properties ?? {})) || this.hooks.wantsHeaders;
    this.webhookNames = new Set(o.routes.filter((r) => r.webhook).map((r) => r.name));
    if (o.routes.some((r) => r.webhook)) {
      if (!o.webhook) throw new Error('the app has webhook walkers: the front needs its webhook options (API keys, secret, headers)');
      this.webhook = new WebhookGate(o.webhook);
    }
    // The webhook headers are copied only for apps that serve webhooks (each copied header is a native call per request on uWS).
    const extra = [...(this.webhook?.headerNames ?? []), ...(o.extraHeaders ?? []).map((h) => h.toLowerCase())];
    this.headerNames = wantsAll ? 'all' : extra.length > 0 ? [...new Set([...FRONT_HEADERS, ...extra])] : FRONT_HEADERS;
    this.builtinRouter = new Router(
      (o.builtinRoutes ?? []).map((route) => {
        const { segments, params } = parseTemplate(route.path);
        return { method: route.method, template: route.path, pathParams: params, segments, route };
      }),
    );
    this.addressPaths = new Set((o.builtinRoutes ?? []).filter((r) => r.needsAddress).map((r) => r.path));
    const json = (status: number, body: unknown): HttpResponse => ({ status, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(body) });
    const readiness = (ok: unknown) => () => {
      if (!this.isReady) return json(503, { status: this.draining ? 'draining' : 'starting', ready: false });
      // The runtime's own conditions (a cluster member: joined, Redis reachable, not leaving).
      const reason = o.readiness?.();
      return reason === undefined ? json(200, ok) : json(503, { status: reason, ready: false });
    };
    this.builtins.set('/health', () => json(200, { status: 'ok' }));
    this.builtins.set('/healthz', () => json(200, { status: 'ok' }));
    this.builtins.set('/healthz/live', () => json(200, { status: 'alive' }));
    this.builtins.set('/ready', readiness({ status: 'ready', ready: true }));
    this.builtins.set('/healthz/ready', readiness({ status: 'ready' }));
    // The browser's reconnecting WebSocket client (rooms, resume).
    this.builtins.set(LIVE_CLIENT_PATH, () => ({ status: 200, headers: { 'content-type': 'application/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' }, body: liveClientScript() }));
    if (o.docs) {
      const spec = JSON.stringify(o.openapi);
      this.builtins.set('/openapi.json', () => ({ status: 200, headers: { 'content-type': JSON_TYPE }, body: spec }));
    }
  }

  get isReady(): boolean {
    return this.ready && !this.draining;
  }

  /** The store and actors are up: readiness turns true. */
  markReady(): void {
    this.ready = true;
  }

  /** Shutting down: readiness turns false; requests still arriving are served, then their connections closed. */
  startDraining(): void {
    this.draining = true;
  }

  /** Answer one request. Never rejects. */
  /** Streamed upload fields of each route: field → maxBytes, for those above the body limit it was computed for. */
  private readonly streamed = new WeakMap<EndpointRoute, { limit: number; files: Map<string, number> }>();

  /**
   * Whether a request's body is to be streamed (upload-stream.ts) rather than
   * held: a multipart body for a route with `T.Upload({ maxBytes })` fields
   * above `maxBodyBytes`. A caller the route does not take (no token, a bad
   * one) gets a plan with its `refusal`, answered before any of the body is
   * read. Reads only the method, path and headers.
   */
  uploadPlan(method: string, path: string, headers: Record<string, string>, maxBodyBytes: number): UploadPlan | undefined {
    const boundary = boundaryOf(headers['content-type'] ?? '');
    // RFC 2046's boundary characters only (a quote or backslash in it would break the streaming parser): the rest take the buffered path.
    if (boundary === undefined || !/^[0-9A-Za-z'()+_,./:=? -]{1,70}$/.test(boundary) || method === 'GET' || method === 'HEAD') return undefined;
    if (this.builtinRouter.match(method, path)) return undefined;
    const match = this.router.match(method, path);
    if (!match || 'allowed' in match || match.route.fileFields.length === 0) return undefined;
    const route = match.route;
    let streamed = this.streamed.get(route);
    if (streamed === undefined || streamed.limit !== maxBodyBytes) {
      const files = new Map<string, number>();
      const props = route.schema.properties as Record<string, { maxBytes?: unknown }>;
      for (const name of route.fileFields) {
        const max = props[name]?.maxBytes;
        if (typeof max === 'number' && max > maxBodyBytes) files.set(name, max);
      }
      this.streamed.set(route, (streamed = { limit: maxBodyBytes, files }));
    }
    if (streamed.files.size === 0) return undefined;
    let limit = maxBodyBytes;
    for (const max of streamed.files.values()) limit += max;
    const plan: UploadPlan = { boundary, files: streamed.files, otherBytes: maxBodyBytes, limit };
    try {
      this.authenticate({ method, path, query: '', headers, body: Buffer.alloc(0), remoteAddress: '' }, route);
    } catch (error) {
      // A good token whose user is not learnt yet (a shared users store: `prepare` has to wait) is decided once the body is in.
      const token = bearer(headers.authorization);
      const pending = token !== undefined && this.o.auth.learnsUsers ? this.o.auth.prepare(token) : undefined;
      if (pending) pending.catch(() => {});
      else plan.refusal = error instanceof HttpError ? error : toHttpError(error, false, '');
    }
    return plan;
  }

  async handle(req: HttpRequest): Promise<HttpResponse> {
    const timed = this.o.accessLog !== undefined || this.o.onResponse !== undefined || responses.hasSubscribers;
    const started = timed ? performance.now() : 0;
    const tracked = this.o.untrackedPaths === undefined || !this.o.untrackedPaths.has(req.path);
    if (tracked) this.inFlight++;
    const rid = newRequestId(req.headers['x-request-id']);
    const traceId = traceIdOf(req.headers['x-trace-id']);
    let route = UNMATCHED_ROUTE;
    let endpoint: EndpointRoute | undefined;
    let res: HttpResponse;
    try {
      res = await this.dispatch(req, rid, traceId, (r, e) => {
        route = r;
        endpoint = e;
      });
    } catch (error) {
      const e = toHttpError(error, this.o.dev, this.o.projectRoot);
      if (e.status >= 500 && !(error instanceof HttpError)) this.o.onError(error, rid, route, traceId, endpoint && { kind: endpoint.kind, name: endpoint.name });
      // The users' and admin routes repeat their status in the envelope, errors too (`meta.extra.http_status`).
      const extra = req.path.startsWith('/user/') || req.path.startsWith('/admin/') || req.path.startsWith('/api-key/') ? { extra: { http_status: e.status } } : undefined;
      res = { status: e.status, headers: { 'content-type': JSON_TYPE }, body: failure(e.body, rid, extra) };
      const retry = (e.body.details as { retry_after_seconds?: unknown } | undefined)?.retry_after_seconds;
      if ((e.status === 429 || e.status === 503) && typeof retry === 'number') res.headers['retry-after'] = String(retry);
      else if (e.status === 503 && !RETRY_NEVER.has(e.body.code)) res.headers['retry-after'] = '1';
      if (e.status === 405) res.headers.allow = (e.body.details as { allowed?: string[] })?.allowed?.join(', ') ?? '';
    }
    if (this.draining) {
      // Keep-alive clients reconnect — to the new workers after a reload, or to another pod.
      res.headers.connection = 'close';
      res.close = true;
    }
    this.cors.apply(req.headers.origin, res.headers);
    res.headers['x-request-id'] = rid;
    res.headers['x-trace-id'] = traceId;
    if (tracked) this.inFlight--;
    if (timed) this.tell(req, res.status, route, rid, traceId, performance.now() - started, tracked);
    return res;
  }

  /** The access log, `onResponse` and the diagnostics channel: what was answered, how fast. */
  private tell(req: HttpRequest, status: number, route: string, requestId: string, traceId: string, durationMs: number, tracked: boolean): void {
    if (this.o.accessLog && !(this.o.suppressHealthLogs && QUIET_PATHS.has(req.path))) {
      this.o.accessLog({ req_id: requestId, trace_id: traceId, method: req.method, path: req.path, route, status, ms: Math.round(durationMs * 100) / 100 });
    }
    if (!tracked || (this.o.onResponse === undefined && !responses.hasSubscribers)) return;
    const info: ResponseInfo = { method: req.method, route, status, durationMs, traceId, requestId };
    try {
      this.o.onResponse?.(info);
    } catch (error) {
      this.o.onError(error, requestId, route, traceId);
    }
    if (responses.hasSubscribers) responses.publish(info);
  }

  private async dispatch(req: HttpRequest, rid: string, traceId: string, setRoute: (r: string, endpoint?: EndpointRoute) => void): Promise<HttpResponse> {
    if (req.method === 'OPTIONS') {
      setRoute('preflight');
      // Every OPTIONS is answered here (nothing else serves it). The methods are the front's own: Access-Control-Request-Method is not
      // copied from the request (a native call per request on uWS), and a method outside the standard ones has no route anyway.
      return { status: 204, headers: this.cors.preflightGrants(req.headers.origin, req.headers), body: '' };
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const builtin = this.builtins.get(req.path);
      if (builtin) {
        setRoute(req.path);
        return builtin();
      }
      const doc = this.o.docs?.serve(req.path);
      if (doc) {
        setRoute(req.path);
        return doc;
      }
    }
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const builtin = this.builtinRouter.match(method, req.path);
    if (builtin) {
      if ('allowed' in builtin) throw httpError('METHOD_NOT_ALLOWED', `${req.method} is not served on ${req.path}`, { allowed: builtin.allowed });
      const params = decodeParams(builtin.params);
      if (params) {
        setRoute(builtin.route.template);
        return this.runBuiltin(builtin.route.route, params, req, rid, traceId);
      }
    }
    const match = this.router.match(method, req.path);
    if (!match || 'allowed' in match) {
      if (req.method === 'GET' || req.method === 'HEAD') {
        const file = await this.o.statics?.serve(req.path === '/' ? '/index.html' : req.path, req.method === 'HEAD');
        if (file) {
          setRoute('static');
          return file;
        }
        if (req.path === '/favicon.ico') {
          // Browsers ask for it on every page (/docs, /redoc, the app's): nothing to show is not an error.
          setRoute('/favicon.ico');
          return { status: 204, headers: {}, body: '' };
        }
        if (req.path === '/') {
          setRoute('/');
          return { status: 200, headers: { 'content-type': JSON_TYPE }, body: success({ result: { service: 'svc', docs: this.o.docs ? '/docs' : null }, reports: [] }, rid) };
        }
      }
      if (match) throw httpError('METHOD_NOT_ALLOWED', `${req.method} is not served on ${req.path}`, { allowed: match.allowed });
      // A webhook walker called as a walker: say where it is served.
      const name = /^\/walker\/([^/]+)/.exec(req.path)?.[1];
      if (name !== undefined && this.webhookNames.has(name)) throw httpError('NOT_FOUND', `no route ${req.method} ${req.path}: ${name} is a webhook walker, served at POST /webhook/${name} (X-API-Key and a signature)`);
      throw httpError('NOT_FOUND', `no route ${req.method} ${req.path}`);
    }
    const { route, params } = match;
    setRoute(route.template, route);
    if (route.webhook) return this.runWebhook(req, route, params, rid, traceId);
    // Another service's `sv` call: only public endpoints are importable (said before any token is looked at).
    const sv = req.headers[SV_HEADER] === '1';
    if (sv && route.access !== 'pub') throw httpError('NOT_FOUND', `${route.kind} ${route.name} is not public: only pub walkers and functions can be imported by another service`);
    if (this.o.auth.learnsUsers) await this.prepareToken(req);
    // Hooks run first, whatever the endpoint's access: on the caller's graph when the token is good, else the guest's.
    // A request the checks below take goes to its partition with its hooks, in one message (they run there first, on
    // the same caller's graph); one they refuse has its hooks run first, then hears why.
    let prepared: { caller: Caller; fields: Record<string, unknown>; at: string | undefined };
    try {
      prepared = this.prepareRun(req, route, params);
    } catch (error) {
      if (this.hooks.active) await this.runHooks(req, traceId);
      throw error;
    }
    const { caller, fields, at } = prepared;
    const options: SpawnOptions = { caller, timeoutMs: this.o.requestTimeoutMs, traceId, requestId: rid, ...(at === undefined ? {} : { at }) };
    if (req.headers.authorization !== undefined && this.o.forwardAuthorization?.()) options.authorization = req.headers.authorization;
    if (this.hooks.active) options.hooks = this.hooks.plan(req);
    try {
      if (sv) {
        // The answer keeps class names.
        options.sv = true;
        const { json } = route.kind === 'walker' ? await this.o.graph.spawnJson(route.name, fields, options) : await this.o.graph.callJson(route.name, fields, options);
        return { status: 200, headers: { 'content-type': JSON_TYPE }, body: successJson(json, rid) };
      }
      if (route.kind === 'walker') {
        const { json } = await this.o.graph.spawnJson(route.name, fields, options);
        return { status: 200, headers: { 'content-type': JSON_TYPE }, body: successJson(`{"result":null,"reports":${json}}`, rid) };
      }
      const { json } = await this.o.graph.callJson(route.name, fields, options);
      if (!route.envelope) {
        // A string return is the body itself; anything else goes as JSON.
        const raw = json.startsWith('"') ? (JSON.parse(json) as string) : json === 'null' ? '' : json;
        return { status: 200, headers: { 'content-type': `${route.produces ?? 'text/plain'}; charset=utf-8` }, body: raw };
      }
      return { status: 200, headers: { 'content-type': JSON_TYPE }, body: successJson(`{"result":${json},"reports":[]}`, rid) };
    } catch (error) {
      // A hook refused (it ran with the route's run, in one message): the answer it asks for.
      return hookRefused(error);
    }
  }

  /** The caller and fields of a walker or function route's run (throws what the request gets: 401, 400…). */
  private prepareRun(req: HttpRequest, route: EndpointRoute, params: Record<string, string>): { caller: Caller; fields: Record<string, unknown>; at: string | undefined } {
    const caller = this.authenticate(req, route);
    const { fields, at, unknown } = collectFields(route, req, params);
    fillRequestFields(route.schema.properties as Record<string, TSchema>, fields, req);
    if (unknown.length > 0) this.unknownFields.check(route.name, route.schema, fields, unknown);
    return { caller, fields, at };
  }

  /**
   * A webhook walker's request (`POST /webhook/<Name>`): the API key, its
   * allow-list, the timestamp and the signature over the raw body
   * (webhook-auth.ts), then the hooks, then the walker on the key owner's
   * root. A bearer token plays no part, and the walker's access level
   * neither: a key is always needed. Undeclared body fields are dropped.
   */
  private async runWebhook(req: HttpRequest, route: EndpointRoute, params: Record<string, string>, rid: string, traceId: string): Promise<HttpResponse> {
    const holder = await (this.webhook as WebhookGate).admit(req, route.name);
    if (this.hooks.active) await this.runHooks(req, traceId, holder.caller);
    const { fields } = collectFields(route, req, params);
    fillRequestFields(route.schema.properties as Record<string, TSchema>, fields, req);
    const { json } = await this.o.graph.spawnJson(route.name, fields, { caller: holder.caller, timeoutMs: this.o.requestTimeoutMs, traceId, requestId: rid });
    return { status: 200, headers: { 'content-type': JSON_TYPE }, body: successJson(`{"result":null,"reports":${json}}`, rid) };
  }

  private async runBuiltin(route: BuiltinRoute, params: Record<string, string>, req: HttpRequest, rid: string, traceId: string): Promise<HttpResponse> {
    let claims: Claims | undefined;
    let token = '';
    if (route.auth !== 'none') {
      const forbidden = route.authFailure === 'forbidden';
      const given = bearer(req.headers.authorization);
      const needs = () => `${req.method} ${route.path} needs an admin token${route.staticToken ? ' or the scrape token' : ''}`;
      if (given === undefined) {
        if (forbidden) throw httpError('FORBIDDEN', needs());
        throw httpError('UNAUTHORIZED', `${req.method} ${route.path} needs a bearer token`);
      }
      // The route's static credential (the metrics scrape token), compared in constant time: in without claims.
      if (!route.staticToken?.(given)) {
        token = given;
        const wait = this.o.auth.prepare(token);
        if (wait) await wait;
        let who: Authenticated;
        try {
          who = this.verify(token);
        } catch (error) {
          if (forbidden && error instanceof HttpError && error.status === 401) throw httpError('FORBIDDEN', `${needs()} (${error.body.message})`);
          throw error;
        }
        claims = who.claims;
        if (who.mustChangePassword && !route.duringPasswordChange) throw passwordChangeRequired();
        if (route.auth === 'admin' && claims.role !== 'admin') throw httpError('FORBIDDEN', 'admins only');
      }
    }
    if (route.hooks && this.hooks.active) await this.runHooks(req, traceId);
    if (route.needsAddress && this.o.clientAddresses) req.remoteAddress = this.o.clientAddresses.of(req.remoteAddress, req.headers);
    let parsed: Record<string, unknown> | undefined;
    const result = await route.handler({
      req,
      params,
      body: () => (parsed ??= req.body.length ? jsonBody(req.body) : {}),
      claims: (claims ?? { user_id: '' }) as BuiltinContextClaims,
      token,
      traceId,
    });
    if ('raw' in result) return result.raw;
    if ('json' in result) return { status: 200, headers: { 'content-type': JSON_TYPE }, body: successJson(result.json, rid) };
    const status = result.status ?? 200;
    return { status, headers: { 'content-type': JSON_TYPE }, body: success(result.data, rid, { extra: { http_status: status } }) };
  }

  /** With a shared users repository: learn whether the token's user exists before verifying it (a no-op otherwise). */
  private async prepareToken(req: HttpRequest): Promise<void> {
    if (!this.o.auth.learnsUsers) return;
    const token = bearer(req.headers.authorization);
    if (token === undefined) return;
    const wait = this.o.auth.prepare(token);
    if (wait) await wait;
  }

  /** The caller of a request: the token's user, or the guest graph for public endpoints without one. */
  private authenticate(req: HttpRequest, route: EndpointRoute): Caller {
    const header = req.headers.authorization;
    if (!header) {
      if (route.access === 'pub') return { rootId: Root.SHARED_ID };
      throw httpError('UNAUTHORIZED', `${route.kind} ${route.name} needs a bearer token`);
    }
    const token = bearer(header);
    if (token === undefined) throw httpError('UNAUTHORIZED', 'the Authorization header must be "Bearer <token>"');
    const who = this.verify(token);
    if (who.mustChangePassword) throw passwordChangeRequired();
    return who.caller;
  }

  /** Identity's verdict on a token; a bad one is the 401 the front has always answered. */
  private verify(token: string): Authenticated {
    try {
      return this.o.auth.authenticate(token);
    } catch (error) {
      if (token.startsWith('svc_') && !token.includes('.')) throw httpError('UNAUTHORIZED', 'that is an API key, not a token: API keys go in the X-API-Key header of POST /webhook/<Name>; sign in (/user/login) for a bearer token');
      throw unauthorizedAsHttp(error);
    }
  }

  /** The caller if the request carries a good token, the guest otherwise (for hooks). */
  private softCaller(req: HttpRequest): Caller {
    try {
      return this.authenticate(req, { access: 'pub' } as EndpointRoute);
    } catch {
      return { rootId: Root.SHARED_ID };
    }
  }

  /** Hook walkers (`_Name`) run before the route; a refusal ends the request with its status and error body. */
  private async runHooks(req: HttpRequest, traceId: string, caller?: Caller): Promise<void> {
    try {
      await this.hooks.run(req, caller ?? this.softCaller(req), traceId);
    } catch (error) {
      hookRefused(error);
    }
  }
}

/** A hook's refusal as the answer it asks for (its status and error body); any other error as it is. */
function hookRefused(error: unknown): never {
  throw error instanceof HookRefusal ? new HttpError(error.status, error.body) : error;
}

type BuiltinContextClaims = Record<string, unknown> & { user_id: string };

/** Percent-decoded path parameters, or undefined when one is not valid percent-encoding (then no route matches). */
function decodeParams(raw: Record<string, string>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  try {
    for (const k in raw) out[k] = decodeURIComponent(raw[k] as string);
  } catch {
    return undefined;
  }
  return out;
}

function passwordChangeRequired(): HttpError {
  return new HttpError(403, { code: 'PASSWORD_CHANGE_REQUIRED', message: 'change the password first (PUT /user/password)' });
}
