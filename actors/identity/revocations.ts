/**
 * Token revocation on every worker at once: each thread keeps a table of
 * "tokens of this user issued before T are void", consulted on every token
 * use (cached or not). A change is written to the users store, then
 * published to every member's table (a {@link Broadcast}: the threads of the
 * process, and the pods of a cluster once it spans them), and only then
 * acknowledged.
 */
import type { Broadcast } from '../../kernel/index.ts';
import type { RevocationList } from './jwt.ts';

/** The broadcast topic of revocations. */
export const REVOCATIONS_TOPIC = 'identity.revocations';

export class RevocationTable implements RevocationList {
  private readonly after = new Map<string, number>();
  private bus: Broadcast | undefined;
  private readonly listeners: ((userId: string) => void)[] = [];

  validAfter(userId: string): number | undefined {
    return this.after.get(userId);
  }

  set(userId: string, ms: number): void {
    const current = this.after.get(userId);
    if (current === undefined || ms > current) {
      this.after.set(userId, ms);
      for (const fn of this.listeners) fn(userId);
    }
  }

  /** `fn` is told of every user whose tokens were revoked (moved forward), here or on another member. */
  listen(fn: (userId: string) => void): void {
    this.listeners.push(fn);
  }

  /** Take the changes other members publish (and publish this one's through `bus`). */
  serve(bus: Broadcast): void {
    this.bus = bus;
    bus.subscribe(REVOCATIONS_TOPIC, (msg) => {
      const { userId, ms } = msg as { userId: string; ms: number };
      this.set(userId, ms);
      return true;
    });
  }

  /** Set it here and on every member; resolves once every member that is up has it. */
  async broadcast(userId: string, ms: number): Promise<void> {
    this.set(userId, ms);
    // A member that is gone needs no revocation; one that comes back loads them from the store.
    await this.bus?.gather(REVOCATIONS_TOPIC, { userId, ms }, 2000);
  }
}
