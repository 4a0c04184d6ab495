/**
 * The catalogue of services the runtime's modules meet through: one typed key
 * each (`rt.need(STORE)` is an `AnchorStore`). A module declares the keys it
 * needs, uses and provides; `composeRuntime` checks the list (runtime.ts).
 * The worker threads' services first, then the main thread's.
 */
import type pino from 'pino';
import type { Broadcast } from '../kernel/index.ts';
import type { AnchorStore, Graph } from '../actors/graph/index.ts';
import type { HookDispatcher, UnknownFields } from '../actors/walker/index.ts';
import type { ApiKeys, Authenticator, IdentityService, RevocationTable, SsoService, ThreadHasher, UsersRepository } from '../actors/identity/index.ts';
import type { ServiceStarter } from '../transports/sv/index.ts';
import type { Front } from '../transports/http/index.ts';
import type { WsHub } from '../transports/ws/index.ts';
import type { Broker } from '../actors/events/index.ts';
import type { ClusterMember, Invalidation } from '../cluster/index.ts';
import type { MetricJson, ThreadMetrics } from './metrics/index.ts';
import type { ServeCluster } from './boot.ts';
import type { AppProbe } from './main/app.ts';
import type { Serving } from './main/config-check.ts';
import type { StartSecrets } from './main/data.ts';
import type { Workers } from './main/pool.ts';
import type { Address } from './main/port.ts';
import type { MainStores } from './main/stores.ts';
import { key, RUNTIME } from './runtime.ts';

export { RUNTIME };

// The services of a worker thread (runtime/modules/), in the order they are provided.

/** The thread's log (pino). */
export const LOG = key<pino.Logger>('log');
/** One message to every worker thread: revocations, WebSocket broadcasts, statistics. */
export const BUS = key<Broadcast>('bus');
/** This thread's metrics (only when `[scale.metrics]` is on). */
export const METRICS = key<ThreadMetrics>('metrics');
/** What every thread of this process measured, as prom-client metric JSON (only when metrics are on). */
export const SCRAPE = key<() => Promise<MetricJson[][]>>('scrape');
/** The event broker (`publish`, pull): disabled, memory, actor or Redis streams. */
export const BROKER = key<Broker>('broker');
/** The app's subscriptions (name, topic, group), as `GET /admin/events` lists them. */
export const SUBSCRIPTIONS = key<{ name: string; topic: string; group: string }[]>('subscriptions');
/** The graph store (instrumented). */
export const STORE = key<AnchorStore>('store');
/** Walker runs on the graph's partitions. */
export const GRAPH = key<Graph>('graph');
/** The L1 invalidation channel of a cluster member (when `kv_l1_invalidation_enabled`). */
export const INVALIDATION = key<Invalidation>('invalidation');
/** The users repository. */
export const USERS = key<UsersRepository>('users');
/** Revoked tokens, by user. */
export const REVOCATIONS = key<RevocationTable>('revocations');
/** Read the revocations of the users store again (a member that joined or joined again missed some). */
export const RELOAD_REVOCATIONS = key<() => Promise<void>>('reloadRevocations');
/** Tokens checked, for every transport. */
export const AUTH = key<Authenticator>('auth');
/** Sign-up, log-in, tokens, account changes. */
export const IDENTITY = key<IdentityService>('identity');
/** API keys of webhook walkers. */
export const API_KEYS = key<ApiKeys>('apiKeys');
/** Single sign-on. */
export const SSO = key<SsoService>('sso');
/** The app's hook walkers. */
export const HOOKS = key<HookDispatcher>('hooks');
/** What is done with fields an endpoint does not declare. */
export const UNKNOWN_FIELDS = key<UnknownFields>('unknownFields');
/** The HTTP front (routes, envelope, readiness), whatever the server. */
export const FRONT = key<Front>('front');
/** The WebSocket hub. */
export const HUB = key<WsHub>('hub');
/** Open this thread's port (at once, or when the main thread says so). */
export const LISTEN = key<() => Promise<void>>('listen');

// The services of the main thread of `svc start` (runtime/main/), in the order they are provided.

/** The transport (uWebSockets.js, or node:http where it cannot load) and the number of worker threads. */
export const SERVING = key<Serving>('serving');
/** The app's endpoints, as a probe thread found them. */
export const APP = key<AppProbe>('app');
/** The JWT and webhook secrets of this start. */
export const SECRETS = key<StartSecrets>('secrets');
/** Password hashing for the whole process. */
export const HASHER = key<ThreadHasher>('hasher');
/** Whether the database is shared, and the SQLite writers this thread serves. */
export const STORES = key<MainStores>('stores');
/** The host and port served, and the threads that open it. */
export const ADDRESS = key<Address>('address');
/** The siblings of `sv` calls. */
export const STARTER = key<ServiceStarter>('starter');
/** This process as a member of a cluster (`KV_URL` set). */
export const MEMBER = key<ClusterMember>('member');
/** What the worker threads are told of the cluster. */
export const CLUSTER = key<ServeCluster>('cluster');
/** The worker threads (the pool serving now, how to start another). */
export const WORKERS = key<Workers>('workers');
