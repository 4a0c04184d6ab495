/**
 * Supervision in OTP terms: what a parent does when a child exits.
 *
 * - restart type of the child: `permanent` (always restarted), `transient`
 *   (restarted only after a crash), `temporary` (never restarted);
 * - strategy of the parent: `one-for-one` (restart the child that exited) or
 *   `one-for-all` (restart every child, the others first stopped in reverse
 *   start order, then all started again in start order);
 * - intensity: more than `maxRestarts` restarts within `withinMs` and the
 *   parent gives up: it escalates the failure to its own parent;
 * - backoff: the first restart of a child within the window is immediate,
 *   later ones wait `minMs * factor^(n-1)`, at most `maxMs`.
 */

export type RestartType = 'permanent' | 'transient' | 'temporary';
export type SupervisionStrategy = 'one-for-one' | 'one-for-all';

export interface Backoff {
  minMs: number;
  maxMs: number;
  factor: number;
}

export interface SupervisorSpec {
  strategy: SupervisionStrategy;
  maxRestarts: number;
  withinMs: number;
  backoff: Backoff;
  /**
   * What the restart limit counts: every restart under this supervisor
   * (`supervisor`, OTP) or each child's own (`child`: independent children,
   * such as the activations of a virtual actor kind).
   */
  scope: 'supervisor' | 'child';
  /**
   * Past the limit: `escalate` (this supervisor fails in turn, OTP) or
   * `stop-child` (only that child is stopped and the failure reported).
   */
  onLimit: 'escalate' | 'stop-child';
}

/** OTP-like defaults: one-for-one, 3 restarts within 5 s, then escalate. */
export const DEFAULT_SUPERVISION: SupervisorSpec = {
  strategy: 'one-for-one',
  maxRestarts: 3,
  withinMs: 5000,
  backoff: { minMs: 10, maxMs: 1000, factor: 2 },
  scope: 'supervisor',
  onLimit: 'escalate',
};

/** Fill a partial spec with the defaults. */
export function supervisorSpec(partial?: Partial<SupervisorSpec>): SupervisorSpec {
  return {
    ...DEFAULT_SUPERVISION,
    ...partial,
    backoff: { ...DEFAULT_SUPERVISION.backoff, ...partial?.backoff },
  };
}

/** Whether a child of this restart type is restarted after the given exit. */
export function shouldRestart(type: RestartType, crashed: boolean): boolean {
  return type === 'permanent' || (type === 'transient' && crashed);
}

/** Timestamps of recent restarts, pruned to a window. */
export class RestartLog {
  private times: number[] = [];

  /** Restarts within the window ending at `now`. */
  count(now: number, withinMs: number): number {
    const from = now - withinMs;
    let drop = 0;
    while (drop < this.times.length && (this.times[drop] as number) <= from) drop++;
    if (drop) this.times.splice(0, drop);
    return this.times.length;
  }

  record(now: number): void {
    this.times.push(now);
  }

  clear(): void {
    this.times.length = 0;
  }
}

/** Delay before a child's next restart, given its restarts in the window. */
export function backoffDelay(backoff: Backoff, recentRestarts: number): number {
  if (recentRestarts <= 0 || backoff.minMs <= 0) return 0;
  return Math.min(backoff.maxMs, backoff.minMs * backoff.factor ** (recentRestarts - 1));
}
