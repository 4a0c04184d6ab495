// The MongoDB anchor store: the conformance suite every store passes, and what is
// Mongo's own (insertion order, copies, stats, two connections fencing each other),
// against the replica set SVC_TEST_DOCDB_URI names — each store on a database of its
// own, dropped at the end. No MongoDB server can run here: without the variable
// those are skipped, loudly; what needs no server (URI errors) runs anyway.
import t from 'tap';
import { MongoClient } from 'mongodb';
import { CommitChain, type StoredDoc } from '../../../actors/graph/index.ts';
import { MongoStore, mongoDatabaseOf } from '../../../stores/mongo/index.ts';
import { storeConformance } from '../../conformance/anchor-store.ts';

t.test('the database a URI names', async (t) => {
  t.equal(mongoDatabaseOf('mongodb://db:27017/app_db?replicaSet=rs0'), 'app_db');
  t.equal(mongoDatabaseOf('mongodb+srv://u:p%40ss@cluster.example.net/svc_prod'), 'svc_prod');
  t.equal(mongoDatabaseOf('mongodb://a:1,b:2,c:3/?replicaSet=rs0'), undefined);
  t.equal(mongoDatabaseOf('mongodb://a:1'), undefined);
});

t.test('an unreachable server is SVC_ERR_STORE_UNAVAILABLE, and no message shows the password', async (t) => {
  const error = await MongoStore.connect('mongodb://svc:s3cr3t-pw@127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200').then(
    () => undefined,
    (e: unknown) => e as Error & { code?: string },
  );
  t.match(error, { code: 'SVC_ERR_STORE_UNAVAILABLE', status: 503 });
  t.notMatch(error?.message ?? '', /s3cr3t-pw/);
});

t.test('a URI the driver cannot read is SVC_ERR_STORE_BACKEND, without the password', async (t) => {
  const error = await MongoStore.connect('mongodb://svc:s3cr3t-pw@db/?replicaSet=rs0&nonsenseOption=1&tls=maybe').then(
    () => undefined,
    (e: unknown) => e as Error & { code?: string },
  );
  t.match(error, { code: 'SVC_ERR_STORE_BACKEND' });
  t.notMatch(error?.message ?? '', /s3cr3t-pw/);
});

const uri = process.env.SVC_TEST_DOCDB_URI;
if (!uri) {
  t.comment('SKIPPED LOUDLY: no MongoDB here — set SVC_TEST_DOCDB_URI=mongodb://… (a replica set: commits are transactions) to run the anchor store conformance suite against one');
  t.pass('skipped: SVC_TEST_DOCDB_URI not set');
} else {
  const run = `svc_t${process.pid}_${Date.now().toString(36)}`;
  const databases: string[] = [];
  const fresh = () => {
    const name = `${run}_${databases.length}`;
    databases.push(name);
    return name;
  };
  const open = () => MongoStore.connect(uri, { database: fresh() });
  t.teardown(async () => {
    const admin = new MongoClient(uri);
    try {
      for (const name of databases) await admin.db(name).dropDatabase();
    } finally {
      await admin.close();
    }
  });

  storeConformance(t, open);

  let n = 0;
  const doc = (overrides: Partial<StoredDoc> = {}): StoredDoc => ({
    id: (++n).toString(16).padStart(32, '0'),
    root: 'a'.repeat(32),
    kind: 'node',
    arch_module: 'app',
    arch_type: 'Todo',
    fingerprint: '0123456789abcdef',
    format_version: 1,
    version: 1,
    body: { access: { anyone: -1, roots: {} }, context: { title: `t${n}`, tags: ['x', 'y'], nested: { deep: 1.5 } } },
    ...overrides,
  });

  t.test('bodies are kept as objects, and what comes back is a copy of its own', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    t.equal(store.bodyForm, 'object');
    const d = doc();
    await store.commit({ upserts: [d], deletes: [] });
    const [a] = await store.get([d.id]);
    t.same(a?.body, d.body);
    (a?.body as { context: { title: string } }).context.title = 'changed';
    t.same((await store.get([d.id]))[0]?.body, d.body);
  });

  t.test('edges come back oldest first; an update keeps an edge in its place', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const node = 'b'.repeat(32);
    const edges = Array.from({ length: 5 }, (_, i) => doc({ kind: 'edge', source: i % 2 ? node : 'c'.repeat(32), target: i % 2 ? 'c'.repeat(32) : node }));
    for (const e of edges) await store.commit({ upserts: [e], deletes: [] });
    await store.commit({ upserts: [{ ...(edges[0] as StoredDoc), version: 2 }], deletes: [] });
    t.same(
      (await store.edges(node)).map((e) => e.id),
      edges.map((e) => e.id),
    );
    t.match((await store.edges(node))[0], { version: 2, source: 'c'.repeat(32), target: node });
    t.same(await store.edges('d'.repeat(32)), []);
  });

  t.test('scan, putDocs, putQuarantine, dropQuarantined, stats: what `svc db` needs', async (t) => {
    const from = await open();
    const to = await open();
    t.teardown(async () => {
      await from.close();
      await to.close();
    });
    const docs = [doc(), doc({ root: 'e'.repeat(32) }), doc({ kind: 'edge', source: 'x', target: 'y', arch_type: 'Link' })];
    await from.commit({ upserts: docs, deletes: [] });
    const first = await from.scan(0, 2);
    t.same(first.docs.map((d) => d.id), docs.slice(0, 2).map((d) => d.id), 'insertion order');
    const rest = await from.scan(first.next, 2);
    t.same(rest.docs.map((d) => d.id), [docs[2]?.id]);
    t.same((await from.scan(rest.next, 2)).docs, [], 'then nothing');
    await to.putDocs([...first.docs, ...rest.docs]);
    await to.putDocs(first.docs);
    t.equal(await to.count(), 3, 'idempotent');
    t.same((await to.get([docs[2]?.id as string]))[0], (await from.get([docs[2]?.id as string]))[0], 'copied whole');
    await from.quarantine(docs[0]?.id as string, 'corrupt');
    const q = await from.quarantined();
    await to.putQuarantine(q);
    t.same(await to.quarantined(), q);
    t.ok(await to.dropQuarantined(docs[0]?.id as string));
    t.notOk(await to.dropQuarantined(docs[0]?.id as string), 'gone already');
    await from.addAlias('app.Old', 'app.Todo');
    t.match(await from.stats(), {
      kind: 'mongo',
      documents: 2,
      nodes: 1,
      edges: 1,
      roots: 2,
      byType: { Todo: 1, Link: 1 },
      quarantined: 1,
      aliases: 1,
      backend: { serverVersion: String },
    });
  });

  t.test('two connections (two processes): a claim on one fences the other’s commits', async (t) => {
    const database = fresh();
    const a = await MongoStore.connect(uri, { database });
    const b = await MongoStore.connect(uri, { database });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    const root = '1'.repeat(32);
    const tokenA = await a.claim(root);
    await a.commit({ upserts: [doc({ root })], deletes: [], fence: { root, token: tokenA } });
    const tokenB = await b.claim(root);
    t.equal(tokenB, tokenA + 1);
    const late = doc({ root });
    await t.rejects(a.commit({ upserts: [late], deletes: [], fence: { root, token: tokenA } }), { code: 'SVC_ERR_FENCED' });
    t.same(await b.get([late.id]), []);
    const tokens = await Promise.all([a.claim(root), b.claim(root), a.claim(root), b.claim(root)]);
    t.same([...tokens].sort((x, y) => x - y), [tokenB + 1, tokenB + 2, tokenB + 3, tokenB + 4], 'every token handed out once');
  });

  t.test('many chains at once, from two connections: each batch stands or falls alone, chains hold', async (t) => {
    const database = fresh();
    const a = await MongoStore.connect(uri, { database });
    const b = await MongoStore.connect(uri, { database });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    const shared = doc();
    await a.commit({ upserts: [shared], deletes: [] });
    // Both connections update the same document from version 1: exactly one wins; the loser's chain refuses its next batch.
    const chainA = new CommitChain();
    const chainB = new CommitChain();
    const nextA = doc();
    const nextB = doc();
    const results = await Promise.allSettled([
      a.commit({ upserts: [{ ...shared, version: 2 }], deletes: [], chain: chainA }),
      a.commit({ upserts: [nextA], deletes: [], chain: chainA }),
      b.commit({ upserts: [{ ...shared, version: 2 }], deletes: [], chain: chainB }),
      b.commit({ upserts: [nextB], deletes: [], chain: chainB }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled').length;
    t.equal(won, 2, 'one chain wholly applied');
    t.ok(Boolean(chainA.broken) !== Boolean(chainB.broken), 'the other broken');
    const loser = chainA.broken ? nextA : nextB;
    t.same(await a.get([loser.id]), [], 'its later batch was not applied');
    t.equal((await a.get([shared.id]))[0]?.version, 2);
  });
}
