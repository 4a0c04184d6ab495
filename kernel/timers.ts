/**
 * Timers owned by an actor: each sends a message to the actor itself, keyed
 * so a later start with the same key replaces the earlier one. They all die
 * with the actor (stop or restart).
 */
import type { Clock, TimerHandle } from './clock.ts';

/**
 * @example
 * preStart(ctx) { ctx.timers.startPeriodic('tick', { type: 'tick' }, 1000) }
 */
export interface Timers<M> {
  /** Send `msg` once after `ms`. */
  startSingle(key: string, msg: M, ms: number): void;
  /** Send `msg` every `ms`. */
  startPeriodic(key: string, msg: M, ms: number): void;
  cancel(key: string): void;
  isActive(key: string): boolean;
  /** Number of live timers. */
  readonly size: number;
}

export class ActorTimers<M> implements Timers<M> {
  private live = new Map<string, TimerHandle>();

  constructor(
    private readonly clock: Clock,
    private readonly deliver: (msg: M) => void,
  ) {}

  get size(): number {
    return this.live.size;
  }

  startSingle(key: string, msg: M, ms: number): void {
    this.cancel(key);
    this.live.set(
      key,
      this.clock.setTimeout(() => {
        this.live.delete(key);
        this.deliver(msg);
      }, ms),
    );
  }

  startPeriodic(key: string, msg: M, ms: number): void {
    this.cancel(key);
    const fire = (): void => {
      this.live.set(key, this.clock.setTimeout(fire, ms));
      this.deliver(msg);
    };
    this.live.set(key, this.clock.setTimeout(fire, ms));
  }

  cancel(key: string): void {
    const handle = this.live.get(key);
    if (handle === undefined) return;
    this.clock.clearTimeout(handle);
    this.live.delete(key);
  }

  isActive(key: string): boolean {
    return this.live.has(key);
  }

  cancelAll(): void {
    for (const handle of this.live.values()) this.clock.clearTimeout(handle);
    this.live.clear();
  }
}
