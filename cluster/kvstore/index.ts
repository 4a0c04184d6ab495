/**
 * The backends of `kvstore()` (README *Files, documents and locks*): documents (`docdb`) on the
 * embedded SQLite, PostgreSQL or MongoDB behind one interface, keys (`kv`) on
 * Redis, and the distributed locks made of the kv backend's atomic steps.
 * The app-facing facade (names, defaults, connections) is `actors/data`.
 */
export { KVSTORE_ERRORS, kvstoreError } from './errors.ts';
export type { KvstoreErrorCode } from './errors.ts';
export type { DocBackend, Document, Filter, FindOptions, Update } from './types.ts';
export { SqliteDocBackend } from './docdb-sqlite.ts';
export { PgDocBackend } from './docdb-postgres.ts';
export { MongoDocBackend } from './docdb-mongo.ts';
export { matches, validateFilter, validateUpdate, newId } from './query.ts';
export { RedisKv } from './kv-redis.ts';
export { mutex, debounce } from './locks.ts';
export type { Lock, LockKv, MutexOptions, RetryOptions } from './locks.ts';
