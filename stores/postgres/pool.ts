/**
 * What the PostgreSQL backends share (the anchor store here, the users
 * repository in identity): a connection pool that never crashes the process
 * on a dropped connection, errors sorted into "the database is unreachable"
 * (`SVC_ERR_STORE_UNAVAILABLE`, 503) and the rest (`SVC_ERR_STORE`), and a
 * health watch: once the database is unreachable, calls fail at once instead
 * of piling up, while a probe retries with backoff until it answers again.
 *
 * Driver: `pg` (node-postgres). Measured against `postgres` on the calls the
 * store makes (bench/pg-driver.ts): within a few percent on point reads and
 * one-row transactions; the store's group commit sends one statement per
 * flush, so pipelining (postgres' advantage) buys nothing here, and pg's
 * pool events, named prepared statements and type overrides are what the
 * store needs.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { SvcError } from '../../kernel/index.ts';
import { storeError, graphError } from '../../actors/graph/index.ts';

// The driver is loaded on first use (a pool made, a lock taken): an app that names no PostgreSQL URI never loads it.
// `require`, not `await import()`: a pool is made synchronously (`kvstore()` opens its backend at once).
const load = createRequire(import.meta.url);
let driver: typeof pg | undefined;
const driverOf = (): typeof pg => (driver ??= load('pg') as typeof pg);

/** int8 and numeric as JS numbers (versions, tokens, sequence numbers stay far below 2^53). */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 || oid === 1700) return (v: string) => Number(v);
    return driverOf().types.getTypeParser(oid, format as 'text');
  },
};

/** The URI with its password (and any password parameter) hidden: the only form a log or message gets. */
export function redactUri(uri: string): string {
  try {
    const u = new URL(uri);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) if (/pass|secret|key/i.test(key)) u.searchParams.set(key, '***');
    return u.toString();
  } catch {
    return '<unparsable database URI>';
  }
}

const UNREACHABLE_SQLSTATE = /^(08|57P0|53300|53400|3D000)/;
/** Network failures of the socket (and TLS failures at connect are reported by `connectOrThrow`). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED', 'EHOSTDOWN', 'ENETDOWN']);
/** Invalid text for its type, a NUL character, a character the encoding lacks. */
const UNSTORABLE = new Set(['22P02', '22P05', '22021']);

/** Whether an error says the database cannot be reached (rather than refusing this statement). */
export function isUnreachable(error: unknown): boolean {
  if (error instanceof SvcError) return error.code === 'SVC_ERR_STORE_UNAVAILABLE';
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string') {
    if (/^[0-9A-Z]{5}$/.test(e.code)) return UNREACHABLE_SQLSTATE.test(e.code);
    return UNREACHABLE_CODES.has(e.code);
  }
  // node-postgres' own words for a connection that went away or a query the server never answered.
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|connection timeout|timeout exceeded|Query read timeout|not queryable|ECONN/i.test(message);
}

export interface PgHealthEvents {
  /** The database stopped answering (once per outage). */
  onDown?: (error: unknown) => void;
  /** It answers again. */
  onUp?: () => void;
}

/**
 * A pool with health: `run` sends a query (or a transaction) and sorts its
 * failure; while the database is down every call fails at once with
 * `SVC_ERR_STORE_UNAVAILABLE`, and a probe (`SELECT 1`, 100 ms doubling to
 * 2 s) brings it back.
 *
 * @example
 * const db = PgPool.open(uri, { max: 8 });
 * await db.connectOrThrow();
 * const { rows } = await db.run((c) => c.query('SELECT 1 AS one'));
 */
export class PgPool {
  readonly pool: pg.Pool;
  private down: unknown = undefined;
  private probing: NodeJS.Timeout | undefined;
  private watching: NodeJS.Timeout | undefined;
  /** When a call last succeeded (ms). */
  private lastOk = Date.now();
  private closed = false;
  private readonly listeners = new Set<PgHealthEvents>();

  private constructor(
    readonly uri: string,
    options: { max?: number; application?: string; queryTimeoutMs?: number },
  ) {
    this.pool = new (driverOf().Pool)({
      connectionString: uri,
      max: options.max ?? 8,
      connectionTimeoutMillis: 3_000,
      idleTimeoutMillis: 30_000,
      // A database that stops answering (frozen, partitioned away) is unavailable within 10 s, not after the
      // request's own deadline; TCP keep-alive finds dead connections the server never closed.
      query_timeout: options.queryTimeoutMs ?? 10_000,
      keepAlive: true,
      application_name: options.application ?? 'svc',
      types: TYPES,
    });
    // An idle connection the server dropped: the next query opens another. Never an unhandled 'error'.
    this.pool.on('error', (error) => this.markDown(error));
  }

  static open(uri: string, options: { max?: number; application?: string; queryTimeoutMs?: number } = {}): PgPool {
    return new PgPool(uri, options);
  }

  /** Whether the database answered the last call. */
  get healthy(): boolean {
    return this.down === undefined && !this.closed;
  }

  /** Be told when the database goes and comes back. Returns a function that stops telling. */
  watch(events: PgHealthEvents): () => void {
    this.listeners.add(events);
    return () => this.listeners.delete(events);
  }

  /** Connect once, or reject with one clear `SVC_ERR_STORE_UNAVAILABLE` naming the server (never its password). */
  async connectOrThrow(): Promise<void> {
    try {
      const client = await this.pool.connect();
      client.release();
    } catch (error) {
      throw storeError('SVC_ERR_STORE_UNAVAILABLE', `cannot reach PostgreSQL at ${redactUri(this.uri)}: ${describe(error)}`, { cause: error });
    }
  }

  /**
   * Run `work` on a pooled connection. Failures: unreachable →
   * `SVC_ERR_STORE_UNAVAILABLE` (and the pool is marked down); an
   * `SvcError` as it is; anything else → `SVC_ERR_STORE` with `what`.
   */
  async run<T>(work: (client: pg.PoolClient) => Promise<T>, what = 'query'): Promise<T> {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the store is closed');
    if (this.down !== undefined) throw storeError('SVC_ERR_STORE_UNAVAILABLE');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      if (this.closed) throw storeError('SVC_ERR_STORE', 'the store is closed');
      this.markDown(error);
      throw storeError('SVC_ERR_STORE_UNAVAILABLE', undefined, { cause: error });
    }
    let broken: unknown = undefined;
    // The pool listens to a connection's errors only while it is idle: one the server ends while it is ours (between
    // two queries of a commit, a stop of the server) would be an 'error' event nobody hears, which ends the thread.
    const lost = (error: Error): void => {
      broken ??= error;
      this.markDown(error);
    };
    client.on('error', lost);
    try {
      const out = await work(client);
      this.lastOk = Date.now();
      return out;
    } catch (error) {
      if (error instanceof SvcError) throw error;
      // Input the database cannot hold (a NUL character, a lone surrogate in JSON): the caller's, a 400.
      if (UNSTORABLE.has((error as { code?: string }).code ?? '')) {
        throw graphError('SVC_ERR_INVALID_FIELDS', 'a string holds a character the database cannot store (a NUL character or a lone surrogate)', { cause: error });
      }
      if (isUnreachable(error)) {
        broken = error;
        this.markDown(error);
        throw storeError('SVC_ERR_STORE_UNAVAILABLE', undefined, { cause: error });
      }
      throw storeError('SVC_ERR_STORE', `${what} failed: ${describe(error)}`, { cause: error });
    } finally {
      client.removeListener('error', lost);
      // A connection that failed mid-way is not given back for reuse.
      client.release(broken === undefined ? undefined : (broken as Error));
    }
  }

  /**
   * Notice an outage even while nothing asks the database (readiness):
   * when no call succeeded for `everyMs`, a `SELECT 1` must answer within
   * `everyMs`, else the database counts as gone.
   */
  monitor(everyMs = 2_000): void {
    if (this.watching) return;
    this.watching = setInterval(() => {
      if (this.closed || this.down !== undefined || Date.now() - this.lastOk < everyMs) return;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('connection timeout: the database did not answer a health check')), everyMs);
      });
      Promise.race([this.pool.query('SELECT 1'), late]).then(
        () => {
          this.lastOk = Date.now();
        },
        (error: unknown) => this.markDown(error),
      ).finally(() => clearTimeout(timer));
    }, everyMs);
    this.watching.unref();
  }

  /** `work` inside BEGIN … COMMIT (rolled back when it throws). */
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>, what = 'transaction'): Promise<T> {
    return this.run(async (client) => {
      await client.query('BEGIN');
      try {
        const out = await work(client);
        await client.query('COMMIT');
        return out;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    }, what);
  }

  private markDown(error: unknown): void {
    if (this.closed || this.down !== undefined) return;
    if (!isUnreachable(error)) return;
    this.down = error;
    for (const l of this.listeners) l.onDown?.(error);
    this.probe(100);
  }

  private probe(delayMs: number): void {
    this.probing = setTimeout(() => {
      this.probing = undefined;
      if (this.closed) return;
      this.pool.query('SELECT 1').then(
        () => {
          if (this.closed) return;
          this.down = undefined;
          this.lastOk = Date.now();
          for (const l of this.listeners) l.onUp?.();
        },
        () => this.probe(Math.min(delayMs * 2, 2_000)),
      );
    }, delayMs);
    this.probing.unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.probing) clearTimeout(this.probing);
    if (this.watching) clearInterval(this.watching);
    this.listeners.clear();
    await this.pool.end().catch(() => undefined);
  }
}

/** Schema changes one process at a time (a transaction-scoped advisory lock), so members starting together do not collide. */
export async function withSchemaLock(db: PgPool, work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  await db.transaction(async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('svc schema'))");
    await work(client);
  }, 'creating the tables');
}

/** An error's message and code, without anything that could hold a credential. */
function describe(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(error);
  return typeof e?.code === 'string' && !message.includes(e.code) ? `${message} (${e.code})` : message;
}

/**
 * The serving lock of a database, as the data-folder lock is for SQLite:
 * one process serves a PostgreSQL database outside a cluster (`exclusive`),
 * or any number of members of a cluster (`shared`) — never both. Held by a
 * session-level advisory lock on a connection of its own for the life of
 * the process; if that connection drops (the database restarted), it is
 * taken again as soon as the database answers. Resolves to undefined when
 * another process holds it the other way.
 *
 * @example
 * const lock = await takeServingLock(uri, { shared: Boolean(kvUrl) });
 * if (!lock) throw new Error('another svc process serves this database outside a cluster');
 */
export async function takeServingLock(uri: string, options: { shared: boolean; onLost?: (why: string) => void }): Promise<{ release(): Promise<void> } | undefined> {
  const fn = options.shared ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
  let client: pg.Client | undefined;
  let released = false;
  let retry: NodeJS.Timeout | undefined;
  const take = async (): Promise<boolean> => {
    const c = new (driverOf().Client)({ connectionString: uri, connectionTimeoutMillis: 3_000, keepAlive: true, application_name: 'svc serving lock' });
    c.on('error', () => undefined);
    await c.connect();
    const { rows } = await c.query<{ ok: boolean }>(`SELECT ${fn}(hashtext('svc serving')) AS ok`);
    if (!rows[0]?.ok) {
      await c.end().catch(() => undefined);
      return false;
    }
    client = c;
    // The lock lives as long as this connection: when it ends, take it again once the database is back.
    c.once('end', () => {
      if (!released) again(500);
    });
    return true;
  };
  const again = (delayMs: number): void => {
    retry = setTimeout(() => {
      take().then(
        (ok) => {
          if (!ok) options.onLost?.('another svc process took this database’s serving lock while the database was away');
        },
        () => again(Math.min(delayMs * 2, 5_000)),
      );
    }, delayMs);
    retry.unref();
  };
  try {
    if (!(await take())) return undefined;
  } catch (error) {
    throw storeError('SVC_ERR_STORE_UNAVAILABLE', `cannot reach PostgreSQL at ${redactUri(uri)}: ${describe(error)}`, { cause: error });
  }
  return {
    async release() {
      released = true;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
