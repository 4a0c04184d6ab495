/**
 * The delivery loop of one subscription in one process, over the broker's
 * streams: its own pending entries first (a restarted process takes back what
 * it held), entries other consumers left pending past the visibility timeout,
 * then new ones; each handled up to `concurrency` at a time, retried with
 * backoff, dead-lettered after `max_attempts`, acknowledged once handled.
 * Apart from the broker (broker.ts) so each stays one job.
 */
import type { Clock, TimerHandle } from '../../kernel/index.ts';
import type { Broker, RetrySettings } from './broker.ts';
import { Event } from './event.ts';
import type { StartFrom, StreamBackend, StreamEntry } from './streams.ts';

/** Resolve after `ms` on `clock`, or at once when `stop` fires first. */
function sleep(clock: Clock, ms: number, stop?: { onStop(fn: () => void): () => void }): Promise<void> {
  return new Promise((resolve) => {
    let off = (): void => undefined;
    const handle = clock.setTimeout(() => {
      off();
      resolve();
    }, ms, true);
    if (stop) {
      off = stop.onStop(() => {
        clock.clearTimeout(handle);
        resolve();
      });
    }
  });
}

/** A subscription as the delivery loop runs it. */
export interface RunnerSpec {
  topic: string;
  group: string;
  startFrom: StartFrom;
  concurrency: number;
  retry: RetrySettings;
  /** Runs the app's handler for one delivery; a rejection is a failed try. */
  handle(event: Event): Promise<unknown>;
  /** Entries read per fetch (default 64). */
  batch?: number;
  /** Longest wait of one read for new entries (default 1 s; shorter keeps claims timely). */
  blockMs?: number;
  /**
   * The ids held, shared by the runners of one consumer across restarts: a
   * new runner does not take again what the one before it still holds.
   */
  held?: Set<string>;
}

/** A stop signal that sleeps and waits listen to. */
class StopSignal {
  stopped = false;
  private readonly fns = new Set<() => void>();
  onStop(fn: () => void): () => void {
    if (this.stopped) {
      fn();
      return () => undefined;
    }
    this.fns.add(fn);
    return () => this.fns.delete(fn);
  }
  fire(): void {
    this.stopped = true;
    for (const fn of [...this.fns]) fn();
    this.fns.clear();
  }
}

/**
 * The delivery loop of one subscription in one process. `run()` resolves
 * when stopped and rejects only on a fault of its own (the consumer actor
 * then crashes and its supervisor restarts it); a handler that throws is a
 * retry, the streams unreachable a pause.
 *
 * Entries are fetched ahead (up to 32 per unit of concurrency, at most 256)
 * and handled `concurrency` at a time; acknowledgements of handled entries
 * go out together (one `XACK` per turn of the event loop). Every entry held
 * (fetched, running, waiting for a retry, waiting for its ack) is touched
 * every third of the visibility timeout so no other consumer claims it.
 */
export class SubscriptionRunner {
  private readonly stop = new StopSignal();
  private readonly inHand: Set<string>;
  private readonly queue: StreamEntry[] = [];
  private inFlight = 0;
  private readonly slotWaiters = new Set<() => void>();
  private readonly idleWaiters = new Set<() => void>();
  private loop: Promise<void> | undefined;
  private touchTimer: TimerHandle | undefined;
  private outage = false;
  private acks: string[] = [];
  private ackFlush: Promise<void> | undefined;

  constructor(
    private readonly broker: Broker,
    readonly spec: RunnerSpec,
  ) {
    this.inHand = spec.held ?? new Set();
    // A stop ends the delivery loop's wait for a slot (one listener, not one per wait).
    this.stop.onStop(() => this.wakeSlots());
  }

  private get streams(): StreamBackend {
    return this.broker.streams as StreamBackend;
  }

  private get stream(): string {
    return this.broker.key(this.spec.topic);
  }

  /** Entries this runner holds (fetched, running, waiting for a retry or an ack). */
  get holding(): number {
    return this.inHand.size;
  }

  /** Start delivering; resolves once stopped. */
  run(): Promise<void> {
    this.loop ??= this.deliver();
    return this.loop;
  }

  private async deliver(): Promise<void> {
    if (!this.broker.streams) return;
    const { clock } = this.broker;
    const consumer = this.broker.consumerName;
    const prefetch = this.spec.batch ?? Math.min(256, this.spec.concurrency * 32);
    const touchEvery = Math.max(50, Math.floor(this.broker.visibilityMs / 3));
    const touch = (): void => {
      this.touchTimer = clock.setTimeout(() => {
        if (this.inHand.size > 0) void this.streams.touch(this.stream, this.spec.group, consumer, [...this.inHand]).catch(() => undefined);
        touch();
      }, touchEvery, true);
    };
    touch();
    // What this consumer held when it (or the process before it, same host and folder) stopped: first.
    let ownPending = true;
    let nextClaim = clock.now();
    const claimEvery = Math.max(50, Math.floor(this.broker.visibilityMs / 2));
    let needsGroup = true;
    let recovering = false;
    while (!this.stop.stopped) {
      if (this.queue.length > 0) {
        await this.slot();
        if (this.stop.stopped) break;
        this.start(this.queue.shift() as StreamEntry);
        continue;
      }
      let entries: StreamEntry[] = [];
      try {
        if (needsGroup) {
          // Made again after a failure (the streams restarted empty): from the start of what the stream holds now,
          // so events published meanwhile (buffered, then sent) are not skipped.
          await this.broker.ensureGroup(this.spec.topic, this.spec.group, recovering ? '0' : this.spec.startFrom);
          needsGroup = false;
        }
        if (ownPending) {
          entries = await this.streams.read(this.stream, this.spec.group, consumer, 100_000, 0, true);
          // Entries this runner holds already (a restarted actor: the process lives on) are not taken twice.
          entries = entries.filter((e) => !this.inHand.has(e.id));
          ownPending = false;
        } else if (clock.now() >= nextClaim) {
          nextClaim = clock.now() + claimEvery;
          entries = await this.streams.claim(this.stream, this.spec.group, consumer, this.broker.visibilityMs, prefetch);
          entries = entries.filter((e) => !this.inHand.has(e.id));
        }
        if (entries.length === 0) {
          const block = Math.max(1, Math.min(this.spec.blockMs ?? 1000, nextClaim - clock.now()));
          entries = await this.streams.read(this.stream, this.spec.group, consumer, prefetch, block);
        }
        if (this.outage) {
          this.outage = false;
          this.broker.log('info', `subscription ${this.spec.topic} (${this.spec.group}) reads again`);
        }
      } catch (error) {
        if (this.stop.stopped) break;
        if (!this.outage) {
          this.outage = true;
          this.broker.log('warn', `subscription ${this.spec.topic} (${this.spec.group}) cannot read its stream; trying again`, { err: (error as Error).message });
        }
        // The group may be gone (Redis restarted empty): made again before the next read.
        needsGroup = true;
        recovering = true;
        this.broker.forgetGroups();
        await sleep(clock, 1000, this.stop);
        continue;
      }
      // Stopped while the read was out: not taken (pending, they are read back at a restart or claimed).
      if (this.stop.stopped) break;
      for (const entry of entries) {
        this.inHand.add(entry.id);
        this.queue.push(entry);
      }
    }
  }

  /** Resolves once fewer than `concurrency` entries are in flight, or at stop. */
  private slot(): Promise<void> {
    if (this.inFlight < this.spec.concurrency || this.stop.stopped) return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.add(resolve));
  }

  /** Resolves once fewer than `concurrency` entries are in flight (the drain, after the stop: stop does not end this wait). */
  private freeSlot(): Promise<void> {
    if (this.inFlight < this.spec.concurrency) return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.add(resolve));
  }

  /** Wake whoever waits for a slot (they look again). */
  private wakeSlots(): void {
    // Resolvers: none runs (or waits again) before this returns.
    for (const wake of this.slotWaiters) wake();
    this.slotWaiters.clear();
  }

  private start(entry: StreamEntry): void {
    this.inFlight++;
    // Inline arrows, not a named closure: under tsx (keepNames) each named one costs a defineProperty per event.
    void this.handleEntry(entry).then(
      (acked) => this.ended(entry, acked),
      () => this.ended(entry, false),
    );
  }

  /** An entry's handling ended: it leaves the hand unless it waits for its ack; its slot is free. */
  private ended(entry: StreamEntry, acked: boolean): void {
    if (!acked) this.inHand.delete(entry.id);
    this.inFlight--;
    this.wakeSlots();
    if (this.inFlight === 0) for (const wake of [...this.idleWaiters]) wake();
  }

  /** Acknowledge with the others of this turn: one XACK for them all. */
  private ack(id: string): void {
    this.acks.push(id);
    if (this.acks.length === 1) setImmediate(() => void this.flushAcks());
  }

  private flushAcks(): Promise<void> {
    const prior = this.ackFlush ?? Promise.resolve();
    const flushed = prior.then(async () => {
      const ids = this.acks;
      if (ids.length === 0) return;
      this.acks = [];
      try {
        await this.streams.ack(this.stream, this.spec.group, ids);
      } catch (error) {
        this.broker.log('warn', `${ids.length} handled event${ids.length === 1 ? '' : 's'} of ${this.spec.topic} could not be acknowledged; they may be delivered again`, { err: (error as Error).message });
      } finally {
        for (const id of ids) this.inHand.delete(id);
      }
    });
    this.ackFlush = flushed;
    return flushed;
  }

  /** Handle one entry to its end: resolves whether it is waiting for its ack (then still held). */
  private async handleEntry(entry: StreamEntry): Promise<boolean> {
    const { topic, group, retry } = this.spec;
    const broker = this.broker;
    let event: Event;
    try {
      event = broker.delivered(entry, topic, group);
    } catch (error) {
      await broker.deadLetter(topic, group, entry, `undecodable: ${(error as Error).message}`, 0, undefined, retry.deadLetterSuffix).catch((e: unknown) => broker.log('error', `an undecodable entry of ${topic} could not be dead-lettered`, { err: (e as Error).message }));
      return false;
    }
    for (let attempt = 1; ; attempt++) {
      event.attempt = attempt;
      try {
        await this.spec.handle(event);
      } catch (error) {
        if (attempt >= retry.maxAttempts) {
          const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
          broker.log('warn', `event ${event.id} of ${topic} failed ${attempt} time${attempt === 1 ? '' : 's'}; sent to ${topic}${retry.deadLetterSuffix}`, { group, reason: reason.slice(0, 500), trace_id: event.traceId || undefined });
          await broker.deadLetter(topic, group, entry, reason, attempt, event, retry.deadLetterSuffix).catch((e: unknown) =>
            broker.log('error', `event ${event.id} of ${topic} could not be dead-lettered; it stays pending and comes back`, { err: (e as Error).message }),
          );
          return false;
        }
        if (this.stop.stopped) return false; // left pending: delivered again after a restart, or claimed
        broker.counters.retried++;
        const waits = retry.backoffSeconds;
        const seconds = waits.length === 0 ? 0 : (waits[Math.min(attempt - 1, waits.length - 1)] as number);
        await sleep(broker.clock, seconds * 1000, this.stop);
        if (this.stop.stopped) return false;
        continue;
      }
      broker.counters.handled++;
      this.ack(entry.id);
      return true;
    }
  }

  /**
   * Stop fetching; what was fetched already is handled (and acknowledged)
   * within `deadlineMs`. Entries waiting for a retry, or not started by the
   * deadline, stay pending: delivered again later. Resolves whether
   * everything fetched was handled in time.
   */
  async stopAndDrain(deadlineMs: number): Promise<boolean> {
    this.stop.fire();
    const { clock } = this.broker;
    const deadline = Date.now() + deadlineMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, deadlineMs));
    });
    const drained = (async (): Promise<true> => {
      while (this.queue.length > 0 && Date.now() < deadline) {
        await this.freeSlot();
        if (Date.now() >= deadline) break;
        this.start(this.queue.shift() as StreamEntry);
      }
      if (this.inFlight > 0) {
        await new Promise<void>((resolve) => {
          const done = (): void => {
            this.idleWaiters.delete(done);
            resolve();
          };
          this.idleWaiters.add(done);
        });
      }
      return true;
    })();
    const finished = await Promise.race([drained, late]);
    clearTimeout(timer);
    const left = this.queue.length;
    // Not started: no longer held here (pending in the group: read back at a restart, or claimed).
    for (const entry of this.queue.splice(0)) this.inHand.delete(entry.id);
    await this.flushAcks();
    if (this.touchTimer !== undefined) clock.clearTimeout(this.touchTimer);
    this.touchTimer = undefined;
    return finished && left === 0;
  }
}
