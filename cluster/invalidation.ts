/**
 * The L1 invalidation channel (`kv_l1_invalidation_enabled`,
 * `kv_l1_invalidation_channel`): when a process writes or deletes an anchor,
 * every other process sharing the cache hears of it and flags its in-memory
 * copy stale.
 *
 * Events are JSON on one Redis pub/sub channel: `{t: 'claim' | 'delete',
 * root, by}`, `by` the writer's process id. Publishing never throws: an
 * invalidation that cannot be sent is reported through `onError` (the writer
 * has written; its readers fall back on the L2/L3 copies, which are right).
 * Subscribing takes a connection of its own (ioredis puts a subscribed
 * connection in subscriber mode, where it runs no other command); ioredis
 * subscribes again after a reconnect. A process's own events and messages that
 * are not events (another version, garbage) are dropped; a listener that
 * throws is reported and the others still run.
 *
 * Pub/sub is at most once: an event published while a subscriber is
 * disconnected is lost to it. TODO: on a subscriber's reconnect, flag the
 * whole L1 stale (an `onResubscribe` hook for the cache to do so).
 */
import type { Redis } from 'ioredis';
import { whenReady } from '../stores/redis/index.ts';

/** One invalidation: `claim` — `root` was written by `by`; `delete` — removed (or quarantined). */
export interface InvalidationEvent {
  t: 'claim' | 'delete';
  root: string;
  by: string;
}

export interface InvalidationOptions {
  /** Publishes (a client from `openRedis`). */
  redis: Redis;
  /** Receives: a connection of its own. Default `redis.duplicate()`, closed with this. */
  subscriber?: Redis;
  /** `kv_l1_invalidation_channel`; every process sharing a cache uses the same one. */
  channel: string;
  /** This process: events it published come back to it and are dropped. */
  processId: string;
  /** A publish or subscribe that failed, or a listener that threw. */
  onError?(error: unknown): void;
  /** How long `subscribe` waits for the subscriber connection (default 5 s). */
  connectTimeoutMs?: number;
}

/**
 * @example
 * const l1 = new Invalidation({ redis, channel: 'svc:anchor:invalidate', processId });
 * await l1.subscribe((e) => cache.markStale(e.root));
 * await l1.publish({ t: 'claim', root, by: processId });
 */
export class Invalidation {
  private readonly listeners = new Set<(event: InvalidationEvent) => void>();
  private readonly onError: (error: unknown) => void;
  private sub: Redis | undefined;
  private subscribing: Promise<void> | undefined;
  private closed = false;
  /** Messages on the channel that were not events (for stats and tests). */
  malformed = 0;

  constructor(private readonly options: InvalidationOptions) {
    this.onError = options.onError ?? (() => undefined);
  }

  /** Send `event` to the other processes (`by` defaults to this process). Resolves once sent or reported; never rejects. */
  async publish(event: { t: InvalidationEvent['t']; root: string; by?: string }): Promise<void> {
    const message: InvalidationEvent = { t: event.t, root: event.root, by: event.by ?? this.options.processId };
    try {
      await this.options.redis.publish(this.options.channel, JSON.stringify(message));
    } catch (error) {
      this.onError(error);
    }
  }

  /**
   * Call `fn` with every event of another process. Resolves once the
   * subscription is live (events published after that reach `fn`); rejects
   * when the subscriber cannot connect in time (`fn` stays registered and
   * starts hearing events once it does). Returns the way to stop.
   */
  async subscribe(fn: (event: InvalidationEvent) => void): Promise<() => void> {
    this.listeners.add(fn);
    const off = (): void => void this.listeners.delete(fn);
    await this.start();
    return off;
  }

  /** Stop receiving; close the subscriber connection when it is ours. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    const sub = this.sub;
    this.sub = undefined;
    if (!sub) return;
    if (!this.options.subscriber) return sub.disconnect();
    sub.off('message', this.onMessage);
    await sub.unsubscribe(this.options.channel).catch(() => undefined);
  }

  private readonly onMessage = (channel: string, message: string): void => {
    if (channel === this.options.channel) this.deliver(message);
  };

  private start(): Promise<void> {
    this.subscribing ??= this.open().catch((error: unknown) => {
      this.subscribing = undefined; // the next subscribe tries again; ioredis keeps reconnecting meanwhile
      throw error;
    });
    return this.subscribing;
  }

  private async open(): Promise<void> {
    let sub = this.sub;
    if (!sub) {
      sub = this.options.subscriber ?? this.options.redis.duplicate();
      this.sub = sub;
      // The publishing connection reports outages; a duplicate would report each one again.
      if (!this.options.subscriber) sub.on('error', () => undefined);
      sub.on('message', this.onMessage);
    }
    await whenReady(sub, this.options.connectTimeoutMs ?? 5_000, 'the invalidation subscriber');
    if (this.closed) return;
    await sub.subscribe(this.options.channel);
  }

  private deliver(message: string): void {
    const event = parseEvent(message);
    if (!event) {
      this.malformed++;
      return;
    }
    if (event.by === this.options.processId) return;
    for (const fn of this.listeners) {
      try {
        fn(event);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}

/**
 * The event in `message`, or undefined when it is not one.
 *
 * @example
 * parseEvent('{"t":"delete","root":"r1","by":"p2"}') // { t: 'delete', root: 'r1', by: 'p2' }
 */
export function parseEvent(message: string): InvalidationEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { t, root, by } = value as Record<string, unknown>;
  if ((t !== 'claim' && t !== 'delete') || typeof root !== 'string' || root === '' || typeof by !== 'string' || by === '') return undefined;
  return { t, root, by };
}
