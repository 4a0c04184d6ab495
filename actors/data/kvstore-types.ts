/**
 * The document-database contract of `kvstore(dbName, 'docdb')`:
 * Mongo-shaped documents in named collections, on the embedded SQLite,
 * PostgreSQL or MongoDB. Every document has a string `_id` (given, or a
 * generated 24-hex id). Filters take the original product's operators
 * (`$eq $gt $gte $lt $lte $in $ne $and $or`, plus `$nin` and `$exists`),
 * dotted paths reach into nested objects; updates take `$set` (and `$unset`).
 */

export type Document = Record<string, unknown>;
export type Filter = Record<string, unknown>;
export interface Update {
  $set?: Record<string, unknown>;
  $unset?: Record<string, unknown>;
}

export interface FindOptions {
  /** At most this many documents. */
  limit?: number;
  /** Skip this many first. */
  skip?: number;
  /** `{ field: 1 | -1 }`, in key order. */
  sort?: Record<string, 1 | -1>;
}

/** What each docdb backend implements; the `kvstore()` facade adds argument checks and `findNodes`. */
export interface DocBackend {
  readonly kind: 'sqlite' | 'postgres' | 'mongodb';
  /** `get` / `set` / `delete` / `exists`: the document whose `_id` is `key` (`set` replaces it whole, upserting). */
  get(collection: string, key: string): Promise<Document | null>;
  set(collection: string, key: string, value: Document): Promise<void>;
  delete(collection: string, key: string): Promise<boolean>;
  exists(collection: string, key: string): Promise<boolean>;
  findOne(collection: string, filter: Filter): Promise<Document | null>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Document[]>;
  /** Resolves to the inserted `_id`; an `_id` already taken refuses with `DUPLICATE_KEY`. */
  insertOne(collection: string, doc: Document): Promise<string>;
  /** All or none. */
  insertMany(collection: string, docs: Document[]): Promise<string[]>;
  /** Resolve to the number of documents modified (matched and changed, or matched: say which in the docs). */
  updateOne(collection: string, filter: Filter, update: Update): Promise<number>;
  updateMany(collection: string, filter: Filter, update: Update): Promise<number>;
  deleteOne(collection: string, filter: Filter): Promise<number>;
  deleteMany(collection: string, filter: Filter): Promise<number>;
  /** An index on a dotted field path (idempotent), so filters on it do not scan. */
  createIndex(collection: string, field: string): Promise<void>;
  close(): Promise<void>;
}

/** A value under a kv key: a string, or a number stored as its decimal text. */
export type KvValue = string | number;

/**
 * What each kv backend implements (`kvstore(dbName, 'kv')`): strings under
 * keys of one namespace (`dbName`), with expiry, counters, key scans, JSON
 * helpers and the two atomic steps locks are made of. TTLs are in seconds.
 */
export interface KvBackend {
  readonly dbName: string;
  get(key: string): Promise<string | null>;
  set(key: string, value: KvValue): Promise<void>;
  delete(key: string): Promise<boolean>;
  exists(key: string): Promise<boolean>;
  setWithTtl(key: string, value: KvValue, ttlSeconds: number): Promise<void>;
  expire(key: string, seconds: number): Promise<boolean>;
  incr(key: string): Promise<number>;
  /** Keys of this namespace matching a glob pattern, without the namespace. */
  scanKeys(pattern?: string): Promise<string[]>;
  /** Set only if absent, with a mandatory expiry; true if set. */
  setNxWithTtl(key: string, value: KvValue, ttlSeconds: number): Promise<boolean>;
  /** Delete only if it holds `expected`, atomically; true if deleted. */
  deleteIfEquals(key: string, expected: KvValue): Promise<boolean>;
  /** A new expiry only if it holds `expected`, atomically; true if renewed. */
  expireIfEquals(key: string, expected: KvValue, ttlSeconds: number): Promise<boolean>;
  getJson<T = unknown>(key: string): Promise<T | null>;
  setJson(key: string, value: unknown, ttlSeconds?: number): Promise<void>;
  /** Let go of what this handle holds (a connection shared by others stays open until the last lets go). */
  close(): Promise<void>;
}
