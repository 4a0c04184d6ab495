// The PostgreSQL document store on a real server (test/kit/postgres.ts): the docdb
// conformance suite, the table and indexes it makes, the plan of an indexed findOne,
// values JSONB refuses, and the server going away and coming back.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { PgDocBackend, pgIndexNames } from '../../../stores/postgres/docdb.ts';
import { skipPostgres, startPostgres } from '../../kit/index.ts';
import { docdbSuite } from '../../conformance/docdb.ts';

t.setTimeout(300_000);

if (skipPostgres) {
  t.comment(`SKIPPED LOUDLY: ${skipPostgres}`);
  t.pass(`skipped: ${skipPostgres}`);
} else {
  const server = await startPostgres(t);

  t.test('conformance (one database, every test its own dbNames)', async (t) => {
    const uri = await server.database();
    docdbSuite(t, async (dbName) => new PgDocBackend(uri, dbName, { maxConnections: 2 }));
  });

  t.test('the table is made on first use, once, by concurrent openers', async (t) => {
    const uri = await server.database();
    const backends = Array.from({ length: 4 }, (_, i) => new PgDocBackend(uri, `app${i}`));
    t.teardown(() => Promise.all(backends.map((b) => b.close())));
    await Promise.all(backends.map((b, i) => b.insertOne('users', { _id: 'u', i })));
    await Promise.all(backends.map((b) => b.createIndex('users', 'email')));
    const columns = await server.query("SELECT column_name, data_type, collation_name FROM information_schema.columns WHERE table_name = 'svc_docdb' ORDER BY ordinal_position", [], uri);
    t.same(
      columns.rows.map((r) => [r.column_name, r.data_type, r.collation_name]),
      [['db', 'text', null], ['col', 'text', null], ['id', 'text', 'C'], ['doc', 'jsonb', null]],
    );
    const names = pgIndexNames(['email']);
    const indexes = await server.query("SELECT indexname FROM pg_indexes WHERE tablename = 'svc_docdb' ORDER BY 1", [], uri);
    t.same(indexes.rows.map((r) => r.indexname).sort(), [names.value, names.arrays, 'svc_docdb_pkey'].sort());
    const rows = await server.query('SELECT db, id, doc FROM svc_docdb ORDER BY db', [], uri);
    t.same(rows.rows, backends.map((_, i) => ({ db: `app${i}`, id: 'u', doc: { i } })), 'the document without its _id');
  });

  t.test('an indexed findOne on a string field is served by the index (EXPLAIN)', async (t) => {
    const uri = await server.database();
    const b = new PgDocBackend(uri, 'app');
    t.teardown(() => b.close());
    await b.insertMany('users', Array.from({ length: 20_000 }, (_, i) => ({ email: `u${i}@example.com`, n: i, profile: { city: `c${i % 100}` } })));
    await b.insertMany('other', Array.from({ length: 5_000 }, (_, i) => ({ email: `u${i}@example.com` })));
    await b.createIndex('users', 'email');
    await b.createIndex('users', 'profile.city');
    const names = pgIndexNames(['email']);
    const plan = (await b.explain('users', { email: 'u7@example.com' }, { limit: 1 })).join('\n');
    t.match(plan, new RegExp(`Index Scan on ${names.value}`), 'the value index');
    t.match(plan, new RegExp(`Index Scan on ${names.arrays}`), 'and the index of arrays at the path');
    t.notMatch(plan, /Seq Scan|svc_docdb_pkey/, 'neither the table nor the primary key walked');
    const forced = (await b.explain('users', { 'profile.city': 'c7' }, {}, { seqscanOff: true })).join('\n');
    t.match(forced, new RegExp(`Index Scan on ${pgIndexNames(['profile', 'city']).value}`), 'a dotted path');
    t.same((await b.findOne('users', { email: 'u7@example.com' }))?.n, 7);
    t.equal((await b.find('users', { 'profile.city': 'c7' })).length, 200);
  });

  t.test('a value too big for an index entry is refused', async (t) => {
    const b = new PgDocBackend(await server.database(), 'app');
    t.teardown(() => b.close());
    await b.createIndex('c', 'big');
    // Random text: btree compresses index entries, so repeated characters would fit.
    const big = randomBytes(6000).toString('base64');
    await t.rejects(b.insertOne('c', { big }), { code: 'INVALID_QUERY', message: /index/ }, 'a value too big for a btree entry at an indexed path');
    t.match(await b.insertOne('c', { notIndexed: big }), /^[0-9a-f]{24}$/, 'elsewhere it is fine');
    t.equal(await b.exists('c', 'x'), false);
  });

  t.test('the server stopped: KV_UNAVAILABLE at once, without the password; back when it is', async (t) => {
    const own = await startPostgres(t);
    const uri = (await own.database()).replace('postgres@', 'postgres:s3cret@');
    const b = new PgDocBackend(uri, 'app');
    t.teardown(() => b.close());
    await b.insertOne('c', { _id: 'a' });
    await own.stop();
    const error = (await b.get('c', 'a').catch((e: unknown) => e)) as { code: string; status: number; message: string };
    t.match(error, { code: 'KV_UNAVAILABLE', status: 503 });
    t.notMatch(error.message, /s3cret/);
    await t.rejects(b.find('c', {}), { code: 'KV_UNAVAILABLE' }, 'while down, at once');
    await own.start();
    let back: unknown = null;
    for (let i = 0; i < 100 && back === null; i++) {
      back = await b.get('c', 'a').catch(() => null);
      if (back === null) await new Promise((r) => setTimeout(r, 100));
    }
    t.same(back, { _id: 'a' });
    await b.close();
    await t.rejects(b.get('c', 'a'), { code: 'KV_UNAVAILABLE', message: /closed/ });
  });

  t.test('an unreachable server from the start is KV_UNAVAILABLE', async (t) => {
    const b = new PgDocBackend('postgres://svc:pw@127.0.0.1:9/none', 'app');
    t.teardown(() => b.close());
    await t.rejects(b.findOne('c', {}), { code: 'KV_UNAVAILABLE' });
  });
}
