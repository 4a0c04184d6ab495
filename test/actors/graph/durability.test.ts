// An acknowledged write survives kill -9, and nothing is half-written.
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ActorSystem } from 'svc/kernel';
import { Graph, Registry, SqliteStore } from 'svc';
import * as app from '../../fixtures/todo-app.ts';

const child = new URL('../../fixtures/durability-child.ts', import.meta.url).pathname;

for (let round = 0; round < 3; round++) {
  t.test(`round ${round + 1}: SIGKILL at a random moment loses no acknowledged commit`, async (t) => {
    const path = join(t.testdir({}), 'anchor_store.db');
    const rootId = Graph.newRootId();
    const killAfter = 50 + Math.floor(Math.random() * 400);
    const proc = spawn(process.execPath, ['--import', 'tsx', child, path, rootId], { stdio: ['ignore', 'pipe', 'inherit'] });
    const todos = new Set<string>();
    let maxCount = 0;
    let acks = 0;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_code, signal) => resolve(signal)));
    for await (const line of createInterface({ input: proc.stdout })) {
      if (line.startsWith('todo ')) todos.add(line.slice(5));
      else if (line.startsWith('count ')) maxCount = Math.max(maxCount, Number(line.slice(6)));
      // Past the threshold, the kill lands a random moment later, while commits are in flight.
      if (++acks === killAfter) setTimeout(() => proc.kill('SIGKILL'), Math.random() * 5);
    }
    t.equal(await exited, 'SIGKILL');
    t.ok(acks >= killAfter, `${acks} acknowledged before the kill landed`);

    const store = SqliteStore.open(path);
    const quarantined: string[] = [];
    const system = new ActorSystem();
    const graph = new Graph({ system, registry: Registry.fromModule(app), store, onQuarantine: (id) => quarantined.push(id) });
    t.teardown(async () => {
      await system.shutdown();
      await store.close();
    });
    const listed = (await graph.spawn('ListTodos', {}, { caller: { rootId } })).reports as { context: { title: string; tags: string[] } }[];
    const present = new Set(listed.map((r) => r.context.title.slice(5)));
    const lost = [...todos].filter((n) => !present.has(n));
    t.same(lost, [], `all ${todos.size} acknowledged todos are there (${present.size} in all)`);
    for (const r of listed) {
      const n = r.context.title.slice(5);
      if (r.context.tags.length !== 20 || r.context.tags.some((tag, i) => tag !== `tag${i}-${n}`)) t.fail(`todo ${n} is half-written`);
    }
    const [count] = (await graph.spawn('Increment', { by: 0 }, { caller: { rootId } })).reports as number[];
    t.ok((count ?? 0) >= maxCount, `counter ${count} ≥ last acknowledged ${maxCount}`);
    t.same(quarantined, [], 'every document decodes');
  });
}
