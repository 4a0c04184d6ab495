// Schema evolution over any anchor store: a compatible change loads, an incompatible one and a renamed class go
// to quarantine with the reason, and an alias or a code fix brings them back with recover-all.
import type { Test } from 'tap';
import { ActorSystem } from 'svc/kernel';
import { Graph, Node, Registry, T, type AnchorStore } from 'svc';
import * as v1 from '../fixtures/db-app.ts';
import * as v2 from '../fixtures/db-app-v2.ts';

/** v2 with its mistake fixed: `points` takes the old integers and the new strings. */
class Score extends Node {
  static has = T.Object({ points: T.Union([T.Integer(), T.String()]) });
  declare points: number | string;
}
const v3 = { ...v2, Score };

type Reported = { id: string; type: string; context: Record<string, unknown> };

/**
 * The class `from` was renamed in the code: its stored documents carry a name no class of this process has. (v1's
 * Task is still loaded in this test process, so the rename is made in the documents: `Task` → `LegacyTask`.)
 */
async function renameStored(store: AnchorStore, from: string, to: string): Promise<void> {
  if (!store.scan || !store.putDocs) throw new Error(`the ${store.kind} store cannot scan and put documents`);
  for (let after = 0; ; ) {
    const { docs, next } = await store.scan(after, 500);
    if (docs.length === 0) return;
    await store.putDocs(docs.filter((d) => d.arch_type === from).map((d) => ({ ...d, arch_type: to })));
    after = next;
  }
}

async function listAll(graph: Graph, rootId: string): Promise<Reported[]> {
  return (await graph.spawn('ListAll', {}, { caller: { rootId } })).reports as Reported[];
}

/** Run the evolution story on the store `open` gives (one store, opened once, shared by three versions of the app). */
export function schemaEvolution(t: Test, open: () => Promise<AnchorStore>): void {
  t.test('schema evolution: compatible changes load, incompatible ones and renamed classes quarantine, alias + recover-all bring them back', async (t) => {
    const store = await open();
    const systems: ActorSystem[] = [];
    t.teardown(async () => {
      for (const s of systems) await s.shutdown();
      await store.close();
    });
    const version = async (app: Record<string, unknown>) => {
      for (const s of systems) await s.shutdown(); // the earlier version stops: its memory goes
      const system = new ActorSystem();
      systems.push(system);
      const quarantined: { id: string; reason: string }[] = [];
      const graph = await Graph.open({ system, registry: Registry.fromModule(app), store, onQuarantine: (id, reason) => quarantined.push({ id, reason }) });
      return { graph, quarantined };
    };
    const root = Graph.newRootId();

    const one = await version(v1);
    await one.graph.spawn('Seed', { n: 2 }, { caller: { rootId: root } });
    const before = await listAll(one.graph, root);
    t.same(before.map((r) => r.type).sort(), ['Note', 'Note', 'Score', 'Score', 'Task', 'Task']);

    for (const s of systems) await s.shutdown();
    await renameStored(store, 'Task', 'LegacyTask');
    const two = await version(v2);
    const loaded = await listAll(two.graph, root);
    t.same(loaded.map((r) => r.type).sort(), ['Note', 'Note'], 'only what still decodes loads');
    t.same(loaded.map((r) => r.context.pinned), [false, false], 'an added field with a default is filled in');
    // Documents are moved aside in the background of the load: wait until the four are there.
    let aside = await store.quarantined();
    for (let tries = 0; aside.length < 4 && tries < 500; tries++) {
      await new Promise((r) => setTimeout(r, 10));
      aside = await store.quarantined();
    }
    const reasons = aside.map((q) => `${q.arch_type}: ${q.reason}`).sort();
    t.equal(reasons.length, 4, 'renamed and incompatible documents are kept in quarantine');
    t.match(reasons, [/^LegacyTask: unresolvable archetype .*LegacyTask/, /^LegacyTask: unresolvable archetype .*LegacyTask/, /^Score: context does not fit Score/, /^Score: context does not fit Score/]);
    t.equal(two.quarantined.length, 4, 'and reported');

    await two.graph.alias('LegacyTask', 'Chore');
    const afterAlias = await two.graph.recoverAll();
    const taskIds = before.filter((r) => r.type === 'Task').map((r) => r.id).sort();
    t.same(afterAlias.recovered.sort(), taskIds, 'the alias brings the renamed class back');
    t.equal(afterAlias.remaining.length, 2, 'the incompatible ones stay until the code is fixed');
    t.match(afterAlias.remaining, [{ reason: /context does not fit Score/ }, { reason: /context does not fit Score/ }]);
    t.same((await listAll(two.graph, root)).map((r) => r.type).sort(), ['Chore', 'Chore', 'Note', 'Note']);

    const three = await version(v3);
    t.equal(three.graph.registry.resolve('LegacyTask')?.name, 'Chore', 'the alias is kept in the store');
    const afterFix = await three.graph.recoverAll();
    t.equal(afterFix.recovered.length, 2, 'a code fix brings the rest back');
    t.same(afterFix.remaining, []);
    const all = await listAll(three.graph, root);
    t.same(all.map((r) => r.type).sort(), ['Chore', 'Chore', 'Note', 'Note', 'Score', 'Score']);
    t.same(all.filter((r) => r.type === 'Score').map((r) => r.context.points).sort(), [0, 1], 'with their data intact');
    t.same(await store.quarantined(), [], 'the quarantine is empty');
  });
}
