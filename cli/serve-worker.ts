/**
 * What each worker thread of `svc start` runs: the app's registry, a graph
 * over the shared store, the front, and — on the threads that listen — the
 * HTTP server. A `/user/http` actor takes the main thread's orders (drain,
 * describe).
 */
import pino from 'pino';
import { existsSync } from 'node:fs';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { ActorBroadcast, fromReceive, threadOf, workerPlacement, type ActorSystem } from '../kernel/index.ts';
import { Graph, openAnchorStore } from '../actors/anchor/index.ts';
import { HookDispatcher, Registry, Root } from '../actors/walker/index.ts';
import {
  type BuiltinRoute,
  buildRoutes,
  ClientAddresses,
  Docs,
  type ForwardingHeader,
  Front,
  type HttpServer,
  identityRoutes,
  listenNode,
  listenUws,
  loadUws,
  openApiDocument,
  StaticFiles,
} from '../transports/http/index.ts';
import { attachNode, attachUws, WsHub, wsRoutes } from '../transports/ws/index.ts';
import { toHttpError } from '../transports/http/index.ts';
import type { SvcConfig } from './config.ts';
import {
  Authenticator,
  createEmailer,
  IdentityService,
  JwtVerifier,
  Passwords,
  ActorRateLimiter,
  RemoteHasher,
  RevocationTable,
  immediateUserExists,
  openUsersRepository,
} from '../actors/identity/index.ts';

export interface ServeBoot {
  /** Only build the routes and answer `describe` (for `--faux`). */
  faux: boolean;
  moduleName: string;
  title: string;
  projectRoot: string;
  config: SvcConfig;
  jwtSecret: string;
  dev: boolean;
  transport: 'uws' | 'node';
  port: number;
  /** Worker node ids that open the port (every one with uWebSockets.js, the first with node:http). */
  listeners: string[];
  /** Open the port at setup (false: wait for a `listen` order — node:http hands the port over on reload). */
  listenNow: boolean;
  storePath: string;
  usersPath: string;
  version: string;
}

export type HttpControl = { t: 'drain'; deadlineMs: number } | { t: 'describe' } | { t: 'listen' } | { t: 'stats'; gc?: boolean };

/** What `GET /admin/stats` reports of each worker thread. */
export interface WorkerStats {
  worker: string;
  /** Open WebSocket connections (session actors) on this thread. */
  websockets: number;
  /** Session actors still running on this thread (a closed connection's actor ends once its frame in hand is done). */
  session_actors: number;
  /** Live actors on this thread (guardians, partitions, sessions…). */
  actors: number;
  /** This thread's V8 heap in use. */
  heap_used_bytes: number;
  /** Handles and requests keeping this thread's event loop alive. */
  handles: number;
}

const STATS_TOPIC = 'runtime.stats';

export interface RouteSummary {
  method: string;
  path: string;
  kind: string;
  name: string;
  access: string;
}

export async function setup(
  system: ActorSystem,
  ctx: { nodeId: string; data: unknown; app: Record<string, unknown> | undefined },
): Promise<() => Promise<void>> {
  const boot = ctx.data as ServeBoot;
  if (!ctx.app) throw new Error('no app module was bundled');
  const registry = Registry.fromModule(ctx.app, boot.moduleName);
  const routes = buildRoutes(registry);
  const sockets = wsRoutes(registry);
  if (routes.length === 0 && sockets.length === 0) throw new Error(`${boot.moduleName} exports no walker and no function: nothing to serve`);
  const describe = (): RouteSummary[] => [
    ...routes.map((r) => ({ method: r.method, path: r.template, kind: r.kind, name: r.name, access: r.access })),
    ...sockets.map((r) => ({ method: 'WS', path: `/ws/${r.name}`, kind: r.broadcast ? 'websocket walker (broadcast)' : 'websocket walker', name: r.name, access: r.access })),
  ];

  if (boot.faux) {
    system.spawn(fromReceive(() => describe()), 'http');
    return async () => undefined;
  }

  const { config } = boot;
  const log = pino({ base: { worker: threadOf(ctx.nodeId) }, level: 'info' }, pino.destination({ fd: 1, sync: false }));
  process.on('unhandledRejection', (error) => log.error({ err: error }, 'unhandled rejection (an operation that was not awaited?)'));

  const store = await openAnchorStore(config['scale.database'].docdb_uri, { path: boot.storePath, baseDir: boot.projectRoot, synchronous: config['scale.database'].synchronous as 'NORMAL' | 'FULL' });
  const graph = await Graph.open({
    system,
    registry,
    store,
    placement: workerPlacement(),
    // The run deadline is the request timeout: a run the client stopped waiting for is dropped, not committed.
    runTimeoutMs: config['scale.server'].request_timeout_ms,
    timeoutMs: config['scale.server'].request_timeout_ms + 1000,
    onQuarantine: (id, reason) => log.warn({ anchor: id, reason }, 'anchor moved to quarantine'),
  });
  // Identity: users, tokens (revoked on every thread at once), rate limits, mail.
  const users = await openUsersRepository(config['scale.database'].docdb_uri, { path: boot.usersPath, baseDir: boot.projectRoot });
  const revocations = new RevocationTable();
  // Every token still alive may be revoked: the longest any lives is max_token_days (svc token can sign that long).
  const longest = Math.max(config['scale.jwt'].max_token_days, config['scale.jwt'].exp_delta_days) * 86_400_000;
  for (const [userId, ms] of await users.revocationsSince(Date.now() - Math.max(longest, config['scale.admin'].session_expiry_hours * 3_600_000))) revocations.set(userId, ms);
  // One message to every worker thread: revocations, WebSocket broadcasts, statistics.
  const bus = new ActorBroadcast(system, { accepts: (node) => threadOf(node) !== 'main' });
  revocations.serve(bus);
  const mail = await createEmailer({ ...config['scale.emailer'], smtp: config['scale.emailer.smtp'] }, boot.projectRoot);
  if ('disabled' in mail && config['scale.emailer'].provider) log.error({ reason: mail.disabled }, 'email disabled');
  const jwt = new JwtVerifier({
    secret: boot.jwtSecret,
    algorithm: config['scale.jwt'].algorithm as 'HS256',
    revocations,
    maxTokenDays: config['scale.jwt'].max_token_days,
    maxAdminHours: config['scale.admin'].session_expiry_hours,
    // A token of a user that never existed runs nothing (asked once per token; deletions are revocations).
    userExists: immediateUserExists(users),
  });
  // One authenticator for the front, the built-in routes and WebSockets.
  const auth = new Authenticator(jwt);
  const passwords = new Passwords(new RemoteHasher(system));
  passwords.warm();
  const identity = new IdentityService({
    users,
    passwords,
    system,
    revocations,
    limiter: new ActorRateLimiter(system, {
      placement: workerPlacement(),
      maxKeys: config['scale.auth'].rate_limit_max_keys,
      windowMs: config['scale.auth'].rate_window_seconds * 1000,
      salt: boot.jwtSecret,
    }),
    createRoot: (rootId) => graph.ensureRoot(rootId),
    dropRoot: (rootId) => graph.dropRoot(rootId),
    emailer: 'emailer' in mail ? mail.emailer : undefined,
    emailDisabledReason: 'disabled' in mail ? mail.disabled : '',
    jwt: { secret: boot.jwtSecret, algorithm: config['scale.jwt'].algorithm, expDays: config['scale.jwt'].exp_delta_days },
    auth: config['scale.auth'],
    adminSessionHours: config['scale.admin'].session_expiry_hours,
    log: (level, message, extra) => log[level](extra ?? {}, message),
  });

  const docsEnabled = config['scale.server'].docs_enabled;
  const publicDir = join(boot.projectRoot, 'public');
  const builtinRoutes: BuiltinRoute[] = [
    ...identityRoutes(identity, auth),
    {
      method: 'GET',
      path: '/admin/stats',
      auth: 'admin',
      doc: { summary: 'Per worker thread: open WebSockets, session actors, actors, heap, handles (?gc=1 collects first under --expose-gc)' },
      handler: async ({ req }) => {
        // `?gc=1` collects garbage first, when the process runs with --expose-gc (for leak checks).
        const gc = new URLSearchParams(req.query).get('gc') === '1';
        const workers = (await bus.gather<WorkerStats>(STATS_TOPIC, { gc }, 5000)).sort((a, b) => a.worker.localeCompare(b.worker, 'en', { numeric: true }));
        return { data: { rss_bytes: process.memoryUsage.rss(), workers } };
      },
    },
  ];
  // Hook walkers: before every generated route and every WebSocket upgrade.
  const hooks = new HookDispatcher(registry, (walker, fields, options) => graph.spawn(walker, fields, options), { timeoutMs: config['scale.server'].request_timeout_ms + 1000 });
  const front = new Front({
    graph,
    registry,
    routes,
    auth,
    hooks,
    builtinRoutes,
    openapi: openApiDocument(routes, { title: boot.title, version: boot.version }, builtinRoutes),
    docs: docsEnabled ? new Docs(boot.title) : undefined,
    statics: existsSync(publicDir) ? new StaticFiles(publicDir) : undefined,
    requestTimeoutMs: config['scale.server'].request_timeout_ms + 1000,
    dev: boot.dev,
    accessLog: config['scale.server'].access_log ? (entry) => log.info(entry, 'request') : undefined,
    suppressHealthLogs: config['scale.server'].suppress_health_check_logs,
    onError: (error, requestId) => log.error({ err: error, req_id: requestId }, 'request failed'),
    clientAddresses: new ClientAddresses(config['scale.server'].trusted_proxies, config['scale.server'].trusted_proxy_header as ForwardingHeader),
  });

  const wsConfig = config['scale.websocket'];
  const hub = new WsHub({
    system,
    bus,
    routes: sockets,
    guest: { rootId: Root.SHARED_ID },
    auth: { verify: (token) => auth.authenticate(token) },
    hooks,
    run: async (walker, fields, caller) => (await graph.spawnJson(walker, fields, { caller, timeoutMs: config['scale.server'].request_timeout_ms + 1000 })).json,
    errorOf: (error) => {
      const e = toHttpError(error, boot.dev);
      if (e.status >= 500 && e.body.code !== 'EXECUTION_ERROR') log.error({ err: error }, 'websocket frame failed');
      return { code: e.body.code, message: e.body.message, status: e.status };
    },
    limits: {
      maxFrameBytes: wsConfig.max_frame_bytes,
      maxBufferedBytes: wsConfig.max_buffered_bytes,
      idleTimeoutMs: wsConfig.idle_timeout_seconds * 1000,
      authTimeoutMs: wsConfig.auth_timeout_seconds * 1000,
      pingIntervalMs: wsConfig.ping_interval_seconds * 1000,
    },
    onEvent: config['scale.server'].access_log ? (e) => log.info(e, 'websocket') : undefined,
  });

  const stats = (gc = false): WorkerStats => {
    if (gc) collectGarbage();
    return {
      worker: threadOf(ctx.nodeId),
      websockets: hub.conns.size,
      session_actors: hub.sessionActors,
      actors: system.actorCount,
      heap_used_bytes: process.memoryUsage().heapUsed,
      handles: process.getActiveResourcesInfo().length,
    };
  };
  bus.subscribe(STATS_TOPIC, (msg) => stats((msg as { gc?: boolean }).gc === true));

  let server: HttpServer | undefined;
  const listen = async (): Promise<void> => {
    if (server || !boot.listeners.includes(threadOf(ctx.nodeId))) return;
    const options = {
      host: config['scale.server'].host,
      port: boot.port,
      maxBodyBytes: config['scale.server'].max_body_bytes,
      bodyTimeoutMs: config['scale.server'].body_timeout_ms,
      maxConnections: config['scale.server'].max_connections,
      onError: (error: unknown) => log.error({ err: error }, 'writing an answer failed'),
      onAcceptChange: (paused: boolean, reason: string) =>
        paused ? log.warn({ reason }, 'not accepting connections for now') : log.info({ reason }, 'accepting connections again'),
      onUwsApp: (app: import('uWebSockets.js').TemplatedApp) => attachUws(app, hub),
      onNodeServer: (s: import('node:http').Server) => attachNode(s, hub),
    };
    if (boot.transport === 'uws') {
      const uws = loadUws();
      if (uws instanceof Error) throw new Error(`uWebSockets.js cannot load in this worker: ${uws.message}`);
      server = await listenUws(uws, front, options);
    } else {
      server = await listenNode(front, options);
    }
  };
  if (boot.listenNow) await listen();
  front.markReady();
  // Graph deletions a previous run did not finish (one thread does them, in the background).
  if (threadOf(ctx.nodeId) === 'w1') void identity.finishGraphDrops();

  system.spawn(
    fromReceive(async (msg: HttpControl) => {
      if (msg.t === 'describe') return describe();
      if (msg.t === 'stats') return stats(msg.gc === true);
      if (msg.t === 'listen') return listen();
      front.startDraining();
      server?.stopAccepting();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([server?.whenIdle(), hub.drain(msg.deadlineMs)]), new Promise((resolve) => (timer = setTimeout(resolve, msg.deadlineMs)))]);
      clearTimeout(timer);
      return true;
    }),
    'http',
  );

  return async () => {
    hub.stop();
    server?.close();
    await users.close();
    await store.close();
    log.flush();
  };
}

let gcFn: (() => void) | undefined;
/** A full GC, when the process was started with --expose-gc (leak checks); otherwise nothing. */
function collectGarbage(): void {
  if (process.env.SVC_EXPOSE_GC !== '1' && typeof (globalThis as { gc?: unknown }).gc !== 'function') return;
  if (!gcFn) {
    const own = (globalThis as { gc?: () => void }).gc;
    if (own) gcFn = own;
    else {
      // Workers cannot take --expose-gc as an argument; the flag is set here instead.
      v8.setFlagsFromString('--expose-gc');
      gcFn = runInNewContext('gc') as () => void;
    }
  }
  gcFn();
}
