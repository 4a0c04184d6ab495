/**
 * Actor references. A ref is how anyone talks to an actor, wherever it runs:
 * in this thread ({@link LocalRef}), in another thread or process
 * ({@link RemoteRef}), or as a virtual actor found by kind and key
 * ({@link VirtualRef}). A ref can travel inside a message: transports encode
 * it by its {@link RefAddress} and the receiving system rebuilds it.
 */

/** Where a ref points: an actor path on a node, or a virtual actor. */
export type RefAddress = { node: string; path: string } | { kind: string; key: string };

/**
 * A handle to an actor.
 *
 * @example
 * ref.tell({ type: 'inc' })
 * const n = await ref.ask({ type: 'get' }, 1000)
 */
export interface ActorRef<M = unknown, R = unknown> {
  /** A printable address: `/user/a/b`, `w2:/user/a`, `$partition/alice`. */
  readonly path: string;
  /** Fire and forget. `false` when the message could not be queued here (full, stopped, node down). */
  tell(msg: M): boolean;
  /** Request/reply; rejects with `SVC_ERR_ASK_TIMEOUT` after `timeoutMs` (system default when omitted). */
  ask(msg: M, timeoutMs?: number): Promise<R>;
  /** The address transports use to carry this ref to another node. */
  address(): RefAddress;
}

/** What refs need from their system (kept narrow to avoid import cycles). */
export interface RefHost {
  readonly nodeId: string;
  sendRemote(node: string, to: string | [kind: string, key: string], msg: unknown, askTimeoutMs: number | null): boolean | Promise<unknown>;
  deliverVirtual(kind: string, key: string, msg: unknown, askTimeoutMs: number | null): boolean | Promise<unknown>;
  askTimeoutMs: number;
}

/** Base of every ref class, so codecs can recognise refs with one `instanceof`. */
export abstract class ActorRefBase<M = unknown, R = unknown> implements ActorRef<M, R> {
  abstract readonly path: string;
  abstract tell(msg: M): boolean;
  abstract ask(msg: M, timeoutMs?: number): Promise<R>;
  abstract address(): RefAddress;
  toString(): string {
    return `ActorRef(${this.path})`;
  }
  toJSON(): RefAddress {
    return this.address();
  }
}

/** A ref to an actor on another node (thread or process). */
export class RemoteRef<M = unknown, R = unknown> extends ActorRefBase<M, R> {
  constructor(
    private readonly host: RefHost,
    readonly node: string,
    readonly actorPath: string,
  ) {
    super();
  }
  get path(): string {
    return `${this.node}:${this.actorPath}`;
  }
  tell(msg: M): boolean {
    return this.host.sendRemote(this.node, this.actorPath, msg, null) as boolean;
  }
  ask(msg: M, timeoutMs?: number): Promise<R> {
    return this.host.sendRemote(this.node, this.actorPath, msg, timeoutMs ?? this.host.askTimeoutMs) as Promise<R>;
  }
  address(): RefAddress {
    return { node: this.node, path: this.actorPath };
  }
}

/**
 * A ref to a virtual actor: resolved to its single live activation at every
 * send (activated on first use, wherever placement puts it), so it never goes
 * stale when the activation is deactivated or moved.
 */
export class VirtualRef<M = unknown, R = unknown> extends ActorRefBase<M, R> {
  constructor(
    private readonly host: RefHost,
    readonly kind: string,
    readonly key: string,
  ) {
    super();
  }
  get path(): string {
    return `$${this.kind}/${this.key}`;
  }
  tell(msg: M): boolean {
    return this.host.deliverVirtual(this.kind, this.key, msg, null) as boolean;
  }
  ask(msg: M, timeoutMs?: number): Promise<R> {
    return this.host.deliverVirtual(this.kind, this.key, msg, timeoutMs ?? this.host.askTimeoutMs) as Promise<R>;
  }
  address(): RefAddress {
    return { kind: this.kind, key: this.key };
  }
}

/** True when `x` is an actor ref of any kind. */
export function isActorRef(x: unknown): x is ActorRef {
  return x instanceof ActorRefBase;
}
