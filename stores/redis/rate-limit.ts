/**
 * Rate limits shared by every process of a cluster: the {@link RateLimiter}
 * of `actors/identity`, its fixed windows counted in Redis.
 *
 * One key per limited key, `svc:{<cluster>}:rl:<hash>`, holding the count of
 * the current window and expiring with it. A hit is one Lua script (INCR,
 * PEXPIRE when the key has no expiry yet, PTTL for the answer), so two
 * processes hitting one key at once count two. The window starts at the first
 * hit and lasts `windowMs`, as in {@link WindowTable}.
 *
 * Keys are HMAC-SHA256 of the limited key under a salt of the deployment:
 * user names and client addresses never reach Redis in clear, and nobody
 * without the salt can tell which key counts whom.
 *
 * Redis down (not ready, or a command failed): the limiter counts in the
 * local `fallback` instead — logins keep working, limits hold per process for
 * that time — and reports the outage once through `onError`. The first
 * command that succeeds ends the outage. A `refund` goes where counting goes
 * at that moment, so one given back across the end of an outage may land on
 * the other counter (Redis never counts below 0).
 */
import { createHmac } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RateLimiter, RateVerdict } from '../../actors/identity/index.ts';
import { clusterKey, RedisScript } from './connection.ts';

/** Count one hit; set the window's expiry when the key has none. → {count, pttl} */
const HIT = new RedisScript(`
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`);

/** The count and expiry, counting nothing. → {count, pttl} */
const PEEK = new RedisScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
return {n, redis.call('PTTL', KEYS[1])}
`);

/** Give one back, never below 0, never creating a key (DECR keeps the expiry). */
const REFUND = new RedisScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then return redis.call('DECR', KEYS[1]) end
return 0
`);

export interface RedisRateLimiterOptions {
  /** A client from `openRedis` (no offline queue: a command while down fails at once). */
  redis: Redis;
  /** The cluster's name: keys live under `svc:{<cluster>}:rl:`. */
  cluster: string;
  /** Salts the key hash; the same in every process of the cluster (a secret of the deployment). */
  salt: string;
  /** Counts while Redis is unreachable (the process's own limiter). */
  fallback: RateLimiter;
  /** The first failure of each outage. */
  onError?(error: unknown): void;
}

/**
 * @example
 * const limiter = new RedisRateLimiter({ redis, cluster: 'prod', salt: secrets.rateLimitSalt, fallback: actorLimiter, onError: (e) => log.warn({ err: e }, 'rate limits per process') });
 * const { allowed, retryAfterMs } = await limiter.hit(`login:addr:${ip}`, 100, 15 * 60_000);
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly salt: string;
  private readonly fallback: RateLimiter;
  private readonly onError: (error: unknown) => void;
  private down = false;

  constructor(options: RedisRateLimiterOptions) {
    this.redis = options.redis;
    this.prefix = clusterKey(options.cluster, 'rl', '');
    this.salt = `svc-ratelimit:${options.salt}`;
    this.fallback = options.fallback;
    this.onError = options.onError ?? (() => undefined);
  }

  /** The Redis key that counts `key`. */
  keyOf(key: string): string {
    return this.prefix + createHmac('sha256', this.salt).update(key).digest('base64url');
  }

  /** Whether counting happens in the fallback now (Redis was found down and has not answered since). */
  get degraded(): boolean {
    return this.down;
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateVerdict> {
    const window = Math.max(1, Math.ceil(windowMs));
    const reply = await this.attempt(HIT, key, [window]);
    if (!reply) return this.fallback.hit(key, limit, windowMs);
    const { count, ttl } = reply;
    const allowed = count <= limit;
    return { allowed, retryAfterMs: allowed ? 0 : ttl > 0 ? ttl : window };
  }

  async peek(key: string, limit: number, windowMs: number): Promise<RateVerdict> {
    const reply = await this.attempt(PEEK, key, []);
    if (!reply) return this.fallback.peek(key, limit, windowMs);
    const { count, ttl } = reply;
    if (count < limit) return { allowed: true, retryAfterMs: 0 };
    return { allowed: false, retryAfterMs: ttl > 0 ? ttl : Math.max(1, Math.ceil(windowMs)) };
  }

  refund(key: string): void {
    // Known down: give back in the fallback now, in order with what follows.
    if (!this.ready()) this.fallback.refund(key);
    else
      void this.attempt(REFUND, key, []).then((reply) => {
        if (!reply) this.fallback.refund(key);
      });
  }

  /** Whether Redis may be asked; if not, the outage is reported. */
  private ready(): boolean {
    if (this.redis.status === 'ready') return true;
    this.fail(new Error(`Redis is not connected (${this.redis.status})`));
    return false;
  }

  /** Run `script` on `key`'s counter: the count and its window's PTTL, or undefined when Redis cannot answer (the caller falls back). */
  private async attempt(script: RedisScript, key: string, args: number[]): Promise<{ count: number; ttl: number } | undefined> {
    if (!this.ready()) return undefined;
    try {
      const reply = await script.run(this.redis, [this.keyOf(key)], args);
      this.down = false;
      const [count, ttl] = Array.isArray(reply) ? reply : [reply];
      return { count: Number(count ?? 0), ttl: Number(ttl ?? -1) };
    } catch (error) {
      this.fail(error);
      return undefined;
    }
  }

  private fail(error: unknown): void {
    if (this.down) return;
    this.down = true;
    this.onError(error);
  }
}
