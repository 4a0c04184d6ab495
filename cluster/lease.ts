/**
 * Activation leases across the pods of a cluster, in Redis: the kernel's
 * {@link ActivationLease} for a whole process, behind the process's own
 * keeper (which orders its threads), so a virtual actor's key is live in one
 * process of the cluster at a time.
 *
 * A lease is the key `svc:{<cluster>}:lease:<kind>/<key>` holding its
 * holder's process id. No expiry: a lease lives as long as its holder does,
 * and a holder lives as long as its membership key
 * `svc:{<cluster>}:member:<processId>` (kept by membership, with a PX lease).
 * Acquiring is one Lua script: granted when the lease is free, already ours,
 * or held by a process whose membership key is gone (it died: taken over at
 * once). Else the acquirer waits — woken by a message on
 * `svc:{<cluster>}:lease-released` (a separate subscriber connection),
 * checking again every `retryMs * 4` anyway (a holder that dies publishes
 * nothing) — until `timeoutMs`, then rejects with `SVC_ERR_LEASE_TIMEOUT`.
 * Only a holder is waited for, never Redis: with the connection down (or
 * reconnecting), or a command that fails, the acquire rejects at once with
 * `SVC_ERR_REDIS_UNREACHABLE` (503) — a request must not spend its life
 * waiting out an outage (the caller answers, the client retries).
 * Releasing is compare-and-delete plus the PUBLISH, in one script.
 *
 * The script reads the member key without declaring it in KEYS: both keys
 * share the cluster's hash tag, so they are in one slot even on Redis Cluster.
 *
 * Within the process a key may be held more than once at a time (the next
 * activation asks before the previous one gave it back, as in the kernel's
 * keeper): a local count, the key released in Redis when it drops to 0. The
 * same count lists what {@link RedisActivationLease.releaseAll} gives back on
 * a graceful leave. A release that cannot reach Redis is retried when the
 * connection is ready again (else the lease would stay ours while we live).
 *
 * TODO: no fencing. A Redis restarted without persistence forgets every
 * lease, and a process partitioned from Redis past its membership lease is
 * taken over while it may still serve; a fencing token checked by the store
 * would close both.
 */
import type { Redis } from 'ioredis';
import { SvcError, type ActivationLease } from '../kernel/index.ts';
import { clusterKey, redisUnreachable, RedisScript } from '../stores/redis/index.ts';

/** KEYS[1] lease; ARGV: processId, member key prefix. → {1, processId} granted, or {0, holder}. */
const ACQUIRE = new RedisScript(`
local holder = redis.call('GET', KEYS[1])
if (not holder) or holder == ARGV[1] or redis.call('EXISTS', ARGV[2] .. holder) == 0 then
  redis.call('SET', KEYS[1], ARGV[1])
  return {1, ARGV[1]}
end
return {0, holder}
`);

/** KEYS[1] lease; ARGV: processId, channel, lease id. → 1 released, 0 not ours. */
const RELEASE = new RedisScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
`);

export interface RedisActivationLeaseOptions {
  /** Commands (a client from `openRedis`). */
  redis: Redis;
  /**
   * Where release messages arrive: a connection of its own (ioredis puts a
   * subscribed connection in subscriber mode). Default `redis.duplicate()`,
   * closed with this lease; `false` to poll every `retryMs` instead.
   */
  subscriber?: Redis | false;
  cluster: string;
  /** This process, as membership knows it. */
  processId: string;
  /** How often a waiting acquire checks again without a release message (default 25 ms; ×4 while subscribed). */
  retryMs?: number;
  /** How long an acquire waits at most for another process to give the lease back (default 10 s). */
  timeoutMs?: number;
  /** An acquire found the key held by another live process (once per acquire). For stats and tests. */
  onWait?(kind: string, key: string, holder: string): void;
  /** A release that failed (it is retried once Redis is ready again). */
  onError?(error: unknown): void;
}

/**
 * @example
 * const lease = new RedisActivationLease({ redis, cluster: 'prod', processId });
 * await lease.acquire('partition', rootId); // … serve it …
 * lease.release('partition', rootId);
 * await lease.close();                      // graceful leave: every lease given back
 */
export class RedisActivationLease implements ActivationLease {
  private readonly redis: Redis;
  /** The member id leases are held under (a member that joins again holds new ones under its new id). */
  processId: string;
  private readonly prefix: string;
  private readonly memberPrefix: string;
  private readonly channel: string;
  private readonly retryMs: number;
  private readonly timeoutMs: number;
  private readonly options: RedisActivationLeaseOptions;
  /** Leases held, by id (`kind/key`), with how many activations hold each. */
  private readonly held = new Map<string, number>();
  /** Releases that failed, retried when the connection is ready. */
  private readonly unreleased = new Set<string>();
  /** Acquires waiting, by id: how to wake each. */
  private readonly waiters = new Map<string, Set<() => void>>();
  private sub: Redis | undefined;
  private subscribed = false;
  /** Resolves at the first subscription to release messages. */
  private readonly firstSubscribe: Promise<void>;
  private onFirstSubscribe: () => void = () => undefined;
  private closed = false;
  /** Bumped by {@link RedisActivationLease.interrupt}: acquires begun before fail with `interruption`. */
  private generation = 0;
  private interruption: Error | undefined;

  constructor(options: RedisActivationLeaseOptions) {
    this.options = options;
    this.redis = options.redis;
    this.processId = options.processId;
    this.prefix = clusterKey(options.cluster, 'lease', '');
    this.memberPrefix = clusterKey(options.cluster, 'member', '');
    this.channel = clusterKey(options.cluster, 'lease-released');
    this.retryMs = options.retryMs ?? 25;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.redis.on('ready', this.retryReleases);
    this.firstSubscribe = new Promise((resolve) => (this.onFirstSubscribe = resolve));
    if (options.subscriber === false) this.onFirstSubscribe();
  }

  /**
   * Start listening for releases (the first acquire does it too, without
   * waiting). Resolves once release messages are heard; until then waiting
   * acquires poll every `retryMs`.
   */
  start(): Promise<void> {
    this.startSubscriber();
    return this.firstSubscribe;
  }

  /** The Redis key of a lease. */
  keyOf(kind: string, key: string): string {
    return this.prefix + leaseId(kind, key);
  }

  /** Leases this process holds now (ids `kind/key`). */
  holding(): string[] {
    return [...this.held.keys()];
  }

  async acquire(kind: string, key: string): Promise<void> {
    const id = leaseId(kind, key);
    const count = this.held.get(id);
    if (count !== undefined) {
      this.held.set(id, count + 1);
      return;
    }
    this.startSubscriber();
    const deadline = Date.now() + this.timeoutMs;
    const generation = this.generation;
    let holder: string;
    let waiting = false;
    for (;;) {
      if (this.closed) throw new SvcError('SVC_ERR_SHUTDOWN', `lease ${id}: closed while waiting`, { status: 503 });
      if (this.generation !== generation) throw this.interruption as Error;
      // Known down (closed, reconnecting): no command could be sent (no offline queue), and none is waited for.
      if (this.redis.status !== 'ready') throw redisUnreachable(`lease ${id} cannot be taken: Redis is unreachable (connection ${this.redis.status})`);
      // Listen before asking: a release between the answer and the wait still wakes us.
      const wake = this.listen(id);
      try {
        holder = await this.tryAcquire(id);
      } catch (error) {
        wake.cancel();
        throw redisUnreachable(`lease ${id} cannot be taken: Redis did not answer${error instanceof Error ? ` (${error.message})` : ''}`, error);
      }
      if (holder === this.processId && this.generation === generation) {
        wake.cancel();
        this.held.set(id, (this.held.get(id) ?? 0) + 1);
        return;
      }
      if (this.generation !== generation) {
        wake.cancel();
        throw this.interruption as Error;
      }
      if (!waiting) {
        waiting = true;
        this.options.onWait?.(kind, key, holder);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        wake.cancel();
        throw this.timeout(id, holder);
      }
      await wake.wait(Math.min(this.subscribed ? this.retryMs * 4 : this.retryMs, left));
    }
  }

  release(kind: string, key: string): void {
    const id = leaseId(kind, key);
    const count = this.held.get(id);
    if (count === undefined) return; // not ours: nothing to give back
    if (count > 1) {
      this.held.set(id, count - 1);
      return;
    }
    this.held.delete(id);
    void this.releaseInRedis(id);
  }

  /** Give back every lease this process holds, whatever its count (a graceful leave). */
  async releaseAll(): Promise<void> {
    const ids = [...this.held.keys(), ...this.unreleased];
    this.held.clear();
    await Promise.all(ids.map((id) => this.releaseInRedis(id)));
  }

  /** Graceful: give back every lease, stop waiting, close the subscriber. */
  async close(): Promise<void> {
    await this.releaseAll();
    this.destroy();
  }

  /**
   * Fail every acquire under way with `error`, now (this process lost its
   * membership: what it waits for was asked under an id that is dead). Later
   * acquires go on as usual.
   */
  interrupt(error: Error): void {
    this.generation++;
    this.interruption = error;
    for (const wakers of this.waiters.values()) for (const wake of wakers) wake();
  }

  /** Forced: stop at once, leases left in Redis (taken over once our membership lapses). */
  destroy(): void {
    this.closed = true;
    this.onFirstSubscribe(); // a start() still waiting ends
    this.redis.off('ready', this.retryReleases);
    for (const wakers of this.waiters.values()) for (const wake of wakers) wake();
    this.waiters.clear();
    if (this.sub && this.options.subscriber === undefined) this.sub.disconnect();
    else if (this.sub) {
      this.sub.off('message', this.onMessage).off('close', this.onSubscriberClose).off('ready', this.subscribe);
      void this.sub.unsubscribe(this.channel).catch(() => undefined);
    }
    this.sub = undefined;
  }

  /** One attempt: the holder after it (this process when granted). */
  private async tryAcquire(id: string): Promise<string> {
    // A failed release of this id must not be retried after we hold it again.
    this.unreleased.delete(id);
    const asker = this.processId;
    const reply = (await ACQUIRE.run(this.redis, [this.prefix + id], [asker, this.memberPrefix])) as [number, string];
    // Granted to the id that asked: if this member joined again meanwhile (a new id), that grant is not this one's.
    return reply[0] === 1 ? asker : String(reply[1]);
  }

  private async releaseInRedis(id: string): Promise<void> {
    try {
      await RELEASE.run(this.redis, [this.prefix + id], [this.processId, this.channel, id]);
      this.unreleased.delete(id);
    } catch (error) {
      if (this.held.has(id) || this.closed) return;
      this.unreleased.add(id);
      this.options.onError?.(error);
    }
  }

  private readonly retryReleases = (): void => {
    for (const id of this.unreleased) if (!this.held.has(id)) void this.releaseInRedis(id);
  };

  /** A one-shot wake-up for `id`, registered now. */
  private listen(id: string): { wait(ms: number): Promise<void>; cancel(): void } {
    let woken = false;
    let resolve: (() => void) | undefined;
    const wake = (): void => {
      woken = true;
      resolve?.();
    };
    const wakers = this.waiters.get(id) ?? new Set();
    wakers.add(wake);
    this.waiters.set(id, wakers);
    const cancel = (): void => {
      wakers.delete(wake);
      if (wakers.size === 0 && this.waiters.get(id) === wakers) this.waiters.delete(id);
    };
    return {
      cancel,
      wait: (ms) =>
        new Promise<void>((done) => {
          if (woken) return void (cancel(), done());
          const timer = setTimeout(() => resolve?.(), ms);
          resolve = () => {
            clearTimeout(timer);
            cancel();
            done();
          };
        }),
    };
  }

  private timeout(id: string, holder: string): SvcError {
    return new SvcError('SVC_ERR_LEASE_TIMEOUT', `lease ${id} not granted within ${this.timeoutMs} ms: held by ${holder}`, { status: 503 });
  }

  /** Subscribe to release messages, once, in the background (until then, waiting acquires poll faster). */
  private startSubscriber(): void {
    if (this.sub !== undefined || this.options.subscriber === false || this.closed) return;
    const sub = this.options.subscriber ?? this.redis.duplicate();
    this.sub = sub;
    // Outages are the command connection's to report.
    if (this.options.subscriber === undefined) sub.on('error', () => undefined);
    sub.on('message', this.onMessage);
    sub.on('close', this.onSubscriberClose);
    // On every ready: the first, and each reconnect (a second SUBSCRIBE is harmless).
    sub.on('ready', this.subscribe);
    if (sub.status === 'ready') this.subscribe();
  }

  private readonly subscribe = (): void => {
    this.sub?.subscribe(this.channel).then(
      () => {
        this.subscribed = !this.closed;
        this.onFirstSubscribe();
      },
      () => undefined,
    );
  };

  private readonly onMessage = (channel: string, id: string): void => {
    if (channel !== this.channel) return;
    for (const wake of this.waiters.get(id) ?? []) wake();
  };

  private readonly onSubscriberClose = (): void => {
    this.subscribed = false;
  };
}

function leaseId(kind: string, key: string): string {
  return `${kind}/${key}`;
}
