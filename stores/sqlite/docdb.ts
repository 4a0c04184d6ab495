/**
 * The embedded document store: `kvstore(dbName, 'docdb')` on SQLite through
 * better-sqlite3, opened as the anchor store opens its file (WAL,
 * `synchronous = NORMAL`, a busy timeout so that several connections —
 * threads, processes — can share it; writes wait for one another's lock).
 *
 * One table holds every app document of the file:
 * `docdb (db, col, id, doc) PRIMARY KEY (db, col, id) WITHOUT ROWID`, `doc`
 * the JSON text of the document without its `_id` (the `id` column is the
 * one copy). The database name and the collection are values, never SQL
 * identifiers, so two `dbName`s on one file never see each other's documents
 * and no name reaches SQL text.
 *
 * Filters are translated to SQL (docdb-sql.ts); nothing is filtered
 * in JS. Updates are read, changed by `applyUpdate` (actors/data/query.ts) and written
 * back in one IMMEDIATE transaction, so `$set`/`$unset` mean exactly what the
 * other backends mean and an update of many documents is all or nothing.
 * `updateOne`/`updateMany` resolve to the number of documents MATCHED (Mongo's
 * `matchedCount`): a `$set` to the value already there still counts.
 * `updateOne`, `deleteOne` and `findOne` take the first match by `_id`.
 *
 * `createIndex(collection, 'a.b')` makes two indexes named after the path
 * (`docdb_<hash>`): its value, `(db, col, json_extract(doc, '$."a"."b"'))` for
 * the documents that have it, and the documents holding an array there. An
 * index on a path serves that path in every collection and `dbName` of the
 * file (it is one table): indexes are few and named by fields. How queries
 * use them: docdb-sql.ts. `explain()` shows a query's plan.
 *
 * Errors: the file busy beyond the timeout, unopenable, an I/O error or a
 * full disk → `KV_UNAVAILABLE` (with the cause); a taken `_id` →
 * `DUPLICATE_KEY`; after `close()` → `KV_UNAVAILABLE`.
 */
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SvcError } from '../../kernel/index.ts';
import { kvstoreError, applyUpdate, checkBatch, checkDocument, parsePath, validateFilter, validateFind, validateUpdate, type JsonValue, type DocBackend, type Document, type Filter, type FindOptions, type Update } from '../../actors/data/index.ts';
import { selectSql, typeExpr, valueExpr, type IndexLookup } from './docdb-sql.ts';
import { enableWal } from './wal.ts';

export interface SqliteDocOptions {
  /** How long a writer waits for another connection's write lock (default 5 s). */
  busyTimeoutMs?: number;
  /** `NORMAL` (default): durable across process crashes; `FULL`: across power loss. */
  synchronous?: 'NORMAL' | 'FULL';
}

/** Prepared statements kept per connection (filters of different shapes are different SQL). */
const STATEMENTS = 64;
/** How often another connection's new indexes are looked for (ms). */
const CATALOG_EVERY_MS = 1_000;
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY|PROTOCOL)/;

/**
 * The index names of a field path: `docdb_<16 hex of sha256(path)>` (value) and `…_a` (arrays).
 *
 * @example
 * indexNames(['email']) // { value: 'docdb_82244417f956ac7c', arrays: 'docdb_82244417f956ac7c_a' }
 */
export function indexNames(path: readonly string[]): { value: string; arrays: string } {
  const hash = createHash('sha256').update(path.join('.')).digest('hex').slice(0, 16);
  return { value: `docdb_${hash}`, arrays: `docdb_${hash}_a` };
}

function failure(error: unknown): unknown {
  if (error instanceof SvcError) return error;
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && UNAVAILABLE.test(code)) {
    return kvstoreError('KV_UNAVAILABLE', `the SQLite document store cannot be used right now: ${(error as Error).message}`, { cause: error });
  }
  if (error instanceof TypeError && /database connection is not open/.test(error.message)) {
    return kvstoreError('KV_UNAVAILABLE', 'the document store is closed', { cause: error });
  }
  return error;
}

function toDocument(id: string, text: string): Document {
  return { _id: id, ...(JSON.parse(text) as Record<string, unknown>) };
}

/** The stored text of a checked document: everything but `_id`. */
function body(doc: Record<string, JsonValue>): string {
  const { _id: _, ...rest } = doc;
  return JSON.stringify(rest);
}

/**
 * @example
 * const docs = new SqliteDocBackend('.svc/data/docdb.db', 'app');
 * await docs.createIndex('users', 'email');
 * const id = await docs.insertOne('users', { email: 'ada@example.com' });
 * await docs.findOne('users', { email: 'ada@example.com' });
 */
export class SqliteDocBackend implements DocBackend {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly tx: Database.Transaction<(work: () => unknown) => unknown>;
  private indexes = new Set<string>();
  /** Index names by path (a sha256 each time costs more than the rest of the query building). */
  private readonly names = new Map<string, { value: string; arrays: string }>();
  private schemaVersion = -1;
  private catalogAt = 0;

  constructor(
    readonly path: string,
    readonly dbName: string,
    options: SqliteDocOptions = {},
  ) {
    try {
      if (path !== ':memory:' && path !== '') mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path);
      this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      enableWal(this.db);
      this.db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
      this.db.exec(`CREATE TABLE IF NOT EXISTS docdb (
        db TEXT NOT NULL, col TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (db, col, id)) WITHOUT ROWID`);
    } catch (error) {
      throw kvstoreError('KV_UNAVAILABLE', `cannot open the SQLite document store at ${path}: ${(error as Error).message}`, { cause: error });
    }
    this.tx = this.db.transaction((work: () => unknown) => work());
  }

  async get(collection: string, key: string): Promise<Document | null> {
    return this.run(() => {
      const row = this.stmt('SELECT doc FROM docdb WHERE db = ? AND col = ? AND id = ?').get(this.dbName, collection, key) as { doc: string } | undefined;
      return row ? toDocument(key, row.doc) : null;
    });
  }

  async set(collection: string, key: string, value: Document): Promise<void> {
    const { doc } = checkDocument(value, key);
    this.run(() =>
      this.stmt('INSERT INTO docdb (db, col, id, doc) VALUES (?, ?, ?, ?) ON CONFLICT (db, col, id) DO UPDATE SET doc = excluded.doc').run(this.dbName, collection, key, body(doc)),
    );
  }

  async delete(collection: string, key: string): Promise<boolean> {
    return this.run(() => this.stmt('DELETE FROM docdb WHERE db = ? AND col = ? AND id = ?').run(this.dbName, collection, key).changes > 0);
  }

  async exists(collection: string, key: string): Promise<boolean> {
    return this.run(() => this.stmt('SELECT 1 FROM docdb WHERE db = ? AND col = ? AND id = ?').get(this.dbName, collection, key) !== undefined);
  }

  async findOne(collection: string, filter: Filter): Promise<Document | null> {
    return (await this.find(collection, filter, { limit: 1 }))[0] ?? null;
  }

  async find(collection: string, filter: Filter, options?: FindOptions): Promise<Document[]> {
    const clause = validateFilter(filter);
    const find = validateFind(options);
    return this.run(() => {
      const rows = this.select((indexes) => selectSql(clause, find, this.dbName, collection, indexes)) as { id: string; doc: string }[];
      return rows.map((r) => toDocument(r.id, r.doc));
    });
  }

  async insertOne(collection: string, doc: Document): Promise<string> {
    const checked = checkDocument(doc);
    return this.run(() => {
      this.insert(collection, checked);
      return checked.id;
    });
  }

  async insertMany(collection: string, docs: Document[]): Promise<string[]> {
    const checked = checkBatch(docs);
    const ids = checked.map((c) => c.id);
    if (checked.length === 0) return [];
    return this.run(() => {
      this.tx.immediate(() => {
        for (const c of checked) this.insert(collection, c);
      });
      return ids;
    });
  }

  async updateOne(collection: string, filter: Filter, update: Update): Promise<number> {
    return this.update(collection, filter, update, 1);
  }

  async updateMany(collection: string, filter: Filter, update: Update): Promise<number> {
    return this.update(collection, filter, update, 0);
  }

  async deleteOne(collection: string, filter: Filter): Promise<number> {
    return this.remove(collection, filter, 1);
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    return this.remove(collection, filter, 0);
  }

  /** `_id` is the primary key already: nothing to do for it. The collection is checked by the facade; the index serves every collection. */
  async createIndex(_collection: string, field: string): Promise<void> {
    const path = parsePath(field, 'createIndex');
    if (path[0] === '_id') return;
    const names = indexNames(path);
    this.run(() => {
      this.tx.immediate(() => {
        this.db.exec(`CREATE INDEX IF NOT EXISTS "${names.value}" ON docdb (db, col, ${valueExpr(path)}) WHERE ${valueExpr(path)} IS NOT NULL`);
        this.db.exec(`CREATE INDEX IF NOT EXISTS "${names.arrays}" ON docdb (db, col) WHERE ${typeExpr(path)} = 'array'`);
      });
      this.catalogAt = 0;
    });
  }

  /**
   * The plan SQLite picks for a find (`EXPLAIN QUERY PLAN`, one line per
   * step): to see which index serves a filter.
   *
   * @example
   * await docs.explain('users', { email: 'ada@example.com' }) // ['SEARCH docdb USING INDEX docdb_… (db=? AND col=? AND <expr>=?)', …]
   */
  async explain(collection: string, filter: Filter, options?: FindOptions): Promise<string[]> {
    const clause = validateFilter(filter);
    const find = validateFind(options);
    return this.run(() => {
      const { sql, values } = selectSql(clause, find, this.dbName, collection, (p) => this.indexFor(p));
      return (this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(values) as { detail: string }[]).map((r) => r.detail);
    });
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    this.statements.clear();
    this.db.close();
  }

  // ---- inside --------------------------------------------------------------------------

  private run<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw failure(error);
    }
  }

  /** A cached prepared statement (least recently used dropped past {@link STATEMENTS}). */
  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (s) {
      this.statements.delete(sql);
    } else {
      s = this.db.prepare(sql);
      if (this.statements.size >= STATEMENTS) this.statements.delete(this.statements.keys().next().value as string);
    }
    this.statements.set(sql, s);
    return s;
  }

  private insert(collection: string, c: { id: string; doc: Record<string, JsonValue> }): void {
    try {
      this.stmt('INSERT INTO docdb (db, col, id, doc) VALUES (?, ?, ?, ?)').run(this.dbName, collection, c.id, body(c.doc));
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw kvstoreError('DUPLICATE_KEY', `a document with _id ${JSON.stringify(c.id)} already exists in ${collection}`, { cause: error });
      }
      throw error;
    }
  }

  /** Run a select built against the index catalog; if an index it names was dropped meanwhile, again without it. */
  private select(build: (indexes: IndexLookup) => { sql: string; values: Record<string, unknown> }): unknown[] {
    const { sql, values } = build((p) => this.indexFor(p));
    try {
      return this.stmt(sql).all(values);
    } catch (error) {
      if (!/no such index/.test((error as Error).message)) throw error;
      this.statements.delete(sql);
      this.catalogAt = 0;
      const again = build((p) => this.indexFor(p));
      return this.stmt(again.sql).all(again.values);
    }
  }

  /** Both indexes of a path, if they exist (the catalog is read again when the schema changed, at most once a second). */
  private indexFor(path: readonly string[]): { value: string; arrays: string } | undefined {
    const now = Date.now();
    if (now - this.catalogAt > CATALOG_EVERY_MS) {
      this.catalogAt = now;
      const version = this.db.pragma('schema_version', { simple: true }) as number;
      if (version !== this.schemaVersion) {
        this.schemaVersion = version;
        const rows = this.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'docdb'").all() as { name: string }[];
        this.indexes = new Set(rows.map((r) => r.name));
      }
    }
    const key = path.join('.');
    let names = this.names.get(key);
    if (names === undefined) {
      names = indexNames(path);
      if (this.names.size >= 1024) this.names.clear();
      this.names.set(key, names);
    }
    return this.indexes.has(names.value) && this.indexes.has(names.arrays) ? names : undefined;
  }

  private update(collection: string, filter: Filter, update: Update, limit: number): number {
    const clause = validateFilter(filter);
    const checked = validateUpdate(update);
    const find = { limit, skip: 0, sort: [] };
    return this.run(
      () =>
        this.tx.immediate(() => {
          const rows = this.select((indexes) => selectSql(clause, find, this.dbName, collection, indexes)) as { id: string; doc: string }[];
          const write = this.stmt('UPDATE docdb SET doc = ? WHERE db = ? AND col = ? AND id = ?');
          for (const row of rows) {
            const next = applyUpdate(JSON.parse(row.doc) as Record<string, JsonValue>, checked);
            write.run(JSON.stringify(next), this.dbName, collection, row.id);
          }
          return rows.length;
        }) as number,
    );
  }

  private remove(collection: string, filter: Filter, limit: number): number {
    const clause = validateFilter(filter);
    const find = { limit, skip: 0, sort: [] };
    return this.run(
      () =>
        this.tx.immediate(() => {
          const rows = this.select((indexes) => selectSql(clause, find, this.dbName, collection, indexes, 'id')) as { id: string }[];
          const drop = this.stmt('DELETE FROM docdb WHERE db = ? AND col = ? AND id = ?');
          for (const row of rows) drop.run(this.dbName, collection, row.id);
          return rows.length;
        }) as number,
    );
  }
}
