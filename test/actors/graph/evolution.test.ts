// Schema evolution on every store: memory, SQLite, PostgreSQL (MongoDB when SVC_TEST_DOCDB_URI is set).
import t from 'tap';
import { join } from 'node:path';
import { MemoryStore } from '../../../stores/memory/index.ts';
import { SqliteStore } from '../../../stores/sqlite/index.ts';
import { PgStore } from '../../../stores/postgres/index.ts';
import { schemaEvolution } from '../../conformance/evolution.ts';
import { skipPostgres, startPostgres } from '../../kit/index.ts';

t.setTimeout(300_000);

t.test('memory', async (t) => schemaEvolution(t, async () => new MemoryStore()));
t.test('memory, bodies as objects', async (t) => schemaEvolution(t, async () => new MemoryStore({ bodyForm: 'object' })));
t.test('SQLite', async (t) => schemaEvolution(t, async () => SqliteStore.open(join(t.testdir({}), 'anchor_store.db'))));
t.test('PostgreSQL', { skip: skipPostgres }, async (t) => {
  const server = await startPostgres(t);
  schemaEvolution(t, async () => PgStore.connect(await server.database()));
});
