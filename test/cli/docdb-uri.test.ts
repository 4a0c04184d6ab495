// `[scale.database] docdb_uri` (DOCDB_URI) as `svc start` reads it: the backends chosen by URI.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runSvc, startServer, type SvcRun } from '../kit/index.ts';

const entry = new URL('../fixtures/http-app.ts', import.meta.url).pathname;
// The two cases share nothing (a folder each): side by side.
t.jobs = 2;


t.test('docdb_uri: PostgreSQL and MongoDB that cannot be reached, an unknown scheme, memory: — one clear line, exit 1', async (t) => {
  const cases = [
    ['postgres://svc:hunter2@127.0.0.1:1/svc', /svc: cannot reach PostgreSQL at postgres:\/\/svc:\*\*\*@127\.0\.0\.1:1\/svc/],
    ['mongodb://svc:hunter2@127.0.0.1:1/svc?serverSelectionTimeoutMS=300', /svc: .*MongoDB/],
    ['cassandra://db/svc', /svc: unknown users repository backend "cassandra:"/],
    ['memory:', /svc: \[scale\.database\] docdb_uri: memory stores live inside one thread/],
  ] as const;
  // Side by side, a data folder each: the four starts are independent.
  const runs = await Promise.all(
    cases.map(([uri]) =>
      runSvc(['start', entry, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], {
        env: { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-docdb-uri-')), JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789', DOCDB_URI: uri },
      }),
    ),
  );
  for (const [i, [uri, why]] of cases.entries()) {
    const r = runs[i] as SvcRun;
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
