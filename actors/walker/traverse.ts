/**
 * The graph as the caller may see it: a breadth-first walk along outgoing
 * edges from a node (the caller's root by default), bounded by depth and by a
 * number of nodes. It is a walker of the runtime's own ({@link TRAVERSE_WALKER},
 * a name no export can take), run in the caller's partition like any other:
 * it sees exactly what a walker of the caller would (its own graph, nodes
 * others granted it, never the rest), and spawning it at a node the caller
 * may not read answers 404. Serves `POST /traverse` and `GET /graph/data`.
 */
import { Type } from 'typebox';
import { entry } from './abilities.ts';
import { type Edge, Node } from './archetype.ts';
import { Walker } from './walker.ts';

/** The registry name of the traversal walker (not an identifier: no app export can shadow it, and no route serves it). */
export const TRAVERSE_WALKER = 'svc:traverse';

/** Most nodes one traversal answers. */
export const TRAVERSE_MAX_NODES = 10_000;

export interface TraversedNode {
  id: string;
  type: string;
  /** Its fields (with `detailed`). */
  context?: Record<string, unknown>;
}

export interface TraversedEdge extends TraversedNode {
  source: string;
  target: string;
}

/** What a traversal reports (its only report). */
export interface Traversal {
  /** The node it started at. */
  source: string;
  depth: number;
  /** In breadth-first order; the start node first. */
  nodes: TraversedNode[];
  /** Edges between the nodes listed, each once. */
  edges: TraversedEdge[];
  /** The node limit cut the walk short. */
  truncated: boolean;
  /** Listed nodes whose outgoing edges were not followed (the depth or the limit reached them): traverse from one to see further. */
  frontier: string[];
}

export class TraverseWalker extends Walker {
  static has = Type.Object({
    depth: Type.Integer({ minimum: 0, maximum: 100, default: 1 }),
    detailed: Type.Boolean({ default: false }),
    node_types: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100, default: [] }),
    edge_types: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100, default: [] }),
    limit: Type.Integer({ minimum: 1, maximum: TRAVERSE_MAX_NODES, default: 1000 }),
  });
  declare depth: number;
  declare detailed: boolean;
  declare node_types: string[];
  declare edge_types: string[];
  declare limit: number;

  @entry(Node)
  async walk(start: Node): Promise<void> {
    const nodeTypes = this.node_types.length > 0 ? new Set(this.node_types) : undefined;
    const edgeTypes = this.edge_types.length > 0 ? new Set(this.edge_types) : undefined;
    const view = (a: Node | Edge): TraversedNode => {
      const json = a.toJSON();
      return this.detailed ? json : { id: json.id, type: json.type };
    };
    const nodes: TraversedNode[] = [view(start)];
    const edges: TraversedEdge[] = [];
    const listed = new Set([start.id]);
    const seenEdges = new Set<string>();
    const frontier = new Set<string>();
    let truncated = false;
    let level: Node[] = [start];
    for (let d = 0; d < this.depth && level.length > 0 && !truncated; d++) {
      const next: Node[] = [];
      for (let i = 0; i < level.length; i++) {
        const here = level[i] as Node;
        if (truncated) {
          frontier.add(here.id);
          continue;
        }
        // Both lists hold only what this caller may read.
        const [out, targets] = await Promise.all([here.outEdges(), here.out()]);
        const byId = new Map(targets.map((n) => [n.id, n]));
        for (const e of out) {
          if (edgeTypes && !edgeTypes.has(e.toJSON().type)) continue;
          const target = byId.get(e.targetId);
          if (!target) continue;
          if (nodeTypes && !nodeTypes.has(target.toJSON().type)) continue;
          if (!listed.has(target.id)) {
            if (nodes.length >= this.limit) {
              truncated = true;
              frontier.add(here.id);
              break;
            }
            listed.add(target.id);
            nodes.push(view(target));
            next.push(target);
          }
          if (!seenEdges.has(e.id)) {
            seenEdges.add(e.id);
            edges.push({ ...view(e), source: e.sourceId, target: e.targetId });
          }
        }
      }
      level = next;
    }
    // Nodes at the last depth were not expanded.
    for (const n of level) frontier.add(n.id);
    this.report({ source: start.id, depth: this.depth, nodes, edges, truncated, frontier: [...frontier] } satisfies Traversal);
  }
}
