/**
 * Redis (ioredis): the connection every Redis user opens the same way (no
 * offline queue, capped reconnect backoff, credentials redacted), and the
 * backends on it — keys of `kvstore(…, 'kv')`, event streams (Redis Streams),
 * rate limits and sign-in states shared by a cluster. Importing this door
 * registers the kv and stream backends for `redis://` and `rediss://`.
 */
import { registerKvBackend } from '../../actors/data/index.ts';
import { registerStreams } from '../../actors/events/index.ts';
import { openRedisKv } from './kv.ts';
import { RedisStreams } from './streams.ts';

export { redactUrl, openRedis, connectRedis, whenReady, clusterKey, redisUnreachable, reconnectDelay, RedisScript, UNPARSEABLE_URL } from './connection.ts';
export type { OpenRedisOptions } from './connection.ts';
export { RedisKv, openRedisKv } from './kv.ts';
export { RedisStreams } from './streams.ts';
export type { RedisStreamsOptions } from './streams.ts';
export { RedisRateLimiter } from './rate-limit.ts';
export type { RedisRateLimiterOptions } from './rate-limit.ts';
export { RedisSsoStates } from './sso-states.ts';
export type { SsoRedis } from './sso-states.ts';

for (const scheme of ['redis', 'rediss']) {
  registerKvBackend(scheme, (uri, o) => openRedisKv(uri.uri, o.dbName));
  registerStreams(scheme, (uri, o) => new RedisStreams({ url: uri.uri, ...o }));
}
