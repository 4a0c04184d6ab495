/**
 * Token revocation on every worker at once: each thread keeps a table of
 * "tokens of this user issued before T are void", consulted on every token
 * use (cached or not). A change is written to the users store, then told to
 * every thread's table, and only then acknowledged.
 */
import { type ActorSystem, fromReceive } from '../../kernel/index.ts';
import type { RevocationList } from '../../transports/http/index.ts';

export const REVOCATIONS_ACTOR = 'revocations';

export class RevocationTable implements RevocationList {
  private readonly after = new Map<string, number>();

  validAfter(userId: string): number | undefined {
    return this.after.get(userId);
  }

  set(userId: string, ms: number): void {
    const current = this.after.get(userId);
    if (current === undefined || ms > current) this.after.set(userId, ms);
  }

  /** The table's actor in this thread (other threads send it their changes). */
  serve(system: ActorSystem): void {
    system.spawn(
      fromReceive((msg: { userId: string; ms: number }) => {
        this.set(msg.userId, msg.ms);
        return true;
      }),
      REVOCATIONS_ACTOR,
    );
  }

  /** Set it here and on every other thread; resolves once all have it. */
  async broadcast(system: ActorSystem, userId: string, ms: number): Promise<void> {
    this.set(userId, ms);
    await Promise.all(
      system
        .nodes()
        .filter((n) => n !== system.nodeId && n !== 'main')
        .map((node) =>
          system
            .refFromAddress({ node, path: `/user/${REVOCATIONS_ACTOR}` })
            .ask({ userId, ms }, 2000)
            .catch(() => undefined), // a thread that is gone needs no revocation
        ),
    );
  }
}
