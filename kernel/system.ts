/**
 * The actor system of one thread: guardians, the registry of names, dead
 * letters, virtual actor kinds, and — when a transport is attached — the
 * bridge to actors in other threads or processes.
 */
import { ActorCell, type CellHost } from './cell.ts';
import { LocalRef } from './context.ts';
import { type Clock, realClock } from './clock.ts';
import { DeadLetters } from './dead-letters.ts';
import { decodeError, encodeError, kernelError, SvcError } from './errors.ts';
import type { Props } from './logic.ts';
import { Deadlines, PendingAsk } from './pending-ask.ts';
import { ActorRefBase, type ActorRef, type RefAddress, type RefHost, RemoteRef, VirtualRef } from './refs.ts';
import type { SupervisorSpec } from './supervision.ts';
import type { Frame, FrameTarget, Transport, WireError } from './transport.ts';
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
  private transport: Transport | undefined;
  private askSeq = 0;
  /** Asks waiting on other nodes, by node then id. */
  private readonly remoteAsks = new Map<string, Map<number, PendingAsk>>();
  private down = new Set<string>();
  private readonly nodeWatchers = new Set<(event: 'up' | 'down', node: string) => void>();
  /** Placements of the kinds defined here (told of nodes joining and leaving). */
  private readonly placements = new Set<Placement>();
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
    };
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
      if (!this.placements.has(placement)) {
        this.placements.add(placement);
        for (const node of this.nodes()) if (!this.down.has(node)) placement.join(node);
      }
    }
    this.kinds.set(kind, new KindActivations(kind, spec as KindSpec, guardian, placement));
  }

  /** The node that hosts `(kind, key)` now (this one when the kind has no placement). */
  ownerOf(kind: string, key: string): string {
    const placement = this.kinds.get(kind)?.placement;
    return (placement && this.transport && placement.ownerOf(kind, key)) || this.nodeId;
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
    if (placement && this.transport) {
      const node = placement.ownerOf(kind, key);
      if (node !== undefined && node !== this.nodeId) return this.sendRemote(node, [kind, key], msg, askTimeoutMs);
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
    if (this.transport) throw new Error('a transport is already attached');
    if (transport.nodeId !== this.nodeId) throw new Error(`transport node ${transport.nodeId} is not system node ${this.nodeId}`);
    this.transport = transport;
    transport.attach({
      onFrame: (from, frame) => this.onFrame(from, frame),
      onNodeDown: (node) => this.onNodeDown(node),
      onNodeUp: (node) => this.onNodeUp(node),
      onNodeLeaving: (node) => this.nodeLeaving(node),
      onUndeliverable: (node, frame, error) => this.onUndeliverable(node, frame, error),
      refFromAddress: (address) => this.refFromAddress(address),
    });
  }

  /** Nodes reachable now (just this one without a transport). */
  nodes(): readonly string[] {
    return this.transport ? this.transport.nodes() : [this.nodeId];
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
    const node = this.transport?.resolve?.(address.node) ?? address.node;
    if (node === this.nodeId) {
      const cell = this.registry.get(address.path);
      return cell ? cell.ref : new PathRef(this, address.path);
    }
    return new RemoteRef(this, node, address.path);
  }

  /** @internal used by {@link RemoteRef} and {@link VirtualRef}. */
  sendRemote(node: string, to: FrameTarget, msg: unknown, askTimeoutMs: number | null): boolean | Promise<unknown> {
    const printable = typeof to === 'string' ? `${node}:${to}` : `${node}:$${to[0]}/${to[1]}`;
    const transport = this.transport;
    if (askTimeoutMs === null) {
      if (transport && !this.down.has(node) && transport.send(node, { t: 1, to, msg })) return true;
      this.deadLetters.publish(printable, msg, 'node-down');
      return false;
    }
    const ask = new PendingAsk(printable);
    if (!transport || this.down.has(node)) {
      ask.reject(kernelError('SVC_ERR_NODE_DOWN', `${node} is not reachable`));
      return ask.promise;
    }
    // A virtual actor's ask can be sent again when the node answers that the actor moved.
    if (typeof to !== 'string') ask.resend = { to, msg, tries: 0 };
    this.deadlines.track(ask, askTimeoutMs);
    this.sendAsk(transport, node, ask, to, msg);
    return ask.promise;
  }

  private sendAsk(transport: Transport, node: string, ask: PendingAsk, to: FrameTarget, msg: unknown): void {
    const id = ++this.askSeq;
    let pending = this.remoteAsks.get(node);
    if (!pending) this.remoteAsks.set(node, (pending = new Map()));
    const table = pending;
    table.set(id, ask);
    ask.onSettle = () => table.delete(id);
    if (!transport.send(node, { t: 2, id, to, msg })) {
      ask.reject(kernelError('SVC_ERR_NODE_DOWN', `${node} is not reachable`));
    }
  }

  /**
   * `from` says it does not host the virtual actor of `ask`: send it where
   * placement says now, or where `from` says it is when this node still
   * thinks `from` hosts it (its view of the members is behind). A few tries,
   * then the error stands (503, retryable).
   */
  private moved(from: string, id: number, ask: PendingAsk, error: WireError): void {
    const route = ask.resend as { to: [string, string]; msg: unknown; tries: number };
    this.remoteAsks.get(from)?.delete(id);
    ask.onSettle = undefined;
    const [kind, key] = route.to;
    let owner = this.ownerOf(kind, key);
    const hint = (error.details as { owner?: unknown } | undefined)?.owner;
    if (owner === from && typeof hint === 'string') owner = this.transport?.resolve?.(hint) ?? hint;
    if (++route.tries > 3 || this.down.has(owner)) {
      ask.reject(decodeError(error));
      return;
    }
    if (owner === this.nodeId) {
      const activations = this.kinds.get(kind);
      if (!activations) return ask.reject(kernelError('SVC_ERR_UNKNOWN_KIND', `no virtual actor kind ${kind}`));
      try {
        activations.getOrActivate(key).enqueue(route.msg, ask);
      } catch (e) {
        ask.reject(e);
      }
      return;
    }
    this.sendAsk(this.transport as Transport, owner, ask, route.to, route.msg);
  }

  private onFrame(from: string, frame: Frame): void {
    switch (frame.t) {
      case 1:
        try {
          if (typeof frame.to === 'string') this.deliverTarget(frame.to, frame.msg, undefined);
          else this.deliverTarget(frame.to, frame.msg, undefined, frame.fw === 1);
        } catch (error) {
          this.onError(error, typeof frame.to === 'string' ? frame.to : `$${frame.to[0]}/${frame.to[1]}`);
        }
        return;
      case 2: {
        const reply = new RemoteReply(this, from, frame.id);
        try {
          this.deliverTarget(frame.to, frame.msg, reply);
        } catch (error) {
          reply.reject(error);
        }
        return;
      }
      case 3: {
        const ask = this.remoteAsks.get(from)?.get(frame.id);
        if (!ask) return; // timed out already
        if (frame.ok) ask.resolve(frame.value);
        else if (frame.error.code === 'SVC_ERR_MOVED' && ask.resend) this.moved(from, frame.id, ask, frame.error);
        else ask.reject(decodeError(frame.error));
      }
    }
  }

  private deliverTarget(to: FrameTarget, msg: unknown, reply: RemoteReply | undefined, forwarded = false): void {
    if (typeof to !== 'string') {
      const activations = this.kinds.get(to[0]);
      if (activations) {
        // Ownership check: the sender's view of the members may be behind (or ahead of) this node's.
        const owner = activations.placement?.ownerOf(to[0], to[1]);
        if (owner !== undefined && owner !== this.nodeId && !this.down.has(owner) && !forwarded) {
          if (reply) {
            reply.reject(new SvcError('SVC_ERR_MOVED', `$${to[0]}/${to[1]} is hosted by ${owner}, not ${this.nodeId}`, { details: { owner } }));
          } else if (!this.transport?.send(owner, { t: 1, to, msg, fw: 1 })) {
            this.deadLetters.publish(`$${to[0]}/${to[1]}`, msg, 'node-down');
          }
          return;
        }
        activations.getOrActivate(to[1]).enqueue(msg, reply);
        return;
      }
      this.deadLetters.publish(`$${to[0]}/${to[1]}`, msg, 'no-such-actor');
      reply?.reject(kernelError('SVC_ERR_UNKNOWN_KIND', `no virtual actor kind ${to[0]} on ${this.nodeId}`));
      return;
    }
    const cell = this.registry.get(to);
    if (cell) {
      cell.enqueue(msg, reply);
      return;
    }
    this.deadLetters.publish(to, msg, 'no-such-actor');
    reply?.reject(kernelError('SVC_ERR_NO_SUCH_ACTOR', `no actor at ${this.nodeId}:${to}`));
  }

  /** @internal */
  sendReply(node: string, frame: Frame): void {
    this.transport?.send(node, frame);
  }

  private onUndeliverable(node: string, frame: Frame, error: unknown): void {
    const cause = kernelError('SVC_ERR_TRANSPORT', `message could not be sent to ${node}: ${(error as Error)?.message ?? error}`, error);
    if (frame.t === 1) {
      const to = typeof frame.to === 'string' ? frame.to : `$${frame.to[0]}/${frame.to[1]}`;
      this.deadLetters.publish(`${node}:${to}`, frame.msg, 'unencodable');
    } else if (frame.t === 2) {
      this.remoteAsks.get(node)?.get(frame.id)?.reject(cause);
    }
  }

  /**
   * Be told of nodes going down and coming up (this node included: a
   * replacement thread hears `up` for itself once the others count it in).
   *
   * @example
   * const stop = system.watchNodes((event, node) => log.info({ event, node }));
   */
  watchNodes(fn: (event: 'up' | 'down', node: string) => void): () => void {
    this.nodeWatchers.add(fn);
    return () => {
      this.nodeWatchers.delete(fn);
    };
  }

  private tellWatchers(event: 'up' | 'down', node: string): void {
    for (const fn of this.nodeWatchers) {
      try {
        fn(event, node);
      } catch (error) {
        this.onError(error, `watchNodes(${event} ${node})`);
      }
    }
  }

  private onNodeUp(node: string): void {
    this.down.delete(node);
    for (const placement of this.placements) placement.join(node);
    this.handOff();
    this.tellWatchers('up', node);
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
    for (const placement of this.placements) placement.leave(node);
    this.handOff();
  }

  /** After the members changed: stop the activations here that placement puts elsewhere now (their next message activates them there). */
  private handOff(): void {
    if (this.shuttingDown) return;
    for (const activations of this.kinds.values()) {
      const placement = activations.placement;
      if (!placement) continue;
      for (const [key, cell] of activations.entries()) {
        const owner = placement.ownerOf(activations.kind, key);
        if (owner !== undefined && owner !== this.nodeId) void cell.stopGracefully(this.stopTimeoutMs);
      }
    }
  }

  private onNodeDown(node: string): void {
    this.down.add(node);
    for (const placement of this.placements) placement.leave(node);
    this.tellWatchers('down', node);
    const pending = this.remoteAsks.get(node);
    this.remoteAsks.delete(node);
    if (!pending) return;
    for (const ask of [...pending.values()]) {
      ask.reject(kernelError('SVC_ERR_NODE_DOWN', `${node} went down before replying to ${ask.target}`));
    }
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
      await this.transport?.close();
    })();
    return this.shuttingDown;
  }

  /** Stop everything now: nothing more is processed. */
  destroy(): Promise<void> {
    return this.shutdown({ deadlineMs: 0 });
  }
}

/** The reply slot of an ask that came from another node. */
class RemoteReply {
  constructor(
    private readonly system: ActorSystem,
    private readonly node: string,
    private readonly id: number,
  ) {}
  resolve(value: unknown): void {
    this.system.sendReply(this.node, { t: 3, id: this.id, ok: true, value });
  }
  reject(error: unknown): void {
    this.system.sendReply(this.node, { t: 3, id: this.id, ok: false, error: encodeError(error) });
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
