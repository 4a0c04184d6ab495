/**
 * The runtime's admin routes: `GET /admin/stats` (each worker thread),
 * `/admin/cluster` (the members and the partitions each holds),
 * `/admin/events` (the broker, its topics, what every thread counted),
 * `/admin/metrics` and the Prometheus endpoint. What each reports of every
 * worker thread is gathered over the bus ({@link STATS_TOPIC},
 * {@link EVENTS_TOPIC}): the runtime's modules answer those topics.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type ActorSystem, type Broadcast, processOf } from '../../kernel/index.ts';
import type { BuiltinRoute } from './types.ts';

/** The bus topic each worker thread answers with its {@link WorkerStats} (`{ gc }`: collect garbage first). */
export const STATS_TOPIC = 'runtime.stats';
/** The bus topic each worker thread answers with its event counters (`{ node, counters }`). */
export const EVENTS_TOPIC = 'events.counters';

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
  /** This thread's V8 heap as reserved from the system (in use or not: the young generation's semi-spaces whole). */
  heap_total_bytes: number;
  /** Handles and requests keeping this thread's event loop alive. */
  handles: number;
}

/**
 * `GET /admin/stats`: every worker thread's {@link WorkerStats}, and the process's resident memory.
 *
 * @example
 * const routes = [statsRoute(bus)];
 */
export function statsRoute(bus: Broadcast): BuiltinRoute {
  return {
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
  };
}

/** What the metrics routes read: the process's metrics as the admin JSON, and as Prometheus text. */
export interface MetricsSource {
  json(): Promise<Record<string, unknown>>;
  text(): Promise<{ text: string; contentType: string }>;
}

/**
 * Whether a bearer token is `expected` (a static credential such as `[scale.metrics] scrape_token`), in constant time:
 * the sha256 digests of both are compared, so neither the length nor the first difference shows in the timing.
 *
 * @example
 * const isScraper = staticTokenCheck(config['scale.metrics'].scrape_token);
 * isScraper(bearer(req.headers.authorization) ?? '') // true for that token only
 */
export function staticTokenCheck(expected: string): (token: string) => boolean {
  const want = createHash('sha256').update(expected).digest();
  return (token) => timingSafeEqual(createHash('sha256').update(token).digest(), want);
}

/**
 * `GET <endpoint>` (Prometheus text; an admin token or, when set, the scrape token; 403 otherwise) when metrics are on (a
 * source given), and `GET /admin/metrics` always (admin tokens only: the scrape token opens the scrape endpoint alone).
 *
 * @example
 * metricsRoutes('/metrics', undefined) // metrics off: /admin/metrics answers { enabled: false }
 * metricsRoutes('/metrics', source, config['scale.metrics'].scrape_token) // '' (the default): admin tokens only
 */
export function metricsRoutes(endpoint: string, source: MetricsSource | undefined, scrapeToken = ''): BuiltinRoute[] {
  const admin: BuiltinRoute = {
    method: 'GET',
    path: '/admin/metrics',
    auth: 'admin',
    doc: { summary: 'Metrics as JSON: data.metrics (name, type, help, values [{labels, value}]) and data.summary (total_requests, avg_latency_ms, error_rate_percent, active_requests); data.enabled false when [scale.metrics] is off' },
    handler: async () => {
      if (!source) {
        return { data: { enabled: false, metrics: [], summary: { total_requests: 0, avg_latency_ms: 0, error_rate_percent: 0, server_error_rate_percent: 0, active_requests: 0 } } };
      }
      return { data: { enabled: true, ...(await source.json()) } };
    },
  };
  if (!source) return [admin];
  return [
    admin,
    {
      method: 'GET',
      path: endpoint,
      auth: 'admin',
      authFailure: 'forbidden',
      ...(scrapeToken ? { staticToken: staticTokenCheck(scrapeToken) } : {}),
      doc: {
        summary: 'Prometheus metrics of this process (every thread), for a scraper; needs an admin bearer token, or the static [scale.metrics] scrape_token (SVC_METRICS_SCRAPE_TOKEN) as bearer token when one is set (403 otherwise)',
        produces: 'text/plain',
        tag: 'metrics',
      },
      handler: async () => {
        const { text, contentType } = await source.text();
        return { raw: { status: 200, headers: { 'content-type': contentType, 'cache-control': 'no-store' }, body: text } };
      },
    },
  ];
}

const PARTITIONS_TOPIC = 'cluster.partitions';

/** What `GET /admin/cluster` reports of a cluster: its name, this member's process id, and the members (asked of the main thread). */
export interface ClusterView {
  name: string;
  processId: string;
  members(): Promise<{ process: string }[]>;
}

/**
 * `GET /admin/cluster`: the members, and the partitions each holds now.
 *
 * @example
 * clusterRoute(system, bus, { name: 'shop', processId, members: () => askMembers() })
 */
export function clusterRoute(system: ActorSystem, bus: Broadcast, cluster: ClusterView): BuiltinRoute {
  bus.subscribe(PARTITIONS_TOPIC, () => ({ node: system.nodeId, partitions: system.activationCount('partition') }));
  return {
    method: 'GET',
    path: '/admin/cluster',
    auth: 'admin',
    doc: { summary: 'The cluster: each member with its address, workers, uptime, partitions held and last heartbeat' },
    handler: async () => {
      const [members, counts] = await Promise.all([
        cluster.members(),
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

/** What `GET /admin/events` reads of the event broker. */
export interface BrokerView {
  readonly kind: string;
  readonly group: string;
  readonly prefix: string;
  readonly consumerName: string;
  topics(): Promise<unknown[]>;
}

/**
 * `GET /admin/events`: the broker, its topics with their groups (pending, lag) and dead-letter sizes, and what every thread counted.
 *
 * @example
 * eventsRoute(system, bus, broker, [{ name: 'onOrder', topic: 'orders', group: 'svc' }])
 */
export function eventsRoute(system: ActorSystem, bus: Broadcast, broker: BrokerView, subscriptions: { name: string; topic: string; group: string }[]): BuiltinRoute {
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
