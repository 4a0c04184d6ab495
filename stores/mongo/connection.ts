/**
 * The MongoDB connection the room's backends share: connecting (and checking
 * the server takes transactions), creating missing collections, and a driver
 * error as a store error, never with the URI's credentials.
 */
import type { Db, MongoClient } from 'mongodb';
import { SvcError } from '../../kernel/index.ts';
import { storeError } from '../../actors/graph/index.ts';
import { loadedMongo, mongo, NotLoaded } from './driver.ts';

/** Server error codes that mean "not reachable or not primary right now": the caller may retry. */
const UNAVAILABLE_CODES = new Set([6, 7, 50, 64, 89, 91, 112, 133, 134, 189, 251, 262, 9001, 10058, 10107, 11600, 11602, 13435, 13436]);

/** The driver's error classes before it is loaded: no error is an instance of them. */
const NOT_LOADED = {
  MongoClientClosedError: NotLoaded,
  MongoError: NotLoaded,
  MongoNetworkError: NotLoaded,
  MongoNotConnectedError: NotLoaded,
  MongoOperationTimeoutError: NotLoaded,
  MongoServerSelectionError: NotLoaded,
  MongoTopologyClosedError: NotLoaded,
} as unknown as Pick<
  typeof import('mongodb'),
  'MongoClientClosedError' | 'MongoError' | 'MongoNetworkError' | 'MongoNotConnectedError' | 'MongoOperationTimeoutError' | 'MongoServerSelectionError' | 'MongoTopologyClosedError'
>;

/** Credentials out of a message (`//user:password@host` → `//…@host`). */
function scrub(message: string): string {
  return message.replace(/\/\/[^@/\s]*@/g, '//…@');
}

/** The database a MongoDB URI names in its path, if any. */
export function mongoDatabaseOf(uri: string): string | undefined {
  const m = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/i.exec(uri.trim());
  const name = m?.[1] ? decodeURIComponent(m[1]) : '';
  return name === '' ? undefined : name;
}

/**
 * A driver error as a store error: unreachable, not primary, timed out →
 * `SVC_ERR_STORE_UNAVAILABLE` (retry); the client closed → `SVC_ERR_STORE`
 * 'the store is closed'; anything else → `SVC_ERR_STORE`. Never the URI.
 *
 * @example
 * try { await anchors.find(filter).toArray(); } catch (error) { throw mongoFailure(error, 'get'); }
 */
export function mongoFailure(error: unknown, what: string): SvcError {
  if (error instanceof SvcError) return error;
  const driver = loadedMongo() ?? NOT_LOADED;
  const { MongoClientClosedError, MongoError, MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerSelectionError, MongoTopologyClosedError } = driver;
  if (error instanceof MongoClientClosedError || error instanceof MongoTopologyClosedError) return storeError('SVC_ERR_STORE', 'the store is closed', { cause: error });
  const message = scrub(error instanceof Error ? error.message : String(error));
  if (error instanceof MongoError && error.hasErrorLabel('UnknownTransactionCommitResult')) {
    return storeError('SVC_ERR_STORE_UNAVAILABLE', `the database did not confirm the ${what} (it may or may not be stored): ${message}; retry`, { cause: error });
  }
  const unavailable =
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoNotConnectedError ||
    (error instanceof MongoError &&
      (error.hasErrorLabel('TransientTransactionError') || error.hasErrorLabel('RetryableWriteError') || (typeof error.code === 'number' && UNAVAILABLE_CODES.has(error.code))));
  if (unavailable) return storeError('SVC_ERR_STORE_UNAVAILABLE', `the database cannot be reached right now (${what}: ${message}); retry`, { cause: error });
  return storeError('SVC_ERR_STORE', `${what} failed: ${message}`, { cause: error });
}

/**
 * Connect to the server a MongoDB URI names and check that it takes
 * transactions (a replica set or a sharded cluster): `SVC_ERR_STORE_BACKEND`
 * for a malformed URI or a standalone server. Reads go to the primary, as the
 * graph must read its own writes.
 *
 * @example
 * const { client, db } = await connectMongo(uri, undefined, 'anchor store');
 */
export async function connectMongo(uri: string, database: string | undefined, what: string): Promise<{ client: MongoClient; db: Db }> {
  let client: MongoClient;
  try {
    // ignoreUndefined: an absent field stays absent, as in the JSON form of the other stores.
    // An unreachable server is reported within 5 s (the driver's default is 30), unless the URI says otherwise.
    client = new (mongo().MongoClient)(uri, { ignoreUndefined: true, ...(/serverSelectionTimeoutMS=/i.test(uri) ? {} : { serverSelectionTimeoutMS: 5_000 }) });
  } catch (error) {
    throw storeError('SVC_ERR_STORE_BACKEND', `docdb_uri is not a MongoDB connection string the driver takes: ${scrub((error as Error).message)}`, { cause: error });
  }
  try {
    await client.connect();
    const db = client.db(database ?? mongoDatabaseOf(uri) ?? 'svc_db', { readPreference: 'primary' });
    const hello = await db.command({ hello: 1 });
    if (typeof hello.setName !== 'string' && hello.msg !== 'isdbgrid') {
      throw storeError(
        'SVC_ERR_STORE_BACKEND',
        `the MongoDB ${what} needs a replica set (or a sharded cluster): its writes are multi-document transactions, which a standalone server refuses — start mongod with --replSet (one member will do) and run rs.initiate()`,
      );
    }
    return { client, db };
  } catch (error) {
    // The connection's failure is what to report; closing a half-open client cannot add to it.
    await client.close().catch(() => undefined);
    const failure = mongoFailure(error, `connecting the ${what}`);
    if (failure.code !== 'SVC_ERR_STORE_UNAVAILABLE') throw failure;
    // Named by its hosts, never its credentials or options.
    const where = uri.replace(/\?.*$/, '').replace(/\/\/[^@/]*@/, '//***@');
    throw storeError('SVC_ERR_STORE_UNAVAILABLE', `cannot reach MongoDB at ${where}: ${scrub((error as Error).message ?? String(error))}`, { cause: error });
  }
}

/** Create the collections that are missing (transactions on older servers cannot create them). */
export async function ensureCollections(db: Db, names: readonly string[]): Promise<void> {
  const have = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const name of names) {
    if (have.has(name)) continue;
    try {
      await db.createCollection(name);
    } catch (error) {
      // NamespaceExists: another process created it meanwhile.
      if (!(error instanceof mongo().MongoError && error.code === 48)) throw error;
    }
  }
}
