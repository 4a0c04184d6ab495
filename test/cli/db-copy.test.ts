// `svc db copy` in process: any backend to any backend through the store interfaces (memory in text
// and object form, SQLite), the checkpoint, and checksums that see through a backend's own forms.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Graph, type AnchorStore, type StoredDoc } from '../../actors/graph/index.ts';
import { MemoryStore } from '../../stores/memory/index.ts';
import { SqliteStore } from '../../stores/sqlite/index.ts';
import { MemoryUsersRepository } from '../../stores/memory/index.ts';
import { SqliteUsersRepository } from '../../stores/sqlite/index.ts';
import { userRecord, type UsersRepository } from '../../actors/identity/index.ts';
import { checkpointPath, copyStores, summarize, type CopySide } from '../../cli/db/copy.ts';
import { canonicalDoc, canonicalJson, SetChecksum } from '../../cli/db/checksum.ts';
import type { StoreLocation } from '../../cli/db/stores.ts';
import { Progress } from '../../cli/progress.ts';
import * as app from '../fixtures/db-app.ts';
import { openGraph } from '../helpers/graph.ts';

const quiet = { write: () => true };
const progress = (label: string, total: number | undefined) => new Progress(label, total, { stream: quiet });

function side(name: string, anchors: AnchorStore, users: UsersRepository): CopySide {
  const location: StoreLocation = { label: name, backend: anchors.kind, uri: undefined, anchorPath: '', usersPath: '', sqliteFiles: [], key: name };
  return { location, anchors, users };
}

/** An API key of `u-ann` (what `fill` keeps). */
const ANN_KEY = { api_key_id: 'a'.repeat(32), user_id: 'u-ann', name: 'ci', key_hash: 'f'.repeat(64), walkers: ['Ingest'], created_at: '2024-02-03T04:05:06.000Z', expires_at: null };

/** A graph of db-app in `anchors`, and users with a token, an API key, a deletion and a revocation in `users`. */
async function fill(anchors: AnchorStore, users: UsersRepository): Promise<void> {
  const g = openGraph({ store: anchors, app });
  await g.graph.spawn('Seed', { n: 3 }, { caller: { rootId: Graph.newRootId() } });
  await g.graph.spawn('Seed', { n: 2 }, { caller: { rootId: Graph.newRootId() } });
  await g.system.shutdown();
  const [first] = (await anchors.scan!(0, 1)).docs;
  await anchors.quarantine((first as StoredDoc).id, 'a test');
  await anchors.addAlias('Old', 'Note');
  const id = (v: string) => ({ type: 'username' as const, value_raw: v, value_normalized: v, verified: false, is_recovery: false });
  for (const name of ['ann', 'ben', 'cid', 'dot']) await users.create(userRecord({ user_id: `u-${name}`, role: 'user', identities: [id(name)], profile: { z: 1, a: { y: [1], b: null } } }));
  await users.putOneTimeToken({ token_hash: 'h', user_id: 'u-ann', kind: 'reset', identity: 'ann', expires_at: 1e13 });
  await users.putApiKey(ANN_KEY);
  // A key of a user deleted later: gone with them, nothing to copy.
  await users.putApiKey({ ...ANN_KEY, api_key_id: 'd'.repeat(32), user_id: 'u-dot', key_hash: 'e'.repeat(64), walkers: null, expires_at: '2030-01-01T00:00:00.000Z' });
  await users.updateAndRevoke('u-ben');
  await users.delete('u-dot');
}

async function docsOf(store: AnchorStore): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let next = 0; ; ) {
    const page = await store.scan!(next, 4);
    if (page.docs.length === 0) return out;
    out.push(...page.docs.map(canonicalDoc));
    next = page.next;
  }
}

t.test('memory (text) → memory (object bodies) → SQLite: equal by checksum and read back, in insertion order', async (t) => {
  const a = side('a', new MemoryStore(), new MemoryUsersRepository());
  await fill(a.anchors, a.users);
  const b = side('b', new MemoryStore({ bodyForm: 'object' }), new MemoryUsersRepository());
  const c = side('c', SqliteStore.open(':memory:'), SqliteUsersRepository.open(':memory:'));
  const dir = t.testdir({});
  const note = (line: string) => t.fail(`no note expected: ${line}`);
  const ab = await copyStores({ from: a, to: b, checkpoint: join(dir, 'ab.json'), progress, note, batch: 3 });
  t.match(ab, { ok: true, resumed: null, copied: { documents: 32 - 1, quarantine: 1, aliases: 1, users: 3, one_time_tokens: 1, api_keys: 1, deleted_users: 1, graph_drops: 1 } });
  const [doc] = (await b.anchors.scan!(0, 1)).docs;
  t.type(doc?.body, 'object', 'the object-form destination got objects');
  const bc = await copyStores({ from: b, to: c, checkpoint: join(dir, 'bc.json'), progress, note, batch: 5 });
  t.equal(bc.ok, true);
  t.same(bc.verified.documents.destination, ab.verified.documents.source, 'the same checksum two hops on');
  t.same(await docsOf(c.anchors), await docsOf(a.anchors), 'the same documents in the same order');
  t.same(await c.users.scanUsers!('', 100), await a.users.scanUsers!('', 100));
  t.same(await c.users.oneTimeTokens!(), await a.users.oneTimeTokens!());
  t.same(await c.users.apiKeys!(), [ANN_KEY], 'the API key, and only the live user’s');
  t.same(await c.users.apiKeyByHash(ANN_KEY.key_hash), ANN_KEY, 'found by its hash at the destination');
  t.same(await c.users.deletedUsers!(), await a.users.deletedUsers!());
  t.same(await c.users.graphDrops!(), await a.users.graphDrops!());
  t.same(await c.anchors.aliases(), [['Old', 'Note']]);
  t.notOk(existsSync(join(dir, 'bc.json')), 'no checkpoint once verified');

  // A change on one side after the copy: the checksum sees it even with the counts equal.
  const [changed] = (await c.anchors.scan!(0, 1)).docs;
  await c.anchors.putDocs!([{ ...(changed as StoredDoc), version: 99 }]);
  const after = await summarize(c, 10, progress, 'verify');
  t.equal(after.documents.count, ab.verified.documents.source.count);
  t.not(after.documents.checksum, ab.verified.documents.source.checksum);
});

t.test('interrupted, then resumed from the checkpoint; a checkpoint of another copy is refused', async (t) => {
  const a = side('a', SqliteStore.open(':memory:'), SqliteUsersRepository.open(':memory:'));
  await fill(a.anchors, a.users);
  const b = side('b', new MemoryStore(), new MemoryUsersRepository());
  const dir = t.testdir({});
  const checkpoint = checkpointPath(dir, a.location, b.location);
  t.match(checkpoint, /\.svc[/\\]db-copy-[0-9a-f]{16}\.json$/);
  const notes: string[] = [];
  await t.rejects(copyStores({ from: a, to: b, checkpoint, progress, note: (l) => notes.push(l), batch: 4, stopAfter: 10 }), { message: /^copy interrupted after \d+ documents/ });
  t.equal(await b.anchors.count(), 10);
  t.ok(existsSync(checkpoint));
  const resumed = await copyStores({ from: a, to: b, checkpoint, progress, note: (l) => notes.push(l), batch: 4 });
  t.match(resumed, { ok: true, resumed: { documents: 10, users: 0 }, copied: { documents: 31 - 10 } });
  t.match(notes, [/resuming the copy from its checkpoint \(10 documents/]);
  t.same(await docsOf(b.anchors), await docsOf(a.anchors), 'in the same order as if never interrupted');

  const other = side('other', new MemoryStore(), new MemoryUsersRepository());
  await t.rejects(copyStores({ from: a, to: other, checkpoint: join(dir, 'x.json'), progress, note: () => undefined, stopAfter: 1 }), { message: /^copy interrupted after \d+ documents/ });
  await t.rejects(copyStores({ from: a, to: b, checkpoint: join(dir, 'x.json'), progress, note: () => undefined }), /is not one of this copy; run with --restart/);
  t.match(await copyStores({ from: a, to: b, checkpoint: join(dir, 'x.json'), progress, note: () => undefined, restart: true }), { ok: true, resumed: null });
});

t.test('SQLite file → SQLite file: API keys survive, and the checksum sees a changed key', async (t) => {
  const dir = t.testdir({});
  const a = side('a', SqliteStore.open(join(dir, 'a.db')), SqliteUsersRepository.open(join(dir, 'a-users.db')));
  await fill(a.anchors, a.users);
  const b = side('b', SqliteStore.open(join(dir, 'b.db')), SqliteUsersRepository.open(join(dir, 'b-users.db')));
  t.teardown(async () => {
    for (const s of [a, b]) {
      await s.anchors.close();
      await s.users.close();
    }
  });
  const report = await copyStores({ from: a, to: b, checkpoint: join(dir, 'ab.json'), progress, note: (l) => t.fail(l) });
  t.match(report, { ok: true, copied: { api_keys: 1 }, verified: { api_keys: { equal: true, source: { count: 1 } } } });
  t.same(await b.users.apiKeysOf('u-ann'), [ANN_KEY]);
  t.equal(await b.users.apiKeyByHash('e'.repeat(64)), undefined, 'the deleted user’s key stays gone');
  t.same(await b.users.byId('u-ann'), await a.users.byId('u-ann'));
  // Copied again: idempotent.
  t.match(await copyStores({ from: a, to: b, checkpoint: join(dir, 'ab.json'), progress, note: (l) => t.fail(l) }), { ok: true, copied: { api_keys: 1 } });
  t.same(await b.users.apiKeys!(), [ANN_KEY]);
  await b.users.putApiKeys!([{ ...ANN_KEY, walkers: ['Ingest', 'More'] }]);
  const after = await summarize(b, 10, progress, 'verify');
  t.equal(after.api_keys.count, report.verified.api_keys.source.count);
  t.not(after.api_keys.checksum, report.verified.api_keys.source.checksum, 'a changed key changes the checksum');
});

t.test('a backend without the copy methods is named, not half-copied', async (t) => {
  const a = side('a', new MemoryStore(), new MemoryUsersRepository());
  const bare = Object.assign(Object.create(null), { kind: 'bare', count: async () => 0 }) as AnchorStore;
  await t.rejects(copyStores({ from: a, to: side('bare', bare, new MemoryUsersRepository()), checkpoint: join(t.testdir({}), 'c.json'), progress, note: () => undefined }), /graph store at bare cannot take part in a copy \(this backend lacks scan, putDocs, putQuarantine\)/);
});

t.test('checksums: canonical JSON sorts keys at every depth; a set sums over any order', async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }], c: undefined } }), '{"a":{"d":[{"x":2,"y":1}]},"b":1}');
  const doc = { id: 'i', root: 'r', kind: 'node', arch_module: 'm', arch_type: 'T', fingerprint: 'f', format_version: 1, version: 1, body: '{"context":{"b":1,"a":2},"access":{"anyone":-1,"roots":{}}}' } as StoredDoc;
  t.same(canonicalDoc(doc), canonicalDoc({ ...doc, source: null, target: null, body: { access: { roots: {}, anyone: -1 }, context: { a: 2, b: 1 } } }), 'text or object body, absent or null ends');
  const one = new SetChecksum();
  const two = new SetChecksum();
  for (const x of [1, 2, 3]) one.add({ x });
  for (const x of [3, 1, 2]) two.add({ x });
  t.equal(one.hex, two.hex);
  t.match(one.hex, /^[0-9a-f]{32}$/);
  two.add({ x: 4 });
  t.not(one.hex, two.hex);
});

t.test('the memory store scans in insertion order; a restored document comes last', async (t) => {
  const store = new MemoryStore();
  const doc = (id: string): StoredDoc => ({ id, root: 'r', kind: 'node', arch_module: 'm', arch_type: 'T', fingerprint: 'f', format_version: 1, version: 1, body: '{}' });
  await store.commit({ upserts: ['a', 'b', 'c'].map(doc), deletes: [] });
  await store.quarantine('a', 'test');
  await store.restore('a');
  const first = await store.scan(0, 2);
  t.same(first.docs.map((d) => d.id), ['b', 'c']);
  t.same((await store.scan(first.next, 2)).docs.map((d) => d.id), ['a']);
  t.same((await store.scan(99, 2)).docs, []);
  t.match(await store.stats(), { documents: 3, nodes: 3, edges: 0, roots: 1, byType: { T: 3 }, quarantined: 0 });
  t.equal(await store.dropQuarantined('a'), false);
});
