/**
 * One walker run: executes walkers (and functions) for one caller inside the
 * caller's partition, and is the transaction of everything they change. It
 * keeps an undo copy of each anchor before its first change, so a failed run
 * puts memory back as it was; a successful one hands its changes to the
 * partition to commit.
 */
import { Value } from 'typebox/value';
import { type Access, AccessLevel, levelOf } from './access.ts';
import { abilitiesOf, matches, type Ability } from './abilities.ts';
import { Anchor, type AnchorHome } from './anchor.ts';
import {
  ANCHOR,
  Edge,
  type ArchetypeClass,
  type GraphRun,
  Node,
  type NodeFilter,
  type Root,
  validateFields,
  viewOf,
} from './archetype.ts';
import { graphError } from './errors.ts';
import type { Caller, FnContext } from './fn.ts';
import type { Registry } from './registry.ts';
import { NodeQueue, Signal, STATE, type Walker, type WalkerClass, walkerInfo } from './walker.ts';

/** What a run needs from the partition it runs in. */
export interface RunHost extends AnchorHome {
  readonly rootId: string;
  readonly registry: Registry;
  /** An owned anchor held in memory. */
  resident(id: string): Anchor | undefined;
  /**
   * Load anchors not in memory. Owned ones become resident; foreign ones
   * come back as copies for this run only. Missing ids are absent from the map.
   */
  fetch(ids: string[]): Promise<Map<string, Anchor>>;
  /** The edges touching a node (owned ones become resident; foreign ones are copies). */
  fetchEdges(nodeId: string): Promise<Anchor[]>;
  /** Hold a new anchor in memory. */
  adopt(anchor: Anchor): void;
  /** Forget an anchor (dropped on rollback, or deleted on commit). */
  evict(anchor: Anchor): void;
}

interface Undo {
  data: Record<string, unknown>;
  edges: string[];
  edgesLoaded: boolean;
  access: Access;
  deleted: boolean;
}

/** A change to an anchor of another root (made under a grant), for its partition to apply. */
export interface ForeignOp {
  /** The owner root. */
  root: string;
  id: string;
  /** The version the writer read (checked when data changes or the anchor is deleted). */
  version: number;
  data?: Record<string, unknown>;
  deleted?: boolean;
  /** Edges (documents of their own) now touching / no longer touching this node. */
  addEdges?: string[];
  removeEdges?: string[];
}

/** What a successful run changed, for the partition to commit. */
export interface RunChanges {
  /** Owned anchors to write (new or changed). */
  upserts: Anchor[];
  /** Owned anchors to delete. */
  deletes: Anchor[];
  /** Changes to anchors of other roots. */
  foreign: ForeignOp[];
  /** New anchors that will not be persisted (destroyed, or never reachable). */
  dropped: Anchor[];
}

interface Plan {
  walkerEntry: Ability[];
  nodeEntry: Ability[];
  nodeExit: Ability[];
  walkerExit: Ability[];
}

const plans = new WeakMap<Function, WeakMap<Function, Plan>>();

function planFor(walkerCls: Function, walker: object, nodeCls: Function, node: object): Plan {
  let byNode = plans.get(walkerCls);
  if (!byNode) plans.set(walkerCls, (byNode = new WeakMap()));
  let plan = byNode.get(nodeCls);
  if (!plan) {
    const w = abilitiesOf(walkerCls).filter((a) => matches(a, node));
    const n = abilitiesOf(nodeCls).filter((a) => matches(a, walker));
    plan = {
      walkerEntry: w.filter((a) => a.kind === 'entry'),
      nodeEntry: n.filter((a) => a.kind === 'entry'),
      nodeExit: n.filter((a) => a.kind === 'exit'),
      walkerExit: w.filter((a) => a.kind === 'exit'),
    };
    byNode.set(nodeCls, plan);
  }
  return plan;
}

function isEdgeClass(type: ArchetypeClass): boolean {
  return type === Edge || type.prototype instanceof Edge;
}

function matchesFilter(node: Node, filter: NodeFilter | undefined): boolean {
  if (!filter) return true;
  if (typeof filter === 'function') return filter(node);
  const data = node[ANCHOR].data;
  const wanted = filter as Record<string, unknown>;
  for (const key of Object.keys(wanted)) if (!Value.Equal(data[key], wanted[key])) return false;
  return true;
}

function snapshot(a: Anchor): Undo {
  const data: Record<string, unknown> = {};
  for (const key of Object.keys(a.data)) {
    const v = a.data[key];
    data[key] = typeof v === 'object' && v !== null ? structuredClone(v) : v;
  }
  return {
    data,
    edges: a.edges.slice(),
    edgesLoaded: a.edgesLoaded,
    access: { anyone: a.access.anyone, roots: { ...a.access.roots } },
    deleted: a.deleted,
  };
}

export class WalkerRun implements GraphRun, AnchorHome {
  readonly callerRoot: string;
  /** Anchors changed (or possibly changed in place) in this run, with their state before. */
  private readonly touched = new Map<Anchor, Undo>();
  /** Of those, the ones changed through a setter or a graph operation (no comparison needed). */
  private readonly written = new Set<Anchor>();
  private readonly created = new Set<Anchor>();
  private readonly foreign = new Map<string, Anchor>();
  /** Edge ids added to / removed from foreign nodes' edge lists. */
  private readonly foreignEdges = new Map<Anchor, { add: string[]; remove: string[] }>();

  constructor(
    private readonly host: RunHost,
    readonly caller: Caller,
  ) {
    this.callerRoot = caller.rootId;
  }

  /** Foreign copies live in the run: writes to them are allowed while it runs. */
  get currentRun(): WalkerRun {
    return this;
  }

  private get registry(): Registry {
    return this.host.registry;
  }

  private rootView(): Root {
    const root = this.host.resident(this.host.rootId);
    if (!root) throw graphError('SVC_ERR_STORE', `the root ${this.host.rootId} is not loaded`);
    return viewOf<Root>(root);
  }

  // ---- running walkers and functions ---------------------------------------

  /** Spawn a walker (by exported name or class) at `at` (the caller's root by default); resolves to its reports. */
  async spawnWalker(walker: string | WalkerClass, fields: unknown, at?: Node | string): Promise<unknown[]> {
    const cls = typeof walker === 'string' ? this.registry.walker(walker) : walker;
    if (!cls) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no walker named ${String(walker)}`);
    const name = typeof walker === 'string' ? walker : (this.registry.nameOf(cls) ?? cls.name);
    const info = walkerInfo(cls);
    const values = validateFields(info, fields ?? {}, name);
    const instance = new cls();
    for (const f of info.fields) if (Object.hasOwn(values, f)) (instance as unknown as Record<string, unknown>)[f] = values[f];
    const start = at === undefined ? this.rootView() : await this.startNode(at);
    const state = {
      queue: new NodeQueue(),
      reports: [] as unknown[],
      disengaged: false,
      root: this.rootView(),
      caller: this.caller,
      spawn: (w: string | WalkerClass, f: Record<string, unknown>, a: Node | string | undefined) => this.spawnWalker(w, f, a),
    };
    instance[STATE] = state;
    state.queue.push([start]);
    await this.execute(instance, state.queue);
    return state.reports;
  }

  /** Call a function (by exported name); resolves to its return value. */
  async callFunction(name: string, args: unknown): Promise<unknown> {
    const def = this.registry.fn(name);
    if (!def) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no function named ${name}`);
    const values = validateFields(def.info, args ?? {}, name);
    const ctx: FnContext = {
      root: this.rootView(),
      caller: this.caller,
      spawn: (w, f, a) => this.spawnWalker(w as string | WalkerClass, f ?? {}, a),
    };
    return def.handler(values, ctx);
  }

  private async startNode(at: Node | string): Promise<Node> {
    if (at instanceof Node) return at;
    const [anchor] = await this.anchors([at]);
    // The same answer whether the node is missing or not readable: its existence is not revealed.
    if (!anchor || anchor.kind !== 'node' || !this.readable(anchor)) {
      throw graphError('SVC_ERR_NODE_NOT_FOUND', `no node ${at} readable by this caller`);
    }
    return viewOf<Node>(anchor);
  }

  private async execute(walker: Walker, queue: NodeQueue): Promise<void> {
    const walkerCls = walker.constructor;
    const state = walker[STATE];
    for (let here = queue.shift(); here && !state.disengaged; here = queue.shift()) {
      if (here[ANCHOR].deleted) continue;
      const plan = planFor(walkerCls, walker, here.constructor, here);
      try {
        // Synchronous abilities are not awaited: no microtask per ability.
        for (const a of plan.walkerEntry) {
          const r = call(a, walker, here);
          if (r) await r;
        }
        for (const a of plan.nodeEntry) {
          const r = call(a, here, walker);
          if (r) await r;
        }
        for (const a of plan.nodeExit) {
          const r = call(a, here, walker);
          if (r) await r;
        }
        for (const a of plan.walkerExit) {
          const r = call(a, walker, here);
          if (r) await r;
        }
      } catch (error) {
        if (error instanceof Signal) {
          if (error.kind === 'disengage') break;
          continue;
        }
        throw error;
      }
    }
  }

  // ---- loading ----------------------------------------------------------------

  /** Anchors by id (undefined where missing), from memory when possible. */
  async anchors(ids: readonly string[]): Promise<(Anchor | undefined)[]> {
    const out: (Anchor | undefined)[] = new Array(ids.length);
    let missing: string[] | undefined;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      const a = this.host.resident(id) ?? this.foreign.get(id);
      if (a) out[i] = a;
      else (missing ??= []).push(id);
    }
    if (!missing) return out;
    const fetched = await this.host.fetch(missing);
    for (let i = 0; i < ids.length; i++) {
      if (out[i]) continue;
      const a = fetched.get(ids[i] as string);
      if (a) out[i] = this.own(a);
    }
    return out;
  }

  /** A fetched anchor as this run holds it: foreign ones become the run's copies (one per id). */
  private own(a: Anchor): Anchor {
    if (a.root === this.host.rootId) return a;
    const cached = this.foreign.get(a.id);
    if (cached) return cached;
    a.foreign = true;
    a.home = this;
    this.foreign.set(a.id, a);
    return a;
  }

  /** Make sure a node's edge list is complete (stored nodes load it on first use). */
  private async ensureEdges(node: Anchor): Promise<void> {
    if (node.edgesLoaded) return;
    const edges = await this.host.fetchEdges(node.id);
    if (node.edgesLoaded) return; // loaded meanwhile
    node.edges = edges.map((e) => this.own(e).id);
    node.edgesLoaded = true;
  }

  private readable(a: Anchor): boolean {
    return !a.deleted && (a.root === this.callerRoot || levelOf(a.root, a.access, this.callerRoot) >= AccessLevel.READ);
  }

  // ---- GraphRun: what archetype methods call ------------------------------------

  async neighbors(from: Anchor, direction: 'out' | 'in', type: ArchetypeClass | undefined, filter: NodeFilter | undefined): Promise<Node[]> {
    const edgeFilter = type && isEdgeClass(type) ? type : undefined;
    const nodeFilter = type && !edgeFilter ? type : undefined;
    const edges = await this.edgesOf(from, direction, edgeFilter);
    const others = await this.anchors(edges.map((e) => (direction === 'out' ? e.target : e.source) as string));
    const out: Node[] = [];
    for (const a of others) {
      if (!a || !this.readable(a)) continue;
      const node = viewOf<Node>(a);
      if (nodeFilter && !(node instanceof nodeFilter)) continue;
      if (!matchesFilter(node, filter)) continue;
      out.push(node);
    }
    return out;
  }

  async incidentEdges(from: Anchor, direction: 'out' | 'in', type: ArchetypeClass | undefined): Promise<Edge[]> {
    return (await this.edgesOf(from, direction, type)).map((e) => viewOf<Edge>(e));
  }

  private async edgesOf(from: Anchor, direction: 'out' | 'in', type: ArchetypeClass | undefined): Promise<Anchor[]> {
    await this.ensureEdges(from);
    const edges = await this.anchors(from.edges);
    const out: Anchor[] = [];
    for (const e of edges) {
      if (!e || !this.readable(e)) continue;
      if ((direction === 'out' ? e.source : e.target) !== from.id) continue;
      if (type && !(viewOf(e) instanceof type)) continue;
      out.push(e);
    }
    return out;
  }

  async connect(from: Anchor, to: Anchor, edge: Anchor, direction: 'out' | 'in'): Promise<void> {
    if (edge.home || !edge.isNew || edge.kind !== 'edge') throw graphError('SVC_ERR_INVALID_FIELDS', 'connect() takes a new edge that is not connected yet');
    if (to.home && to.home !== this.host && to.home !== this) {
      throw graphError('SVC_ERR_ACCESS_DENIED', `node ${to.id} belongs to another run`);
    }
    if (to === from) throw graphError('SVC_ERR_INVALID_FIELDS', 'a node cannot be connected to itself');
    this.checkLevel(from, 'connect');
    this.checkLevel(to, 'connect');
    await this.ensureEdges(from);
    await this.ensureEdges(to);
    if (!to.home) this.adoptNew(to);
    this.beforeWrite(from, 'connect');
    this.beforeWrite(to, 'connect');
    this.adoptNew(edge);
    edge.source = direction === 'out' ? from.id : to.id;
    edge.target = direction === 'out' ? to.id : from.id;
    // The owner of a foreign endpoint may read the edge that now reaches its node.
    for (const end of [from, to]) {
      if (end.root !== this.callerRoot) edge.access.roots[end.root] = Math.max(edge.access.roots[end.root] ?? -1, AccessLevel.READ) as typeof AccessLevel.READ;
    }
    for (const end of [from, to]) {
      end.edges.push(edge.id);
      if (end.foreign) this.foreignEdgeOp(end).add.push(edge.id);
    }
  }

  private foreignEdgeOp(node: Anchor): { add: string[]; remove: string[] } {
    let op = this.foreignEdges.get(node);
    if (!op) this.foreignEdges.set(node, (op = { add: [], remove: [] }));
    return op;
  }

  async disconnect(from: Anchor, to: Anchor, type: ArchetypeClass | undefined): Promise<number> {
    const edges = (await this.edgesOf(from, 'out', type)).filter((e) => e.target === to.id);
    for (const e of edges) await this.destroy(e);
    return edges.length;
  }

  async destroy(anchor: Anchor): Promise<void> {
    if (anchor.deleted) return;
    if (anchor.id === this.host.rootId || anchor.cls.name === 'Root') throw graphError('SVC_ERR_ACCESS_DENIED', 'a root cannot be destroyed');
    this.beforeWrite(anchor, 'write');
    if (anchor.kind === 'node') {
      await this.ensureEdges(anchor);
      const edges = await this.anchors(anchor.edges);
      for (const e of edges) if (e && !e.deleted) await this.destroyEdge(e, anchor);
      anchor.edges.length = 0;
    } else {
      await this.destroyEdge(anchor, undefined);
    }
    anchor.deleted = true;
  }

  /** Remove an edge and its id from both endpoints (`except`: the node being destroyed). */
  private async destroyEdge(edge: Anchor, except: Anchor | undefined): Promise<void> {
    const ends = await this.anchors([edge.source as string, edge.target as string]);
    for (const end of ends) {
      if (!end || end === except || end.deleted) continue;
      this.beforeWrite(end, 'connect');
      const i = end.edges.indexOf(edge.id);
      if (i >= 0) end.edges.splice(i, 1);
      if (end.foreign) this.foreignEdgeOp(end).remove.push(edge.id);
    }
    if (edge !== except) {
      this.beforeWrite(edge, 'connect');
      edge.deleted = true;
    }
  }

  setAccess(anchor: Anchor, change: (access: Access) => void): void {
    if (anchor.root !== this.callerRoot) throw graphError('SVC_ERR_ACCESS_DENIED', `only the owner changes access of ${anchor.id}`);
    this.beforeWrite(anchor, 'write');
    change(anchor.access);
  }

  private checkLevel(anchor: Anchor, level: 'write' | 'connect'): void {
    if (anchor.deleted) throw graphError('SVC_ERR_DESTROYED', `${anchor.cls.name} ${anchor.id} was destroyed`);
    if (anchor.root && anchor.root !== this.callerRoot) {
      const need = level === 'write' ? AccessLevel.WRITE : AccessLevel.CONNECT;
      if (levelOf(anchor.root, anchor.access, this.callerRoot) < need) {
        throw graphError('SVC_ERR_ACCESS_DENIED', `no ${level.toUpperCase()} access to ${anchor.cls.name} ${anchor.id}`);
      }
    }
  }

  beforeWrite(anchor: Anchor, level: 'write' | 'connect'): void {
    this.checkLevel(anchor, level);
    if (!this.created.has(anchor) && !this.touched.has(anchor)) this.touched.set(anchor, snapshot(anchor));
    this.written.add(anchor);
  }

  touchedObject(anchor: Anchor): void {
    if (this.created.has(anchor) || this.touched.has(anchor)) return;
    this.touched.set(anchor, snapshot(anchor));
  }

  /** A node or edge created with `new` joins this run's partition. */
  private adoptNew(anchor: Anchor): void {
    if (!anchor.isNew) throw graphError('SVC_ERR_INVALID_FIELDS', `${anchor.id} already belongs to a graph`);
    for (const key of Object.keys(anchor.obj ?? {})) {
      if (Object.hasOwn(anchor.data, key)) {
        throw graphError(
          'SVC_ERR_BAD_ARCHETYPE',
          `${anchor.cls.name}.${key} is a class field, so writes to it are not seen; declare it with \`declare ${key}: …\``,
        );
      }
    }
    anchor.root = this.callerRoot;
    anchor.home = this.host;
    this.created.add(anchor);
    this.host.adopt(anchor);
  }

  // ---- the end of a run ------------------------------------------------------------

  /**
   * What to commit. New nodes persist when they have an edge; destroyed new
   * ones are dropped. A node whose only change is its edge list is not
   * written: edges are documents of their own.
   */
  changes(): RunChanges {
    const upserts: Anchor[] = [];
    const deletes: Anchor[] = [];
    const dropped: Anchor[] = [];
    const foreign: ForeignOp[] = [];
    for (const a of this.created) {
      if (a.deleted || (a.kind === 'node' && a.edges.length === 0)) dropped.push(a);
      else upserts.push(a);
    }
    for (const [a, undo] of this.touched) {
      const dataChanged = !Value.Equal(undo.data, a.data);
      const changed = dataChanged || a.deleted !== undo.deleted || !Value.Equal(undo.access, a.access);
      if (a.foreign) {
        const edges = this.foreignEdges.get(a);
        if (!dataChanged && !a.deleted && !edges) continue;
        const op: ForeignOp = { root: a.root, id: a.id, version: a.version };
        if (dataChanged) op.data = a.data;
        if (a.deleted) op.deleted = true;
        if (edges?.add.length) op.addEdges = edges.add;
        if (edges?.remove.length) op.removeEdges = edges.remove;
        foreign.push(op);
      } else if (a.deleted) {
        deletes.push(a);
      } else if (changed) {
        upserts.push(a);
      }
    }
    return { upserts, deletes, foreign, dropped };
  }

  /** Put memory back as it was before the run. */
  rollback(): void {
    for (const [a, undo] of this.touched) {
      a.data = undo.data;
      a.edges = undo.edges;
      a.edgesLoaded = undo.edgesLoaded;
      a.access = undo.access;
      a.deleted = undo.deleted;
    }
    for (const a of this.created) {
      this.host.evict(a);
      a.home = null;
      a.root = '';
      a.edges = [];
    }
    this.clear();
  }

  /** The commit succeeded: versions move on, dropped and deleted anchors leave memory. */
  committed(changes: RunChanges): void {
    for (const a of changes.upserts) {
      a.version++;
      a.isNew = false;
    }
    for (const a of changes.deletes) this.host.evict(a);
    for (const a of changes.dropped) {
      this.host.evict(a);
      a.home = null;
    }
    this.clear();
  }

  private clear(): void {
    this.touched.clear();
    this.written.clear();
    this.created.clear();
    this.foreign.clear();
    this.foreignEdges.clear();
  }
}

function call(ability: Ability, self: unknown, arg: unknown): Promise<unknown> | undefined {
  const r = ability.fn.call(self, arg);
  return r instanceof Promise ? r : undefined;
}
