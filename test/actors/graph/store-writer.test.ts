// One writer per process: a worker's store reads through its own read-only connection and hands writes to the main thread's writer.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorSystem } from 'svc/kernel';
import { type AnchorStore, CommitChain, ForwardingStore, serveStoreWriter, STORE_WRITER_ACTOR, type StoredDoc } from '../../../actors/graph/index.ts';
import { MemoryStore } from '../../../stores/memory/index.ts';
import { SqliteStore } from '../../../stores/sqlite/index.ts';
import { storeConformance } from '../../conformance/anchor-store.ts';
import { MemoryNet } from '../../helpers/memory-transport.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-writer-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A main thread serving the writer and `workers` threads with forwarding stores, over one file. */
function processWith(workers: number) {
  const path = join(dir, `s${n++}`, 'anchor_store.db');
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('p/main') });
  const writer = SqliteStore.open(path);
  serveStoreWriter(main, writer);
  const threads = Array.from({ length: workers }, (_, i) => new ActorSystem({ transport: net.transport(`p/w${i + 1}`) }));
  const stores = threads.map(
    (system) => new ForwardingStore(SqliteStore.open(path, { readOnly: true }), system.refFromAddress({ node: 'p/main', path: `/user/${STORE_WRITER_ACTOR}` }), { node: system.nodeId }),
  );
  const shutdown = async () => {
    for (const s of [...threads, main]) await s.shutdown();
    await writer.close();
  };
  const close = async () => {
    for (const s of stores) await s.close();
    await shutdown();
  };
  return { stores, writer, close, shutdown };
}

t.test('a forwarding store passes the store conformance suite', async (t) => {
  storeConformance(t, async () => {
    const p = processWith(1);
    const store = p.stores[0] as ForwardingStore;
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await p.shutdown();
    };
    return store;
  });
});

function doc(id: string, version = 1, title = 't'): StoredDoc {
  return {
    id: id.padEnd(32, '0'),
    root: 'r'.repeat(32),
    kind: 'node',
    arch_module: 'app',
    arch_type: 'Todo',
    fingerprint: 'f'.repeat(16),
    format_version: 1,
    version,
    body: JSON.stringify({ access: {}, context: { title } }),
  };
}

t.test('two threads write through one writer: a stale write from either is a conflict, a chain broken on one side stays broken', async (t) => {
  const p = processWith(2);
  t.teardown(p.close);
  const [a, b] = p.stores as [ForwardingStore, ForwardingStore];
  await a.commit({ upserts: [doc('aa')], deletes: [] });
  t.equal((await b.get([doc('aa').id]))[0]?.version, 1, 'the other thread reads it at once');
  const chain = new CommitChain();
  // Both threads race the same version 2: one wins.
  const results = await Promise.allSettled([a.commit({ upserts: [doc('aa', 2, 'from a')], deletes: [], chain }), b.commit({ upserts: [doc('aa', 2, 'from b')], deletes: [] })]);
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'one of the two writes won');
  if (results[0]?.status === 'rejected') {
    t.match(results[0].reason, { code: 'SVC_ERR_CONFLICT' });
    await t.rejects(a.commit({ upserts: [doc('bb')], deletes: [], chain }), { code: 'SVC_ERR_CONFLICT' }, 'later batches of the chain are refused');
    t.same(await a.get([doc('bb').id]), [], 'and not applied');
  } else {
    t.match((results[1] as PromiseRejectedResult).reason, { code: 'SVC_ERR_CONFLICT' });
  }
  // Pipelined batches of one chain: the first fails at the writer, the second (sent before the answer) is refused there.
  const chain2 = new CommitChain();
  const first = a.commit({ upserts: [doc('aa', 9)], deletes: [], chain: chain2 });
  const second = a.commit({ upserts: [doc('cc')], deletes: [], chain: chain2 });
  await t.rejects(first, { code: 'SVC_ERR_CONFLICT' });
  await t.rejects(second, { code: 'SVC_ERR_CONFLICT' });
  t.same(await b.get([doc('cc').id]), [], 'the refused batch was not applied');
  t.equal(await p.writer.count(), 1);
});

t.test('the writer refuses a batch that does not follow the last one of its chain (one lost on the way)', async (t) => {
  const path = join(dir, `gap${n++}`, 'anchor_store.db');
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('p/main') });
  const writer = SqliteStore.open(path);
  t.teardown(async () => {
    await main.shutdown();
    await writer.close();
  });
  const ref = serveStoreWriter(main, writer);
  await ref.ask({ t: 'commit', upserts: [doc('d1')], deletes: [], chain: 'c', seq: 1 });
  // seq 2 never arrived: 3 is refused, and so is everything after on that chain.
  await t.rejects(ref.ask({ t: 'commit', upserts: [doc('d3')], deletes: [], chain: 'c', seq: 3 }), { code: 'SVC_ERR_CONFLICT' });
  await t.rejects(ref.ask({ t: 'commit', upserts: [doc('d4')], deletes: [], chain: 'c', seq: 2 }), { code: 'SVC_ERR_CONFLICT' });
  await t.rejects(ref.ask({ t: 'commit', upserts: [doc('d5')], deletes: [], chain: 'unknown', seq: 4 }), { code: 'SVC_ERR_CONFLICT' }, 'an unknown chain past its first batch');
  t.equal(await writer.count(), 1, 'none of the refused batches was applied');
});

t.test('claims and fences go through the writer: a claim from one thread fences the other’s batches', async (t) => {
  const p = processWith(2);
  t.teardown(p.close);
  const [a, b] = p.stores as [ForwardingStore, ForwardingStore];
  const root = 'r'.repeat(32);
  const tokenA = await a.claim(root);
  t.equal(tokenA, 1);
  const chain = new CommitChain();
  await a.commit({ upserts: [doc('f1')], deletes: [], chain, fence: { root, token: tokenA } });
  const tokenB = await b.claim(root);
  t.equal(tokenB, 2, 'counted by the one writer');
  t.equal(await p.writer.claim(root), 3, 'and stored in its file');
  // Pipelined after the claim: the first is fenced at the writer, the second refused with it.
  const first = a.commit({ upserts: [doc('f2')], deletes: [], chain, fence: { root, token: tokenA } });
  const second = a.commit({ upserts: [doc('f3')], deletes: [], chain, fence: { root, token: tokenA } });
  await t.rejects(first, { code: 'SVC_ERR_FENCED', status: 503 });
  await t.rejects(second, { code: 'SVC_ERR_FENCED' });
  t.match(chain.broken, { code: 'SVC_ERR_FENCED' }, 'this side’s chain is broken too');
  t.same(await b.get([doc('f2').id, doc('f3').id]), [], 'nothing of them was stored');
  await b.commit({ upserts: [doc('f4')], deletes: [], fence: { root, token: 3 } });
  t.equal((await a.get([doc('f4').id])).length, 1, 'the current token commits');
});

t.test('a writer whose store cannot claim refuses claims', async (t) => {
  const net = new MemoryNet();
  const main = new ActorSystem({ transport: net.transport('p/main') });
  const worker = new ActorSystem({ transport: net.transport('p/w1') });
  const inner = new MemoryStore();
  const bare: AnchorStore = Object.assign(Object.create(inner) as AnchorStore, { claim: undefined });
  serveStoreWriter(main, bare);
  const store = new ForwardingStore(inner, worker.refFromAddress({ node: 'p/main', path: `/user/${STORE_WRITER_ACTOR}` }));
  t.teardown(async () => {
    await worker.shutdown();
    await main.shutdown();
  });
  await t.rejects(store.claim('r'.repeat(32)), { code: 'SVC_ERR_STORE' });
});
