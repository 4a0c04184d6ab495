/**
 * What an actor *does*, apart from how it runs: an {@link ActorLogic} is a
 * plain object with `receive`; the kernel's cell owns its mailbox, status and
 * supervision. {@link Props} say how to build and supervise one.
 */
import type { Clock } from './clock.ts';
import type { OverflowPolicy } from './mailbox.ts';
import type { ActorRef } from './refs.ts';
import type { RestartType, SupervisorSpec } from './supervision.ts';
import type { Timers } from './timers.ts';
import type { ActorSystem } from './system.ts';

/**
 * The behaviour of an actor. `receive` handles one message at a time; its
 * return value (awaited when a promise) answers an `ask`. Throwing crashes the
 * actor: the asker gets the error and the parent decides on a restart. To
 * answer an ask with an error *without* crashing, return {@link rejectWith}.
 *
 * @example
 * const counter: ActorLogic<'inc' | 'get', number> = {
 *   n: 0,
 *   receive(msg) { return msg === 'inc' ? ++this.n : this.n },
 * } as ActorLogic<'inc' | 'get', number> & { n: number }
 */
export interface ActorLogic<M = unknown, R = unknown> {
  preStart?(ctx: ActorContext<M>): void | Promise<void>;
  receive(msg: M, ctx: ActorContext<M>): R | Rejection | Later | Promise<R | Rejection | Later>;
  postStop?(ctx: ActorContext<M>): void | Promise<void>;
}

/** A reply that will come later, without holding the mailbox (see {@link replyLater}). */
export class Later {
  constructor(readonly promise: Promise<unknown>) {}
}

/**
 * Answer the current `ask` when `promise` settles, while the actor goes on
 * with its next message (a rejection fails the ask, it does not crash the
 * actor). For group commit: handle the request now, acknowledge when durable.
 *
 * @example
 * receive(msg) { apply(msg); return replyLater(store.flush()) }
 */
export function replyLater<R>(promise: Promise<R>): Later {
  return new Later(promise);
}

/** An error reply that does not crash the actor. */
export class Rejection {
  constructor(readonly error: unknown) {}
}

/**
 * Answer the current `ask` with an error, keeping the actor alive.
 *
 * @example
 * receive(msg) { if (!valid(msg)) return rejectWith(new SvcError('BAD', 'no')); ... }
 */
export function rejectWith(error: unknown): Rejection {
  return new Rejection(error);
}

/** The handle an actor has on its own runtime. */
export interface ActorContext<M = unknown> {
  readonly self: ActorRef<M>;
  readonly name: string;
  readonly path: string;
  readonly parent: ActorRef | undefined;
  readonly system: ActorSystem;
  readonly clock: Clock;
  /** Timers that send messages to this actor; cancelled when it stops or restarts. */
  readonly timers: Timers<M>;
  /** Start a supervised child. Children are stopped in reverse start order. */
  spawn<CM, CR>(props: Props<CM, CR>, name?: string): ActorRef<CM, CR>;
  /** Stop a child gracefully; without an argument, stop this actor (a normal exit). */
  stop(child?: ActorRef): Promise<void>;
  /** Live children in start order. */
  children(): ActorRef[];
}

/** How to create, house and supervise an actor. */
export interface Props<M = unknown, R = unknown> {
  /** A fresh behaviour for each incarnation (first start and every restart). */
  logic: () => ActorLogic<M, R>;
  /** Mailbox bound (default 1,024). */
  capacity?: number;
  /** What a full mailbox does (default `reject`). */
  overflow?: OverflowPolicy;
  /** How this actor's parent treats its exits (default `permanent`). */
  restart?: RestartType;
  /** How this actor supervises its own children. */
  supervision?: Partial<SupervisorSpec>;
  /** Messages handled before yielding to the event loop (default 256). */
  throughput?: number;
}

/** Props for a stateless actor written as a single function. */
export function fromReceive<M, R>(
  receive: (msg: M, ctx: ActorContext<M>) => R | Rejection | Later | Promise<R | Rejection | Later>,
  options: Omit<Props<M, R>, 'logic'> = {},
): Props<M, R> {
  return { ...options, logic: () => ({ receive }) };
}
