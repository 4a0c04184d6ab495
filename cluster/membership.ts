/**
 * Membership of a cluster of `svc start` processes, kept in Redis. Each member's
 * main thread runs one {@link Membership}: it holds a lease on its own key and
 * watches everybody else's.
 *
 * Keys (all under the hash tag `{<cluster>}`, so one slot in Redis Cluster):
 * - `svc:{<cluster>}:member:<id>`: the member's JSON record ({@link MemberView}),
 *   set with `PX leaseMs`. A member is alive iff its key exists.
 * - `svc:{<cluster>}:members`: a set of member ids, an index only: it may hold
 *   dead ids until someone notices (then they are removed, atomically, only if
 *   the key is still missing).
 * - channel `svc:{<cluster>}:membership`: `{"type":"join"|"leave"|"state","id"}`
 *   notices. Speed only; polling is the truth.
 *
 * Time: Redis's server-side expiry is the only clock the members share. Nothing
 * compares the clocks of two members; `lastHeartbeat` is informative.
 *
 * Bounds and edge cases:
 * - **Down**: a member that stops renewing (crash, pause, partition) is dropped
 *   by the others within `leaseMs + heartbeatMs` of its last renewal (its key
 *   expires `leaseMs` after the renewal ran; each member polls every
 *   `heartbeatMs`), plus a round trip. A member that leaves is dropped at once
 *   (its `leave` notice makes the others poll, and a departed id is dropped
 *   without waiting).
 * - **Nobody is declared down on a fresh connection**: an id whose key is missing
 *   is dropped only once this member has had a working connection to Redis for
 *   `leaseMs` continuously (or the id sent a leave notice, or a live record now
 *   has the same address: a new incarnation superseded it). After a Redis restart
 *   (empty, no persistence) every key is gone; every member finds its own key
 *   missing within one heartbeat of reconnecting, gets `onLost` and rejoins under
 *   a new id, which supersedes its old id in everyone's view. The guard assumes
 *   members reconnect within `leaseMs - heartbeatMs` of one another.
 * - **Redis unreachable**: the last view is kept (nobody is declared down),
 *   `onRedis(false, error)` is called once, renewals and polls go on at each
 *   heartbeat (at most one of each in flight) and ride the client's own
 *   reconnection backoff. `validUntil()` does not advance: a renewal counts only
 *   once Redis has answered it.
 * - **Lost**: the own key was found missing or holding another record, by a
 *   renewal or a poll (we were declared dead: paused past the lease, or Redis
 *   lost its data). `onLost` is called once, `validUntil()` is 0, renewals stop
 *   and this member leaves its own view (no `onChange` for that alone; the next
 *   change reports the view without it); polling goes on. `onLost` may call
 *   `rejoin()` at once. The caller drops its state and calls
 *   {@link Membership.rejoin} with a new id. Between Redis losing its data and
 *   the next renewal (at most `heartbeatMs`), `validUntil()` still reports the
 *   old lease: it promises when the lease expires, not that Redis kept it.
 */
import type { Redis } from 'ioredis';
import { clusterError } from './errors.ts';
import { clusterKey, RedisScript } from '../stores/redis/index.ts';

/** What a member publishes about itself. */
export interface MemberRecord {
  /** Process id, unique per incarnation: a member that rejoins after losing its lease uses a new id. */
  id: string;
  /** `host:port` of its process link. */
  address: string;
  /** Its worker node ids. */
  workers: string[];
  /** App fingerprint. */
  app: string;
  /** Who can link with it: a digest of the cluster's secret (members with another secret cannot talk, so they are not linked). */
  proof?: string;
  pid: number;
  version: string;
  /** ms epoch */
  startedAt: number;
  state?: 'serving' | 'leaving';
}

/** A live member as seen in Redis. */
export interface MemberView extends MemberRecord {
  /** ms epoch on the member's own clock, written in the record at every renewal. */
  lastHeartbeat: number;
}

export interface MembershipOptions {
  /** Commands. */
  redis: Redis;
  /** A dedicated connection for the channel; without it, changes are seen by polling only. */
  subscriber?: Redis;
  cluster: string;
  /** Lifetime of the member's key; svc uses 5000. */
  leaseMs: number;
  /** Renewal and polling period; default `leaseMs / 5`. */
  heartbeatMs?: number;
  record: MemberRecord;
  /** The live members (self included while joined), whenever the set or a record changes (join, leave, down, state). Not called for a mere renewal. */
  onChange(members: MemberView[]): void;
  /** This member's own key was found missing or replaced while we believed we held it. Drop the state, then call `rejoin()`. */
  onLost?(): void;
  /** Redis reachability changed (not called at join: `join()` resolving means reachable). */
  onRedis?(up: boolean, error?: Error): void;
  /** After each lease renewal: whether Redis renewed it (false: unreachable, or the key was lost). For metrics. */
  onRenewal?(ok: boolean): void;
}

// KEYS: member key, members set. ARGV: id, value, leaseMs, channel, notice.
const JOIN = new RedisScript(`
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1`);

// Renew only while the key still holds our record. KEYS/ARGV as JOIN; an empty notice publishes nothing.
const RENEW = new RedisScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, rec = pcall(cjson.decode, v)
if not ok or type(rec) ~= 'table' or rec.id ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
return 1`);

// Compare-and-delete. KEYS: member key, members set. ARGV: id, channel, notice.
const LEAVE = new RedisScript(`
local v = redis.call('GET', KEYS[1])
local mine = false
if v then
  local ok, rec = pcall(cjson.decode, v)
  mine = ok and type(rec) == 'table' and rec.id == ARGV[1]
  if not mine then return 0 end
  redis.call('DEL', KEYS[1])
end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
if mine then return 1 end
return 0`);

// Remove indexed ids whose key is (still) missing. KEYS: members set, then member keys. ARGV: their ids.
const PRUNE = new RedisScript(`
local n = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then n = n + redis.call('SREM', KEYS[1], ARGV[i - 1]) end
end
return n`);

type Notice = { type: 'join' | 'leave' | 'state'; id: string };
type WriteResult = { status: 'renewed' | 'lost' | 'stale' } | { status: 'unreachable'; error: Error };

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

function parseView(value: string | null | undefined): MemberView | undefined {
  if (!value) return undefined;
  try {
    const v = JSON.parse(value) as Partial<MemberView> | null;
    if (v && typeof v.id === 'string' && typeof v.address === 'string' && Array.isArray(v.workers)) return v as MemberView;
  } catch {
    // A value we cannot read is no member.
  }
  return undefined;
}

/** What `onChange` compares: everything but the heartbeat time. */
function signature(views: MemberView[]): string {
  return JSON.stringify(views.map(({ lastHeartbeat: _, ...rest }) => rest));
}

/**
 * One member's membership of a cluster.
 *
 * @example
 * const m = await Membership.join({
 *   redis, subscriber, cluster: 'prod', leaseMs: 5000,
 *   record: { id, address: '10.0.0.7:7400', workers, app, pid: process.pid, version, startedAt: Date.now() },
 *   onChange: (members) => placement.update(members),
 *   onLost: () => { dropState(); void m.rejoin({ ...record, id: newId() }); },
 *   onRedis: (up, error) => log.warn({ up, error }, 'redis'),
 * });
 * await m.setState('leaving');
 * await m.leave();
 */
export class Membership {
  private readonly redis: Redis;
  private readonly subscriber: Redis | undefined;
  private readonly leaseMs: number;
  private readonly heartbeatMs: number;
  private readonly margin: number;
  private readonly cluster: string;
  private readonly membersKey: string;
  private readonly channel: string;

  private record: MemberRecord;
  /** Bumped by every (re)join: answers for an earlier incarnation are ignored. */
  private epoch = 0;
  private holding = false;
  private entering = false;
  private running = false;
  private validUntilMs = 0;
  private lastHeartbeat = 0;
  private view = new Map<string, MemberView>();
  private emitted = '';
  /** Ids that sent a leave notice: dropped as soon as their key is missing. */
  private readonly departed = new Set<string>();
  /** Ids this member used: never reused, never shown once lost. */
  private readonly pastIds = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private renewing: { epoch: number; result: Promise<boolean> } | undefined;
  private pollRun: Promise<void> | undefined;
  private pollNext: Promise<void> | undefined;
  /** Since when the command connection has worked continuously (undefined while it does not). */
  private upSince: number | undefined;
  private redisUp = true;
  private lastError: Error | undefined;

  private constructor(private readonly options: MembershipOptions) {
    const { leaseMs } = options;
    const heartbeatMs = options.heartbeatMs ?? leaseMs / 5;
    if (!(leaseMs > 0) || !(heartbeatMs > 0) || heartbeatMs >= leaseMs) {
      throw clusterError('SVC_ERR_CLUSTER', `need 0 < heartbeatMs < leaseMs (got ${heartbeatMs}, ${leaseMs})`);
    }
    this.redis = options.redis;
    this.subscriber = options.subscriber;
    this.leaseMs = leaseMs;
    this.heartbeatMs = heartbeatMs;
    this.margin = leaseMs / 10;
    this.cluster = options.cluster;
    this.membersKey = clusterKey(options.cluster, 'members');
    this.channel = clusterKey(options.cluster, 'membership');
    this.record = options.record;
  }

  /**
   * Join: `SET member:<id> NX PX`, `SADD members`, `PUBLISH join` (one script),
   * then a first poll. Rejects with the Redis error when the command fails (with
   * ioredis's defaults, after `maxRetriesPerRequest` reconnections; a client with
   * `enableOfflineQueue: false` fails at once), or `SVC_ERR_CLUSTER` when a live member has the id already.
   *
   * @example
   * const m = await Membership.join({ redis, cluster: 'prod', leaseMs: 5000, record, onChange });
   */
  static async join(options: MembershipOptions): Promise<Membership> {
    const m = new Membership(options);
    await m.enter(options.record);
    return m;
  }

  /**
   * The live members, self included while joined, ordered by id.
   *
   * @example
   * const addresses = m.members().map((v) => v.address);
   */
  members(): MemberView[] {
    return [...this.view.values()].map((v) => ({ ...v, workers: [...v.workers] })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * A `Date.now()` instant until which this member's lease is surely valid: when
   * the last renewal Redis answered was sent, plus `leaseMs`, minus `leaseMs/10`.
   * 0 while not joined and after the lease was lost.
   *
   * @example
   * if (Date.now() >= m.validUntil()) refuseWrites();
   */
  validUntil(): number {
    return this.holding ? this.validUntilMs : 0;
  }

  /**
   * Whether this member holds its key (as far as it knows).
   *
   * @example
   * if (!m.joined) return 'not in the cluster';
   */
  get joined(): boolean {
    return this.holding;
  }

  /**
   * Change this member's state: written at once (with a renewal) and published.
   * Rejects with the Redis error if Redis cannot be reached (the next renewal
   * writes it); resolves after calling `onLost` if the key was lost.
   *
   * @example
   * await m.setState('leaving');
   */
  async setState(state: 'serving' | 'leaving'): Promise<void> {
    this.record = { ...this.record, state };
    if (!this.holding) return;
    const result = await this.write(this.epoch, { type: 'state', id: this.record.id });
    if (result.status === 'unreachable') throw result.error;
    if (result.status === 'renewed') {
      this.view.set(this.record.id, this.selfView());
      this.emitIfChanged();
    }
  }

  /**
   * Renew the lease now (the heartbeat does it every `heartbeatMs`). Resolves
   * true once renewed; false when Redis could not be reached, or the key was lost
   * (then `onLost` was called), or this member is not joined.
   *
   * @example
   * if (!(await m.renew())) log.warn('lease not renewed');
   */
  renew(): Promise<boolean> {
    if (!this.holding) return Promise.resolve(false);
    if (this.renewing?.epoch === this.epoch) return this.renewing.result;
    const epoch = this.epoch;
    const result = this.write(epoch, undefined).then((r) => r.status === 'renewed');
    const entry = { epoch, result };
    this.renewing = entry;
    void result.finally(() => {
      if (this.renewing === entry) this.renewing = undefined;
    });
    return result;
  }

  /**
   * Join again under a new id (after `onLost`, or after `leave()`). Rejects like
   * `join()`, and with `SVC_ERR_CLUSTER` while joined or when the id
   * was used before by this member: every attempt needs a fresh id, because a
   * failed attempt may still have set its key.
   *
   * @example
   * onLost: () => void m.rejoin({ ...record, id: `${host}-${process.pid}-${++incarnation}` })
   */
  async rejoin(newRecord: MemberRecord): Promise<void> {
    await this.enter(newRecord);
  }

  /**
   * Leave: stop the timers, delete the own key if it is still ours
   * (compare-and-delete), `SREM`, `PUBLISH leave`. Rejects with the Redis error if
   * Redis cannot be reached (the key then expires within `leaseMs`).
   *
   * @example
   * await m.setState('leaving'); await drain(); await m.leave();
   */
  async leave(): Promise<void> {
    this.stop();
    const wasHolding = this.holding;
    this.holding = false;
    this.validUntilMs = 0;
    this.view.clear();
    if (!wasHolding) return;
    const { id } = this.record;
    await LEAVE.run(this.redis, [this.memberKey(id), this.membersKey], [id, this.channel, JSON.stringify({ type: 'leave', id } satisfies Notice)]);
  }

  /**
   * Stop the timers and listeners without leaving: the key expires after
   * `leaseMs` (a crash, for tests). Explicit calls still work: `renew()` finds out
   * whether the lease survived, `rejoin()` starts again.
   *
   * @example
   * m.close(); // the others drop this member within leaseMs + heartbeatMs
   */
  close(): void {
    this.stop();
  }

  private memberKey(id: string): string {
    return clusterKey(this.cluster, 'member', id);
  }

  private selfView(): MemberView {
    return { ...this.record, lastHeartbeat: this.lastHeartbeat };
  }

  private async enter(record: MemberRecord): Promise<void> {
    if (this.holding || this.entering) throw clusterError('SVC_ERR_CLUSTER', 'already joined');
    if (this.pastIds.has(record.id)) throw clusterError('SVC_ERR_CLUSTER', `id ${record.id} was used before; rejoin under a new id`);
    this.entering = true;
    const wasRunning = this.running;
    ++this.epoch;
    this.record = { ...record, workers: [...record.workers] };
    this.pastIds.add(record.id);
    try {
      this.listen();
      if (!wasRunning && this.subscriber) await this.subscriber.subscribe(this.channel).catch(() => undefined);
      const sent = Date.now();
      let reply: unknown;
      try {
        reply = await JOIN.run(this.redis, [this.memberKey(record.id), this.membersKey], [record.id, JSON.stringify({ ...this.record, lastHeartbeat: sent }), this.leaseMs, this.channel, JSON.stringify({ type: 'join', id: record.id } satisfies Notice)]);
      } catch (e) {
        if (wasRunning) this.reachable(false, asError(e));
        throw e;
      }
      if (reply !== 1) throw clusterError('SVC_ERR_CLUSTER', `a live member already has the id ${record.id}`);
      this.holding = true;
      this.lastHeartbeat = sent;
      this.validUntilMs = sent + this.leaseMs - this.margin;
      this.reachable(true);
      this.view.set(record.id, this.selfView());
    } catch (e) {
      if (!wasRunning) this.stop();
      throw e;
    } finally {
      this.entering = false;
    }
    this.timer ??= setInterval(() => this.tick(), this.heartbeatMs);
    await this.poll();
  }

  private tick(): void {
    if (this.holding) void this.renew();
    void this.poll();
  }

  /** One renewal (a notice publishes a change of the record as well). Never rejects. */
  private async write(epoch: number, notice: Notice | undefined): Promise<WriteResult> {
    const id = this.record.id;
    const sent = Date.now();
    let reply: unknown;
    try {
      reply = await RENEW.run(this.redis, [this.memberKey(id), this.membersKey], [id, JSON.stringify({ ...this.record, lastHeartbeat: sent }), this.leaseMs, this.channel, notice ? JSON.stringify(notice) : '']);
    } catch (e) {
      const error = asError(e);
      if (epoch === this.epoch) this.reachable(false, error);
      this.call(() => this.options.onRenewal?.(false));
      return { status: 'unreachable', error };
    }
    if (epoch !== this.epoch || !this.holding) return { status: 'stale' };
    this.reachable(true);
    if (reply !== 1) {
      this.call(() => this.options.onRenewal?.(false));
      this.lose();
      return { status: 'lost' };
    }
    this.call(() => this.options.onRenewal?.(true));
    // Two writes may answer out of order: the lease runs from the latest sent.
    if (sent > this.lastHeartbeat) {
      this.lastHeartbeat = sent;
      this.validUntilMs = sent + this.leaseMs - this.margin;
      if (this.view.has(id)) this.view.set(id, this.selfView());
    }
    return { status: 'renewed' };
  }

  private lose(): void {
    if (!this.holding) return;
    this.holding = false;
    this.validUntilMs = 0;
    this.view.delete(this.record.id);
    this.call(() => this.options.onLost?.());
  }

  /** Poll now; resolves once a poll that started after this call has finished. Never rejects. */
  private poll(): Promise<void> {
    if (!this.pollRun) {
      const run = this.pollOnce().finally(() => {
        if (this.pollRun === run) this.pollRun = undefined;
      });
      this.pollRun = run;
      return run;
    }
    this.pollNext ??= this.pollRun.then(() => {
      this.pollNext = undefined;
      return this.poll();
    });
    return this.pollNext;
  }

  private async pollOnce(): Promise<void> {
    if (!this.running || this.entering) return;
    const epoch = this.epoch;
    const self = this.record.id;
    const holding = this.holding;
    let ids: string[];
    let values: (string | null)[];
    try {
      const indexed = await this.redis.smembers(this.membersKey);
      ids = [...new Set([...indexed, ...this.view.keys(), ...(holding ? [self] : [])])];
      values = ids.length ? await this.redis.mget(ids.map((id) => this.memberKey(id))) : [];
    } catch (e) {
      if (epoch === this.epoch) this.reachable(false, asError(e));
      return;
    }
    if (epoch !== this.epoch || this.entering || !this.running) return;
    this.reachable(true);
    const now = Date.now();
    const settled = this.upSince !== undefined && now - this.upSince >= this.leaseMs;
    const live = new Map<string, MemberView>();
    ids.forEach((id, i) => {
      const v = parseView(values[i]);
      if (v && v.id === id) live.set(id, v);
    });
    if (holding && this.holding && !live.has(self)) {
      this.lose();
      // onLost may have started a rejoin: this answer is of the old incarnation now.
      if (epoch !== this.epoch) return;
    }
    const next = new Map<string, MemberView>();
    for (const [id, v] of live) if (!this.pastIds.has(id)) next.set(id, v);
    if (this.holding) next.set(self, this.selfView());
    const addresses = new Set([...next.values()].map((v) => v.address));
    for (const [id, old] of this.view) {
      if (next.has(id) || live.has(id) || this.pastIds.has(id)) continue;
      // Missing key: down, unless our connection is too fresh to tell a restarted Redis from a dead member.
      const gone = settled || this.departed.has(id) || addresses.has(old.address);
      if (!gone) next.set(id, old);
    }
    for (const id of this.departed) if (!next.has(id)) this.departed.delete(id);
    const missing = ids.filter((id) => !live.has(id));
    if (missing.length) {
      PRUNE.run(this.redis, [this.membersKey, ...missing.map((id) => this.memberKey(id))], missing).catch(() => undefined);
    }
    this.view = next;
    this.emitIfChanged();
  }

  private emitIfChanged(): void {
    if (!this.running) return;
    const members = this.members();
    const sig = signature(members);
    if (sig === this.emitted) return;
    this.emitted = sig;
    this.call(() => this.options.onChange(members));
  }

  private reachable(up: boolean, error?: Error): void {
    if (up) this.upSince ??= Date.now();
    else this.upSince = undefined;
    if (up === this.redisUp) return;
    this.redisUp = up;
    const cause = up ? undefined : (error ?? this.lastError);
    this.lastError = undefined;
    if (this.running) this.call(() => this.options.onRedis?.(up, cause));
  }

  private readonly onReady = (): void => this.reachable(true);
  private readonly onClose = (): void => this.reachable(false, this.lastError ?? new Error('redis connection closed'));
  private readonly onError = (e: Error): void => {
    this.lastError = e;
  };
  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.channel) return;
    let notice: Partial<Notice>;
    try {
      notice = JSON.parse(message) as Partial<Notice>;
    } catch {
      return;
    }
    if (notice.id === this.record.id) return;
    if (notice.type === 'leave' && typeof notice.id === 'string') this.departed.add(notice.id);
    void this.poll();
  };

  private listen(): void {
    if (this.running) return;
    this.running = true;
    this.redis.on('ready', this.onReady);
    this.redis.on('close', this.onClose);
    this.redis.on('error', this.onError);
    this.subscriber?.on('message', this.onMessage);
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.running) return;
    this.running = false;
    this.redis.off('ready', this.onReady);
    this.redis.off('close', this.onClose);
    this.redis.off('error', this.onError);
    if (this.subscriber) {
      this.subscriber.off('message', this.onMessage);
      this.subscriber.unsubscribe(this.channel).catch(() => undefined);
    }
  }

  /** A callback that throws is a crash of its owner, not ours to swallow: rethrown in a macrotask. */
  private call(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      setImmediate(() => {
        throw e;
      });
    }
  }
}
