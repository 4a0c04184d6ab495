/**
 * `findNodes`: the graph's nodes of a class whose fields match a filter, read
 * from the store of this thread's graph and checked as a walker's reads are.
 *
 * Candidates come from a scan of the store (committed documents of the class
 * and its subclasses, matched on their stored fields); inside a run they are
 * then loaded through the run — the caller's access checked, the current
 * (maybe changed in this run) values matched again — so the nodes returned
 * are the run's own. Outside any run they are read-only copies of every
 * match, and only when the caller says so (`allRoots`): a call that lost its
 * run (a timer, a queue) must not fall back to every user's nodes. When
 * the calling run cannot be told apart (runs of this thread started before
 * the first `kvstore` handle, hence untracked, are still going), it refuses
 * rather than guess: `SVC_ERR_NOT_IN_RUN`.
 *
 * The scan reads every document of the graph: fine for thousands of nodes; for
 * a query over millions keep an index of your own in a docdb collection.
 */
import { decode } from '../graph/index.ts';
import { ANCHOR, type Anchor, type ArchetypeClass, callingRun, graphError, type Node, viewOf, WalkerRun } from '../walker/index.ts';
import { kvstoreError } from './kvstore-errors.ts';
import type { Filter } from './kvstore-types.ts';
import { dataBinding } from './binding.ts';

const PAGE = 1000;

export async function findNodes(cls: ArchetypeClass, filter: Filter, matches: (doc: Record<string, unknown>, filter: Filter) => boolean, allRoots: boolean): Promise<Node[]> {
  const graph = dataBinding().graph;
  if (graph === undefined) throw kvstoreError('NOT_IMPLEMENTED', "findNodes reads the graph of a running app (svc start, or testApp): there is none in this thread");
  const scan = graph.store.scan?.bind(graph.store);
  if (scan === undefined) throw kvstoreError('NOT_IMPLEMENTED', `findNodes: the ${graph.store.kind} store cannot be scanned`);
  const calling = callingRun();
  if (calling === undefined) {
    throw graphError('SVC_ERR_NOT_IN_RUN', 'findNodes cannot tell which walker run called it (runs that started before the first kvstore handle are still going); create kvstore handles at module load, or retry');
  }
  const run = calling.run;
  if (run === undefined && !allRoots) {
    throw graphError('SVC_ERR_NOT_IN_RUN', "findNodes outside a walker run would read every user's nodes: pass { allRoots: true } to mean it (from a walker, await it inside the ability)");
  }
  if (run !== undefined && (!(run instanceof WalkerRun) || !run.isOpen)) {
    throw graphError('SVC_ERR_NOT_IN_RUN', 'findNodes was called after its walker run ended; await it inside the ability');
  }
  const types = new Set<string>();
  for (const [name, c] of graph.registry.archetypes) if (c === cls || c.prototype instanceof cls) types.add(name);
  const found: Anchor[] = [];
  let after = 0;
  for (;;) {
    const { docs, next } = await scan(after, PAGE);
    for (const doc of docs) {
      if (doc.kind !== 'node' || !types.has(doc.arch_type)) continue;
      const decoded = decode(doc, graph.registry);
      if ('anchor' in decoded && matches(decoded.anchor.data, filter)) found.push(decoded.anchor);
    }
    if (docs.length < PAGE || next === after) break;
    after = next;
  }
  if (run === undefined) {
    // Read-only: a home with no run refuses every change.
    const home = { currentRun: null };
    return found.map((a) => {
      a.home = home;
      return viewOf<Node>(a);
    });
  }
  const nodes = await run.readableNodes(found.map((a) => a.id));
  return nodes.filter((n) => matches((n as unknown as { [ANCHOR]: Anchor })[ANCHOR].data, filter));
}
