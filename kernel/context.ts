/**
 * The faces of a cell that others hold: {@link LocalRef} (anyone with the
 * address) and {@link IncarnationContext} (the logic of one incarnation).
 * A context goes dead when its incarnation ends, so an abandoned async
 * handler cannot arm timers or start children in a stopped or newer
 * incarnation.
 */
import type { ActorCell, CellStatus } from './cell.ts';
import type { Clock } from './clock.ts';
import { kernelError } from './errors.ts';
import type { ActorContext, Props } from './logic.ts';
import { ActorRefBase, type ActorRef, type RefAddress } from './refs.ts';
import type { ActorSystem } from './system.ts';
import type { Timers } from './timers.ts';

/**
 * A ref to an actor in this thread.
 *
 * @example
 * const ref = system.spawn(props, 'counter'); ref.tell('inc'); ref.mailboxSize
 */
export class LocalRef<M = unknown, R = unknown> extends ActorRefBase<M, R> {
  constructor(readonly cell: ActorCell<M, R>) {
    super();
  }
  get path(): string {
    return this.cell.path;
  }
  tell(msg: M): boolean {
    return this.cell.enqueue(msg, undefined);
  }
  ask(msg: M, timeoutMs?: number): Promise<R> {
    return this.cell.host.ask(this.cell as ActorCell, msg, timeoutMs) as Promise<R>;
  }
  address(): RefAddress {
    return { node: this.cell.host.nodeId, path: this.cell.path };
  }
  /** Messages waiting in the mailbox. */
  get mailboxSize(): number {
    return this.cell.mailbox.size;
  }
  get status(): CellStatus {
    return this.cell.status;
  }
  get isAlive(): boolean {
    return this.cell.status !== 'stopped';
  }
}

/** The context handed to one incarnation's logic. */
export class IncarnationContext<M> implements ActorContext<M> {
  /** Made on first use: most actors never arm a timer, and each activation would pay for it. */
  private timersFace: Timers<M> | undefined;

  constructor(
    private readonly cell: ActorCell<M>,
    private readonly epoch: number,
  ) {}

  /** The actor's timers, through this incarnation: arming one after it ended throws, and what it armed ends with it. */
  get timers(): Timers<M> {
    return (this.timersFace ??= new IncarnationTimers(this, this.cell));
  }

  /** True while this incarnation is the current one and the actor is not stopping. */
  get live(): boolean {
    const status = this.cell.status;
    return this.cell.currentEpoch === this.epoch && status !== 'stopping' && status !== 'stopped';
  }

  get self(): ActorRef<M> {
    return this.cell.ref;
  }
  get name(): string {
    return this.cell.name;
  }
  get path(): string {
    return this.cell.path;
  }
  get parent(): ActorRef | undefined {
    return this.cell.parentCell?.ref;
  }
  get system(): ActorSystem {
    return this.cell.host.system;
  }
  get clock(): Clock {
    return this.cell.host.clock;
  }

  spawn<CM, CR>(props: Props<CM, CR>, name?: string): ActorRef<CM, CR> {
    if (!this.live) throw kernelError('SVC_ERR_ACTOR_STOPPED', `${this.cell.path}: this incarnation has ended`);
    return this.cell.spawnCell(props, name).ref;
  }

  stop(child?: ActorRef): Promise<void> {
    return this.cell.stopFromContext(child);
  }

  children(): ActorRef[] {
    return this.cell.liveChildren();
  }
}

/** {@link IncarnationContext.timers}: the cell's timers, refused once the incarnation is over (a class: no closure per activation). */
class IncarnationTimers<M> implements Timers<M> {
  constructor(
    private readonly ctx: IncarnationContext<M>,
    private readonly cell: ActorCell<M>,
  ) {}

  private alive(): void {
    if (!this.ctx.live) throw kernelError('SVC_ERR_ACTOR_STOPPED', `${this.cell.path}: this incarnation has ended; its timers are gone`);
  }
  startSingle(key: string, msg: M, ms: number): void {
    this.alive();
    this.cell.timers.startSingle(key, msg, ms);
  }
  startPeriodic(key: string, msg: M, ms: number): void {
    this.alive();
    this.cell.timers.startPeriodic(key, msg, ms);
  }
  cancel(key: string): void {
    this.cell.timers.cancel(key);
  }
  isActive(key: string): boolean {
    return this.ctx.live && this.cell.timers.isActive(key);
  }
  get size(): number {
    return this.ctx.live ? this.cell.timers.size : 0;
  }
}
