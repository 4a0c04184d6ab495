/**
 * The cluster's pending sign-ins in Redis (`KV_URL`): the {@link SsoStateStore}
 * of `actors/identity` for a cluster, so any member finishes a sign-in another
 * started. What a pending sign-in holds and why is said in `actors/identity`.
 */
import { MAX_PENDING_SIGN_INS, type PendingSignIn, type SsoStateStore } from '../../actors/identity/index.ts';
import { storeError } from '../../actors/graph/index.ts';

/** The one Redis command this store sends (an ioredis client has it). */
export interface SsoRedis {
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

// KEYS: the entry, the index (a sorted set of keys by time). ARGV: value, ttl ms, now ms, max, key prefix, key.
// The index bounds the number of entries: expired ones leave it, and past `max` the oldest entries go.
const PUT = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[3]) - tonumber(ARGV[2]))
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #old, 2 do redis.call('DEL', ARGV[5] .. old[i]) end
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`;
// Get and delete at once (GETDEL, atomically with the index): a state is taken once however many callbacks race.
const TAKE = `
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
return v`;

/**
 * The cluster's pending sign-ins, in Redis (`KV_URL`): one key per sign-in
 * with its TTL (`SET … PX`), taken with a get-and-delete; an index (a sorted
 * set) bounds how many wait at once. Keys and the index share the prefix's
 * hash tag (one slot).
 *
 * @example
 * const states = new RedisSsoStates(openRedis(kvUrl, { name: 'sso' }), { prefix: 'svc:{app}:sso:' });
 */
export class RedisSsoStates implements SsoStateStore {
  private readonly prefix: string;
  private readonly index: string;
  private readonly max: number;
  private readonly closer: (() => Promise<void> | void) | undefined;

  constructor(
    private readonly redis: SsoRedis,
    options: { prefix: string; maxPending?: number; close?: () => Promise<void> | void },
  ) {
    this.prefix = `${options.prefix}state:`;
    this.index = `${options.prefix}states`;
    this.max = options.maxPending ?? MAX_PENDING_SIGN_INS;
    this.closer = options.close;
  }

  async put(key: string, pending: PendingSignIn, ttlMs: number): Promise<void> {
    try {
      await this.redis.eval(PUT, 2, this.prefix + key, this.index, JSON.stringify(pending), Math.max(1, Math.round(ttlMs)), Date.now(), this.max, this.prefix, key);
    } catch (error) {
      throw unreachable(error);
    }
  }

  async take(key: string): Promise<PendingSignIn | undefined> {
    let raw: unknown;
    try {
      raw = await this.redis.eval(TAKE, 2, this.prefix + key, this.index, key);
    } catch (error) {
      throw unreachable(error);
    }
    if (typeof raw !== 'string' && !Buffer.isBuffer(raw)) return undefined;
    try {
      return JSON.parse(raw.toString()) as PendingSignIn;
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    await this.closer?.();
  }
}

function unreachable(cause: unknown): Error {
  return storeError('SVC_ERR_STORE_UNAVAILABLE', 'the sign-in store (Redis) cannot be reached right now: start the sign-in again', { cause });
}
