/**
 * `subscribe(topic, handler, options)`: a push subscription, exported from
 * the entry module like walkers are; `svc start` finds it there and runs one
 * consumer actor for it per process.
 *
 * @example
 * export const onOrder = subscribe('orders', async (event, ctx) => {
 *   await ctx.spawn('RecordOrder', { id: event.data.id }, { root: event.data.root });
 * }, { retry: { maxAttempts: 5 } });
 */
import { checkRetry, checkTopic, DEFAULT_RETRY, type RetrySettings } from './broker.ts';
import type { Event } from './event.ts';
import type { StartFrom } from './streams.ts';

/** What a handler is given beside the event. */
export interface HandlerContext {
  topic: string;
  group: string;
  /** Which try this is, from 1. */
  attempt: number;
  /** Run a walker: as the guest, or on `root` with that root's own rights. Same as the exported `spawn`. */
  spawn(walker: string, fields?: Record<string, unknown>, options?: SpawnAsOptions): Promise<{ reports: unknown[] }>;
  /** Run a broadcast WebSocket walker and send its reply to all of its clients. Same as the exported `broadcast`. */
  broadcast(walker: string, fields?: Record<string, unknown>, options?: SpawnAsOptions): Promise<unknown>;
  /** Publish an event carrying this event's trace id. */
  publish(topic: string, event: Event): void;
  /** A logger whose lines carry the topic, the event id and its trace id. */
  log: { info(obj: object | string, msg?: string): void; warn(obj: object | string, msg?: string): void; error(obj: object | string, msg?: string): void };
}

export interface SpawnAsOptions {
  /** The root (a user's graph) to run on, with its rights; default: the guest graph. */
  root?: string;
  /** Spawn at this node of that graph instead of its root. */
  at?: string;
}

export type EventHandler<D = any> = (event: Event<D>, ctx: HandlerContext) => unknown;

export interface SubscribeOptions {
  /** Consumer group (default `[scale.events] consumer_group`). */
  group?: string;
  /** Overrides of `[scale.events.retry]`. */
  retry?: Partial<RetrySettings>;
  /** Where the group starts when first made: `latest` (default), `earliest`, or a stream position. */
  startFrom?: StartFrom;
  /** Handlers of this subscription running at once in one process (default `[scale.events] concurrency`). */
  concurrency?: number;
}

const SUBSCRIPTION = Symbol.for('svc.subscription');

export interface Subscription<D = any> {
  readonly [SUBSCRIPTION]: true;
  readonly topic: string;
  readonly handler: EventHandler<D>;
  readonly options: Readonly<SubscribeOptions>;
}

/** Declare a push subscription; export it from the entry module. */
export function subscribe<D = any>(topic: string, handler: EventHandler<D>, options: SubscribeOptions = {}): Subscription<D> {
  checkTopic(topic);
  if (typeof handler !== 'function') throw new TypeError(`subscribe('${topic}', handler): the handler must be a function`);
  if (options.concurrency !== undefined && !(Number.isInteger(options.concurrency) && options.concurrency >= 1)) {
    throw new TypeError(`subscribe('${topic}'): concurrency must be an integer ≥ 1`);
  }
  if (options.retry !== undefined) checkRetry({ ...DEFAULT_RETRY, ...options.retry }, `subscribe('${topic}')`);
  const from = options.startFrom;
  if (from !== undefined && !(typeof from === 'string' && /^(latest|earliest|\$|0|\d+(-\d+)?)$/.test(from))) {
    throw new TypeError(`subscribe('${topic}'): startFrom is 'latest', 'earliest' or a stream position such as '1700000000000-0', got ${JSON.stringify(from)}`);
  }
  if (options.group !== undefined && !(typeof options.group === 'string' && /^[^\s\u0000-\u001f]{1,200}$/.test(options.group))) {
    throw new TypeError(`subscribe('${topic}'): group is 1 to 200 characters without spaces`);
  }
  return Object.freeze({ [SUBSCRIPTION]: true as const, topic, handler, options: Object.freeze({ ...options }) });
}

export function isSubscription(value: unknown): value is Subscription {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[SUBSCRIPTION] === true;
}

/** The subscriptions a module exports, by export name. */
export function subscriptionsOf(exports: Record<string, unknown>): [string, Subscription][] {
  return Object.entries(exports).filter((e): e is [string, Subscription] => isSubscription(e[1]));
}
