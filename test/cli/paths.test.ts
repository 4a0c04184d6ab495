import t from 'tap';
import { join } from 'node:path';
import { loadConfig } from '../../runtime/index.ts';
import { dataPaths } from '../../runtime/index.ts';

function paths(env: Record<string, string>, toml = '') {
  const dir = t.testdir({ 'svc.toml': toml });
  const { config } = loadConfig({ dir, env });
  return { dir, paths: dataPaths(dir, config) };
}

t.test('no docdb_uri: SQLite, each store in its file of the data folder', async (t) => {
  const { dir, paths: p } = paths({});
  t.match(p, { storePath: join(dir, '.svc', 'data', 'anchor_store.db'), usersPath: join(dir, '.svc', 'data', 'users.db'), docdbUri: '', backend: 'sqlite' });
  t.same(p.sqliteFiles, [p.storePath, p.usersPath]);
});

t.test('DOCDB_URI naming a SQLite file: both stores in it, locked once', async (t) => {
  const { dir, paths: p } = paths({ DOCDB_URI: 'sqlite:db/all.db' });
  t.equal(p.storePath, join(dir, 'db', 'all.db'));
  t.equal(p.usersPath, join(dir, 'db', 'all.db'));
  t.same(p.sqliteFiles, [join(dir, 'db', 'all.db')]);
  t.equal(p.docdbUri, 'sqlite:db/all.db');
});

t.test('[scale.database] docdb_uri in svc.toml; another backend locks no file', async (t) => {
  const { paths: p } = paths({}, '[scale.database]\ndocdb_uri = "postgres://db/svc"\n');
  t.equal(p.backend, 'postgres');
  t.same(p.sqliteFiles, []);
  t.equal(paths({ DOCDB_URI: 'memory:' }).paths.backend, 'memory');
});
