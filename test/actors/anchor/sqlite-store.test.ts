import t from 'tap';
import { join } from 'node:path';
import { SqliteStore, defaultStorePath } from 'svc';
import { storeConformance } from '../../helpers/store-conformance.ts';

let n = 0;
const dir = t.testdir({});
storeConformance(t, async () => SqliteStore.open(join(dir, `s${n++}`, 'anchor_store.db')));

t.test('the default path is .svc/data/anchor_store.db, or under SVC_DATA_DIR', async (t) => {
  const before = process.env.SVC_DATA_DIR;
  delete process.env.SVC_DATA_DIR;
  t.equal(defaultStorePath('/proj'), '/proj/.svc/data/anchor_store.db');
  process.env.SVC_DATA_DIR = '/data';
  t.equal(defaultStorePath('/proj'), '/data/anchor_store.db');
  if (before === undefined) delete process.env.SVC_DATA_DIR;
  else process.env.SVC_DATA_DIR = before;
});

t.test('created on first use, folders included; WAL mode', async (t) => {
  const path = join(dir, 'deep', 'er', 'anchor_store.db');
  const store = SqliteStore.open(path);
  t.equal(await store.count(), 0);
  await store.close();
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(path);
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  db.close();
});
