/** The `consumers` module: walkers run for app code outside requests (`spawn`, `broadcast`), and the consumers of the app's subscriptions. */
import type { ActorSystem } from '../../kernel/index.ts';
import { Root } from '../../actors/walker/index.ts';
import { bindEvents, type Consumers, handling, type HandlerContext, startConsumers, type Event } from '../../actors/events/index.ts';
import { newTraceId } from '../../transports/http/index.ts';
import { askTimeoutMs, type ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { type AppSubscription, consumesEvents } from './events.ts';
import type { Log } from './shared.ts';
import { BROKER, GRAPH, HUB, LOG } from '../keys.ts';

/** Runs walkers for app code outside requests (`spawn`), and the consumers of the app's subscriptions (on one thread). */
export function consumersModule(system: ActorSystem, boot: ServeBoot, subscriptions: AppSubscription[], thread: string): RuntimeModule {
  const events = boot.config['scale.events'];
  let consumers: Consumers | undefined;
  let unbind: (() => void) | undefined;
  let draining: Promise<unknown> | undefined;
  let log: Log | undefined;
  return {
    name: 'consumers',
    needs: [LOG, BROKER, GRAPH],
    uses: [HUB],
    start(rt) {
      log = rt.need(LOG);
      const logger = log;
      const broker = rt.need(BROKER);
      const graph = rt.need(GRAPH);
      const spawnAs: Parameters<typeof bindEvents>[0]['spawn'] = (walker, fields, options) =>
        graph.spawn(walker, fields, {
          caller: { rootId: options.root ?? Root.SHARED_ID },
          ...(options.at !== undefined ? { at: options.at } : {}),
          traceId: options.traceId ?? newTraceId(),
          timeoutMs: askTimeoutMs(boot),
        });
      const broadcastAs: Parameters<typeof bindEvents>[0]['broadcast'] = async (walker, fields, options) => {
        const hub = rt.find(HUB);
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
