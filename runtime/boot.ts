/**
 * What the main thread of `svc start` and its worker threads tell each other:
 * the boot data each worker starts from ({@link ServeBoot}), the orders its
 * control actor takes ({@link HttpControl}), and what it answers.
 */
import type pino from 'pino';
import type { ActorSystem } from '../kernel/index.ts';
import type { RelayTransport } from '../transports/worker/index.ts';
import type { SvcConfig } from './config.ts';

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
  /** The member's `MemberState` (lease validity, readiness), written by the main thread. */
  state: SharedArrayBuffer;
  invalidation: { enabled: boolean; channel: string };
}

/** The control actor's name under `/user`: the main thread's orders ({@link HttpControl}) arrive there. */
export const CONTROL_ACTOR = 'http';

/** The main thread's metrics actor (the main thread serves it when `mainMetrics`). */
export const MAIN_METRICS_ACTOR = 'metrics';

/** Orders the main thread gives a worker's control actor ({@link CONTROL_ACTOR}). */
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

/** One endpoint of the app, as `describe` answers and `svc start` prints it. */
export interface RouteSummary {
  method: string;
  path: string;
  kind: string;
  name: string;
  access: string;
}

/** What one serving thread is built from. */
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

/** How long a caller waits for a walker run: its deadline (`request_timeout_ms`) and a second for the answer to come back. */
export function askTimeoutMs(boot: ServeBoot): number {
  return boot.config['scale.server'].request_timeout_ms + 1000;
}
