// A READ or CONNECT grant never lets the grantee change the owner's node or edge,
// however the change is made (issue 9, item 2): checked at commit.
import t from 'tap';
import { join } from 'node:path';
import { SqliteStore } from 'svc';
import { newCaller, openGraph } from '../../helpers/graph.ts';
import * as grantApp from '../../fixtures/grant-app.ts';

type Reported = { id: string };
const WAYS = ['push', 'splice', 'key', 'nested', 'edge', 'assign'];

for (const grant of [
  { name: 'allowRoot(n, other, READ)', level: 0, anyone: false },
  { name: 'allowRoot(n, other, CONNECT)', level: 1, anyone: false },
  { name: 'permGrant(n, READ)', level: 0, anyone: true },
]) {
  t.test(`${grant.name}: no change of the owner's node or edge commits, in place or not`, async (t) => {
    const path = join(t.testdir({}), 'anchor_store.db');
    const { graph, close } = openGraph({ app: grantApp, store: SqliteStore.open(path) });
    const [owner, other] = [newCaller(), newCaller()];
    const [box] = (await graph.spawn('MakeShared', { other: other.rootId, level: grant.level, anyone: grant.anyone }, { caller: owner })).reports as Reported[];
    const before = (await graph.spawn('Inspect', {}, { caller: owner, at: box?.id })).reports;
    t.same(before, [{ v: 0, tags: ['a'], any: { k: 'v', nested: { deep: 1 } }, labels: [['l']] }]);
    t.same((await graph.spawn('Inspect', {}, { caller: other, at: box?.id })).reports, before, 'the grantee reads it');
    for (const how of WAYS) {
      await t.rejects(graph.spawn('ChangeInPlace', { how }, { caller: other, at: box?.id }), { code: 'SVC_ERR_ACCESS_DENIED' }, `${how}: refused (403)`);
    }
    t.same((await graph.spawn('Inspect', {}, { caller: owner, at: box?.id })).reports, before, 'the owner sees it unchanged');
    t.same((await graph.spawn('Inspect', {}, { caller: other, at: box?.id })).reports, before, 'so does the grantee');
    await close();
    // As after a kill -9 and restart: what is stored is unchanged too.
    const again = openGraph({ app: grantApp, store: SqliteStore.open(path) });
    t.teardown(again.close);
    t.same((await again.graph.spawn('Inspect', {}, { caller: owner, at: box?.id })).reports, before, 'nothing was stored');
  });
}

t.test('with WRITE the same in-place changes commit', async (t) => {
  const { graph, close } = openGraph({ app: grantApp, store: SqliteStore.open(join(t.testdir({}), 'anchor_store.db')) });
  t.teardown(close);
  const [owner, other] = [newCaller(), newCaller()];
  const [box] = (await graph.spawn('MakeShared', { other: other.rootId, level: 2 }, { caller: owner })).reports as Reported[];
  for (const how of WAYS) t.same((await graph.spawn('ChangeInPlace', { how }, { caller: other, at: box?.id })).reports, [true], `${how}: allowed`);
  t.same((await graph.spawn('Inspect', {}, { caller: owner, at: box?.id })).reports, [
    { v: 99, tags: ['pushed'], any: { k: 'changed', nested: { deep: 2 } }, labels: [['l', 'pushed']] },
  ]);
});

t.test('the owner of an end still removes an edge of another root that touches its node', async (t) => {
  const { graph, close } = openGraph({ app: grantApp });
  t.teardown(close);
  const [a, b] = [newCaller(), newCaller()];
  const [boxB] = (await graph.spawn('MakeBox', { other: a.rootId, level: 1 }, { caller: b })).reports as Reported[];
  const [note] = (await graph.spawn('LinkNote', {}, { caller: a, at: boxB?.id })).reports as Reported[];
  t.same((await graph.spawn('CountEdges', {}, { caller: b, at: boxB?.id })).reports, [2], 'B’s box: its root edge and A’s link');
  t.same((await graph.spawn('DestroyBox', {}, { caller: b, at: boxB?.id })).reports, [true], 'B destroys its box, A’s edge to it goes too');
  t.same((await graph.spawn('CountEdges', {}, { caller: a, at: note?.id })).reports, [1], 'A’s note keeps only its root edge');
});
