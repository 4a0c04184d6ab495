/**
 * A bounded FIFO mailbox on a growable ring buffer. Messages and their reply
 * slots sit in two parallel arrays so that a `tell` allocates nothing.
 */

/** Where an `ask`'s answer goes: a local promise or a remote reply frame. */
export interface Reply {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * What a full mailbox does with one more message:
 * - `reject`: the new message is refused (its `ask` fails with `SVC_ERR_MAILBOX_FULL`);
 * - `drop-oldest`: the oldest waiting message is dropped to make room (for broadcast queues).
 */
export type OverflowPolicy = 'reject' | 'drop-oldest';

/** The outcome of {@link Mailbox.push}. */
export const PushResult = {
  Ok: 0,
  Rejected: 1,
  /** Accepted, and the oldest message was dropped: see {@link Mailbox.droppedMsg}. */
  DroppedOldest: 2,
} as const;
export type PushResult = (typeof PushResult)[keyof typeof PushResult];

const INITIAL = 16;

export class Mailbox {
  private msgs: unknown[] = new Array(INITIAL);
  private replies: (Reply | undefined)[] = new Array(INITIAL);
  private head = 0;
  private count = 0;
  private mask = INITIAL - 1;
  /** The most messages this mailbox has held at once (for metrics: one comparison per push). */
  highWater = 0;
  /** The message evicted by the last `DroppedOldest` push. */
  droppedMsg: unknown = undefined;
  droppedReply: Reply | undefined = undefined;

  constructor(
    readonly capacity: number,
    readonly overflow: OverflowPolicy,
  ) {
    if (!(capacity >= 1)) throw new RangeError('mailbox capacity must be at least 1');
  }

  get size(): number {
    return this.count;
  }

  push(msg: unknown, reply: Reply | undefined): PushResult {
    let result: PushResult = PushResult.Ok;
    if (this.count >= this.capacity) {
      if (this.overflow === 'reject') return PushResult.Rejected;
      this.droppedMsg = this.msgs[this.head];
      this.droppedReply = this.replies[this.head];
      this.msgs[this.head] = undefined;
      this.replies[this.head] = undefined;
      this.head = (this.head + 1) & this.mask;
      this.count--;
      result = PushResult.DroppedOldest;
    } else if (this.count === this.msgs.length) {
      this.grow();
    }
    const at = (this.head + this.count) & this.mask;
    this.msgs[at] = msg;
    this.replies[at] = reply;
    this.count++;
    if (this.count > this.highWater) this.highWater = this.count;
    return result;
  }

  /** The reply slot of the head message (call before {@link shift}). */
  peekReply(): Reply | undefined {
    return this.replies[this.head];
  }

  /** Remove and return the head message; call only when `size > 0`. */
  shift(): unknown {
    const at = this.head;
    const msg = this.msgs[at];
    this.msgs[at] = undefined;
    this.replies[at] = undefined;
    this.head = (at + 1) & this.mask;
    this.count--;
    return msg;
  }

  /** Empty the mailbox, handing every waiting message to `fn` in order. */
  drainTo(fn: (msg: unknown, reply: Reply | undefined) => void): void {
    while (this.count > 0) {
      const reply = this.peekReply();
      fn(this.shift(), reply);
    }
  }

  private grow(): void {
    const size = this.msgs.length * 2;
    const msgs: unknown[] = new Array(size);
    const replies: (Reply | undefined)[] = new Array(size);
    for (let i = 0; i < this.count; i++) {
      const from = (this.head + i) & this.mask;
      msgs[i] = this.msgs[from];
      replies[i] = this.replies[from];
    }
    this.msgs = msgs;
    this.replies = replies;
    this.head = 0;
    this.mask = size - 1;
  }
}
