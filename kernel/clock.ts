/**
 * Time, injected. The kernel never calls `Date.now()` or `setTimeout`
 * directly: it asks its {@link Clock}, so tests drive time with a
 * {@link ManualClock} instead of sleeping.
 */

/** An opaque handle for a scheduled callback. */
export type TimerHandle = { readonly __timer: unique symbol } | object;

/** The three things the kernel needs from time. */
export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Run `fn` after `ms`. `weak` timers do not keep the process alive. */
  setTimeout(fn: () => void, ms: number, weak?: boolean): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The real clock: `performance.now()` and Node timers.
 *
 * @example
 * const system = new ActorSystem({ clock: realClock })
 */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn, ms, weak) {
    const t = setTimeout(fn, ms);
    if (weak) t.unref();
    return t as unknown as TimerHandle;
  },
  clearTimeout(handle) {
    clearTimeout(handle as unknown as NodeJS.Timeout);
  },
};

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told to. `advance(ms)` runs every timer that
 * falls due, in deadline order, at its own time.
 *
 * @example
 * const clock = new ManualClock()
 * const system = new ActorSystem({ clock })
 * const p = ref.ask('slow', 100)
 * clock.advance(100)   // p rejects with SVC_ERR_ASK_TIMEOUT
 */
export class ManualClock implements Clock {
  private time = 0;
  private seq = 0;
  private timers: ManualTimer[] = [];

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = { at: this.time + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    (handle as ManualTimer).cancelled = true;
  }

  /** Number of timers still scheduled. */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Move time forward by `ms`, firing due timers in order (synchronously). */
  advance(ms: number): void {
    const target = this.time + ms;
    for (let t = this.takeDue(target); t; t = this.takeDue(target)) t.fn();
    this.time = target;
  }

  /**
   * Like {@link advance}, but lets promise callbacks run between timers so
   * async handlers scheduled by one timer can arm the next.
   */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.time + ms;
    for (;;) {
      await flushMicrotasks();
      const t = this.takeDue(target);
      if (!t) break;
      t.fn();
    }
    this.time = target;
    await flushMicrotasks();
  }

  /** Remove and return the earliest timer due by `target`, moving time to it. */
  private takeDue(target: number): ManualTimer | undefined {
    let next: ManualTimer | undefined;
    for (const t of this.timers) {
      if (t.cancelled || t.at > target) continue;
      if (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq)) next = t;
    }
    if (!next) return undefined;
    this.timers = this.timers.filter((t) => t !== next && !t.cancelled);
    this.time = next.at;
    return next;
  }
}

/** Resolve after pending microtasks (and those they queue) have run. */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
