/**
 * Attempts counted against the rate limits of the identity flows (logins,
 * registrations, mails), in the configured window, refused with
 * TOO_MANY_REQUESTS and when to retry.
 */
import type { SvcError } from '../../kernel/index.ts';
import { identityError } from './errors.ts';
import type { RateLimiter, RateVerdict } from './rate-limit.ts';

/** A 429 saying, in whole seconds, when to retry. */
export function tooMany(retryAfterMs: number): SvcError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return identityError('TOO_MANY_REQUESTS', `too many attempts; retry in ${seconds} s`, { retry_after_seconds: seconds });
}

/**
 * @example
 * const attempts = new Attempts(limiter, 15 * 60);
 * await attempts.count(`login:addr:${addressKey(ip)}`, 100); // throws TOO_MANY_REQUESTS past 100
 */
export class Attempts {
  private readonly windowMs: number;

  constructor(
    private readonly limiter: RateLimiter,
    windowSeconds: number,
  ) {
    this.windowMs = windowSeconds * 1000;
  }

  /** Count one attempt on `key`; past `limit` in the window, TOO_MANY_REQUESTS. */
  async count(key: string, limit: number): Promise<void> {
    const verdict = await this.limiter.hit(key, limit, this.windowMs);
    if (!verdict.allowed) throw tooMany(verdict.retryAfterMs);
  }

  /** Whether one more attempt on `key` would be within `limit`, counting nothing. */
  peek(key: string, limit: number): Promise<RateVerdict> {
    return this.limiter.peek(key, limit, this.windowMs);
  }

  /** Give back an attempt counted on each key (empty keys are skipped). */
  refund(...keys: string[]): void {
    for (const key of keys) if (key) this.limiter.refund(key);
  }
}
