/**
 * One serving process per data folder. Two processes serving the same store
 * would each keep their own partition for every root — neither sees the
 * other's new nodes and edges — so the second refuses to start. The lock is
 * an exclusive SQLite (POSIX) lock on a file beside the store, held for the
 * process's life: the operating system lets go of it when the process ends,
 * however it ends (kill -9 included), so a crash leaves nothing to clean up.
 */
import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class DataLockError extends Error {}

/** Locks taken by this process: referenced here so that no garbage collection closes them. */
const held = new Set<DataLock>();

export interface DataLock {
  readonly path: string;
  release(): void;
}

/**
 * Take the serving lock of the store at `storePath`, or throw a
 * {@link DataLockError} naming the process that holds it.
 *
 * @example
 * const lock = lockDataFolder('.svc/data/anchor_store.db'); // for the life of the process
 */
export function lockDataFolder(storePath: string, options: { shared?: boolean } = {}): DataLock {
  const path = `${storePath}.lock`;
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { timeout: 0 });
  try {
    if (options.shared) {
      // Members of a cluster share the folder: each holds a SHARED lock (a read transaction), which
      // excludes a lone process's EXCLUSIVE one, and the other way round.
      db.exec('CREATE TABLE IF NOT EXISTS members (pid INTEGER)');
      db.exec('BEGIN');
      db.prepare('SELECT count(*) FROM members').get();
    } else {
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE');
    }
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    let owner = '';
    try {
      owner = readFileSync(`${path}.pid`, 'utf8').trim();
    } catch {
      // no pid note: the message goes without it
    }
    throw new DataLockError(
      `another svc process${owner && !options.shared ? ` (pid ${owner})` : ''} is serving the data in ${dirname(storePath)}${options.shared ? ' outside a cluster' : ''}; ` +
        'stop it first, or give this one its own data folder (SVC_DATA_DIR, or [scale.database] shelf_db_path and users_db_path)',
    );
  }
  if (!options.shared) writeFileSync(`${path}.pid`, `${process.pid}\n`);
  // Held until released or the process ends: the connection must stay reachable (a collected
  // better-sqlite3 connection is closed, and its lock with it).
  const lock: DataLock = {
    path,
    release() {
      held.delete(lock);
      if (db.open) db.close();
    },
  };
  held.add(lock);
  return lock;
}
