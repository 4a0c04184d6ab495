/**
 * Distributed locks on the `kv` backend (README *Locks*):
 * a mutex is a key set with `setNxWithTtl` holding a fence value unique to its
 * holder, released with `deleteIfEquals` — so only its holder releases it,
 * and a holder that died is superseded once the TTL has passed. A debounce is
 * one `setNxWithTtl` per window, never released.
 *
 * The TTL bounds how long a holder may keep the lock: past it another
 * contender may take it, and the late holder's `release()` answers `false`.
 * Pick a TTL longer than the work, or renew with `extend`.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { kvstoreError } from './kvstore-errors.ts';

/** What locks need: the kv backend's two atomic steps (and `expire`-like renewal). */
export interface LockKv {
  setNxWithTtl(key: string, value: string, ttlSeconds: number): Promise<boolean>;
  deleteIfEquals(key: string, expected: string): Promise<boolean>;
  expireIfEquals(key: string, expected: string, ttlSeconds: number): Promise<boolean>;
}

export interface RetryOptions {
  /** Give up after this long (default 10 s), rejecting with `LOCK_TIMEOUT`. 0: one attempt. */
  timeoutMs?: number;
  /** The wait between attempts is drawn uniformly in [minDelayMs, maxDelayMs] (default 5–50 ms). */
  minDelayMs?: number;
  maxDelayMs?: number;
}

export interface MutexOptions {
  /** How long the lock holds without release (default 10 s). */
  ttlMs?: number;
  /** How to wait for a held lock (default: keep trying, 5–50 ms apart, for up to 10 s); `false`: one attempt. */
  retry?: RetryOptions | false;
  /** Stop waiting when this aborts (rejects with its reason). */
  signal?: AbortSignal;
}

/** A held mutex. `await using lock = await mutex(kv, 'k')` releases it at the end of the block. */
export interface Lock {
  readonly key: string;
  /** This holder's fence value (what the key holds while it is held). */
  readonly fence: string;
  /** Release; `false` when the lock was no longer ours (expired, and maybe taken by another). */
  release(): Promise<boolean>;
  /** Renew the TTL while still held; `false` when it was no longer ours. */
  extend(ttlMs?: number): Promise<boolean>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** `key` for a lock: `lock:<key>` in the handle's namespace (beside the app's own keys: do not name yours so). */
function lockKey(key: string): string {
  if (typeof key !== 'string' || key === '') throw kvstoreError('INVALID_NAME', `a lock key is a non-empty string, got ${JSON.stringify(key)}`);
  return `lock:${key}`;
}

/** Ten years: a TTL or a window longer than this is a mistake (and past what Redis takes). */
const MAX_MS = 10 * 365 * 24 * 3600 * 1000;

function positive(value: number, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_MS) throw kvstoreError('INVALID_QUERY', `${what} must be a number of milliseconds > 0 (at most ten years), got ${JSON.stringify(value)}`);
  return value;
}

function waiting(value: number, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_MS) throw kvstoreError('INVALID_QUERY', `retry.${what} must be a number of milliseconds ≥ 0, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * Acquire the mutex `key`: resolves to the held {@link Lock}, or rejects with
 * `LOCK_TIMEOUT` when it stays held by another past the retry budget.
 *
 * @example
 * const kv = kvstore('app', 'kv');
 * await using lock = await mutex(kv, `invoice:${id}`, { ttlMs: 5_000 });
 * const n = Number(await kv.get('next')) + 1; await kv.set('next', n);
 */
export async function mutex(kv: LockKv, key: string, options: MutexOptions = {}): Promise<Lock> {
  if (typeof (kv as { setNxWithTtl?: unknown })?.setNxWithTtl !== 'function') throw kvstoreError('NOT_IMPLEMENTED', 'mutex() needs a kvstore of the kv backend (Redis)');
  const k = lockKey(key);
  const ttl = positive(options.ttlMs ?? 10_000, 'ttlMs');
  const retry = options.retry === false ? { timeoutMs: 0 } : (options.retry ?? {});
  const timeoutMs = waiting(retry.timeoutMs ?? 10_000, 'timeoutMs');
  const minDelay = waiting(retry.minDelayMs ?? 5, 'minDelayMs');
  const maxDelay = Math.max(minDelay, waiting(retry.maxDelayMs ?? 50, 'maxDelayMs'));
  const fence = randomBytes(16).toString('hex');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    options.signal?.throwIfAborted();
    if (await kv.setNxWithTtl(k, fence, ttl / 1000)) return held(kv, key, k, fence, ttl);
    if (Date.now() >= deadline) throw kvstoreError('LOCK_TIMEOUT', `the lock ${JSON.stringify(key)} is held by another holder (waited ${timeoutMs} ms)`);
    const wait = Math.min(minDelay + Math.random() * (maxDelay - minDelay), Math.max(0, deadline - Date.now()));
    await sleep(wait, undefined, options.signal ? { signal: options.signal } : undefined);
  }
}

function held(kv: LockKv, key: string, k: string, fence: string, ttl: number): Lock {
  let released = false;
  const release = async (): Promise<boolean> => {
    if (released) return false;
    released = true;
    return kv.deleteIfEquals(k, fence);
  };
  return {
    key,
    fence,
    release,
    async extend(ttlMs = ttl) {
      if (released) return false;
      return kv.expireIfEquals(k, fence, positive(ttlMs, 'ttlMs') / 1000);
    },
    async [Symbol.asyncDispose]() {
      await release();
    },
  };
}

/**
 * Whether this call opens the window `key` (`true` once per `windowMs`, for
 * whoever comes first across every process); the others in the window get
 * `false`. Nothing to release: the window ends by itself.
 *
 * @example
 * if (await debounce(kv, `mail:${userId}`, 60_000)) await sendDigest(userId);
 */
export async function debounce(kv: LockKv, key: string, windowMs: number): Promise<boolean> {
  if (typeof (kv as { setNxWithTtl?: unknown })?.setNxWithTtl !== 'function') throw kvstoreError('NOT_IMPLEMENTED', 'debounce() needs a kvstore of the kv backend (Redis)');
  return kv.setNxWithTtl(`debounce:${lockKey(key).slice(5)}`, '1', positive(windowMs, 'windowMs') / 1000);
}
