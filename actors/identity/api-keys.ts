/**
 * API keys (README *API keys*): what webhooks authenticate with. A key is
 * 256 random bits shown once at creation; only its SHA-256 is kept (with the
 * users, so keys survive restarts and live in the shared store when one is
 * configured). A key is never a JWT signed with the session secret (the
 * Python original's were): leaking the secret does not mint keys, and a
 * revoked key is gone from the store.
 *
 * Checking a key ({@link ApiKeys.check}) reads the store once per key and
 * thread, then answers from memory; revoking one (or deleting, disabling or
 * demoting its owner: any revocation of the owner's tokens) drops it from
 * every thread's memory before the revocation is acknowledged (the same
 * broadcast as token revocations), and what memory holds is read again after
 * a few seconds in any case.
 */
import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import Type from 'typebox';
import type { Broadcast } from '../../kernel/index.ts';
import { bodyCheck } from './body-check.ts';
import { identityError, invalid, notFound } from './errors.ts';
import type { RevocationTable } from './revocations.ts';
import type { ApiKeyRecord, UserRecord, UsersRepository } from './users-repository.ts';
import type { Caller } from '../walker/index.ts';

/** Who a good key belongs to, for a webhook run. */
export interface ApiKeyHolder {
  readonly keyId: string;
  readonly userId: string;
  /** Who the walker runs for: the key owner, on their root. */
  readonly caller: Readonly<Caller>;
  /** The webhook walkers the key may run; null: any. */
  readonly walkers: readonly string[] | null;
}

/** What `/api-key/create` answers (the key itself only there, once). */
export interface CreatedApiKey {
  api_key: string;
  api_key_id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  walkers: string[] | null;
}

/** An item of `/api-key/list`: no secret, not even its hash. */
export interface ListedApiKey {
  api_key_id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  walkers: string[] | null;
  expired: boolean;
}
/** The broadcast topic of revoked keys. */
export const API_KEYS_TOPIC = 'identity.api-keys';

/** `svc_` and 32 random bytes, base64url (43 characters). */
const KEY_SHAPE = /^svc_[A-Za-z0-9_-]{43}$/;
const WALKER_NAME = /^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/;

/** The body of `POST /api-key/create`. */
export const API_KEY_BODY = bodyCheck(
  Type.Object({
    name: Type.String({ minLength: 1, maxLength: 100, description: 'what the key is for (shown in the list)' }),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 36_500, description: 'days until the key stops working; 0: never. Default: [scale.webhook] api_key_expiry_days (365)' })),
    walkers: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 100, uniqueItems: true, description: 'the webhook walkers the key may run; absent: every one' })),
  }),
);

export interface ApiKeysOptions {
  users: UsersRepository;
  /** Revocations of a user's tokens (deleted, disabled, demoted, new password): their keys are read again. */
  revocations?: RevocationTable;
  /** Where revoked keys are announced to the other threads and members. */
  bus?: Broadcast;
  /** Lifetime of a new key in days when its request does not say; 0: permanent. */
  expiryDays: number;
  maxPerUser: number;
  /** The app's webhook walkers: an allow-list may name only these (absent: not checked). */
  webhookWalkers?: ReadonlySet<string>;
  /** How long a key read from the store is trusted without reading it again (ms, 5,000). */
  cacheMs?: number;
  /** At most this many keys are remembered per thread (10,000). */
  cacheSize?: number;
  clock?: () => number;
}

interface Cached {
  /** undefined: no such key. */
  key: ApiKeyRecord | undefined;
  /** undefined: the owner is gone. */
  owner: Pick<UserRecord, 'status' | 'root_id' | 'role'> | undefined;
  readAt: number;
  holder: ApiKeyHolder | undefined;
  /** The stored hash as bytes (compared on every check). */
  stored: Buffer | undefined;
  /** `expires_at` in ms (Infinity: never). */
  expiresMs: number;
}

/**
 * @example
 * const keys = new ApiKeys({ users, revocations, bus, expiryDays: 365, maxPerUser: 100 });
 * const created = await keys.create(userId, { name: 'billing webhook' });
 * const holder = await keys.check(created.api_key); // { userId, caller, walkers, keyId }
 */
export class ApiKeys {
  private readonly cache = new Map<string, Cached>();
  private readonly reading = new Map<string, Promise<ApiKeyHolder | undefined>>();
  /** Moves on at every revocation: a store read that began before one does not fill memory (it may have read the key before it went). */
  private generation = 0;
  private readonly cacheMs: number;
  private readonly cacheSize: number;
  private readonly clock: () => number;

  constructor(private readonly o: ApiKeysOptions) {
    this.cacheMs = o.cacheMs ?? 5000;
    this.cacheSize = o.cacheSize ?? 10_000;
    this.clock = o.clock ?? Date.now;
    o.revocations?.listen((userId) => this.forget((c) => c.key?.user_id === userId));
    o.bus?.subscribe(API_KEYS_TOPIC, (msg) => {
      const { keyHash } = msg as { keyHash: string };
      this.drop(keyHash);
      return true;
    });
  }

  /** A new key for a user: the key itself is in this answer and nowhere else, ever. */
  async create(userId: string, body: unknown): Promise<CreatedApiKey> {
    const { name, expires_in_days, walkers } = API_KEY_BODY.parse(body);
    // A typo (`expires_days`) must not quietly make a key that lives a year.
    for (const field of Object.keys(body as object)) if (!Object.hasOwn(API_KEY_BODY.schema.properties, field)) throw invalid(field, 'unknown field (name, expires_in_days, walkers)');
    if (name.trim() === '') throw invalid('name', 'must not be blank');
    for (const [i, w] of (walkers ?? []).entries()) {
      if (!WALKER_NAME.test(w)) throw invalid(`walkers[${i}]`, 'is not a walker name');
      if (this.o.webhookWalkers && !this.o.webhookWalkers.has(w)) throw invalid(`walkers[${i}]`, `${w} is not a webhook walker of this app`);
    }
    const owner = await this.o.users.byId(userId);
    if (!owner) throw notFound('no such user');
    if ((await this.o.users.apiKeysOf(userId)).length >= this.o.maxPerUser) throw identityError('TOO_MANY_API_KEYS', `a user holds at most ${this.o.maxPerUser} API keys ([scale.webhook] max_api_keys_per_user): revoke one first`);
    const days = expires_in_days ?? this.o.expiryDays;
    const now = this.clock();
    const key = `svc_${randomBytes(32).toString('base64url')}`;
    const record: ApiKeyRecord = {
      api_key_id: randomBytes(16).toString('hex'),
      user_id: userId,
      name: name.trim(),
      key_hash: hashKey(key),
      walkers: walkers ? [...walkers] : null,
      created_at: new Date(now).toISOString(),
      expires_at: days === 0 ? null : new Date(now + days * 86_400_000).toISOString(),
    };
    await this.o.users.putApiKey(record);
    // Creations racing past the count above (other threads, other members): the one that finds too many takes its own back.
    if ((await this.o.users.apiKeysOf(userId)).length > this.o.maxPerUser) {
      await this.o.users.deleteApiKey(userId, record.api_key_id);
      throw identityError('TOO_MANY_API_KEYS', `a user holds at most ${this.o.maxPerUser} API keys ([scale.webhook] max_api_keys_per_user): revoke one first`);
    }
    return { api_key: key, api_key_id: record.api_key_id, name: record.name, created_at: record.created_at, expires_at: record.expires_at, walkers: record.walkers };
  }

  /** The user's keys, without secrets. */
  async list(userId: string): Promise<ListedApiKey[]> {
    const now = this.clock();
    return (await this.o.users.apiKeysOf(userId)).map((k) => ({
      api_key_id: k.api_key_id,
      name: k.name,
      created_at: k.created_at,
      expires_at: k.expires_at,
      walkers: k.walkers,
      expired: k.expires_at !== null && Date.parse(k.expires_at) <= now,
    }));
  }

  /** Revoke one of the user's keys: gone from the store, then from every thread's memory, before this resolves. */
  async revoke(userId: string, apiKeyId: string): Promise<{ revoked: true; api_key_id: string }> {
    if (!/^[0-9a-f]{32}$/.test(apiKeyId)) throw notFound('no such API key');
    const key = (await this.o.users.apiKeysOf(userId)).find((k) => k.api_key_id === apiKeyId);
    if (!key || !(await this.o.users.deleteApiKey(userId, apiKeyId))) throw notFound('no such API key');
    this.drop(key.key_hash);
    // A member that is gone needs nothing; one that comes back starts with an empty memory.
    await this.o.bus?.gather(API_KEYS_TOPIC, { keyHash: key.key_hash }, 2000);
    return { revoked: true, api_key_id: apiKeyId };
  }

  /**
   * Who holds this key: undefined when it is malformed, unknown, expired,
   * revoked, or its owner is gone or disabled. Answers at once from memory
   * (no promise) when the key was read in the last few seconds.
   */
  check(key: string): ApiKeyHolder | undefined | Promise<ApiKeyHolder | undefined> {
    if (!KEY_SHAPE.test(key)) return undefined;
    const digest = sha256(key);
    const hash = digest.toString('hex');
    const cached = this.cache.get(hash);
    if (cached !== undefined && this.clock() - cached.readAt < this.cacheMs) return this.judge(cached, digest);
    let pending = this.reading.get(hash);
    if (!pending) {
      const read: Promise<ApiKeyHolder | undefined> = this.read(hash, digest).finally(() => {
        if (this.reading.get(hash) === read) this.reading.delete(hash);
      });
      this.reading.set(hash, (pending = read));
    }
    return pending;
  }

  private async read(hash: string, digest: Buffer): Promise<ApiKeyHolder | undefined> {
    const generation = this.generation;
    const key = await this.o.users.apiKeyByHash(hash);
    const user = key ? await this.o.users.byId(key.user_id) : undefined;
    const stored = key && /^[0-9a-f]{64}$/.test(key.key_hash) ? Buffer.from(key.key_hash, 'hex') : undefined;
    const entry: Cached = { key, owner: user && { status: user.status, root_id: user.root_id, role: user.role }, readAt: this.clock(), holder: undefined, stored, expiresMs: key?.expires_at ? Date.parse(key.expires_at) : Infinity };
    if (generation === this.generation) {
      if (this.cache.size >= this.cacheSize) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.delete(hash);
      this.cache.set(hash, entry);
    }
    return this.judge(entry, digest);
  }

  private judge(entry: Cached, digest: Buffer): ApiKeyHolder | undefined {
    const { key, owner, stored } = entry;
    if (!key || !owner || !stored || owner.status !== 'active') return undefined;
    // The lookup went by this hash; compared again in constant time all the same.
    if (stored.length !== digest.length || !timingSafeEqual(stored, digest)) return undefined;
    if (entry.expiresMs <= this.clock()) return undefined;
    return (entry.holder ??= Object.freeze({
      keyId: key.api_key_id,
      userId: key.user_id,
      caller: Object.freeze({ userId: key.user_id, rootId: owner.root_id, role: owner.role }),
      walkers: key.walkers === null ? null : Object.freeze([...key.walkers]),
    }));
  }

  /** A key revoked: out of memory, and reads under way do not put it back (checks after this read again). */
  private drop(hash: string): void {
    this.generation++;
    this.cache.delete(hash);
    this.reading.delete(hash);
  }

  private forget(match: (c: Cached) => boolean): void {
    this.generation++;
    // Reads under way may carry what the revocation changed: later checks start their own.
    this.reading.clear();
    for (const [hash, c] of this.cache) if (match(c)) this.cache.delete(hash);
  }
}

/** SHA-256 as bytes: the one-shot `crypto.hash` (Node ≥ 20.12, about twice as fast: no Hash object) where there is one. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;
const sha256: (data: string) => Buffer = oneShot ? (data) => oneShot('sha256', data, 'buffer') : (data) => createHash('sha256').update(data).digest();

/** SHA-256 of a key, lower-case hex: what the store keeps. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
