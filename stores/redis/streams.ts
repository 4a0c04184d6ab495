/**
 * The {@link StreamBackend} on Redis Streams: durable, shared by every
 * process of the cluster. Each operation is one Redis command (or a short
 * loop of them): `XADD … MAXLEN ~` (with a byte limit, or for a batch of
 * payloads, a Lua script that appends them all and drops the oldest entries
 * past the limit: see `ADD`), `XGROUP CREATE … MKSTREAM`,
 * `XREADGROUP`, `XACK`, `XAUTOCLAIM`, `XCLAIM … JUSTID`, `XINFO`, `SCAN`.
 *
 * Connections. Ordinary commands share one client from {@link openRedis}: no
 * offline queue, so while Redis is down they are rejected at once (a fresh
 * client is waited for, up to 5 s, until it was ready the first time). A
 * blocking read (`XREADGROUP … BLOCK`) holds its connection for the whole
 * wait, so each reader — a stream, group and consumer — gets a dedicated
 * client of its own, made on its first blocking read and kept until
 * {@link RedisStreams.close}; its reads are sent one at a time, each with a
 * command timeout of the block time plus 5 s. `close` drops those
 * connections, and a read blocked on one resolves to no entries.
 *
 * Redis quirks handled here: an entry trimmed away while pending comes back
 * from `XREADGROUP … 0` (and, on Redis 6.2, from `XAUTOCLAIM`) with nil
 * fields — it is skipped and acknowledged; Redis ≥ 7 lists such ids as
 * `XAUTOCLAIM`'s third element instead (acknowledged too, which is a no-op
 * where Redis already dropped them). `BLOCK 0` would block forever, so a
 * read with `blockMs` 0 sends no `BLOCK` at all. `XINFO GROUPS` has `lag`
 * only from Redis 7 on (and nil when Redis cannot tell): null then.
 *
 * @example
 * const streams = new RedisStreams({ url: config.kv_url, name: 'events', onError: (e) => log.warn({ err: e }, 'redis down') });
 * await streams.ensureGroup('svc:{prod}:events:orders', 'billing', 'latest');
 * await streams.add('svc:{prod}:events:orders', JSON.stringify(event), 10_000);
 * for (const entry of await streams.read('svc:{prod}:events:orders', 'billing', processId, 100, 5_000)) handle(entry);
 */
import type { Redis } from 'ioredis';
import { openRedis, RedisScript, redisUnreachable, whenReady } from './connection.ts';
import type { AddManyResult, StartFrom, StreamBackend, StreamEntry, StreamInfo } from '../../actors/events/index.ts';

export interface RedisStreamsOptions {
  /** `redis://` or `rediss://`. */
  url: string;
  /** Names the connections (`CLIENT LIST`: `svc:<name>`, `svc:<name>:block`). */
  name: string;
  /** The first error of each outage, per connection. */
  onError?(error: unknown): void;
}

/** The field holding an entry's payload. */
const FIELD = 'e';

/**
 * The key of a stream's byte account: a hash of `a` (UTF-8 bytes ever
 * appended: the end offset of the newest entry) and `s` (the offset where the
 * oldest entry kept starts, or an earlier one). A space cannot be in a topic,
 * so no topic's stream has this name; `SCAN … TYPE stream` does not list it.
 */
function bytesKey(stream: string): string {
  return `${stream} bytes`;
}

/**
 * XADD of one or more payloads, in order, trimmed by entries (`MAXLEN ~`)
 * and, when `maxBytes` > 0, by bytes — in one step. KEYS: the stream, its
 * byte account; ARGV: maxLen (0: none), maxBytes (0: none), the payloads.
 * Answers `{ids}`, or `{ids, error}` when Redis refused part way: the ids of
 * the entries appended before it, the rest not appended (and not accounted).
 *
 * Byte trimming: each entry carries `c`, its end offset in the account, whose
 * `a` is the end offset of the newest entry (written once, after the batch)
 * and `s` where the oldest entry kept starts, or an earlier offset. The
 * bytes kept are at most `a - s`; while that is over the limit, the oldest
 * entry is read (its start is `c` less its payload's length) and deleted,
 * until the rest fits — each entry is read once, when it is dropped, so the
 * cost per append stays constant. Trimming once after the batch keeps what
 * trimming after each of its entries would: the longest run of newest
 * entries that fits, the newest always. Entries appended by others (no `c`)
 * are not accounted: byte trimming stops at one (`MAXLEN` still bounds them).
 * An account lost while its stream lives (a key deleted by hand) goes on from
 * the newest entry's `c`.
 */
const ADD = new RedisScript(`
local function field(fields, name)
  for i = 1, #fields, 2 do if fields[i] == name then return fields[i + 1] end end
  return nil
end
-- Offsets as integer text (Lua 5.1 would write a large number as 1e+15).
local function int(n) return string.format('%.0f', n) end
local function refused(r) return type(r) == 'table' and r.err end
local maxLen, maxBytes = tonumber(ARGV[1]), tonumber(ARGV[2])
local ids = {}
local function xadd(payload, c)
  local r
  if c and maxLen > 0 then r = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${FIELD}', payload, 'c', c)
  elseif c then r = redis.pcall('XADD', KEYS[1], '*', '${FIELD}', payload, 'c', c)
  elseif maxLen > 0 then r = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*', '${FIELD}', payload)
  else r = redis.pcall('XADD', KEYS[1], '*', '${FIELD}', payload) end
  if refused(r) then return nil, r.err end
  return r
end
if maxBytes <= 0 then
  for i = 3, #ARGV do
    local id, err = xadd(ARGV[i], nil)
    if not id then return {ids, err} end
    ids[#ids + 1] = id
  end
  return {ids}
end
local offset = tonumber(redis.call('HGET', KEYS[2], 'a') or '0')
if offset == 0 then
  local n = redis.pcall('XLEN', KEYS[1])
  if refused(n) then return {ids, n.err} end
  if n > 0 then
    local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
    offset = tonumber(last and field(last[2], 'c') or '0')
  end
end
local failed
for i = 3, #ARGV do
  local size = string.len(ARGV[i])
  local id, err = xadd(ARGV[i], int(offset + size))
  if not id then
    failed = err
    break
  end
  offset = offset + size
  ids[#ids + 1] = id
end
local newest = ids[#ids]
if newest then
  redis.call('HSET', KEYS[2], 'a', int(offset))
  local start = tonumber(redis.call('HGET', KEYS[2], 's') or '0')
  if offset - start > maxBytes then
    while true do
      local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
      if not first or first[1] == newest then break end
      local c = field(first[2], 'c')
      if not c then break end
      local begins = tonumber(c) - string.len(field(first[2], '${FIELD}') or '')
      if offset - begins <= maxBytes then
        start = begins
        break
      end
      redis.call('XDEL', KEYS[1], first[1])
      start = tonumber(c)
    end
    redis.call('HSET', KEYS[2], 's', int(start))
  end
end
if failed then return {ids, failed} end
return {ids}
`);
/** How long a command waits for a fresh connection to become ready the first time. */
const FIRST_READY_MS = 5_000;
/** A blocking read's command timeout beyond its block time. */
const BLOCK_GRACE_MS = 5_000;

/** A dedicated connection for one reader's blocking reads. */
interface Blocker {
  redis: Redis;
  /** The read in progress (reads of one reader go one at a time). */
  turn: Promise<unknown>;
  /** Reads waiting or running on it. */
  busy: number;
}

/** Blocking connections kept at most (readers of many topics: the least recently used idle one is closed). */
const MAX_BLOCKERS = 16;

/** XAUTOCLAIM calls of one claim at most (each scans up to COUNT × 10 pending entries). */
const MAX_CLAIM_CALLS = 4;

export class RedisStreams implements StreamBackend {
  readonly kind = 'redis' as const;
  private readonly redis: Redis;
  private readonly blockers = new Map<string, Blocker>();
  private readonly connected = new WeakSet<Redis>();
  private closed = false;

  constructor(private readonly options: RedisStreamsOptions) {
    this.redis = this.open(options.name, 2_000);
    // Commands issued in one turn of the event loop leave in one write (acks, touches, plain appends): measured in bench/events.ts.
    this.redis.options.enableAutoPipelining = true;
    // Appends through the script are batches already (addMany): sent at once, not held for the next turn
    // behind the pipeline in flight (autopipelining keeps one at a time).
    this.redis.options.autoPipeliningIgnoredCommands = [...(this.redis.options.autoPipeliningIgnoredCommands ?? []), 'evalsha', 'eval'];
  }

  async add(stream: string, payload: string, maxLen: number, maxBytes = 0): Promise<string> {
    const len = Number.isFinite(maxLen) && maxLen > 0 ? Math.floor(maxLen) : 0;
    if (!(Number.isFinite(maxBytes) && maxBytes > 0)) {
      return String(await this.call('XADD', stream, ...(len > 0 ? ['MAXLEN', '~', len] : []), '*', FIELD, payload));
    }
    const { ids, error } = await this.addMany(stream, [payload], len, maxBytes);
    if (error) throw error;
    return ids[0] as string;
  }

  /** One script call (EVALSHA) for the whole batch: one command to send, one reply, one timer, whatever the number of payloads. */
  async addMany(stream: string, payloads: readonly string[], maxLen: number, maxBytes = 0): Promise<AddManyResult> {
    if (payloads.length === 0) return { ids: [] };
    const len = Number.isFinite(maxLen) && maxLen > 0 ? Math.floor(maxLen) : 0;
    const bytes = Number.isFinite(maxBytes) && maxBytes > 0 ? Math.floor(maxBytes) : 0;
    await this.ready(this.redis);
    const reply = (await ADD.run(this.redis, [stream, bytesKey(stream)], [len, bytes, ...payloads])) as [unknown[], unknown?];
    const ids = Array.isArray(reply[0]) ? reply[0].map(String) : [];
    return reply[1] === undefined || reply[1] === null ? { ids } : { ids, error: new Error(String(reply[1])) };
  }

  async ensureGroup(stream: string, group: string, startFrom: StartFrom): Promise<boolean> {
    const id = startFrom === 'latest' ? '$' : startFrom === 'earliest' ? '0' : startFrom;
    try {
      await this.call('XGROUP', 'CREATE', stream, group, id, 'MKSTREAM');
      return true;
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('BUSYGROUP')) return false;
      throw error;
    }
  }

  async read(stream: string, group: string, consumer: string, count: number, blockMs: number, pending = false): Promise<StreamEntry[]> {
    if (count <= 0) return [];
    if (pending) {
      // Own pending entries from the start. Trimmed ones (nil fields) are acknowledged and
      // skipped; when that leaves the page short, read on: more may be pending behind them.
      for (;;) {
        const { entries, gone } = parseEntries(streamEntriesOf(await this.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, '0')));
        if (gone.length === 0) return entries;
        await this.ack(stream, group, gone);
        if (entries.length > 0) return entries;
      }
    }
    const args = ['GROUP', group, consumer, 'COUNT', count, ...(blockMs > 0 ? ['BLOCK', Math.ceil(blockMs)] : []), 'STREAMS', stream, '>'];
    let reply: unknown;
    if (blockMs > 0) reply = await this.blockingRead(`${stream}\n${group}\n${consumer}`, blockMs, args);
    else {
      await this.ready(this.redis);
      reply = await readGroup(this.redis, args);
    }
    // New entries cannot have been trimmed yet; should one be, it is handled as above.
    const { entries, gone } = parseEntries(streamEntriesOf(reply));
    if (gone.length > 0) await this.ack(stream, group, gone);
    return entries;
  }

  async ack(stream: string, group: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.call('XACK', stream, group, ...ids));
  }

  async claim(stream: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    const claimed: StreamEntry[] = [];
    if (count <= 0) return claimed;
    let cursor = '0-0';
    let calls = 0;
    do {
      calls++;
      const reply = (await this.call('XAUTOCLAIM', stream, group, consumer, Math.max(0, Math.floor(minIdleMs)), cursor, 'COUNT', count - claimed.length)) as [string, unknown, unknown?];
      cursor = String(reply[0]);
      const { entries, gone } = parseEntries(reply[1]);
      // Redis ≥ 7: ids of entries deleted meanwhile (already dropped from the pending list there).
      if (Array.isArray(reply[2])) gone.push(...reply[2].map(String));
      if (gone.length > 0) await this.ack(stream, group, gone);
      claimed.push(...entries);
    } while (cursor !== '0-0' && claimed.length < count && calls < MAX_CLAIM_CALLS);
    return claimed;
  }

  async touch(stream: string, group: string, consumer: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.call('XCLAIM', stream, group, consumer, 0, ...ids, 'JUSTID');
  }

  async info(stream: string): Promise<StreamInfo | undefined> {
    try {
      const info = pairs(await this.call('XINFO', 'STREAM', stream));
      const groups = ((await this.call('XINFO', 'GROUPS', stream)) as unknown[]).map(pairs);
      return {
        length: Number(info.get('length')),
        groups: groups.map((g) => {
          const lag = g.get('lag');
          return { name: String(g.get('name')), pending: Number(g.get('pending')), lag: lag === undefined || lag === null ? null : Number(lag), consumers: Number(g.get('consumers')) };
        }),
      };
    } catch (error) {
      if (error instanceof Error && /no such key/i.test(error.message)) return undefined;
      throw error;
    }
  }

  async streams(prefix: string): Promise<string[]> {
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    const found = new Set<string>();
    let cursor = '0';
    do {
      const [next, keys] = (await this.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000, 'TYPE', 'stream')) as [string, string[]];
      cursor = String(next);
      for (const key of keys) if (key.startsWith(prefix)) found.add(key.slice(prefix.length));
    } while (cursor !== '0');
    return [...found].sort();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A blocked XREADGROUP holds its connection: QUIT would wait behind it, so drop those.
    for (const blocker of this.blockers.values()) blocker.redis.disconnect();
    this.blockers.clear();
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }

  /** A client that reports its outages and is waited for, the first time, by {@link ready}. */
  private open(name: string, commandTimeoutMs: number): Redis {
    const redis = openRedis(this.options.url, { name, commandTimeoutMs, onError: (e) => this.options.onError?.(e) });
    redis.on('ready', () => this.connected.add(redis));
    return redis;
  }

  /** Resolves once `redis` may take commands: at once when it was ready before (a command then fails fast while it is down). */
  private async ready(redis: Redis): Promise<void> {
    if (this.closed) throw redisUnreachable(`${this.options.name}: the event streams were closed`);
    if (redis.status === 'ready' || this.connected.has(redis)) return;
    await whenReady(redis, FIRST_READY_MS, `Redis (${this.options.name})`);
  }

  private async call(command: string, ...args: (string | number)[]): Promise<unknown> {
    await this.ready(this.redis);
    return this.redis.call(command, ...args);
  }

  /** `XREADGROUP … BLOCK` on the reader's own connection, after its previous read; no entries when closed meanwhile. */
  private async blockingRead(key: string, blockMs: number, args: (string | number)[]): Promise<unknown> {
    if (this.closed) throw redisUnreachable(`${this.options.name}: the event streams were closed`);
    // While the shared connection is down (after it was up), fail fast rather than wait for a new one.
    if (this.connected.has(this.redis) && this.redis.status !== 'ready') throw redisUnreachable(`Redis (${this.options.name}) is unreachable`);
    let blocker = this.blockers.get(key);
    if (blocker) this.blockers.delete(key); // moved to the end: the map's order is least recently used first
    else {
      blocker = { redis: this.open(`${this.options.name}:block`, blockMs + BLOCK_GRACE_MS), turn: Promise.resolve(), busy: 0 };
      for (const [k, b] of this.blockers) {
        if (this.blockers.size < MAX_BLOCKERS) break;
        if (b.busy > 0) continue;
        this.blockers.delete(k);
        b.redis.disconnect();
      }
    }
    this.blockers.set(key, blocker);
    const { redis } = blocker;
    const held = blocker;
    held.busy++;
    const run = async (): Promise<unknown> => {
      try {
        await this.ready(redis);
        // Read at send time by ioredis: longer than this read's block.
        redis.options.commandTimeout = blockMs + BLOCK_GRACE_MS;
        return await readGroup(redis, args);
      } catch (error) {
        if (this.closed) return null;
        // Redis never answered: the connection may still be blocked server-side; start afresh next time.
        if (error instanceof Error && error.message === 'Command timed out' && this.blockers.get(key)?.redis === redis) {
          this.blockers.delete(key);
          redis.disconnect();
        }
        throw error;
      }
    };
    const result = blocker.turn.then(run, run);
    blocker.turn = result.catch(() => undefined);
    void blocker.turn.then(() => held.busy--);
    return result;
  }
}

/**
 * `XREADGROUP args`, its reply as Buffers: of an entry only the id and the payload become strings
 * (ioredis would make strings of every field name and value, then parseEntries would pick two).
 */
function readGroup(redis: Redis, args: (string | number)[]): Promise<unknown> {
  return (redis as unknown as { xreadgroupBuffer(...a: (string | number)[]): Promise<unknown> }).xreadgroupBuffer(...args);
}

/** {@link FIELD} as bytes, to find it among an entry's fields without making strings of them. */
const FIELD_BYTES = Buffer.from(FIELD);

/** Whether a field name (a string, or a Buffer of a Buffer reply) is {@link FIELD}. */
function isPayloadField(name: unknown): boolean {
  if (typeof name === 'string') return name === FIELD;
  return Buffer.isBuffer(name) && name.length === FIELD_BYTES.length && name.equals(FIELD_BYTES);
}

/** The entries of the one stream of an XREADGROUP reply (nil: none). */
function streamEntriesOf(reply: unknown): unknown {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  return (reply[0] as [string, unknown])[1];
}

/** Entries with a payload, and the ids of those whose fields are nil (trimmed away while pending). */
function parseEntries(raw: unknown): { entries: StreamEntry[]; gone: string[] } {
  const entries: StreamEntry[] = [];
  const gone: string[] = [];
  if (!Array.isArray(raw)) return { entries, gone };
  for (const item of raw as [string, unknown][]) {
    const id = String(item[0]);
    const fields = item[1];
    if (!Array.isArray(fields)) {
      gone.push(id);
      continue;
    }
    let payload = '';
    // An entry without our field was not written by us: no payload to give, but it is not gone.
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (isPayloadField(fields[i])) {
        payload = String(fields[i + 1]);
        break;
      }
    }
    entries.push({ id, payload });
  }
  return { entries, gone };
}

/** A flat `[name, value, …]` reply as a map. */
function pairs(reply: unknown): Map<string, unknown> {
  const map = new Map<string, unknown>();
  if (!Array.isArray(reply)) return map;
  for (let i = 0; i + 1 < reply.length; i += 2) map.set(String(reply[i]), reply[i + 1]);
  return map;
}
