/**
 * Pending asks and their timeouts. An ask is a {@link Reply} bound to a
 * promise. Timeouts are kept in one doubly linked list per timeout length:
 * deadlines within a list are monotonic, so each list needs a single armed
 * timer and settling an ask unlinks it in O(1) — no timer per ask.
 */
import type { Clock, TimerHandle } from './clock.ts';
import { kernelError } from './errors.ts';
import type { Reply } from './mailbox.ts';

export class PendingAsk implements Reply {
  prev: PendingAsk | null = null;
  next: PendingAsk | null = null;
  list: DeadlineList | null = null;
  at = 0;
  done = false;
  /** Called once when the ask settles (remote asks drop their id here). */
  onSettle: (() => void) | undefined = undefined;
  /** A virtual actor's ask to another node: what to send again if the actor moved. */
  resend: { to: [kind: string, key: string]; msg: unknown; tries: number } | undefined = undefined;
  private res!: (value: unknown) => void;
  private rej!: (error: unknown) => void;
  readonly promise: Promise<unknown>;

  constructor(readonly target: string) {
    this.promise = new Promise((res, rej) => {
      this.res = res;
      this.rej = rej;
    });
  }

  resolve(value: unknown): void {
    if (this.settle()) this.res(value);
  }

  reject(error: unknown): void {
    if (this.settle()) this.rej(error);
  }

  private settle(): boolean {
    if (this.done) return false;
    this.done = true;
    this.list?.remove(this);
    this.onSettle?.();
    return true;
  }
}

class DeadlineList {
  head: PendingAsk | null = null;
  tail: PendingAsk | null = null;
  private timer: TimerHandle | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly ms: number,
    private readonly onEmpty: (list: DeadlineList) => void,
  ) {}

  add(ask: PendingAsk): void {
    ask.at = this.clock.now() + this.ms;
    ask.list = this;
    ask.prev = this.tail;
    if (this.tail) this.tail.next = ask;
    else this.head = ask;
    this.tail = ask;
    if (!this.timer) this.arm(this.ms);
  }

  remove(ask: PendingAsk): void {
    if (ask.prev) ask.prev.next = ask.next;
    else this.head = ask.next;
    if (ask.next) ask.next.prev = ask.prev;
    else this.tail = ask.prev;
    ask.prev = ask.next = null;
    ask.list = null;
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(this.fire, ms, true);
  }

  private fire = (): void => {
    this.timer = null;
    const now = this.clock.now();
    while (this.head && this.head.at <= now) {
      const ask = this.head;
      ask.reject(kernelError('SVC_ERR_ASK_TIMEOUT', `ask to ${ask.target} got no reply within ${this.ms} ms`));
    }
    if (this.head) this.arm(this.head.at - now);
    else this.onEmpty(this);
  };
}

/**
 * Tracks ask deadlines for one actor system.
 *
 * @example
 * const ask = new PendingAsk('/user/a'); deadlines.track(ask, 5000); ask.promise
 */
export class Deadlines {
  private lists = new Map<number, DeadlineList>();

  constructor(private readonly clock: Clock) {}

  track(ask: PendingAsk, timeoutMs: number): void {
    if (!Number.isFinite(timeoutMs)) return;
    const ms = quantize(timeoutMs);
    let list = this.lists.get(ms);
    if (!list) {
      list = new DeadlineList(this.clock, ms, (l) => {
        if (this.lists.get(ms) === l) this.lists.delete(ms);
      });
      this.lists.set(ms, list);
    }
    list.add(ask);
  }

  /** Distinct timeout lists alive (each with one timer). */
  get size(): number {
    return this.lists.size;
  }
}

/**
 * Round a timeout up so that callers passing "what is left of my budget"
 * share a few lists instead of one each: exact to 100 ms, then in steps of
 * 10 ms, 100 ms past 1 s, 1 s past 10 s (never more than 10% late).
 */
export function quantize(ms: number): number {
  if (ms <= 100) return Math.max(0, Math.ceil(ms));
  const step = ms <= 1000 ? 10 : ms <= 10_000 ? 100 : 1000;
  return Math.ceil(ms / step) * step;
}
