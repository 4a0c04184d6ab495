/**
 * Rate limits: fixed windows per key (an identity, an account, a client
 * address), behind the {@link RateLimiter} interface. The first
 * implementation keeps the counters of a whole process in a few virtual
 * actors (shards by key), so a limit means the same thing whichever worker
 * thread the request reaches; a cluster-wide one (Redis) implements the same
 * interface.
 *
 * Memory is bounded: expired windows are swept as the shard works, each
 * shard keeps at most its share of `maxKeys` (past it, of the least recently
 * hit windows, the one with the fewest attempts goes), and a shard idle for a
 * whole window — when every window it held has expired — deactivates.
 */
import { createHash } from 'node:crypto';
import { isIP, SocketAddress } from 'node:net';
import type { ActorContext, ActorLogic, ActorSystem, Placement } from '../../kernel/index.ts';

/** What a limit says about one attempt. */
export interface RateVerdict {
  allowed: boolean;
  /** When the key may try again (0 when allowed). */
  retryAfterMs: number;
}

/**
 * @example
 * const { allowed, retryAfterMs } = await limiter.hit(`login:addr:${ip}`, 100, 15 * 60_000);
 */
export interface RateLimiter {
  /** Count one attempt on `key`; whether it is within `limit` per `windowMs`. */
  hit(key: string, limit: number, windowMs: number): Promise<RateVerdict>;
  /** Whether one more attempt on `key` would be within `limit`, without counting it. */
  peek(key: string, limit: number, windowMs: number): Promise<RateVerdict>;
  /** Give back an attempt counted by `hit`. */
  refund(key: string): void;
}

/**
 * The key per-address limits count under (give it a plain address, as
 * `ClientAddresses` of the HTTP transport yields): an IPv4 address, or an IPv6 /64 (one
 * client usually holds a whole /64, so single IPv6 addresses are free to rotate).
 *
 * @example
 * addressKey('2001:db8:cafe:1:2:3:4:5') // '2001:db8:cafe:1::/64'
 */
export function addressKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = new SocketAddress({ address, family: 'ipv6' }).address;
  // Expand `::` to the missing zero groups, keep the first four.
  const [head = '', tail = ''] = groups.split('::');
  const left = head ? head.split(':') : [];
  const right = groups.includes('::') ? (tail ? tail.split(':') : []) : [];
  const full = groups.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${full.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

const SHARDS = 8;
/** How many of the least recently hit windows eviction looks at. */
const EVICTION_CANDIDATES = 64;
const KIND = 'ratelimit';

type Msg =
  | { t: 'hit'; key: string; limit: number; windowMs: number }
  | { t: 'peek'; key: string; limit: number; windowMs: number }
  | { t: 'refund'; key: string }
  | { t: 'size' };

interface Window {
  start: number;
  windowMs: number;
  count: number;
}

/**
 * The windows of one shard: a Map in least-recently-hit order, at most
 * `maxKeys` of them; expired ones are swept.
 */
export class WindowTable {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.windows.size;
  }

  private live(key: string, now: number): Window | undefined {
    const w = this.windows.get(key);
    if (w && now - w.start >= w.windowMs) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }

  hit(key: string, limit: number, windowMs: number, now: number): RateVerdict {
    let w = this.live(key, now);
    if (w) this.windows.delete(key); // re-inserted below: most recently used last
    else {
      if (this.windows.size >= this.maxKeys) this.makeRoom(now);
      w = { start: now, windowMs, count: 0 };
    }
    this.windows.set(key, w);
    w.count++;
    const allowed = w.count <= limit;
    return { allowed, retryAfterMs: allowed ? 0 : w.start + w.windowMs - now };
  }

  /** Whether one more attempt would be allowed (the window's own length applies). */
  peek(key: string, limit: number, now: number): RateVerdict {
    const w = this.live(key, now);
    if (!w || w.count < limit) return { allowed: true, retryAfterMs: 0 };
    return { allowed: false, retryAfterMs: w.start + w.windowMs - now };
  }

  refund(key: string): void {
    const w = this.windows.get(key);
    if (w && w.count > 0) w.count--;
  }

  /** Drop every expired window. */
  sweep(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= w.windowMs) this.windows.delete(k);
  }

  /**
   * Full: expired windows go first; else, of the least recently hit ones, the
   * one with the fewest attempts — a flood of fresh keys (one attempt each)
   * pushes out its own kind, not a counter that is holding someone back.
   */
  private makeRoom(now: number): void {
    const oldest = this.windows.entries().next().value as [string, Window] | undefined;
    if (oldest && now - oldest[1].start >= oldest[1].windowMs) this.sweep(now);
    if (this.windows.size < this.maxKeys) return;
    let victim: string | undefined;
    let fewest = Infinity;
    let looked = 0;
    for (const [k, w] of this.windows) {
      if (w.count < fewest) {
        fewest = w.count;
        victim = k;
        if (fewest <= 1) break;
      }
      if (++looked >= EVICTION_CANDIDATES) break;
    }
    this.windows.delete(victim as string);
  }
}

class Shard implements ActorLogic<Msg, unknown> {
  private readonly table: WindowTable;
  private swept = 0;

  constructor(
    maxKeys: number,
    private readonly sweepMs: number,
  ) {
    this.table = new WindowTable(maxKeys);
  }

  receive(msg: Msg, ctx: ActorContext<Msg>): unknown {
    const now = ctx.clock.now();
    if (now - this.swept >= this.sweepMs) {
      this.swept = now;
      this.table.sweep(now);
    }
    switch (msg.t) {
      case 'hit':
        return this.table.hit(msg.key, msg.limit, msg.windowMs, now);
      case 'peek':
        return this.table.peek(msg.key, msg.limit, now);
      case 'refund':
        this.table.refund(msg.key);
        return undefined;
      case 'size':
        return this.table.size;
    }
  }
}

/** The shard of a key: salted, so that nobody outside can aim many keys at one shard. */
function shardOf(key: string, salt: number): string {
  let h = salt | 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return String((h >>> 0) % SHARDS);
}

export interface ActorRateLimiterOptions {
  /** Which thread hosts a shard (a kernel placement, or a function of the live nodes). */
  placement: Placement | ((key: string, nodes: readonly string[]) => string);
  /** Windows kept at most, across all shards (default 50,000); see {@link WindowTable} for which goes past it. */
  maxKeys?: number;
  /** How often expired windows are swept, at most (default 60 s). */
  sweepMs?: number;
  /** The longest window in use: a shard idle that long holds nothing live and deactivates (default 15 min). */
  windowMs?: number;
  /**
   * Salts the choice of shard; the same in every thread of the process (a
   * secret of the deployment is a good source). Default: a fixed salt.
   */
  salt?: string;
}

/**
 * Counters in the process's actor system: 8 shards, each a virtual actor
 * placed on one thread.
 *
 * @example
 * const limiter = new ActorRateLimiter(system, { placement: workerPlacement() });
 */
export class ActorRateLimiter implements RateLimiter {
  private readonly salt: number;

  constructor(
    private readonly system: ActorSystem,
    options: ActorRateLimiterOptions,
  ) {
    this.salt = createHash('sha256').update(`svc-ratelimit:${options.salt ?? ''}`).digest().readUInt32LE(0);
    const perShard = Math.max(1, Math.ceil((options.maxKeys ?? 50_000) / SHARDS));
    const sweepMs = options.sweepMs ?? 60_000;
    system.defineKind(KIND, {
      placement: options.placement,
      idleAfterMs: options.windowMs ?? 900_000,
      props: () => ({ logic: () => new Shard(perShard, sweepMs), capacity: 10_000 }),
    });
  }

  private shard(key: string) {
    return this.system.activate<Msg, unknown>(KIND, shardOf(key, this.salt));
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateVerdict> {
    return (await this.shard(key).ask({ t: 'hit', key, limit, windowMs } satisfies Msg)) as RateVerdict;
  }

  async peek(key: string, limit: number, windowMs: number): Promise<RateVerdict> {
    return (await this.shard(key).ask({ t: 'peek', key, limit, windowMs } satisfies Msg)) as RateVerdict;
  }

  refund(key: string): void {
    this.shard(key).tell({ t: 'refund', key } satisfies Msg);
  }

  /** Windows held across all shards (for stats and tests). */
  async size(): Promise<number> {
    const sizes = await Promise.all(Array.from({ length: SHARDS }, (_, i) => this.system.activate(KIND, String(i)).ask({ t: 'size' } satisfies Msg)));
    return (sizes as number[]).reduce((a, b) => a + b, 0);
  }
}
