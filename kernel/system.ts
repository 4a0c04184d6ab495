/**
 * The actor system of one thread: guardians, the registry of names, dead
 * letters, virtual actor kinds and observers. Actors in other threads or
 * processes are reached through its {@link RemoteBridge} once a transport is
 * attached.
 */
import { ActorCell, type CellHost } from './cell.ts';
import { LocalRef } from './context.ts';
import { type Clock, realClock } from './clock.ts';
import { DeadLetters } from './dead-letters.ts';
import { kernelError } from './errors.ts';
import type { Props } from './logic.ts';
import { type ActorLabel, type KernelObserver, Observers } from './observer.ts';
import { Deadlines, PendingAsk } from './pending-ask.ts';
import { ActorRefBase, type ActorRef, type RefAddress, type RefHost, RemoteRef, VirtualRef } from './refs.ts';
import { RemoteBridge } from './remote.ts';
import type { SupervisorSpec } from './supervision.ts';
import type { FrameTarget, Transport } from './transport.ts';
import { KindActivations, type KindSpec } from './virtual.ts';
import { FunctionPlacement, type Placement } from './placement.ts';

export interface SystemOptions {
  /** This node's id; taken from the transport when one is given (default `local`). */
  nodeId?: string;
  clock?: Clock;
  /** Default `ask` timeout (5,000 ms). */
  askTimeoutMs?: number;
  /** Default drain deadline when stopping an actor (5,000 ms). */
  stopTimeoutMs?: number;
  /** How the `/user` guardian supervises top-level actors. */
  guardian?: Partial<SupervisorSpec>;
  /**
   * A failure no supervisor took (a guardian gave up). Default: rethrown in a
   * macrotask, which crashes the process unless something handles it.
   */
  onFailure?: (error: unknown, path: string) => void;
  /** Errors that cannot crash anything (a throwing `postStop`). Default: `console.error`. */
  onError?: (error: unknown, path: string) => void;
  transport?: Transport;
  /**
   * Watch messages, restarts, full mailboxes and virtual actor activations
   * (several: an array). One that throws is reported once through `onError`.
   * The same events go to the `svc:kernel:*` diagnostics channels (`KERNEL_CHANNELS`).
   */
  observer?: KernelObserver | readonly KernelObserver[];
}

const guardianLogic = () => ({ receive: () => undefined });

/**
 * @example
 * const system = new ActorSystem()
 * const counter = system.spawn({ logic: () => new Counter() }, 'counter')
 * counter.tell({ type: 'inc' })
 * await counter.ask({ type: 'get' })   // 1
 * await system.shutdown()
 */
export class ActorSystem implements RefHost {
  readonly nodeId: string;
  readonly clock: Clock;
  readonly deadLetters: DeadLetters;
  readonly askTimeoutMs: number;
  readonly stopTimeoutMs: number;

  private readonly registry = new Map<string, ActorCell>();
  private readonly deadlines: Deadlines;
  private readonly userGuardian: ActorCell;
  private readonly kindsGuardian: ActorCell;
  private readonly kinds = new Map<string, KindActivations>();
  private readonly onFailure: (error: unknown, path: string) => void;
  private readonly onError: (error: unknown, path: string) => void;
  private readonly host: CellHost;
  private readonly remote: RemoteBridge;
  private shuttingDown: Promise<void> | null = null;

  constructor(options: SystemOptions = {}) {
    this.nodeId = options.transport?.nodeId ?? options.nodeId ?? 'local';
    this.clock = options.clock ?? realClock;
    this.askTimeoutMs = options.askTimeoutMs ?? 5000;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 5000;
    this.deadlines = new Deadlines(this.clock);
    this.onFailure =
      options.onFailure ??
      ((error) =>
        setTimeout(() => {
          throw error;
        }));
    this.onError = options.onError ?? ((error, path) => console.error(`[svc kernel] ${path}:`, error));
    this.deadLetters = new DeadLetters(
      () => this.clock.now(),
      (error) => this.onError(error, 'deadLetters'),
    );
    const system = this;
    const observers = new Observers(this.nodeId, options.observer, (error, where) => this.onError(error, where));
    this.host = {
      system,
      nodeId: this.nodeId,
      clock: this.clock,
      deadLetters: this.deadLetters,
      stopTimeoutMs: this.stopTimeoutMs,
      register: (cell) => this.registry.set(cell.path, cell),
      unregister: (cell) => {
        if (this.registry.get(cell.path) === cell) this.registry.delete(cell.path);
      },
      ask: (cell, msg, timeoutMs) => this.askCell(cell, msg, timeoutMs ?? this.askTimeoutMs),
      unhandledFailure: (error, path) => this.onFailure(error, path),
      reportError: (error, path) => this.onError(error, path),
      observers,
    };
    this.remote = new RemoteBridge({
      nodeId: this.nodeId,
      deadLetters: this.deadLetters,
      deadlines: this.deadlines,
      stopTimeoutMs: this.stopTimeoutMs,
      kinds: this.kinds,
      cell: (path) => this.registry.get(path),
      ownerOf: (kind, key) => this.ownerOf(kind, key),
      refFromAddress: (address) => this.refFromAddress(address),
      reportError: (error, where) => this.onError(error, where),
      isShuttingDown: () => this.shuttingDown !== null,
    });
    this.userGuardian = new ActorCell(this.host, null, 'user', { logic: guardianLogic, supervision: options.guardian });
    this.kindsGuardian = new ActorCell(this.host, null, 'kinds', { logic: guardianLogic });
    if (options.transport) this.attachTransport(options.transport);
  }

  // ---- local actors -------------------------------------------------------

  /**
   * Start a top-level actor under the `/user` guardian.
   *
   * @example
   * const ref = system.spawn(fromReceive((n: number) => n * 2), 'doubler')
   */
  spawn<M, R>(props: Props<M, R>, name?: string): LocalRef<M, R> {
    return this.userGuardian.spawnCell(props, name).ref;
  }

  /** Find a live actor by path (`/user/a/b`, or `a/b` relative to `/user`). */
  lookup<M = unknown, R = unknown>(path: string): LocalRef<M, R> | undefined {
    const full = path.startsWith('/') ? path : `/user/${path}`;
    const cell = this.registry.get(full);
    return cell && cell.status !== 'stopped' ? (cell.ref as unknown as LocalRef<M, R>) : undefined;
  }

  /** Stop an actor gracefully (its mailbox drained up to the deadline). */
  stop(ref: ActorRef, deadlineMs = this.stopTimeoutMs): Promise<void> {
    if (!(ref instanceof LocalRef)) return Promise.reject(new TypeError(`${ref.path} is not a local actor`));
    return ref.cell.stopGracefully(deadlineMs);
  }

  /**
   * The most messages each live actor's mailbox has held at once, by label
   * (the highest of the actors sharing one: every partition is `$partition`).
   */
  mailboxHighWater(): Map<ActorLabel, number> {
    const out = new Map<ActorLabel, number>();
    for (const cell of this.registry.values()) {
      const hw = cell.mailbox.highWater;
      if (hw > (out.get(cell.label) ?? 0)) out.set(cell.label, hw);
    }
    return out;
  }

  /** Number of live actors in this thread (guardians included). */
  get actorCount(): number {
    return this.registry.size;
  }

  private askCell(cell: ActorCell, msg: unknown, timeoutMs: number): Promise<unknown> {
    const ask = new PendingAsk(cell.path);
    this.deadlines.track(ask, timeoutMs);
    cell.enqueue(msg, ask);
    return ask.promise;
  }

  // ---- virtual actors ------------------------------------------------------

  /**
   * Declare a kind of virtual actor. Every node that may host or address the
   * kind declares it the same way.
   */
  defineKind<M, R>(kind: string, spec: KindSpec<M, R>): void {
    if (this.kinds.has(kind)) throw kernelError('SVC_ERR_NAME_TAKEN', `kind ${kind} is already defined`);
    // Activations are independent: each has its own restart limit, past which only it is stopped.
    const supervision: Partial<SupervisorSpec> = { scope: 'child', onLimit: 'stop-child', ...spec.supervision };
    const guardian = this.kindsGuardian.spawnCell({ logic: guardianLogic, supervision }, encodeURIComponent(kind));
    let placement: Placement | undefined;
    if (typeof spec.placement === 'function') placement = new FunctionPlacement(spec.placement, () => this.nodes());
    else if (spec.placement) {
      placement = spec.placement;
      this.remote.addPlacement(placement);
    }
    this.kinds.set(kind, new KindActivations(kind, spec as KindSpec, guardian, placement));
  }

  /** The node that hosts `(kind, key)` now (this one when the kind has no placement). */
  ownerOf(kind: string, key: string): string {
    const placement = this.kinds.get(kind)?.placement;
    return (placement && this.remote.attached && placement.ownerOf(kind, key)) || this.nodeId;
  }

  /**
   * A ref to the single live actor of `kind` for `key`, activated on first
   * message wherever placement puts it.
   *
   * @example
   * await system.activate<Msg, number>('counter', 'alice').ask({ type: 'get' })
   */
  activate<M = unknown, R = unknown>(kind: string, key: string): VirtualRef<M, R> {
    if (!this.kinds.has(kind)) throw kernelError('SVC_ERR_UNKNOWN_KIND', `no virtual actor kind ${kind}`);
    return new VirtualRef<M, R>(this, kind, key);
  }

  /** The live local activation of `(kind, key)`, if this node hosts one. */
  activation<M = unknown, R = unknown>(kind: string, key: string): LocalRef<M, R> | undefined {
    return this.kinds.get(kind)?.get(key)?.ref as LocalRef<M, R> | undefined;
  }

  /**
   * Stop every activation of `kind` in this thread at once — those running,
   * those still waiting to start (for a lease, say) and those stopping
   * gracefully: nothing more is processed, and every message they had
   * (queued, in a handler, waiting for the start) fails with `reason`. For a
   * thread that must let go of what it holds now (its process lost its
   * place in a cluster). The next message for a key activates it afresh.
   *
   * @example
   * await system.stopActivations('partition', new SvcError('SVC_ERR_NOT_MEMBER', 'lease lost', { status: 503 }));
   */
  stopActivations(kind: string, reason: Error): Promise<void> {
    return this.kinds.get(kind)?.destroyAll(reason) ?? Promise.resolve();
  }

  /** Live local activations of a kind. */
  activationCount(kind: string): number {
    return this.kinds.get(kind)?.size ?? 0;
  }

  /** @internal used by {@link VirtualRef}. Never throws: failures come back as `false` or a rejection. */
  deliverVirtual(kind: string, key: string, msg: unknown, askTimeoutMs: number | null): boolean | Promise<unknown> {
    const fail = (error: unknown): boolean | Promise<unknown> => {
      if (askTimeoutMs !== null) return Promise.reject(error);
      this.deadLetters.publish(`$${kind}/${key}`, msg, 'no-such-actor');
      return false;
    };
    if (this.shuttingDown) return fail(kernelError('SVC_ERR_SHUTDOWN', `the actor system of ${this.nodeId} is shutting down`));
    const activations = this.kinds.get(kind);
    if (!activations) return fail(kernelError('SVC_ERR_UNKNOWN_KIND', `no virtual actor kind ${kind}`));
    const placement = activations.placement;
    if (placement && this.remote.attached) {
      const node = placement.ownerOf(kind, key);
      if (node !== undefined && node !== this.nodeId) return this.remote.send(node, [kind, key], msg, askTimeoutMs);
    }
    let cell: ActorCell;
    try {
      cell = activations.getOrActivate(key);
    } catch (error) {
      return fail(error);
    }
    return askTimeoutMs === null ? cell.enqueue(msg, undefined) : this.askCell(cell, msg, askTimeoutMs);
  }

  // ---- other nodes ---------------------------------------------------------

  /** Connect this system to other threads or processes. */
  attachTransport(transport: Transport): void {
    this.remote.attach(transport);
  }

  /** Nodes reachable now (just this one without a transport). */
  nodes(): readonly string[] {
    return this.remote.nodes();
  }

  /**
   * A ref for an address that came from elsewhere (a message, a config).
   *
   * @example
   * const ref = system.refFromAddress({ node: 'w1', path: '/user/echo' })
   */
  refFromAddress(address: RefAddress): ActorRef {
    if ('kind' in address) return new VirtualRef(this, address.kind, address.key);
    // Short names (`w1`, `main`) stand for the node of that thread in this process.
    const node = this.remote.resolve(address.node);
    if (node === this.nodeId) {
      const cell = this.registry.get(address.path);
      return cell ? cell.ref : new PathRef(this, address.path);
    }
    return new RemoteRef(this, node, address.path);
  }

  /** @internal used by {@link RemoteRef} and {@link VirtualRef}. */
  sendRemote(node: string, to: FrameTarget, msg: unknown, askTimeoutMs: number | null): boolean | Promise<unknown> {
    return this.remote.send(node, to, msg, askTimeoutMs);
  }

  /**
   * Be told of nodes going down and coming up (this node included: a
   * replacement thread hears `up` for itself once the others count it in).
   *
   * @example
   * const stop = system.watchNodes((event, node) => log.info({ event, node }));
   */
  watchNodes(fn: (event: 'up' | 'down', node: string) => void): () => void {
    return this.remote.watchNodes(fn);
  }

  /**
   * `node` (this one or another) is leaving gracefully: placement stops giving
   * it actors and the activations it no longer owns hand off — here, once
   * they finished what they had queued — but it stays reachable: asks pending
   * on it are answered, and a message it gets for an actor placed elsewhere
   * now is answered `SVC_ERR_MOVED` (the sender tries the new owner). It
   * joins again only if it comes back up.
   *
   * @example
   * for (const node of myWorkers) system.nodeLeaving(node);   // a graceful stop of this process
   */
  nodeLeaving(node: string): void {
    this.remote.nodeLeaving(node);
  }

  // ---- shutdown ------------------------------------------------------------

  /**
   * Stop everything: top-level actors in reverse start order (each draining
   * its mailbox), then virtual actors, all within `deadlineMs`; past it,
   * whatever is left is stopped by force. Then the transport closes.
   */
  shutdown(options: { deadlineMs?: number } = {}): Promise<void> {
    if (this.shuttingDown) return this.shuttingDown;
    const deadlineMs = options.deadlineMs ?? this.stopTimeoutMs;
    const until = this.clock.now() + deadlineMs;
    const left = () => Math.max(0, until - this.clock.now());
    this.shuttingDown = (async () => {
      await this.userGuardian.stopGracefully(left());
      await this.kindsGuardian.stopGracefully(left());
      await this.remote.close();
    })();
    return this.shuttingDown;
  }

  /** Stop everything now: nothing more is processed. */
  destroy(): Promise<void> {
    return this.shutdown({ deadlineMs: 0 });
  }
}

/** A local path that had no live actor when the ref was built: looked up at each send. */
class PathRef extends ActorRefBase {
  constructor(
    private readonly system: ActorSystem,
    readonly path: string,
  ) {
    super();
  }
  private target(): LocalRef | undefined {
    return this.system.lookup(this.path);
  }
  tell(msg: unknown): boolean {
    const ref = this.target();
    if (ref) return ref.tell(msg);
    this.system.deadLetters.publish(this.path, msg, 'no-such-actor');
    return false;
  }
  ask(msg: unknown, timeoutMs?: number): Promise<unknown> {
    const ref = this.target();
    if (ref) return ref.ask(msg, timeoutMs);
    return Promise.reject(kernelError('SVC_ERR_NO_SUCH_ACTOR', `no actor at ${this.path}`));
  }
  address(): RefAddress {
    return { node: this.system.nodeId, path: this.path };
  }
}
