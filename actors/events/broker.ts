/**
 * The event broker of one thread: `publish` (fire-and-forget, with a bounded
 * local buffer while the streams cannot be reached), pull (`consume`, `ack`),
 * and the delivery loop of a subscription (`SubscriptionRunner`, in
 * subscription-runner.ts): its own pending entries first (a restarted process takes back what it held),
 * entries other consumers left pending past the visibility timeout
 * (`XAUTOCLAIM`), then new ones; each handled up to `concurrency` at a time,
 * retried with backoff, dead-lettered to `<topic><dead_letter_suffix>` after
 * `max_attempts`, acknowledged once handled. At-least-once.
 *
 * Stream keys are `<prefix><topic>` (default prefix `svc:events:`).
 *
 * Publishing in batches. On a backend that appends many payloads in one
 * round trip (`addMany`: Redis), the events published in one turn of the event
 * loop leave together: one batch per stream at the next turn, and one batch of
 * a stream on its way at a time — what is published meanwhile leaves with the
 * next, once the answer is in. So a stream's events are appended in the order
 * they were published even when a batch fails (its events, and those queued
 * behind it, go to the local buffer in order). One call and one answer per
 * batch rather than per event is most of what publishing costs at a high rate
 * (bench/events.ts). Other backends get one `add` per event at once.
 *
 * @example
 * const broker = new Broker({ streams: new MemoryStreams(), ...defaults });
 * broker.publish('orders', new Event({ data: { id: 7 } }));
 * const [event] = await broker.consume('orders', 10, 1, 'earliest');
 * await broker.ack(event);
 */
import { type Clock, realClock, SvcError, type TimerHandle } from '../../kernel/index.ts';
import { decodeEvent, encodeEvent, Event, stamp } from './event.ts';
import type { StartFrom, StreamBackend, StreamEntry } from './streams.ts';

export interface RetrySettings {
  /** Tries of a handler, the first included, before the event goes to the dead-letter topic. */
  maxAttempts: number;
  /** Wait before try n+1 is `backoffSeconds[n-1]`; the last value is reused. */
  backoffSeconds: number[];
  deadLetterSuffix: string;
}

export type BrokerKind = 'disabled' | 'memory' | 'redis';

export type BrokerLog = (level: 'info' | 'warn' | 'error', message: string, extra?: Record<string, unknown>) => void;

export interface BrokerOptions {
  /** None: the broker is disabled and every call is a no-op. */
  streams: StreamBackend | undefined;
  /** `consumer_group` (default `svc-scale`). */
  group?: string;
  /** Stream keys are `<prefix><topic>` (default `svc:events:`). */
  prefix?: string;
  /** `MAXLEN ~` of every stream (default 100,000). */
  maxLen?: number;
  /** The payload bytes one stream keeps at most: the oldest entries past it are dropped (default 256 MiB; 0: no byte limit). */
  maxStreamBytes?: number;
  /** The largest event (its CloudEvents JSON, UTF-8 bytes) that is published; a larger one is refused with `EVENT_TOO_LARGE` (default 1 MiB). */
  maxEventBytes?: number;
  /** Entries pending longer than this are claimed from the consumer that holds them (default 30 s). */
  visibilityMs?: number;
  retry?: Partial<RetrySettings>;
  /** This process's consumer name: host, data folder, worker. */
  consumerName?: string;
  /** CloudEvents `source` of published events (default `svc`). */
  source?: string;
  /** Events kept while the streams cannot be reached (default 10,000); past it, new ones are dropped and counted. */
  bufferLimit?: number;
  /**
   * Bytes of events kept while the streams cannot be reached (default 64 MiB);
   * past it, new ones are dropped and counted. With `bufferBudget`, the budget
   * of the whole process, shared by its threads.
   */
  bufferBytes?: number;
  /** A byte budget shared with the brokers of other threads (see {@link sharedByteBudget}); default: this broker's own. */
  bufferBudget?: ByteBudget;
  clock?: Clock;
  log?: BrokerLog;
}

/** What a broker counts, for `/admin/events` and metrics. */
export interface BrokerCounters {
  published: number;
  /** Appends that failed (each went to the buffer, or was dropped). */
  publish_failures: number;
  /** Events in the local buffer now. */
  buffered: number;
  /** Bytes of the events in the local buffer now. */
  buffered_bytes: number;
  /** Events refused because they were larger than `max_event_bytes`. */
  refused: number;
  /** Events dropped because the buffer was full (by count or by bytes), or published after the broker closed. */
  dropped: number;
  delivered: number;
  handled: number;
  retried: number;
  dead_lettered: number;
}

export const DEFAULT_RETRY: RetrySettings = { maxAttempts: 3, backoffSeconds: [1, 5, 30], deadLetterSuffix: '.dlq' };

const MIB = 1024 * 1024;
/** Defaults of the byte bounds (documented in the README and `runtime/config.ts`). */
export const DEFAULT_MAX_EVENT_BYTES = MIB;
export const DEFAULT_BUFFER_BYTES = 64 * MIB;
export const DEFAULT_MAX_STREAM_BYTES = 256 * MIB;
/** A refusal is logged at most this often (the count of those in between is in the line). */
const REFUSAL_LOG_MS = 10_000;

/** Bytes that may be taken while they fit, and given back. */
export interface ByteBudget {
  readonly limit: number;
  /** Take `bytes` if they fit under the limit; whether they were taken. */
  take(bytes: number): boolean;
  give(bytes: number): void;
}

/** Threads of one process that a shared byte budget tells apart (a thread's slot is its number, modulo this). */
const BUDGET_SLOTS = 64;

/**
 * Memory for a byte budget that every thread of a process shares: one
 * counter per thread slot (BigInt64) and the slot's epoch (Int32). Made once
 * by the main thread and handed to each worker (see {@link sharedByteBudget}).
 *
 * @example
 * const memory = sharedBudgetMemory(); // in the boot data of every worker
 */
export function sharedBudgetMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(BUDGET_SLOTS * 8 + BUDGET_SLOTS * 4);
}

/**
 * A byte budget: what every holder of `memory` takes, together, stays within
 * `limit` (Atomics: a thread adds to its own slot, then reads the sum; over
 * the limit it takes its bytes back). `slot` is the thread's number: a thread
 * that replaces one that died claims the slot afresh — what the dead one held
 * died with it — and the one before it, should it still be closing, can no
 * longer touch it (the slot's epoch changed). Without `memory`, a budget of
 * this broker only.
 *
 * @example
 * const budget = sharedByteBudget(64 * 1024 * 1024, memory, 2); // worker w2
 */
export function sharedByteBudget(limit: number, memory?: SharedArrayBuffer, slot = 0): ByteBudget {
  const shared = memory ?? sharedBudgetMemory();
  const bytes = new BigInt64Array(shared, 0, BUDGET_SLOTS);
  const epochs = new Int32Array(shared, BUDGET_SLOTS * 8, BUDGET_SLOTS);
  const i = Math.abs(Math.trunc(slot)) % BUDGET_SLOTS;
  const epoch = Atomics.add(epochs, i, 1) + 1;
  Atomics.store(bytes, i, 0n);
  const mine = (): boolean => Atomics.load(epochs, i) === epoch;
  const sum = (): number => {
    let n = 0n;
    for (let k = 0; k < BUDGET_SLOTS; k++) n += Atomics.load(bytes, k);
    return Number(n);
  };
  return {
    limit,
    take(n) {
      if (!mine()) return false;
      Atomics.add(bytes, i, BigInt(n));
      if (sum() <= limit) return true;
      Atomics.sub(bytes, i, BigInt(n));
      return false;
    },
    give(n) {
      if (mine()) Atomics.sub(bytes, i, BigInt(n));
    },
  };
}

/** The UTF-8 bytes of `text` when they may be over `max`, else 0 (a UTF-16 unit is at most 3 bytes: short texts are not measured). */
function bytesOver(text: string, max: number): number {
  if (text.length * 3 <= max) return 0;
  const bytes = Buffer.byteLength(text);
  return bytes > max ? bytes : 0;
}

/** Events of one stream published and not sent yet (backends with `addMany`): they leave in batches, one on its way at a time. */
interface Outgoing {
  /** Waiting from `head` on (those before it are on their way). */
  payloads: string[];
  head: number;
  /** A batch of this stream is on its way: the next leaves once it is answered. */
  busy: boolean;
  /** Events ever queued here, and those whose batch was answered (or that went to the buffer): what `flush` waits for. */
  queued: number;
  settled: number;
}

/** A batch carries at most this many events… */
const BATCH_EVENTS = 512;
/** …and, past its first event, at most this many characters of payload (one script call of a few MiB at most). */
const BATCH_CHARS = 1024 * 1024;

/** A published event waiting in the local buffer: its stream key and its payload as UTF-8 (its true size in memory). */
interface Buffered {
  stream: string;
  bytes: Buffer;
}

const TOPIC = /^[^\s\u0000-\u001f]{1,200}$/;

/** Throws `INVALID_TOPIC` (400: a topic often comes from a request) for a topic name that cannot be a stream. */
export function checkTopic(topic: unknown): asserts topic is string {
  if (typeof topic !== 'string' || !TOPIC.test(topic)) {
    throw new SvcError('INVALID_TOPIC', `a topic is 1 to 200 characters without spaces or control characters, got ${JSON.stringify(typeof topic === 'string' ? topic.slice(0, 60) : topic)}`, { status: 400 });
  }
}

/** Throws a TypeError naming the topic when the event's data cannot be written as JSON (a BigInt, a cycle). */
export function checkData(topic: string, event: Event): void {
  try {
    JSON.stringify(event.data);
  } catch (error) {
    throw new TypeError(`publish('${topic}'): the event's data cannot be written as JSON (${(error as Error).message})`);
  }
}

/** Whether an error says the consumer group (or its stream) is gone: Redis restarted empty, the key was deleted. */
function noGroup(error: unknown): boolean {
  return error instanceof Error && /NOGROUP/.test(error.message);
}

/** Retry settings that can work: at least one try, waits ≥ 0, a dead-letter topic other than the topic itself. */
export function checkRetry(retry: RetrySettings, where: string): RetrySettings {
  if (!(Number.isInteger(retry.maxAttempts) && retry.maxAttempts >= 1)) throw new TypeError(`${where}: retry maxAttempts must be an integer ≥ 1`);
  if (!(Array.isArray(retry.backoffSeconds) && retry.backoffSeconds.every((s) => typeof s === 'number' && Number.isFinite(s) && s >= 0))) {
    throw new TypeError(`${where}: retry backoffSeconds must be a list of seconds ≥ 0`);
  }
  if (typeof retry.deadLetterSuffix !== 'string' || retry.deadLetterSuffix === '') throw new TypeError(`${where}: retry deadLetterSuffix must not be empty (the dead letters would go back to the topic)`);
  return retry;
}

export class Broker {
  readonly kind: BrokerKind;
  readonly streams: StreamBackend | undefined;
  readonly group: string;
  readonly prefix: string;
  readonly maxLen: number;
  readonly visibilityMs: number;
  readonly retry: RetrySettings;
  readonly consumerName: string;
  readonly source: string;
  readonly clock: Clock;
  readonly log: BrokerLog;
  readonly maxStreamBytes: number;
  readonly maxEventBytes: number;
  readonly counters: BrokerCounters = { published: 0, publish_failures: 0, buffered: 0, buffered_bytes: 0, dropped: 0, refused: 0, delivered: 0, handled: 0, retried: 0, dead_lettered: 0 };
  private readonly bufferLimit: number;
  private readonly budget: ByteBudget;
  private buffer: Buffered[] = [];
  /** Refusals not logged yet, and when the last line was. */
  private refusedSince = 0;
  private refusalLoggedAt = -Infinity;
  private flushing = false;
  private flushTimer: TimerHandle | undefined;
  private flushDelayMs = 250;
  private outage = false;
  private overflowLogged = false;
  private closedLogged = false;
  /** When pull last claimed, by stream and group: claims are a scan, done once per half visibility timeout. */
  private readonly pullClaims = new Map<string, number>();
  private readonly groups = new Map<string, Promise<boolean>>();
  private closed = false;
  /** Sends still on their way (awaited by `flush`). */
  private readonly sending = new Set<Promise<unknown>>();
  /** Events waiting for their stream's next batch, by stream key (backends with `addMany`). */
  private readonly outgoing = new Map<string, Outgoing>();
  private turnScheduled = false;

  constructor(options: BrokerOptions) {
    this.streams = options.streams;
    this.kind = options.streams ? options.streams.kind : 'disabled';
    this.group = options.group ?? 'svc-scale';
    this.prefix = options.prefix ?? 'svc:events:';
    this.maxLen = options.maxLen ?? 100_000;
    this.visibilityMs = options.visibilityMs ?? 30_000;
    this.retry = checkRetry({ ...DEFAULT_RETRY, ...options.retry }, 'the event broker');
    if (!(this.visibilityMs > 0)) throw new TypeError('the event broker: the visibility timeout must be > 0');
    this.consumerName = options.consumerName ?? 'svc';
    this.source = options.source ?? 'svc';
    this.bufferLimit = options.bufferLimit ?? 10_000;
    this.budget = options.bufferBudget ?? sharedByteBudget(options.bufferBytes ?? DEFAULT_BUFFER_BYTES);
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
    this.maxStreamBytes = options.maxStreamBytes ?? DEFAULT_MAX_STREAM_BYTES;
    if (!(this.maxEventBytes >= 1)) throw new TypeError('the event broker: the largest event must be at least 1 byte');
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? ((level, message, extra) => console[level === 'info' ? 'log' : level](`[svc events] ${message}`, extra ?? ''));
  }

  /** The stream key of a topic. */
  key(topic: string): string {
    return this.prefix + topic;
  }

  /**
   * The wire form of `event` on `topic`, its empty fields filled first (type =
   * topic, id, time, source, `traceId`): what {@link publish} would send. Throws
   * `EVENT_TOO_LARGE` (413, counted in `refused` and logged, at most once per
   * 10 s, with its topic and size — never its content) when it is larger than
   * `maxEventBytes`, and a TypeError when its data cannot be written as JSON.
   * Called by `publish()` in a walker run, so that the run fails at once.
   */
  prepare(topic: string, event: Event, traceId?: string): string {
    checkTopic(topic);
    if (!(event instanceof Event)) throw new TypeError('publish(topic, new Event({ data }))');
    return this.encode(topic, event, traceId);
  }

  /** {@link prepare} without the checks of its arguments, and without keeping the text. */
  private encode(topic: string, event: Event, traceId: string | undefined): string {
    stamp(event, topic, { source: this.source, traceId });
    let payload: string;
    try {
      payload = encodeEvent(event);
    } catch {
      checkData(topic, event); // throws the clear error
      throw new TypeError(`publish('${topic}'): the event cannot be written as JSON`);
    }
    const over = bytesOver(payload, this.maxEventBytes);
    if (over > 0) this.refuse(topic, over);
    return payload;
  }

  private refuse(topic: string, bytes: number): never {
    this.counters.refused++;
    this.refusedSince++;
    const now = this.clock.now();
    if (now - this.refusalLoggedAt >= REFUSAL_LOG_MS) {
      this.log('warn', `an event of ${bytes} bytes published on ${topic} was refused: larger than max_event_bytes (${this.maxEventBytes})`, { broker: this.kind, topic, bytes, max_event_bytes: this.maxEventBytes, refused_since_last_line: this.refusedSince });
      this.refusalLoggedAt = now;
      this.refusedSince = 0;
    }
    throw new SvcError('EVENT_TOO_LARGE', `the event is ${bytes} bytes as CloudEvents JSON; events on this server are at most ${this.maxEventBytes} bytes ([scale.events] max_event_bytes): publish a reference to the data (a store() path, a document id) instead`, { status: 413, details: { topic, bytes, max_event_bytes: this.maxEventBytes } });
  }

  /**
   * Send `event` to `topic`, fire-and-forget. Fields left empty are filled
   * (type = topic, id, time, source, trace id). An event larger than
   * `maxEventBytes` is refused (`EVENT_TOO_LARGE`). While the streams cannot be
   * reached the event waits in a local buffer bounded by count and by bytes,
   * and is sent, in order, once they can. A no-op on a disabled broker. On
   * Redis it leaves at the next turn of the event loop, with the others of
   * its stream published meanwhile (see the file's comment); {@link flush}
   * resolves once they were appended or buffered.
   */
  publish(topic: string, event: Event, traceId?: string): void {
    checkTopic(topic);
    if (!(event instanceof Event)) throw new TypeError('publish(topic, new Event({ data }))');
    if (!this.streams) return;
    if (this.closed) {
      // A handler past the drain deadline, a late outbox: counted and said, never silent.
      this.counters.dropped++;
      if (!this.closedLogged) {
        this.closedLogged = true;
        this.log('error', `an event published on ${topic} after the broker closed was dropped (further ones are counted in dropped)`, { broker: this.kind });
      }
      return;
    }
    const payload = this.encode(topic, event, traceId);
    const stream = this.key(topic);
    // Behind its stream's batch on its way (which may yet fill the buffer): queued there, so the stream keeps its order.
    if (this.streams.addMany && this.outgoing.has(stream)) {
      this.queueOut(stream, payload);
      return;
    }
    // Behind a non-empty buffer: queued, so events leave in the order they were published.
    if (this.buffer.length > 0) {
      this.enqueue(stream, payload);
      return;
    }
    if (this.streams.addMany) {
      this.queueOut(stream, payload);
      return;
    }
    const sent = this.streams.add(stream, payload, this.maxLen, this.maxStreamBytes).then(
      () => {
        this.counters.published++;
      },
      (error: unknown) => {
        this.counters.publish_failures++;
        this.noteOutage(error);
        this.enqueue(stream, payload);
      },
    );
    this.sending.add(sent);
    void sent.finally(() => this.sending.delete(sent));
  }

  /** Queue `payload` for its stream's next batch; the batches of this turn leave at the next. */
  private queueOut(stream: string, payload: string): void {
    let out = this.outgoing.get(stream);
    if (out === undefined) {
      out = { payloads: [], head: 0, busy: false, queued: 0, settled: 0 };
      this.outgoing.set(stream, out);
    }
    out.payloads.push(payload);
    out.queued++;
    if (!out.busy && !this.turnScheduled) {
      this.turnScheduled = true;
      setImmediate(this.sendTurn);
    }
  }

  /** Send a batch of every stream that has events waiting and none on its way. */
  private readonly sendTurn = (): void => {
    this.turnScheduled = false;
    for (const [stream, out] of this.outgoing) if (!out.busy && out.head < out.payloads.length) this.sendBatch(stream, out);
  };

  /** Send the oldest events waiting for `stream` (up to a batch's bounds); the rest follow once it is answered. */
  private sendBatch(stream: string, out: Outgoing): void {
    const streams = this.streams as StreamBackend & Required<Pick<StreamBackend, 'addMany'>>;
    const { payloads, head } = out;
    let end = head;
    let chars = 0;
    while (end < payloads.length && end - head < BATCH_EVENTS) {
      const size = (payloads[end] as string).length;
      if (end > head && chars + size > BATCH_CHARS) break;
      chars += size;
      end++;
    }
    let batch: string[];
    if (head === 0 && end === payloads.length) {
      batch = payloads;
      out.payloads = [];
      out.head = 0;
    } else {
      batch = payloads.slice(head, end);
      out.head = end;
      // What was sent is dropped from the front now and then (not at every batch: each would copy the rest).
      if (end === payloads.length) {
        out.payloads = [];
        out.head = 0;
      } else if (end >= 4096 && end * 2 >= payloads.length) {
        out.payloads = payloads.slice(end);
        out.head = 0;
      }
    }
    out.busy = true;
    const answered = (): void => {
      out.busy = false;
      out.settled += batch.length;
      // A failure filled the buffer: what waited behind the batch goes there too, after it (order).
      if (this.buffer.length > 0 && out.head < out.payloads.length) {
        const behind = out.payloads.slice(out.head);
        out.payloads = [];
        out.head = 0;
        out.settled += behind.length;
        for (const p of behind) this.enqueue(stream, p);
      }
      if (out.head < out.payloads.length) this.sendBatch(stream, out);
      else this.outgoing.delete(stream);
    };
    const sent = streams.addMany(stream, batch, this.maxLen, this.maxStreamBytes).then(
      ({ ids, error }) => {
        this.counters.published += ids.length;
        if (error !== undefined || ids.length < batch.length) this.unsent(stream, ids.length === 0 ? batch : batch.slice(ids.length), error);
        answered();
      },
      (error: unknown) => {
        this.unsent(stream, batch, error);
        answered();
      },
    );
    this.sending.add(sent);
    void sent.then(() => this.sending.delete(sent));
  }

  /** Events a batch did not append: failures, kept in the buffer in order. */
  private unsent(stream: string, payloads: readonly string[], error: unknown): void {
    this.counters.publish_failures += payloads.length;
    this.noteOutage(error ?? new Error('the streams appended only part of a batch'));
    for (const p of payloads) this.enqueue(stream, p);
  }

  /** Append now and wait for it (dead letters, tests); rejects when the streams cannot be reached. */
  async append(topic: string, event: Event, traceId?: string): Promise<string> {
    checkTopic(topic);
    if (!this.streams) return '';
    stamp(event, topic, { source: this.source, traceId });
    const id = await this.streams.add(this.key(topic), encodeEvent(event), this.maxLen, this.maxStreamBytes);
    this.counters.published++;
    return id;
  }

  private noteOutage(error: unknown): void {
    if (this.outage) return;
    this.outage = true;
    this.log('warn', 'the event streams cannot be reached: published events wait in a local buffer', { broker: this.kind, err: error instanceof Error ? error.message : String(error) });
  }

  /**
   * Keep an event until the streams can be reached, as UTF-8 bytes (what it
   * costs in memory, whatever its characters), within `bufferLimit` events and
   * the byte budget; past either it is dropped, counted and said once per outage.
   */
  private enqueue(stream: string, payload: string): void {
    // A send that failed after the broker closed: nothing would send it, or give its bytes back.
    if (this.closed) {
      this.counters.dropped++;
      return;
    }
    const bytes = Buffer.from(payload);
    if (this.buffer.length >= this.bufferLimit || !this.budget.take(bytes.length)) {
      this.counters.dropped++;
      if (!this.overflowLogged) {
        this.overflowLogged = true;
        this.log('error', `the local event buffer is full (${this.buffer.length} events, ${this.counters.buffered_bytes} bytes; at most ${this.bufferLimit} events and ${this.budget.limit} bytes per process): events published from now on are dropped until the streams can be reached`, { broker: this.kind });
      }
      return;
    }
    this.buffer.push({ stream, bytes });
    this.counters.buffered = this.buffer.length;
    this.counters.buffered_bytes += bytes.length;
    this.scheduleFlush();
  }

  /** The oldest buffered event has been sent (or given up at close): its bytes go back to the budget. */
  private unbuffer(): void {
    const item = this.buffer.shift();
    if (!item) return;
    this.budget.give(item.bytes.length);
    this.counters.buffered = this.buffer.length;
    this.counters.buffered_bytes -= item.bytes.length;
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== undefined || this.flushing || this.closed) return;
    this.flushTimer = this.clock.setTimeout(() => {
      this.flushTimer = undefined;
      void this.flush();
    }, this.flushDelayMs, true);
  }

  /**
   * Wait for what was published before (appended, or in the buffer), then send
   * what the buffer holds, in order, until one fails (then again later, with
   * backoff). Resolves to how many are left.
   */
  async flush(): Promise<number> {
    // The events waiting for a batch: sent now rather than at the next turn; waited for, not what is published meanwhile.
    const marks = [...this.outgoing.values()].map((out) => [out, out.queued] as const);
    this.sendTurn();
    do await Promise.allSettled([...this.sending]);
    while (this.sending.size > 0 && marks.some(([out, queued]) => out.settled < queued));
    if (this.flushing || !this.streams) return this.buffer.length;
    this.flushing = true;
    let sent = 0;
    try {
      while (this.buffer.length > 0 && !this.closed) {
        const item = this.buffer[0] as Buffered;
        try {
          await this.streams.add(item.stream, item.bytes.toString('utf8'), this.maxLen, this.maxStreamBytes);
        } catch (error) {
          this.counters.publish_failures++;
          this.noteOutage(error);
          this.flushDelayMs = Math.min(this.flushDelayMs * 2, 5_000);
          return this.buffer.length;
        }
        this.unbuffer();
        this.counters.published++;
        sent++;
      }
      if (sent > 0 || this.outage) {
        this.log('info', `the event streams can be reached again: ${sent} buffered event${sent === 1 ? '' : 's'} sent`, { broker: this.kind, dropped: this.counters.dropped });
      }
      this.outage = false;
      this.overflowLogged = false;
      this.flushDelayMs = 250;
      return 0;
    } finally {
      this.flushing = false;
      if (this.buffer.length > 0) this.scheduleFlush();
    }
  }

  /** Make `group` on `topic`'s stream unless it exists (`startFrom` applies only then). */
  ensureGroup(topic: string, group: string, startFrom: StartFrom = 'latest'): Promise<boolean> {
    if (!this.streams) return Promise.resolve(false);
    const key = `${group}\u0000${topic}`;
    let made = this.groups.get(key);
    if (!made) {
      made = this.streams.ensureGroup(this.key(topic), group, startFrom);
      this.groups.set(key, made);
      // A failure is not remembered: the next call tries again.
      made.catch(() => this.groups.delete(key));
    }
    return made;
  }

  /** Forget which groups exist (the streams were found without them: Redis restarted empty). */
  forgetGroups(): void {
    this.groups.clear();
  }

  /** An event from a stream entry, with its delivery fields. */
  delivered(entry: StreamEntry, topic: string, group: string): Event {
    const event = decodeEvent(entry.payload);
    event.deliveryId = entry.id;
    event.deliveryTopic = topic;
    event.deliveryGroup = group;
    this.counters.delivered++;
    return event;
  }

  /**
   * Pull up to `maxMessages` events of `topic`, waiting up to
   * `timeoutSeconds` for at least one. Each must be acknowledged with
   * {@link ack}, or it is delivered again once the visibility timeout has
   * passed. `startFrom` applies when the consumer group is first made.
   */
  async consume(topic: string, maxMessages = 1, timeoutSeconds = 0, startFrom: StartFrom = 'latest', group = this.group): Promise<Event[]> {
    checkTopic(topic);
    if (!this.streams || this.closed) return [];
    try {
      return await this.pull(topic, maxMessages, timeoutSeconds, startFrom, group);
    } catch (error) {
      if (!noGroup(error)) throw error;
      // The group is gone (Redis restarted empty): made again from the start of what the stream holds now.
      this.groups.delete(`${group}\u0000${topic}`);
      await this.ensureGroup(topic, group, '0');
      return this.pull(topic, maxMessages, timeoutSeconds, startFrom, group);
    }
  }

  private async pull(topic: string, maxMessages: number, timeoutSeconds: number, startFrom: StartFrom, group: string): Promise<Event[]> {
    const streams = this.streams as StreamBackend;
    const count = Math.max(1, Math.floor(maxMessages));
    await this.ensureGroup(topic, group, startFrom);
    const stream = this.key(topic);
    const consumer = `${this.consumerName}/pull`;
    let entries: StreamEntry[] = [];
    // Entries left unacknowledged past the visibility timeout come back; looked for once per half timeout (a claim scans).
    const claimKey = `${group}\u0000${topic}`;
    const now = this.clock.now();
    if (now - (this.pullClaims.get(claimKey) ?? -Infinity) >= this.visibilityMs / 2) {
      this.pullClaims.set(claimKey, now);
      entries = await streams.claim(stream, group, consumer, this.visibilityMs, count);
    }
    if (entries.length === 0) entries = await streams.read(stream, group, consumer, count, Math.max(0, timeoutSeconds * 1000));
    const events: Event[] = [];
    for (const entry of entries) {
      try {
        events.push(this.delivered(entry, topic, group));
      } catch (error) {
        await this.deadLetter(topic, group, entry, `undecodable: ${(error as Error).message}`, 0);
      }
    }
    return events;
  }

  /** Acknowledge a delivered event: it is not delivered again. Resolves whether it was still pending. */
  async ack(event: Event): Promise<boolean> {
    if (!this.streams) return false;
    if (!(event instanceof Event) || !event.deliveryId || !event.deliveryTopic || !event.deliveryGroup) throw new TypeError('ack(event) takes an event a consumer received');
    try {
      return (await this.streams.ack(this.key(event.deliveryTopic), event.deliveryGroup, [event.deliveryId])) > 0;
    } catch (error) {
      if (noGroup(error)) return false; // the group is gone, and with it what was pending
      throw error;
    }
  }

  /**
   * Send a failed entry to `<topic><suffix>` with its failure in the headers,
   * then acknowledge it. Rejects (leaving it pending) when the dead-letter
   * topic cannot be reached.
   */
  async deadLetter(topic: string, group: string, entry: StreamEntry, reason: string, attempts: number, event?: Event, suffix = this.retry.deadLetterSuffix): Promise<void> {
    const dead = event
      ? new Event({ data: event.data, eventType: event.eventType, traceId: event.traceId, id: event.id, source: event.source, time: event.time, headers: { ...event.headers } })
      : new Event({ data: entry.payload, eventType: `${topic}.undecodable` });
    Object.assign(dead.headers, {
      'svc-dlq-reason': reason.slice(0, 2000),
      'svc-dlq-topic': topic,
      'svc-dlq-group': group,
      'svc-dlq-attempts': String(attempts),
      'svc-dlq-entry': entry.id,
      'svc-dlq-time': new Date().toISOString(),
    });
    await this.append(`${topic}${suffix}`, dead);
    await this.streams?.ack(this.key(topic), group, [entry.id]);
    this.counters.dead_lettered++;
  }

  /** Topics with their stream length and groups (pending, lag), and each one's dead-letter size. */
  async topics(): Promise<{ topic: string; length: number; dead_letter: { topic: string; length: number }; groups: { name: string; pending: number; lag: number | null; consumers: number }[] }[]> {
    if (!this.streams) return [];
    const names = await this.streams.streams(this.prefix);
    const suffix = this.retry.deadLetterSuffix;
    const out = [];
    for (const topic of names) {
      if (suffix && topic.endsWith(suffix) && names.includes(topic.slice(0, -suffix.length))) continue;
      const info = await this.streams.info(this.key(topic));
      if (!info) continue;
      const dlq = suffix ? await this.streams.info(this.key(topic + suffix)) : undefined;
      out.push({ topic, length: info.length, dead_letter: { topic: topic + suffix, length: dlq?.length ?? 0 }, groups: info.groups });
    }
    return out;
  }

  /** Stop publishing (the buffer is tried once more) and release the streams. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.flushTimer !== undefined) this.clock.clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // Until nothing published is still waiting for its batch or on its way (what is published meanwhile too).
    do await this.flush().catch(() => undefined);
    while ([...this.outgoing.values()].some((out) => out.head < out.payloads.length || out.busy) || this.sending.size > 0);
    this.closed = true;
    if (this.buffer.length > 0) this.log('error', `${this.buffer.length} published event${this.buffer.length === 1 ? '' : 's'} could not be sent before the broker closed`, { broker: this.kind });
    // What is left is given up: its bytes go back to the process's budget (a --dev reload starts new brokers).
    while (this.buffer.length > 0) this.unbuffer();
    await this.streams?.close();
  }
}
