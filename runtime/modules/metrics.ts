/**
 * The `metrics` module: this thread's metrics and the scrape of every thread
 * of the process (when `[scale.metrics]` is on; off, it provides nothing).
 */
import { randomUUID } from 'node:crypto';
import { ActorBroadcast, type ActorSystem, fromReceive, isWorkerNode, MAIN_THREAD, processOf } from '../../kernel/index.ts';
import { MAIN_METRICS_ACTOR, type ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { type MetricJson, THREAD_METRICS_ACTOR, ThreadMetrics, type ThreadSnapshot } from '../metrics/index.ts';
import { BROKER, FRONT, HUB, METRICS, SCRAPE } from '../keys.ts';

const METRICS_TOPIC = 'runtime.metrics';

/**
 * Metrics of this thread ({@link ThreadMetrics}: the front's answers, runs,
 * the runtime's observers), and the scrape: every worker thread of this
 * process, and its main thread, asked at once. Off (the default): nothing is
 * recorded and no observer is subscribed.
 */
export function metricsModule(system: ActorSystem, boot: ServeBoot, thread: string): RuntimeModule {
  const settings = boot.config['scale.metrics'];
  let metrics: ThreadMetrics | undefined;
  return {
    name: 'metrics',
    uses: [FRONT, HUB, BROKER],
    provides: [METRICS, SCRAPE],
    start(rt) {
      if (!settings.enabled) return;
      const first = boot.listeners[0] ?? thread;
      metrics = rt.provide(
        METRICS,
        new ThreadMetrics(
          { namespace: settings.namespace, buckets: settings.histogram_buckets, walkerMetrics: settings.walker_metrics },
          {
            thread,
            inFlight: () => rt.find(FRONT)?.inFlight,
            actors: () => system.actorCount,
            mailboxes: () => system.mailboxHighWater(),
            partitions: () => system.activationCount('partition'),
            websockets: () => {
              const hub = rt.find(HUB);
              return hub && { connections: hub.conns.size, broadcasts: hub.broadcasts, sessions: hub.sessionActors, rooms: { ...hub.rooms.size, ...hub.rooms.counts } };
            },
            broker: () => rt.find(BROKER),
            // The streams' lag is the same whichever thread asks: one thread reports it.
            ...(thread === first
              ? {
                  lag: async () => {
                    const broker = rt.find(BROKER);
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
        rt.provide(SCRAPE, async () => (await main.ask({ t: 'scrape' }, 10_000)) as MetricJson[][]);
      } else {
        // In process (svc/testing): the threads of this actor system, asked at once.
        const own = processOf(system.nodeId);
        const bus = new ActorBroadcast(system, { name: 'metrics-bus', accepts: (node) => isWorkerNode(node) && processOf(node) === own });
        bus.subscribe(METRICS_TOPIC, () => local.snapshot());
        rt.provide(SCRAPE, () => bus.gather<MetricJson[]>(METRICS_TOPIC, {}, 5000));
      }
    },
    close: () => metrics?.close(),
  };
}
