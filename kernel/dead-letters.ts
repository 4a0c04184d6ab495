/**
 * Dead letters: messages that reached no actor (stopped, unknown, dropped on
 * overflow or at a forced stop). Counted, kept in a short ring for
 * inspection, and offered to listeners.
 */

export type DeadLetterReason = 'stopped' | 'no-such-actor' | 'mailbox-full' | 'dropped-oldest' | 'node-down' | 'forced-stop' | 'unencodable';

export interface DeadLetter {
  recipient: string;
  message: unknown;
  reason: DeadLetterReason;
  at: number;
}

/**
 * @example
 * system.deadLetters.subscribe((d) => log.warn(d.reason, d.recipient))
 * system.deadLetters.count
 */
export class DeadLetters {
  /** Total dead letters since start. */
  count = 0;
  private ring: DeadLetter[] = [];
  private listeners = new Set<(d: DeadLetter) => void>();

  constructor(
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void = (e) => console.error('[svc kernel] dead letter listener failed:', e),
    private readonly keep = 100,
  ) {}

  publish(recipient: string, message: unknown, reason: DeadLetterReason): void {
    this.count++;
    const letter: DeadLetter = { recipient, message, reason, at: this.now() };
    if (this.ring.length >= this.keep) this.ring.shift();
    this.ring.push(letter);
    for (const fn of this.listeners) {
      try {
        fn(letter);
      } catch (error) {
        this.onError(error);
      }
    }
  }

  /** The most recent dead letters, oldest first. */
  recent(): readonly DeadLetter[] {
    return this.ring;
  }

  /** Listen to every dead letter; returns the unsubscribe function. */
  subscribe(fn: (d: DeadLetter) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
