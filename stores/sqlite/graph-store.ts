/**
 * The embedded anchor store: SQLite through better-sqlite3, in WAL mode,
 * created on first use. Commits arriving in the same tick (from every
 * partition of this thread) share one transaction — each in its own
 * savepoint, so one conflicting batch fails alone — and are acknowledged
 * only once that transaction is committed. `synchronous = NORMAL` (default)
 * survives a killed process; `FULL` survives power loss. Owner tokens
 * (`claim`, a batch's `fence`) live in the `owners` table of the same file,
 * so processes sharing it fence one another.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { SvcError } from '../../kernel/index.ts';
import { storeError, fenceLapsed, type AnchorStore, type CommitBatch, type QuarantineEntry, type StoredDoc, type StoreStats } from '../../actors/graph/index.ts';
import { enableWal } from './wal.ts';

export interface SqliteStoreOptions {
  /** `NORMAL` (default): durable across process crashes; `FULL`: across power loss. */
  synchronous?: 'NORMAL' | 'FULL';
  /** How long a writer waits for another connection's write lock (default 5 s). */
  busyTimeoutMs?: number;
  /**
   * Read only (a worker thread whose writes go to the process's one writer,
   * see `ForwardingStore`): the file and its tables must exist already.
   */
  readOnly?: boolean;
}

/** `.svc/data/anchor_store.db` under the project root, or under `SVC_DATA_DIR`. */
export function defaultStorePath(projectRoot = process.cwd()): string {
  const dir = process.env.SVC_DATA_DIR ? resolve(process.env.SVC_DATA_DIR) : join(projectRoot, '.svc', 'data');
  return join(dir, 'anchor_store.db');
}

const COLUMNS = 'id, root, kind, arch_module, arch_type, fingerprint, format_version, version, source, target, body';

interface Pending {
  batch: CommitBatch;
  resolve: () => void;
  reject: (e: unknown) => void;
}

class Conflict extends Error {}
class Fenced extends Error {}

/** Rows scanned per step when a root's documents are deleted. */
const DELETE_SLICE = 20_000;

/**
 * @example
 * const store = SqliteStore.open(defaultStorePath());
 */
export class SqliteStore implements AnchorStore {
  readonly kind = 'sqlite';
  readonly bodyForm = 'text';
  private readonly db: Database.Database;
  private readonly stmt;
  /** Owner tokens (absent when read only: claims go to the writer). */
  private readonly owners;
  private pending: Pending[] = [];
  private scheduled = false;
  private closed = false;

  private constructor(
    readonly path: string,
    options: SqliteStoreOptions,
  ) {
    if (path !== ':memory:' && !options.readOnly) mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path, { readonly: options.readOnly === true, fileMustExist: options.readOnly === true });
    // The wait first: switching to WAL takes a lock another thread or process opening the same file may hold.
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    if (!options.readOnly) {
      enableWal(this.db);
      this.db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
    }
    if (!options.readOnly) this.db.exec(`
      -- seq keeps insertion order: a node's edges come back in the order they were connected.
      CREATE TABLE IF NOT EXISTS anchors (
        seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, root TEXT NOT NULL, kind TEXT NOT NULL,
        arch_module TEXT NOT NULL, arch_type TEXT NOT NULL, fingerprint TEXT NOT NULL,
        format_version INTEGER NOT NULL, version INTEGER NOT NULL, source TEXT, target TEXT, body TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS anchors_source ON anchors(source) WHERE source IS NOT NULL;
      CREATE INDEX IF NOT EXISTS anchors_target ON anchors(target) WHERE target IS NOT NULL;
      CREATE TABLE IF NOT EXISTS anchors_quarantine (
        id TEXT PRIMARY KEY, root TEXT, kind TEXT, arch_module TEXT, arch_type TEXT, fingerprint TEXT,
        format_version INTEGER, version INTEGER, source TEXT, target TEXT, body TEXT, reason TEXT NOT NULL, at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS anchors_aliases (old TEXT PRIMARY KEY, new TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS owners (root TEXT PRIMARY KEY, token INTEGER NOT NULL);
    `);
    this.stmt = {
      getOne: this.db.prepare(`SELECT ${COLUMNS} FROM anchors WHERE id = ?`),
      getMany: this.db.prepare(`SELECT ${COLUMNS} FROM anchors WHERE id IN (SELECT value FROM json_each(?))`),
      edges: this.db.prepare(`SELECT ${COLUMNS} FROM anchors WHERE source = @node OR target = @node ORDER BY seq`),
      insert: this.db.prepare(
        `INSERT INTO anchors (${COLUMNS}) VALUES (@id, @root, @kind, @arch_module, @arch_type, @fingerprint, @format_version, @version, @source, @target, @body)`,
      ),
      update: this.db.prepare(
        `UPDATE anchors SET root = @root, kind = @kind, arch_module = @arch_module, arch_type = @arch_type, fingerprint = @fingerprint,
         format_version = @format_version, version = @version, source = @source, target = @target, body = @body
         WHERE id = @id AND version = @version - 1`,
      ),
      remove: this.db.prepare('DELETE FROM anchors WHERE id = ? AND version = ?'),
      exists: this.db.prepare('SELECT version FROM anchors WHERE id = ?'),
      toQuarantine: this.db.prepare(
        `INSERT OR REPLACE INTO anchors_quarantine (${COLUMNS}, reason, at) SELECT ${COLUMNS}, @reason, @at FROM anchors WHERE id = @id`,
      ),
      removeAny: this.db.prepare('DELETE FROM anchors WHERE id = ?'),
      quarantined: this.db.prepare(`SELECT ${COLUMNS}, reason, at FROM anchors_quarantine ORDER BY at`),
      fromQuarantine: this.db.prepare(`INSERT INTO anchors (${COLUMNS}) SELECT ${COLUMNS} FROM anchors_quarantine WHERE id = ?`),
      dropQuarantine: this.db.prepare('DELETE FROM anchors_quarantine WHERE id = ?'),
      aliases: this.db.prepare('SELECT old, new FROM anchors_aliases'),
      addAlias: this.db.prepare('INSERT OR REPLACE INTO anchors_aliases (old, new) VALUES (?, ?)'),
      count: this.db.prepare('SELECT count(*) AS n FROM anchors'),
      lastSeq: this.db.prepare('SELECT coalesce(max(seq), 0) AS n FROM anchors'),
      // By ranges of the primary key: no index on root (it would slow every insert) and no long lock.
      deleteRootRange: this.db.prepare('DELETE FROM anchors WHERE seq > @from AND seq <= @to AND root = @root'),
      deleteRootQuarantine: this.db.prepare('DELETE FROM anchors_quarantine WHERE root = ?'),
    };
    if (!options.readOnly) {
      const claim = this.db.prepare('INSERT INTO owners (root, token) VALUES (?, 1) ON CONFLICT (root) DO UPDATE SET token = token + 1 RETURNING token');
      this.owners = {
        // Its own immediate transaction: the write lock is taken first, so processes sharing the file claim one after another.
        claim: this.db.transaction((root: string) => (claim.get(root) as { token: number }).token).immediate,
        token: this.db.prepare('SELECT token FROM owners WHERE root = ?'),
      };
    }
  }

  /** Open (creating the file and its folder when missing). */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    return new SqliteStore(path, options);
  }

  private check(): void {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the store is closed');
  }

  async get(ids: readonly string[]): Promise<StoredDoc[]> {
    this.check();
    if (ids.length === 0) return [];
    if (ids.length === 1) {
      const row = this.stmt.getOne.get(ids[0]) as StoredDoc | undefined;
      return row ? [row] : [];
    }
    return this.stmt.getMany.all(JSON.stringify(ids)) as StoredDoc[];
  }

  async edges(nodeId: string): Promise<StoredDoc[]> {
    this.check();
    return this.stmt.edges.all({ node: nodeId }) as StoredDoc[];
  }

  commit(batch: CommitBatch): Promise<void> {
    this.check();
    if (batch.chain?.broken) return Promise.reject(batch.chain.refusal());
    return new Promise((resolve, reject) => {
      this.pending.push({ batch, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  /** Write every pending batch in one transaction, each in a savepoint. */
  private readonly flush = (): void => {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = [];
    if (pending.length === 0) return;
    // Batches are applied in the order they were handed over; a chain broken by an earlier
    // batch (in this flush or a previous one) has the rest of its batches refused unapplied.
    const outcomes: (SvcError | null)[] = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const p of pending) {
        const chain = p.batch.chain;
        if (chain?.broken) {
          outcomes.push(chain.refusal());
          continue;
        }
        this.db.exec('SAVEPOINT batch');
        try {
          this.apply(p.batch);
          this.db.exec('RELEASE batch');
          outcomes.push(null);
        } catch (error) {
          this.db.exec('ROLLBACK TO batch');
          this.db.exec('RELEASE batch');
          const failure =
            error instanceof Conflict
              ? storeError('SVC_ERR_CONFLICT', error.message)
              : error instanceof Fenced
                ? storeError('SVC_ERR_FENCED')
                : storeError('SVC_ERR_STORE', `commit failed: ${(error as Error).message}`, { cause: error });
          chain?.break(failure);
          outcomes.push(failure);
        }
      }
      this.db.exec('COMMIT');
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      const failure = storeError('SVC_ERR_STORE', `commit failed: ${(error as Error).message}`, { cause: error });
      for (const p of pending) {
        p.batch.chain?.break(failure);
        p.reject(failure);
      }
      return;
    }
    pending.forEach((p, i) => {
      const error = outcomes[i] as SvcError | null;
      if (error === null) p.resolve();
      else p.reject(error);
    });
  };

  private apply(batch: CommitBatch): void {
    if (batch.fence) {
      // Inside the batch's savepoint of a write transaction: no claim can come between this check and the writes.
      if (!this.owners) throw new Error('this store is read only');
      const have = (this.owners.token.get(batch.fence.root) as { token: number } | undefined)?.token ?? 0;
      if (have !== batch.fence.token || fenceLapsed(batch.fence)) throw new Fenced();
    }
    for (const doc of batch.upserts) {
      const row = { ...doc, source: doc.source ?? null, target: doc.target ?? null, body: typeof doc.body === 'string' ? doc.body : JSON.stringify(doc.body) };
      if (doc.version === 1) {
        try {
          this.stmt.insert.run(row);
        } catch (error) {
          if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new Conflict(`${doc.id} already exists`);
          throw error;
        }
      } else if (this.stmt.update.run(row).changes !== 1) {
        const have = (this.stmt.exists.get(doc.id) as { version: number } | undefined)?.version ?? 0;
        throw new Conflict(`${doc.id} is at version ${have}, expected ${doc.version - 1}`);
      }
    }
    for (const del of batch.deletes) {
      if (this.stmt.remove.run(del.id, del.version).changes === 0) {
        const have = (this.stmt.exists.get(del.id) as { version: number } | undefined)?.version;
        if (have !== undefined) throw new Conflict(`${del.id} is at version ${have}, expected ${del.version}`);
      }
    }
  }

  async claim(rootId: string): Promise<number> {
    this.check();
    if (!this.owners) throw storeError('SVC_ERR_STORE', 'this store is read only: claims go to the process’s writer');
    try {
      return this.owners.claim(rootId);
    } catch (error) {
      throw storeError('SVC_ERR_STORE', `claim failed: ${(error as Error).message}`, { cause: error });
    }
  }

  async quarantine(id: string, reason: string): Promise<void> {
    this.check();
    this.db.transaction(() => {
      this.stmt.toQuarantine.run({ id, reason, at: new Date().toISOString() });
      this.stmt.removeAny.run(id);
    })();
  }

  async quarantined(): Promise<QuarantineEntry[]> {
    this.check();
    return this.stmt.quarantined.all() as QuarantineEntry[];
  }

  async restore(id: string): Promise<boolean> {
    this.check();
    return this.db.transaction(() => {
      const moved = this.stmt.fromQuarantine.run(id).changes === 1;
      if (moved) this.stmt.dropQuarantine.run(id);
      return moved;
    })();
  }

  async aliases(): Promise<[string, string][]> {
    this.check();
    return (this.stmt.aliases.all() as { old: string; new: string }[]).map((r) => [r.old, r.new]);
  }

  async addAlias(from: string, to: string): Promise<void> {
    this.check();
    this.stmt.addAlias.run(from, to);
  }

  /** A rare operation (a user's deletion): in slices of the table, yielding to the event loop between them. */
  async deleteRoot(rootId: string): Promise<number> {
    this.check();
    const last = (this.stmt.lastSeq.get() as { n: number }).n;
    let n = 0;
    for (let from = 0; from < last; from += DELETE_SLICE) {
      n += this.stmt.deleteRootRange.run({ from, to: from + DELETE_SLICE, root: rootId }).changes;
      await new Promise((resolve) => setImmediate(resolve));
      this.check();
    }
    n += this.stmt.deleteRootQuarantine.run(rootId).changes;
    return n;
  }

  async count(): Promise<number> {
    this.check();
    return (this.stmt.count.get() as { n: number }).n;
  }

  // What the operator commands (`svc db`) need besides.

  /** Prepared on first use: the serving path never pays for them. */
  private ops_: ReturnType<SqliteStore['prepareOps']> | undefined;

  private get ops(): ReturnType<SqliteStore['prepareOps']> {
    return (this.ops_ ??= this.prepareOps());
  }

  private prepareOps() {
    const set = COLUMNS.split(', ').filter((c) => c !== 'id').map((c) => `${c} = excluded.${c}`).join(', ');
    return {
      scan: this.db.prepare(`SELECT seq, ${COLUMNS} FROM anchors WHERE seq > ? ORDER BY seq LIMIT ?`),
      // An upsert that keeps the row (and its seq, so insertion order) when the id is there already.
      putDoc: this.db.prepare(
        `INSERT INTO anchors (${COLUMNS}) VALUES (@id, @root, @kind, @arch_module, @arch_type, @fingerprint, @format_version, @version, @source, @target, @body)
         ON CONFLICT(id) DO UPDATE SET ${set}`,
      ),
      putQuarantine: this.db.prepare(
        `INSERT OR REPLACE INTO anchors_quarantine (${COLUMNS}, reason, at)
         VALUES (@id, @root, @kind, @arch_module, @arch_type, @fingerprint, @format_version, @version, @source, @target, @body, @reason, @at)`,
      ),
      byType: this.db.prepare('SELECT kind, arch_type, count(*) AS n FROM anchors GROUP BY kind, arch_type'),
      roots: this.db.prepare('SELECT count(DISTINCT root) AS n FROM anchors'),
      quarantineCount: this.db.prepare('SELECT count(*) AS n FROM anchors_quarantine'),
      aliasCount: this.db.prepare('SELECT count(*) AS n FROM anchors_aliases'),
    };
  }

  /** A document's row: absent edge ends as NULL, an object body as JSON text. */
  private static row<D extends StoredDoc>(doc: D): D & { source: string | null; target: string | null; body: string } {
    return { ...doc, source: doc.source ?? null, target: doc.target ?? null, body: typeof doc.body === 'string' ? doc.body : JSON.stringify(doc.body) };
  }

  async scan(after: number, limit: number): Promise<{ docs: StoredDoc[]; next: number }> {
    this.check();
    const rows = this.ops.scan.all(after, limit) as (StoredDoc & { seq: number })[];
    const docs = rows.map(({ seq: _seq, ...doc }) => doc);
    return { docs, next: rows.length > 0 ? (rows[rows.length - 1] as { seq: number }).seq : after };
  }

  async putDocs(docs: readonly StoredDoc[]): Promise<void> {
    this.check();
    const put = this.ops.putDoc;
    this.db.transaction(() => {
      for (const doc of docs) put.run(SqliteStore.row(doc));
    })();
  }

  async putQuarantine(entries: readonly QuarantineEntry[]): Promise<void> {
    this.check();
    const put = this.ops.putQuarantine;
    this.db.transaction(() => {
      for (const entry of entries) put.run(SqliteStore.row(entry));
    })();
  }

  async dropQuarantined(id: string): Promise<boolean> {
    this.check();
    return this.stmt.dropQuarantine.run(id).changes === 1;
  }

  async stats(): Promise<StoreStats> {
    this.check();
    // One read transaction: the figures agree with one another.
    return this.db.transaction(() => {
      const byType: Record<string, number> = {};
      let documents = 0;
      let nodes = 0;
      let edges = 0;
      for (const r of this.ops.byType.all() as { kind: string; arch_type: string; n: number }[]) {
        byType[r.arch_type] = (byType[r.arch_type] ?? 0) + r.n;
        documents += r.n;
        if (r.kind === 'node') nodes += r.n;
        else if (r.kind === 'edge') edges += r.n;
      }
      const pageSize = this.db.pragma('page_size', { simple: true }) as number;
      const pages = this.db.pragma('page_count', { simple: true }) as number;
      return {
        kind: this.kind,
        documents,
        nodes,
        edges,
        roots: (this.ops.roots.get() as { n: number }).n,
        byType,
        quarantined: (this.ops.quarantineCount.get() as { n: number }).n,
        aliases: (this.ops.aliasCount.get() as { n: number }).n,
        backend: { path: this.path, bytes: pageSize * pages, journal_mode: this.db.pragma('journal_mode', { simple: true }) },
      };
    })();
  }

  /** Flush what is pending, then close. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
  }
}
