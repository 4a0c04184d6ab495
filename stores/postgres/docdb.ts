/**
 * `kvstore(dbName, 'docdb')` on PostgreSQL (`pg`, through the anchor store's
 * `PgPool`: a dropped connection never crashes the process, and while the
 * server is unreachable calls fail at once with `KV_UNAVAILABLE` until a
 * probe finds it again).
 *
 * One table holds every app document of the database:
 * `svc_docdb (db, col, id COLLATE "C", doc JSONB) PRIMARY KEY (db, col, id)`,
 * `doc` without its `_id` (the `id` column is the one copy), created on first
 * use under the schema advisory lock (members starting together do not
 * collide). `dbName` and the collection are values, never identifiers.
 *
 * Filters are translated to SQL (docdb-sql.ts); nothing is filtered
 * in JS. Updates read the matching rows `FOR UPDATE`, change them with
 * `applyUpdate` (actors/data/query.ts, so `$set`/`$unset` mean what they mean everywhere)
 * and write them back in the same transaction: all or nothing.
 * `updateOne`/`updateMany` resolve to the number of documents MATCHED
 * (Mongo's `matchedCount`). `updateOne`, `deleteOne`, `findOne` take the first
 * match by `_id`. Key order inside objects is JSONB's (not the order written).
 *
 * `createIndex(collection, 'a.b')` makes, under the schema lock, a value index
 * `(db, col, (doc #> ARRAY['a','b']))` of the documents that have the path,
 * an index of those holding an array there, and (PostgreSQL 14+) statistics
 * of both expressions, then ANALYZEs the table once so that the planner knows
 * an equality there is selective; named after the path, they serve that path
 * in every collection of the database. `CREATE INDEX` blocks writes to the
 * table while it builds: create indexes at start-up. A value
 * over ~2.7 kB at an indexed path is more than a btree entry holds: refused
 * with `INVALID_QUERY`.
 */
import type pg from 'pg';
import { createHash } from 'node:crypto';
import { PgPool, redactUri, withSchemaLock } from './pool.ts';
import { SvcError } from '../../kernel/index.ts';
import { kvstoreError, applyUpdate, checkBatch, checkDocument, parsePath, validateFilter, validateFind, validateUpdate, type CheckedFind, type Clause, type JsonValue, type DocBackend, type Document, type Filter, type FindOptions, type Update } from '../../actors/data/index.ts';
import { jsonAt, pgSelect } from './docdb-sql.ts';

export interface PgDocOptions {
  /** Connections of the pool this backend opens (default 8). */
  maxConnections?: number;
  /** Share a pool instead (several `dbName`s on one server); `close()` then leaves it open. */
  pool?: PgPool;
}

/** Prepared statements named per backend (each pooled connection prepares those it runs). */
const NAMED = 64;

const TABLE = `CREATE TABLE IF NOT EXISTS svc_docdb (
  db TEXT NOT NULL, col TEXT NOT NULL, id TEXT COLLATE "C" NOT NULL, doc JSONB NOT NULL,
  PRIMARY KEY (db, col, id))`;

/**
 * The names made for a field path: `svc_docdb_<16 hex of sha256(path)>` (value index), `…_a` (arrays index), `…_s` (statistics).
 *
 * @example
 * pgIndexNames(['email']).value // 'svc_docdb_82244417f956ac7c'
 */
export function pgIndexNames(path: readonly string[]): { value: string; arrays: string; stats: string } {
  const hash = createHash('sha256').update(path.join('.')).digest('hex').slice(0, 16);
  return { value: `svc_docdb_${hash}`, arrays: `svc_docdb_${hash}_a`, stats: `svc_docdb_${hash}_s` };
}

interface Row {
  id: string;
  doc: Record<string, unknown>;
}

function toDocument(row: Row): Document {
  return { _id: row.id, ...row.doc };
}

function body(doc: Record<string, JsonValue>): string {
  const { _id: _, ...rest } = doc;
  return JSON.stringify(rest);
}

/**
 * @example
 * const docs = new PgDocBackend('postgres://svc@db/app', 'app');
 * await docs.insertOne('users', { email: 'ada@example.com' });
 * await docs.close();
 */
export class PgDocBackend implements DocBackend {
  readonly kind = 'postgres';
  readonly db: PgPool;
  private readonly ownsPool: boolean;
  private table: Promise<void> | undefined;
  private readonly named = new Map<string, string>();

  constructor(
    readonly uri: string,
    readonly dbName: string,
    options: PgDocOptions = {},
  ) {
    this.ownsPool = options.pool === undefined;
    this.db = options.pool ?? PgPool.open(uri, { max: options.maxConnections ?? 8, application: 'svc docdb' });
  }

  async get(collection: string, key: string): Promise<Document | null> {
    const { rows } = await this.query<Row>('SELECT id, doc FROM svc_docdb WHERE db = $1 AND col = $2 AND id = $3', [this.dbName, collection, key]);
    return rows[0] ? toDocument(rows[0]) : null;
  }

  async set(collection: string, key: string, value: Document): Promise<void> {
    const { doc } = checkDocument(value, key);
    await this.query('INSERT INTO svc_docdb (db, col, id, doc) VALUES ($1, $2, $3, $4::jsonb) ON CONFLICT (db, col, id) DO UPDATE SET doc = EXCLUDED.doc', [
      this.dbName,
      collection,
      key,
      body(doc),
    ]);
  }

  async delete(collection: string, key: string): Promise<boolean> {
    const { rowCount } = await this.query('DELETE FROM svc_docdb WHERE db = $1 AND col = $2 AND id = $3', [this.dbName, collection, key]);
    return (rowCount ?? 0) > 0;
  }

  async exists(collection: string, key: string): Promise<boolean> {
    const { rows } = await this.query('SELECT 1 FROM svc_docdb WHERE db = $1 AND col = $2 AND id = $3', [this.dbName, collection, key]);
    return rows.length > 0;
  }

  async findOne(collection: string, filter: Filter): Promise<Document | null> {
    return (await this.find(collection, filter, { limit: 1 }))[0] ?? null;
  }

  async find(collection: string, filter: Filter, options?: FindOptions): Promise<Document[]> {
    const { sql, values } = pgSelect(validateFilter(filter), validateFind(options), this.dbName, collection);
    const { rows } = await this.query<Row>(sql, values);
    return rows.map(toDocument);
  }

  async insertOne(collection: string, doc: Document): Promise<string> {
    const { id, doc: checked } = checkDocument(doc);
    const { rowCount } = await this.query('INSERT INTO svc_docdb (db, col, id, doc) VALUES ($1, $2, $3, $4::jsonb) ON CONFLICT DO NOTHING', [this.dbName, collection, id, body(checked)]);
    if (!rowCount) throw kvstoreError('DUPLICATE_KEY', `a document with _id ${JSON.stringify(id)} already exists in ${collection}`);
    return id;
  }

  async insertMany(collection: string, docs: Document[]): Promise<string[]> {
    const checked = checkBatch(docs);
    const ids = checked.map((c) => c.id);
    if (checked.length === 0) return [];
    await this.transaction(async (client) => {
      const { rowCount } = await client.query(
        this.statement('INSERT INTO svc_docdb (db, col, id, doc) SELECT $1, $2, u.id, u.doc FROM unnest($3::text[], $4::jsonb[]) AS u(id, doc) ON CONFLICT DO NOTHING', [
          this.dbName,
          collection,
          ids,
          checked.map((c) => body(c.doc)),
        ]),
      );
      if (rowCount !== ids.length) throw kvstoreError('DUPLICATE_KEY', `${ids.length - (rowCount ?? 0)} of the _ids already exist in ${collection}; nothing was inserted`);
    }, 'insertMany');
    return ids;
  }

  async updateOne(collection: string, filter: Filter, update: Update): Promise<number> {
    return this.update(collection, filter, update, 1);
  }

  async updateMany(collection: string, filter: Filter, update: Update): Promise<number> {
    return this.update(collection, filter, update, 0);
  }

  async deleteOne(collection: string, filter: Filter): Promise<number> {
    return this.remove(collection, validateFilter(filter), 1);
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    return this.remove(collection, validateFilter(filter), 0);
  }

  /** `_id` is the primary key already. The collection is checked by the facade; the index serves every collection. */
  async createIndex(_collection: string, field: string): Promise<void> {
    const path = parsePath(field, 'createIndex');
    if (path[0] === '_id') return;
    await this.ensureTable();
    const names = pgIndexNames(path);
    const J = jsonAt(path);
    // Made last: when it exists, so does the rest (and nothing needs the schema lock or an ANALYZE).
    const made = await this.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [names.arrays]);
    if (made.rows[0]?.t) return;
    await this.guard(() =>
      withSchemaLock(this.db, async (client) => {
        await client.query(`CREATE INDEX IF NOT EXISTS ${names.value} ON svc_docdb (db, col, ${J}) WHERE ${J} IS NOT NULL`);
        // Both indexes are partial, so the planner has no statistics of these expressions from them: without these
        // (PostgreSQL 14+), it guesses an equality matches 0.5% of a collection and walks the primary key instead.
        const { rows } = await client.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v");
        if ((rows[0]?.v ?? 0) >= 140000) {
          await client.query(`CREATE STATISTICS IF NOT EXISTS ${names.stats} ON (${J}), (jsonb_typeof(${J})) FROM svc_docdb`);
        }
        await client.query(`CREATE INDEX IF NOT EXISTS ${names.arrays} ON svc_docdb (db, col) WHERE jsonb_typeof(${J}) = 'array'`);
        await client.query('ANALYZE svc_docdb');
      }),
    );
  }

  /**
   * PostgreSQL's plan for a find (`EXPLAIN`, one line per row); `seqscanOff`
   * plans as if a sequential scan were unaffordable (a big table), to see
   * that an index can serve the filter on a small one.
   *
   * @example
   * await docs.explain('users', { email: 'ada@example.com' }) // ['Limit …', '  -> Sort …', '  -> Bitmap Heap Scan on svc_docdb …', …]
   */
  async explain(collection: string, filter: Filter, options?: FindOptions, how: { seqscanOff?: boolean } = {}): Promise<string[]> {
    const { sql, values } = pgSelect(validateFilter(filter), validateFind(options), this.dbName, collection);
    await this.ensureTable();
    return this.transaction(async (client) => {
      if (how.seqscanOff) await client.query('SET LOCAL enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values);
      return rows.map((r) => r['QUERY PLAN']);
    }, 'explain');
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.db.close();
  }

  // ---- inside --------------------------------------------------------------------------

  /** A driver failure in kvstore's words: unreachable → `KV_UNAVAILABLE`; what the database cannot store → `INVALID_QUERY`. */
  private failure(error: unknown): unknown {
    if (!(error instanceof SvcError)) return error;
    const cause = (error as { cause?: { code?: string } }).cause;
    switch (error.code) {
      case 'SVC_ERR_STORE_UNAVAILABLE':
        return kvstoreError('KV_UNAVAILABLE', `PostgreSQL at ${redactUri(this.uri)} cannot be reached`, { cause: error });
      case 'SVC_ERR_INVALID_FIELDS':
        return kvstoreError('INVALID_QUERY', error.message, { cause: error });
      case 'SVC_ERR_STORE':
        if (/the store is closed/.test(error.message)) return kvstoreError('KV_UNAVAILABLE', 'the document store is closed', { cause: error });
        if (cause?.code === '54000') return kvstoreError('INVALID_QUERY', 'a value at an indexed path is too large for a PostgreSQL index entry (about 2.7 kB)', { cause: error });
        return error;
      default:
        return error;
    }
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.failure(error);
    }
  }

  /** The table, made on first use (checked once per backend; made under the schema lock when missing). */
  private ensureTable(): Promise<void> {
    this.table ??= this.guard(async () => {
      const { rows } = await this.db.run((c) => c.query<{ t: string | null }>("SELECT to_regclass('svc_docdb')::text AS t"), 'looking for svc_docdb');
      if (rows[0]?.t) return;
      await withSchemaLock(this.db, async (client) => {
        await client.query(TABLE);
      });
    }).catch((error: unknown) => {
      this.table = undefined;
      throw error;
    });
    return this.table;
  }

  private async query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    await this.ensureTable();
    return this.guard(() => this.db.run((c) => c.query<R>(this.statement(sql, values)), 'docdb query'));
  }

  /**
   * A named (server-side prepared) statement: planning a filter's query costs
   * PostgreSQL more than running it (measured: 4 ms planned by EXPLAIN, and
   * 480 µs against 125 µs per indexed findOne), and a prepared statement is
   * planned once per connection. Up to {@link NAMED} statements by SQL text;
   * past that, unnamed (filters of ever new shapes must not fill the server's memory).
   */
  private statement(text: string, values: unknown[]): pg.QueryConfig {
    let name = this.named.get(text);
    if (name === undefined && this.named.size < NAMED) {
      name = `svc_docdb_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      this.named.set(text, name);
    }
    return name === undefined ? { text, values } : { name, text, values };
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>, what: string): Promise<T> {
    await this.ensureTable();
    return this.guard(() => this.db.transaction(work, what));
  }

  private async update(collection: string, filter: Filter, update: Update, limit: number): Promise<number> {
    const clause = validateFilter(filter);
    const checked = validateUpdate(update);
    const find: CheckedFind = { limit, skip: 0, sort: [] };
    return this.transaction(async (client) => {
      const { sql, values } = pgSelect(clause, find, this.dbName, collection, 'id, doc', ' FOR UPDATE');
      const { rows } = await client.query<Row>(this.statement(sql, values));
      if (rows.length === 0) return 0;
      const docs = rows.map((r) => JSON.stringify(applyUpdate(r.doc, checked)));
      await client.query(
        this.statement('UPDATE svc_docdb AS t SET doc = u.doc FROM unnest($3::text[], $4::jsonb[]) AS u(id, doc) WHERE t.db = $1 AND t.col = $2 AND t.id = u.id', [
          this.dbName,
          collection,
          rows.map((r) => r.id),
          docs,
        ]),
      );
      return rows.length;
    }, 'update');
  }

  private async remove(collection: string, clause: Clause, limit: number): Promise<number> {
    const { sql, values } = pgSelect(clause, { limit, skip: 0, sort: [] }, this.dbName, collection, 'id');
    const { rowCount } = await this.query(`DELETE FROM svc_docdb WHERE db = $1::text AND col = $2::text AND id IN (${sql})`, values);
    return rowCount ?? 0;
  }
}
