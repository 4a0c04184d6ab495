/**
 * Run deadlines: one timer for every partition of the thread, and the error
 * of a run that overran its deadline.
 */
import { SvcError } from '../../kernel/index.ts';
import { GRAPH_ERRORS } from '../walker/index.ts';

/** A partition as the watchdog sees it: when its run must end, and how to end it. */
export interface Deadlined {
  runDue: number;
  runMs: number;
  expire: ((e: unknown) => void) | null;
}

/**
 * Run deadlines for every partition of the thread with one timer, not one
 * per run: a partition joins the watched set when it starts a run (a no-op
 * when it is there already) and leaves it when found idle; the timer only
 * ticks while the set is not empty.
 */
class Watchdog {
  private readonly watched = new Set<Deadlined>();
  private timer: NodeJS.Timeout | null = null;

  /** The timer's period: the shortest deadline watched since it started, at most a second. */
  private every = 0;

  watch(p: Deadlined): void {
    this.watched.add(p);
    // A shorter deadline than the timer's period (a run of a hooked message gets what is left) ticks sooner.
    const every = Math.max(1, Math.min(p.runMs, 1000));
    if (this.timer && every >= this.every) return;
    if (this.timer) clearInterval(this.timer);
    this.every = every;
    this.timer = setInterval(this.tick, every);
  }

  private readonly tick = (): void => {
    const now = Date.now();
    for (const p of this.watched) {
      if (!p.expire) this.watched.delete(p);
      else if (p.runDue <= now) {
        const expire = p.expire;
        p.expire = null;
        this.watched.delete(p);
        expire(new RunTimeout(p.runMs));
      }
    }
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  };
}

export const watchdog = new Watchdog();

/** A run past its deadline: the partition restarts, the caller gets this error. */
export class RunTimeout extends SvcError {
  constructor(ms: number) {
    super('SVC_ERR_WALKER_TIMEOUT', `the walker did not finish within ${ms} ms; its changes were dropped`, { status: GRAPH_ERRORS.SVC_ERR_WALKER_TIMEOUT.status });
  }
}
