/**
 * What runs inside the sandbox child of `run_svc` and `graph_visualize`: the
 * user's module (already imported: its top-level code has run), a graph on
 * the in-memory store, then the entry point — a walker spawned at the root,
 * or a function called — whose reports or return value go to stdout as JSON.
 * `graph_visualize` then walks the graph from the root and writes it to the
 * file it was given (not stdout, which is the program's own output).
 */
import { writeFileSync } from 'node:fs';
import { Graph } from '../actors/graph/index.ts';
import { MemoryStore } from '../stores/memory/index.ts';
import { Registry, TRAVERSE_WALKER, type Traversal } from '../actors/walker/index.ts';
import { ActorSystem } from '../kernel/index.ts';

/** What the parent asks (`request.json` in the run's folder). */
export interface SandboxRequest {
  entrypoint?: string;
  /** The entry point's fields (a walker) or arguments (a function). */
  args?: Record<string, unknown>;
  /** Walk the graph afterwards and write it here. */
  graphFile?: string;
  depth?: number;
  nodeLimit?: number;
}

/** The root of the run (one user's graph; the module sees no other). */
const ROOT = '5c0f'.padEnd(32, '0');

/**
 * Run the entry point of `app` and, when asked, write the graph.
 * @example await runSandbox(await import('./main.ts'), { entrypoint: 'Main' })
 */
export async function runSandbox(app: Record<string, unknown>, request: SandboxRequest): Promise<void> {
  const registry = Registry.fromModule(app);
  const system = new ActorSystem();
  const graph = new Graph({ system, registry, store: new MemoryStore() });
  const caller = { rootId: ROOT, userId: 'sandbox', role: 'user' };
  // No entry point named: `Main` or `main` if the module has one (the module's "entry block"); else its top level was all.
  const entry = request.entrypoint ?? ['Main', 'main'].find((n) => registry.walker(n) !== undefined || registry.fn(n) !== undefined);
  if (entry !== undefined) {
    if (registry.walker(entry)) {
      const { reports } = await graph.spawn(entry, request.args ?? {}, { caller });
      process.stdout.write(`${JSON.stringify(reports)}\n`);
    } else if (registry.fn(entry)) {
      const { result } = await graph.call(entry, request.args ?? {}, { caller });
      process.stdout.write(`${JSON.stringify(result)}\n`);
    } else {
      throw new Error(`the module exports no walker or function named ${entry}`);
    }
  }
  if (request.graphFile) {
    const depth = request.depth === undefined || request.depth < 0 ? 100 : Math.min(request.depth, 100);
    const { reports } = await graph.spawn(TRAVERSE_WALKER, { depth, detailed: true, limit: Math.max(1, request.nodeLimit ?? 512) }, { caller });
    writeFileSync(request.graphFile, JSON.stringify(reports[0] as Traversal));
  }
}
