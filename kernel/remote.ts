/**
 * The bridge from one actor system to the other nodes (threads, processes)
 * its transport reaches: sending tells and asks to remote refs and to virtual
 * actors placed elsewhere, answering the ones that arrive, following a
 * virtual actor that moved, and watching nodes come up, leave and go down
 * (placements told, activations handed off, asks on a dead node failed).
 * The system keeps its local actors; it asks this bridge for anything beyond.
 */
import type { ActorCell } from './cell.ts';
import type { DeadLetters } from './dead-letters.ts';
import { decodeError, encodeError, kernelError, SvcError } from './errors.ts';
import { type Deadlines, PendingAsk } from './pending-ask.ts';
import type { Placement } from './placement.ts';
import type { ActorRef, RefAddress } from './refs.ts';
import type { Frame, FrameTarget, Transport, WireError } from './transport.ts';
import type { KindActivations } from './virtual.ts';

/** What the bridge needs from the system of local actors. */
export interface BridgeHost {
  readonly nodeId: string;
  readonly deadLetters: DeadLetters;
  readonly deadlines: Deadlines;
  readonly stopTimeoutMs: number;
  /** Virtual actor kinds defined here. */
  readonly kinds: ReadonlyMap<string, KindActivations>;
  /** The registered cell at a full path, if any. */
  cell(path: string): ActorCell | undefined;
  ownerOf(kind: string, key: string): string;
  refFromAddress(address: RefAddress): ActorRef;
  reportError(error: unknown, where: string): void;
  isShuttingDown(): boolean;
}

export class RemoteBridge {
  private transport: Transport | undefined;
  private askSeq = 0;
  /** Asks waiting on other nodes, by node then id. */
  private readonly remoteAsks = new Map<string, Map<number, PendingAsk>>();
  private readonly down = new Set<string>();
  private readonly nodeWatchers = new Set<(event: 'up' | 'down', node: string) => void>();
  /** Placements of the kinds defined here (told of nodes joining and leaving). */
  private readonly placements = new Set<Placement>();

  constructor(private readonly host: BridgeHost) {}

  /** Whether a transport is attached. */
  get attached(): boolean {
    return this.transport !== undefined;
  }

  attach(transport: Transport): void {
    if (this.transport) throw new Error('a transport is already attached');
    if (transport.nodeId !== this.host.nodeId) throw new Error(`transport node ${transport.nodeId} is not system node ${this.host.nodeId}`);
    this.transport = transport;
    transport.attach({
      onFrame: (from, frame) => this.onFrame(from, frame),
      onNodeDown: (node, error) => this.onNodeDown(node, error),
      onLinkLost: (node, error) => this.failPending(node, error, (target) => `the link to ${node} dropped before it replied to ${target}`),
      onNodeUp: (node) => this.onNodeUp(node),
      onNodeLeaving: (node) => this.nodeLeaving(node),
      onUndeliverable: (node, frame, error) => this.onUndeliverable(node, frame, error),
      refFromAddress: (address) => this.host.refFromAddress(address),
    });
  }

  nodes(): readonly string[] {
    return this.transport ? this.transport.nodes() : [this.host.nodeId];
  }

  /** The full id of a node given by a short name (`w1`), when the transport knows it. */
  resolve(node: string): string {
    return this.transport?.resolve?.(node) ?? node;
  }

  /** Tell a kind's placement of the nodes up now, and of those joining and leaving from now on. */
  addPlacement(placement: Placement): void {
    if (this.placements.has(placement)) return;
    this.placements.add(placement);
    for (const node of this.nodes()) if (!this.down.has(node)) placement.join(node);
  }

  /** A tell (`askTimeoutMs === null`) or an ask to an actor on `node`. */
  send(node: string, to: FrameTarget, msg: unknown, askTimeoutMs: number | null): boolean | Promise<unknown> {
    const printable = typeof to === 'string' ? `${node}:${to}` : `${node}:$${to[0]}/${to[1]}`;
    const transport = this.transport;
    if (askTimeoutMs === null) {
      if (transport && !this.down.has(node) && transport.send(node, { t: 1, to, msg })) return true;
      this.host.deadLetters.publish(printable, msg, 'node-down');
      return false;
    }
    const ask = new PendingAsk(printable);
    if (!transport || this.down.has(node)) {
      ask.reject(kernelError('SVC_ERR_NODE_DOWN', `${node} is not reachable`));
      return ask.promise;
    }
    // A virtual actor's ask can be sent again when the node answers that the actor moved.
    if (typeof to !== 'string') ask.resend = { to, msg, tries: 0 };
    this.host.deadlines.track(ask, askTimeoutMs);
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
    let owner = this.host.ownerOf(kind, key);
    const hint = (error.details as { owner?: unknown } | undefined)?.owner;
    if (owner === from && typeof hint === 'string') owner = this.resolve(hint);
    if (++route.tries > 3 || this.down.has(owner)) {
      ask.reject(decodeError(error));
      return;
    }
    if (owner === this.host.nodeId) {
      const activations = this.host.kinds.get(kind);
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
          this.host.reportError(error, typeof frame.to === 'string' ? frame.to : `$${frame.to[0]}/${frame.to[1]}`);
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
    const { nodeId, deadLetters } = this.host;
    if (typeof to !== 'string') {
      const activations = this.host.kinds.get(to[0]);
      if (activations) {
        // Ownership check: the sender's view of the members may be behind (or ahead of) this node's.
        const owner = activations.placement?.ownerOf(to[0], to[1]);
        if (owner !== undefined && owner !== nodeId && !this.down.has(owner) && !forwarded) {
          if (reply) {
            reply.reject(new SvcError('SVC_ERR_MOVED', `$${to[0]}/${to[1]} is hosted by ${owner}, not ${nodeId}`, { details: { owner } }));
          } else if (!this.transport?.send(owner, { t: 1, to, msg, fw: 1 })) {
            deadLetters.publish(`$${to[0]}/${to[1]}`, msg, 'node-down');
          }
          return;
        }
        activations.getOrActivate(to[1]).enqueue(msg, reply);
        return;
      }
      deadLetters.publish(`$${to[0]}/${to[1]}`, msg, 'no-such-actor');
      reply?.reject(kernelError('SVC_ERR_UNKNOWN_KIND', `no virtual actor kind ${to[0]} on ${nodeId}`));
      return;
    }
    const cell = this.host.cell(to);
    if (cell) {
      cell.enqueue(msg, reply);
      return;
    }
    deadLetters.publish(to, msg, 'no-such-actor');
    reply?.reject(kernelError('SVC_ERR_NO_SUCH_ACTOR', `no actor at ${nodeId}:${to}`));
  }

  /** @internal used by {@link RemoteReply}. */
  sendReply(node: string, frame: Frame): void {
    this.transport?.send(node, frame);
  }

  private onUndeliverable(node: string, frame: Frame, error: unknown): void {
    const cause = kernelError('SVC_ERR_TRANSPORT', `message could not be sent to ${node}: ${(error as Error)?.message ?? error}`, error);
    if (frame.t === 1) {
      const to = typeof frame.to === 'string' ? frame.to : `$${frame.to[0]}/${frame.to[1]}`;
      this.host.deadLetters.publish(`${node}:${to}`, frame.msg, 'unencodable');
    } else if (frame.t === 2) {
      this.remoteAsks.get(node)?.get(frame.id)?.reject(cause);
    }
  }

  /** See {@link ActorSystem.watchNodes}. */
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
        this.host.reportError(error, `watchNodes(${event} ${node})`);
      }
    }
  }

  private onNodeUp(node: string): void {
    this.down.delete(node);
    for (const placement of this.placements) placement.join(node);
    this.handOff();
    this.tellWatchers('up', node);
  }

  /** See {@link ActorSystem.nodeLeaving}. */
  nodeLeaving(node: string): void {
    for (const placement of this.placements) placement.leave(node);
    this.handOff();
  }

  /** After the members changed: stop the activations here that placement puts elsewhere now (their next message activates them there). */
  private handOff(): void {
    if (this.host.isShuttingDown()) return;
    for (const activations of this.host.kinds.values()) {
      const placement = activations.placement;
      if (!placement) continue;
      for (const [key, cell] of activations.entries()) {
        const owner = placement.ownerOf(activations.kind, key);
        if (owner !== undefined && owner !== this.host.nodeId) void cell.stopGracefully(this.host.stopTimeoutMs);
      }
    }
  }

  private onNodeDown(node: string, error?: unknown): void {
    this.down.add(node);
    for (const placement of this.placements) placement.leave(node);
    this.tellWatchers('down', node);
    this.failPending(node, error, (target) => `${node} went down before replying to ${target}`);
  }

  /** Fail every ask waiting on a reply from `node`: with `error` when given, else `SVC_ERR_NODE_DOWN` saying `why`. */
  private failPending(node: string, error: unknown, why: (target: string) => string): void {
    const pending = this.remoteAsks.get(node);
    this.remoteAsks.delete(node);
    if (!pending) return;
    for (const ask of [...pending.values()]) {
      ask.reject(error ?? kernelError('SVC_ERR_NODE_DOWN', why(ask.target)));
    }
  }

  /** Close the transport, if any. */
  close(): Promise<void> {
    return this.transport?.close() ?? Promise.resolve();
  }
}

/** The reply slot of an ask that came from another node. */
class RemoteReply {
  constructor(
    private readonly bridge: RemoteBridge,
    private readonly node: string,
    private readonly id: number,
  ) {}
  resolve(value: unknown): void {
    this.bridge.sendReply(this.node, { t: 3, id: this.id, ok: true, value });
  }
  reject(error: unknown): void {
    this.bridge.sendReply(this.node, { t: 3, id: this.id, ok: false, error: encodeError(error) });
  }
}
