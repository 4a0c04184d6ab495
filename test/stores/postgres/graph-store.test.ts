// The PostgreSQL anchor store: the conformance suite every store passes, on a real server.
import t from 'tap';
import { openAnchorStore } from '../../../actors/graph/index.ts';
import { PgStore } from '../../../stores/postgres/index.ts';
import { storeConformance } from '../../conformance/anchor-store.ts';
import { skipPostgres, startPostgres } from '../../kit/index.ts';

t.setTimeout(300_000);

if (skipPostgres) {
  t.comment(`SKIPPED LOUDLY: ${skipPostgres}`);
  t.pass(`skipped: ${skipPostgres}`);
} else {
  const server = await startPostgres(t);

  t.test('conformance (a fresh database per store)', async (t) => {
    storeConformance(t, async () => PgStore.connect(await server.database()));
  });

  t.test('opened by DOCDB_URI (postgres:// and postgresql://), tables made once, a second opener finds them', async (t) => {
    const uri = await server.database();
    const a = await openAnchorStore(uri);
    const b = await openAnchorStore(uri.replace('postgres://', 'postgresql://'));
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    t.equal(a.kind, 'postgres');
    t.equal(await b.count(), 0);
    const tables = await server.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1", [], uri);
    t.same(tables.rows.map((r) => r.table_name), ['anchor_owners', 'anchors', 'anchors_aliases', 'anchors_quarantine']);
    const body = await server.query("SELECT data_type FROM information_schema.columns WHERE table_name = 'anchors' AND column_name = 'body'", [], uri);
    t.equal(body.rows[0]?.data_type, 'jsonb', 'bodies are JSONB');
  });

  t.test('TLS to the database: sslmode=verify-full with the server’s CA encrypts; without the CA the connection is refused', async (t) => {
    const secure = await startPostgres(t, { tls: true });
    const uri = await secure.database();
    const store = await PgStore.connect(`${uri}?sslmode=verify-full&sslrootcert=${encodeURIComponent(secure.caFile as string)}`);
    t.teardown(() => store.close());
    const { rows } = await store.db.pool.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    t.equal(rows[0]?.ssl, true, 'the connection is encrypted');
    await store.commit({ upserts: [], deletes: [] });
    t.equal(await store.count(), 0);
    const refused = await PgStore.connect(`${uri}?sslmode=verify-full`).then(() => undefined, (e: unknown) => e as { code: string; message: string });
    t.equal(refused?.code, 'SVC_ERR_STORE_UNAVAILABLE', 'an unknown certificate is refused');
    t.match(refused?.message, /cannot reach PostgreSQL at .*127\.0\.0\.1.*certificate/i);
  });

  t.test('a batch holding what JSONB cannot store (NUL, a lone surrogate) fails alone with a 400; its neighbours commit', async (t) => {
    const store = await PgStore.connect(await server.database());
    t.teardown(() => store.close());
    const doc = (id: string, text: string) => ({
      id: id.padEnd(32, '0'), root: 'r'.repeat(32), kind: 'node' as const, arch_module: 'app', arch_type: 'Todo', fingerprint: 'f', format_version: 1, version: 1,
      body: JSON.stringify({ access: { anyone: -1, roots: {} }, context: { title: text } }),
    });
    const results = await Promise.allSettled([
      store.commit({ upserts: [doc('a1', 'fine')], deletes: [] }),
      store.commit({ upserts: [doc('a2', 'a\u0000b')], deletes: [] }),
      store.commit({ upserts: [doc('a3', '\ud800')], deletes: [] }),
      store.commit({ upserts: [doc('a4', 'fine too')], deletes: [] }),
    ]);
    t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    t.match(results[1], { reason: { code: 'SVC_ERR_INVALID_FIELDS', status: 400 } });
    t.match(results[2], { reason: { code: 'SVC_ERR_INVALID_FIELDS', status: 400 } });
    t.equal(await store.count(), 2);
  });

  t.test('an unreachable server: one clear error naming the host, never the password', async (t) => {
    const uri = `postgres://svc:hunter2secret@127.0.0.1:${server.port + 1}/nope`;
    const error = await PgStore.connect(uri).then(() => undefined, (e: unknown) => e as { code: string; message: string });
    t.equal(error?.code, 'SVC_ERR_STORE_UNAVAILABLE');
    t.match(error?.message, /127\.0\.0\.1/);
    t.notMatch(error?.message, /hunter2secret/);
  });
}
