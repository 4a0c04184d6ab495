/**
 * Sign-ins under way (`/sso/{platform}/login` → `/callback`):
 * what the callback needs to finish one — the PKCE verifier, the nonce, the
 * redirect URI, a hash of the browser's binding cookie — kept on the server,
 * never in the browser. Each is filed
 * under a SHA-256 of its `state` ({@link stateKey}: the state itself is
 * stored nowhere), taken once (a replayed callback finds nothing), gone after
 * the TTL, and bounded in number (the oldest go first).
 *
 * Two stores behind {@link SsoStateStore}: {@link ActorSsoStates}, the
 * process's (a few virtual actors placed on the worker threads, so a sign-in
 * started on one thread finishes on any other — as the login rate limits are
 * kept), and the cluster's in Redis (`stores/redis`, with `KV_URL`: any
 * member finishes what another started).
 */
import { createHash } from 'node:crypto';
import type { ActorContext, ActorLogic, ActorSystem, Placement } from '../../kernel/index.ts';

/** A sign-in started at `/sso/{platform}/login` (or `/register`), waiting for its callback. */
export interface PendingSignIn {
  /** The platform id (`google`, …; never an alias). */
  platform: string;
  mode: 'login' | 'register';
  code_verifier: string;
  /** OpenID Connect's nonce; null for plain OAuth 2 (GitHub). */
  nonce: string | null;
  /** The redirect URI sent to the provider (the token request repeats it). */
  redirect_uri: string;
  /**
   * The SHA-256 (base64url) of the browser binding the sign-in was started
   * with (the `svc_sso` cookie, see `sso.ts`): the callback must bring the
   * cookie it hashes to. The binding itself is stored nowhere. Null when
   * `[scale.sso] bind_browser` was off.
   */
  browser: string | null;
  /** When it started (ms). */
  created: number;
}

/**
 * @example
 * await states.put(stateKey(state), pending, 600_000);
 * const pending = await states.take(stateKey(params.get('state') ?? '')); // once only
 */
export interface SsoStateStore {
  /** Keep a pending sign-in for `ttlMs` under `key` (from {@link stateKey}); the oldest go past the bound. */
  put(key: string, pending: PendingSignIn, ttlMs: number): Promise<void>;
  /** The pending sign-in under `key`, removed (undefined: unknown, taken already, or expired). Once only, however many ask at once. */
  take(key: string): Promise<PendingSignIn | undefined>;
  close?(): Promise<void>;
}

/**
 * What a state is filed under: its SHA-256, base64url. A leaked store (a
 * Redis dump) holds no state a callback would accept.
 *
 * @example
 * stateKey('abc') // 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0'
 */
export function stateKey(state: string): string {
  return createHash('sha256').update(state).digest('base64url');
}

/** At most this many sign-ins wait at once, by default (past it the oldest are dropped). */
export const MAX_PENDING_SIGN_INS = 100_000;

/**
 * The pending sign-ins of one shard, in memory: a Map in insertion order
 * (with one TTL, the oldest are the first to expire), swept from the front.
 *
 * @example
 * const table = new PendingTable(1000);
 * table.put(key, pending, 600_000, Date.now());
 * table.take(key, Date.now()); // pending, then undefined
 */
export class PendingTable {
  private readonly entries = new Map<string, { pending: PendingSignIn; expires: number }>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.entries.size;
  }

  put(key: string, pending: PendingSignIn, ttlMs: number, now: number): void {
    this.entries.delete(key);
    this.sweep(now);
    while (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    this.entries.set(key, { pending, expires: now + ttlMs });
  }

  take(key: string, now: number): PendingSignIn | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    return entry.expires > now ? entry.pending : undefined;
  }

  /** Drop expired entries from the front (the oldest first). */
  sweep(now: number): void {
    for (const [key, entry] of this.entries) {
      if (entry.expires > now) break;
      this.entries.delete(key);
    }
  }
}

type Msg = { t: 'put'; key: string; pending: PendingSignIn; ttlMs: number } | { t: 'take'; key: string } | { t: 'size' };

class Shard implements ActorLogic<Msg, unknown> {
  private readonly table: PendingTable;

  constructor(max: number) {
    this.table = new PendingTable(max);
  }

  receive(msg: Msg, ctx: ActorContext<Msg>): unknown {
    const now = ctx.clock.now();
    switch (msg.t) {
      case 'put':
        this.table.put(msg.key, msg.pending, msg.ttlMs, now);
        return true;
      case 'take':
        return this.table.take(msg.key, now) ?? null;
      case 'size':
        this.table.sweep(now);
        return this.table.size;
    }
  }
}

const KIND = 'sso-states';
const SHARDS = 8;

export interface ActorSsoStatesOptions {
  /** Which thread hosts a shard: the worker threads (`workerPlacement()`), or the only node there is. */
  placement: Placement | ((key: string, nodes: readonly string[]) => string);
  /** The TTL in use: a shard idle longer holds nothing live and deactivates. */
  ttlMs: number;
  /** Pending sign-ins kept at most, across shards (default {@link MAX_PENDING_SIGN_INS}). */
  maxPending?: number;
  /** How long a thread waits for a shard on another (default 10 s). */
  askTimeoutMs?: number;
}

/**
 * The process's pending sign-ins: 8 shards (by key), each a virtual actor on
 * one worker thread — every thread of the process reaches the same one for a
 * key. A sign-in whose shard's thread stops (a crash; its replacement starts
 * empty) is lost: its callback answers SSO_INVALID_STATE and the user starts
 * again.
 *
 * @example
 * const states = new ActorSsoStates(system, { placement: workerPlacement(), ttlMs: 600_000 });
 */
export class ActorSsoStates implements SsoStateStore {
  private readonly timeoutMs: number;

  constructor(
    private readonly system: ActorSystem,
    options: ActorSsoStatesOptions,
  ) {
    this.timeoutMs = options.askTimeoutMs ?? 10_000;
    const perShard = Math.max(1, Math.ceil((options.maxPending ?? MAX_PENDING_SIGN_INS) / SHARDS));
    system.defineKind(KIND, {
      placement: options.placement,
      idleAfterMs: options.ttlMs + 60_000,
      props: () => ({ logic: () => new Shard(perShard), capacity: 10_000 }),
    });
  }

  private shard(key: string) {
    return this.system.activate<Msg, unknown>(KIND, String((key.charCodeAt(0) || 0) % SHARDS));
  }

  async put(key: string, pending: PendingSignIn, ttlMs: number): Promise<void> {
    await this.shard(key).ask({ t: 'put', key, pending, ttlMs } satisfies Msg, this.timeoutMs);
  }

  async take(key: string): Promise<PendingSignIn | undefined> {
    return ((await this.shard(key).ask({ t: 'take', key } satisfies Msg, this.timeoutMs)) as PendingSignIn | null) ?? undefined;
  }

  /** Pending sign-ins across shards (for tests and stats). */
  async size(): Promise<number> {
    const sizes = await Promise.all(Array.from({ length: SHARDS }, (_, i) => this.system.activate(KIND, String(i)).ask({ t: 'size' } satisfies Msg, this.timeoutMs)));
    return (sizes as number[]).reduce((a, b) => a + b, 0);
  }
}
