/**
 * What one thread of `svc start` serves, as runtime modules in their start
 * order: log, bus, metrics, events, store, graph, users, identity, hooks, consumers,
 * fields, http, websocket, server, control. Each module provides services the later ones need; none
 * knows the whole. {@link createRuntime} picks them from the configuration
 * (the store and the users repository by `docdb_uri`, the server by
 * transport).
 *
 * To add a store backend: register it (`registerAnchorStore`,
 * `registerUsersRepository`) — the `store` and `users` modules choose by URI.
 * A transport: a module after `http` that serves the `front` service. A metric
 * or an event consumer: a module that needs what it observes or feeds.
 */
import pino from 'pino';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { ActorBroadcast, type ActorRef, type ActorSystem, type Broadcast, fromReceive, isWorkerNode, MAIN_THREAD, processOf, remoteLeases, RendezvousPlacement, threadOf, workerPlacement } from '../kernel/index.ts';
import { type AnchorStore, Graph, InstrumentedStore, openAnchorStore, STORE_WRITER_ACTOR, type WriterMsg } from '../actors/graph/index.ts';
import { HookDispatcher, Registry, Root, UnknownFields } from '../actors/walker/index.ts';
import { ActorRateLimiter, ApiKeys, Authenticator, createEmailer, IdentityService, immediateUserExists, type ImmediateUserLookup, KnownUsers, JwtVerifier, openUsersRepository, HASHER_ACTOR, Passwords, RemoteHasher, RevocationTable, USERS_WRITER_ACTOR, type UsersRepository, type UsersWriterMsg, type RateLimiter, ActorSsoStates, createSsoProvider, SSO_PLATFORMS, SsoService, type SsoStateStore } from '../actors/identity/index.ts';
import {
  type BuiltinRoute,
  buildRoutes,
  ClientAddresses,
  Docs,
  type EndpointRoute,
  type ForwardingHeader,
  Front,
  type HttpServer,
  identityRoutes,
  apiKeyRoutes,
  ssoRoutes,
  graphRoutes,
  listenNode,
  listenUws,
  loadUws,
  newTraceId,
  openApiDocument,
  Router,
  StaticFiles,
  toHttpError,
  failureStack,
  type ResponseInfo,
} from '../transports/http/index.ts';
import { attachNode, attachUws, WsHub, type WsRoute, wsRoutes } from '../transports/ws/index.ts';
import type { RelayTransport } from '../transports/worker/index.ts';
import { CLUSTER_ACTOR, type ClusterAsk, clusterError, Invalidation, MemberState, type MemberSummary } from '../cluster/index.ts';
import { ActorStreams, MemoryStreams, openRedis, redactUrl, RedisRateLimiter, RedisSsoStates } from '../stores/index.ts';
import { bindData, closeData, type DataBinding } from '../actors/data/index.ts';
import {
  bindEvents,
  Broker,
  type Consumers,
  type Event,
  EVENT_OUTBOX_KIND,
  handling,
  type HandlerContext,
  openStreams,
  type OutboxEvent,
  sharedByteBudget,
  startConsumers,
  type StreamBackend,
  type Subscription,
  subscriptionsOf,
} from '../actors/events/index.ts';
import { bindSv, importsServices, ServiceStarter, SV_ACTOR } from '../transports/sv/index.ts';
import type { SvcConfig } from './config.ts';
import { collectGarbage } from './gc.ts';
import { composeRuntime, type Runtime, type RuntimeModule } from './runtime.ts';
import { adminMetrics, type MetricJson, renderMetrics, THREAD_METRICS_ACTOR, ThreadMetrics, type ThreadSnapshot } from './metrics/index.ts';
import { randomUUID } from 'node:crypto';

/** What the main thread hands each worker thread of `svc start`. */
export interface ServeBoot {
  /** Only build the routes and answer `describe` (for `--faux`). */
  faux: boolean;
  moduleName: string;
  title: string;
  projectRoot: string;
  config: SvcConfig;
  jwtSecret: string;
  /**
   * The HMAC key of webhook signatures, resolved by the start (configured, or
   * `.svc/webhook_secret` in development); absent: `[scale.webhook] secret` as
   * configured. Webhook walkers with verify_signature on refuse to start without one.
   */
  webhookSecret?: string;
  dev: boolean;
  transport: 'uws' | 'node';
  port: number;
  /** Threads that open the port (`w1`…: every worker with uWebSockets.js, the first with node:http). */
  listeners: string[];
  /** Open the port at start (false: wait for a `listen` order — node:http hands the port over on reload). */
  listenNow: boolean;
  storePath: string;
  usersPath: string;
  version: string;
  /**
   * The main thread serves the SQLite writers (`store-writer`, `users-writer`):
   * this thread reads on its own connections and hands writes over.
   */
  processWriters?: boolean;
  /** The main thread keeps activation leases: a root's partition is live on one thread at a time, also while it moves. */
  activationLeases?: boolean;
  /** This thread replaces one that died: it opens the port only when told (once the others count it in). */
  replacement?: boolean;
  /** A member of a cluster (`KV_URL` set). */
  cluster?: ServeCluster;
  /** The shared database's tables exist (the main thread made them): this thread only connects. */
  schemaReady?: boolean;
  /** Events on memory streams: served by the main thread to every worker (else this thread keeps its own). */
  memoryEventsOnMain?: boolean;
  /** The process's byte budget of buffered events (`[scale.events] buffer_bytes`), one counter shared by every thread (else each keeps its own). */
  eventsBuffer?: SharedArrayBuffer;
  /** The main thread answers for its own metrics (password hashing, cluster membership and links, the process): scrapes ask it. */
  mainMetrics?: boolean;
  /** The main thread starts the siblings of `sv` calls for every worker (`/user/sv`); else this thread starts its own. */
  svStarterOnMain?: boolean;
}

/** What a worker thread of a cluster member is told of its cluster. */
export interface ServeCluster {
  name: string;
  /** `KV_URL` (this thread opens its own Redis connections: rate limits, the invalidation channel). */
  kvUrl: string;
  processId: string;
  /** The member's {@link MemberState} (lease validity, readiness), written by the main thread. */
  state: SharedArrayBuffer;
  invalidation: { enabled: boolean; channel: string };
}

/** Orders the main thread gives a worker's `/user/http` actor. */
export type HttpControl =
  | { t: 'drain'; deadlineMs: number }
  | { t: 'describe' }
  | { t: 'listen' }
  /** The app's fingerprint (its classes and their schemas): members of another fingerprint share no partitions. */
  | { t: 'fingerprint' }
  /** This process lost its cluster lease: forget every graph held in memory. */
  | { t: 'forget' }
  /** Read the revocations of the users store again (a member that joined or joined again missed some). */
  | { t: 'revocations' }
  /** These nodes (of this process) are leaving: hand their partitions to the other members. */
  | { t: 'leaving'; nodes: string[]; deadlineMs: number };

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

export interface RouteSummary {
  method: string;
  path: string;
  kind: string;
  name: string;
  access: string;
}

export interface ServeOptions {
  system: ActorSystem;
  boot: ServeBoot;
  /** The app module's exports. */
  app: Record<string, unknown>;
  /** Where log lines go (default: stdout). */
  logDestination?: pino.DestinationStream;
  /** Other processes' nodes (a cluster member's worker thread). */
  relay?: RelayTransport;
}

const STATS_TOPIC = 'runtime.stats';

/** How long a caller waits for a walker run: its deadline (`request_timeout_ms`) and a second for the answer to come back. */
function askTimeoutMs(boot: ServeBoot): number {
  return boot.config['scale.server'].request_timeout_ms + 1000;
}

/** The control actor's name under `/user`: the main thread's orders arrive there. */
export const CONTROL_ACTOR = 'http';

/**
 * The runtime of one serving thread, not started yet.
 *
 * @example
 * const rt = createRuntime({ system, boot, app });
 * await rt.start();          // listening once it resolves
 * await rt.drain(10_000);    // front unready, no new connections, in-flight work finished
 * await rt.close();          // sockets, stores, log
 */
export function createRuntime(options: ServeOptions): Runtime {
  const rt = composeRuntime(serveModules(options));
  rt.provide('runtime', rt);
  return rt;
}

/** The modules of one serving thread, in start order. */
export function serveModules(options: ServeOptions): RuntimeModule[] {
  const { system, boot, app } = options;
  const registry = Registry.fromModule(app, boot.moduleName);
  const routes = buildRoutes(registry);
  const sockets = wsRoutes(registry);
  if (routes.length === 0 && sockets.length === 0) throw new Error(`${boot.moduleName} exports no walker and no function: nothing to serve`);
  const describe = (): RouteSummary[] => [
    ...routes.map((r) => ({ method: r.method, path: r.template, kind: r.webhook ? 'webhook walker' : r.kind, name: r.name, access: r.webhook ? 'api-key' : r.access })),
    ...sockets.map((r) => ({ method: 'WS', path: `/ws/${r.name}`, kind: r.broadcast ? 'websocket walker (broadcast)' : 'websocket walker', name: r.name, access: r.access })),
  ];
  const subscriptions = appSubscriptions(app, boot.config['scale.events'].consumer_group);
  const fingerprint = appFingerprint(registry);
  if (boot.faux) return [{ name: 'control', start: () => void system.spawn(fromReceive((msg: HttpControl) => (msg.t === 'fingerprint' ? fingerprint : describe())), CONTROL_ACTOR) }];
  const thread = threadOf(system.nodeId);
  // A cluster member's lease validity and readiness, written by the main thread (one view per thread).
  const member = boot.cluster ? new MemberState(boot.cluster.state) : undefined;
  const writerOn = (path: string) => (boot.processWriters ? system.refFromAddress({ node: MAIN_THREAD, path: `/user/${path}` }) : undefined);
  return [
    logModule(thread, options.logDestination),
    busModule(system),
    metricsModule(system, boot, thread),
    eventsModule(system, boot, subscriptions, thread),
    storeModule(boot, writerOn(STORE_WRITER_ACTOR) as ActorRef<WriterMsg, unknown> | undefined),
    dataModule(boot, registry),
    svModule(system, boot),
    graphModule(system, boot, registry, fingerprint, options.relay, member),
    ...(boot.cluster ? [invalidationModule(system, boot.cluster)] : []),
    usersModule(boot, writerOn(USERS_WRITER_ACTOR) as ActorRef<UsersWriterMsg, unknown> | undefined),
    identityModule(system, boot, thread, routes),
    hooksModule(boot, registry),
    // Before the front: at a drain, fetching stops first, while requests in hand are answered.
    consumersModule(system, boot, subscriptions, thread),
    fieldsModule(boot),
    httpModule(system, boot, registry, routes, member),
    websocketModule(system, boot, sockets),
    serverModule(boot, thread),
    controlModule(system, describe, fingerprint),
  ];
}

/** The app's classes and their schemas, as one short hash: members whose apps differ share no partitions. */
export function appFingerprint(registry: Registry): string {
  const parts: string[] = [];
  for (const [name, cls] of [...registry.archetypes].sort(([a], [b]) => a.localeCompare(b))) parts.push(`a ${name} ${JSON.stringify((cls as { has?: unknown }).has ?? null)}`);
  for (const [name, cls] of [...registry.walkers].sort(([a], [b]) => a.localeCompare(b))) parts.push(`w ${name} ${JSON.stringify((cls as { has?: unknown }).has ?? null)}`);
  for (const [name, def] of [...registry.functions].sort(([a], [b]) => a.localeCompare(b))) parts.push(`f ${name} ${JSON.stringify((def as { params?: unknown }).params ?? null)}`);
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 16);
}

/**
 * Partitions of a cluster member: on worker threads of members with the same
 * app fingerprint that are not leaving.
 */
function clusterPlacement(system: ActorSystem, fingerprint: string, relay: RelayTransport | undefined): RendezvousPlacement {
  const own = processOf(system.nodeId);
  return new RendezvousPlacement({
    accepts: (node) => {
      if (!isWorkerNode(node)) return false;
      if (processOf(node) === own) return true;
      const remote = relay?.remote(node);
      return remote !== undefined && remote.app === fingerprint && remote.leaving !== true;
    },
  });
}

/**
 * The L1 invalidation channel: a member that takes a root over (or deletes a
 * graph) says so, and every other member drops its activation of that root
 * at once (it would otherwise serve reads from memory another member has
 * since changed).
 */
function invalidationModule(system: ActorSystem, cluster: ServeCluster): RuntimeModule {
  let channel: Invalidation | undefined;
  const connections: { disconnect(): void }[] = [];
  return {
    name: 'invalidation',
    async start(rt) {
      if (!cluster.invalidation.enabled) return;
      const log = rt.need<Log>('log');
      const redis = openRedis(cluster.kvUrl, { name: `svc-${system.nodeId}-l1`, onError: () => undefined });
      const subscriber = openRedis(cluster.kvUrl, { name: `svc-${system.nodeId}-l1-sub`, onError: () => undefined });
      connections.push(redis, subscriber);
      channel = new Invalidation({
        redis,
        subscriber,
        channel: cluster.invalidation.channel,
        processId: cluster.processId,
        onError: (error: unknown) => log.warn({ err: error }, 'L1 invalidation channel'),
      });
      await channel
        .subscribe((event) => {
          const held = system.activation('partition', event.root);
          if (held) void system.stop(held).catch(() => undefined);
        })
        .catch((error: unknown) => log.warn({ err: error }, 'the L1 invalidation channel could not be subscribed; this thread serves on and takes what it missed from the store'));
      rt.provide('invalidation', channel);
    },
    async close() {
      await channel?.close();
      for (const c of connections) c.disconnect();
    },
  };
}

type Log = pino.Logger;

/**
 * A 5xx in the log, in production too: its code and message, where it
 * happened, and the app's frames of the stack that failed (source-mapped).
 */
function logFailure(log: Log, error: unknown, projectRoot: string, where: Record<string, unknown>, message: string): void {
  const { code } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown };
  const stack = failureStack(error, resolve(projectRoot));
  // The type the app's code threw (`TypeError`…), not the runtime's wrapper: the first line of the app's stack names it.
  const thrown = /^([A-Za-z_$][\w$]*)(?::|$)/.exec(String((error as { appStack?: unknown }).appStack ?? ''))?.[1];
  // No prototype: pino's error serializer then takes the type from `name` (it would say "Object").
  const err = Object.assign(Object.create(null) as object, { name: thrown ?? (error instanceof Error ? error.name : typeof error), message: error instanceof Error ? error.message : String(error), stack });
  log.error({ ...where, code, err }, message);
}

function logModule(thread: string, destination?: pino.DestinationStream): RuntimeModule {
  let log: Log | undefined;
  const onRejection = (error: unknown) => log?.error({ err: error }, 'unhandled rejection (an operation that was not awaited?)');
  return {
    name: 'log',
    start(rt) {
      log = rt.provide('log', pino({ base: { worker: thread }, level: 'info' }, destination ?? pino.destination({ fd: 1, sync: false })));
      process.on('unhandledRejection', onRejection);
    },
    close() {
      process.off('unhandledRejection', onRejection);
      log?.flush();
    },
  };
}

/** One message to every worker thread: revocations, WebSocket broadcasts, statistics. */
function busModule(system: ActorSystem): RuntimeModule {
  return {
    name: 'bus',
    start: (rt) => void rt.provide<Broadcast>('bus', new ActorBroadcast(system, { accepts: isWorkerNode })),
  };
}

function storeModule(boot: ServeBoot, processWriter: ActorRef<WriterMsg, unknown> | undefined): RuntimeModule {
  let store: InstrumentedStore | undefined;
  return {
    name: 'store',
    async start(rt) {
      const db = boot.config['scale.database'];
      // Instrumented: commit latency, batch sizes and conflicts for whoever observes (metrics), free while nobody does.
      store = rt.provide(
        'store',
        new InstrumentedStore(
          await openAnchorStore(db.docdb_uri, {
            path: boot.storePath,
            baseDir: boot.projectRoot,
            synchronous: db.synchronous as 'NORMAL' | 'FULL',
            processWriter,
            createSchema: boot.schemaReady !== true,
          }),
        ),
      );
    },
    close: () => store?.close(),
  };
}

/** `store()` and `kvstore()` of app code on this thread: their settings and the graph `findNodes` reads; their connections closed at the end. */
function dataModule(boot: ServeBoot, registry: Registry): RuntimeModule {
  let unbind: (() => void) | undefined;
  return {
    name: 'data',
    start(rt) {
      const db = boot.config['scale.database'];
      unbind = bindData({
        projectRoot: resolve(boot.projectRoot),
        dataDir: boot.storePath ? dirname(boot.storePath) : join(resolve(boot.projectRoot), '.svc', 'data'),
        storage: boot.config.storage as DataBinding['storage'],
        docdbUri: db.docdb_uri,
        kvUrl: db.kv_url,
        graph: { store: rt.need<AnchorStore>('store'), registry },
      });
    },
    async close() {
      unbind?.();
      await closeData();
    },
  };
}

/** Service-to-service calls of this thread: the entry's folder, `[scale.sv]`, and who starts siblings. */
function svModule(system: ActorSystem, boot: ServeBoot): RuntimeModule {
  let unbind: (() => void) | undefined;
  let starter: ServiceStarter | undefined;
  return {
    name: 'sv',
    start() {
      const c = boot.config['scale.sv'];
      const rpcTimeoutsMs = Object.fromEntries(Object.entries(c.rpc_timeouts).map(([module, seconds]) => [module, Number(seconds) * 1000]));
      let ensure: (module: string, baseDir: string) => Promise<string>;
      if (boot.svStarterOnMain) {
        ensure = (module, baseDir) => system.refFromAddress({ node: MAIN_THREAD, path: `/user/${SV_ACTOR}` }).ask({ module, baseDir }, c.start_timeout * 1000 + 10_000) as Promise<string>;
      } else {
        // One thread (testApp): its siblings are its own, stopped with it.
        ensure = (module, baseDir) => {
          starter ??= new ServiceStarter({ dataDir: boot.storePath && boot.storePath !== ':memory:' ? dirname(boot.storePath) : join(resolve(boot.projectRoot), '.svc', 'data'), jwtSecret: boot.jwtSecret, workers: c.workers, startTimeoutMs: c.start_timeout * 1000 });
          return starter.ensure(module, baseDir);
        };
      }
      unbind = bindSv({
        baseDir: resolve(boot.projectRoot),
        settings: {
          rpcTimeoutMs: c.rpc_timeout * 1000,
          rpcTimeoutsMs,
          retries: c.retries,
          retryBackoffMs: c.retry_backoff_ms,
          breakerFailures: c.breaker_failures,
          breakerHalfOpenMs: c.breaker_half_open_seconds * 1000,
          autoStart: c.auto_start,
        },
        ensure,
      });
    },
    async close() {
      unbind?.();
      await starter?.close();
    },
  };
}

function graphModule(system: ActorSystem, boot: ServeBoot, registry: Registry, fingerprint: string, relay: RelayTransport | undefined, member: MemberState | undefined): RuntimeModule {
  const server = boot.config['scale.server'];
  return {
    name: 'graph',
    async start(rt) {
      const log = rt.need<Log>('log');
      const broker = rt.need<Broker>('broker');
      rt.provide(
        'graph',
        await Graph.open({
          system,
          registry,
          store: rt.need<AnchorStore>('store'),
          placement: member ? clusterPlacement(system, fingerprint, relay) : workerPlacement(),
          ...(boot.activationLeases ? { lease: remoteLeases(system, MAIN_THREAD) } : {}),
          // A cluster member: each activation claims its root in the store (a late write of a former owner is refused),
          // and nothing is served once this member's lease may have lapsed.
          // Its batches carry the lease's end: one that waited (a pause) until after it is refused by the store.
          ...(member ? { fenced: true, guard: () => member.guard(), fenceUntil: () => member.validUntil, onClaim: (rootId: string) => void rt.find<Invalidation>('invalidation')?.publish({ t: 'claim', root: rootId }) } : {}),
          // The run deadline is the request timeout: a run the client stopped waiting for is dropped, not committed.
          runTimeoutMs: server.request_timeout_ms,
          timeoutMs: askTimeoutMs(boot),
          onQuarantine: (id, reason) => log.warn({ anchor: id, reason }, 'anchor moved to quarantine'),
          // `this.log` in walkers and functions: lines with the walker, the trace id and the root.
          logger: (bindings) => log.child(bindings),
          // Events published in a run leave once it commits (only with events on: tracking runs costs every promise).
          ...(broker.kind === 'disabled'
            ? {}
            : {
                outbox: (entries) => {
                  for (const e of entries) {
                    if (e.kind !== EVENT_OUTBOX_KIND) continue;
                    const { topic, event } = e.data as OutboxEvent;
                    try {
                      broker.publish(topic, event, e.traceId);
                    } catch (error) {
                      // One event that cannot leave does not hold back the others of the run.
                      log.error({ err: error, topic, trace_id: e.traceId }, 'an event published by a committed run could not be sent');
                    }
                  }
                },
              }),
        }),
      );
    },
  };
}

function usersModule(boot: ServeBoot, processWriter: ActorRef<UsersWriterMsg, unknown> | undefined): RuntimeModule {
  let users: UsersRepository | undefined;
  return {
    name: 'users',
    async start(rt) {
      users = rt.provide(
        'users',
        await openUsersRepository(boot.config['scale.database'].docdb_uri, { path: boot.usersPath, baseDir: boot.projectRoot, processWriter, createSchema: boot.schemaReady !== true }),
      );
    },
    close: () => users?.close(),
  };
}

/** Users, tokens (revoked on every thread at once), rate limits, mail; one authenticator for every transport. */
function identityModule(system: ActorSystem, boot: ServeBoot, thread: string, routes: readonly EndpointRoute[]): RuntimeModule {
  const { config } = boot;
  const closers: (() => void)[] = [];
  return {
    name: 'identity',
    close: () => closers.forEach((close) => close()),
    async start(rt) {
      const log = rt.need<Log>('log');
      const users = rt.need<UsersRepository>('users');
      const graph = rt.need<Graph>('graph');
      const revocations = rt.provide('revocations', new RevocationTable());
      // Every token still alive may be revoked: the longest any lives is max_token_days (svc token can sign that long).
      const longest = Math.max(config['scale.jwt'].max_token_days, config['scale.jwt'].exp_delta_days) * 86_400_000;
      const window = Math.max(longest, config['scale.admin'].session_expiry_hours * 3_600_000);
      revocations.serve(rt.need<Broadcast>('bus'));
      const booted = Date.now();
      for (const [userId, ms] of await users.revocationsSince(booted - window)) revocations.set(userId, ms);
      rt.provide('reloadRevocations', async () => {
        for (const [userId, ms] of await users.revocationsSince(Date.now() - window)) revocations.set(userId, ms);
      });
      if (boot.replacement) {
        // The others publish revocations to this thread only once they count it in: read what they wrote meanwhile.
        const stop = system.watchNodes((event, node) => {
          if (event !== 'up' || node !== system.nodeId) return;
          stop();
          void users.revocationsSince(booted - window).then(
            (marks) => marks.forEach(([userId, ms]) => revocations.set(userId, ms)),
            (error: unknown) => log.error({ err: error }, 'reading revocations failed'),
          );
        });
      }
      const mail = await createEmailer({ ...config['scale.emailer'], smtp: config['scale.emailer.smtp'] }, boot.projectRoot);
      if ('disabled' in mail && config['scale.emailer'].provider) log.error({ reason: mail.disabled }, 'email disabled');
      // A shared database answers "does this user exist" asynchronously: the transports learn it before verifying.
      // A provider of `sv` calls whose users live in its consumer (an auto-started sibling) takes any token its secret signed.
      const anyUser = config['scale.jwt'].accept_unknown_users;
      const known = anyUser || typeof (users as Partial<ImmediateUserLookup>).existsNow === 'function' ? undefined : new KnownUsers((userId) => users.exists(userId));
      const jwt = new JwtVerifier({
        secret: boot.jwtSecret,
        algorithm: config['scale.jwt'].algorithm as 'HS256',
        revocations,
        maxTokenDays: config['scale.jwt'].max_token_days,
        maxAdminHours: config['scale.admin'].session_expiry_hours,
        // A token of a user that never existed runs nothing (asked once per token; deletions are revocations).
        userExists: anyUser ? () => true : known ? (userId) => known.now(userId) : immediateUserExists(users),
      });
      rt.provide('auth', new Authenticator(jwt, known));
      // Password hashing runs on the main thread's pool (in one thread: this system serves the hasher itself).
      const passwords = new Passwords(new RemoteHasher(system, system.lookup(HASHER_ACTOR) ? system.nodeId : MAIN_THREAD));
      passwords.warm();
      const identity = rt.provide(
        'identity',
        new IdentityService({
          users,
          passwords,
          system,
          revocations,
          limiter: rateLimiter(system, boot, closers),
          createRoot: (rootId) => graph.ensureRoot(rootId),
          dropRoot: async (rootId) => {
            const dropped = await graph.dropRoot(rootId);
            // Other members drop what they hold of that graph.
            void rt.find<Invalidation>('invalidation')?.publish({ t: 'delete', root: rootId });
            return dropped;
          },
          emailer: 'emailer' in mail ? mail.emailer : undefined,
          emailDisabledReason: 'disabled' in mail ? mail.disabled : '',
          jwt: { secret: boot.jwtSecret, algorithm: config['scale.jwt'].algorithm, expDays: config['scale.jwt'].exp_delta_days },
          auth: config['scale.auth'],
          adminSessionHours: config['scale.admin'].session_expiry_hours,
          log: (level, message, extra) => log[level](extra ?? {}, message),
        }),
      );
      // API keys (webhooks): checked from memory, revoked on every thread and member before the answer.
      const webhookWalkers = new Set(routes.filter((r) => r.webhook).map((r) => r.name));
      rt.provide(
        'apiKeys',
        new ApiKeys({ users, revocations, bus: rt.need<Broadcast>('bus'), expiryDays: config['scale.webhook'].api_key_expiry_days, maxPerUser: config['scale.webhook'].max_api_keys_per_user, webhookWalkers }),
      );
      // Single sign-on: a sign-in started on one thread (or member) finishes on any other.
      rt.provide(
        'sso',
        new SsoService({
          users,
          states: ssoStates(system, boot, closers),
          providers: SSO_PLATFORMS.map((platform) => createSsoProvider(platform, config[`scale.sso.${platform}`])),
          settings: config['scale.sso'],
          token: (user) => identity.token(user),
          // Taking over an account linked by an email it never verified: its tokens die on every thread and member at once.
          revokeTokens: (userId, patch) => identity.revokeTokens(userId, patch),
          createRoot: (rootId) => graph.ensureRoot(rootId),
          log: (level, message, extra) => log[level](extra ?? {}, message),
        }),
      );
      // Graph deletions a previous run did not finish (one thread does them, in the background).
      if (thread === 'w1' || thread === 'local') identity.finishGraphDrops().catch((error: unknown) => log.error({ err: error }, 'reading the graphs of deleted users to delete failed; retried at the next start'));
    },
  };
}

/** Rate limits of one process (counters in a few actors), or of the whole cluster (Redis; the process's own while Redis is unreachable). */
function rateLimiter(system: ActorSystem, boot: ServeBoot, closers: (() => void)[]): RateLimiter {
  const { config } = boot;
  const local = new ActorRateLimiter(system, {
    placement: workerPlacement(),
    maxKeys: config['scale.auth'].rate_limit_max_keys,
    windowMs: config['scale.auth'].rate_window_seconds * 1000,
    salt: boot.jwtSecret,
  });
  if (!boot.cluster) return local;
  const redis = openRedis(boot.cluster.kvUrl, { name: `svc-${system.nodeId}-rl`, onError: () => undefined });
  closers.push(() => redis.disconnect());
  return new RedisRateLimiter({
    redis,
    cluster: boot.cluster.name,
    salt: boot.jwtSecret,
    fallback: local,
  });
}

/** Pending SSO sign-ins: the cluster's in Redis (KV_URL), else the process's (virtual actors on the worker threads). */
function ssoStates(system: ActorSystem, boot: ServeBoot, closers: (() => void)[]): SsoStateStore {
  const kvUrl = boot.config['scale.database'].kv_url;
  if (!kvUrl) return new ActorSsoStates(system, { placement: workerPlacement(), ttlMs: boot.config['scale.sso'].state_ttl_seconds * 1000 });
  const redis = openRedis(kvUrl, { name: `svc-${system.nodeId}-sso`, onError: () => undefined });
  closers.push(() => redis.disconnect());
  return new RedisSsoStates(redis, { prefix: `svc:{${boot.cluster?.name ?? 'svc'}}:sso:` });
}

/** Hook walkers: before every generated route and every WebSocket upgrade, whatever the transport. */
function hooksModule(boot: ServeBoot, registry: Registry): RuntimeModule {
  return {
    name: 'hooks',
    start(rt) {
      const graph = rt.need<Graph>('graph');
      rt.provide('hooks', new HookDispatcher(registry, (walker, fields, options) => graph.spawn(walker, fields, options), { timeoutMs: askTimeoutMs(boot) }));
    },
  };
}

/** Fields a client sends that the endpoint does not declare: refused, or (`strict_fields = false`) warned about once per walker and field — HTTP and WebSocket alike. */
function fieldsModule(boot: ServeBoot): RuntimeModule {
  return {
    name: 'fields',
    start(rt) {
      const log = rt.need<Log>('log');
      rt.provide('unknownFields', new UnknownFields({ strict: boot.config['scale.server'].strict_fields, warn: (message, extra) => log.warn(extra, message) }));
    },
  };
}

function httpModule(system: ActorSystem, boot: ServeBoot, registry: Registry, routes: EndpointRoute[], member: MemberState | undefined): RuntimeModule {
  const { config } = boot;
  let front: Front | undefined;
  return {
    name: 'http',
    start(rt) {
      const log = rt.need<Log>('log');
      const bus = rt.need<Broadcast>('bus');
      const auth = rt.need<Authenticator>('auth');
      const sso = rt.need<SsoService>('sso');
      const builtinRoutes: BuiltinRoute[] = [
        ...identityRoutes(rt.need<IdentityService>('identity'), auth),
        ...apiKeyRoutes(rt.need<ApiKeys>('apiKeys')),
        ...ssoRoutes(sso),
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
        ...(boot.cluster ? [clusterRoute(system, bus, boot.cluster)] : []),
        eventsRoute(system, bus, rt.need<Broker>('broker'), rt.need('subscriptions')),
        ...metricsRoutes(boot, rt.find<Scrape>('scrape')),
        ...(config['scale.graph'].enabled ? graphRoutes({ graph: rt.need<Graph>('graph'), auth, timeoutMs: askTimeoutMs(boot), publicGraph: config['scale.graph'].public }) : []),
      ];
      refuseShadowedRoutes(routes, builtinRoutes, new Set([config['scale.metrics'].endpoint, '/graph', '/graph/data', '/traverse']));
      const publicDir = join(boot.projectRoot, 'public');
      front = rt.provide(
        'front',
        new Front({
          graph: rt.need<Graph>('graph'),
          registry,
          routes,
          auth,
          hooks: rt.need<HookDispatcher>('hooks'),
          unknownFields: rt.need<UnknownFields>('unknownFields'),
          builtinRoutes,
          openapi: openApiDocument(routes, { title: boot.title, version: boot.version }, builtinRoutes, { webhook: openApiWebhook(config), websockets: wsRoutes(registry) }),
          docs: config['scale.server'].docs_enabled ? new Docs(boot.title) : undefined,
          statics: existsSync(publicDir) ? new StaticFiles(publicDir) : undefined,
          requestTimeoutMs: askTimeoutMs(boot),
          dev: boot.dev,
          accessLog: config['scale.server'].access_log ? (entry) => log.info(entry, 'request') : undefined,
          suppressHealthLogs: config['scale.server'].suppress_health_check_logs,
          ...metricsHooks(rt.find<ThreadMetrics>('metrics'), config['scale.metrics'].endpoint),
          projectRoot: resolve(boot.projectRoot),
          onError: (error, requestId, route, traceId, endpoint) => {
            const { code } = error as { code?: unknown };
            // An outage answers requests 503 while it lasts (the member says so when it starts and ends): counted, and a
            // warning without the stack when they start — not an error with a stack for each.
            if (typeof code === 'string' && OUTAGE_CODES.has(code)) {
              rt.find<ThreadMetrics>('metrics')?.refused(code);
              if (code === 'SVC_ERR_STORE_UNAVAILABLE') storeWarnings.note(log, requestId);
              else outageWarnings.note(log, code, error, requestId, route);
            } else logFailure(log, error, boot.projectRoot, { req_id: requestId, trace_id: traceId, route, ...(endpoint ? { [endpoint.kind]: endpoint.name } : {}) }, 'request failed');
          },
          clientAddresses: new ClientAddresses(config['scale.server'].trusted_proxies, config['scale.server'].trusted_proxy_header as ForwardingHeader),
          readiness: () => member?.readiness() ?? storeReadiness(rt.need<AnchorStore>('store'), rt.need<UsersRepository>('users')),
          // Sign-in routes read the Host (the redirect URI in development) and the browser binding cookie: copied only when a provider can be used.
          ...(sso.providers().some((p) => p.enabled) ? { extraHeaders: ['host', 'cookie'] } : {}),
          forwardAuthorization: importsServices,
          ...(routes.some((r) => r.webhook) ? { webhook: { ...openApiWebhook(config), apiKeys: rt.need<ApiKeys>('apiKeys'), secret: boot.webhookSecret ?? config['scale.webhook'].secret } } : {}),
        }),
      );
    },
    // Readiness turns false first: load balancers stop sending while the rest drains.
    drain: () => front?.startDraining(),
  };
}

/** `[scale.webhook]` as the front and the OpenAPI document read it (the secret apart). */
function openApiWebhook(config: SvcConfig): { signatureHeader: string; timestampHeader: string; verifySignature: boolean; requireTimestamp: boolean; toleranceSeconds: number } {
  const w = config['scale.webhook'];
  return { signatureHeader: w.signature_header, timestampHeader: w.timestamp_header, verifySignature: w.verify_signature, requireTimestamp: w.require_timestamp, toleranceSeconds: w.timestamp_tolerance_seconds };
}

/**
 * The runtime's newer routes (the metrics endpoint, the graph's) answer
 * before the app's: one the app also serves would be taken from it without a
 * word, so the start is refused instead.
 */
function refuseShadowedRoutes(routes: EndpointRoute[], builtins: BuiltinRoute[], paths: ReadonlySet<string>): void {
  const router = new Router(routes);
  for (const b of builtins) {
    if (!paths.has(b.path)) continue;
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      const hit = router.match(method, b.path);
      if (hit && 'route' in hit) {
        throw new Error(
          `${method} ${b.path} is a route of the app (${hit.route.kind} ${hit.route.name}) and of svc (${b.doc?.summary?.split(' (')[0] ?? b.path}): ` +
            (b.path === '/graph' || b.path === '/graph/data' || b.path === '/traverse'
              ? 'give the app\'s another path, or turn the graph routes off ([scale.graph] enabled = false, SVC_GRAPH_ENABLED=false)'
              : 'give the app\'s another path, or move the metrics endpoint ([scale.metrics] endpoint, SVC_METRICS_ENDPOINT)'),
        );
      }
    }
  }
}

/** The front's share of the metrics: each answer recorded by route template; the metrics endpoints (scrape and admin) left out of their own figures. */
function metricsHooks(metrics: ThreadMetrics | undefined, endpoint: string): { onResponse?: (info: ResponseInfo) => void; untrackedPaths?: ReadonlySet<string> } {
  if (!metrics) return {};
  const http = metrics.http;
  return { onResponse: (info) => http.record(info.method, info.route, info.status, info.durationMs / 1000), untrackedPaths: new Set([endpoint, '/admin/metrics']) };
}

/** What every thread of this process measured (the main thread's too), as prom-client metric JSON. */
type Scrape = () => Promise<MetricJson[][]>;

const METRICS_TOPIC = 'runtime.metrics';
/** The main thread's metrics actor (start.ts serves it when `mainMetrics`). */
export const MAIN_METRICS_ACTOR = 'metrics';

/**
 * Metrics of this thread ({@link ThreadMetrics}: the front's answers, runs,
 * the runtime's observers), and the scrape: every worker thread of this
 * process, and its main thread, asked at once. Off (the default): nothing is
 * recorded and no observer is subscribed.
 */
function metricsModule(system: ActorSystem, boot: ServeBoot, thread: string): RuntimeModule {
  const settings = boot.config['scale.metrics'];
  let metrics: ThreadMetrics | undefined;
  return {
    name: 'metrics',
    start(rt) {
      if (!settings.enabled) return;
      const first = boot.listeners[0] ?? thread;
      metrics = rt.provide(
        'metrics',
        new ThreadMetrics(
          { namespace: settings.namespace, buckets: settings.histogram_buckets, walkerMetrics: settings.walker_metrics },
          {
            thread,
            inFlight: () => rt.find<Front>('front')?.inFlight,
            actors: () => system.actorCount,
            mailboxes: () => system.mailboxHighWater(),
            partitions: () => system.activationCount('partition'),
            websockets: () => {
              const hub = rt.find<WsHub>('hub');
              return hub && { connections: hub.conns.size, broadcasts: hub.broadcasts, sessions: hub.sessionActors };
            },
            broker: () => rt.find<Broker>('broker'),
            // The streams' lag is the same whichever thread asks: one thread reports it.
            ...(thread === first
              ? {
                  lag: async () => {
                    const broker = rt.find<Broker>('broker');
                    if (!broker || broker.kind === 'disabled') return [];
                    return (await broker.topics()).flatMap((t) => t.groups.map((g) => ({ topic: t.topic, group: g.name, lag: g.lag, pending: g.pending })));
                  },
                }
              : {}),
          },
        ),
      );
      const local = metrics;
      // Which start of this thread measured: the main thread keeps a replaced thread's counts in the totals.
      const incarnation = randomUUID();
      system.spawn(fromReceive(async () => ({ incarnation, metrics: await local.snapshot() }) satisfies ThreadSnapshot), THREAD_METRICS_ACTOR);
      if (boot.mainMetrics) {
        // `svc start`: the main thread asks every worker thread (and keeps the last answers).
        const main = system.refFromAddress({ node: MAIN_THREAD, path: `/user/${MAIN_METRICS_ACTOR}` });
        rt.provide<Scrape>('scrape', async () => (await main.ask({ t: 'scrape' }, 10_000)) as MetricJson[][]);
      } else {
        // In process (svc/testing): the threads of this actor system, asked at once.
        const own = processOf(system.nodeId);
        const bus = new ActorBroadcast(system, { name: 'metrics-bus', accepts: (node) => isWorkerNode(node) && processOf(node) === own });
        bus.subscribe(METRICS_TOPIC, () => local.snapshot());
        rt.provide<Scrape>('scrape', () => bus.gather<MetricJson[]>(METRICS_TOPIC, {}, 5000));
      }
    },
    close: () => metrics?.close(),
  };
}

/** `GET <endpoint>` (Prometheus text, admin token, 403 otherwise) when metrics are on, and `GET /admin/metrics` always. */
function metricsRoutes(boot: ServeBoot, scrape: Scrape | undefined): BuiltinRoute[] {
  const settings = boot.config['scale.metrics'];
  const admin: BuiltinRoute = {
    method: 'GET',
    path: '/admin/metrics',
    auth: 'admin',
    doc: { summary: 'Metrics as JSON: data.metrics (name, type, help, values [{labels, value}]) and data.summary (total_requests, avg_latency_ms, error_rate_percent, active_requests); data.enabled false when [scale.metrics] is off' },
    handler: async () => {
      if (!scrape) {
        return { data: { enabled: false, metrics: [], summary: { total_requests: 0, avg_latency_ms: 0, error_rate_percent: 0, server_error_rate_percent: 0, active_requests: 0 } } };
      }
      return { data: { enabled: true, ...(await adminMetrics(await scrape(), settings.namespace)) } };
    },
  };
  if (!scrape) return [admin];
  return [
    admin,
    {
      method: 'GET',
      path: settings.endpoint,
      auth: 'admin',
      authFailure: 'forbidden',
      doc: { summary: 'Prometheus metrics of this process (every thread), for a scraper; needs an admin bearer token (403 otherwise)', produces: 'text/plain', tag: 'metrics' },
      handler: async () => {
        const { text, contentType } = await renderMetrics(await scrape());
        return { raw: { status: 200, headers: { 'content-type': contentType, 'cache-control': 'no-store' }, body: text } };
      },
    },
  ];
}

/**
 * The 503s of an outage, expected while it lasts and answered with
 * `Retry-After`: this member is not serving (it joins again, its lease
 * lapsed, Redis is unreachable), the member that held a graph went down, a
 * graph's lease or ownership moved, the database is unreachable. The member
 * logs the state change itself; these are counted, not logged per request.
 */
const OUTAGE_CODES = new Set(['SVC_ERR_NOT_MEMBER', 'SVC_ERR_NODE_DOWN', 'SVC_ERR_REDIS_UNREACHABLE', 'SVC_ERR_LEASE_TIMEOUT', 'SVC_ERR_FENCED', 'SVC_ERR_STORE_UNAVAILABLE']);

/** How long a code of {@link OUTAGE_CODES} must not be seen before its next refusal is said again. */
const OUTAGE_QUIET_MS = 10_000;

/** One warning (no stack) when refusals of a code start — after {@link OUTAGE_QUIET_MS} without one — and silence while they go on. */
const outageWarnings = {
  last: new Map<string, number>(),
  note(log: Log, code: string, error: unknown, requestId: string, route: string): void {
    const now = Date.now();
    const last = this.last.get(code);
    this.last.set(code, now);
    if (last !== undefined && now - last < OUTAGE_QUIET_MS) return;
    const why = error instanceof Error ? error.message : String(error);
    log.warn({ code, req_id: requestId, route }, `requests answered 503 ${code} (${why}); while this lasts they are counted (requests_refused_total), not logged`);
  },
};

/** Warnings of an unreachable database: one line a second at most, with how many requests it refused meanwhile. */
const storeWarnings = {
  last: 0,
  refused: 0,
  note(log: Log, requestId: string): void {
    this.refused++;
    const now = Date.now();
    if (now - this.last < 1_000) return;
    log.warn({ req_id: requestId, refused: this.refused }, 'the database cannot be reached: requests answer 503 STORE_UNAVAILABLE');
    this.last = now;
    this.refused = 0;
  },
};

/** Why the shared database makes this thread unready (it cannot be reached), or undefined. */
function storeReadiness(store: AnchorStore, users: UsersRepository): string | undefined {
  const healthy = (x: unknown) => (x as { healthy?: boolean }).healthy !== false;
  return healthy(store) && healthy(users) ? undefined : 'the database cannot be reached';
}

const PARTITIONS_TOPIC = 'cluster.partitions';

/** `GET /admin/cluster`: the members, and the partitions each holds now. */
function clusterRoute(system: ActorSystem, bus: Broadcast, cluster: ServeCluster): BuiltinRoute {
  bus.subscribe(PARTITIONS_TOPIC, () => ({ node: system.nodeId, partitions: system.activationCount('partition') }));
  return {
    method: 'GET',
    path: '/admin/cluster',
    auth: 'admin',
    doc: { summary: 'The cluster: each member with its address, workers, uptime, partitions held and last heartbeat' },
    handler: async () => {
      const [members, counts] = await Promise.all([
        system.refFromAddress({ node: MAIN_THREAD, path: `/user/${CLUSTER_ACTOR}` }).ask({ t: 'members' } satisfies ClusterAsk, 5000) as Promise<MemberSummary[]>,
        bus.gather<{ node: string; partitions: number }>(PARTITIONS_TOPIC, {}, 2000),
      ]);
      const held = new Map<string, number>();
      for (const c of counts) held.set(processOf(c.node), (held.get(processOf(c.node)) ?? 0) + c.partitions);
      return {
        data: {
          name: cluster.name,
          self: cluster.processId,
          members: members.map((m) => ({ ...m, partitions: held.get(m.process) ?? 0 })),
        },
      };
    },
  };
}

function websocketModule(system: ActorSystem, boot: ServeBoot, sockets: WsRoute[]): RuntimeModule {
  const { config } = boot;
  let hub: WsHub | undefined;
  return {
    name: 'websocket',
    start(rt) {
      const log = rt.need<Log>('log');
      const graph = rt.need<Graph>('graph');
      const auth = rt.need<Authenticator>('auth');
      const ws = config['scale.websocket'];
      hub = rt.provide(
        'hub',
        new WsHub({
          system,
          bus: rt.need<Broadcast>('bus'),
          routes: sockets,
          guest: { rootId: Root.SHARED_ID },
          auth: { verify: (token) => auth.authenticate(token), prepare: (token) => auth.prepare(token), asynchronous: auth.learnsUsers },
          hooks: rt.need<HookDispatcher>('hooks'),
          unknownFields: rt.need<UnknownFields>('unknownFields'),
          // Each frame is a request of its own: a trace id of its own.
          run: async (walker, fields, caller, token) =>
            (await graph.spawnJson(walker, fields, { caller, timeoutMs: askTimeoutMs(boot), traceId: newTraceId(), ...(token !== undefined && importsServices() ? { authorization: `Bearer ${token}` } : {}) })).json,
          errorOf: (error) => {
            const e = toHttpError(error, boot.dev, resolve(boot.projectRoot));
            if (e.status >= 500) logFailure(log, error, boot.projectRoot, {}, 'websocket frame failed');
            return { code: e.body.code, message: e.body.message, status: e.status };
          },
          limits: {
            maxFrameBytes: ws.max_frame_bytes,
            maxBufferedBytes: ws.max_buffered_bytes,
            idleTimeoutMs: ws.idle_timeout_seconds * 1000,
            authTimeoutMs: ws.auth_timeout_seconds * 1000,
            pingIntervalMs: ws.ping_interval_seconds * 1000,
          },
          onEvent: config['scale.server'].access_log ? (e) => log.info(e, 'websocket') : undefined,
        }),
      );
    },
    close: () => hub?.stop(),
  };
}

/** The listening socket (uWebSockets.js or node:http) with the WebSocket hub on it. */
function serverModule(boot: ServeBoot, thread: string): RuntimeModule {
  const { config } = boot;
  let server: HttpServer | undefined;
  let hub: WsHub | undefined;
  return {
    name: 'server',
    async start(rt) {
      const log = rt.need<Log>('log');
      const front = rt.need<Front>('front');
      hub = rt.need<WsHub>('hub');
      const wsHub = hub;
      const listen = async (): Promise<void> => {
        if (server || !boot.listeners.includes(thread)) return;
        const options = {
          host: config['scale.server'].host,
          port: boot.port,
          maxBodyBytes: config['scale.server'].max_body_bytes,
          bodyTimeoutMs: config['scale.server'].body_timeout_ms,
          maxConnections: config['scale.server'].max_connections,
          onError: (error: unknown) => log.error({ err: error }, 'writing an answer failed'),
          onAcceptChange: (paused: boolean, reason: string) =>
            paused ? log.warn({ reason }, 'not accepting connections for now') : log.info({ reason }, 'accepting connections again'),
          onUwsApp: (app: import('uWebSockets.js').TemplatedApp) => attachUws(app, wsHub),
          onNodeServer: (s: import('node:http').Server) => attachNode(s, wsHub),
        };
        if (boot.transport === 'uws') {
          const uws = loadUws();
          if (uws instanceof Error) throw new Error(`uWebSockets.js cannot load in this worker: ${uws.message}`);
          server = await listenUws(uws, front, options);
        } else {
          server = await listenNode(front, options);
        }
      };
      rt.provide('listen', listen);
      if (boot.listenNow && !boot.replacement) await listen();
      front.markReady();
    },
    // No new connections; requests and WebSocket frames in hand are answered within the deadline.
    async drain(deadlineMs) {
      server?.stopAccepting();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([server?.whenIdle(), hub?.drain(deadlineMs)]), new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs)))]);
      clearTimeout(timer);
    },
    close: () => server?.close(),
  };
}

/** The main thread's orders (`/user/http`): describe, listen, drain; and this thread's statistics for `/admin/stats`. */
function controlModule(system: ActorSystem, describe: () => RouteSummary[], fingerprint: string): RuntimeModule {
  return {
    name: 'control',
    start(rt) {
      const hub = rt.need<WsHub>('hub');
      const listen = rt.need<() => Promise<void>>('listen');
      const runtime = rt.need<Runtime>('runtime');
      const stats = (gc = false): WorkerStats => {
        if (gc) collectGarbage();
        return {
          worker: threadOf(system.nodeId),
          websockets: hub.conns.size,
          session_actors: hub.sessionActors,
          actors: system.actorCount,
          heap_used_bytes: process.memoryUsage().heapUsed,
          handles: process.getActiveResourcesInfo().length,
        };
      };
      rt.need<Broadcast>('bus').subscribe(STATS_TOPIC, (msg) => stats((msg as { gc?: boolean }).gc === true));
      system.spawn(
        fromReceive(async (msg: HttpControl) => {
          if (msg.t === 'describe') return describe();
          if (msg.t === 'fingerprint') return fingerprint;
          if (msg.t === 'listen') return listen();
          if (msg.t === 'forget') {
            // At once: what its partitions had (queued, waiting for a lease, in a run) fails, and nothing of it is stored.
            const lost = clusterError('SVC_ERR_NOT_MEMBER', 'this member lost its cluster lease before the request was run (it was paused or cut off); nothing was stored — retry');
            return rt.need<Graph>('graph').dropActivations(lost).then(() => true);
          }
          if (msg.t === 'revocations') return rt.need<() => Promise<void>>('reloadRevocations')().then(() => true);
          if (msg.t === 'leaving') {
            for (const node of msg.nodes) system.nodeLeaving(node);
            // Each partition here finishes what it has queued, then stops (its lease goes to the new owner).
            const until = Date.now() + msg.deadlineMs;
            while (system.activationCount('partition') > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
            return true;
          }
          await runtime.drain(msg.deadlineMs);
          return true;
        }),
        CONTROL_ACTOR,
      );
    },
  };
}

/** An exported subscription, its group resolved. */
interface AppSubscription {
  name: string;
  sub: Subscription;
  topic: string;
  group: string;
  startFrom: string;
}

/**
 * The app's subscriptions with their groups. Two of one topic in one
 * consumer group would split its events between them (each entry goes to one
 * consumer of a group): refused at load, with the fix.
 */
function appSubscriptions(app: Record<string, unknown>, defaultGroup: string): AppSubscription[] {
  const seen = new Map<string, string>();
  return subscriptionsOf(app).map(([name, sub]) => {
    const group = sub.options.group ?? defaultGroup;
    const key = `${sub.topic}\u0000${group}`;
    const other = seen.get(key);
    if (other !== undefined) {
      throw new Error(`${other} and ${name} both subscribe to '${sub.topic}' in consumer group '${group}': each would get only some of its events. Give one of them its own group (subscribe('${sub.topic}', handler, { group: '…' })).`);
    }
    seen.set(key, name);
    return { name, sub, topic: sub.topic, group, startFrom: sub.options.startFrom ?? 'latest' };
  });
}

/** The thread that runs a process's event consumers (and makes their groups): the first worker, or the only thread. */
function consumesEvents(thread: string): boolean {
  return thread === 'w1' || thread === 'local';
}

/** This process's consumer name: host name, data folder, worker thread — the same after a restart on the same host and folder. */
export function consumerName(boot: ServeBoot, thread: string): string {
  const configured = boot.config['scale.events'].consumer_name;
  if (configured) return configured;
  const folder = createHash('sha256').update(resolve(boot.projectRoot, dirname(boot.storePath || join('.svc', 'data', 'x')))).digest('hex').slice(0, 12);
  // Members of a cluster may share a host and a folder: their port tells them apart (and stays across a restart on it).
  return boot.cluster ? `${hostname()}/${folder}/${boot.port}/${thread}` : `${hostname()}/${folder}/${thread}`;
}

const EVENTS_TOPIC = 'events.counters';

/**
 * The event broker of this thread (`publish`, pull), bound for app code, and
 * the consumer groups of the app's subscriptions made before anything serves:
 * an event published once the server answers is never skipped.
 */
function eventsModule(system: ActorSystem, boot: ServeBoot, subscriptions: AppSubscription[], thread: string): RuntimeModule {
  const events = boot.config['scale.events'];
  const retry = boot.config['scale.events.retry'];
  let broker: Broker | undefined;
  return {
    name: 'events',
    async start(rt) {
      const log = rt.need<Log>('log');
      const url = events.url || boot.config['scale.database'].kv_url;
      let streams: StreamBackend | undefined;
      if (events.enabled) {
        if (url) streams = openStreams(url, { name: `svc-${system.nodeId}-events`, onError: () => undefined });
        else if (boot.memoryEventsOnMain) streams = new ActorStreams(system, MAIN_THREAD);
        else streams = new MemoryStreams();
      }
      broker = rt.provide(
        'broker',
        new Broker({
          streams,
          group: events.consumer_group,
          prefix: events.stream_prefix,
          maxLen: events.max_len,
          maxStreamBytes: events.max_stream_bytes,
          maxEventBytes: events.max_event_bytes,
          visibilityMs: events.visibility_timeout_seconds * 1000,
          retry: { maxAttempts: retry.max_attempts, backoffSeconds: retry.backoff_seconds, deadLetterSuffix: retry.dead_letter_suffix },
          consumerName: consumerName(boot, thread),
          source: `/svc/${encodeURIComponent(boot.title)}`,
          bufferLimit: events.buffer_size,
          bufferBytes: events.buffer_bytes,
          ...(boot.eventsBuffer ? { bufferBudget: sharedByteBudget(events.buffer_bytes, boot.eventsBuffer, Number(/\d+/.exec(thread)?.[0] ?? 0)) } : {}),
          log: (level, message, extra) => log[level]({ events: broker?.kind, ...extra }, message),
        }),
      );
      const b = broker;
      rt.need<Broadcast>('bus').subscribe(EVENTS_TOPIC, () => ({ node: system.nodeId, counters: b.counters }));
      rt.provide('subscriptions', subscriptions.map(({ name, topic, group }) => ({ name, topic, group })));
      if (!events.enabled) {
        if (subscriptions.length > 0 && consumesEvents(thread)) log.warn({ subscriptions: subscriptions.length }, 'event streaming is off ([scale.events] enabled = false): subscriptions receive nothing and publish does nothing');
        return;
      }
      // Every subscription's group exists before the server answers: made by every thread (each may open the port first).
      for (const { topic, group, startFrom } of subscriptions) await broker.ensureGroup(topic, group, startFrom);
      if (!consumesEvents(thread)) return;
      log.info(
        { broker: broker.kind, ...(url ? { url: redactUrl(url) } : {}), subscriptions: subscriptions.length, consumer: broker.consumerName, group: events.consumer_group },
        `event streaming on: ${broker.kind} broker, ${subscriptions.length} subscription${subscriptions.length === 1 ? '' : 's'}`,
      );
    },
    async close() {
      await broker?.close();
    },
  };
}

/** Runs walkers for app code outside requests (`spawn`), and the consumers of the app's subscriptions (on one thread). */
function consumersModule(system: ActorSystem, boot: ServeBoot, subscriptions: AppSubscription[], thread: string): RuntimeModule {
  const events = boot.config['scale.events'];
  let consumers: Consumers | undefined;
  let unbind: (() => void) | undefined;
  let draining: Promise<unknown> | undefined;
  let log: Log | undefined;
  return {
    name: 'consumers',
    start(rt) {
      log = rt.need<Log>('log');
      const logger = log;
      const broker = rt.need<Broker>('broker');
      const graph = rt.need<Graph>('graph');
      const spawnAs: Parameters<typeof bindEvents>[0]['spawn'] = (walker, fields, options) =>
        graph.spawn(walker, fields, {
          caller: { rootId: options.root ?? Root.SHARED_ID },
          ...(options.at !== undefined ? { at: options.at } : {}),
          traceId: options.traceId ?? newTraceId(),
          timeoutMs: askTimeoutMs(boot),
        });
      const broadcastAs: Parameters<typeof bindEvents>[0]['broadcast'] = async (walker, fields, options) => {
        const hub = rt.find<WsHub>('hub');
        if (!hub) throw new Error(`broadcast('${walker}'): no WebSocket hub runs in this thread`);
        return JSON.parse(await hub.broadcast(walker, fields, { rootId: options.root ?? Root.SHARED_ID })) as unknown;
      };
      unbind = bindEvents({ broker, spawn: spawnAs, broadcast: broadcastAs });
      if (broker.kind === 'disabled' || !consumesEvents(thread)) return;
      const specs = subscriptions.map(({ name, sub, group, startFrom }) => {
        return {
          name,
          spec: {
            topic: sub.topic,
            group,
            startFrom,
            concurrency: sub.options.concurrency ?? events.concurrency,
            retry: { ...broker.retry, ...sub.options.retry },
            handle: (event: Event) => {
              const traceId = event.traceId || newTraceId();
              const ctx: HandlerContext = {
                topic: sub.topic,
                group,
                attempt: event.attempt,
                spawn: (walker, fields = {}, options = {}) => spawnAs(walker, fields, { ...options, traceId }),
                broadcast: (walker, fields = {}, options = {}) => broadcastAs(walker, fields, { ...options, traceId }),
                publish: (topic, next) => broker.publish(topic, next, traceId),
                log: logger.child({ subscription: name, topic: sub.topic, event_id: event.id, trace_id: traceId }),
              };
              return handling.run({ traceId }, async () => sub.handler(event, ctx));
            },
          },
        };
      });
      if (specs.length > 0) consumers = startConsumers(system, broker, specs);
    },
    // SIGTERM: fetching stops at once; what was fetched is handled and acknowledged within 10 s at most, while the
    // front drains (the drain is awaited at close).
    drain(deadlineMs) {
      draining ??= consumers?.drain(Math.min(deadlineMs, 10_000)).catch((error: unknown) => log?.warn({ err: error }, 'the event consumers did not drain'));
    },
    async close() {
      await (draining ?? consumers?.drain(0).catch(() => undefined));
      unbind?.();
    },
  };
}

/** `GET /admin/events`: the broker, its topics with their groups (pending, lag) and dead-letter sizes, and what every thread counted. */
function eventsRoute(system: ActorSystem, bus: Broadcast, broker: Broker, subscriptions: { name: string; topic: string; group: string }[]): BuiltinRoute {
  return {
    method: 'GET',
    path: '/admin/events',
    auth: 'admin',
    doc: { summary: 'Event streaming: the broker, each topic with its consumer groups (pending, lag) and dead-letter size, and publish and delivery counts' },
    handler: async () => {
      const counted = await bus.gather<{ node: string; counters: Record<string, number> }>(EVENTS_TOPIC, {}, 2000);
      const counters: Record<string, number> = {};
      for (const c of counted) for (const [k, v] of Object.entries(c.counters)) counters[k] = (counters[k] ?? 0) + v;
      return {
        data: {
          enabled: broker.kind !== 'disabled',
          broker: broker.kind,
          consumer_group: broker.group,
          stream_prefix: broker.prefix,
          consumer: broker.consumerName,
          subscriptions,
          ...(await broker.topics().then(
            (topics) => ({ topics }),
            (error: unknown) => ({ topics: null, streams_error: `the event streams cannot be read: ${(error as Error).message}` }),
          )),
          counters,
          node: system.nodeId,
        },
      };
    },
  };
}
