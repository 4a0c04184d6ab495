/**
 * The `kv` backend of `kvstore(dbName, 'kv')` on Redis
 * (ioredis): strings under keys, with expiry, counters, key scans, and the two
 * atomic steps locks are made of — set-if-absent with a mandatory expiry
 * (`SET NX PX`) and compare-and-delete (a Lua script, so no other client's
 * command runs between the compare and the delete).
 *
 * Keys are namespaced: `kvstore('cache', 'kv').set('a', …)` writes the Redis
 * key `cache:a`, and `scanKeys` answers keys without the namespace. Values are
 * strings, as Redis holds them (a number is stored as its decimal text);
 * `getJson` / `setJson` are the JSON helpers. TTLs are in seconds, as the
 * original product's `set_with_ttl(key, value, ttl)`; fractions are kept (milliseconds).
 *
 * One client per URL and thread is shared by every handle (see the facade);
 * it fails fast while Redis is down (no offline queue): a call answers
 * `KV_UNAVAILABLE` at once instead of waiting.
 */
import type { Redis } from 'ioredis';
import { kvstoreError, type KvBackend, type KvValue } from '../../actors/data/index.ts';
import { openRedis, redactUrl } from './connection.ts';

/** Deletes KEYS[1] only if it holds ARGV[1]; 1 if deleted. */
const DELETE_IF_EQUALS = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/** Sets a new expiry (ms, ARGV[2]) on KEYS[1] only if it holds ARGV[1]; 1 if renewed. */
const EXPIRE_IF_EQUALS = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;

function text(value: unknown, what: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw kvstoreError('INVALID_QUERY', `${what}: kv values are strings (or numbers, stored as text); use setJson for objects`);
}

function ttlMs(seconds: unknown, what: string): number {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 10 * 365 * 24 * 3600) {
    throw kvstoreError('INVALID_QUERY', `${what}: the TTL is a number of seconds > 0 (at most ten years), got ${JSON.stringify(seconds)}`);
  }
  return Math.max(1, Math.ceil(seconds * 1000));
}

function unavailable(error: unknown): never {
  if ((error as { code?: unknown })?.code === 'INVALID_QUERY') throw error;
  const message = error instanceof Error ? error.message : String(error);
  // Redis answered, and refused the command for the data it holds (INCR of a non-number, a key of another type).
  if ((error as { name?: unknown })?.name === 'ReplyError') throw kvstoreError('INVALID_QUERY', `Redis refused it: ${message}`, { cause: error });
  throw kvstoreError('KV_UNAVAILABLE', `Redis: ${message}`, { cause: error });
}

export class RedisKv implements KvBackend {
  private readonly prefix: string;

  /** `ready`: resolves once the shared client can take commands (rejects when Redis cannot be reached); `release`: this handle lets go of the client. */
  constructor(
    private readonly redis: Redis,
    readonly dbName: string,
    private readonly ready: () => Promise<void>,
    private readonly release: () => Promise<void> = async () => {},
  ) {
    this.prefix = `${dbName}:`;
  }

  async close(): Promise<void> {
    await this.release();
  }

  private key(key: unknown): string {
    if (typeof key !== 'string' || key === '') throw kvstoreError('INVALID_NAME', `a kv key is a non-empty string, got ${JSON.stringify(key)}`);
    return this.prefix + key;
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      await this.ready();
      return await work();
    } catch (error) {
      return unavailable(error);
    }
  }

  /** The string at `key`, or `null`. */
  async get(key: string): Promise<string | null> {
    const k = this.key(key);
    return this.call(() => this.redis.get(k));
  }

  async set(key: string, value: KvValue): Promise<void> {
    const k = this.key(key);
    const v = text(value, `set(${JSON.stringify(key)})`);
    return this.call(async () => void (await this.redis.set(k, v)));
  }

  /** Whether the key existed. */
  async delete(key: string): Promise<boolean> {
    const k = this.key(key);
    return this.call(async () => (await this.redis.del(k)) === 1);
  }

  async exists(key: string): Promise<boolean> {
    const k = this.key(key);
    return this.call(async () => (await this.redis.exists(k)) === 1);
  }

  /** `set_with_ttl`: set, expiring after `ttlSeconds`. */
  async setWithTtl(key: string, value: KvValue, ttlSeconds: number): Promise<void> {
    const k = this.key(key);
    const v = text(value, `setWithTtl(${JSON.stringify(key)})`);
    const ms = ttlMs(ttlSeconds, `setWithTtl(${JSON.stringify(key)})`);
    return this.call(async () => void (await this.redis.set(k, v, 'PX', ms)));
  }

  /** `expire`: a new expiry for an existing key; false when there is no such key. */
  async expire(key: string, seconds: number): Promise<boolean> {
    const k = this.key(key);
    const ms = ttlMs(seconds, `expire(${JSON.stringify(key)})`);
    return this.call(async () => (await this.redis.pexpire(k, ms)) === 1);
  }

  /** `incr`: add one (a missing key counts from 0); the new value. */
  async incr(key: string): Promise<number> {
    const k = this.key(key);
    return this.call(() => this.redis.incr(k));
  }

  /** `scan_keys`: the keys matching a glob `pattern` (Redis `MATCH` syntax), without the namespace; SCAN, never KEYS. */
  async scanKeys(pattern = '*'): Promise<string[]> {
    if (typeof pattern !== 'string') throw kvstoreError('INVALID_QUERY', 'scanKeys(pattern): a glob pattern string');
    const match = this.prefix + pattern;
    return this.call(async () => {
      const found = new Set<string>();
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        for (const k of keys) found.add(k.slice(this.prefix.length));
        cursor = next;
      } while (cursor !== '0');
      return [...found].sort();
    });
  }

  /** `set_nx_with_ttl`: set only if absent, with a mandatory expiry; whether it was set. */
  async setNxWithTtl(key: string, value: KvValue, ttlSeconds: number): Promise<boolean> {
    const k = this.key(key);
    const v = text(value, `setNxWithTtl(${JSON.stringify(key)})`);
    const ms = ttlMs(ttlSeconds, `setNxWithTtl(${JSON.stringify(key)})`);
    return this.call(async () => (await this.redis.set(k, v, 'PX', ms, 'NX')) === 'OK');
  }

  /** `delete_if_equals`: delete only if the key holds `expected`, atomically; whether it was deleted. */
  async deleteIfEquals(key: string, expected: KvValue): Promise<boolean> {
    const k = this.key(key);
    const v = text(expected, `deleteIfEquals(${JSON.stringify(key)})`);
    return this.call(async () => Number(await this.redis.eval(DELETE_IF_EQUALS, 1, k, v)) === 1);
  }

  /** svc's own addition: a new expiry only if the key holds `expected`, atomically (a lock renewing itself); whether it was renewed. */
  async expireIfEquals(key: string, expected: KvValue, ttlSeconds: number): Promise<boolean> {
    const k = this.key(key);
    const v = text(expected, `expireIfEquals(${JSON.stringify(key)})`);
    const ms = ttlMs(ttlSeconds, `expireIfEquals(${JSON.stringify(key)})`);
    return this.call(async () => Number(await this.redis.eval(EXPIRE_IF_EQUALS, 1, k, v, ms)) === 1);
  }

  /** svc's own addition: the value at `key` parsed as JSON (`null` when absent). */
  async getJson<T = unknown>(key: string): Promise<T | null> {
    const raw = await this.get(key);
    if (raw === null) return null;
    try {
      return JSON.parse(raw) as T;
    } catch {
      throw kvstoreError('INVALID_QUERY', `getJson(${JSON.stringify(key)}): the value is not JSON`);
    }
  }

  /** svc's own addition: `value` stored as JSON text, with an optional TTL in seconds. */
  async setJson(key: string, value: unknown, ttlSeconds?: number): Promise<void> {
    const json = JSON.stringify(value);
    if (json === undefined) throw kvstoreError('INVALID_QUERY', `setJson(${JSON.stringify(key)}): the value has no JSON form`);
    return ttlSeconds === undefined ? this.set(key, json) : this.setWithTtl(key, json, ttlSeconds);
  }
}

// ---- connections: one client per URL and thread, shared by every handle ----

interface SharedClient {
  redis: Redis;
  ready: Promise<void> | undefined;
  failed: boolean;
  handles: number;
}

const clients = new Map<string, SharedClient>();

/** The first connection of a client: ready, or its first error (not a wait through every retry), or 5 s. */
function firstConnection(redis: Redis, url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: unknown): void => {
      clearTimeout(timer);
      redis.off('ready', onReady).off('error', onError);
      if (error === undefined) resolve();
      else reject(kvstoreError('KV_UNAVAILABLE', `Redis at ${redactUrl(url)} cannot be reached${error instanceof Error ? `: ${error.message}` : ''}`, { cause: error }));
    };
    const onReady = (): void => done();
    const onError = (error: unknown): void => done(error ?? new Error('connection failed'));
    const timer = setTimeout(() => done(new Error('no answer within 5 s')), 5_000);
    redis.on('ready', onReady).on('error', onError);
  });
}

/**
 * A kv backend on the Redis at `url`, namespace `dbName`: the thread's client
 * for that URL, made on first use and closed when its last handle closes.
 * Calls fail at once with `KV_UNAVAILABLE` while Redis is down (the client
 * reconnects in the background); the first connection is one wait for every
 * caller, up to 5 s.
 *
 * @example
 * const kv = openRedisKv('redis://127.0.0.1:6379', 'cache');
 * await kv.setWithTtl('greeting', 'hello', 60);
 */
export function openRedisKv(url: string, dbName: string): RedisKv {
  let entry = clients.get(url);
  if (entry === undefined) {
    const redis = openRedis(url, { name: 'kvstore', onError: () => {} });
    const made: SharedClient = { redis, ready: undefined, failed: false, handles: 0 };
    // Once a connection attempt has failed, calls fail at once until it is back (ready).
    redis.on('error', () => (made.failed = true));
    redis.on('ready', () => (made.failed = false));
    entry = made;
    clients.set(url, entry);
  }
  const held = entry;
  held.handles++;
  const ready = (): Promise<void> => {
    const status = held.redis.status;
    if (status === 'ready') return Promise.resolve();
    // Down (it was up, or its first attempt failed): fail at once while the client reconnects in the background.
    if (status === 'reconnecting' || status === 'close' || status === 'end' || held.failed) {
      return Promise.reject(kvstoreError('KV_UNAVAILABLE', `Redis at ${redactUrl(url)} cannot be reached right now`));
    }
    // The first connection: one wait for every caller, up to the connect timeout.
    held.ready ??= firstConnection(held.redis, url).finally(() => (held.ready = undefined));
    return held.ready;
  };
  let released = false;
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    if (--held.handles > 0) return;
    if (clients.get(url) === held) clients.delete(url);
    await held.redis.quit().catch(() => held.redis.disconnect());
  };
  return new RedisKv(held.redis, dbName, ready, release);
}
