// The MongoDB document store: the docdb conformance suite against the server
// SVC_TEST_DOCDB_URI names (a standalone server will do; every test on databases of
// its own, dropped at the end). No MongoDB server can run here: without the variable
// the suite is skipped, loudly; what needs no server (refusals before any I/O, an
// unreachable server) runs anyway.
import t from 'tap';
import { MongoClient } from 'mongodb';
import { MongoDocBackend } from '../../../stores/mongo/docdb.ts';
import { docdbSuite, SUITE_DB_PREFIX } from '../../conformance/docdb.ts';

t.test('filters, updates and values are refused before the server is asked', async (t) => {
  const b = new MongoDocBackend('mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200', 'app');
  t.teardown(() => b.close());
  await t.rejects(b.find('c', { name: { $regex: '^a' } }), { code: 'INVALID_QUERY', message: /\$regex/ });
  await t.rejects(b.updateMany('c', {}, { $inc: { n: 1 } } as never), { code: 'INVALID_QUERY', message: /\$inc/ });
  await t.rejects(b.insertOne('c', { when: new Date() }), { code: 'INVALID_QUERY', message: /when/ });
  await t.rejects(b.insertMany('c', [{ _id: 'a' }, { _id: 'a' }]), { code: 'DUPLICATE_KEY' });
});

t.test('an unreachable server is KV_UNAVAILABLE, and no message shows the password', async (t) => {
  const b = new MongoDocBackend('mongodb://svc:s3cr3t-pw@127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200', 'app');
  t.teardown(() => b.close());
  const error = (await b.findOne('c', {}).catch((e: unknown) => e)) as { code?: string; status?: number; message: string };
  t.match(error, { code: 'KV_UNAVAILABLE', status: 503 });
  t.notMatch(error.message, /s3cr3t-pw/);
});

const uri = process.env.SVC_TEST_DOCDB_URI;
if (!uri) {
  t.comment('SKIPPED LOUDLY: no MongoDB here — set SVC_TEST_DOCDB_URI=mongodb://… to run the docdb conformance suite against one');
  t.test('docdb conformance on MongoDB', { skip: 'no MongoDB: set SVC_TEST_DOCDB_URI' }, () => undefined);
} else {
  const client = new MongoClient(uri);
  t.teardown(async () => {
    const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
    for (const d of databases) if (d.name.startsWith(SUITE_DB_PREFIX)) await client.db(d.name).dropDatabase();
    await client.close();
  });
  t.test('docdb conformance on MongoDB (one client, a database per dbName)', async (t) => {
    await client.connect();
    docdbSuite(t, async (dbName) => new MongoDocBackend(uri, dbName, { client }));
  });
}
