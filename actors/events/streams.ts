/**
 * What a broker needs of a stream store, in Redis Streams terms: append with
 * trimming, consumer groups, reading new entries or a consumer's own pending
 * ones, acknowledging, keeping entries in hand, and claiming entries left
 * pending too long by consumers that died. Two implementations behind one
 * conformance suite: `MemoryStreams` (one process, no persistence) and
 * `RedisStreams` (durable, shared by every process).
 *
 * Entry ids are Redis stream ids (`<ms>-<seq>`), ordered; a payload is the
 * event's CloudEvents JSON, stored as one field (`e`). A stream is bounded
 * twice: by entries (`maxLen`) and by the bytes of its payloads (`maxBytes`),
 * since an entry count alone lets a stream of large events grow without bound.
 */

import { SvcError } from '../../kernel/index.ts';
import { BackendRegistry, schemeWritten, type StoreUri } from '../graph/index.ts';

/** One entry of a stream, as a consumer reads it. */
export interface StreamEntry {
  /** The entry's id (`1700000000000-0`). */
  readonly id: string;
  /** What was appended (the event's JSON). */
  readonly payload: string;
}

/** What {@link StreamBackend.addMany} appended: the first `ids.length` payloads, in order; `error` says why the rest were not. */
export interface AddManyResult {
  ids: string[];
  error?: Error;
}

/** A consumer group of a stream, as `/admin/events` shows it. */
export interface GroupInfo {
  name: string;
  /** Entries delivered to a consumer of the group and not acknowledged yet. */
  pending: number;
  /** Entries appended after the group's last delivered one (not read by the group yet); null when the store cannot tell. */
  lag: number | null;
  consumers: number;
}

export interface StreamInfo {
  /** Entries in the stream now (after trimming). */
  length: number;
  groups: GroupInfo[];
}

/** Where a new consumer group starts: `$`/`latest` (entries appended from now on), `0`/`earliest` (every entry kept), or an entry id (entries after it). */
export type StartFrom = string;

export interface StreamBackend {
  /** `memory` or `redis`: said in the start log line and `/admin/events`. */
  readonly kind: 'memory' | 'redis';
  /**
   * Append `payload` to `stream` (made if missing), trimming it to about
   * `maxLen` entries (`MAXLEN ~`; the memory store trims exactly) and, when
   * `maxBytes` > 0, dropping its oldest entries until the payloads it keeps
   * (the new one included) come to at most `maxBytes` bytes of UTF-8 — the
   * new entry itself is always kept. Resolves to the new entry's id.
   */
  add(stream: string, payload: string, maxLen: number, maxBytes?: number): Promise<string>;
  /**
   * Append `payloads` to `stream`, in order, as that many {@link add} calls
   * would (the same trimming; byte trimming never drops the newest of them),
   * in one round trip. Resolves to the ids of the entries appended: all of
   * them, or — when the store refused one part way — those before it, with
   * the refusal in `error` (the rest were not appended). Rejects when the
   * store could not be asked or did not answer (whether any was appended is
   * then unknown, as with a rejected `add`). Optional: a backend without it is
   * sent one `add` per event.
   */
  addMany?(stream: string, payloads: readonly string[], maxLen: number, maxBytes?: number): Promise<AddManyResult>;
  /** Make `group` on `stream` (and the stream) unless it exists; `startFrom` applies only when it is made. Resolves whether it was made. */
  ensureGroup(stream: string, group: string, startFrom: StartFrom): Promise<boolean>;
  /**
   * Entries for `consumer` of `group`: with `pending` its own entries
   * delivered before and not acknowledged (from the start, no blocking);
   * otherwise up to `count` entries never delivered to the group, waiting up
   * to `blockMs` for at least one (0: no wait). Read entries are pending for
   * `consumer` until acknowledged.
   */
  read(stream: string, group: string, consumer: string, count: number, blockMs: number, pending?: boolean): Promise<StreamEntry[]>;
  /** Acknowledge entries: no longer pending. Resolves to how many were pending. */
  ack(stream: string, group: string, ids: readonly string[]): Promise<number>;
  /**
   * Take over up to `count` entries pending in `group` for longer than
   * `minIdleMs` (a consumer that died or hangs), for `consumer` (`XAUTOCLAIM`).
   * Entries trimmed away meanwhile are dropped from the pending list.
   */
  claim(stream: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]>;
  /** Keep entries in hand: their idle time starts again, so no one claims them while a handler or a retry still holds them. */
  touch(stream: string, group: string, consumer: string, ids: readonly string[]): Promise<void>;
  /** A stream's length and its groups; undefined when there is no such stream. */
  info(stream: string): Promise<StreamInfo | undefined>;
  /** The streams whose names start with `prefix` (without it), for `/admin/events`. */
  streams(prefix: string): Promise<string[]>;
  /** Release connections and wake blocked readers (they resolve to no entries). */
  close(): Promise<void>;
}

/** What a stream backend opened by URL is given. */
export interface StreamsOptions {
  /** The connection's name (the client name Redis shows). */
  name: string;
  /** A connection error, reported once per outage. */
  onError?: (error: unknown) => void;
}

export type StreamsFactory = (uri: StoreUri, options: StreamsOptions) => StreamBackend;

/**
 * Stream backends shared between processes, by URL scheme: this seam imports
 * none of them (`stores/redis` registers itself). An unregistered scheme is
 * `SVC_ERR_REDIS_URL`, naming the schemes there are (never the URL: it may
 * hold a password).
 */
const registered = new BackendRegistry<StreamBackend, StreamsOptions & { baseDir?: string }>(
  'streams',
  (uri, _what, known) => new SvcError('SVC_ERR_REDIS_URL', `the events url has no stream backend for ${schemeWritten(uri)} (${known.map((s) => `${s}:`).join(', ') || 'none registered'})`, { status: 500 }),
);

/**
 * Make a stream backend available for a URL scheme (lower case, without the colon).
 *
 * @example
 * registerStreams('redis', (uri, o) => new RedisStreams({ url: uri.uri, ...o }));
 */
export function registerStreams(scheme: string, factory: StreamsFactory): void {
  registered.register(scheme, factory);
}

/**
 * The stream backend a URL names (`[scale.events] url`, else `kv_url`).
 *
 * @example
 * const streams = openStreams('redis://127.0.0.1:6379', { name: 'svc-events' });
 */
export function openStreams(url: string, options: StreamsOptions): StreamBackend {
  const found = registered.resolve(url);
  return found.factory(found.uri, options) as StreamBackend;
}
