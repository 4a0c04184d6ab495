/**
 * Accept back-off for the uWebSockets.js front. When the process runs out
 * of file descriptors, the binary's accept loop spins on the listening
 * socket (both cores at 100%) and nothing else gets done; it offers no hook
 * for accept errors and no connection count. So the guard watches the
 * process's open descriptors (`stat /proc/self/fd`, ~10 µs) a few times a
 * second and closes the listening socket while they are exhausted or past
 * `maxConnections` — existing connections are served on — and opens it
 * again once there is room.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';

export interface AcceptGuardOptions {
  /** Connections (open descriptors beyond those at start) before accepting pauses. */
  maxConnections: number;
  pause(): void;
  /** Listen again; false when the port could not be had (the guard stays paused and tries later). */
  resume(): Promise<boolean> | boolean;
  /** Told when accepting pauses and resumes (for the log). */
  onChange?: (paused: boolean, reason: string) => void;
  /** Open descriptors of the process, or `'exhausted'` (default: /proc/self/fd). */
  count?: () => number | 'exhausted';
  /** The process's open-file limit (default: the soft limit from /proc/self/limits). */
  fileLimit?: number;
  /** How often to look (default 250 ms). */
  intervalMs?: number;
  /** Paused at least this long once paused (default 1 s). */
  minPauseMs?: number;
  now?: () => number;
}

/** Open file descriptors of this process: the size of /proc/self/fd (Linux ≥ 6.2), else a probe. */
export function openDescriptors(): number | 'exhausted' {
  try {
    const size = statSync('/proc/self/fd').size;
    if (size > 0) return size;
    // Kernels before 6.2 report 0: count the entries (dearer; an exhausted process cannot even open the folder).
    return readdirSync('/proc/self/fd').length;
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code === 'EMFILE' || code === 'ENFILE' ? 'exhausted' : 0;
  }
}

/** The soft limit on open files of this process, or Infinity when it cannot be read. */
export function openFileLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.slice('Max open files'.length).trim().split(/\s+/)[0]);
    return Number.isFinite(soft) && soft > 0 ? soft : Infinity;
  } catch {
    return Infinity;
  }
}

/** Descriptors kept free for the rest of the process (stores, logs, worker pipes). */
const RESERVE = 32;

function procFdSize(): number {
  try {
    return statSync('/proc/self/fd').size;
  } catch {
    return 0;
  }
}

export class AcceptGuard {
  private readonly timer: NodeJS.Timeout;
  private readonly baseline: number;
  private paused = false;
  private resuming = false;
  private pausedAt = 0;
  private readonly count: () => number | 'exhausted';
  private readonly now: () => number;
  private readonly fileLimit: number;

  constructor(private readonly o: AcceptGuardOptions) {
    this.count = o.count ?? openDescriptors;
    this.now = o.now ?? Date.now;
    this.fileLimit = o.fileLimit ?? openFileLimit();
    const first = this.count();
    this.baseline = typeof first === 'number' ? first : 0;
    // Counting is ~10 µs where the kernel tells the size of /proc/self/fd (Linux ≥ 6.2), a folder read before: look less often then.
    const cheap = o.count !== undefined || procFdSize() > 0;
    this.timer = setInterval(() => this.check(), o.intervalMs ?? (cheap ? 250 : 1000));
    this.timer.unref();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** One look (the timer calls it; tests call it directly). */
  check(): void {
    const n = this.count();
    const limit = this.baseline + this.o.maxConnections;
    if (!this.paused) {
      const reason =
        n === 'exhausted' || n >= this.fileLimit - RESERVE
          ? `file descriptors exhausted (ulimit -n ${this.fileLimit})`
          : n >= limit
            ? `${n - this.baseline} connections (max_connections ${this.o.maxConnections})`
            : '';
      if (!reason) return;
      this.paused = true;
      this.pausedAt = this.now();
      this.o.pause();
      this.o.onChange?.(true, reason);
      return;
    }
    if (this.now() - this.pausedAt < (this.o.minPauseMs ?? 1000)) return;
    // Room again: below 90% of the limit, and a descriptor can be had.
    if (n !== 'exhausted' && n < this.fileLimit - 2 * RESERVE && n < this.baseline + this.o.maxConnections * 0.9 && !this.resuming) {
      this.resuming = true;
      void Promise.resolve(this.o.resume()).then(
        (ok) => {
          this.resuming = false;
          if (!ok) {
            this.pausedAt = this.now(); // try again after another pause
            this.o.onChange?.(true, 'could not listen again; retrying');
            return;
          }
          this.paused = false;
          this.o.onChange?.(false, typeof n === 'number' && n > 0 ? `${Math.max(0, n - this.baseline)} connections` : 'descriptors available');
        },
        () => {
          this.resuming = false;
          this.pausedAt = this.now();
        },
      );
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
