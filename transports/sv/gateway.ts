/**
 * The microservice gateway (`[scale.microservices] enabled = true`): one
 * public port in front of several svc processes, one per module of the app.
 * At start it reads every module's `/openapi.json` and builds a route table
 * of the generated endpoints (walkers, functions, webhooks, custom paths);
 * two modules serving one method and path refuse to start. It then serves
 * the merged OpenAPI document itself and relays everything else to its
 * module over keep-alive undici pools — bodies streamed both ways, never
 * buffered — with its own CORS policy (`[scale.microservices.cors]`, README
 * *Microservice mode*) in place of the modules' permissive one.
 * Built-in routes (users, admin, SSO, API keys, health, metrics, docs, graph,
 * static files) and every path no module claims go to the `main` module.
 * WebSocket upgrades are relayed as raw TCP to the module whose document
 * lists the WebSocket walker (`x-svc-websockets`: OpenAPI cannot describe a
 * WebSocket, so each module's document lists its own there).
 *
 * Decisions (no spec says otherwise):
 * - CORS with an empty `allow_origins`: the gateway adds no CORS header and
 *   answers no preflight; an `OPTIONS` goes to its module as any request does
 *   (the module's own CORS headers are stripped, so a browser refuses it).
 * - A preflight from an origin not allowed: 204 with `Vary: Origin` and no
 *   `Access-Control-*` header (the browser refuses; nothing is revealed).
 * - A WebSocket upgrade whose `Origin` is not in a non-`*` allow list is
 *   refused with 403 (browsers apply no CORS to WebSockets: the allow list is
 *   the only cross-site check there is). No `Origin` (not a browser) passes.
 * - Tokens: another module takes main's users on the token's signature alone
 *   (it never hears of a revocation, a disabled or a deleted user), so main
 *   (`GET /user/me`) judges every token sent to another module before it is
 *   relayed: the `Authorization` header of any request, and on a WebSocket
 *   upgrade the query's `token` as well (each one, when both are sent). A
 *   token sent later in a WebSocket frame travels inside the relayed bytes:
 *   the module alone judges it.
 * - Two modules with a WebSocket walker of one name refuse to start, as two
 *   modules serving one route do. An upgrade to a `/ws/…` path no module
 *   lists goes to `main` (which answers 404).
 * - Schema (component) name clashes: see {@link mergeOpenApi}.
 * - `X-Forwarded-For` gets the client's address appended; `X-Forwarded-Proto`
 *   and `X-Forwarded-Host` are kept when a proxy in front set them, else set.
 *   The original `Host` is passed on. Modules believe them only from their
 *   `[scale.server] trusted_proxies`.
 */
import { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, createServer, type ServerResponse } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { pipeline } from 'node:stream';
import { Pool } from 'undici';
import { bearer } from '../../actors/identity/index.ts';
import { type ErrorBody, failure, newRequestId } from '../http/index.ts';

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

export interface GatewayOptions {
  /** Bind address and port (0: any free port). */
  host: string;
  port: number;
  /** Module name → base URL of its running svc process (`http://127.0.0.1:18001`). */
  modules: Record<string, string>;
  /** The module (a key of `modules`) that serves the built-in routes and every path no module claims. */
  main: string;
  cors: GatewayCors;
  /** One line per notable event (a module unreachable, reachable again); never a secret, header or query. */
  log?: (line: string) => void;
  /** `info.title` of the merged OpenAPI document (default: `svc`). */
  title?: string;
  /** Serve the merged `/openapi.json` (default true); false hands `/openapi.json` to `main` like any built-in. */
  docs?: boolean;
  /**
   * Ask `main` (`GET /user/me`) about every bearer token sent to another
   * module, before relaying: the other modules take main's users on the
   * token's signature alone, and would not see a revocation (default true).
   */
  verifyTokens?: boolean;
  /** How long start waits for modules that answer `/openapi.json` with 503 (still starting), in ms (default 10 000). */
  startTimeoutMs?: number;
}

/** A generated endpoint and the module that serves it. */
export interface GatewayRoute {
  /** An HTTP method, or `WS` for a WebSocket walker. */
  method: string;
  /** The OpenAPI path template: `/walker/Invoice/{node_id}`. */
  path: string;
  module: string;
}

export interface Gateway {
  /** `http://host:port` */
  url: string;
  port: number;
  routes: GatewayRoute[];
  /** Stop listening, close every socket (relayed WebSockets too) and pool; idempotent. */
  close(): Promise<void>;
}

/** The codes of {@link GatewayError}. */
export const GATEWAY_ERRORS = {
  SVC_ERR_GATEWAY_CONFIG: { message: 'the gateway options are not valid' },
  SVC_ERR_GATEWAY_UNREACHABLE: { message: 'a module cannot be reached' },
  SVC_ERR_GATEWAY_OPENAPI: { message: 'a module does not serve a usable /openapi.json' },
  SVC_ERR_GATEWAY_ROUTE_COLLISION: { message: 'two modules serve one route' },
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

/**
 * Why the gateway cannot start: a route two modules serve, a module that
 * cannot be reached or has no usable OpenAPI document, bad options.
 *
 * @example
 * try { await startGateway(o) } catch (e) { if (e instanceof GatewayError && e.code === 'SVC_ERR_GATEWAY_ROUTE_COLLISION') … }
 */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  constructor(code: GatewayErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GatewayError';
    this.code = code;
  }
}

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Paths of generated endpoints whatever their tags. */
const GENERATED_PREFIXES = ['/walker/', '/function/', '/webhook/', '/ws/'];
/** Operation tags of generated endpoints (transports/http/openapi.ts). */
const GENERATED_TAGS = new Set(['walkers', 'functions', 'webhooks']);
/** Built-in paths, for documents whose operations carry no tag. */
const BUILTIN_PATH = /^\/(user|admin|sso|api-key|healthz|graph)(\/|$)|^\/(health|ready|metrics|docs|redoc|openapi\.json|traverse|favicon\.ico)?$/;
/** Hop-by-hop headers: never relayed (RFC 9110 §7.6.1), nor `expect` (answered here) or `host` (re-added). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'expect', 'host', 'http2-settings']);
const STANDARD_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const JSON_TYPE = 'application/json; charset=utf-8';
/** The document extension where a module lists its WebSocket walkers (transports/http/openapi.ts). */
const WS_EXTENSION = 'x-svc-websockets';

/** One module: where it is, its pool, its OpenAPI document. */
interface Upstream {
  name: string;
  url: URL;
  /** Path prefix of the base URL (`''` for an origin). */
  prefix: string;
  pool: Pool;
  doc: Json;
}

/** A route with its template split for matching: `null` is a `{param}` segment. */
interface TableRoute extends GatewayRoute {
  segments: (string | null)[];
  literals: number;
}

/**
 * Start the gateway: read every module's OpenAPI, build the route table (a
 * collision throws {@link GatewayError}, closing what was opened) and listen.
 *
 * @example
 * const gw = await startGateway({
 *   host: '0.0.0.0', port: 8000, main: 'shop',
 *   modules: { shop: 'http://127.0.0.1:18001', billing: 'http://127.0.0.1:18002' },
 *   cors: { allow_origins: ['*'], allow_methods: ['*'], allow_headers: ['*'], allow_credentials: false, expose_headers: [], max_age: 600 },
 * });
 * console.log(`Server ready at ${gw.url}`);
 * await gw.close();
 */
export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const names = Object.keys(o.modules);
  if (names.length === 0) throw new GatewayError('SVC_ERR_GATEWAY_CONFIG', 'no modules: [scale.microservices] modules is empty');
  if (!(o.main in o.modules)) throw new GatewayError('SVC_ERR_GATEWAY_CONFIG', `the main module ${o.main} is not one of the modules (${names.join(', ')})`);
  const upstreams = new Map<string, Upstream>();
  const closePools = () => Promise.all([...upstreams.values()].map((u) => u.pool.destroy().catch(() => undefined)));
  try {
    for (const name of names) {
      let url: URL;
      try {
        url = new URL(o.modules[name] as string);
      } catch {
        throw new GatewayError('SVC_ERR_GATEWAY_CONFIG', `module ${name}: ${o.modules[name]} is not a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new GatewayError('SVC_ERR_GATEWAY_CONFIG', `module ${name}: ${url.href} is not an http(s) URL`);
      // No body timeout: responses may be long streams (event streams); a client that goes away aborts them.
      // Idle sockets are dropped before a module's own idle timeout could close one as it is reused;
      // connections are bounded so a burst cannot take every descriptor of the module.
      const pool = new Pool(url.origin, { connections: 128, bodyTimeout: 0, keepAliveTimeout: 4_000 });
      upstreams.set(name, { name, url, prefix: url.pathname.replace(/\/+$/, ''), pool, doc: {} });
    }
    const deadline = Date.now() + (o.startTimeoutMs ?? 10_000);
    await Promise.all([...upstreams.values()].map(async (u) => (u.doc = await readOpenApi(u, deadline))));
    const table = routeTable(upstreams, o.main);
    const merged = JSON.stringify(mergeOpenApi(upstreams, table, o.main, o.title ?? 'svc'));
    return await serve(o, upstreams, table, merged);
  } catch (error) {
    await closePools();
    throw error;
  }
}

/** GET a module's `/openapi.json`, waiting (up to `deadline`) while it answers 503. */
async function readOpenApi(u: Upstream, deadline: number): Promise<Json> {
  for (let attempt = 1; ; attempt++) {
    let status: number;
    let text: string;
    try {
      const res = await u.pool.request({ path: `${u.prefix}/openapi.json`, method: 'GET', headers: { accept: 'application/json' } });
      status = res.statusCode;
      text = await res.body.text();
    } catch (error) {
      throw new GatewayError('SVC_ERR_GATEWAY_UNREACHABLE', `module ${u.name} is unreachable at ${u.url.href}: ${reason(error)}`, { cause: error });
    }
    if (status === 503 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(50 * attempt, 500)));
      continue;
    }
    if (status !== 200) {
      const hint = status === 404 ? ' (are its docs disabled? the gateway needs them)' : '';
      throw new GatewayError('SVC_ERR_GATEWAY_OPENAPI', `module ${u.name} answered ${status} for ${u.prefix}/openapi.json${hint}`);
    }
    try {
      const doc = JSON.parse(text) as Json;
      if (doc && typeof doc.paths === 'object' && doc.paths !== null) return doc;
    } catch {
      // reported below
    }
    throw new GatewayError('SVC_ERR_GATEWAY_OPENAPI', `module ${u.name}: /openapi.json is not an OpenAPI document`);
  }
}

/** Whether an operation is one of the app's generated endpoints (else a built-in of the runtime). */
function isGenerated(path: string, op: Json): boolean {
  if (GENERATED_PREFIXES.some((p) => path.startsWith(p))) return true;
  if (Array.isArray(op.tags) && op.tags.length > 0) return op.tags.some((t: unknown) => GENERATED_TAGS.has(t as string));
  return !BUILTIN_PATH.test(path);
}

/** The operations of a document as `[path, method, operation]`. */
function operations(doc: Json): [string, string, Json][] {
  const out: [string, string, Json][] = [];
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const m of METHODS) if (item && typeof item[m] === 'object') out.push([path, m, item[m] as Json]);
  }
  return out;
}

/**
 * Every module's generated endpoints. The same method and template served by
 * two modules throws, and so does another module's endpoint on a built-in
 * route of `main`.
 */
function routeTable(upstreams: Map<string, Upstream>, main: string): TableRoute[] {
  const seen = new Map<string, TableRoute>();
  // `{a}` and `{b}` in one place are one route.
  const keyOf = (method: string, path: string) => `${method} ${path.replace(/\{[^}]*\}/g, '{}')}`;
  for (const u of upstreams.values()) {
    for (const [path, m, op] of operations(u.doc)) {
      if (!isGenerated(path, op)) continue;
      const method = m.toUpperCase();
      const other = seen.get(keyOf(method, path));
      if (other) throw new GatewayError('SVC_ERR_GATEWAY_ROUTE_COLLISION', `route ${method} ${path} is served by both ${other.module} and ${u.name}`);
      const segments = path.split('/').map((s) => (/^\{[^}]*\}$/.test(s) ? null : s));
      seen.set(keyOf(method, path), { method, path, module: u.name, segments, literals: segments.filter((s) => s !== null).length });
    }
    // An upgrade is a GET: a WebSocket walker clashes with another module's GET of its path too.
    for (const path of websocketsOf(u.doc)) {
      const other = seen.get(keyOf('GET', path));
      if (other && other.module === u.name) continue;
      if (other) throw new GatewayError('SVC_ERR_GATEWAY_ROUTE_COLLISION', `WebSocket walker ${path} is served by both ${other.module} and ${u.name}`);
      const segments = path.split('/');
      seen.set(keyOf('GET', path), { method: 'WS', path, module: u.name, segments, literals: segments.length });
    }
  }
  for (const [path, m, op] of operations((upstreams.get(main) as Upstream).doc)) {
    const other = isGenerated(path, op) ? undefined : seen.get(keyOf(m.toUpperCase(), path));
    if (other) throw new GatewayError('SVC_ERR_GATEWAY_ROUTE_COLLISION', `route ${m.toUpperCase()} ${path} is served by both ${main} (built-in) and ${other.module}`);
  }
  // Most literal segments first: `/items/special` wins over `/items/{id}`.
  return [...seen.values()].sort((a, b) => b.literals - a.literals || a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
}

/** The `/ws/<Name>` paths of the WebSocket walkers a module's document lists (malformed entries are left out). */
function websocketsOf(doc: Json): string[] {
  const list: unknown = doc[WS_EXTENSION];
  if (!Array.isArray(list)) return [];
  const out: string[] = [];
  for (const w of list) {
    const path = (w as { path?: unknown } | null)?.path;
    if (typeof path === 'string' && /^\/ws\/[^/]+$/.test(path)) out.push(path);
  }
  return out;
}

/** The route table by number of path segments, each list most literal first. */
type Matcher = Map<number, TableRoute[]>;

function matcher(table: TableRoute[]): Matcher {
  const out: Matcher = new Map();
  for (const r of table) {
    const list = out.get(r.segments.length) ?? [];
    list.push(r);
    out.set(r.segments.length, list);
  }
  return out;
}

/**
 * The module that serves `method path`: the route of that method, else any
 * route of that path (its module answers 405; a WebSocket walker's, for an
 * upgrade), else `main`.
 */
function ownerOf(routes: Matcher, method: string, path: string, main: string): { module: string; route?: TableRoute } {
  const parts = path.split('/').map(safeDecode);
  let anyMethod: TableRoute | undefined;
  let viaGet: TableRoute | undefined;
  for (const r of routes.get(parts.length) ?? []) {
    if (!r.segments.every((s, i) => (s === null ? parts[i] !== '' : s === parts[i]))) continue;
    if (r.method === method) return { module: r.module, route: r };
    if (method === 'HEAD' && r.method === 'GET') viaGet ??= r;
    anyMethod ??= r;
  }
  const r = viaGet ?? anyMethod;
  return r ? { module: r.module, route: r } : { module: main };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * One OpenAPI document of every route: `main`'s built-ins and each module's
 * generated endpoints (tagged `x-svc-module`). Components are merged by name;
 * equal ones are kept once. A name two modules define differently keeps the
 * first module's definition (`main` first, then the modules in declared
 * order) and the later one is renamed `<module>_<Name>`, its `$ref`s (and
 * security requirements, for security schemes) rewritten to match — nothing
 * is overwritten.
 */
function mergeOpenApi(upstreams: Map<string, Upstream>, table: TableRoute[], main: string, title: string): Json {
  const order = [main, ...[...upstreams.keys()].filter((n) => n !== main)];
  const mainDoc = (upstreams.get(main) as Upstream).doc;
  const paths: Json = {};
  const components: Json = {};
  const owned = new Set(table.map((r) => `${r.module} ${r.method} ${r.path}`));
  const websockets: Json[] = [];
  for (const name of order) {
    const doc = (upstreams.get(name) as Upstream).doc;
    const renames = mergeComponents(components, doc.components ?? {}, name);
    const listed = new Set(websocketsOf(doc));
    for (const w of Array.isArray(doc[WS_EXTENSION]) ? (doc[WS_EXTENSION] as Json[]) : []) if (listed.delete(w?.path)) websockets.push({ ...w, module: name });
    for (const [path, m, op] of operations(doc)) {
      const generated = owned.has(`${name} ${m.toUpperCase()} ${path}`);
      if (!generated && (name !== main || isGenerated(path, op))) continue;
      const item = (paths[path] ??= {});
      const pathParams = (doc.paths as Json)[path].parameters;
      if (pathParams !== undefined && item.parameters === undefined) item.parameters = rewrite(pathParams, renames);
      item[m] = { ...rewrite(op, renames), ...(generated ? { 'x-svc-module': name } : {}) };
    }
  }
  // `/openapi.json` is the gateway's own.
  return { ...mainDoc, openapi: mainDoc.openapi ?? '3.1.0', info: { ...mainDoc.info, title }, paths, [WS_EXTENSION]: websockets, components };
}

/** Merge one module's components into `into`; returns the renames (`schemas/Name` → new name). */
function mergeComponents(into: Json, from: Json, module: string): Map<string, string> {
  const renames = new Map<string, string>();
  for (const [kind, entries] of Object.entries(from)) {
    if (!entries || typeof entries !== 'object') continue;
    const target = (into[kind] ??= {});
    for (const [name, value] of Object.entries(entries as Json)) {
      if (!(name in target)) continue;
      if (canonical(target[name]) === canonical(value)) continue;
      let renamed = `${module}_${name}`;
      for (let i = 2; renamed in target || renamed in (entries as Json); i++) renamed = `${module}_${name}_${i}`;
      renames.set(`${kind}/${name}`, renamed);
    }
  }
  for (const [kind, entries] of Object.entries(from)) {
    if (!entries || typeof entries !== 'object') continue;
    const target = into[kind] as Json;
    for (const [name, value] of Object.entries(entries as Json)) {
      const renamed = renames.get(`${kind}/${name}`);
      if (renamed !== undefined) target[renamed] = rewrite(value, renames);
      else if (!(name in target)) target[name] = rewrite(value, renames);
    }
  }
  return renames;
}

/** A deep copy of `value` with renamed components' `$ref`s and security requirement names rewritten. */
function rewrite(value: unknown, renames: Map<string, string>, key?: string): any {
  if (Array.isArray(value)) {
    if (key === 'security') {
      return value.map((req: Json) => Object.fromEntries(Object.entries(req).map(([k, v]) => [renames.get(`securitySchemes/${k}`) ?? k, v])));
    }
    return value.map((v) => rewrite(v, renames));
  }
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string' && renames.size > 0) {
      const m = /^#\/components\/([^/]+)\/(.+)$/.exec(v);
      const renamed = m && renames.get(`${m[1]}/${m[2]}`);
      out[k] = renamed ? `#/components/${m[1]}/${renamed}` : v;
    } else out[k] = rewrite(v, renames, k);
  }
  return out;
}

/** JSON with sorted keys: equal schemas compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

/** Listen and serve: the merged document, preflights, proxied requests and relayed upgrades. */
async function serve(o: GatewayOptions, upstreams: Map<string, Upstream>, table: TableRoute[], merged: string): Promise<Gateway> {
  const cors = new CorsPolicy(o.cors);
  const routes = matcher(table);
  const relayed = new Set<Socket>();
  const down = new Set<string>();
  const say = (line: string) => o.log?.(`gateway: ${line}`);
  const reachable = (name: string, ok: boolean, why?: string) => {
    if (ok && down.delete(name)) say(`module ${name} is reachable again`);
    else if (!ok && !down.has(name)) {
      down.add(name);
      say(`module ${name} is unreachable: ${why}`);
    }
  };

  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch (error) {
      // Never a crash of the gateway (and of its modules with it): a 500 for this request.
      say(`a request failed: ${reason(error)}`);
      if (!res.headersSent) {
        const text = failure({ code: 'INTERNAL_ERROR', message: 'the gateway failed on this request' }, newRequestId());
        res.writeHead(500, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
        res.end(text);
      } else res.destroy();
    }
  });
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const origin = req.headers.origin;
    if (cors.enabled && req.method === 'OPTIONS' && origin !== undefined && req.headers['access-control-request-method'] !== undefined) {
      res.writeHead(204, cors.preflight(origin, req.headers));
      res.end();
      return;
    }
    const path = pathOf(req.url ?? '/');
    if (o.docs !== false && path === '/openapi.json' && (req.method === 'GET' || req.method === 'HEAD')) {
      const headers: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(merged), 'cache-control': 'no-cache' };
      cors.apply(origin, headers);
      res.writeHead(200, headers);
      res.end(req.method === 'HEAD' ? undefined : merged);
      return;
    }
    const u = upstreams.get(ownerOf(routes, req.method ?? 'GET', path, o.main).module) as Upstream;
    const authorization = req.headers.authorization;
    // Another module takes the main module's users on their signature alone: main says first whether the token
    // still stands (revoked, user deleted or disabled), on every request, so a revocation applies at once.
    if (o.verifyTokens !== false && u.name !== o.main && authorization !== undefined) {
      const main = upstreams.get(o.main) as Upstream;
      void tokenVerdict(main, authorization, req).then(
        (refusal) => (refusal ? answerWith(refusal, req, res, cors) : proxy(u, req, res, cors, reachable)),
        (error: unknown) => answerWith(unreachable(main, error, req), req, res, cors),
      );
      return;
    }
    proxy(u, req, res, cors, reachable);
  };
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    try {
      onUpgrade(req, socket, head);
    } catch (error) {
      say(`an upgrade failed: ${reason(error)}`);
      socket.destroy();
    }
  });
  const onUpgrade = (req: IncomingMessage, socket: Socket, head: Buffer): void => {
    relayed.add(socket);
    socket.once('close', () => relayed.delete(socket));
    socket.on('error', () => socket.destroy());
    const origin = req.headers.origin;
    if (origin !== undefined && cors.refusesUpgrade(origin)) {
      socket.end(rawEnvelope(403, 'Forbidden', 'FORBIDDEN', `origin ${origin} is not allowed`, req));
      return;
    }
    // A WebSocket walker's module; else whoever serves the path (a module's upgrade it will not switch), else main.
    const path = pathOf(req.url ?? '/');
    const ws = ownerOf(routes, 'WS', path, o.main);
    const u = upstreams.get(ws.route?.method === 'WS' ? ws.module : ownerOf(routes, req.method ?? 'GET', path, o.main).module) as Upstream;
    const tokens = o.verifyTokens !== false && u.name !== o.main ? upgradeTokens(req) : [];
    if (tokens.length === 0) return relay({ relayed, reachable }, u, req, socket, head);
    // Main judges every token the module would take (header and query), before a byte reaches the module.
    const main = upstreams.get(o.main) as Upstream;
    socket.pause();
    void Promise.all(tokens.map((authorization) => tokenVerdict(main, authorization, req))).then(
      (verdicts) => {
        const refusal = verdicts.find((v) => v !== undefined);
        if (refusal) return void socket.end(rawEnvelope(refusal.status, refusal.status === 401 ? 'Unauthorized' : 'Forbidden', refusal.code, refusal.message, req));
        if (socket.destroyed) return;
        socket.resume();
        relay({ relayed, reachable }, u, req, socket, head);
      },
      (error: unknown) => {
        reachable(main.name, false, reason(error));
        socket.end(rawEnvelope(502, 'Bad Gateway', 'MODULE_UNREACHABLE', `module ${o.main} is unreachable (checking the token)`, req));
      },
    );
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`,
    port,
    routes: table.map(({ method, path, module }) => ({ method, path, module })).sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method)),
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        for (const s of relayed) s.destroy();
        await stopped;
        await Promise.all([...upstreams.values()].map((u) => u.pool.destroy().catch(() => undefined)));
      })();
      return closing;
    },
  };
}

/** Why main refuses a token: its status and error (undefined: the token stands). */
interface Refusal {
  status: number;
  code: string;
  message: string;
}

/**
 * Main's verdict on a token (`GET /user/me` with it): undefined when it
 * stands, else main's refusal (401 revoked or expired, 403 a password to
 * change first…). Rejects when main cannot be reached.
 */
async function tokenVerdict(main: Upstream, authorization: string, req: IncomingMessage): Promise<Refusal | undefined> {
  const headers: Record<string, string> = { authorization, accept: 'application/json', ...forwarded(req) };
  const res = await main.pool.request({ method: 'GET', path: `${main.prefix}/user/me`, headers, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  if (res.statusCode < 400) return undefined;
  if (res.statusCode !== 401 && res.statusCode !== 403) throw new Error(`main answered ${res.statusCode} to a token check`);
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
  } catch {
    error = undefined;
  }
  return { status: res.statusCode, code: typeof error?.code === 'string' ? error.code : 'UNAUTHORIZED', message: typeof error?.message === 'string' ? error.message : 'the token was refused' };
}

/** Answer a request the gateway refuses itself (an envelope, the gateway's CORS). */
function answerWith(refusal: Refusal, req: IncomingMessage, res: ServerResponse, cors: CorsPolicy): void {
  req.resume(); // the body is not wanted
  const text = failure({ code: refusal.code, message: refusal.message }, newRequestId(req.headers['x-request-id'] as string | undefined));
  const out: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) };
  cors.apply(req.headers.origin, out);
  res.writeHead(refusal.status, out);
  res.end(text);
}

/** Main could not be asked about a token: 502, as for any module that cannot be reached. */
function unreachable(main: Upstream, error: unknown, _req: IncomingMessage): Refusal {
  return { status: 502, code: 'MODULE_UNREACHABLE', message: `module ${main.name} is unreachable (checking the token): ${reason(error)}` };
}

/** Relay one request to its module: headers filtered, bodies streamed, CORS applied; 502 when the module cannot be reached. */
function proxy(u: Upstream, req: IncomingMessage, res: ServerResponse, cors: CorsPolicy, reachable: (name: string, ok: boolean, why?: string) => void): void {
  const abort = new AbortController();
  // A client gone before the answer ended: the upstream request (or its body) is aborted too.
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
  const headers = forwardHeaders(req);
  u.pool
    .request({ path: u.prefix + targetOf(req.url ?? '/'), method: req.method ?? 'GET', headers, body: hasBody ? req : null, signal: abort.signal })
    .then(
      (up) => {
        reachable(u.name, true);
        const out: OutgoingHttpHeaders = {};
        const connection = connectionTokens(up.headers.connection);
        for (const [k, v] of Object.entries(up.headers)) {
          if (v === undefined || HOP_BY_HOP.has(k) || connection.has(k) || k.startsWith('proxy-') || k.startsWith('access-control-')) continue;
          out[k] = v;
        }
        cors.apply(req.headers.origin, out);
        if (res.destroyed) {
          up.body.destroy();
          return;
        }
        res.writeHead(up.statusCode, out);
        pipeline(up.body, res, () => undefined);
      },
      (error: unknown) => {
        if (abort.signal.aborted || res.destroyed) return;
        if (res.headersSent) return void res.destroy();
        const code = (error as { code?: unknown }).code;
        const why = reason(error);
        let status = 502;
        let body: ErrorBody = { code: 'MODULE_UNREACHABLE', message: `module ${u.name} is unreachable: ${why}` };
        if (code === 'UND_ERR_INVALID_ARG') [status, body] = [400, { code: 'BAD_REQUEST', message: `the request cannot be relayed: ${why}` }];
        else if (code === 'UND_ERR_HEADERS_TIMEOUT') [status, body] = [504, { code: 'TIMEOUT', message: `module ${u.name} did not answer in time` }];
        else reachable(u.name, false, why);
        const text = failure(body, newRequestId(req.headers['x-request-id'] as string | undefined));
        const out: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) };
        cors.apply(req.headers.origin, out);
        res.writeHead(status, out);
        res.end(text);
      },
    );
}

/** Request headers for the module: hop-by-hop ones out, `Host` kept, `X-Forwarded-*` added. */
function forwardHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connection = connectionTokens(req.headers.connection);
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || connection.has(k) || k.startsWith('proxy-')) continue;
    out[k] = v;
  }
  Object.assign(out, forwarded(req));
  if (req.headers.host !== undefined) out.host = req.headers.host;
  return out;
}

/** The `X-Forwarded-*` headers of a request to a module. */
function forwarded(req: IncomingMessage): Record<string, string> {
  const client = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  const before = req.headers['x-forwarded-for'];
  const host = req.headers['x-forwarded-host'] ?? req.headers.host;
  return {
    'x-forwarded-for': before ? `${Array.isArray(before) ? before.join(', ') : before}, ${client}` : client,
    'x-forwarded-proto': (req.headers['x-forwarded-proto'] as string | undefined) ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'),
    ...(host === undefined ? {} : { 'x-forwarded-host': Array.isArray(host) ? (host[0] as string) : host }),
  };
}

function connectionTokens(value: string | string[] | undefined): Set<string> {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(text.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean));
}

/** What relays share: the open sockets (closed with the gateway) and the reachability log. */
interface RelayContext {
  relayed: Set<Socket>;
  reachable: (name: string, ok: boolean, why?: string) => void;
}

/**
 * The tokens a module would take from an upgrade, as `Authorization` values
 * for main to judge: the header as sent, and the query's `token` unless it is
 * the header's own.
 */
function upgradeTokens(req: IncomingMessage): string[] {
  const out: string[] = [];
  const header = req.headers.authorization;
  if (header !== undefined) out.push(header);
  // Read exactly as the modules read it (transports/ws): all the target holds after its first `?`, as it
  // was sent. A URL parser would stop at a `#` (a fragment), where a module reads on: `?#&token=…` hid a
  // revoked token from main that the module then took.
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  const queried = q < 0 ? null : new URLSearchParams(target.slice(q + 1)).get('token');
  if (queried && queried !== bearer(header)) out.push(`Bearer ${queried}`);
  return out;
}

/**
 * Relay an upgrade as raw TCP to module `u`: the request head is written
 * again with `X-Forwarded-*` added, the module's answer goes back as it is;
 * once it switched (101), bytes flow both ways until either side closes.
 */
function relay(ctx: RelayContext, u: Upstream, req: IncomingMessage, client: Socket, head: Buffer): void {
  const tls = u.url.protocol === 'https:';
  const host = u.url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.url.port || (tls ? 443 : 80));
  const upstream = tls ? tlsConnect({ host, port, servername: host }) : netConnect({ host, port });
  ctx.relayed.add(upstream);
  // connecting → answering → (piped | done)
  let state: 'connecting' | 'answering' | 'piped' | 'done' = 'connecting';
  let answer = Buffer.alloc(0);
  upstream.once(tls ? 'secureConnect' : 'connect', () => {
    state = 'answering';
    const fwd = forwarded(req);
    const lines = [`${req.method} ${u.prefix}${targetOf(req.url ?? '/')} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      if (!(name.toLowerCase() in fwd)) lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
    }
    for (const [k, v] of Object.entries(fwd)) lines.push(`${k}: ${v}`);
    // Only the upgrade's head: bytes the client sent after it (`head`) follow once the module switched. Sent now,
    // a request pipelined behind a refused upgrade reached the module, and its answer went back to the client.
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
  const onData = (chunk: Buffer) => {
    answer = Buffer.concat([answer, chunk]);
    if (answer.indexOf('\r\n\r\n') < 0 && answer.length < 64 * 1024) return;
    upstream.off('data', onData);
    ctx.reachable(u.name, true);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer.subarray(0, 32).toString('latin1'))?.[1] ?? 0);
    if (status !== 101) {
      // Not switched: that one answer goes back and both connections close. Piping on would turn the client's
      // socket into a raw tunnel to the module (its built-in routes, past the gateway's routing and checks).
      state = 'done';
      ctx.relayed.delete(upstream);
      upstream.destroy();
      client.end(answer);
      return;
    }
    state = 'piped';
    client.write(answer);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  };
  upstream.on('data', onData);
  upstream.once('error', (error) => {
    if (state === 'done') return;
    if (state === 'piped' || client.destroyed) return void client.destroy();
    state = 'done';
    const why = reason(error);
    ctx.reachable(u.name, false, why);
    ctx.relayed.delete(upstream);
    upstream.destroy();
    client.end(rawEnvelope(502, 'Bad Gateway', 'MODULE_UNREACHABLE', `module ${u.name} is unreachable: ${why}`, req));
  });
  // A close on either side ends the other once what it was sent is written.
  upstream.once('close', () => {
    ctx.relayed.delete(upstream);
    if (state !== 'done') endSoon(client);
  });
  client.once('close', () => endSoon(upstream));
}

/** End a socket and destroy it once its last bytes are written. */
function endSoon(socket: Socket): void {
  if (socket.destroyed) return;
  socket.end(() => socket.destroy());
}

/** A whole HTTP/1.1 error response with an envelope, closing the connection (upgrades have no ServerResponse). */
function rawEnvelope(status: number, text: string, code: string, message: string, req: IncomingMessage): string {
  const body = failure({ code, message }, newRequestId(req.headers['x-request-id'] as string | undefined));
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: ${JSON_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** The CORS headers of `[scale.microservices.cors]`. */
class CorsPolicy {
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

/** A request target as path and query (an absolute-form target → its path and query). */
function targetOf(url: string): string {
  if (url.startsWith('/')) return url;
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return `/${url}`;
  }
}

/** The path of a request target (`/a/b?x=1` → `/a/b`; an absolute-form target → its path). */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  const target = q < 0 ? url : url.slice(0, q);
  if (target.startsWith('/')) return target;
  try {
    return new URL(target).pathname;
  } catch {
    return target;
  }
}

/** A short, secret-free why: an error code (`ECONNREFUSED`) or message. */
function reason(error: unknown): string {
  const e = error as { code?: unknown; cause?: { code?: unknown }; message?: unknown };
  const code = typeof e?.code === 'string' && !e.code.startsWith('UND_ERR_') ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  return code ?? (typeof e?.message === 'string' ? e.message : String(error));
}
