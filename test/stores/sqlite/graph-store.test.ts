import t from 'tap';
import { join } from 'node:path';
import { SqliteStore, defaultStorePath } from 'svc';
import { storeConformance } from '../../conformance/anchor-store.ts';

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

function todo(n: number, root: string, version = 1) {
  return {
    id: n.toString(16).padStart(32, '0'),
    root,
    kind: 'node' as const,
    arch_module: 'app',
    arch_type: 'Todo',
    fingerprint: '0123456789abcdef',
    format_version: 1,
    version,
    body: JSON.stringify({ access: {}, context: { title: `t${n}` } }),
  };
}

t.test('two connections on one file (two processes): a claim on one fences the other’s commits', async (t) => {
  const path = join(dir, 'two', 'anchor_store.db');
  const a = SqliteStore.open(path);
  const b = SqliteStore.open(path);
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const root = '1'.repeat(32);
  const tokenA = await a.claim(root);
  await a.commit({ upserts: [todo(1, root)], deletes: [], fence: { root, token: tokenA } });
  const tokenB = await b.claim(root);
  t.equal(tokenB, tokenA + 1, 'the claim counts on from the other connection’s');
  // A's late write touches a document nobody else did: only the fence can refuse it.
  await t.rejects(a.commit({ upserts: [todo(2, root)], deletes: [], fence: { root, token: tokenA } }), { code: 'SVC_ERR_FENCED' });
  t.same(await b.get([todo(2, root).id]), [], 'nothing of it was stored');
  await b.commit({ upserts: [todo(2, root)], deletes: [], fence: { root, token: tokenB } });
  t.equal((await a.get([todo(2, root).id])).length, 1, 'the new owner’s write is there');
  // Claims from both sides at once: every token handed out once.
  const tokens = await Promise.all([a.claim(root), b.claim(root), a.claim(root), b.claim(root)]);
  t.same([...tokens].sort((x, y) => x - y), [tokenB + 1, tokenB + 2, tokenB + 3, tokenB + 4]);
});

t.test('a read-only connection refuses claims (they go to the writer)', async (t) => {
  const path = join(dir, 'ro', 'anchor_store.db');
  const writer = SqliteStore.open(path);
  const reader = SqliteStore.open(path, { readOnly: true });
  t.teardown(async () => {
    await reader.close();
    await writer.close();
  });
  await t.rejects(reader.claim('2'.repeat(32)), { code: 'SVC_ERR_STORE' });
  t.equal(await writer.claim('2'.repeat(32)), 1, 'the refused claim took nothing');
});

t.test('claims from another process on the same file', async (t) => {
  const path = join(dir, 'proc', 'anchor_store.db');
  const store = SqliteStore.open(path);
  t.teardown(() => store.close());
  const root = '3'.repeat(32);
  const mine = await store.claim(root);
  const { execFileSync } = await import('node:child_process');
  const url = new URL('../../../stores/sqlite/graph-store.ts', import.meta.url).href;
  const script = `const { SqliteStore } = await import(${JSON.stringify(url)}); const s = SqliteStore.open(${JSON.stringify(path)}); console.log(await s.claim(${JSON.stringify(root)})); await s.close();`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(Number(out.trim()), mine + 1, 'the other process got the next token');
  await t.rejects(store.commit({ upserts: [todo(3, root)], deletes: [], fence: { root, token: mine } }), { code: 'SVC_ERR_FENCED' });
  t.same(await store.get([todo(3, root).id]), []);
});
