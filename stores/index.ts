/**
 * The backends, by technology — each tech folder implements the seams its
 * technology serves and registers itself with them by URI scheme (or storage
 * type): `sqlite/` (the default), `memory/`, `postgres/`, `mongo/`, `redis/`,
 * `s3/`, `local/`. Importing this door registers every built-in backend; the
 * runtime, the CLI and the package door import it once. The seams themselves
 * (`AnchorStore`, `UsersRepository`, `DocBackend`, `KvBackend`, `Storage`,
 * `StreamBackend`) belong to the rooms that use them and import no backend.
 */
import './sqlite/index.ts';
import './memory/index.ts';
import './postgres/index.ts';
import './mongo/index.ts';
import './redis/index.ts';
import './local/index.ts';
import './s3/index.ts';

export { SqliteStore, defaultStorePath, SqliteUsersRepository } from './sqlite/index.ts';
export type { SqliteStoreOptions } from './sqlite/index.ts';
export { MemoryStore, MemoryUsersRepository, MemoryStreams, ActorStreams, serveMemoryStreams, servesMemoryStreams, EVENTS_MEMORY_ACTOR } from './memory/index.ts';
export { redactUri, takeServingLock } from './postgres/index.ts';
export { redactUrl, openRedis, connectRedis, whenReady, RedisRateLimiter, RedisSsoStates } from './redis/index.ts';
export type { OpenRedisOptions, RedisRateLimiterOptions, SsoRedis } from './redis/index.ts';
