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
 * WebSocket upgrades are relayed as raw TCP (gateway-relay.ts) to the module whose document
 * lists the WebSocket walker (`x-svc-websockets`: OpenAPI cannot describe a
 * WebSocket, so each module's document lists its own there).
 *
 * Decisions (no spec says otherwise):
 * - CORS (`CorsPolicy`, gateway-cors.ts) with an empty `allow_origins`: the gateway adds no CORS header and
 *   answers no preflight; an `OPTIONS` goes to its module as any request does
 *   (the module's own CORS headers are stripped, so a browser refuses it).
 * - A preflight from an origin not allowed: 204 with `Vary: Origin` and no
 *   `Access-Control-*` header (the browser refuses; nothing is revealed).
 * - A WebSocket upgrade whose `Origin` is not in a non-`*` allow list is
 *   refused with 403 (browsers apply no CORS to WebSockets: the allow list is
 *   the only cross-site check there is). No `Origin` (not a browser) passes.
 * - Tokens (gateway-tokens.ts): another module takes main's users on the token's signature alone
 *   (it never hears of a revocation, a disabled or a deleted user), so main
 *   (`GET /user/me`) judges every token sent to another module before it is
 *   relayed: the `Authorization` header of any request, and on a WebSocket
 *   upgrade the query's `token` as well (each one, when both are sent). A
 *   token sent later in a WebSocket frame travels inside the relayed bytes:
 *   the module alone judges it.
 * - Two modules with a WebSocket walker of one name refuse to start, as two
 *   modules serving one route do. An upgrade to a `/ws/…` path no module
 *   lists goes to `main` (which answers 404).
 * - Schema (component) name clashes: see `mergeOpenApi` (gateway-openapi.ts).
 * - Forwarding (gateway-proxy.ts): `X-Forwarded-For` gets the client's address appended; `X-Forwarded-Proto`
 *   and `X-Forwarded-Host` are kept when a proxy in front set them, else set.
 *   The original `Host` is passed on. Modules believe them only from their
 *   `[scale.server] trusted_proxies`.
 */
import { type IncomingMessage, type OutgoingHttpHeaders, createServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createRequire } from 'node:module';
import { failure, newRequestId } from '../http/index.ts';
import { CorsPolicy, type GatewayCors } from './gateway-cors.ts';
import { GatewayError, reason } from './gateway-errors.ts';
import { mergeOpenApi } from './gateway-openapi.ts';
import { JSON_TYPE, proxy } from './gateway-proxy.ts';
import { rawEnvelope, relay } from './gateway-relay.ts';
import { type GatewayRoute, matcher, ownerOf, pathOf, routeTable, type TableRoute } from './gateway-routes.ts';
import { answerWith, tokenVerdict, unreachable, upgradeTokens } from './gateway-tokens.ts';
import { readOpenApi, type Upstream } from './gateway-upstream.ts';

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

export interface Gateway {
  /** `http://host:port` */
  url: string;
  port: number;
  routes: GatewayRoute[];
  /** Stop listening, close every socket (relayed WebSockets too) and pool; idempotent. */
  close(): Promise<void>;
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
      // undici is loaded with the first module routed to (not by a process that never is a gateway).
      const { Pool } = createRequire(import.meta.url)('undici') as typeof import('undici');
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
