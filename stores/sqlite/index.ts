/**
 * The embedded SQLite backends (better-sqlite3, WAL): the graph store, the
 * users repository and the documents of `kvstore()` — the default when
 * `docdb_uri` is empty, a file path or `sqlite:<path>`. Importing this door
 * registers them with their seams.
 */
import { ForwardingStore, registerAnchorStore } from '../../actors/graph/index.ts';
import { ForwardingUsersRepository, registerUsersRepository } from '../../actors/identity/index.ts';
import { registerDocBackend } from '../../actors/data/index.ts';
import { SqliteStore } from './graph-store.ts';
import { SqliteUsersRepository } from './users.ts';
import { SqliteDocBackend } from './docdb.ts';

export { SqliteStore, defaultStorePath } from './graph-store.ts';
export type { SqliteStoreOptions } from './graph-store.ts';
export { SqliteUsersRepository } from './users.ts';
export { SqliteDocBackend, indexNames } from './docdb.ts';
export type { SqliteDocOptions } from './docdb.ts';

registerAnchorStore('sqlite', (uri, o) => {
  const path = uri.path ?? o.path;
  if (!path) throw new TypeError('openAnchorStore: a SQLite store needs a file (in the URI or as options.path)');
  // A worker thread reads through its own read-only connection and writes through the process's one writer.
  if (o.processWriter) return new ForwardingStore(SqliteStore.open(path, { readOnly: true, busyTimeoutMs: o.busyTimeoutMs }), o.processWriter);
  return SqliteStore.open(path, { synchronous: o.synchronous, busyTimeoutMs: o.busyTimeoutMs });
});

registerUsersRepository('sqlite', (uri, o) => {
  const path = uri.path ?? o.path;
  if (!path) throw new TypeError('openUsersRepository: a SQLite repository needs a file (in the URI or as options.path)');
  if (o.processWriter) return new ForwardingUsersRepository(SqliteUsersRepository.open(path, { readOnly: true }), o.processWriter);
  return SqliteUsersRepository.open(path);
});

registerDocBackend('sqlite', (uri, o) => new SqliteDocBackend(uri.path ?? o.path, o.dbName));
// `memory:` documents: SQLite in memory (one database per thread, gone with it).
registerDocBackend('memory', (_uri, o) => new SqliteDocBackend(':memory:', o.dbName));
