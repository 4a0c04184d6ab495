/**
 * The partition actor: one per root (a user's graph, or the shared guest
 * graph), the single writer of the anchors that root owns. It holds them in
 * memory once loaded, runs walkers one at a time against them, and commits
 * each run's changes to the store in one atomic batch — changes made under a
 * grant to other roots' anchors included, version-checked — replying when
 * the batch is durable while the next run may already start (group commit).
 * Partitions never wait for one another: once a batch with other roots'
 * anchors is durable, their partitions are told to refresh them.
 *
 * Runs are pipelined, so a run may read changes whose batch is not durable
 * yet. The partition's batches form one {@link CommitChain}: when one fails,
 * the store refuses every later one, and a run that wrote nothing answers
 * only once the batches before it are durable — no acknowledged answer ever
 * rests on a change that was not stored. A failed batch poisons the
 * partition: it restarts and reloads from the store.
 *
 * A run's outbox (side effects it holds back with `afterCommit`) rides in
 * its changes and goes to the graph's outbox consumer once the batch is
 * durable — or, for a run that wrote nothing, once it may answer; a run or
 * batch that fails drops it.
 *
 * Fenced (a cluster of processes): an activation claims its root before it
 * loads anything, and every batch carries the token. A batch refused because
 * another process claimed the root since (`SVC_ERR_FENCED`) means this
 * memory is stale: the activation stops, and the next message starts a fresh
 * one that claims again and reloads.
 *
 * What it holds of its root, and the loading of it, is the base class
 * `PartitionMemory` (partition-memory.ts); what a caller gets of a run is
 * run-reply.ts; run deadlines are run-deadline.ts.
 */
import { type ActorContext, type ActorLogic, type ActorRef, hasCode, Later, Rejection, rejectWith, replyLater, SvcError } from '../../kernel/index.ts';
import { channel } from 'node:diagnostics_channel';
import {
  Anchor,
  type Caller,
  type ConnectionInfo,
  graphError,
  hookRefusal,
  isAnchorId,
  type HookRun,
  type OutboxConsumer,
  type OutboxEntry,
  privateAccess,
  type Registry,
  Root,
  type RunChanges,
  type SocketEffects,
  WalkerRun,
  type WalkerLoggerFactory,
  runTrackingWanted,
  untrackedRun,
} from '../walker/index.ts';
import { encode } from './codec.ts';
import { storeError } from './errors.ts';
import { PartitionMemory } from './partition-memory.ts';
import { RunTimeout, watchdog } from './run-deadline.ts';
import { asCallerError, reportJson, svReplyJson } from './run-reply.ts';
import { type AnchorStore, type CommitBatch, CommitChain, type Fence, type StoredDoc } from './store.ts';

/**
 * `next` with a run's reply once it has one: at once when the run answered in
 * this call; after it, when it answered later (a failure is the answer).
 */
function afterRun(out: unknown, next: (reply: RunReply) => unknown): unknown {
  if (out instanceof Rejection) return out;
  if (out instanceof Later) return out.promise.then((value) => afterRun(value, next), (error: unknown) => rejectWith(error));
  // A run that awaited (its deadline included): a rejection is a timed-out run, which restarts the partition as ever.
  if (isPromise(out)) return out.then((value) => afterRun(value, next));
  return next(out as RunReply);
}

/**
 * The version of the messages partitions take, part of the app's fingerprint (members that differ share no
 * partitions). 2: hooks travel with the run they guard (`hooks`), refusals come back as data.
 */
export const PARTITION_PROTOCOL = 2;

export type PartitionMsg =
  /** `hooks`: hook walkers to run first, each a run of its own for the same caller; the first refusal is the answer. */
  | { t: 'spawn'; walker: string; fields: unknown; at?: string; caller: Caller; traceId?: string; requestId?: string; authorization?: string; sv?: true; hooks?: HookRun[]; conn?: ConnectionInfo }
  | { t: 'call'; fn: string; args: unknown; caller: Caller; traceId?: string; requestId?: string; authorization?: string; sv?: true; hooks?: HookRun[] }
  /** Another root's run changed these anchors of this root (now durable): refresh them. */
  | { t: 'invalidate'; ids: string[]; edgeNodes: string[] }
  /** Make sure the partition (and its root) exists: a user's graph is created at registration. */
  | { t: 'touch' }
  /** The root's user is deleted: delete its graph from the store; the partition runs nothing more. */
  | { t: 'drop' }
  | { t: 'poisoned' };

export interface WalkerResult {
  reports: unknown[];
}

export interface FunctionResult {
  result: unknown;
}

/** What every partition of a thread shares. */
export interface PartitionContext {
  registry: Registry;
  store: AnchorStore;
  /** The partition of another root. */
  partitionOf(root: string): ActorRef<PartitionMsg, unknown>;
  onQuarantine(id: string, reason: string): void;
  /** A run that takes longer is abandoned and the partition restarts (default 25 s). */
  runTimeoutMs?: number;
  /** Claim the root at activation and fence every batch with the token (the store must have `claim`). */
  fenced?: boolean;
  /** Asked before every message: an error answers it, and the activation stops (its memory is no longer trusted). */
  guard?: () => Error | undefined;
  /** Until when (a `Date.now()` instant) this process may write the roots it claimed: every batch's fence carries it. */
  fenceUntil?: () => number;
  /** A fenced activation claimed its root (the others may drop what they hold of it). */
  onClaim?: (rootId: string) => void;
  /** The live activations of the thread, by root (kept by the partitions themselves). */
  activations?: Map<string, Partition>;
  /** Makes the loggers of walkers and functions (`this.log`); none: they log nowhere. */
  logger?: WalkerLoggerFactory;
  /** Takes each committed run's outbox once its batch is durable; none: runs hold no outbox. */
  outbox?: OutboxConsumer;
  /** Sends the messages of a committed run not started by a WebSocket frame (`this.sendTo`), once its batch is durable. */
  sendOut?: (sends: SocketEffects['sends']) => void;
}

/** What a run answers: its reports (walkers) or return value (functions), as JSON text. */
export interface RunReply {
  json: string;
  /** What a run started by a WebSocket frame asks of connections (rooms to join and leave, messages), for its session to apply. */
  socket?: SocketEffects;
  /** A hook refused the run (which did not run): `json` is then empty. */
  refusal?: HookRefusalData;
}

/** A hook's refusal as data (it crosses threads and members): the graph turns it back into a `HookRefusal`. */
export interface HookRefusalData {
  hook: string;
  status: number;
  code: string;
  message: string;
  /** The refusal's details as JSON text. */
  details?: string;
}

/** How one walker or function run went, on the {@link RUN_CHANNEL} diagnostics channel (published only while subscribed). */
export interface RunEvent {
  kind: 'walker' | 'function';
  name: string;
  /** Committed and answered (false: the run failed, or its batch was refused). */
  ok: boolean;
  /** From the partition taking the run up to its answer (the commit included). */
  durationMs: number;
}

/** The diagnostics channel of walker and function runs (metrics subscribe). */
export const RUN_CHANNEL = 'svc:walker:run';
const runs = channel(RUN_CHANNEL);

export class Partition extends PartitionMemory implements ActorLogic<PartitionMsg, unknown> {
  private poisoned: unknown = undefined;
  /** Why this activation stops: every message from now on is answered with it. */
  private halted: Error | undefined = undefined;
  private ctx: ActorContext<PartitionMsg> | undefined;
  /** The owner token batches carry (fenced graphs only). */
  private fence: Fence | undefined;
  /** This incarnation's batches, in order: one failure refuses the rest. */
  private readonly chain = new CommitChain();
  /** Batches handed to the store and not settled yet, and the last of them. */
  private unsettled = 0;
  private lastBatch: Promise<unknown> | null = null;

  /**
   * The root is not in memory yet: the first message loads it (with the node
   * its run starts at, in the same read), not the start of the activation,
   * which cannot see that message.
   */
  private unloaded = true;

  async preStart(ctx: ActorContext<PartitionMsg>): Promise<void> {
    this.ctx = ctx;
    this.context.activations?.set(this.rootId, this);
    if (this.context.guard !== undefined) {
      // Refused already: claim nothing (that would fence the root's rightful owner) and load nothing;
      // the first message is answered with the refusal, and stops this activation.
      this.halted = this.context.guard();
      if (this.halted !== undefined) return;
    }
    if (!this.context.fenced) return;
    try {
      // Claim first, then load (on the first message): a batch of the previous owner is refused from the claim on,
      // so what loads next is final.
      const claim = this.context.store.claim?.bind(this.context.store);
      if (!claim) throw storeError('SVC_ERR_STORE', `a ${this.context.store.kind} store cannot claim roots`);
      this.fence = { root: this.rootId, token: await claim(this.rootId) };
      this.context.onClaim?.(this.rootId);
    } catch (error) {
      // The database cannot be reached: every message is answered so (503, retry), and the next one activates afresh.
      if (!hasCode(error, 'SVC_ERR_STORE_UNAVAILABLE')) throw error;
      this.halted = error as SvcError;
    }
  }

  /**
   * Load the root, and `at` (the node a run starts at) in the same read; store the root when it is new. A failure
   * crashes this activation (its asker gets the error; the next message loads afresh), except an outage, which
   * answers this message and the queued ones so (503, retry).
   */
  private async loadFor(msg: PartitionMsg): Promise<unknown> {
    const at = msg.t === 'spawn' ? msg.at : undefined;
    try {
      await this.load(at !== undefined && at !== this.rootId && isAnchorId(at) ? at : undefined);
    } catch (error) {
      if (!hasCode(error, 'SVC_ERR_STORE_UNAVAILABLE')) throw error;
      return this.refuse(error as SvcError);
    }
    this.unloaded = false;
    // The message waited for the read: the checks it had on arrival, again.
    return this.stepRefusal() ?? this.handle(msg);
  }

  /** Load the root (and `at`), and store the root when it is new. */
  private async load(at: string | undefined): Promise<void> {
    const found = await this.fetch(at === undefined ? [this.rootId] : [this.rootId, at]);
    if (found.get(this.rootId)) return;
    const root = new Anchor(this.rootId, 'node', Root, this.rootId, 0, privateAccess(), {}, [], undefined, undefined);
    root.home = this;
    const batch: CommitBatch = { upserts: [encode(root, this.registry.module, this.context.store.bodyForm)], deletes: [] };
    const fence = this.fenceNow();
    if (fence) batch.fence = fence;
    await this.context.store.commit(batch);
    root.version = 1;
    root.isNew = false;
    this.l1.set(root.id, root);
  }

  postStop(): void {
    if (this.context.activations?.get(this.rootId) === this) this.context.activations.delete(this.rootId);
  }

  receive(msg: PartitionMsg): unknown {
    if (this.halted !== undefined) return this.refuse(this.halted);
    if (this.context.guard !== undefined) {
      const refused = this.context.guard();
      if (refused !== undefined) return this.refuse(refused);
    }
    // Only a run (or a touch) needs the root: dropping needs nothing loaded, a dropped graph is never stored again,
    // and `invalidate` reads the root itself.
    if (this.unloaded && !this.dropped && (msg.t === 'spawn' || msg.t === 'call' || msg.t === 'touch')) return this.loadFor(msg);
    return this.handle(msg);
  }

  /** Answer with `reason` and stop. In this turn, not in a promise: a stop begun here must not abandon the answer. */
  private refuse(reason: Error): Rejection {
    void this.halt(reason);
    return rejectWith(reason);
  }

  /** The answer to `msg`: a value (or a Rejection / Later) when it could be had in this call, else a promise. */
  private handle(msg: PartitionMsg): unknown {
    // Dropping needs no memory, poisoned or not: it deletes what is stored.
    if (msg.t === 'drop') return this.dropped ? 0 : this.drop();
    if (this.poisoned !== undefined) throw this.poisoned; // restart: memory no longer matches the store
    if (this.dropped) return rejectWith(graphError('SVC_ERR_NODE_NOT_FOUND', 'this graph was deleted with its user'));
    switch (msg.t) {
      case 'poisoned':
        return undefined;
      case 'touch':
        return true;
      case 'invalidate':
        return this.invalidate(msg.ids, msg.edgeNodes);
      default:
        return msg.hooks !== undefined && msg.hooks.length > 0 ? this.hooked(msg, msg.hooks) : this.runOne(msg);
    }
  }

  private runOne(msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>): unknown {
    return runs.hasSubscribers ? this.timedRun(msg) : this.run(msg);
  }

  /**
   * Hooks, then the run they guard, in this one message: each hook is a run
   * of its own (answered, hence committed, before the next starts, as when
   * each was asked alone), in order; the first refusal or failure is the
   * answer and nothing after it runs. A hook that must wait (an ability that
   * awaits, or a batch to become durable) holds this partition's next
   * messages meanwhile: the walker then runs in the same turn.
   */
  private hooked(msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>, hooks: readonly HookRun[]): unknown {
    // One deadline for the hooks and the run together, as for the one ask that waits for them: a run that
    // starts later gets what is left of it, and none starts once it is spent (its caller has stopped waiting).
    const budget = this.context.runTimeoutMs ?? 25_000;
    const due = Date.now() + budget;
    const step = (i: number): unknown => {
      if (i > 0) {
        // Later steps run after an await: the checks every message gets, again.
        const refused = this.stepRefusal();
        if (refused !== undefined) return refused;
        if (Date.now() >= due) return rejectWith(graphError('SVC_ERR_WALKER_TIMEOUT', `the hooks took the run's whole deadline (${budget} ms): it did not run`));
      }
      const last = i === hooks.length;
      // Read by the run's deadline as it starts (in this call); the next message's runs have their own.
      this.stepsDue = due;
      let out: unknown;
      try {
        out = last ? this.runOne({ ...msg, hooks: undefined } as typeof msg) : this.runOne(this.hookMsg(msg, hooks[i] as HookRun));
      } finally {
        this.stepsDue = undefined;
      }
      if (last) return out;
      const hook = hooks[i] as HookRun;
      return afterRun(out, (reply) => {
        const refused = hookRefusal(hook.walker, JSON.parse(reply.json) as unknown[]);
        if (refused === undefined) return step(i + 1);
        // The details as JSON text, as reports cross: any JSON a hook reported arrives intact.
        const refusal: HookRefusalData = { hook: hook.walker, status: refused.status, code: refused.code, message: refused.message };
        if (refused.details !== undefined) refusal.details = JSON.stringify(refused.details);
        return { json: '', refusal } satisfies RunReply;
      });
    };
    return step(0);
  }

  private hookMsg(msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>, hook: HookRun): Extract<PartitionMsg, { t: 'spawn' }> {
    const run: Extract<PartitionMsg, { t: 'spawn' }> = { t: 'spawn', walker: hook.walker, fields: hook.fields, caller: msg.caller };
    if (msg.traceId !== undefined) run.traceId = msg.traceId;
    if (msg.requestId !== undefined) run.requestId = msg.requestId;
    return run;
  }

  /** Why a message arriving now would be refused (what {@link receive} and {@link handle} check), if it would. */
  private stepRefusal(): Rejection | undefined {
    if (this.halted !== undefined) return this.refuse(this.halted);
    const refused = this.context.guard?.();
    if (refused !== undefined) return this.refuse(refused);
    if (this.poisoned !== undefined) return rejectWith(this.poisoned);
    if (this.dropped) return rejectWith(graphError('SVC_ERR_NODE_NOT_FOUND', 'this graph was deleted with its user'));
    return undefined;
  }

  /** The deadline of the hooked message under way: its runs end by it ({@link withDeadline}). */
  private stepsDue: number | undefined;

  /** A run, told on the `svc:walker:run` channel once its caller has the answer (committed, or failed). */
  private async timedRun(msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>): Promise<unknown> {
    const started = performance.now();
    const tell = (ok: boolean) =>
      runs.publish({ kind: msg.t === 'spawn' ? 'walker' : 'function', name: msg.t === 'spawn' ? msg.walker : msg.fn, ok, durationMs: performance.now() - started } satisfies RunEvent);
    let out: unknown;
    try {
      out = await this.run(msg);
    } catch (error) {
      tell(false);
      throw error;
    }
    if (out instanceof Rejection) tell(false);
    else if (out instanceof Later) out.promise.then(() => tell(true), () => tell(false));
    else tell(true);
    return out;
  }

  /**
   * A walker or function run. When it completes in this call (its abilities
   * all synchronous, its start node in memory) the answer is had without a
   * promise: no deadline is needed for code that cannot be interrupted anyway.
   */
  private run(msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>): unknown {
    if (msg.caller.rootId !== this.rootId) {
      return rejectWith(graphError('SVC_ERR_ACCESS_DENIED', 'a run reached the partition of another root'));
    }
    const run = new WalkerRun(this, msg.caller, msg.traceId, msg.requestId, msg.authorization);
    if (msg.t === 'spawn' && msg.conn !== undefined) run.connection = msg.conn;
    this.currentRun = run;
    let outcome: unknown;
    let untracked = false;
    let later: Promise<unknown> | undefined;
    try {
      // Runs are tracked (for `afterCommit`, `findNodes`) only where an outbox takes what they hold or app code asked: tracking costs every promise.
      run.holdsOutbox = this.context.outbox !== undefined;
      if (run.holdsOutbox || runTrackingWanted()) outcome = run.enter(() => start(run, msg));
      else {
        untrackedRun(1);
        untracked = true;
        outcome = start(run, msg);
      }
      if (isPromise(outcome)) later = outcome;
      // An operation an ability did not await lands before the run ends (as it would have, awaited).
      else if (run.hasUnsettledOps) {
        const value = outcome;
        later = run.whenOpsSettled().then(() => value);
      }
    } catch (error) {
      if (untracked) untrackedRun(-1);
      return this.failedRun(run, error);
    }
    if (later !== undefined) return this.finishLater(run, msg, later, untracked);
    if (untracked) untrackedRun(-1);
    return this.finish(run, msg, outcome);
  }

  /** A run that awaited: its deadline, then {@link finish}. */
  private async finishLater(run: WalkerRun, msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>, work: Promise<unknown>, untracked: boolean): Promise<unknown> {
    let outcome: unknown;
    try {
      outcome = await this.withDeadline(work);
      if (run.hasUnsettledOps) await this.withDeadline(run.whenOpsSettled());
    } catch (error) {
      return this.failedRun(run, error);
    } finally {
      if (untracked) untrackedRun(-1);
    }
    return this.finish(run, msg, outcome);
  }

  /** A run that failed: memory as it was, and the caller's error (a timed-out run restarts the partition). */
  private failedRun(run: WalkerRun, error: unknown): Rejection {
    run.rollback();
    this.currentRun = null;
    if (error instanceof RunTimeout) throw error; // the run may still be going: restart with clean memory
    return rejectWith(asCallerError(error));
  }

  /** A run's end: its reply, and its changes committed (the reply waits for them to be durable). */
  private finish(run: WalkerRun, msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>, outcome: unknown): unknown {
    let value: RunReply;
    let sends: SocketEffects['sends'] | undefined;
    let changes: RunChanges;
    let batch: { upserts: StoredDoc[]; deletes: { id: string; version: number }[] };
    try {
      value = { json: msg.sv ? svReplyJson(msg.t, outcome) : reportJson(outcome) };
      const fx = run.effects;
      if (fx !== undefined) {
        if (run.connection !== undefined) value.socket = fx;
        else if (fx.sends.length > 0) sends = fx.sends;
      }
      changes = run.changes();
      batch = {
        upserts: changes.upserts.map((a) => encode(a, this.registry.module, this.context.store.bodyForm)),
        deletes: changes.deletes.map((a) => ({ id: a.id, version: a.version })),
      };
    } catch (error) {
      return this.failedRun(run, error);
    }
    this.currentRun = null;
    if (batch.upserts.length === 0 && batch.deletes.length === 0) {
      run.committed(changes);
      const { outbox } = changes;
      // A batch that failed while this run went on may be what it read (memory is poisoned):
      // unbroken and nothing unsettled means every change it could have read is stored.
      if (this.chain.broken) return rejectWith(this.chain.refusal());
      if (this.unsettled === 0) {
        this.released(outbox, sends);
        return value;
      }
      // It may have read changes not durable yet: it answers once they are, and fails if they fail.
      const chain = this.chain;
      return replyLater(
        (this.lastBatch as Promise<unknown>).then(
          () => {
            this.released(outbox, sends);
            return value;
          },
          () => {
            throw chain.refusal();
          },
        ),
      );
    }
    // Stopping (its process let go of its graphs), or no longer allowed to serve (its cluster lease lapsed while the run
    // went on): nothing is stored, the caller hears why — the owner that takes the root over runs it again on a retry.
    const refused = this.halted ?? this.context.guard?.();
    if (refused !== undefined) {
      void this.halt(refused);
      return this.failedRun(run, refused);
    }
    // Memory moves on now; the caller hears back once the store has it.
    for (const a of changes.deletes) if (a.root === this.rootId) this.pendingDeletes.add(a.id);
    for (const a of changes.upserts) if (a.kind === 'edge' && a.isNew && a.root === this.rootId) this.pendingEdges.set(a.id, a);
    run.committed(changes);
    this.unsettled++;
    const commit: CommitBatch = { ...batch, chain: this.chain };
    const fence = this.fenceNow();
    if (fence) commit.fence = fence;
    const durable = this.context.store.commit(commit).then(
      () => {
        this.settle(changes);
        for (const [root, { ids, edgeNodes }] of changes.invalidate) {
          this.context.partitionOf(root).tell({ t: 'invalidate', ids: [...ids], edgeNodes: [...edgeNodes] });
        }
        // Durable now, and the caller has not heard back yet.
        this.released(changes.outbox, sends);
        return value;
      },
      (error: unknown) => {
        this.settle(changes);
        // Another process owns the root now: this memory is stale for good, a restart would only claim it back.
        // The database went away: whether the batch landed is unknown, so this memory is dropped, not trusted; the next message reloads.
        if (hasCode(error, 'SVC_ERR_FENCED') || hasCode(error, 'SVC_ERR_STORE_UNAVAILABLE')) void this.halt(error as SvcError);
        else this.poison(error);
        throw asCallerError(error);
      },
    );
    this.lastBatch = durable;
    return replyLater(durable);
  }

  /** A committed run's outbox and messages, once its changes are durable. */
  private released(outbox: readonly OutboxEntry[], sends: SocketEffects['sends'] | undefined): void {
    if (outbox.length > 0) this.release(outbox);
    if (sends === undefined) return;
    try {
      this.context.sendOut?.(sends);
    } catch (error) {
      this.context.logger?.({ root: this.rootId }).error({ err: error }, 'the messages of a committed run could not be sent');
    }
  }

  /**
   * Hand a committed run's outbox to the consumer. Its failure is reported,
   * never the partition's: the run is committed whatever the consumer does.
   */
  private release(entries: readonly OutboxEntry[]): void {
    const consumer = this.context.outbox;
    if (consumer === undefined) return;
    try {
      consumer(entries);
    } catch (error) {
      const fields = { err: error, entries: entries.length };
      const message = 'the outbox consumer failed: the entries of a committed run were not released';
      try {
        if (this.context.logger === undefined) throw error;
        this.context.logger({ root: this.rootId }).error(fields, message);
      } catch {
        console.error(`[svc] ${message}`, fields);
      }
    }
  }

  /** The graph was deleted: nothing runs here any more (until the partition deactivates). */
  private dropped = false;

  /** Delete the root's graph once the batches handed over are settled; memory goes with it. */
  private async drop(): Promise<number> {
    this.dropped = true;
    if (this.lastBatch) await this.lastBatch.catch(() => undefined);
    this.l1.clear();
    this.pendingEdges.clear();
    this.pendingDeletes.clear();
    try {
      return await this.context.store.deleteRoot(this.rootId);
    } catch (error) {
      throw storeError('SVC_ERR_STORE', `deleting the graph failed: ${(error as Error).message}`, { cause: error });
    }
  }

  /** When the run under way must end, and how to end it (the watchdog calls it). */
  runDue = 0;
  runMs = 0;
  expire: ((e: unknown) => void) | null = null;

  private withDeadline<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.runMs = this.context.runTimeoutMs ?? 25_000;
      this.runDue = Date.now() + this.runMs;
      // A run of a hooked message ends by the message's deadline.
      if (this.stepsDue !== undefined && this.stepsDue < this.runDue) {
        this.runMs = Math.max(0, this.stepsDue - Date.now());
        this.runDue = this.stepsDue;
      }
      this.expire = reject;
      watchdog.watch(this);
      work.then(
        (v) => {
          this.expire = null;
          resolve(v);
        },
        (e: unknown) => {
          this.expire = null;
          reject(e);
        },
      );
    });
  }

  /** A batch is durable (or failed): its ids leave the pending sets. */
  private settle(changes: RunChanges): void {
    if (--this.unsettled === 0) this.lastBatch = null; // nothing pending: do not hold the last reply
    for (const a of changes.deletes) this.pendingDeletes.delete(a.id);
    for (const a of changes.upserts) if (this.pendingEdges.get(a.id) === a) this.pendingEdges.delete(a.id);
  }

  private poison(error: unknown): void {
    if (this.poisoned !== undefined) return;
    this.poisoned = error;
    // Memory no longer matches the store: nothing built on it may be stored.
    this.chain.break(asCallerError(error));
    this.ctx?.self.tell({ t: 'poisoned' });
  }

  /**
   * Stop this activation for good (a fence refused its batch, its guard
   * failed, or the thread lets go of what it held): messages still queued
   * are answered with `reason`; the next message for the root activates a
   * fresh partition. Resolves once stopped.
   */
  halt(reason: Error): Promise<void> {
    this.halted ??= reason;
    // Only this incarnation: one that crashed and restarted meanwhile has loaded afresh.
    const current = this.context.activations === undefined || this.context.activations.get(this.rootId) === this;
    // At once: from now on a new message for the root goes to the next activation, not to this one.
    return this.ctx !== undefined && current ? this.ctx.stop() : Promise.resolve();
  }

  /** The fence a batch carries now: the claim's token, and until when this process may write (a store refuses it later). */
  private fenceNow(): Fence | undefined {
    const fence = this.fence;
    const until = this.context.fenceUntil;
    return fence === undefined || until === undefined ? fence : { ...fence, until: until() };
  }

  /**
   * This activation is being stopped by force (its thread lets go of every
   * graph it held): a run still under way stores nothing, its caller gets
   * `reason`.
   */
  abandon(reason: Error): void {
    this.halted ??= reason;
  }
}

/** Start the walker or function of a run message. */
function start(run: WalkerRun, msg: Extract<PartitionMsg, { t: 'spawn' } | { t: 'call' }>): unknown {
  return msg.t === 'spawn' ? run.spawnTop(msg.walker, msg.fields, msg.at) : run.callTop(msg.fn, msg.args);
}

function isPromise(value: unknown): value is Promise<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

