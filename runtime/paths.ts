/**
 * Where a project's data lives: `SVC_DATA_DIR`, else `.svc/data/` beside the
 * entry; the graph store and the users store may each be moved by
 * configuration (`[scale.database] shelf_db_path`, `users_db_path`), or both
 * put elsewhere by `docdb_uri` (one SQLite file, or another backend).
 */
import { join, resolve } from 'node:path';
import { parseStoreUri } from '../actors/graph/index.ts';
import type { SvcConfig } from './config.ts';

export interface DataPaths {
  dataDir: string;
  /** The graph store's SQLite file (when SQLite is the backend). */
  storePath: string;
  /** The users store's SQLite file (when SQLite is the backend). */
  usersPath: string;
  /** `[scale.database] docdb_uri` as configured: what `openAnchorStore` and `openUsersRepository` are given. */
  docdbUri: string;
  /** Its backend: `sqlite`, `memory`, `postgres`, … */
  backend: string;
  /** The SQLite files served (each locked by `svc start`); none with another backend. */
  sqliteFiles: string[];
}

/** `env`: where `SVC_DATA_DIR` is read (the process's environment unless given). */
export function dataPaths(projectRoot: string, config: SvcConfig, env: NodeJS.ProcessEnv = process.env): DataPaths {
  const dataDir = env.SVC_DATA_DIR ? resolve(env.SVC_DATA_DIR) : join(projectRoot, '.svc', 'data');
  const db = config['scale.database'];
  const uri = parseStoreUri(db.docdb_uri, projectRoot);
  // A SQLite file named by docdb_uri holds both, as a shared database would.
  const storePath = uri.path ?? (db.shelf_db_path ? resolve(projectRoot, db.shelf_db_path) : join(dataDir, 'anchor_store.db'));
  const usersPath = uri.path ?? (db.users_db_path ? resolve(projectRoot, db.users_db_path) : join(dataDir, 'users.db'));
  return {
    dataDir,
    storePath,
    usersPath,
    docdbUri: db.docdb_uri,
    backend: uri.scheme,
    sqliteFiles: uri.scheme === 'sqlite' && uri.path !== ':memory:' ? [...new Set([storePath, usersPath])] : [],
  };
}
