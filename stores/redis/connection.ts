/**
 * Connections to Redis, the cluster's shared memory: how they are opened,
 * how they fail, and how their URLs are shown.
 *
 * Failure is fast and visible. A client from {@link openRedis} has no offline
 * queue (`enableOfflineQueue: false`): a command sent while the connection is
 * down is rejected at once instead of waiting, unbounded, for a reconnect —
 * every caller in `cluster/` has something better to do than wait (the rate
 * limiter counts per process, a lease retries until its deadline, an
 * invalidation is reported). For the same reason a command in flight when the
 * connection drops is rejected at once (`maxRetriesPerRequest: 0`) and never
 * resent (`autoResendUnfulfilledCommands: false`: INCR and PUBLISH are not
 * idempotent). The client itself keeps reconnecting, forever, with a capped
 * exponential backoff (50 ms doubling to 2 s). The price of no offline queue:
 * a fresh client accepts commands only once it is ready — {@link connectRedis}
 * and {@link whenReady} wait for that.
 *
 * Errors of the connection are reported once per outage (the first error
 * after the client was last ready), not once per reconnect attempt.
 *
 * A URL carries a password; {@link redactUrl} is the only way a URL reaches a
 * log line or an error message.
 *
 * Keys of a cluster live under `svc:{<cluster>}:` — the braces are a Redis
 * Cluster hash tag, so every key of one cluster is in one slot and a Lua
 * script may touch several of them.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import { SvcError } from '../../kernel/index.ts';

// ioredis is loaded with the first connection: an app with no KV_URL, no redis:// kv or stream never loads it.
// `require`, not `await import()`: a client is opened synchronously ({@link openRedis}).
const load = createRequire(import.meta.url);
let client: typeof Redis | undefined;
const redisClass = (): typeof Redis => (client ??= (load('ioredis') as { Redis: typeof Redis }).Redis);

/** What {@link redactUrl} answers for something that is not a URL. */
export const UNPARSEABLE_URL = '<unparseable url>';

/** Query parameters whose values are hidden (passwords, tokens, keys, user names). */
const SECRET_PARAM = /pass|pwd|secret|token|key|cred|sig|auth|user|login/i;

/**
 * A URL fit for a log line: user and password hidden, and the values of
 * query parameters that may hold a secret. Any scheme (redis, rediss,
 * postgres, mongodb+srv with several hosts, …). Never throws: what does not
 * look like `scheme://…` becomes {@link UNPARSEABLE_URL}.
 *
 * @example
 * redactUrl('redis://:hunter2@cache:6379/0')            // 'redis://:***@cache:6379/0'
 * redactUrl('postgres://app:pw@db/svc?password=pw')     // 'postgres://***:***@db/svc?password=***'
 */
export function redactUrl(url: string): string {
  if (typeof url !== 'string') return UNPARSEABLE_URL;
  // One line, always: control characters would let a URL forge log lines.
  const clean = url.trim().replace(/[\u0000-\u001f\u007f]/g, '');
  const m = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/is.exec(clean);
  if (!m) return UNPARSEABLE_URL;
  const scheme = m[1] as string;
  let rest = m[2] as string;
  let userinfo = '';
  // The last '@' ends the user info: an unencoded '@' in a password stays hidden. A '@'
  // in a path or query is hidden with it: over-hiding is the safe mistake.
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const user = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = user.indexOf(':');
    userinfo = colon < 0 ? '***@' : `${colon > 0 ? '***' : ''}:***@`;
  }
  return `${scheme}://${userinfo}${redactQuery(rest)}`;
}

/** Hide secret-looking query values and any fragment of `hostAndPath`. */
function redactQuery(hostAndPath: string): string {
  const hash = hostAndPath.indexOf('#');
  const beforeHash = hash < 0 ? hostAndPath : hostAndPath.slice(0, hash);
  const fragment = hash < 0 ? '' : '#***';
  const q = beforeHash.indexOf('?');
  if (q < 0) return beforeHash + fragment;
  const params = beforeHash
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      const name = pair.slice(0, eq);
      return SECRET_PARAM.test(safeDecode(name)) ? `${name}=***` : pair;
    });
  return `${beforeHash.slice(0, q)}?${params.join('&')}${fragment}`;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The secrets a URL carries (raw and decoded), to scrub them from any text that might echo them. */
function secretsOf(url: string): string[] {
  try {
    const u = new URL(url);
    return [u.password, safeDecode(u.password), u.username, safeDecode(u.username)].filter((s) => s.length >= 3);
  } catch {
    return [];
  }
}

/** `text` on one line, without any secret of `url`. */
function scrub(text: string, url: string): string {
  let out = text.replace(/\s+/g, ' ').trim();
  for (const secret of secretsOf(url)) out = out.split(secret).join('***');
  return out;
}

/**
 * The prefix of every key of `cluster`, hash-tagged.
 *
 * @example
 * clusterKey('prod', 'member', processId) // 'svc:{prod}:member:<processId>'
 */
export function clusterKey(cluster: string, ...parts: string[]): string {
  return [`svc:{${cluster}}`, ...parts].join(':');
}

export interface OpenRedisOptions {
  /** Shown by `CLIENT LIST` (`svc:<name>`) and in error messages. */
  name: string;
  /** The first error of each outage (not one per reconnect attempt). */
  onError?(error: unknown): void;
  /** Reject a command that has no answer after this long (default 2 s; svc does no blocking reads on these clients). */
  commandTimeoutMs?: number;
  /** Give up one connection attempt after this long (default 5 s). */
  connectTimeoutMs?: number;
}

/**
 * The delay before reconnect attempt `attempt` (1, 2, …): 50 ms doubling, at most 2 s.
 *
 * @example
 * reconnectDelay(3) // 200
 */
export function reconnectDelay(attempt: number): number {
  return Math.min(50 * 2 ** Math.max(0, attempt - 1), 2000);
}

/**
 * An `SVC_ERR_REDIS_UNREACHABLE` error (503, `cause` kept); `message` must already be redacted.
 *
 * @example
 * throw redisUnreachable(`Redis at ${redactUrl(url)} is unreachable`, error)
 */
export function redisUnreachable(message: string, cause?: unknown): SvcError {
  return new SvcError('SVC_ERR_REDIS_UNREACHABLE', message, { status: 503, cause });
}

/**
 * An ioredis client for a `redis://` or `rediss://` (TLS) URL, connecting at
 * once, failing fast while disconnected (see the file's comment). Throws
 * `SVC_ERR_REDIS_URL` for another scheme or an unparseable URL.
 *
 * @example
 * const redis = openRedis(config.kv_url, { name: 'rate-limit', onError: (e) => log.warn({ err: e }, 'redis down') });
 * await whenReady(redis, 5_000);
 */
export function openRedis(url: string, options: OpenRedisOptions): Redis {
  const shown = redactUrl(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SvcError('SVC_ERR_REDIS_URL', `not a Redis URL: ${shown}`, { status: 500 });
  }
  const tls = parsed.protocol === 'rediss:';
  if (!tls && parsed.protocol !== 'redis:') throw new SvcError('SVC_ERR_REDIS_URL', `a Redis URL is redis:// or rediss://, not ${shown}`, { status: 500 });
  const redisOptions: RedisOptions = {
    connectionName: `svc:${options.name}`,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelay,
    // A failover turned our server into a replica: reconnect (DNS or the proxy finds the new primary) and resend.
    reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 2 : false),
    connectTimeout: options.connectTimeoutMs ?? 5_000,
    // A command Redis never answers (a host cut off without a reset) fails after this, rather than holding a login or a lease.
    commandTimeout: options.commandTimeoutMs ?? 2_000,
    ...(tls ? { tls: { servername: parsed.hostname } } : {}),
  };
  const redis = new (redisClass())(url, redisOptions);
  watchOutages(redis, (error) => options.onError?.(error));
  return redis;
}

/** Report the first error after each 'ready' (and the first before any): once per outage. */
function watchOutages(redis: Redis, report: (error: unknown) => void): void {
  let reported = false;
  redis.on('ready', () => (reported = false));
  redis.on('error', (error: unknown) => {
    if (reported) return;
    reported = true;
    report(error);
  });
}

/**
 * Resolves once `redis` is ready for commands; rejects with
 * `SVC_ERR_REDIS_UNREACHABLE` (carrying the last connection error) after
 * `timeoutMs`, or when the client was closed.
 *
 * @example
 * await whenReady(subscriber, 5_000); await subscriber.subscribe(channel);
 */
export function whenReady(redis: Redis, timeoutMs: number, what = 'Redis'): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError: unknown;
    const onError = (e: unknown): void => void (lastError = e);
    const onReady = (): void => done();
    const onEnd = (): void => done(redisUnreachable(`${what}: the connection was closed`, lastError));
    const timer = setTimeout(() => done(redisUnreachable(`${what} is unreachable after ${timeoutMs} ms${lastError instanceof Error ? `: ${lastError.message}` : ''}`, lastError)), timeoutMs);
    const done = (error?: SvcError): void => {
      clearTimeout(timer);
      redis.off('error', onError).off('ready', onReady).off('end', onEnd);
      if (error) reject(error);
      else resolve();
    };
    redis.on('error', onError).on('ready', onReady).on('end', onEnd);
    if (redis.status === 'end') onEnd();
  });
}

/**
 * Open a client and resolve once it is connected and answers PING; or reject
 * with a one-line `SVC_ERR_REDIS_UNREACHABLE` error naming the URL without its
 * password, after `timeoutMs` (the client is closed then); `SVC_ERR_REDIS_URL`
 * for a URL that is not redis:// or rediss://. For `svc start`: no Redis, no
 * start.
 *
 * @example
 * const redis = await connectRedis(kvUrl, 'main', 5_000).catch((e) => { console.error(e.message); process.exit(1) });
 */
export async function connectRedis(url: string, name: string, timeoutMs: number, onError?: (error: unknown) => void): Promise<Redis> {
  const shown = redactUrl(url);
  // A malformed URL throws SVC_ERR_REDIS_URL here (its message already redacted).
  const redis = openRedis(url, { name, onError: (e) => onError?.(e), connectTimeoutMs: Math.max(1, Math.min(timeoutMs, 5_000)) });
  const deadline = Date.now() + timeoutMs;
  try {
    await whenReady(redis, timeoutMs, `Redis at ${shown}`);
    await withDeadline(redis.ping(), deadline - Date.now(), `Redis at ${shown} did not answer PING within ${timeoutMs} ms`);
    return redis;
  } catch (error) {
    redis.disconnect();
    const message = error instanceof Error ? error.message : String(error);
    throw redisUnreachable(scrub(message.startsWith('Redis at') ? message : `Redis at ${shown}: ${message}`, url), error);
  }
}

function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), Math.max(0, ms))));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * A Lua script run by its SHA1 (EVALSHA), sent in full only when the server
 * does not know it yet (after a restart, say).
 *
 * @example
 * const incr = new RedisScript("return redis.call('INCR', KEYS[1])");
 * const n = await incr.run(redis, ['counter'], []);
 */
export class RedisScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
