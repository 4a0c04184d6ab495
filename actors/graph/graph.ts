/**
 * The graph of an app in one thread: partition actors (one virtual actor per
 * root, placed on one thread of the process), the store, the registry. Any
 * thread can spawn a walker for any root; the request travels to the
 * partition that owns the root.
 */
import { type ActivationLease, type ActorSystem, type Placement, processOf, type VirtualRef, workerPlacement } from '../../kernel/index.ts';
import { channel } from 'node:diagnostics_channel';
import { type Caller, type ConnectionInfo, graphError, HookRefusal, hookRefusal, type HookRun, isAnchorId, newId, type OutboxConsumer, type Registry, Root, type SocketEffects, type WalkerLoggerFactory } from '../walker/index.ts';
import { decode } from './codec.ts';
import { storeError } from './errors.ts';
import { type FunctionResult, Partition, type PartitionContext, type PartitionMsg, type RunReply, type WalkerResult } from './partition.ts';
import type { AnchorStore } from './store.ts';

export interface GraphOptions {
  system: ActorSystem;
  registry: Registry;
  store: AnchorStore;
  /** Virtual actor kind name (default `partition`). */
  kind?: string;
  /** Deactivate a partition after this long idle (default 5 min). */
  idleAfterMs?: number;
  /** Waiting requests a partition admits before answering 503 (default 1,024). */
  mailboxCapacity?: number;
  /** Which thread hosts a root (default: rendezvous hashing over the worker threads, {@link workerPlacement}). */
  placement?: Placement | ((root: string, nodes: readonly string[]) => string);
  /** One partition per root across the threads of the process even while a root moves (see the kernel's `ActivationLease`). */
  lease?: ActivationLease;
  /** Told about every document moved to quarantine (default: a warning on stderr). */
  onQuarantine?: (id: string, reason: string) => void;
  /** Default timeout of a walker request (default 30 s). */
  timeoutMs?: number;
  /** A run that takes longer is abandoned, its changes dropped, its partition restarted (default 25 s). */
  runTimeoutMs?: number;
  /**
   * Ownership fencing, for processes sharing a store (default off): a
   * partition claims its root (`store.claim`) before it loads it, and every
   * batch it commits carries the token. Once another process has claimed the
   * root, a commit is refused with `SVC_ERR_FENCED` (503, nothing stored) and
   * the partition stops; the next request claims again and reloads.
   */
  fenced?: boolean;
  /**
   * Asked before a partition handles any message (default none): an error
   * answers that message, and the partition stops after answering (its
   * memory is no longer trusted) — e.g. while this process is not a member
   * of its cluster. Asked as well before a request is sent to any partition,
   * here or in another process: an error answers it at once (a process
   * that is not a member must not count on the others to answer it).
   */
  guard?: () => Error | undefined;
  /**
   * Until when (a `Date.now()` instant) this process may write the roots it
   * claims — a cluster member's lease (default: no end). Fenced batches carry
   * it, and a store refuses one that reaches the database later
   * (`SVC_ERR_FENCED`): a batch that waited while its process was paused is
   * never written after others may have taken its root over.
   */
  fenceUntil?: () => number;
  /** A fenced partition of this thread claimed its root (publish it: other processes drop their copy). */
  onClaim?: (rootId: string) => void;
  /**
   * Makes the logger of each walker and function that logs (`this.log`,
   * `ctx.log`) from its bindings — `walker` or `function`, `trace_id`,
   * `root`; called only when one logs. Default: lines go nowhere.
   *
   * @example
   * new Graph({ system, registry, store, logger: (bindings) => pinoLogger.child(bindings) });
   */
  logger?: WalkerLoggerFactory;
  /**
   * Takes the outbox of each committed run (what its code held back with
   * `afterCommit`), once the run's batch is durable and before its caller
   * hears back; never for a run that failed or a batch that was refused.
   * Without it, runs hold no outbox (`afterCommit` answers `false`). A
   * consumer that throws is reported through `logger`; the run stays committed.
   *
   * @example
   * new Graph({ system, registry, store, outbox: (entries) => entries.forEach((e) => events.emit(e.kind, e)) });
   */
  outbox?: OutboxConsumer;
}

export interface SpawnOptions {
  caller: Caller;
  /** Spawn at this node instead of the caller's root. */
  at?: string;
  timeoutMs?: number;
  /** The request's trace id, carried into the run: `this.traceId`, `ctx.traceId`, log lines, outbox entries. */
  traceId?: string;
  /** The HTTP request's id: the run's log lines carry it (`req_id`). */
  requestId?: string;
  /** The request's `Authorization` header, for the run's service-to-service calls to forward. */
  authorization?: string;
  /** A service-to-service call (`X-Svc-Sv`): the answer is the whole `data` object, class names kept. */
  sv?: true;
  /** The WebSocket connection whose frame started the run: its walker may join rooms (`this.join`), and what it asks rides back in the reply's `socket`. */
  conn?: ConnectionInfo;
  /**
   * Hook walkers to run first, in order, for the same caller, in the same
   * message to the partition ({@link HookDispatcher.plan}): the first that
   * refuses fails the call with its {@link HookRefusal}, and nothing after it runs.
   */
  hooks?: HookRun[];
}

/**
 * @example
 * const graph = new Graph({ system, registry: Registry.fromModule(app), store: new MemoryStore() });
 * const alice = Graph.newRootId();
 * const { reports } = await graph.spawn('CreateTodo', { title: 'milk' }, { caller: { rootId: alice } });
 */
export class Graph {
  readonly kind: string;
  readonly registry: Registry;
  readonly store: AnchorStore;
  private readonly system: ActorSystem;
  private readonly timeoutMs: number;
  private readonly guard: (() => Error | undefined) | undefined;
  /** Live partitions of this thread, by root. */
  private readonly activations = new Map<string, Partition>();
  private readonly context: PartitionContext;

  constructor(options: GraphOptions) {
    this.system = options.system;
    this.registry = options.registry;
    this.store = options.store;
    this.kind = options.kind ?? 'partition';
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.guard = options.guard;
    const onQuarantine = options.onQuarantine ?? ((id, reason) => console.warn(`[svc] anchor ${id} moved to quarantine: ${reason}`));
    if (options.fenced && !this.store.claim) throw storeError('SVC_ERR_STORE', `a ${this.store.kind} store cannot claim roots: a fenced graph needs one that can`);
    const context: PartitionContext = {
      registry: this.registry,
      store: this.store,
      partitionOf: (root: string) => this.partition(root),
      onQuarantine,
      runTimeoutMs: options.runTimeoutMs,
      activations: this.activations,
    };
    if (options.fenced) context.fenced = true;
    if (options.onClaim) context.onClaim = options.onClaim;
    if (options.guard) context.guard = options.guard;
    if (options.fenceUntil) context.fenceUntil = options.fenceUntil;
    if (options.logger) context.logger = options.logger;
    if (options.outbox) context.outbox = options.outbox;
    this.context = context;
    this.system.defineKind<PartitionMsg, unknown>(this.kind, {
      idleAfterMs: options.idleAfterMs ?? 300_000,
      placement: options.placement ?? workerPlacement(),
      ...(options.lease ? { lease: options.lease } : {}),
      props: (root) => ({
        capacity: options.mailboxCapacity ?? 1024,
        // Restarted after a crash; a partition that stops itself (fenced, guarded) stays stopped until its next message.
        restart: 'transient',
        logic: () => new Partition(root, context),
      }),
    });
  }

  /** Build a graph, merging the class-rename aliases kept in the store into the registry. */
  static async open(options: GraphOptions): Promise<Graph> {
    const graph = new Graph(options);
    for (const [from, to] of await options.store.aliases()) graph.registry.alias(from, to);
    return graph;
  }

  /** Documents stored as class `from` load as class `to` from now on (kept in the store). */
  async alias(from: string, to: string): Promise<void> {
    await this.store.addAlias(from, to);
    this.registry.alias(from, to);
  }

  /**
   * Move back every quarantined document that decodes now (after an alias
   * or a schema fix); resolves to the ids recovered and those still stuck.
   */
  async recoverAll(): Promise<{ recovered: string[]; remaining: { id: string; reason: string }[] }> {
    const recovered: string[] = [];
    const remaining: { id: string; reason: string }[] = [];
    for (const entry of await this.store.quarantined()) {
      const decoded = decode(entry, this.registry);
      if ('anchor' in decoded && (await this.store.restore(entry.id))) recovered.push(entry.id);
      else remaining.push({ id: entry.id, reason: 'quarantine' in decoded ? decoded.quarantine : entry.reason });
    }
    return { recovered, remaining };
  }

  /**
   * The registry's classes were replaced in place (`svc start --dev`): the
   * anchors resident in this thread's partitions take the new classes.
   *
   * @example
   * registry.replaceWith(next); graph.reclassResident();
   */
  reclassResident(): void {
    for (const partition of this.activations.values()) partition.reclassResident();
  }

  /**
   * Stop every partition of this thread now: what they hold in memory is
   * forgotten (this process lost its place in the cluster). Every request
   * they have — queued, waiting for the partition to start (for its lease),
   * or in a run, which then stores nothing — is answered with `reason`
   * (default `SVC_ERR_FENCED`) at once, not after the stop deadline; the
   * next message for a root activates a fresh partition. Resolves once all
   * have stopped.
   *
   * @example
   * membership.on('lost', () => void graph.dropActivations());
   */
  async dropActivations(reason: Error = storeError('SVC_ERR_FENCED', 'this process let go of the graphs it held; nothing was stored — retry')): Promise<void> {
    // First: a run that resumes while its partition is torn down must not commit.
    for (const partition of this.activations.values()) partition.abandon(reason);
    await this.system.stopActivations(this.kind, reason);
  }

  /** Create a root's graph now (its root node is stored when the partition starts). */
  async ensureRoot(rootId: string): Promise<void> {
    await this.ask(rootId, { t: 'touch' }, this.timeoutMs);
  }

  /** Ask a root's partition, wherever it lives; refused at once while the guard says so. */
  private ask(rootId: string, msg: PartitionMsg, timeoutMs: number): Promise<unknown> {
    // Read against the clock on every request: a process resumed after a pause refuses before any timer of its own has run.
    const refused = this.guard?.();
    if (refused !== undefined) {
      // As the partition would itself: what this thread holds of the root is no longer trusted.
      void this.activations.get(rootId)?.halt(refused);
      return Promise.reject(refused);
    }
    return this.partition(rootId).ask(msg, timeoutMs);
  }

  /**
   * Delete a root's graph (its user is deleted): every document it owns goes
   * from the store, and its partition runs nothing more. Edges of other roots
   * that reached its nodes are left; traversals skip what they no longer find.
   * Resolves to the number of documents deleted.
   */
  async dropRoot(rootId: string): Promise<number> {
    // The store may have to look through every document: far longer than a walker request.
    return (await this.ask(rootId, { t: 'drop' }, Math.max(this.timeoutMs, 600_000))) as number;
  }

  /** A fresh 32-hex-char root id. */
  static newRootId(): string {
    return newId();
  }

  /** The id of the shared guest graph. */
  static readonly SHARED_ROOT = Root.SHARED_ID;

  /** The partition actor of a root. */
  partition(root: string): VirtualRef<PartitionMsg, unknown> {
    return this.system.activate<PartitionMsg, unknown>(this.kind, root);
  }

  /**
   * Run a walker for `caller` (at its root, or at `at`); resolves once its
   * changes are durable, to what it reported.
   */
  async spawn(walker: string, fields: unknown, options: SpawnOptions): Promise<WalkerResult> {
    return { reports: JSON.parse((await this.spawnJson(walker, fields, options)).json) as unknown[] };
  }

  /** Like {@link spawn}, the reports as JSON text (what the HTTP front sends). */
  spawnJson(walker: string, fields: unknown, options: SpawnOptions): Promise<RunReply> {
    if (!this.registry.walker(walker)) return Promise.reject(graphError('SVC_ERR_UNKNOWN_WALKER', `no walker named ${walker}`));
    if (!isAnchorId(options.caller.rootId)) return Promise.reject(graphError('SVC_ERR_INVALID_FIELDS', 'a root id is 32 lower-case hex characters'));
    if (!options.hooks?.length && nestedDeeperThan(fields, MAX_DEPTH)) return Promise.reject(graphError('SVC_ERR_INVALID_FIELDS', `fields are nested more than ${MAX_DEPTH} levels deep`));
    const msg: PartitionMsg = { t: 'spawn', walker, fields, caller: options.caller };
    if (options.at !== undefined) msg.at = options.at;
    if (options.traceId !== undefined) msg.traceId = options.traceId;
    if (options.requestId !== undefined) msg.requestId = options.requestId;
    if (options.authorization !== undefined) msg.authorization = options.authorization;
    if (options.sv) msg.sv = true;
    if (options.conn !== undefined) msg.conn = options.conn;
    if (options.hooks !== undefined && options.hooks.length > 0) return this.askHooked(msg, options.hooks, options);
    return this.askRun(options.caller.rootId, msg, options.timeoutMs ?? this.timeoutMs);
  }

  /** Who sends the messages of committed runs of this thread's partitions that no WebSocket frame started (`this.sendTo`). */
  set sendOut(fn: ((sends: SocketEffects['sends']) => void) | undefined) {
    this.context.sendOut = fn;
  }

  /** A run and the hooks before it, in one ask; a refusal becomes the caller's {@link HookRefusal}. */
  private async askHooked(msg: PartitionMsg & { hooks?: HookRun[] }, hooks: HookRun[], options: SpawnOptions): Promise<RunReply> {
    for (const h of hooks) {
      if (!this.registry.walker(h.walker)) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no walker named ${h.walker}`);
      if (nestedDeeperThan(h.fields, MAX_DEPTH)) throw graphError('SVC_ERR_INVALID_FIELDS', `fields are nested more than ${MAX_DEPTH} levels deep`);
    }
    const own = msg.t === 'spawn' ? msg.fields : msg.t === 'call' ? msg.args : undefined;
    if (nestedDeeperThan(own, MAX_DEPTH)) {
      // Refused before it is sent: its hooks still run first, each alone, and a refusal of theirs is the answer.
      for (const h of hooks) {
        const { reports } = await this.spawn(h.walker, h.fields, { caller: options.caller, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }), ...(options.traceId === undefined ? {} : { traceId: options.traceId }) });
        const refused = hookRefusal(h.walker, reports);
        if (refused) throw refused;
      }
      throw graphError('SVC_ERR_INVALID_FIELDS', `${msg.t === 'spawn' ? 'fields' : 'arguments'} are nested more than ${MAX_DEPTH} levels deep`);
    }
    msg.hooks = hooks;
    const reply = await this.askRun(options.caller.rootId, msg, options.timeoutMs ?? this.timeoutMs);
    const r = reply.refusal;
    if (r !== undefined) throw new HookRefusal(r.hook, r.status, r.code, r.message, r.details === undefined ? undefined : JSON.parse(r.details));
    return reply;
  }

  /** A run's ask; one sent to another thread or cluster member is told on {@link FORWARD_CHANNEL} with its latency, while someone listens. */
  private askRun(rootId: string, msg: PartitionMsg, timeoutMs: number): Promise<RunReply> {
    const ask = this.ask(rootId, msg, timeoutMs) as Promise<RunReply>;
    // Served here (the common case): no placement hashing on the hot path.
    if (!forwards.hasSubscribers || this.system.activation(this.kind, rootId) !== undefined) return ask;
    const self = this.system.nodeId;
    const owner = this.system.ownerOf(this.kind, rootId);
    if (owner === self) return ask;
    const target = processOf(owner) === processOf(self) ? 'thread' : 'member';
    const started = performance.now();
    const tell = (ok: boolean) => forwards.publish({ target, ok, durationMs: performance.now() - started } satisfies ForwardEvent);
    ask.then(
      () => tell(true),
      () => tell(false),
    );
    return ask;
  }

  /** Call a function for `caller`; resolves to its return value. */
  async call(fn: string, args: unknown, options: SpawnOptions): Promise<FunctionResult> {
    return { result: JSON.parse((await this.callJson(fn, args, options)).json) as unknown };
  }

  /** Like {@link call}, the return value as JSON text. */
  callJson(fn: string, args: unknown, options: SpawnOptions): Promise<RunReply> {
    if (!this.registry.fn(fn)) return Promise.reject(graphError('SVC_ERR_UNKNOWN_WALKER', `no function named ${fn}`));
    if (!isAnchorId(options.caller.rootId)) return Promise.reject(graphError('SVC_ERR_INVALID_FIELDS', 'a root id is 32 lower-case hex characters'));
    if (!options.hooks?.length && nestedDeeperThan(args, MAX_DEPTH)) return Promise.reject(graphError('SVC_ERR_INVALID_FIELDS', `arguments are nested more than ${MAX_DEPTH} levels deep`));
    const msg: PartitionMsg = { t: 'call', fn, args, caller: options.caller };
    if (options.traceId !== undefined) msg.traceId = options.traceId;
    if (options.requestId !== undefined) msg.requestId = options.requestId;
    if (options.authorization !== undefined) msg.authorization = options.authorization;
    if (options.sv) msg.sv = true;
    if (options.hooks !== undefined && options.hooks.length > 0) return this.askHooked(msg, options.hooks, options);
    return this.askRun(options.caller.rootId, msg, options.timeoutMs ?? this.timeoutMs);
  }
}

/** A run asked of a partition on another thread of this process, or on another cluster member: how it went. */
export interface ForwardEvent {
  target: 'thread' | 'member';
  /** Answered (false: failed or timed out). */
  ok: boolean;
  /** From the ask to its answer. */
  durationMs: number;
}

/** The diagnostics channel of forwarded runs (metrics subscribe). */
export const FORWARD_CHANNEL = 'svc:graph:forward';
const forwards = channel(FORWARD_CHANNEL);

/** How deep request values may nest: deeper ones could not even be sent to another thread (the encoder recurses). */
const MAX_DEPTH = 64;

function nestedDeeperThan(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (depth === 0) return true;
  if (Array.isArray(value)) return value.some((v) => nestedDeeperThan(v, depth - 1));
  if (ArrayBuffer.isView(value)) return false;
  for (const k in value) if (nestedDeeperThan((value as Record<string, unknown>)[k], depth - 1)) return true;
  return false;
}
