/**
 * Whether a token's user exists, for a users repository that answers only
 * asynchronously (a shared database). The JWT verifier asks synchronously;
 * this table answers from what it has learnt, and the transports ask it to
 * learn (`Authenticator.prepare`) before they verify a token whose user it
 * does not know yet. Users that exist are remembered (a deletion revokes
 * their tokens anyway); users that do not, for a few seconds (a forged or
 * stale token sent again and again does not become a query each time).
 */

/** How many users either side remembers (the oldest are forgotten first). */
const MAX = 100_000;
/** How long an absent user is remembered as absent. */
const ABSENT_MS = 5_000;

/**
 * @example
 * const known = new KnownUsers((id) => users.exists(id));
 * await known.learn(userId);
 * known.now(userId); // true | false
 */
export class KnownUsers {
  private readonly present = new Set<string>();
  private readonly absent = new Map<string, number>();
  private readonly learning = new Map<string, Promise<void>>();

  constructor(
    private readonly exists: (userId: string) => Promise<boolean>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** True or false when known, undefined when it must be learnt first. */
  now(userId: string): boolean | undefined {
    if (this.present.has(userId)) return true;
    const until = this.absent.get(userId);
    if (until === undefined) return undefined;
    if (until > this.clock()) return false;
    this.absent.delete(userId);
    return undefined;
  }

  /** Ask the repository (once, however many ask at the same time). A failure is not remembered: it rejects. */
  learn(userId: string): Promise<void> {
    let pending = this.learning.get(userId);
    if (!pending) {
      pending = this.exists(userId).then(
        (yes) => {
          this.learning.delete(userId);
          if (yes) remember(this.present, userId);
          else {
            if (this.absent.size >= MAX) this.absent.delete(this.absent.keys().next().value as string);
            this.absent.set(userId, this.clock() + ABSENT_MS);
          }
        },
        (error: unknown) => {
          this.learning.delete(userId);
          throw error;
        },
      );
      this.learning.set(userId, pending);
    }
    return pending;
  }
}

function remember(set: Set<string>, id: string): void {
  if (set.size >= MAX) set.delete(set.values().next().value as string);
  set.add(id);
}
