/**
 * The event calls app code makes — `publish`, `broker()`, `spawn` — bound to
 * the runtime of the thread they run in (one per worker thread; `testApp`
 * binds its own while it runs). Without events enabled every call is a
 * no-op (`broker().kind === 'disabled'`).
 *
 * `publish` inside a walker or function run goes through the run's outbox:
 * the event is sent only if the run commits, with the run's trace id.
 * Inside an event handler it carries the handled event's trace id.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Broker, checkTopic } from './broker.ts';
import { Event } from './event.ts';
import { afterCommit, callingRun, inWalkerRun } from '../walker/index.ts';
import type { SpawnAsOptions } from './subscription.ts';

/** What the runtime of this thread binds. */
export interface EventsBinding {
  broker: Broker;
  /** Run a walker for a caller (the graph's spawn). */
  spawn(walker: string, fields: Record<string, unknown>, options: SpawnAsOptions & { traceId?: string }): Promise<{ reports: unknown[] }>;
  /** Run a broadcast WebSocket walker and send its reply to all of its clients. */
  broadcast(walker: string, fields: Record<string, unknown>, options: SpawnAsOptions & { traceId?: string }): Promise<unknown>;
}

const DISABLED = new Broker({ streams: undefined });
const bindings: EventsBinding[] = [];

/** Bind this thread's events runtime; returns the unbinding. */
export function bindEvents(binding: EventsBinding): () => void {
  bindings.push(binding);
  return () => {
    const i = bindings.lastIndexOf(binding);
    if (i >= 0) bindings.splice(i, 1);
  };
}

function current(): EventsBinding | undefined {
  return bindings[bindings.length - 1];
}

/** The trace id of the event a handler is handling, for what it publishes and spawns. */
export const handling = new AsyncLocalStorage<{ traceId: string }>();

/** The outbox entry kind of a published event. */
export const EVENT_OUTBOX_KIND = 'event';

/** What an outbox entry of kind `event` holds. */
export interface OutboxEvent {
  topic: string;
  event: Event;
}

/**
 * Publish `event` on `topic`, fire-and-forget. In a walker or function run it
 * is sent once the run commits (never if it fails); elsewhere at once. Broker
 * errors are logged and counted, the event kept in a bounded local buffer.
 * An event larger than `max_event_bytes` is refused with `EVENT_TOO_LARGE`
 * (413 when a walker lets it through), in a run before anything commits.
 *
 * @example
 * publish('orders', new Event({ data: { id: order.id }, eventType: 'order.placed' }));
 */
export function publish(topic: string, event: Event): void {
  checkTopic(topic);
  if (!(event instanceof Event)) throw new TypeError('publish(topic, new Event({ data }))');
  const bound = current();
  if (!bound || bound.broker.kind === 'disabled') return;
  // In a run the event leaves after the commit: it is checked now (JSON, size), while the run can still fail.
  if (inWalkerRun()) {
    bound.broker.prepare(topic, event, callingRun()?.run?.traceId);
    if (afterCommit({ kind: EVENT_OUTBOX_KIND, data: { topic, event } satisfies OutboxEvent })) return;
  }
  bound.broker.publish(topic, event, handling.getStore()?.traceId);
}

/**
 * This thread's broker: `consume(topic, maxMessages, timeoutSeconds, startFrom?)`, `ack(event)`, `kind`.
 *
 * @example
 * const events = await broker().consume('orders', 10, 5);
 * for (const e of events) { handle(e); await broker().ack(e); }
 */
export function broker(): Broker {
  return current()?.broker ?? DISABLED;
}

/**
 * Run a walker from an event handler (or any code outside a request): as the
 * guest, or on `root` (a user's root id) with that root's own rights. The
 * run is a walker run like any other: all of it commits or none.
 *
 * @example
 * await spawn('RecordOrder', { id: event.data.id }, { root: event.data.root });
 */
export async function spawn(walker: string, fields: Record<string, unknown> = {}, options: SpawnAsOptions = {}): Promise<{ reports: unknown[] }> {
  const bound = current();
  if (!bound) throw new Error(`spawn('${walker}'): no svc runtime runs in this thread`);
  const traceId = handling.getStore()?.traceId;
  return bound.spawn(walker, fields, traceId ? { ...options, traceId } : options);
}

/**
 * Push to WebSocket clients from an event handler (or any code outside a
 * request): run the broadcast WebSocket walker `walker` (`broadcast: true`)
 * with `fields` — as the guest, or on `root` — and send its reply to every
 * client connected to it, on every worker thread and pod, as a frame's reply
 * would be. Resolves to the reply's data (`{result, reports}`).
 *
 * @example
 * export const onPrice = subscribe('prices', (event) => broadcast('Ticker', { price: event.data.price }));
 */
export async function broadcast(walker: string, fields: Record<string, unknown> = {}, options: SpawnAsOptions = {}): Promise<unknown> {
  const bound = current();
  if (!bound) throw new Error(`broadcast('${walker}'): no svc runtime runs in this thread`);
  const traceId = handling.getStore()?.traceId;
  return bound.broadcast(walker, fields, traceId ? { ...options, traceId } : options);
}

/**
 * Skip events already handled: wraps a handler so that an event whose id was
 * handled successfully within `ttlSeconds` (in this process, at most `max`
 * ids remembered) is not handled again. Delivery is at-least-once; this
 * narrows repeats within one process, it does not replace idempotent handlers.
 *
 * @example
 * export const onOrder = subscribe('orders', dedupe(async (event) => { … }, { ttlSeconds: 3600 }));
 */
export function dedupe<H extends (event: Event, ...rest: any[]) => unknown>(handler: H, options: { ttlSeconds?: number; max?: number } = {}): H {
  const ttlMs = (options.ttlSeconds ?? 3600) * 1000;
  const max = options.max ?? 100_000;
  const seen = new Map<string, number>();
  return (async (event: Event, ...rest: unknown[]) => {
    const now = Date.now();
    const at = seen.get(event.id);
    if (at !== undefined && now - at < ttlMs) return undefined;
    const out = await handler(event, ...rest);
    seen.delete(event.id);
    seen.set(event.id, now);
    // Oldest first: a Map keeps insertion order.
    for (const [id, t] of seen) {
      if (seen.size <= max && now - t < ttlMs) break;
      seen.delete(id);
    }
    return out;
  }) as unknown as H;
}
