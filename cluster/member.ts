/**
 * One `svc start` process as a member of a cluster, on its main thread:
 * Redis (membership and leases), the process links to the other members,
 * and what its worker threads must know (the remote nodes, the lease's
 * validity, readiness).
 *
 * Joining: connect to Redis (unreachable: one line, exit 1), open the link
 * port, start the workers (they reach other processes through this thread),
 * then join the membership with their node ids and the app's fingerprint.
 * From then on every membership change becomes a `remote` view for the
 * workers: their kernels hear `up` and `down` for other processes' nodes
 * and placement moves partitions accordingly (members of another app
 * fingerprint are reachable — broadcasts, revocations — but share no
 * partitions).
 *
 * Losing the lease (paused past it, or Redis lost its data): the workers stop
 * serving graphs at once (the shared validity, read against the clock before
 * every run: a member resumed after a pause refuses before any timer of its
 * own has fired), forget every partition they held in memory, and the member
 * joins again; the store's fence refuses whatever a late write of the old
 * incarnation tries. Until it has joined again it counts nobody in: its links
 * are dropped and every ask its workers still wait on from another process
 * fails at once with `SVC_ERR_NOT_MEMBER` (the others dropped it: no reply
 * would come).
 *
 * Replies come back over the answering side's own link, so a member answers
 * only the processes it counts in: an ask from any other (one it dropped, or
 * one that joined a moment ago) is refused, its link closed, and the sender
 * fails it at once instead of waiting out its deadline. A link that drops
 * fails the asks waiting on that process the same way. And a member runs no
 * ask it reads while it is not serving — its lease lapsed by the clock, or it
 * is joining again — even from a member it counts in: bytes that waited in
 * its socket through a pause were failed by their sender once the lease
 * lapsed (and maybe retried elsewhere), so they are answered
 * `SVC_ERR_NOT_MEMBER`, not run. What its threads already had when it lost
 * the lease (queued, waiting for a partition to start, in a run) fails at
 * once and stores nothing; a batch that reaches the database after the
 * lease's end is refused by its fence. With Redis known to
 * be unreachable, a partition's cluster lease is refused at once (no waiting
 * out an outage): graphs are served until this member's lease lapses, then
 * answered 503 until Redis is back.
 */
import { createHmac } from 'node:crypto';
import type { Redis } from 'ioredis';
import { encodeError, fromReceive, kernelError, processOf, type ActivationLease, type ActorSystem, type Frame, type WireError } from '../kernel/index.ts';
import { decodeFrames, encodeFrames } from '../transports/codec/index.ts';
import type { RemoteNode } from '../transports/worker/index.ts';
import { ProcessLinks } from '../transports/link/index.ts';
import { Membership, type MemberRecord, type MemberView } from './membership.ts';
import { connectRedis, redactUrl, redisUnreachable } from '../stores/redis/index.ts';
import { MemberState } from './state.ts';
import { clusterError } from './errors.ts';
import { RedisActivationLease } from './lease.ts';

/** The worker pool as the member sees it. */
export interface MemberPool {
  readonly system: ActorSystem;
  readonly workers: readonly string[];
  /** The nodes of other processes now; asks pending on nodes no longer listed fail (with `error` when given). */
  setRemote(nodes: RemoteNode[], error?: WireError): void;
  /** The link with `process` dropped: asks pending on its nodes fail now. */
  linkLost(process: string, error?: WireError): void;
  deliver(to: string, from: string, bytes: Uint8Array): boolean;
}

export interface ClusterMemberOptions {
  kvUrl: string;
  /** The cluster's name (members of one name form one service). */
  name: string;
  leaseMs: number;
  /** The link's bind address (`--host`). */
  host: string;
  /** The address other members dial: `host`, or `advertiseHost` when `host` binds every interface. */
  advertiseHost: string;
  processId: string;
  /** Shared by every member (the JWT secret): links prove they know it. */
  secret: string;
  version: string;
  /** How long to wait for Redis at start. */
  connectTimeoutMs?: number;
  log(level: 'info' | 'warn' | 'error', message: string): void;
}

/** The name of the main thread's cluster actor (`/user/cluster`): workers ask it for the members. */
export const CLUSTER_ACTOR = 'cluster';

export type ClusterAsk = { t: 'members' };

/** What `GET /admin/cluster` shows of a member. */
export interface MemberSummary {
  id: string;
  /** The process part of its worker node ids. */
  process: string;
  address: string;
  workers: string[];
  app: string;
  pid: number;
  version: string;
  state: string;
  uptime_seconds: number;
  last_heartbeat: string;
  self: boolean;
}

/** The process of a member (the part of its worker node ids before the `/`). */
function processOfMember(m: MemberRecord): string {
  const node = m.workers[0];
  return node ? processOf(node) : m.id;
}

/** A wildcard bind address: other members cannot dial it. */
function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '' || host === '[::]';
}

/**
 * @example
 * const member = await ClusterMember.open({ kvUrl, name, leaseMs: 5000, host, advertiseHost, processId, secret, version, log });
 * const pool = await WorkerPool.start({ ..., remote: [], onRelay: (from, to, bytes) => member.send(from, to, bytes) });
 * await member.join(pool, appFingerprint);
 */
export class ClusterMember {
  readonly state = new MemberState();
  /**
   * For metrics: lease renewals Redis took, and those it did not (unreachable, or the lease was lost); asks of other
   * members it answered "not run" because it was not serving.
   */
  readonly counters = { lease_renewals: 0, lease_failures: 0, refused_asks: 0 };
  private membership: Membership | undefined;
  private pool: MemberPool | undefined;
  private view: MemberView[] = [];
  private ticker: NodeJS.Timeout | undefined;
  private app = '';
  private readonly startedAt = Date.now();
  private rejoining = false;
  /** The lease was lost again while this member was joining again: it joins once more when done. */
  private lostAgain = false;
  /** Lost its lease and not joined again yet: it counts no other member in (no links, no remote nodes). */
  private outside = false;
  /** Joins so far: each incarnation is a new member id (`<process>-<n>`); node ids stay `<process>/<thread>`. */
  private incarnation = 1;
  /** The cluster-wide activation leases of this process (held under the member id of the incarnation). */
  readonly lease: RedisActivationLease;

  private constructor(
    readonly options: ClusterMemberOptions,
    readonly redis: Redis,
    private readonly subscriber: Redis,
    readonly links: ProcessLinks,
  ) {
    this.proof = createHmac('sha256', options.secret).update(`svc-member\n${options.name}`).digest('hex').slice(0, 16);
    this.lease = new RedisActivationLease({
      redis,
      cluster: options.name,
      processId: this.memberId,
      onError: (error: unknown) => this.leaseTrouble(error),
    });
  }

  /**
   * The lease a process's keeper takes keys from: per app fingerprint, as
   * placement is (members of another app version place the same roots among
   * themselves; the store's fence keeps the two from losing updates).
   */
  readonly backing: ActivationLease = {
    // Redis known gone (renewals fail, even on a connection that looks open): refused now rather than at the lease's deadline.
    acquire: (kind, key) =>
      this.state.redisDown ? Promise.reject(redisUnreachable(`the cluster lease of ${kind}/${key} cannot be taken: Redis is unreachable`)) : this.lease.acquire(`${kind}@${this.app}`, key),
    release: (kind, key) => this.lease.release(`${kind}@${this.app}`, key),
  };

  /** A lease that could not be given back was said in this outage of Redis (see {@link leaseTrouble}). */
  private leaseTroubleSaid = false;

  /**
   * A graph's cluster lease could not be given back in Redis (it is given
   * back once Redis answers again): said once per outage, in svc's words —
   * not at all when the member already said Redis is unreachable, or the
   * connection is known to be down (every release fails then).
   */
  private leaseTrouble(error: unknown): void {
    if (this.leaseTroubleSaid || this.state.redisDown || this.redis.status !== 'ready') return;
    this.leaseTroubleSaid = true;
    this.options.log('warn', `a graph's cluster lease could not be given back in Redis (${error instanceof Error ? error.message : String(error)}); it is given back once Redis answers again`);
  }

  /** A digest of the link secret: members whose digest differs cannot link with this one. */
  private readonly proof: string;
  /** Members already warned about (another secret). */
  private readonly strangers = new Set<string>();
  private closed = false;

  /** This incarnation's member id (`<process>-<n>`). */
  get memberId(): string {
    return `${this.options.processId}-${this.incarnation}`;
  }

  /** Connect to Redis and open the link port; throws a one-line error (credentials redacted) when Redis cannot be reached. */
  static async open(options: ClusterMemberOptions): Promise<ClusterMember> {
    const timeout = options.connectTimeoutMs ?? 5000;
    let redis: Redis;
    try {
      redis = await connectRedis(options.kvUrl, `svc-${options.processId}`, timeout);
    } catch (error) {
      throw clusterError('SVC_ERR_CLUSTER', `Redis at ${redactUrl(options.kvUrl)} is unreachable: ${(error as Error).message}`);
    }
    let subscriber: Redis;
    try {
      subscriber = await connectRedis(options.kvUrl, `svc-${options.processId}-sub`, timeout);
    } catch (error) {
      redis.disconnect();
      throw clusterError('SVC_ERR_CLUSTER', `Redis at ${redactUrl(options.kvUrl)} is unreachable: ${(error as Error).message}`);
    }
    let member: ClusterMember | undefined;
    const links = await ProcessLinks.listen({
      processId: options.processId,
      cluster: options.name,
      secret: options.secret,
      host: isWildcard(options.host) ? options.host || '0.0.0.0' : options.host,
      onBytes: (from, to, bytes) => member?.deliver(from, to, bytes),
      // Replies that process owed may be lost with the link: the asks waiting on them fail now.
      onLinkDown: (process) => member?.pool?.linkLost(process),
      onError: (message) => options.log('warn', message),
    });
    member = new ClusterMember(options, redis, subscriber, links);
    await member.lease.start();
    return member;
  }

  /** The address other members dial to reach this process. */
  get address(): string {
    const host = isWildcard(this.options.host) ? this.options.advertiseHost : this.options.host;
    return `${host.includes(':') ? `[${host}]` : host}:${this.links.port}`;
  }

  /** A worker's batch for a node of another process. */
  send(from: string, to: string, bytes: Uint8Array): void {
    // No link (the member left meanwhile): the kernel fails the asks when it hears the node is down.
    this.links.send(from, to, bytes);
  }

  /**
   * Whether this member may run what another process asks of it now: its
   * lease valid by the clock (0 while it is joining again) and not joining
   * again. The others declare it down only once its key expired in Redis,
   * which is at least a tenth of the lease after its own view of the lease
   * ends (`Membership.validUntil`): whatever they failed as sent to a member
   * that is down arrived, or is read, when this says no.
   */
  private serving(): boolean {
    return !this.rejoining && Date.now() <= this.state.validUntil;
  }

  /** Bytes from another process's node for a worker of this one; false refuses them (their link is closed). */
  private deliver(from: string, to: string, bytes: Uint8Array): boolean {
    const pool = this.pool;
    if (!pool) return true;
    const linked = this.links.linked(processOf(from));
    // Judged when read, against the clock: bytes that waited in a socket while this process was paused come after its lease.
    if (!linked || !this.serving()) return this.deliverRefusing(pool, from, to, bytes, linked);
    if (pool.deliver(to, from, bytes)) return true;
    // The thread is gone (a crash; it is being replaced): its asks fail now instead of waiting out their deadline.
    let frames: Frame[];
    try {
      frames = decodeFrames(bytes, (address) => pool.system.refFromAddress(address));
    } catch {
      return true;
    }
    const error = encodeError(kernelError('SVC_ERR_NODE_DOWN', `${to} is not running (it is being replaced)`));
    const replies: Frame[] = frames.filter((f) => f.t === 2).map((f) => ({ t: 3, id: (f as { id: number }).id, ok: false, error }));
    if (replies.length) this.links.send(to, from, encodeFrames(replies));
    return true;
  }

  /**
   * Bytes whose asks this member must not run: they come from a process it
   * does not count in (it dropped it, or has not seen it join yet), or this
   * member is not serving (its lease lapsed by the clock — bytes read after a
   * pause — or it is joining again; the sender may have failed them already,
   * and a client retried). Asks are answered `SVC_ERR_NOT_MEMBER` ("not run")
   * over this member's link to the sender; with no link to answer on (replies
   * go over our own link), refused, which closes the sender's link: it fails
   * them at once instead of waiting out their deadline, and dials again.
   * Replies and tells to named actors need no answer and change no graph:
   * delivered (a revocation from a member not counted in yet still counts);
   * a tell to a graph's partition only while serving (it would start one).
   */
  private deliverRefusing(pool: MemberPool, from: string, to: string, bytes: Uint8Array, linked: boolean): boolean {
    let frames: Frame[];
    try {
      frames = decodeFrames(bytes, (address) => pool.system.refFromAddress(address));
    } catch {
      return false;
    }
    const serving = this.serving();
    const kept = frames.filter((f) => f.t === 3 || (f.t === 1 && (serving || typeof f.to === 'string')));
    if (kept.length) pool.deliver(to, from, kept.length === frames.length ? bytes : encodeFrames(kept));
    const asks = frames.filter((f) => f.t === 2);
    if (asks.length === 0) return true;
    if (!linked) return false;
    this.counters.refused_asks += asks.length;
    // As its partitions' guard would answer (and did before the request reached them): retry, it was not run.
    const error = encodeError(clusterError('SVC_ERR_NOT_MEMBER', `the member of ${to} is not serving right now (its cluster lease lapsed, or it is joining again): the request was not run; retry`));
    this.links.send(to, from, encodeFrames(asks.map((f) => ({ t: 3, id: (f as { id: number }).id, ok: false, error }))));
    return true;
  }

  private record(): MemberRecord {
    return {
      id: this.memberId,
      address: this.address,
      workers: [...(this.pool?.workers ?? [])],
      app: this.app,
      proof: this.proof,
      pid: process.pid,
      version: this.options.version,
      startedAt: this.startedAt,
      state: this.state.leaving ? 'leaving' : 'serving',
    };
  }

  /** Join with the pool's workers; resolves once this member is in the membership. */
  async join(pool: MemberPool, app: string): Promise<void> {
    this.pool = pool;
    this.app = app;
    pool.system.spawn(
      fromReceive((msg: ClusterAsk) => (msg.t === 'members' ? this.summary() : undefined)),
      CLUSTER_ACTOR,
    );
    this.membership = await Membership.join({
      redis: this.redis,
      subscriber: this.subscriber,
      cluster: this.options.name,
      leaseMs: this.options.leaseMs,
      record: this.record(),
      onChange: (members) => this.onChange(members),
      onLost: () => void this.lost(),
      onRenewal: (ok) => void (ok ? this.counters.lease_renewals++ : this.counters.lease_failures++),
      onRedis: (up, error) => {
        this.state.redisDown = !up;
        this.leaseTroubleSaid = false;
        if (up) this.options.log('info', 'Redis is reachable again');
        else this.options.log('warn', `Redis is unreachable (${error?.message ?? 'no answer'}); graphs are served until this member's lease lapses, then answered 503 until it is back`);
      },
    });
    this.state.validUntil = this.membership.validUntil();
    this.state.joined = true;
    // The workers read the lease's validity from shared memory: kept fresh here, well inside a heartbeat.
    this.ticker = setInterval(() => {
      // Not while it is joining again: it serves only once its workers see the others again (see lost()).
      if (this.membership && !this.rejoining) this.state.validUntil = this.membership.validUntil();
    }, Math.max(10, Math.floor(this.options.leaseMs / 20)));
    this.onChange(this.membership.members());
  }

  private onChange(members: MemberView[]): void {
    const self = this.options.processId;
    // Links are between processes: a member's process is the one its worker node ids name.
    const before = new Set(this.view.map(processOfMember));
    // Outside the cluster (lost its lease, joining again) it counts nobody in: the others dropped it.
    if (this.outside) members = [];
    this.view = members;
    const nodes: RemoteNode[] = [];
    for (const m of members) {
      const process = processOfMember(m);
      if (process === self) continue;
      if (m.proof !== this.proof) {
        // Another JWT secret: its links would be refused both ways; it gets none of this member's traffic.
        if (!this.strangers.has(m.id)) {
          this.strangers.add(m.id);
          this.options.log('error', `member ${m.id} at ${m.address} joined cluster ${this.options.name} with another JWT secret: it is not linked (give every member the same JWT_SECRET)`);
        }
        continue;
      }
      before.delete(process);
      this.links.connect(process, m.address);
      for (const node of m.workers) nodes.push({ node, app: m.app, ...(m.state === 'leaving' ? { leaving: true } : {}) });
    }
    for (const gone of before) if (gone !== self) this.links.disconnect(gone);
    // Cut off: what its workers wait on from other processes fails now, as "not a member" (503, retry).
    this.pool?.setRemote(nodes, this.outside ? encodeError(clusterError('SVC_ERR_NOT_MEMBER', 'this member lost its cluster lease before the answer came (it was paused or cut off); retry')) : undefined);
  }

  /**
   * This member was declared dead (paused past its lease, or Redis lost its
   * data): forget, then join again. It serves again — the validity its
   * workers read is published — only once every worker has the new view of
   * the members (a worker still placing roots by the empty view of the
   * outage would start here a root another member holds, and wait for its
   * lease).
   */
  private async lost(): Promise<void> {
    if (!this.membership) return;
    if (this.rejoining) {
      this.lostAgain = true;
      return;
    }
    this.rejoining = true;
    this.state.validUntil = 0;
    this.state.joined = false;
    this.outside = true;
    this.onChange(this.view);
    // Activations waiting for a lease held by another member: they would wait up to its deadline for nothing.
    this.lease.interrupt(clusterError('SVC_ERR_NOT_MEMBER', 'this member lost its cluster lease while a graph waited to start here; retry'));
    this.options.log('warn', 'this member lost its lease (paused, or cut off from Redis): dropping every graph it held and joining again');
    try {
      const pool = this.pool;
      if (pool) {
        await Promise.allSettled(pool.workers.map((node) => pool.system.refFromAddress({ node, path: '/user/http' }).ask({ t: 'forget' }, 10_000)));
      }
      for (let attempt = 0; ; attempt++) {
        if (this.closed) return;
        try {
          this.incarnation++;
          this.lease.processId = this.memberId;
          await this.membership.rejoin(this.record());
          break;
        } catch (error) {
          if (attempt % 10 === 0) this.options.log('warn', `joining again failed: ${(error as Error).message}; retrying`);
          await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2000)));
        }
      }
      this.outside = false;
      this.onChange(this.membership.members());
      // Revocations published while this member counted as gone never reached it: read them again. A worker's answer
      // also says it has the new view of the members (sent before, on the same port).
      if (pool) await Promise.allSettled(pool.workers.map((node) => pool.system.refFromAddress({ node, path: '/user/http' }).ask({ t: 'revocations' }, 10_000)));
      if (this.closed) return;
      this.state.validUntil = this.membership.validUntil();
      this.state.joined = true;
      this.options.log('info', 'joined the cluster again');
    } finally {
      this.rejoining = false;
    }
    if (this.lostAgain) {
      this.lostAgain = false;
      void this.lost();
    }
  }

  /** The members as `GET /admin/cluster` shows them. */
  summary(): MemberSummary[] {
    const now = Date.now();
    // The membership's own view: its heartbeats are fresher than the last change this member acted on.
    return (this.membership?.members() ?? this.view).map((m) => ({
      id: m.id,
      process: processOfMember(m),
      address: m.address,
      workers: m.workers,
      app: m.app,
      pid: m.pid,
      version: m.version,
      state: m.state ?? 'serving',
      uptime_seconds: Math.round((now - m.startedAt) / 1000),
      last_heartbeat: new Date(m.lastHeartbeat).toISOString(),
      self: processOfMember(m) === this.options.processId,
    }));
  }

  /** Members now (self included). */
  members(): MemberView[] {
    return this.view;
  }

  /** A graceful leave begins: readiness turns false and the others stop placing partitions here. */
  async startLeaving(): Promise<void> {
    this.state.leaving = true;
    await this.membership?.setState('leaving').catch((error: unknown) => this.options.log('warn', `could not announce leaving: ${(error as Error).message}`));
  }

  /** Leave the membership (the others hear at once) and close Redis and the links. */
  async leave(): Promise<void> {
    this.closed = true;
    clearInterval(this.ticker);
    this.state.joined = false;
    await this.lease.releaseAll().catch(() => undefined);
    try {
      await this.membership?.leave();
    } catch (error) {
      this.options.log('warn', `leaving the membership failed (the others notice when the lease lapses): ${(error as Error).message}`);
    }
    await this.close();
  }

  /** Close without leaving (as a crash would; for tests). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.ticker);
    this.lease.destroy();
    this.membership?.close();
    await this.links.close();
    this.redis.disconnect();
    this.subscriber.disconnect();
  }
}
