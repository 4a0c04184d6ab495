/**
 * `kvstore(dbName, dbType, uri?)` (README *Files, documents and locks*):
 * the app's own documents (`docdb`) and keys (`kv`), beside the graph.
 *
 * - `docdb`: on the shared document store when one is configured
 *   (`DOCDB_URI` / `[scale.database] docdb_uri`: PostgreSQL or MongoDB), else
 *   on the embedded SQLite file `<data dir>/docdb.db` — an app works with no
 *   setup. On SQLite and PostgreSQL every document of every database and
 *   collection is a row of one table (`docdb` / `svc_docdb`) keyed by
 *   `(db, col, id)`; on MongoDB `dbName` is the database and a collection is a
 *   collection.
 * - `kv`: Redis (`KV_URL` / `[scale.database] kv_url`), keys namespaced by
 *   `dbName`.
 * - `cloudstore` is not provided (no emulator can run here to test it).
 *
 * URI priority: the argument, then the environment (`DOCDB_URI`, `KV_URL`),
 * then the configuration. A method of another backend throws
 * `NOT_IMPLEMENTED` naming the backend. The runtime's own collections
 * (`users`, `identities`, `one_time_tokens`, `_anchors`…: every name starting
 * with `_`) are refused with `RESERVED_COLLECTION` unless the handle was made
 * with `{ runtimeCollections: true }`. Nothing done through a kvstore is
 * rolled back with a walker run that fails.
 *
 * Handles share connections: one backend per location and database per
 * thread, closed when the runtime stops.
 */
import { join } from 'node:path';
import { kvstoreError } from './kvstore-errors.ts';
import type { DocBackend, Document, Filter, FindOptions, KvBackend, Update } from './kvstore-types.ts';
import { matches, validateFilter } from './query.ts';
import { docBackendFor, kvBackendFor } from './backends.ts';
import { type ArchetypeClass, Node, prepare, wantRunTracking } from '../walker/index.ts';
import { dataBinding } from './binding.ts';
import { findNodes } from './find-nodes.ts';

export type DbType = 'docdb' | 'kv' | 'cloudstore';

export interface FindNodesOptions {
  /** Outside a walker run: read every user's nodes (read-only). Without it, a call outside a run is refused. */
  allRoots?: boolean;
}

export interface KvstoreOptions {
  /** Reach the runtime's own collections (users, tokens, anchors) — on purpose. */
  runtimeCollections?: boolean;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const COLLECTION = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,119}$/;
/** The runtime's collections (MongoDB names; on SQL backends they are tables no document reaches). */
const RUNTIME_COLLECTIONS = new Set(['users', 'identities', 'deleted_users', 'pending_graph_drops', 'one_time_tokens', 'revocations', 'api_keys', 'sso_accounts', 'webhook_api_keys']);

function checkName(value: unknown, what: string): string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw kvstoreError('INVALID_NAME', `${what} is 1–63 letters, digits, '_', '.' or '-' (starting with a letter or digit), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Every method, on every backend: those of another backend throw `NOT_IMPLEMENTED`. */
abstract class KvstoreBase {
  abstract readonly backend: DbType;
  constructor(readonly dbName: string) {}

  protected notHere(method: string, belongsTo: string): never {
    throw kvstoreError('NOT_IMPLEMENTED', `${method} is a method of the ${belongsTo} backend, not of ${this.backend} (kvstore(${JSON.stringify(this.dbName)}, '${this.backend}'))`);
  }

  // ---- docdb ----
  async findOne(_collection: string, _filter?: Filter): Promise<Document | null> {
    return this.notHere('findOne', 'docdb');
  }
  async find(_collection: string, _filter?: Filter, _options?: FindOptions): Promise<Document[]> {
    return this.notHere('find', 'docdb');
  }
  async insertOne(_collection: string, _doc: Document): Promise<string> {
    return this.notHere('insertOne', 'docdb');
  }
  async insertMany(_collection: string, _docs: Document[]): Promise<string[]> {
    return this.notHere('insertMany', 'docdb');
  }
  async updateOne(_collection: string, _filter: Filter, _update: Update): Promise<number> {
    return this.notHere('updateOne', 'docdb');
  }
  async updateMany(_collection: string, _filter: Filter, _update: Update): Promise<number> {
    return this.notHere('updateMany', 'docdb');
  }
  async deleteOne(_collection: string, _filter: Filter): Promise<number> {
    return this.notHere('deleteOne', 'docdb');
  }
  async deleteMany(_collection: string, _filter: Filter): Promise<number> {
    return this.notHere('deleteMany', 'docdb');
  }
  async findById(_collection: string, _id: string): Promise<Document | null> {
    return this.notHere('findById', 'docdb');
  }
  updateById(_collection: string, _id: string, _update: Update): Promise<boolean> {
    return this.notHere('updateById', 'docdb');
  }
  async deleteById(_collection: string, _id: string): Promise<boolean> {
    return this.notHere('deleteById', 'docdb');
  }
  async createIndex(_collection: string, _field: string): Promise<void> {
    return this.notHere('createIndex', 'docdb');
  }
  async findNodes<N extends Node>(_nodeClass: abstract new (...args: never[]) => N, _filter?: Filter, _colName?: string, _options?: FindNodesOptions): Promise<N[]> {
    return this.notHere('findNodes', 'docdb');
  }

  // ---- kv ----
  async setWithTtl(_key: string, _value: string | number, _ttlSeconds: number): Promise<void> {
    return this.notHere('setWithTtl', 'kv');
  }
  async expire(_key: string, _seconds: number): Promise<boolean> {
    return this.notHere('expire', 'kv');
  }
  async incr(_key: string): Promise<number> {
    return this.notHere('incr', 'kv');
  }
  async scanKeys(_pattern?: string): Promise<string[]> {
    return this.notHere('scanKeys', 'kv');
  }
  async setNxWithTtl(_key: string, _value: string | number, _ttlSeconds: number): Promise<boolean> {
    return this.notHere('setNxWithTtl', 'kv');
  }
  async deleteIfEquals(_key: string, _expected: string | number): Promise<boolean> {
    return this.notHere('deleteIfEquals', 'kv');
  }
  async expireIfEquals(_key: string, _expected: string | number, _ttlSeconds: number): Promise<boolean> {
    return this.notHere('expireIfEquals', 'kv');
  }
}

/** `kvstore(dbName, 'docdb')`: documents in collections. `get`/`set`/`delete`/`exists` address a document by `_id` in the `default` collection (or the one named). */
export class DocDbStore extends KvstoreBase {
  readonly backend = 'docdb' as const;

  constructor(
    dbName: string,
    private readonly uri: string | undefined,
    private readonly runtimeCollections: boolean,
  ) {
    super(dbName);
  }

  /** The backend, found at each call from the runtime in force (a handle made at module load serves whichever app runs). */
  private get db(): DocBackend {
    return docBackend(this.uri, this.dbName);
  }

  /** The backend in use: `sqlite`, `postgres` or `mongodb`. */
  get kind(): DocBackend['kind'] {
    return this.db.kind;
  }

  private col(collection: unknown): string {
    if (typeof collection !== 'string' || !COLLECTION.test(collection)) {
      throw kvstoreError('INVALID_NAME', `a collection name is 1–120 letters, digits, '_', '.' or '-', got ${JSON.stringify(collection)}`);
    }
    if (!this.runtimeCollections && (collection.startsWith('_') || RUNTIME_COLLECTIONS.has(collection) || collection.endsWith('_quarantine'))) {
      throw kvstoreError('RESERVED_COLLECTION', `${JSON.stringify(collection)} is a collection of the runtime (or reserved for it: names starting with '_'); kvstore(name, 'docdb', uri, { runtimeCollections: true }) reaches it on purpose`);
    }
    return collection;
  }

  private static id(id: unknown, what: string): string {
    if (typeof id !== 'string' || id === '') throw kvstoreError('INVALID_QUERY', `${what}: an _id is a non-empty string, got ${JSON.stringify(id)}`);
    return id;
  }

  /** The document whose `_id` is `key`, or `null`. */
  async get(key: string, collection = 'default'): Promise<Document | null> {
    return this.db.get(this.col(collection), DocDbStore.id(key, 'get'));
  }

  /** Store `value` (an object) as the document `key`, replacing it whole. */
  async set(key: string, value: Document, collection = 'default'): Promise<void> {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw kvstoreError('INVALID_QUERY', 'set(key, value): a docdb value is an object (a document)');
    return this.db.set(this.col(collection), DocDbStore.id(key, 'set'), value);
  }

  async delete(key: string, collection = 'default'): Promise<boolean> {
    return this.db.delete(this.col(collection), DocDbStore.id(key, 'delete'));
  }

  async exists(key: string, collection = 'default'): Promise<boolean> {
    return this.db.exists(this.col(collection), DocDbStore.id(key, 'exists'));
  }

  override async findOne(collection: string, filter: Filter = {}): Promise<Document | null> {
    return this.db.findOne(this.col(collection), filter);
  }
  override async find(collection: string, filter: Filter = {}, options?: FindOptions): Promise<Document[]> {
    return this.db.find(this.col(collection), filter, options);
  }
  override async insertOne(collection: string, doc: Document): Promise<string> {
    return this.db.insertOne(this.col(collection), doc);
  }
  override async insertMany(collection: string, docs: Document[]): Promise<string[]> {
    if (!Array.isArray(docs)) throw kvstoreError('INVALID_QUERY', 'insertMany(collection, docs): docs is an array');
    return this.db.insertMany(this.col(collection), docs);
  }
  override async updateOne(collection: string, filter: Filter, update: Update): Promise<number> {
    return this.db.updateOne(this.col(collection), filter, update);
  }
  override async updateMany(collection: string, filter: Filter, update: Update): Promise<number> {
    return this.db.updateMany(this.col(collection), filter, update);
  }
  override async deleteOne(collection: string, filter: Filter): Promise<number> {
    return this.db.deleteOne(this.col(collection), filter);
  }
  override async deleteMany(collection: string, filter: Filter): Promise<number> {
    return this.db.deleteMany(this.col(collection), filter);
  }
  override async findById(collection: string, id: string): Promise<Document | null> {
    return this.db.get(this.col(collection), DocDbStore.id(id, 'findById'));
  }
  /** Whether a document had that `_id`. */
  override async updateById(collection: string, id: string, update: Update): Promise<boolean> {
    return (await this.db.updateOne(this.col(collection), { _id: DocDbStore.id(id, 'updateById') }, update)) > 0;
  }
  override async deleteById(collection: string, id: string): Promise<boolean> {
    return this.db.delete(this.col(collection), DocDbStore.id(id, 'deleteById'));
  }
  /** svc's own addition: an index on a (dotted) field, so filters on it do not scan. Idempotent. */
  override async createIndex(collection: string, field: string): Promise<void> {
    if (typeof field !== 'string' || !/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(field)) throw kvstoreError('INVALID_QUERY', `createIndex: a field path like "a" or "a.b", got ${JSON.stringify(field)}`);
    return this.db.createIndex(this.col(collection), field);
  }

  /**
   * `find_nodes`: the graph's nodes of `nodeClass` (and its subclasses)
   * whose fields match `filter`. Inside a walker or function run: those the
   * run's caller may read, as the run's own views (changes commit with the
   * run). Outside a run (startup code, event handlers): every matching node,
   * read-only — only when asked with `{ allRoots: true }` (a call that lost
   * its run, from a timer or a queue, is refused rather than shown every
   * user's nodes). Nodes created by the calling run are not found until it
   * commits.
   */
  override async findNodes<N extends Node>(nodeClass: abstract new (...args: never[]) => N, filter: Filter = {}, colName = '_anchors', options: FindNodesOptions = {}): Promise<N[]> {
    if (colName !== '_anchors') throw kvstoreError('INVALID_NAME', `the graph's nodes are in '_anchors', not ${JSON.stringify(colName)}`);
    if (typeof nodeClass !== 'function' || !((nodeClass as unknown) === Node || nodeClass.prototype instanceof Node) || prepare(nodeClass as unknown as ArchetypeClass).kind !== 'node') {
      throw kvstoreError('INVALID_QUERY', 'findNodes(NodeClass, filter): the first argument is a Node class');
    }
    validateFilter(filter);
    return findNodes(nodeClass as unknown as ArchetypeClass, filter, matches, options.allRoots === true) as Promise<N[]>;
  }
}

/** `kvstore(dbName, 'kv')`: strings under keys, on Redis. */
export class KvStore extends KvstoreBase {
  readonly backend = 'kv' as const;

  constructor(
    dbName: string,
    private readonly uri: string | undefined,
  ) {
    super(dbName);
  }

  /** The Redis client, found at each call from the runtime in force (a handle made at module load serves whichever app runs). */
  private get kv(): KvBackend {
    return redisKv(this.uri, this.dbName);
  }

  async get(key: string): Promise<string | null> {
    return this.kv.get(key);
  }
  async set(key: string, value: string | number): Promise<void> {
    return this.kv.set(key, value);
  }
  async delete(key: string): Promise<boolean> {
    return this.kv.delete(key);
  }
  async exists(key: string): Promise<boolean> {
    return this.kv.exists(key);
  }
  override async setWithTtl(key: string, value: string | number, ttlSeconds: number): Promise<void> {
    return this.kv.setWithTtl(key, value, ttlSeconds);
  }
  override async expire(key: string, seconds: number): Promise<boolean> {
    return this.kv.expire(key, seconds);
  }
  override async incr(key: string): Promise<number> {
    return this.kv.incr(key);
  }
  override async scanKeys(pattern = '*'): Promise<string[]> {
    return this.kv.scanKeys(pattern);
  }
  override async setNxWithTtl(key: string, value: string | number, ttlSeconds: number): Promise<boolean> {
    return this.kv.setNxWithTtl(key, value, ttlSeconds);
  }
  override async deleteIfEquals(key: string, expected: string | number): Promise<boolean> {
    return this.kv.deleteIfEquals(key, expected);
  }
  override async expireIfEquals(key: string, expected: string | number, ttlSeconds: number): Promise<boolean> {
    return this.kv.expireIfEquals(key, expected, ttlSeconds);
  }
  /** svc's own addition: JSON values. */
  async getJson<T = unknown>(key: string): Promise<T | null> {
    return this.kv.getJson<T>(key);
  }
  async setJson(key: string, value: unknown, ttlSeconds?: number): Promise<void> {
    return this.kv.setJson(key, value, ttlSeconds);
  }
}

// ---- connections, one per location and thread ----

const docBackends = new Map<string, DocBackend>();
const kvs = new Map<string, KvBackend>();

function docBackend(uri: string | undefined, dbName: string): DocBackend {
  const bound = dataBinding();
  // The binding's URI has the environment applied over the file (as `svc start` read them).
  const found = docBackendFor(uri || bound.docdbUri, bound.projectRoot);
  // A file named to kvstore() is used; a file the runtime's own URI names is the runtime's: the app's documents then live in one of their own beside it.
  const named = uri ? found.uri : { ...found.uri, path: undefined };
  const path = join(bound.dataDir, 'docdb.db');
  const key = `${named.scheme} ${named.path ?? named.uri} ${path} ${dbName}`;
  let backend = docBackends.get(key);
  if (backend === undefined) docBackends.set(key, (backend = found.open(named, { dbName, path, baseDir: bound.projectRoot })));
  return backend;
}

function redisKv(uri: string | undefined, dbName: string): KvBackend {
  const url = uri || dataBinding().kvUrl;
  if (!url) throw kvstoreError('KV_NOT_CONFIGURED');
  const key = `${url} ${dbName}`;
  let kv = kvs.get(key);
  if (kv === undefined) kvs.set(key, (kv = kvBackendFor(url).open({ dbName })));
  return kv;
}

/**
 * A handle on the app's own data. `dbType`: `docdb` (documents; the embedded
 * SQLite unless a document store is configured), `kv` (Redis), `cloudstore`
 * (not provided: throws).
 *
 * @example
 * const orders = kvstore('shop', 'docdb');
 * await orders.insertOne('orders', { item: 'tea', qty: 2 });
 * const big = await orders.find('orders', { qty: { $gte: 2 } });
 *
 * const cache = kvstore('shop', 'kv');
 * await cache.setWithTtl('greeting', 'hello', 60);
 */
export function kvstore(dbName: string, dbType: 'docdb', uri?: string, options?: KvstoreOptions): DocDbStore;
export function kvstore(dbName: string, dbType: 'kv', uri?: string, options?: KvstoreOptions): KvStore;
export function kvstore(dbName: string, dbType: DbType, uri?: string, options?: KvstoreOptions): DocDbStore | KvStore;
export function kvstore(dbName: string, dbType: DbType, uri?: string, options: KvstoreOptions = {}): DocDbStore | KvStore {
  checkName(dbName, 'kvstore(dbName): dbName');
  if (uri !== undefined && uri !== null && typeof uri !== 'string') throw kvstoreError('INVALID_NAME', 'kvstore(dbName, dbType, uri): uri is a string');
  switch (dbType) {
    case 'docdb': {
      // findNodes must know the run it is called from: from now on runs of this thread are tracked
      // (app handles only: svc's own records never call findNodes, and tracking costs every promise).
      if (!options.runtimeCollections) wantRunTracking();
      if (uri) docBackendFor(uri); // a URI no backend takes is refused now (nothing is opened before the first call)
      return new DocDbStore(dbName, uri || undefined, options.runtimeCollections === true);
    }
    case 'kv': {
      if (!options.runtimeCollections && (dbName === 'svc' || dbName.startsWith('svc:'))) {
        throw kvstoreError('RESERVED_COLLECTION', "the kv namespace 'svc' holds the runtime's keys (cluster, events); kvstore('svc', 'kv', uri, { runtimeCollections: true }) reaches it on purpose");
      }
      return new KvStore(dbName, uri || undefined);
    }
    case 'cloudstore':
      throw kvstoreError('NOT_IMPLEMENTED', "the cloudstore backend is not provided by svc (use 'docdb': the embedded SQLite, PostgreSQL or MongoDB)");
    default:
      throw kvstoreError('INVALID_NAME', `kvstore dbType is 'docdb', 'kv' or 'cloudstore', not ${JSON.stringify(dbType)}`);
  }
}

/** Close every connection kvstore handles opened in this thread (the runtime, when it stops). */
export async function closeKvstores(): Promise<void> {
  const backends = [...docBackends.values(), ...kvs.values()];
  docBackends.clear();
  kvs.clear();
  await Promise.allSettled(backends.map((b) => b.close()));
}
