// The conformance suite every anchor store passes (memory, SQLite, PostgreSQL, MongoDB).
import type { Test } from 'tap';
import { type AnchorStore, CommitChain, type StoredDoc } from '../../actors/graph/index.ts';

let n = 0;
function doc(overrides: Partial<StoredDoc> = {}): StoredDoc {
  n++;
  const id = (n.toString(16).padStart(8, '0') + 'abcdef0123456789abcdef01').slice(0, 32);
  return {
    id,
    root: 'r'.repeat(32),
    kind: 'node',
    arch_module: 'app',
    arch_type: 'Todo',
    fingerprint: '0123456789abcdef',
    format_version: 1,
    version: 1,
    body: JSON.stringify({ access: { anyone: -1, roots: {} }, context: { title: `t${n}` }, edges: [] }),
    ...overrides,
  };
}

function bodyOf(d: StoredDoc | undefined): Record<string, unknown> {
  return (typeof d?.body === 'string' ? JSON.parse(d.body) : d?.body) as Record<string, unknown>;
}

/**
 * @param probe.claims whether the store takes ownership claims and fences (`claim`);
 *   the claim and fence tests are skipped for one that does not
 */
export function storeConformance(t: Test, open: () => Promise<AnchorStore>, probe: { claims?: boolean } = { claims: true }): void {
  t.test('get of unknown ids finds nothing', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    t.same(await store.get(['f'.repeat(32)]), []);
    t.same(await store.get([]), []);
  });

  t.test('a committed document comes back whole, with arch_module, arch_type, fingerprint, format_version, version', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const d = doc();
    await store.commit({ upserts: [d], deletes: [] });
    const [got] = await store.get([d.id]);
    t.match(got, { id: d.id, root: d.root, kind: 'node', arch_module: 'app', arch_type: 'Todo', fingerprint: d.fingerprint, format_version: 1, version: 1 });
    t.same(bodyOf(got), bodyOf(d));
    t.equal(await store.count(), 1);
  });

  t.test('versions: an update needs the previous version; a stale one is SVC_ERR_CONFLICT', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const d = doc();
    await store.commit({ upserts: [d], deletes: [] });
    await store.commit({ upserts: [{ ...d, version: 2 }], deletes: [] });
    await t.rejects(store.commit({ upserts: [{ ...d, version: 2 }], deletes: [] }), { code: 'SVC_ERR_CONFLICT' });
    await t.rejects(store.commit({ upserts: [{ ...d, version: 1 }], deletes: [] }), { code: 'SVC_ERR_CONFLICT' }, 'creating an id that exists');
    t.equal((await store.get([d.id]))[0]?.version, 2);
  });

  t.test('a batch is all or nothing', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const a = doc();
    const b = doc();
    await store.commit({ upserts: [a], deletes: [] });
    const fresh = doc();
    await t.rejects(store.commit({ upserts: [fresh, { ...a, version: 3 }], deletes: [] }), { code: 'SVC_ERR_CONFLICT' });
    t.same(await store.get([fresh.id]), [], 'the good half was not applied');
    await store.commit({ upserts: [b, { ...a, version: 2 }], deletes: [] });
    t.equal((await store.get([a.id, b.id])).length, 2);
  });

  t.test('delete checks the version; deleting what is gone is fine', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const d = doc();
    await store.commit({ upserts: [d], deletes: [] });
    await t.rejects(store.commit({ upserts: [], deletes: [{ id: d.id, version: 7 }] }), { code: 'SVC_ERR_CONFLICT' });
    await store.commit({ upserts: [], deletes: [{ id: d.id, version: 1 }] });
    t.same(await store.get([d.id]), []);
    await store.commit({ upserts: [], deletes: [{ id: d.id, version: 1 }] });
    t.equal(await store.count(), 0);
  });

  t.test('commits in one tick: each applied or failed on its own', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const docs = Array.from({ length: 50 }, () => doc());
    const stale = doc();
    const results = await Promise.allSettled([
      ...docs.map((d) => store.commit({ upserts: [d], deletes: [] })),
      store.commit({ upserts: [{ ...stale, version: 5 }], deletes: [] }),
    ]);
    t.equal(results.filter((r) => r.status === 'fulfilled').length, 50);
    t.match(results[50], { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } });
    t.equal((await store.get(docs.map((d) => d.id))).length, 50);
  });

  t.test('a chain: once a batch fails, every later batch of its chain is refused and not applied', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const mine = doc();
    const theirs = doc();
    await store.commit({ upserts: [mine, theirs], deletes: [] });
    await store.commit({ upserts: [{ ...theirs, version: 2 }], deletes: [] }); // another writer moves on
    const chain = new CommitChain();
    const other = new CommitChain();
    const fresh = doc();
    const unrelated = doc();
    // Handed over in one go (pipelined): N fails on `theirs`; N+1 was built on N's memory.
    const [n, n1, elsewhere] = await Promise.allSettled([
      store.commit({ upserts: [{ ...mine, version: 2 }, { ...theirs, version: 2 }], deletes: [], chain }),
      store.commit({ upserts: [{ ...mine, version: 3 }, fresh], deletes: [], chain }),
      store.commit({ upserts: [unrelated], deletes: [], chain: other }),
    ]);
    t.match(n, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } }, 'the failing batch');
    t.match(n1, { status: 'rejected', reason: { code: 'SVC_ERR_CONFLICT' } }, 'the batch after it, though its versions would pass');
    t.equal(elsewhere.status, 'fulfilled', 'another chain is not held up');
    t.equal((await store.get([mine.id]))[0]?.version, 1, 'nothing of N or N+1 was applied');
    t.same(await store.get([fresh.id]), []);
    t.ok(chain.broken, 'the chain says why it broke');
    // Handed over later, still refused; a new chain (a restarted writer) is not.
    await t.rejects(store.commit({ upserts: [doc()], deletes: [], chain }), { code: 'SVC_ERR_CONFLICT' });
    await store.commit({ upserts: [{ ...mine, version: 2 }], deletes: [], chain: new CommitChain() });
    t.equal((await store.get([mine.id]))[0]?.version, 2);
  });

  t.test('claim: each claim of a root increments its owner token, from 1', { skip: !probe.claims }, async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const root = 'c'.repeat(32);
    t.equal(await store.claim!(root), 1, 'the first claim');
    t.equal(await store.claim!(root), 2);
    t.equal(await store.claim!('d'.repeat(32)), 1, 'tokens are per root');
    t.equal(await store.claim!(root), 3);
  });

  t.test('fence: a batch is applied only under the current owner token; an old one is SVC_ERR_FENCED and nothing is applied', { skip: !probe.claims }, async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const root = 'e'.repeat(32);
    const a = doc({ root });
    await t.rejects(store.commit({ upserts: [a], deletes: [], fence: { root, token: 1 } }), { code: 'SVC_ERR_FENCED', status: 503 }, 'a root never claimed has token 0');
    const mine = await store.claim!(root);
    await store.commit({ upserts: [a], deletes: [], fence: { root, token: mine } });
    t.equal((await store.get([a.id])).length, 1, 'the current token commits');
    const theirs = await store.claim!(root); // another process takes the root over
    const fresh = doc({ root });
    await t.rejects(store.commit({ upserts: [fresh, { ...a, version: 2 }], deletes: [], fence: { root, token: mine } }), { code: 'SVC_ERR_FENCED' });
    t.same(await store.get([fresh.id]), [], 'a document nobody else touched is not written either');
    t.equal((await store.get([a.id]))[0]?.version, 1, 'nor an update');
    await t.rejects(store.commit({ upserts: [], deletes: [{ id: a.id, version: 1 }], fence: { root, token: mine } }), { code: 'SVC_ERR_FENCED' });
    t.equal((await store.get([a.id])).length, 1, 'nor a deletion');
    await store.commit({ upserts: [{ ...a, version: 2 }], deletes: [], fence: { root, token: theirs } });
    t.equal((await store.get([a.id]))[0]?.version, 2, 'the new owner commits');
    await store.commit({ upserts: [doc()], deletes: [] }); // no fence: not checked
  });

  t.test('fence: past its `until` (the writer\'s lease lapsed while the batch waited) a batch is SVC_ERR_FENCED, breaks its chain, and nothing is applied', { skip: !probe.claims }, async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const root = '9'.repeat(32);
    const token = await store.claim!(root);
    const a = doc({ root });
    await store.commit({ upserts: [a], deletes: [], fence: { root, token, until: Date.now() + 60_000 } });
    t.equal((await store.get([a.id])).length, 1, 'within its until, the owner commits');
    const chain = new CommitChain();
    const late = doc({ root });
    await t.rejects(store.commit({ upserts: [late, { ...a, version: 2 }], deletes: [], chain, fence: { root, token, until: Date.now() - 1 } }), { code: 'SVC_ERR_FENCED', status: 503 });
    t.same(await store.get([late.id]), [], 'nothing of it is written');
    t.equal((await store.get([a.id]))[0]?.version, 1, 'nor an update');
    await t.rejects(store.commit({ upserts: [doc({ root })], deletes: [], chain, fence: { root, token } }), 'the batches after it on its chain are refused too');
  });

  t.test('fence: a fenced batch breaks its chain; the later batches are refused and not applied', { skip: !probe.claims }, async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const root = 'f'.repeat(32);
    const old = await store.claim!(root);
    const chain = new CommitChain();
    const first = doc({ root });
    await store.commit({ upserts: [first], deletes: [], chain, fence: { root, token: old } });
    await store.claim!(root);
    const n = doc({ root });
    const n1 = doc({ root });
    const other = doc();
    // Pipelined: N is fenced; N+1 was built on N's memory; another chain goes on.
    const [rn, rn1, elsewhere] = await Promise.allSettled([
      store.commit({ upserts: [n], deletes: [], chain, fence: { root, token: old } }),
      store.commit({ upserts: [n1], deletes: [], chain }),
      store.commit({ upserts: [other], deletes: [], chain: new CommitChain() }),
    ]);
    t.match(rn, { status: 'rejected', reason: { code: 'SVC_ERR_FENCED' } });
    t.match(rn1, { status: 'rejected', reason: { code: 'SVC_ERR_FENCED' } }, 'refused: the writer lost the graph');
    t.equal(elsewhere.status, 'fulfilled');
    t.match(chain.broken, { code: 'SVC_ERR_FENCED' });
    t.same(await store.get([n.id, n1.id]), [], 'nothing of N or N+1 was applied');
    await t.rejects(store.commit({ upserts: [doc({ root })], deletes: [], chain }), { code: 'SVC_ERR_FENCED' }, 'handed over later, still refused');
  });

  t.test('deleteRoot keeps the root’s owner token counting up (a late writer of the deleted graph stays fenced)', { skip: !probe.claims }, async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const root = '9'.repeat(32);
    await store.claim!(root);
    const old = await store.claim!(root);
    await store.commit({ upserts: [doc({ root })], deletes: [] });
    t.equal(await store.deleteRoot(root), 1, 'counts documents only');
    t.equal(await store.claim!(root), old + 1, 'tokens only go up');
    await t.rejects(store.commit({ upserts: [doc({ root, id: 'f'.repeat(32) })], deletes: [], fence: { root, token: old } }), { code: 'SVC_ERR_FENCED' });
  });

  t.test('quarantine moves a document aside, keeps it, and restore brings it back', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    // Valid JSON that does not decode (a store of JSON values could not even hold broken text).
    const d = doc({ body: '{"broken":true}' });
    await store.commit({ upserts: [d], deletes: [] });
    await store.quarantine(d.id, 'corrupt body');
    t.same(await store.get([d.id]), []);
    const q = await store.quarantined();
    t.equal(q.length, 1);
    t.match(q[0], { id: d.id, reason: 'corrupt body', arch_type: 'Todo' });
    t.same(bodyOf(q[0]), { broken: true }, 'the body is kept');
    t.ok(await store.restore(d.id));
    t.equal((await store.get([d.id])).length, 1);
    t.same(await store.quarantined(), []);
    t.notOk(await store.restore(d.id), 'nothing left to restore');
  });

  t.test('deleteRoot removes every document of a root, and only those', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    const gone = 'a'.repeat(32);
    const kept = 'b'.repeat(32);
    const mine = [doc({ root: gone }), doc({ root: gone }), doc({ root: gone, kind: 'edge', source: 'x', target: 'y' })];
    const theirs = doc({ root: kept });
    await store.commit({ upserts: [...mine, theirs], deletes: [] });
    const bad = doc({ root: gone, body: '{"broken":true}' });
    await store.commit({ upserts: [bad], deletes: [] });
    await store.quarantine(bad.id, 'corrupt');
    t.equal(await store.deleteRoot(gone), 4, 'three documents and one in quarantine');
    t.same(await store.get(mine.map((d) => d.id)), []);
    t.same(await store.quarantined(), []);
    t.equal((await store.get([theirs.id])).length, 1, 'another root keeps its own');
    t.equal(await store.deleteRoot(gone), 0);
  });

  t.test('aliases are stored', async (t) => {
    const store = await open();
    t.teardown(() => store.close());
    await store.addAlias('app.OldTodo', 'app.Todo');
    t.same(await store.aliases(), [['app.OldTodo', 'app.Todo']]);
  });

  t.test('a closed store refuses with SVC_ERR_STORE', async (t) => {
    const store = await open();
    await store.close();
    await t.rejects(async () => store.get(['x']), { code: 'SVC_ERR_STORE' });
  });
}
