/**
 * `kvstore(dbName, 'docdb')` on MongoDB (the official driver): database =
 * `dbName`, collection = the name as given, `_id` a string. Filters and
 * updates are checked by actors/data/query.ts first, so only the operators the other
 * backends understand reach the server, then sent as given; MongoDB's own
 * meaning is the reference the SQL backends follow. Find sorts always end
 * with `_id` ascending, and `updateOne` / `deleteOne` / `findOne` take the
 * first match by `_id` (findOneAndUpdate / findOneAndDelete sorted), so every
 * backend picks the same document. `updateOne`/`updateMany` resolve to the
 * number of documents MATCHED (`matchedCount`).
 *
 * No transactions (a standalone server will do), so two things are weaker
 * than on SQL: an `updateMany` that fails on one document (a `$set` through
 * a number) has changed those before it; and `insertMany` is all or none by
 * looking first (any `_id` already taken refuses the batch before a write)
 * and, should a concurrent insert take an `_id` between the look and the
 * write, by deleting the documents this batch inserted — which readers may
 * glimpse in between (and a connection lost in the middle of a batch leaves
 * the part the server took).
 *
 * Errors: unreachable, timed out, not primary → `KV_UNAVAILABLE` (the URI's
 * credentials never in a message); a taken `_id` → `DUPLICATE_KEY`; an update
 * the server refuses (a path through a non-object) → `INVALID_QUERY`.
 */
import type { Collection, Db, Filter as MongoFilter, MongoClient, Sort } from 'mongodb';
import { mongoFailure } from './connection.ts';
import { mongo } from './driver.ts';
import { SvcError } from '../../kernel/index.ts';
import { kvstoreError, checkBatch, checkDocument, parsePath, validateFilter, validateFind, validateUpdate, type CheckedUpdate, type DocBackend, type Document, type Filter, type FindOptions, type Update } from '../../actors/data/index.ts';

export interface MongoDocOptions {
  /** Share a connected client (several `dbName`s on one server); `close()` then leaves it open. */
  client?: MongoClient;
}

type MongoDoc = { _id: string } & Record<string, unknown>;

/** Server codes of an update or filter the server refuses: the caller's mistake. */
const REFUSED = new Set([2, 9, 14, 28, 40, 52, 55, 56]);

/** Credentials out of a message (`//user:password@host` → `//…@host`). */
function scrub(message: string): string {
  return message.replace(/\/\/[^@/\s]*@/g, '//…@');
}

function mongoUpdate(u: CheckedUpdate): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  if (u.set.length) out.$set = Object.fromEntries(u.set.map(([p, v]) => [p.join('.'), v]));
  if (u.unset.length) out.$unset = Object.fromEntries(u.unset.map((p) => [p.join('.'), '']));
  if (!u.set.length && !u.unset.length) out.$set = {};
  return out;
}

/**
 * @example
 * const docs = new MongoDocBackend('mongodb://db:27017', 'app');
 * await docs.insertOne('users', { email: 'ada@example.com' });
 * await docs.close();
 */
export class MongoDocBackend implements DocBackend {
  readonly kind = 'mongodb';
  readonly client: MongoClient;
  private readonly db: Db;
  private readonly ownsClient: boolean;

  constructor(
    uri: string,
    readonly dbName: string,
    options: MongoDocOptions = {},
  ) {
    this.ownsClient = options.client === undefined;
    try {
      // ignoreUndefined: an absent field stays absent, as JSON has it. An unreachable server is reported within 5 s.
      this.client = options.client ?? new (mongo().MongoClient)(uri, { ignoreUndefined: true, ...(/serverSelectionTimeoutMS=/i.test(uri) ? {} : { serverSelectionTimeoutMS: 5_000 }) });
    } catch (error) {
      throw kvstoreError('KV_UNAVAILABLE', `not a MongoDB connection string the driver takes: ${scrub((error as Error).message)}`, { cause: error });
    }
    this.db = this.client.db(dbName);
  }

  async get(collection: string, key: string): Promise<Document | null> {
    return this.guard('get', () => this.col(collection).findOne({ _id: key }));
  }

  async set(collection: string, key: string, value: Document): Promise<void> {
    const { doc } = checkDocument(value, key);
    await this.guard('set', () => this.col(collection).replaceOne({ _id: key }, doc as MongoDoc, { upsert: true }));
  }

  async delete(collection: string, key: string): Promise<boolean> {
    return this.guard('delete', async () => (await this.col(collection).deleteOne({ _id: key })).deletedCount > 0);
  }

  async exists(collection: string, key: string): Promise<boolean> {
    return this.guard('exists', async () => (await this.col(collection).findOne({ _id: key }, { projection: { _id: 1 } })) !== null);
  }

  async findOne(collection: string, filter: Filter): Promise<Document | null> {
    return (await this.find(collection, filter, { limit: 1 }))[0] ?? null;
  }

  async find(collection: string, filter: Filter, options?: FindOptions): Promise<Document[]> {
    validateFilter(filter);
    const find = validateFind(options);
    const sort: [string, 1 | -1][] = find.sort.map(([p, d]) => [p.join('.'), d]);
    if (!sort.some(([k]) => k === '_id')) sort.push(['_id', 1]);
    return this.guard('find', () =>
      this.col(collection)
        .find(filter as MongoFilter<MongoDoc>, { sort: sort as Sort, skip: find.skip, limit: find.limit })
        .toArray(),
    );
  }

  async insertOne(collection: string, doc: Document): Promise<string> {
    const { id, doc: checked } = checkDocument(doc);
    await this.guard('insertOne', () => this.col(collection).insertOne(checked as MongoDoc), collection);
    return id;
  }

  async insertMany(collection: string, docs: Document[]): Promise<string[]> {
    const checked = checkBatch(docs);
    const ids = checked.map((c) => c.id);
    if (checked.length === 0) return [];
    const col = this.col(collection);
    const taken = await this.guard('insertMany', () => col.findOne({ _id: { $in: ids } }, { projection: { _id: 1 } }));
    if (taken) throw kvstoreError('DUPLICATE_KEY', `a document with _id ${JSON.stringify(taken._id)} already exists in ${collection}; nothing was inserted`);
    try {
      await col.insertMany(checked.map((c) => c.doc as MongoDoc), { ordered: true });
    } catch (error) {
      if (error instanceof mongo().MongoBulkWriteError && error.code === 11000) {
        // Taken meanwhile: undo what this batch wrote (ordered, so everything before the first failure).
        const first = Array.isArray(error.writeErrors) ? error.writeErrors[0] : error.writeErrors;
        const inserted = ids.slice(0, first?.index ?? 0);
        if (inserted.length) await this.guard('insertMany', () => col.deleteMany({ _id: { $in: inserted } }));
        throw kvstoreError('DUPLICATE_KEY', `an _id of the batch was taken meanwhile in ${collection}; nothing was inserted`, { cause: error });
      }
      throw this.failure(error, 'insertMany');
    }
    return ids;
  }

  async updateOne(collection: string, filter: Filter, update: Update): Promise<number> {
    validateFilter(filter);
    const u = mongoUpdate(validateUpdate(update));
    return this.guard('updateOne', async () => {
      const doc = await this.col(collection).findOneAndUpdate(filter as MongoFilter<MongoDoc>, u, { sort: { _id: 1 }, projection: { _id: 1 } });
      return doc ? 1 : 0;
    });
  }

  async updateMany(collection: string, filter: Filter, update: Update): Promise<number> {
    validateFilter(filter);
    const u = mongoUpdate(validateUpdate(update));
    return this.guard('updateMany', async () => (await this.col(collection).updateMany(filter as MongoFilter<MongoDoc>, u)).matchedCount);
  }

  async deleteOne(collection: string, filter: Filter): Promise<number> {
    validateFilter(filter);
    return this.guard('deleteOne', async () => ((await this.col(collection).findOneAndDelete(filter as MongoFilter<MongoDoc>, { sort: { _id: 1 }, projection: { _id: 1 } })) ? 1 : 0));
  }

  async deleteMany(collection: string, filter: Filter): Promise<number> {
    validateFilter(filter);
    return this.guard('deleteMany', async () => (await this.col(collection).deleteMany(filter as MongoFilter<MongoDoc>)).deletedCount);
  }

  async createIndex(collection: string, field: string): Promise<void> {
    const path = parsePath(field, 'createIndex');
    if (path[0] === '_id' && path.length === 1) return;
    await this.guard('createIndex', () => this.col(collection).createIndex({ [path.join('.')]: 1 }));
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  // ---- inside --------------------------------------------------------------------------

  private col(name: string): Collection<MongoDoc> {
    return this.db.collection<MongoDoc>(name);
  }

  private failure(error: unknown, what: string, collection?: string): unknown {
    if (error instanceof SvcError && error.code.startsWith('SVC_ERR_') === false) return error;
    if (error instanceof mongo().MongoServerError && error.code === 11000) {
      return kvstoreError('DUPLICATE_KEY', `a document with this _id already exists${collection ? ` in ${collection}` : ''}`, { cause: error });
    }
    if (error instanceof mongo().MongoServerError && typeof error.code === 'number' && REFUSED.has(error.code)) {
      return kvstoreError('INVALID_QUERY', `MongoDB refused the ${what}: ${scrub(error.message)}`, { cause: error });
    }
    const sorted = mongoFailure(error, what);
    if (sorted.code === 'SVC_ERR_STORE_UNAVAILABLE') return kvstoreError('KV_UNAVAILABLE', sorted.message, { cause: error });
    if (/the store is closed/.test(sorted.message)) return kvstoreError('KV_UNAVAILABLE', 'the document store is closed', { cause: error });
    return sorted;
  }

  private async guard<T>(what: string, work: () => Promise<T>, collection?: string): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.failure(error, what, collection);
    }
  }
}
