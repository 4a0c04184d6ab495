/**
 * Switching a SQLite file to WAL: the switch takes an exclusive lock, and when several threads or processes open
 * the same new file at once SQLite may answer SQLITE_BUSY at once, without waiting out `busy_timeout` (seen: three
 * worker threads opening one graph store). The switch is tried again, briefly, until `timeoutMs`.
 */
import type { Database } from 'better-sqlite3';

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * @example
 * db.pragma('busy_timeout = 5000');
 * enableWal(db);
 */
export function enableWal(db: Database, timeoutMs = 5000): void {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > until) throw error;
      // A constructor cannot await: a short blocking pause (it happens only while another opener holds the lock).
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}
