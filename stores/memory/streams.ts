/**
 * Streams in memory, with the semantics of Redis Streams (consumer groups,
 * pending entries, claims, trimming by entries and by bytes): the broker of a single process without
 * `url` or `kv_url`. Nothing survives the process. In `svc start` one
 * instance lives on the main thread and the worker threads reach it through
 * an actor ({@link serveMemoryStreams}, {@link ActorStreams}).
 *
 * @example
 * const streams = new MemoryStreams();
 * await streams.ensureGroup('orders', 'svc-scale', 'latest');
 * await streams.add('orders', '{"id":"1"}', 100_000);
 * const [entry] = await streams.read('orders', 'svc-scale', 'host/w1', 10, 1000);
 * await streams.ack('orders', 'svc-scale', [entry.id]);
 */
import { type Clock, realClock } from '../../kernel/index.ts';
import type { StartFrom, StreamBackend, StreamEntry, StreamInfo } from '../../actors/events/index.ts';

interface Pending {
  consumer: string;
  /** When it was last delivered, claimed or touched (clock time). */
  since: number;
}

interface Group {
  /** Id of the last entry delivered to the group (`0-0`: none). */
  last: string;
  pending: Map<string, Pending>;
  consumers: Set<string>;
}

interface Stream {
  ids: string[];
  payloads: Map<string, string>;
  /** UTF-8 bytes of the payloads kept. */
  bytes: number;
  groups: Map<string, Group>;
  /** Readers blocked until something is appended. */
  waiters: Set<() => void>;
}

/** Compare two stream ids (`ms-seq`). */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}

export class MemoryStreams implements StreamBackend {
  readonly kind = 'memory' as const;
  private readonly clock: Clock;
  private readonly data = new Map<string, Stream>();
  private lastMs = 0;
  private seq = 0;
  private closed = false;

  constructor(options: { clock?: Clock } = {}) {
    this.clock = options.clock ?? realClock;
  }

  private stream(name: string): Stream {
    let s = this.data.get(name);
    if (!s) {
      s = { ids: [], payloads: new Map(), bytes: 0, groups: new Map(), waiters: new Set() };
      this.data.set(name, s);
    }
    return s;
  }

  private nextId(): string {
    const ms = Date.now();
    if (ms > this.lastMs) {
      this.lastMs = ms;
      this.seq = 0;
    } else this.seq++;
    return `${this.lastMs}-${this.seq}`;
  }

  async add(name: string, payload: string, maxLen: number, maxBytes = 0): Promise<string> {
    if (this.closed) throw new Error('the memory streams are closed');
    const s = this.stream(name);
    const id = this.nextId();
    s.ids.push(id);
    s.payloads.set(id, payload);
    s.bytes += Buffer.byteLength(payload);
    // The oldest go first, past maxLen entries or maxBytes bytes; the new entry always stays.
    let drop = maxLen > 0 && s.ids.length > maxLen ? s.ids.length - maxLen : 0;
    let bytes = s.bytes;
    for (let i = 0; i < drop; i++) bytes -= Buffer.byteLength(s.payloads.get(s.ids[i] as string) as string);
    while (maxBytes > 0 && bytes > maxBytes && drop < s.ids.length - 1) bytes -= Buffer.byteLength(s.payloads.get(s.ids[drop++] as string) as string);
    if (drop > 0) {
      for (const gone of s.ids.splice(0, drop)) s.payloads.delete(gone);
      s.bytes = bytes;
    }
    const waiters = [...s.waiters];
    s.waiters.clear();
    for (const wake of waiters) wake();
    return id;
  }

  async ensureGroup(name: string, group: string, startFrom: StartFrom): Promise<boolean> {
    const s = this.stream(name);
    if (s.groups.has(group)) return false;
    let last: string;
    if (startFrom === 'latest' || startFrom === '$') last = s.ids.at(-1) ?? '0-0';
    else if (startFrom === 'earliest' || startFrom === '0') last = '0-0';
    else last = startFrom;
    s.groups.set(group, { last, pending: new Map(), consumers: new Set() });
    return true;
  }

  private group(name: string, group: string): { s: Stream; g: Group } {
    const s = this.data.get(name);
    const g = s?.groups.get(group);
    if (!s || !g) throw new Error(`NOGROUP no such stream or consumer group: ${name} ${group}`);
    return { s, g };
  }

  async read(name: string, group: string, consumer: string, count: number, blockMs: number, pending = false): Promise<StreamEntry[]> {
    const { s, g } = this.group(name, group);
    g.consumers.add(consumer);
    if (pending) {
      const out: StreamEntry[] = [];
      for (const [id, p] of [...g.pending].sort(([a], [b]) => compareIds(a, b))) {
        if (p.consumer !== consumer) continue;
        const payload = s.payloads.get(id);
        if (payload === undefined) {
          g.pending.delete(id); // trimmed away
          continue;
        }
        p.since = this.clock.now();
        out.push({ id, payload });
        if (out.length >= count) break;
      }
      return out;
    }
    const fresh = this.deliver(s, g, consumer, count);
    if (fresh.length > 0 || blockMs <= 0 || this.closed) return fresh;
    return new Promise<StreamEntry[]>((resolve) => {
      let timer: ReturnType<Clock['setTimeout']> | undefined;
      const finish = (entries: StreamEntry[]): void => {
        if (timer !== undefined) this.clock.clearTimeout(timer);
        timer = undefined;
        s.waiters.delete(wake);
        resolve(entries);
      };
      // Woken by an append: another reader may have taken it; then this one waits on (as Redis keeps it blocked).
      const wake = (): void => {
        if (this.closed || !s.groups.has(group)) return finish([]);
        const entries = this.deliver(s, g, consumer, count);
        if (entries.length > 0) finish(entries);
        else s.waiters.add(wake);
      };
      // Not weak: a blocked read keeps the process alive, as a Redis read keeps its socket.
      timer = this.clock.setTimeout(() => {
        timer = undefined;
        finish(this.closed || !s.groups.has(group) ? [] : this.deliver(s, g, consumer, count));
      }, blockMs);
      s.waiters.add(wake);
    });
  }

  /** Entries after the group's last delivered one, now pending for `consumer`. */
  private deliver(s: Stream, g: Group, consumer: string, count: number): StreamEntry[] {
    const out: StreamEntry[] = [];
    let i = firstAfter(s.ids, g.last);
    const now = this.clock.now();
    for (; i < s.ids.length && out.length < count; i++) {
      const id = s.ids[i] as string;
      out.push({ id, payload: s.payloads.get(id) as string });
      g.pending.set(id, { consumer, since: now });
      g.last = id;
    }
    return out;
  }

  async ack(name: string, group: string, ids: readonly string[]): Promise<number> {
    const g = this.data.get(name)?.groups.get(group);
    if (!g) return 0;
    let n = 0;
    for (const id of ids) if (g.pending.delete(id)) n++;
    return n;
  }

  async claim(name: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    const { s, g } = this.group(name, group);
    g.consumers.add(consumer);
    const now = this.clock.now();
    const out: StreamEntry[] = [];
    for (const [id, p] of [...g.pending].sort(([a], [b]) => compareIds(a, b))) {
      if (out.length >= count) break;
      if (now - p.since < minIdleMs) continue;
      const payload = s.payloads.get(id);
      if (payload === undefined) {
        g.pending.delete(id);
        continue;
      }
      g.pending.set(id, { consumer, since: now });
      out.push({ id, payload });
    }
    return out;
  }

  async touch(name: string, group: string, consumer: string, ids: readonly string[]): Promise<void> {
    const g = this.data.get(name)?.groups.get(group);
    if (!g) return;
    const now = this.clock.now();
    for (const id of ids) if (g.pending.has(id)) g.pending.set(id, { consumer, since: now });
  }

  async info(name: string): Promise<StreamInfo | undefined> {
    const s = this.data.get(name);
    if (!s) return undefined;
    return {
      length: s.ids.length,
      groups: [...s.groups].map(([groupName, g]) => ({
        name: groupName,
        pending: g.pending.size,
        lag: s.ids.length - firstAfter(s.ids, g.last),
        consumers: g.consumers.size,
      })),
    };
  }

  async streams(prefix: string): Promise<string[]> {
    return [...this.data.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)).sort();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.data.values()) {
      const waiters = [...s.waiters];
      s.waiters.clear();
      for (const wake of waiters) wake();
    }
  }
}

/** Index of the first id after `last` (binary search: ids are ordered). */
function firstAfter(ids: readonly string[], last: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareIds(ids[mid] as string, last) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
