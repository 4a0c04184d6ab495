/**
 * Rate limits shared by every thread of the process: counters live in a few
 * virtual actors (shards by key), so a limit means the same thing whichever
 * worker the request reaches.
 */
import { type ActorSystem, fromReceive } from '../../kernel/index.ts';

const SHARDS = 8;
const KIND = 'ratelimit';

type Msg = { key: string; limit: number; windowMs: number } | { refund: string } | { sweep: true };

interface Window {
  start: number;
  count: number;
}

/** Fixed windows, swept as they expire. */
function shard() {
  const windows = new Map<string, Window>();
  return fromReceive((msg: Msg) => {
    const now = Date.now();
    if ('sweep' in msg) {
      for (const [k, w] of windows) if (now - w.start > 24 * 3600_000) windows.delete(k);
      return undefined;
    }
    if ('refund' in msg) {
      const w = windows.get(msg.refund);
      if (w && w.count > 0) w.count--;
      return undefined;
    }
    let w = windows.get(msg.key);
    if (!w || now - w.start >= msg.windowMs) {
      w = { start: now, count: 0 };
      windows.set(msg.key, w);
    }
    w.count++;
    const allowed = w.count <= msg.limit;
    return { allowed, retryAfterMs: allowed ? 0 : w.start + msg.windowMs - now };
  });
}

function shardOf(key: string): string {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) | 0;
  return String(Math.abs(h) % SHARDS);
}

export class RateLimiter {
  constructor(
    private readonly system: ActorSystem,
    placement: (key: string, nodes: readonly string[]) => string,
  ) {
    system.defineKind(KIND, { placement, props: () => ({ ...shard(), capacity: 10_000 }) });
  }

  /** Count one attempt on `key`; whether it is within `limit` per `windowMs`. */
  async hit(key: string, limit: number, windowMs: number): Promise<{ allowed: boolean; retryAfterMs: number }> {
    return (await this.system.activate(KIND, shardOf(key)).ask({ key, limit, windowMs })) as { allowed: boolean; retryAfterMs: number };
  }

  /** Give back an attempt counted by `hit` (a login that succeeded does not count against the limit). */
  refund(key: string): void {
    this.system.activate(KIND, shardOf(key)).tell({ refund: key });
  }
}
