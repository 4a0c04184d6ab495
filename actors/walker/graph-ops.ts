/**
 * The graph operations of a walker run, with their access checks: what
 * node and edge methods (`out`, `connect`, `destroy`, field writes, grants)
 * ask of the run. Every change goes through the run's {@link Transaction}.
 */
import { Value } from 'typebox/value';
import { type Access, AccessLevel, isAccessLevel, levelOf } from './access.ts';
import type { Anchor } from './anchor.ts';
import { ANCHOR, Edge, type ArchetypeClass, type GraphRun, type Node, type NodeFilter, viewOf } from './archetype.ts';
import { graphError } from './errors.ts';
import { type RunHost, RunLoading } from './run-loading.ts';
import { Transaction } from './transaction.ts';

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

/** A run's graph operations and access checks: the base of {@link WalkerRun} (see `run.ts`). */
export abstract class GraphOps extends RunLoading implements GraphRun {
  readonly callerRoot: string;
  protected readonly tx: Transaction;

  /** Changing operations begun and not settled: an ability that did not await one still has it land before the run ends. */
  private unsettledOps = 0;
  private opsSettled: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(host: RunHost, callerRoot: string) {
    super(host);
    this.callerRoot = callerRoot;
    this.tx = new Transaction((a) => host.evict(a));
  }

  /** Some changing operation (connect, disconnect, destroy) is still under way. */
  get hasUnsettledOps(): boolean {
    return this.unsettledOps > 0;
  }

  /** Resolves once no changing operation is under way (its outcome is the operation's caller's business). */
  whenOpsSettled(): Promise<void> {
    if (this.unsettledOps === 0) return Promise.resolve();
    if (this.opsSettled === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.opsSettled = { promise, resolve };
    }
    return this.opsSettled.promise;
  }

  private opSettled(): void {
    if (--this.unsettledOps > 0 || this.opsSettled === undefined) return;
    const { resolve } = this.opsSettled;
    this.opsSettled = undefined;
    resolve();
  }

  /** Foreign copies live in the run: changes to them are allowed while it is open. */
  get currentRun(): GraphOps | null {
    return this.closed ? null : this;
  }

  protected readable(a: Anchor): boolean {
    return !a.deleted && (a.root === this.callerRoot || levelOf(a.root, a.access, this.callerRoot) >= AccessLevel.READ);
  }

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
    this.unsettledOps++;
    try {
      await this.connectNow(from, to, edge, direction);
    } finally {
      this.opSettled();
    }
  }

  private async connectNow(from: Anchor, to: Anchor, edge: Anchor, direction: 'out' | 'in'): Promise<void> {
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
    this.open();
    this.unsettledOps++;
    try {
      const edges = (await this.edgesOf(from, 'out', type)).filter((e) => e.target === to.id);
      for (const e of edges) await this.destroyNow(e);
      return edges.length;
    } finally {
      this.opSettled();
    }
  }

  async destroy(anchor: Anchor): Promise<void> {
    this.open();
    this.unsettledOps++;
    try {
      await this.destroyNow(anchor);
    } finally {
      this.opSettled();
    }
  }

  private async destroyNow(anchor: Anchor): Promise<void> {
    this.open();
    if (anchor.deleted) return;
    if (anchor.id === this.host.rootId || anchor.cls.name === 'Root') throw graphError('SVC_ERR_ACCESS_DENIED', 'a root cannot be destroyed');
    if (anchor.kind === 'node') {
      this.beforeWrite(anchor, 'write');
      await this.ensureEdges(anchor);
      // Whoever may destroy a node removes every edge touching it, whoever owns them.
      const edges = await this.anchors(anchor.edges);
      for (const e of edges) if (e && !e.deleted) await this.removeEdge(e, anchor);
      this.open(); // the run may have ended meanwhile (an operation not awaited): nothing changes after it
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

  protected checkLevel(anchor: Anchor, level: 'write' | 'connect'): void {
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
}
