/**
 * The outbox of a walker run: side effects that must happen only if the run
 * commits (events a walker publishes). {@link afterCommit} adds an entry to
 * the run under way; the entries ride in the run's changes and the graph's
 * outbox consumer gets them once the batch is durable — never when the run
 * fails, throws, times out or its batch is refused. A nested walker that
 * fails takes its entries with it, like its graph changes.
 *
 * The run is found through an `AsyncLocalStorage`, entered once per run. On
 * Node 20 an enabled `AsyncLocalStorage` costs every promise of the process
 * (a promise hook), so runs enter it only on graphs that have an outbox
 * consumer, or once app code asked for it ({@link wantRunTracking}: a
 * `kvstore` handle, whose `findNodes` must know the run it is called from).
 * Elsewhere `afterCommit` answers `false` as outside a run.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** A side effect held until its run commits, stamped with the run's trace id and root. */
export interface OutboxEntry {
  /** What it is (`event`, …): the consumer dispatches on it. */
  readonly kind: string;
  /** Kept by reference: do not change it after handing it over. */
  readonly data: unknown;
  /** The trace id of the run (the request's), if it had one. */
  readonly traceId: string | undefined;
  /** The root whose partition ran the walker. */
  readonly rootId: string;
}

/**
 * Takes the entries of one committed run, once its batch is durable (before
 * its caller hears back). It should not throw; if it does, the partition
 * reports it and goes on.
 *
 * @example
 * new Graph({ system, registry, store, outbox: (entries) => { for (const e of entries) broker.publish(e) } });
 */
export type OutboxConsumer = (entries: readonly OutboxEntry[]) => void;

/** What the outbox needs of a run (implemented by `WalkerRun`). */
export interface OutboxRun {
  /** Add an entry unless the run has ended; whether it was taken. */
  addOutbox(kind: string, data: unknown): boolean;
  /** Whether the run is still under way. */
  readonly isOpen: boolean;
  /** Whether its graph has an outbox consumer (entries would be released). */
  readonly holdsOutbox: boolean;
  /** The trace id of the request that started the run. */
  readonly traceId?: string | undefined;
  /** The request's `Authorization` header, kept when the app calls other services. */
  readonly authorization?: string | undefined;
}

const runs = new AsyncLocalStorage<OutboxRun>();

let trackingWanted = false;
let untracked = 0;

/** From now on every run of this thread is tracked, outbox or not (idempotent). */
export function wantRunTracking(): void {
  trackingWanted = true;
}

/** Whether runs are to be tracked even without an outbox consumer. */
export function runTrackingWanted(): boolean {
  return trackingWanted;
}

/** Count an untracked run under way (the partition, around each untracked run): `-1` when it ends. */
export function untrackedRun(delta: 1 | -1): void {
  untracked += delta;
}

/**
 * The run whose code is calling: `{ run }` inside a tracked run (open or
 * ended), `{ run: undefined }` when surely outside any run, and `undefined`
 * when that cannot be told (untracked runs are under way in this thread).
 */
export function callingRun(): { run: OutboxRun | undefined } | undefined {
  const run = runs.getStore();
  if (run !== undefined) return { run };
  return untracked === 0 ? { run: undefined } : undefined;
}

/** Run `work` as the code of `run`: what it calls, and what that awaits, finds the run. Entered once per run. */
export function trackRun<T>(run: OutboxRun, work: () => T): T {
  return runs.run(run, work);
}

/**
 * Hold `entry` until the walker run under way commits; it is released to the
 * graph's outbox consumer once the run's changes are durable, and dropped if
 * the run fails. Resolves nothing: answers whether a run took it — `false`
 * outside a walker run, once the run has ended, or on a graph without an
 * outbox consumer (nothing would release it).
 *
 * @example
 * class Order extends Walker {
 *   @entry(Root) async place(here: Root) {
 *     const order = await here.connect(new Purchase({ item: this.item }));
 *     afterCommit({ kind: 'event', data: { topic: 'orders', id: order.id } }); // only if the purchase is stored
 *   }
 * }
 */
export function afterCommit(entry: { kind: string; data: unknown }): boolean {
  if (typeof entry !== 'object' || entry === null || typeof entry.kind !== 'string') {
    throw new TypeError('afterCommit() takes { kind: string, data }');
  }
  const run = runs.getStore();
  return run !== undefined && run.addOutbox(entry.kind, entry.data);
}

/**
 * Whether the caller runs inside a walker run under way whose graph has an
 * outbox consumer (where {@link afterCommit} holds entries).
 *
 * @example
 * if (!inWalkerRun()) await broker.publish(event); // no run to wait for
 */
export function inWalkerRun(): boolean {
  const run = runs.getStore();
  return run !== undefined && run.isOpen && run.holdsOutbox;
}
