/**
 * Where a project's data lives: `SVC_DATA_DIR`, else `.svc/data/` beside the
 * entry; the graph store and the users store may each be moved by
 * configuration (`[scale.database] shelf_db_path`, `users_db_path`).
 */
import { join, resolve } from 'node:path';
import type { SvcConfig } from './config.ts';

export interface DataPaths {
  dataDir: string;
  storePath: string;
  usersPath: string;
}

export function dataPaths(projectRoot: string, config: SvcConfig): DataPaths {
  const dataDir = process.env.SVC_DATA_DIR ? resolve(process.env.SVC_DATA_DIR) : join(projectRoot, '.svc', 'data');
  const db = config['scale.database'];
  return {
    dataDir,
    storePath: db.shelf_db_path ? resolve(projectRoot, db.shelf_db_path) : join(dataDir, 'anchor_store.db'),
    usersPath: db.users_db_path ? resolve(projectRoot, db.users_db_path) : join(dataDir, 'users.db'),
  };
}
