/**
 * The sandbox proxy: one node:http server in front of every sandbox pod. A request's Host names the sandbox
 * (`{sandbox_id}.preview.<domain>`); the route table, kept by a watch of the sandbox pods, names the pod; HTTP and
 * WebSocket traffic is relayed to the pod's dev server (see http-relay.ts and ws-relay.ts).
 *
 * What a request gets, in order:
 * 1. `GET /_proxy/health` (any Host): 200 `ok (N routes)`, N the sandbox pods tracked.
 * 2. A Host that names no sandbox: 404 `PREVIEW_NO_SANDBOX`.
 * 3. In private mode, no valid preview token for that sandbox: 401 `PREVIEW_TOKEN`, and nothing reaches the pod.
 *    A token in the query of a GET is exchanged for a cookie with a 302 to the same URL without it.
 * 4. No pod for the sandbox: a browser navigation gets the loading page (503, reloading every 2 s), an API call 502
 *    `PREVIEW_UNKNOWN_SANDBOX`; a pod not ready: the loading page, or 503 `PREVIEW_NOT_READY`.
 * 5. Relayed; a pod that refuses the connection: the loading page, or 502 `PREVIEW_UNREACHABLE`.
 *
 * Closing is graceful: the listener stops, idle connections close, requests in flight have until the deadline
 * (10 s) to finish; WebSockets are ended at once (their clients reconnect through another replica).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Kube, ObjectWatch } from '../../kube/index.ts';
import { rawError, sendError, sendLoading, wantsHtml } from './answers.ts';
import { firstValue, forwardRequestHeaders, requestFacts, type RequestFacts } from './headers.ts';
import { podDispatcher, relayHttp, type RelayFailure } from './http-relay.ts';
import { PreviewVerifier } from '../../actors/sandbox/index.ts';
import { carriedToken, TOKEN_HEADER, tokenCookie, type Carried } from './private-mode.ts';
import { followSandboxPods, RouteTable, SANDBOX_ID_PATTERN, sandboxIdOf, type Route } from './routes.ts';
import { checkPreviewSecret } from './settings.ts';
import { relayUpgrade } from './ws-relay.ts';

/** How to start a proxy. */
export interface SandboxProxyOptions {
  /** The cluster whose sandbox pods are followed (a watch); without it, `routes` is used as given. */
  kube?: Kube;
  /** The route table (a new one by default); with `kube`, the watch keeps it. */
  routes?: RouteTable;
  /** Where the sandbox pods are ('svc-sandboxes'). */
  namespace?: string;
  /** Their label selector ('svc-sandbox=true'). */
  label?: string;
  /** The dev server's port in each pod (8000). */
  internalPort?: number;
  /** The port to listen on (0: a free one). */
  port: number;
  /** The address to listen on. */
  host: string;
  /** Private mode's key (at least 32 bytes); no private mode without it. */
  previewSecret?: string;
  /** Only `{sandbox_id}.<previewDomain>` hosts name a sandbox; any domain without it. */
  previewDomain?: string;
  /** Sandbox ids a Host may name (`sbx-` and 16 hex digits). */
  idPattern?: RegExp;
  /** How long `close()` lets requests in flight finish, in ms (10 000). */
  closeTimeoutMs?: number;
  /** How long start waits for the first list of pods before it listens anyway, in ms (10 000). */
  syncTimeoutMs?: number;
  /** One line per watch failure (stderr by default). */
  log?: (line: string) => void;
}

/** A running proxy. */
export interface SandboxProxy {
  port: number;
  routes: RouteTable;
  /** Stop accepting, let requests in flight finish (until the deadline), end the watch. */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * Start the proxy.
 *
 * @example
 * const proxy = await startSandboxProxy({ kube: connectCluster(process.env), port: 8080, host: '0.0.0.0' });
 * process.once('SIGTERM', () => void proxy.close());
 */
export async function startSandboxProxy(options: SandboxProxyOptions): Promise<SandboxProxy> {
  if (options.previewSecret !== undefined) checkPreviewSecret(options.previewSecret);
  const routes = options.routes ?? new RouteTable();
  const internalPort = options.internalPort ?? 8000;
  const pattern = options.idPattern ?? SANDBOX_ID_PATTERN;
  const domain = options.previewDomain?.toLowerCase().replace(/\.$/, '');
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const verifier = options.previewSecret ? new PreviewVerifier(options.previewSecret) : undefined;
  const pods = podDispatcher();
  const sockets = new Set<Duplex>();
  let closing = false;

  let watch: ObjectWatch | undefined;
  if (options.kube) {
    watch = followSandboxPods(options.kube, routes, {
      namespace: options.namespace ?? 'svc-sandboxes',
      label: options.label ?? 'svc-sandbox=true',
      onError: (e) => log(`svc sandbox proxy: watch of sandbox pods: ${e.message} (retrying)`),
    });
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([watch.synced.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), options.syncTimeoutMs ?? 10_000)))]);
    clearTimeout(timer);
    if (!waited) log('svc sandbox proxy: the sandbox pods are not listed yet; serving meanwhile (every sandbox unknown until they are)');
  }

  /** The token check of private mode: the first valid token the request carries (where it came from, its expiry), or undefined when none is. */
  const authorize = async (req: IncomingMessage, sandboxId: string): Promise<{ carried: Carried; token: string; from: NonNullable<Carried['from']>; exp: number } | undefined> => {
    const carried = carriedToken(req);
    if (!verifier) return undefined;
    // A few at most: a stale header, a cookie of an earlier visit, the new one.
    for (const { token, from } of carried.tokens.slice(0, 8)) {
      const claims = await verifier.verify(token, sandboxId);
      if (claims) return { carried, token, from, exp: claims.exp };
    }
    return undefined;
  };

  /**
   * A request target as a path (`/…`): the absolute form (`http://other/x`) reduced to its path and query, and
   * leading slashes and backslashes to one (a `//evil.example` in a redirect's Location would leave the preview).
   */
  function originForm(target: string | undefined): string {
    let t = target ?? '/';
    if (!t.startsWith('/')) {
      if (t === '*') return t;
      try {
        const u = new URL(t);
        t = `${u.pathname}${u.search}`;
      } catch {
        t = `/${t}`;
      }
    }
    return t.replace(/^[\/\\]+/, '/');
  }

  /** The route to use, or undefined after answering for a sandbox that cannot be reached now. */
  const routeFor = (sandboxId: string, answer: (state: 'unknown' | 'not-ready', route?: Route) => void): (Route & { ip: string }) | undefined => {
    const route = routes.get(sandboxId);
    if (!route) return void answer('unknown');
    if (!route.ready || !route.ip) return void answer('not-ready', route);
    return route as Route & { ip: string };
  };

  /** A request: answered by the proxy, or relayed; a promise only in private mode (the token check). */
  const onRequest = (req: IncomingMessage, res: ServerResponse): Promise<void> | undefined => {
    const url = originForm(req.url);
    if (url !== req.url) req.url = url;
    if ((url === '/_proxy/health' || url.startsWith('/_proxy/health?')) && (req.method === 'GET' || req.method === 'HEAD')) {
      const body = `ok (${routes.size} routes)`;
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const facts = requestFacts(req.rawHeaders);
    const sandboxId = sandboxIdOf(facts.host, pattern, domain);
    if (!sandboxId) return void sendError(res, 'PREVIEW_NO_SANDBOX');
    if (verifier) return onPrivateRequest(req, res, sandboxId, facts);
    relay(req, res, sandboxId, facts, url, undefined);
  };

  /** Private mode: the token checked (and a token in a query exchanged for a cookie) before anything is relayed. */
  const onPrivateRequest = async (req: IncomingMessage, res: ServerResponse, sandboxId: string, facts: RequestFacts): Promise<void> => {
    const granted = await authorize(req, sandboxId);
    if (!granted) return sendError(res, 'PREVIEW_TOKEN', undefined, { 'www-authenticate': 'Bearer realm="svc-preview"' });
    const secure = firstValue(req.headers['x-forwarded-proto']) === 'https' || (req.socket as { encrypted?: boolean }).encrypted === true;
    if (granted.from === 'query' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(302, { location: originForm(granted.carried.url), 'set-cookie': tokenCookie(granted.token, granted.exp, secure), 'cache-control': 'no-store', 'content-length': 0 });
      res.end();
      return;
    }
    relay(req, res, sandboxId, facts, granted.carried.url, granted.carried.cookie);
  };

  /** Relay to the sandbox's pod, or answer for a sandbox that cannot be reached now. `cookie`: private mode's. */
  const relay = (req: IncomingMessage, res: ServerResponse, sandboxId: string, facts: RequestFacts, path: string, cookie: string | null | undefined): void => {
    const route = routes.get(sandboxId);
    if (!route || !route.ready || !route.ip) return answerNoPod(res, sandboxId, facts.html, route);
    const pod = podAddress(route.ip);
    const headers = forwardRequestHeaders(req, verifier ? { target: pod.host, clientAddress: req.socket.remoteAddress, drop: TOKEN_DROP, cookie } : { target: pod.host, clientAddress: req.socket.remoteAddress });
    relayHttp(pods, req, res, { origin: pod.origin, path, headers, hasBody: facts.hasBody }, relayFailed, sandboxId);
  };

  /** `Host` and origin of a pod's dev server, made once per pod address. */
  const addresses = new Map<string, { host: string; origin: string }>();
  const podAddress = (ip: string): { host: string; origin: string } => {
    let a = addresses.get(ip);
    if (!a) {
      // Pod addresses change as pods come and go: a bound on what is kept.
      if (addresses.size >= 4096) addresses.clear();
      const host = hostOf(ip, internalPort);
      a = { host, origin: `http://${host}` };
      addresses.set(ip, a);
    }
    return a;
  };

  const onUpgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    socket.on('error', () => socket.destroy());
    if (closing) return rawError(socket, 'PREVIEW_NOT_READY', 'the proxy is shutting down; reconnect');
    if (String(req.headers.upgrade).toLowerCase() !== 'websocket') return void socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    const sandboxId = sandboxIdOf(req.headers.host, pattern, domain);
    if (!sandboxId) return rawError(socket, 'PREVIEW_NO_SANDBOX');
    let path = originForm(req.url);
    if (path !== req.url) req.url = path;
    let cookie: string | null | undefined;
    let protocols: string | null | undefined;
    let echo: string | undefined;
    if (verifier) {
      const granted = await authorize(req, sandboxId);
      if (!granted) return rawError(socket, 'PREVIEW_TOKEN');
      ({ url: path, cookie, protocols } = granted.carried);
      // Only token subprotocols were offered (whichever token let it in): select one, as the pod selects none.
      const offered = granted.carried.tokens.find((t) => t.from === 'protocol');
      if (protocols === null && offered) echo = `svc-preview.${offered.token}`;
    }
    const route = routeFor(sandboxId, (state) => rawError(socket, state === 'unknown' ? 'PREVIEW_UNKNOWN_SANDBOX' : 'PREVIEW_NOT_READY'));
    if (!route) return;
    const headers = forwardRequestHeaders(req, {
      target: hostOf(route.ip, internalPort),
      clientAddress: req.socket.remoteAddress,
      upgrade: true,
      ...(verifier ? { drop: TOKEN_DROP, cookie, protocols } : {}),
    });
    relayUpgrade(
      req,
      socket,
      head,
      { ip: route.ip, port: internalPort },
      path,
      headers,
      echo,
      (pair) => {
        for (const s of pair) {
          sockets.add(s);
          s.once('close', () => sockets.delete(s));
        }
      },
      () => rawError(socket, 'PREVIEW_UNREACHABLE'),
    );
  };

  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 60_000, noDelay: true });
  // While closing, a kept-alive connection is closed as soon as its answer is done.
  const closeIdleSoon = (): void => void setImmediate(() => server.closeIdleConnections());
  const afterAnswer = (): void => {
    if (closing) closeIdleSoon();
  };
  const failed = (req: IncomingMessage, res: ServerResponse, error: unknown): void => {
    log(`svc sandbox proxy: ${req.method} ${req.url}: ${(error as Error).message}`);
    if (!res.headersSent) sendError(res, 'PREVIEW_UNREACHABLE', 'the proxy failed to relay the request');
    else res.destroy();
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    res.on('finish', afterAnswer);
    try {
      // Without private mode a request is relayed synchronously (no promise per request).
      onRequest(req, res)?.catch((error: unknown) => failed(req, res, error));
    } catch (error) {
      failed(req, res, error);
    }
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(req, socket, head).catch(() => socket.destroy());
  });
  server.on('clientError', (_error, socket: Duplex) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });
  server.listen(options.port, options.host);
  try {
    await once(server, 'listening');
  } catch (error) {
    watch?.close();
    void pods.destroy();
    throw error;
  }
  const port = (server.address() as { port: number }).port;

  let closed: Promise<void> | undefined;
  const close = (timeoutMs = options.closeTimeoutMs ?? 10_000): Promise<void> =>
    (closed ??= (async () => {
      closing = true;
      watch?.close();
      for (const s of sockets) s.end();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([stopped, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      for (const s of sockets) s.destroy();
      await pods.destroy();
      await stopped;
    })());

  return { port, routes, close };
}

/** The token's header, dropped on the way to the pod (the cookie, parameter and subprotocol are taken out by name). */
const TOKEN_DROP: ReadonlySet<string> = new Set([TOKEN_HEADER]);

/** A pod that could not be reached: the loading page for a browser, 502 for an API caller. */
const relayFailed: RelayFailure = (res, error, sandboxId) => {
  const why = (error as NodeJS.ErrnoException).code ?? error.message;
  if (wantsHtml(res.req)) sendLoading(res, sandboxId as string, `its dev server does not answer yet (${why})`);
  else sendError(res, 'PREVIEW_UNREACHABLE', `the pod of ${sandboxId as string} did not answer: ${why}`);
};

/** A Host header for an address and port (an IPv6 address in brackets). */
const hostOf = (ip: string, port: number): string => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;

/** No pod for the sandbox, or one not ready: the loading page for a browser, 502/503 for an API caller. */
function answerNoPod(res: ServerResponse, sandboxId: string, html: boolean, route: Route | undefined): void {
  if (html) sendLoading(res, sandboxId, route ? `starting (pod ${route.phase ?? 'Pending'})` : 'waiting for the sandbox to be created');
  else if (!route) sendError(res, 'PREVIEW_UNKNOWN_SANDBOX', `no sandbox pod has the id ${sandboxId}`);
  else sendError(res, 'PREVIEW_NOT_READY', `the pod of ${sandboxId} is not ready (${route.phase ?? 'Pending'})`, { 'retry-after': '2' });
}
