/**
 * The anchor store chosen by configuration (`[scale.database] docdb_uri`):
 * backends registered by URI scheme, as emailers are by name. This seam
 * imports no backend: each one registers itself (`stores/`: SQLite for
 * `sqlite:`, a file path or nothing, `memory:`, PostgreSQL for `postgres://`
 * and `postgresql://`, MongoDB for `mongodb://` and `mongodb+srv://`), and
 * the runtime imports the built-ins once.
 */
import type { ActorRef } from '../../kernel/index.ts';
import type { WriterMsg } from './store-writer.ts';
import type { AnchorStore } from './store.ts';
import { BackendRegistry, type StoreUri } from './store-uri.ts';

export interface OpenAnchorStoreOptions {
  /** The SQLite file when the URI names none (`runtime/paths.ts`: `.svc/data/anchor_store.db`, or `shelf_db_path`). */
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
