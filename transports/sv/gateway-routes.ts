/**
 * The gateway's route table: the generated endpoints (walkers, functions,
 * webhooks, custom paths, WebSocket walkers) each module's OpenAPI document
 * lists, refused when two modules serve one route, and the matching of a
 * request's method and path to the module that serves it (else `main`).
 */
import { GatewayError } from './gateway-errors.ts';
import type { Json, Upstream } from './gateway-upstream.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Paths of generated endpoints whatever their tags. */
const GENERATED_PREFIXES = ['/walker/', '/function/', '/webhook/', '/ws/'];
/** Operation tags of generated endpoints (transports/http/openapi.ts). */
const GENERATED_TAGS = new Set(['walkers', 'functions', 'webhooks']);
/** Built-in paths, for documents whose operations carry no tag. */
const BUILTIN_PATH = /^\/(user|admin|sso|api-key|healthz|graph)(\/|$)|^\/(health|ready|metrics|docs|redoc|openapi\.json|traverse|favicon\.ico)?$/;
/** The document extension where a module lists its WebSocket walkers (transports/http/openapi.ts). */
export const WS_EXTENSION = 'x-svc-websockets';

/** A generated endpoint and the module that serves it. */
export interface GatewayRoute {
  /** An HTTP method, or `WS` for a WebSocket walker. */
  method: string;
  /** The OpenAPI path template: `/walker/Invoice/{node_id}`. */
  path: string;
  module: string;
}

/** A route with its template split for matching: `null` is a `{param}` segment. */
export interface TableRoute extends GatewayRoute {
  segments: (string | null)[];
  literals: number;
}

/** Whether an operation is one of the app's generated endpoints (else a built-in of the runtime). */
export function isGenerated(path: string, op: Json): boolean {
  if (GENERATED_PREFIXES.some((p) => path.startsWith(p))) return true;
  if (Array.isArray(op.tags) && op.tags.length > 0) return op.tags.some((t: unknown) => GENERATED_TAGS.has(t as string));
  return !BUILTIN_PATH.test(path);
}

/** The operations of a document as `[path, method, operation]`. */
export function operations(doc: Json): [string, string, Json][] {
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
export function routeTable(upstreams: Map<string, Upstream>, main: string): TableRoute[] {
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
export function websocketsOf(doc: Json): string[] {
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

export function matcher(table: TableRoute[]): Matcher {
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
export function ownerOf(routes: Matcher, method: string, path: string, main: string): { module: string; route?: TableRoute } {
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

/** The path of a request target (`/a/b?x=1` → `/a/b`; an absolute-form target → its path). */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  const target = q < 0 ? url : url.slice(0, q);
  if (target.startsWith('/')) return target;
  try {
    return new URL(target).pathname;
  } catch {
    return target;
  }
}
