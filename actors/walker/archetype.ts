/**
 * Archetypes: the classes users write. `Node` and `Edge` subclasses declare
 * their fields with a TypeBox schema in `static has`; instances are views over
 * an {@link Anchor}, with accessors installed on the class prototype so that a
 * plain `todo.done = true` is validated, access-checked and recorded for the
 * commit at the end of the walker run.
 *
 * Declare fields with `declare title: string` (no initializer): a class field
 * initializer would create an own property that bypasses the accessor.
 */
import type { TObject, TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { type Access, privateAccess } from './access.ts';
import { Anchor, type AnchorKind, type AnchorRun, newId } from './anchor.ts';
import { buildInfo, cachedInfo, type ClassInfo, type FieldCheck, registerBase, validateFields } from './class-info.ts';
import { graphError } from './errors.ts';
import { SvcError } from '../../kernel/index.ts';

/** The symbol under which an archetype instance keeps its anchor. */
export const ANCHOR = Symbol('svc.anchor');

/** What runs offer archetype methods (implemented by `WalkerRun`). */
export interface GraphRun extends AnchorRun {
  readonly callerRoot: string;
  neighbors(from: Anchor, direction: 'out' | 'in', type: ArchetypeClass | undefined, filter: NodeFilter | undefined): Promise<Node[]>;
  incidentEdges(from: Anchor, direction: 'out' | 'in', type: ArchetypeClass | undefined): Promise<Edge[]>;
  connect(from: Anchor, to: Anchor, edge: Anchor, direction: 'out' | 'in'): Promise<void>;
  disconnect(from: Anchor, to: Anchor, type: ArchetypeClass | undefined): Promise<number>;
  destroy(anchor: Anchor): Promise<void>;
  setAccess(anchor: Anchor, change: (access: Access) => void): void;
}

/** Keep the nodes matching: a predicate, or field values that must be equal. */
export type NodeFilter<N extends Node = Node> = ((node: N) => boolean) | { [K in keyof N]?: unknown } | Record<string, unknown>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ArchetypeClass<T extends Archetype = Archetype> = (abstract new (...args: any[]) => T) & { has?: TObject; name: string };

/** Every prepared class by name, so stored documents can find their class. */
export const knownClasses = new Map<string, ArchetypeClass>();

function kindOf(cls: object): AnchorKind {
  for (let p = cls; p; p = Object.getPrototypeOf(p)) {
    if (p === Node) return 'node';
    if (p === Edge) return 'edge';
  }
  throw graphError('SVC_ERR_BAD_ARCHETYPE', `${(cls as { name?: string }).name} is not a Node or Edge class`);
}

/**
 * Compute and cache what the runtime needs of an archetype class, install
 * its field accessors, and make it findable by name.
 */
export function prepare(cls: ArchetypeClass): ClassInfo {
  const cached = cachedInfo(cls);
  if (cached) return cached;
  const info = buildInfo(cls, kindOf(cls));
  installAccessors(cls, info);
  knownClasses.set(cls.name, cls);
  return info;
}

function installAccessors(cls: ArchetypeClass, info: ClassInfo): void {
  for (const name of info.fields) {
    Object.defineProperty(cls.prototype, name, {
      configurable: true,
      enumerable: true,
      get(this: Archetype) {
        const anchor = this[ANCHOR];
        const value = anchor.data[name];
        if (typeof value === 'object' && value !== null) anchor.home?.currentRun?.touchedObject(anchor);
        return value;
      },
      set(this: Archetype, value: unknown) {
        writeField(this[ANCHOR], name, value, info);
      },
    });
  }
}

/** The archetype instance of an anchor (made on first use, without running a constructor). */
export function viewOf<T extends Archetype = Archetype>(anchor: Anchor): T {
  let obj = anchor.obj;
  if (!obj) {
    obj = Object.create(anchor.cls.prototype) as Archetype;
    obj[ANCHOR] = anchor;
    anchor.obj = obj;
  }
  return obj as T;
}

/** The run an anchor may change in: null for a new anchor (not in a graph yet); throws outside a run. */
export function runFor(anchor: Anchor): GraphRun | null {
  if (!anchor.home) return null;
  const run = anchor.home.currentRun as GraphRun | null;
  if (!run) throw graphError('SVC_ERR_NOT_IN_RUN', `${anchor.cls.name} ${anchor.id} can only change inside a walker run`);
  return run;
}

function writeField(anchor: Anchor, name: string, value: unknown, info: ClassInfo): void {
  const run = runFor(anchor);
  if (anchor.deleted) throw graphError('SVC_ERR_DESTROYED', `${info.name} ${anchor.id} was destroyed`);
  if (!(info.fieldChecks[name] as FieldCheck)(value)) {
    // The app's code wrote it, not the client: a 500 for the app to fix, not a 400.
    throw graphError('SVC_ERR_BAD_WRITE', `${info.name}.${name}: ${describe(value)} does not match its schema`, {
      details: [...Value.Errors(info.schema.properties[name] as TSchema, value)].map((e) => ({ field: name, message: e.message })),
    });
  }
  run?.beforeWrite(anchor, 'write');
  anchor.data[name] = value;
}

function describe(value: unknown): string {
  const s = JSON.stringify(value);
  return s === undefined ? String(value) : s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

/** The common base of nodes and edges. */
export abstract class Archetype {
  declare [ANCHOR]: Anchor;

  /** The 32-hex-char id. */
  get id(): string {
    return this[ANCHOR].id;
  }

  /** How a node or edge looks in a report: `{id, type, context}`. */
  toJSON(): { id: string; type: string; context: Record<string, unknown> } {
    const anchor = this[ANCHOR];
    return { id: anchor.id, type: anchor.cls.name, context: { ...anchor.data } };
  }

  /** Remove this node (with its edges) or edge; needs WRITE. */
  async destroy(): Promise<void> {
    const run = runFor(this[ANCHOR]);
    if (!run) throw graphError('SVC_ERR_NOT_IN_RUN', 'destroy() needs a walker run');
    await run.destroy(this[ANCHOR]);
  }
}

/** Set while {@link fieldInitializers} builds a class's probe instance: fields are not validated. */
let probing = false;

/**
 * The schema fields a node or edge class gives a class-field initializer
 * (`title = ''` instead of `declare title: string`): such a field would
 * shadow the tracked accessor, so writes to it would never be stored.
 * Found by building one instance without validating its fields; a class
 * whose constructor throws is not judged.
 *
 * @example
 * fieldInitializers(Todo) // ['title'] for `class Todo extends Node { title = '' }`
 */
export function fieldInitializers(cls: ArchetypeClass): string[] {
  const info = prepare(cls);
  let instance: object;
  probing = true;
  try {
    instance = Reflect.construct(cls, [{}]) as object;
  } catch {
    return [];
  } finally {
    probing = false;
  }
  return Object.keys(instance).filter((key) => info.fields.includes(key));
}

function newAnchor(self: Archetype, cls: ArchetypeClass, kind: AnchorKind, fields: Record<string, unknown>): void {
  const info = prepare(cls);
  let data: Record<string, unknown>;
  try {
    data = probing ? {} : validateFields(info, fields);
  } catch (error) {
    // `new Todo({...})` runs in app code: fields that do not fit are the app's mistake (a 500), not the client's.
    if (error instanceof SvcError && error.code === 'SVC_ERR_INVALID_FIELDS') throw graphError('SVC_ERR_BAD_WRITE', `new ${error.message}`, { details: error.details });
    throw error;
  }
  const anchor = new Anchor(newId(), kind, cls, '', 0, privateAccess(), data, [], undefined, undefined);
  anchor.obj = self;
  self[ANCHOR] = anchor;
}

/**
 * A node of the graph. Subclass it, declare `static has`, and `declare` the
 * fields.
 *
 * @example
 * class Todo extends Node {
 *   static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });
 *   declare title: string; declare done: boolean;
 * }
 * const todo = await here.connect(new Todo({ title: 'milk' }));
 */
export class Node extends Archetype {
  constructor(fields: Record<string, unknown> = {}) {
    super();
    newAnchor(this, new.target as ArchetypeClass, 'node', fields);
  }

  /**
   * Connect this node to `node` (outgoing), with a typed edge if given.
   * Resolves to the connected node.
   */
  async connect<N extends Node>(node: N, edge?: Edge): Promise<N> {
    return this.link(node, edge, 'out');
  }

  /** Connect `node` to this one (incoming edge). */
  async connectFrom<N extends Node>(node: N, edge?: Edge): Promise<N> {
    return this.link(node, edge, 'in');
  }

  private async link<N extends Node>(node: N, edge: Edge | undefined, direction: 'out' | 'in'): Promise<N> {
    const from = this[ANCHOR];
    const run = runFor(from);
    if (!run) throw graphError('SVC_ERR_NOT_IN_RUN', 'connect() needs a node that belongs to a walker run');
    if (!(node instanceof Node)) throw graphError('SVC_ERR_INVALID_FIELDS', 'connect() takes a node');
    const e = edge ?? new GenericEdge();
    await run.connect(from, node[ANCHOR], e[ANCHOR], direction);
    return node;
  }

  /**
   * Nodes at the end of outgoing edges. `type` is a node class (keeps those
   * targets) or an edge class (keeps the targets of those edges); `filter` a
   * predicate or field values.
   */
  out<N extends Node = Node>(type?: ArchetypeClass<N>, filter?: NodeFilter<N>): Promise<N[]>;
  out(type: ArchetypeClass<Edge>, filter?: NodeFilter): Promise<Node[]>;
  out(type?: ArchetypeClass, filter?: NodeFilter<never>): Promise<Node[]> {
    return this.walk('out', type, filter as NodeFilter);
  }

  /** Nodes at the start of incoming edges (same arguments as {@link out}). */
  in<N extends Node = Node>(type?: ArchetypeClass<N>, filter?: NodeFilter<N>): Promise<N[]>;
  in(type: ArchetypeClass<Edge>, filter?: NodeFilter): Promise<Node[]>;
  in(type?: ArchetypeClass, filter?: NodeFilter<never>): Promise<Node[]> {
    return this.walk('in', type, filter as NodeFilter);
  }

  /** Outgoing edges, optionally of one edge class. */
  outEdges<E extends Edge = Edge>(type?: ArchetypeClass<E>): Promise<E[]> {
    const run = runFor(this[ANCHOR]);
    if (!run) return Promise.resolve([]);
    return run.incidentEdges(this[ANCHOR], 'out', type) as Promise<E[]>;
  }

  /** Incoming edges, optionally of one edge class. */
  inEdges<E extends Edge = Edge>(type?: ArchetypeClass<E>): Promise<E[]> {
    const run = runFor(this[ANCHOR]);
    if (!run) return Promise.resolve([]);
    return run.incidentEdges(this[ANCHOR], 'in', type) as Promise<E[]>;
  }

  /** Remove the edges from this node to `node` (of one edge class if given); resolves to how many. */
  async disconnect(node: Node, type?: ArchetypeClass): Promise<number> {
    const run = runFor(this[ANCHOR]);
    if (!run) throw graphError('SVC_ERR_NOT_IN_RUN', 'disconnect() needs a walker run');
    return run.disconnect(this[ANCHOR], node[ANCHOR], type);
  }

  private walk(direction: 'out' | 'in', type: ArchetypeClass | undefined, filter: NodeFilter | undefined): Promise<Node[]> {
    const run = runFor(this[ANCHOR]);
    if (!run) return Promise.resolve([]);
    return run.neighbors(this[ANCHOR], direction, type, filter);
  }
}

/**
 * An edge between two nodes; subclass it for typed edges with fields.
 *
 * @example
 * class Likes extends Edge { static has = T.Object({ since: T.Number() }); declare since: number }
 * await me.connect(other, new Likes({ since: 2024 }));
 */
export class Edge extends Archetype {
  constructor(fields: Record<string, unknown> = {}) {
    super();
    newAnchor(this, new.target as ArchetypeClass, 'edge', fields);
  }

  /** Id of the node the edge leaves. */
  get sourceId(): string {
    return this[ANCHOR].source as string;
  }

  /** Id of the node the edge reaches. */
  get targetId(): string {
    return this[ANCHOR].target as string;
  }
}

/** The edge used when `connect` is given none. */
export class GenericEdge extends Edge {}

/**
 * The root of a user's graph (or of the shared guest graph). Walkers spawn
 * here unless told otherwise.
 */
export class Root extends Node {
  /** Id of the shared guest graph, where anonymous callers of public walkers run. */
  static readonly SHARED_ID = '00000000000000000000000000000000';
}

registerBase('node', Node.prototype);
registerBase('edge', Edge.prototype);
