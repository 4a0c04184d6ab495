// `[scale.database] docdb_uri` (DOCDB_URI) as `svc start` reads it: the backends chosen by URI.
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runSvc, startServer } from '../kit/index.ts';

const entry = new URL('../fixtures/http-app.ts', import.meta.url).pathname;


t.test('docdb_uri: PostgreSQL and MongoDB that cannot be reached, an unknown scheme, memory: — one clear line, exit 1', async (t) => {
  const env = { SVC_DATA_DIR: t.testdir({}), JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789' };
  for (const [uri, why] of [
    ['postgres://svc:hunter2@127.0.0.1:1/svc', /svc: cannot reach PostgreSQL at postgres:\/\/svc:\*\*\*@127\.0\.0\.1:1\/svc/],
    ['mongodb://svc:hunter2@127.0.0.1:1/svc?serverSelectionTimeoutMS=300', /svc: .*MongoDB/],
    ['cassandra://db/svc', /svc: unknown users repository backend "cassandra:"/],
    ['memory:', /svc: \[scale\.database\] docdb_uri: memory stores live inside one thread/],
  ] as const) {
    const r = await runSvc(['start', entry, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], { env: { ...env, DOCDB_URI: uri } });
    t.equal(r.code, 1, uri);
    t.match(r.stderr, why);
    t.notMatch(r.stderr, /hunter2|\n\s+at /, 'no password, no stack');
    t.notMatch(r.stdout, /Server ready/);
  }
});

t.test('docdb_uri naming a SQLite file: the graph and the users in it', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'all.db');
  const server = await startServer({ entry, env: { DOCDB_URI: `sqlite:${file}` } });
  t.teardown(() => server.stop());
  t.match(server.output(), new RegExp(`store sqlite at .*all\\.db`));
  const db = new Database(file, { readonly: true });
  t.teardown(() => db.close());
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]).sort();
  t.ok(tables.includes('anchors') && tables.includes('users'), `one file holds both: ${tables.join(', ')}`);
  t.ok((db.prepare('SELECT count(*) FROM users').pluck().get() as number) >= 1, 'the bootstrap accounts are in it');
});
