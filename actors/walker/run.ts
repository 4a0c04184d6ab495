/**
 * One walker run: executes walkers (and functions) for one caller inside the
 * caller's partition, and carries out the graph operations of their nodes
 * with access checks. Everything changed goes through the run's
 * {@link Transaction}: a failed run puts memory back as it was, a failed
 * nested walker puts it back as it was before that walker, a successful run
 * hands its changes to the partition to commit.
 */
import { Value } from 'typebox/value';
import { type Access, AccessLevel, isAccessLevel, levelOf } from './access.ts';
import { abilitiesOf, matches, type Ability } from './abilities.ts';
import type { Anchor, AnchorHome } from './anchor.ts';
import { ANCHOR, Edge, type ArchetypeClass, type GraphRun, Node, type NodeFilter, type Root, validateFields, viewOf } from './archetype.ts';
import { graphError } from './errors.ts';
import type { Caller, FnContext } from './fn.ts';
import type { Registry } from './registry.ts';
import { type RunChanges, Transaction } from './transaction.ts';
import { NodeQueue, Signal, STATE, type Walker, type WalkerClass, walkerInfo } from './walker.ts';

export type { RunChanges } from './transaction.ts';

/** What a run needs from the partition it runs in. */
export interface RunHost extends AnchorHome {
  readonly rootId: string;
  readonly registry: Registry;
  /** An owned anchor held in memory. */
  resident(id: string): Anchor | undefined;
  /** The root held in memory; throws the store's error when it is not (it could not be loaded). */
  residentRoot(): Anchor;
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

function call(ability: Ability, self: unknown, arg: unknown): Promise<unknown> | undefined {
  const r = ability.fn.call(self, arg);
  return r instanceof Promise ? r : undefined;
}

export class WalkerRun implements GraphRun, AnchorHome {
  readonly callerRoot: string;
  private readonly tx: Transaction;
  private readonly foreign = new Map<string, Anchor>();
  private closed = false;

  constructor(
    private readonly host: RunHost,
    readonly caller: Caller,
  ) {
    this.callerRoot = caller.rootId;
    this.tx = new Transaction((a) => host.evict(a));
  }

  /** Foreign copies live in the run: changes to them are allowed while it is open. */
  get currentRun(): WalkerRun | null {
    return this.closed ? null : this;
  }

  private get registry(): Registry {
    return this.host.registry;
  }

  /** Refuse work once the run has ended (an operation that was not awaited, a timer firing later). */
  private open(): void {
    if (this.closed) throw graphError('SVC_ERR_NOT_IN_RUN', 'the walker run has ended; await graph operations inside the ability');
  }

  private rootView(): Root {
    return viewOf<Root>(this.host.residentRoot());
  }

  // ---- running walkers and functions ---------------------------------------

  /**
   * Spawn a walker (by exported name or class) at `at` (the caller's root by
   * default); resolves to its reports. A nested walker that fails leaves no
   * change behind, even if its parent catches the error.
   */
  async spawnWalker(walker: string | WalkerClass, fields: unknown, at?: Node | string, nested = false): Promise<unknown[]> {
    this.open();
    const cls = typeof walker === 'string' ? this.registry.walker(walker) : walker;
    if (!cls) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no walker named ${String(walker)}`);
    const name = typeof walker === 'string' ? walker : (this.registry.nameOf(cls) ?? cls.name);
    const info = walkerInfo(cls);
    const values = validateFields(info, fields ?? {}, name);
    const instance = new cls();
    for (const f of info.fields) if (Object.hasOwn(values, f)) (instance as unknown as Record<string, unknown>)[f] = values[f];
    const savepoint = nested ? this.tx.savepoint() : undefined;
    try {
      const start = at === undefined ? this.rootView() : await this.startNode(at);
      const state = {
        queue: new NodeQueue(),
        reports: [] as unknown[],
        disengaged: false,
        root: this.rootView(),
        caller: this.caller,
        spawn: (w: string | WalkerClass, f: Record<string, unknown>, a: Node | string | undefined) => this.spawnWalker(w, f, a, true),
      };
      instance[STATE] = state;
      state.queue.push([start]);
      await this.execute(instance, state.queue);
      return state.reports;
    } catch (error) {
      if (savepoint && !this.closed) this.tx.rollbackTo(savepoint);
      throw error;
    }
  }

  /** Call a function (by exported name); resolves to its return value. */
  async callFunction(name: string, args: unknown): Promise<unknown> {
    this.open();
    const def = this.registry.fn(name);
    if (!def) throw graphError('SVC_ERR_UNKNOWN_WALKER', `no function named ${name}`);
    const values = validateFields(def.info, args ?? {}, name);
    const ctx: FnContext = {
      root: this.rootView(),
      caller: this.caller,
      spawn: (w, f, a) => this.spawnWalker(w as string | WalkerClass, f ?? {}, a, true),
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
    this.open();
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
    this.open();
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
    this.open();
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
    this.open();
    if (edge.home || !edge.isNew || edge.kind !== 'edge') throw graphError('SVC_ERR_INVALID_FIELDS', 'connect() takes a new edge that is not connected yet');
    if (to.home && to.home !== this.host && to.home !== this) throw graphError('SVC_ERR_ACCESS_DENIED', 'that node belongs to another run');
    if (to === from) throw graphError('SVC_ERR_INVALID_FIELDS', 'a node cannot be connected to itself');
    this.checkLevel(from, 'connect');
    this.checkLevel(to, 'connect');
    await this.ensureEdges(from);
    await this.ensureEdges(to);
    this.open();
    if (!to.home) this.adoptNew(to);
    this.beforeWrite(from, 'connect');
    this.beforeWrite(to, 'connect');
    this.adoptNew(edge);
    edge.source = direction === 'out' ? from.id : to.id;
    edge.target = direction === 'out' ? to.id : from.id;
    for (const end of [from, to]) {
      // The owner of a foreign endpoint may read the edge that now reaches its node.
      if (end.root !== this.callerRoot && (edge.access.roots[end.root] ?? -1) < AccessLevel.READ) edge.access.roots[end.root] = AccessLevel.READ;
      end.edges.push(edge.id);
      if (end.foreign) this.tx.foreignEdgesChanged(end);
    }
  }

  async disconnect(from: Anchor, to: Anchor, type: ArchetypeClass | undefined): Promise<number> {
    const edges = (await this.edgesOf(from, 'out', type)).filter((e) => e.target === to.id);
    for (const e of edges) await this.destroy(e);
    return edges.length;
  }

  async destroy(anchor: Anchor): Promise<void> {
    this.open();
    if (anchor.deleted) return;
    if (anchor.id === this.host.rootId || anchor.cls.name === 'Root') throw graphError('SVC_ERR_ACCESS_DENIED', 'a root cannot be destroyed');
    if (anchor.kind === 'node') {
      this.beforeWrite(anchor, 'write');
      await this.ensureEdges(anchor);
      // Whoever may destroy a node removes every edge touching it, whoever owns them.
      const edges = await this.anchors(anchor.edges);
      for (const e of edges) if (e && !e.deleted) await this.removeEdge(e, anchor);
      anchor.edges.length = 0;
      anchor.deleted = true;
      return;
    }
    const ends = await this.anchors([anchor.source as string, anchor.target as string]);
    // The owner of an endpoint may remove an edge touching its node; anyone else needs WRITE on the edge.
    const ownsEnd = ends.some((end) => end?.root === this.callerRoot);
    if (!ownsEnd) this.checkLevel(anchor, 'write');
    await this.removeEdge(anchor, undefined);
  }

  /** Delete an edge and take it off its endpoints' lists (`gone`: the node being destroyed). */
  private async removeEdge(edge: Anchor, gone: Anchor | undefined): Promise<void> {
    const ends = await this.anchors([edge.source as string, edge.target as string]);
    this.open();
    for (const end of ends) {
      if (!end || end === gone || end.deleted) continue;
      this.tx.touch(end);
      const i = end.edges.indexOf(edge.id);
      if (i >= 0) end.edges.splice(i, 1);
      if (end.foreign) this.tx.foreignEdgesChanged(end);
    }
    this.tx.touch(edge);
    edge.deleted = true;
  }

  setAccess(anchor: Anchor, change: (access: Access) => void): void {
    this.open();
    if (anchor.root !== this.callerRoot) throw graphError('SVC_ERR_ACCESS_DENIED', `only its owner changes the access of a ${anchor.cls.name}`);
    this.beforeWrite(anchor, 'write');
    change(anchor.access);
    const levels = [anchor.access.anyone, ...Object.values(anchor.access.roots)];
    if (!levels.every(isAccessLevel)) throw graphError('SVC_ERR_INVALID_FIELDS', 'access levels are AccessLevel.NO_ACCESS, READ, CONNECT or WRITE');
  }

  private checkLevel(anchor: Anchor, level: 'write' | 'connect'): void {
    if (anchor.deleted) throw graphError('SVC_ERR_DESTROYED', `that ${anchor.cls.name} was destroyed`);
    if (anchor.root && anchor.root !== this.callerRoot) {
      const need = level === 'write' ? AccessLevel.WRITE : AccessLevel.CONNECT;
      if (levelOf(anchor.root, anchor.access, this.callerRoot) < need) {
        throw graphError('SVC_ERR_ACCESS_DENIED', `no ${level.toUpperCase()} access to that ${anchor.cls.name}`);
      }
    }
  }

  beforeWrite(anchor: Anchor, level: 'write' | 'connect'): void {
    this.open();
    this.checkLevel(anchor, level);
    this.tx.touch(anchor);
  }

  touchedObject(anchor: Anchor): void {
    if (!this.closed) this.tx.touch(anchor);
  }

  /** A node or edge created with `new` joins this run's partition. */
  private adoptNew(anchor: Anchor): void {
    if (!anchor.isNew) throw graphError('SVC_ERR_INVALID_FIELDS', 'that node already belongs to a graph');
    if (!this.registry.owns(anchor.cls)) {
      throw graphError(
        'SVC_ERR_BAD_ARCHETYPE',
        `${anchor.cls.name} is not exported by the app module, so it could not be loaded after a restart; export it`,
      );
    }
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
    this.tx.adopt(anchor);
    this.host.adopt(anchor);
  }

  // ---- the end of a run ------------------------------------------------------------

  /** What to commit; throws `SVC_ERR_INVALID_FIELDS` when a changed anchor no longer fits its schema. */
  changes(): RunChanges {
    return this.tx.changes(this.callerRoot);
  }

  /** Put memory back as it was before the run, and close it. */
  rollback(): void {
    this.tx.rollback();
    this.close();
  }

  /** The commit is under way: versions move on; the run closes. */
  committed(changes: RunChanges): void {
    this.tx.committed(changes);
    this.close();
  }

  private close(): void {
    this.closed = true;
    this.foreign.clear();
  }
}
