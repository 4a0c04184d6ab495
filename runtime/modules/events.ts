/**
 * The `events` module: the thread's event broker (`publish`, pull) and the
 * app's subscriptions, their consumer groups made before anything serves.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type ActorSystem, MAIN_THREAD } from '../../kernel/index.ts';
import { ActorStreams, MemoryStreams, redactUrl } from '../../stores/index.ts';
import { Broker, openStreams, sharedByteBudget, type StreamBackend, type Subscription, subscriptionsOf } from '../../actors/events/index.ts';
import { EVENTS_TOPIC } from '../../transports/http/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { BROKER, BUS, LOG, SUBSCRIPTIONS } from '../keys.ts';

/** An exported subscription, its group resolved. */
export interface AppSubscription {
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
export function appSubscriptions(app: Record<string, unknown>, defaultGroup: string): AppSubscription[] {
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
export function consumesEvents(thread: string): boolean {
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

/**
 * The event broker of this thread (`publish`, pull), bound for app code, and
 * the consumer groups of the app's subscriptions made before anything serves:
 * an event published once the server answers is never skipped.
 */
export function eventsModule(system: ActorSystem, boot: ServeBoot, subscriptions: AppSubscription[], thread: string): RuntimeModule {
  const events = boot.config['scale.events'];
  const retry = boot.config['scale.events.retry'];
  let broker: Broker | undefined;
  return {
    name: 'events',
    needs: [LOG, BUS],
    provides: [BROKER, SUBSCRIPTIONS],
    async start(rt) {
      const log = rt.need(LOG);
      const url = events.url || boot.config['scale.database'].kv_url;
      let streams: StreamBackend | undefined;
      if (events.enabled) {
        if (url) streams = openStreams(url, { name: `svc-${system.nodeId}-events`, onError: () => undefined });
        else if (boot.memoryEventsOnMain) streams = new ActorStreams(system, MAIN_THREAD);
        else streams = new MemoryStreams();
      }
      broker = rt.provide(
        BROKER,
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
      rt.need(BUS).subscribe(EVENTS_TOPIC, () => ({ node: system.nodeId, counters: b.counters }));
      rt.provide(SUBSCRIPTIONS, subscriptions.map(({ name, topic, group }) => ({ name, topic, group })));
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
