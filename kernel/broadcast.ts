/**
 * One message to every member node: revocations, WebSocket broadcast relay,
 * per-thread statistics. Code publishes on a topic and subscribes to one; it
 * never loops over nodes itself. {@link ActorBroadcast} reaches the nodes of
 * one actor system's transport (the threads of a process); a cluster
 * implementation reaches other pods the same way.
 */
import { fromReceive } from './logic.ts';
import type { ActorSystem } from './system.ts';

/**
 * @example
 * const off = broadcast.subscribe('revoke', ({ userId, ms }) => table.set(userId, ms));
 * broadcast.publish('revoke', { userId, ms });                 // fire and forget, everywhere
 * const stats = await broadcast.gather('stats', {}, 5000);     // one answer per member that answered
 */
export interface Broadcast {
  /** To the subscribers of `topic` on every member, this one included. */
  publish(topic: string, msg: unknown): void;
  /** `fn` gets every message of `topic` and the node it came from; returns how to unsubscribe. */
  subscribe(topic: string, fn: (msg: unknown, from: string) => unknown): () => void;
  /**
   * Ask every member: each answers with what its (first) subscriber returned
   * (awaited). Resolves with the answers that came within `timeoutMs`, this
   * node's first; a member that is gone or has no subscriber answers nothing.
   */
  gather<R = unknown>(topic: string, msg: unknown, timeoutMs?: number): Promise<R[]>;
}

type Envelope = { topic: string; msg: unknown; from: string; ask?: boolean };

export interface ActorBroadcastOptions {
  /** The actor's name on every member (default `broadcast`). */
  name?: string;
  /** Which nodes are members (default: every node of the transport). */
  accepts?: (node: string) => boolean;
}

/** A broadcast over the transport of one actor system: an actor per member relays to its local subscribers. */
export class ActorBroadcast implements Broadcast {
  private readonly subscribers = new Map<string, Set<(msg: unknown, from: string) => unknown>>();
  private readonly path: string;
  private readonly accepts: (node: string) => boolean;

  constructor(
    private readonly system: ActorSystem,
    options: ActorBroadcastOptions = {},
  ) {
    const name = options.name ?? 'broadcast';
    this.path = `/user/${name}`;
    this.accepts = options.accepts ?? (() => true);
    system.spawn(
      fromReceive((e: Envelope) => (e.ask ? this.first(e.topic, e.msg, e.from) : void this.deliver(e.topic, e.msg, e.from)), { capacity: 100_000 }),
      name,
    );
  }

  /** The node list {@link others} was computed from (transports give a new list when it changes), and the answer. */
  private othersOf: readonly string[] | undefined;
  private othersNow: readonly string[] = [];

  /** The other members: computed again only when the node list changed (a publish is the hot path of room messages). */
  private others(): readonly string[] {
    const nodes = this.system.nodes();
    if (nodes !== this.othersOf) {
      const self = this.system.nodeId;
      this.othersNow = nodes.filter((n) => n !== self && this.accepts(n));
      this.othersOf = nodes;
    }
    return this.othersNow;
  }

  private deliver(topic: string, msg: unknown, from: string): void {
    const fns = this.subscribers.get(topic);
    if (!fns) return;
    for (const fn of fns) {
      try {
        const out = fn(msg, from);
        if (out instanceof Promise) out.catch((error: unknown) => console.error(`[svc broadcast] ${topic}:`, error));
      } catch (error) {
        console.error(`[svc broadcast] ${topic}:`, error);
      }
    }
  }

  private first(topic: string, msg: unknown, from: string): unknown {
    const fns = this.subscribers.get(topic);
    if (!fns || fns.size === 0) return undefined;
    return (fns.values().next().value as (msg: unknown, from: string) => unknown)(msg, from);
  }

  publish(topic: string, msg: unknown): void {
    const from = this.system.nodeId;
    this.deliver(topic, msg, from);
    for (const node of this.others()) this.system.refFromAddress({ node, path: this.path }).tell({ topic, msg, from } satisfies Envelope);
  }

  subscribe(topic: string, fn: (msg: unknown, from: string) => unknown): () => void {
    let fns = this.subscribers.get(topic);
    if (!fns) this.subscribers.set(topic, (fns = new Set()));
    fns.add(fn);
    return () => {
      fns.delete(fn);
    };
  }

  async gather<R = unknown>(topic: string, msg: unknown, timeoutMs = this.system.askTimeoutMs): Promise<R[]> {
    const from = this.system.nodeId;
    const answers = await Promise.allSettled([
      Promise.resolve().then(() => this.first(topic, msg, from)),
      ...this.others().map((node) => this.system.refFromAddress({ node, path: this.path }).ask({ topic, msg, from, ask: true } satisfies Envelope, timeoutMs)),
    ]);
    const out: R[] = [];
    for (const a of answers) if (a.status === 'fulfilled' && a.value !== undefined) out.push(a.value as R);
    return out;
  }
}
