import { ActorSystem, type Clock } from 'svc/kernel';
import { Graph, MemoryStore, Registry, type AnchorStore } from 'svc';
import * as todoApp from '../fixtures/todo-app.ts';

export interface TestGraph {
  graph: Graph;
  system: ActorSystem;
  store: AnchorStore;
  quarantined: { id: string; reason: string }[];
  close(): Promise<void>;
}

/** A graph over the todo fixture app (memory store unless one is given). */
export function openGraph(options: { store?: AnchorStore; app?: Record<string, unknown>; idleAfterMs?: number; clock?: Clock; runTimeoutMs?: number } = {}): TestGraph {
  const system = new ActorSystem(options.clock ? { clock: options.clock } : {});
  const store = options.store ?? new MemoryStore();
  const quarantined: { id: string; reason: string }[] = [];
  const graph = new Graph({
    system,
    registry: Registry.fromModule(options.app ?? todoApp),
    store,
    idleAfterMs: options.idleAfterMs,
    runTimeoutMs: options.runTimeoutMs,
    onQuarantine: (id, reason) => quarantined.push({ id, reason }),
  });
  return {
    graph,
    system,
    store,
    quarantined,
    async close() {
      await system.shutdown();
      await store.close();
    },
  };
}

/** A caller with a fresh root. */
export function newCaller(): { rootId: string } {
  return { rootId: Graph.newRootId() };
}
