/**
 * The anchor store chosen by configuration (`[scale.database] docdb_uri`):
 * backends registered by URI scheme, as emailers are by name. SQLite
 * (`sqlite:`, a file path, or nothing), `memory:` and PostgreSQL
 * (`postgres://`, `postgresql://`) and MongoDB (`mongodb://`,
 * `mongodb+srv://`) are built in.
 */
import type { ActorRef } from '../../kernel/index.ts';
import { MemoryStore } from './memory-store.ts';
import { PgStore } from './pg-store.ts';
import { MongoStore } from './mongo-store.ts';
import { ForwardingStore, type WriterMsg } from './store-writer.ts';
import { SqliteStore } from './sqlite-store.ts';
import type { AnchorStore } from './store.ts';
import { BackendRegistry, type StoreUri } from './store-uri.ts';

export interface OpenAnchorStoreOptions {
  /** The SQLite file when the URI names none (`cli/paths.ts`: `.svc/data/anchor_store.db`, or `shelf_db_path`). */
  path?: string;
  /** Where a relative path in the URI resolves from (the project root; default the working directory). */
  baseDir?: string;
  /** SQLite: `NORMAL` (default) survives a killed process, `FULL` a power loss. */
  synchronous?: 'NORMAL' | 'FULL';
  /** SQLite: how long a writer waits for another connection's write lock (default 5 s). */
  busyTimeoutMs?: number;
  /**
   * SQLite in a worker thread: the process's one writer (`serveStoreWriter` on
   * the main thread). Reads go through a read-only connection of this thread,
   * writes to it.
   */
  processWriter?: ActorRef<WriterMsg, unknown>;
  /** PostgreSQL: create the tables (default true; worker threads skip it, the main thread made them). */
  createSchema?: boolean;
  /** PostgreSQL: connections of this thread's pool (default 8). */
  maxConnections?: number;
}

export type AnchorStoreFactory = (uri: StoreUri, options: OpenAnchorStoreOptions) => AnchorStore | Promise<AnchorStore>;

const registered = new BackendRegistry<AnchorStore, OpenAnchorStoreOptions>('anchor store');

/**
 * Make a backend available for a URI scheme (lower case, without the colon);
 * a later registration of a scheme replaces the earlier one.
 *
 * @example
 * registerAnchorStore('postgres', (uri) => PostgresStore.connect(uri.uri));
 */
export function registerAnchorStore(scheme: string, factory: AnchorStoreFactory): void {
  registered.register(scheme, factory);
}

registerAnchorStore('sqlite', (uri, o) => {
  const path = uri.path ?? o.path;
  if (!path) throw new TypeError('openAnchorStore: a SQLite store needs a file (in the URI or as options.path)');
  if (o.processWriter) return new ForwardingStore(SqliteStore.open(path, { readOnly: true, busyTimeoutMs: o.busyTimeoutMs }), o.processWriter);
  return SqliteStore.open(path, { synchronous: o.synchronous, busyTimeoutMs: o.busyTimeoutMs });
});
registerAnchorStore('memory', () => new MemoryStore());
// Every thread has its own pool; the tables are made by whoever opens first (under a lock), unless told they exist.
const postgres: AnchorStoreFactory = (uri, o) => PgStore.connect(uri.uri, { createSchema: o.createSchema !== false, maxConnections: o.maxConnections });
registerAnchorStore('postgres', postgres);
registerAnchorStore('postgresql', postgres);
// MongoDB needs a replica set (multi-document transactions), as MongoDB itself does.
registerAnchorStore('mongodb', (uri) => MongoStore.connect(uri.uri));
registerAnchorStore('mongodb+srv', (uri) => MongoStore.connect(uri.uri));

/**
 * Open the anchor store a URI names. An unknown scheme, or one whose backend
 * is not in this build, rejects with `SVC_ERR_STORE_BACKEND`.
 *
 * @example
 * const store = await openAnchorStore(config['scale.database'].docdb_uri, { path: storePath, baseDir: projectRoot });
 */
export function openAnchorStore(uri: string | undefined, options: OpenAnchorStoreOptions = {}): Promise<AnchorStore> {
  return registered.open(uri, options);
}
