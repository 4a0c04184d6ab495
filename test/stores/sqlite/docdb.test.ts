// The SQLite document store: the docdb conformance suite on one temporary file, the
// indexes a filter is served by (EXPLAIN QUERY PLAN), connections sharing the file,
// and the errors of a file that cannot be used.
import t from 'tap';
import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteDocBackend, indexNames } from '../../../stores/sqlite/docdb.ts';
import { docdbSuite } from '../../conformance/docdb.ts';

const dir = t.testdir({});
const file = join(dir, 'docdb.db');

t.test('conformance (every test on one file, its own dbNames)', async (t) => {
  docdbSuite(t, async (dbName) => new SqliteDocBackend(file, dbName));
});

t.test('the table: one for every dbName and collection, WITHOUT ROWID, WAL mode', async (t) => {
  const b = new SqliteDocBackend(join(dir, 'shape', 'docdb.db'), 'app');
  await b.insertOne('users', { _id: 'u', a: 1 });
  await b.close();
  const db = new Database(join(dir, 'shape', 'docdb.db'));
  t.teardown(() => db.close());
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  const sql = (db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'docdb'").get() as { sql: string }).sql;
  t.match(sql, /PRIMARY KEY \(db, col, id\)\) WITHOUT ROWID/);
  t.same(db.prepare('SELECT db, col, id, doc FROM docdb').all(), [{ db: 'app', col: 'users', id: 'u', doc: '{"a":1}' }], 'the document without its _id, as JSON text');
});

t.test('an indexed findOne uses the index (EXPLAIN QUERY PLAN); without the index it walks the collection', async (t) => {
  const b = new SqliteDocBackend(join(dir, 'plan.db'), 'app');
  t.teardown(() => b.close());
  await b.insertMany(
    'users',
    Array.from({ length: 2000 }, (_, i) => ({ email: `u${i}@example.com`, age: i % 90, profile: { city: `c${i % 50}` } })),
  );
  const before = (await b.explain('users', { email: 'u7@example.com' }, { limit: 1 })).join('\n');
  t.notMatch(before, /docdb_/, 'no index yet');
  t.match(before, /SEARCH docdb USING PRIMARY KEY \(db=\? AND col=\?\)/);

  await b.createIndex('users', 'email');
  await b.createIndex('users', 'profile.city');
  await b.createIndex('users', 'age');
  const email = indexNames(['email']);
  const plan = (await b.explain('users', { email: 'u7@example.com' }, { limit: 1 })).join('\n');
  t.match(plan, new RegExp(`SEARCH docdb USING INDEX ${email.value} \\(db=\\? AND col=\\? AND <expr>=\\?\\)`), 'equality: the value index');
  t.match(plan, new RegExp(`SEARCH docdb USING INDEX ${email.arrays} \\(db=\\? AND col=\\?\\)`), 'and the (empty) index of arrays there');
  t.notMatch(plan, /USING PRIMARY KEY/);
  t.same((await b.findOne('users', { email: 'u7@example.com' }))?.age, 7);

  const nested = (await b.explain('users', { 'profile.city': 'c3', age: { $gte: 10 } })).join('\n');
  t.match(nested, new RegExp(`USING INDEX ${indexNames(['profile', 'city']).value} `), 'a dotted path, with other conditions');
  const range = (await b.explain('users', { age: { $gt: 80 } }, { sort: { email: 1 } })).join('\n');
  t.match(range, new RegExp(`USING INDEX ${indexNames(['age']).value} \\(db=\\? AND col=\\? AND <expr>>\\?\\)`), 'a range');
  t.equal((await b.find('users', { age: { $gt: 80 } })).length, 198, 'ages 81 to 89, 22 of each');

  t.equal((await b.find('users', { 'profile.city': 'c3', age: { $gte: 10 } })).length, (await b.find('users', { 'profile.city': 'c3' })).filter((d) => (d.age as number) >= 10).length);
  const other = new SqliteDocBackend(join(dir, 'plan.db'), 'app');
  t.teardown(() => other.close());
  t.match((await other.explain('users', { email: 'x' })).join('\n'), new RegExp(email.value), 'another connection sees the index');
});

t.test('two connections on one file: each sees the other’s writes; concurrent writers wait for the lock', async (t) => {
  const path = join(dir, 'shared.db');
  const a = new SqliteDocBackend(path, 'app');
  const b = new SqliteDocBackend(path, 'app');
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  await a.insertMany('c', Array.from({ length: 100 }, (_, i) => ({ _id: `a${i}`, i })));
  t.equal((await b.find('c', {})).length, 100);
  t.equal(await b.updateMany('c', { i: { $lt: 10 } }, { $set: { low: true } }), 10);
  t.equal((await a.find('c', { low: true })).length, 10);
  await Promise.all([a.insertMany('c', [{ _id: 'x1' }, { _id: 'x2' }]), b.insertMany('c', [{ _id: 'y1' }, { _id: 'y2' }])]);
  t.equal((await a.find('c', {})).length, 104);
});

t.test('a file that cannot be opened, a held write lock past the timeout, a closed store: KV_UNAVAILABLE', async (t) => {
  writeFileSync(join(dir, 'a-file'), 'not a folder');
  t.throws(() => new SqliteDocBackend(join(dir, 'a-file', 'docdb.db'), 'app'), { code: 'KV_UNAVAILABLE', status: 503 }, 'under a file');
  t.throws(() => new SqliteDocBackend(dir, 'app'), { code: 'KV_UNAVAILABLE' }, 'a directory');

  const path = join(dir, 'locked.db');
  const b = new SqliteDocBackend(path, 'app', { busyTimeoutMs: 50 });
  const holder = new Database(path);
  holder.exec('BEGIN IMMEDIATE');
  await t.rejects(b.insertOne('c', { a: 1 }), { code: 'KV_UNAVAILABLE', message: /busy|locked/i });
  holder.exec('ROLLBACK');
  holder.close();
  t.match(await b.insertOne('c', { a: 1 }), /^[0-9a-f]{24}$/, 'works once the lock is released');
  await b.close();
  await b.close();
  await t.rejects(b.find('c', {}), { code: 'KV_UNAVAILABLE', message: /closed/ });
  await t.rejects(b.get('c', 'x'), { code: 'KV_UNAVAILABLE' });
});
