/**
 * The transaction of a walker run: an undo copy of every anchor before its
 * first change, the anchors created, the outbox (side effects released once
 * the changes are durable), savepoints for nested walkers, and — at the end
 * — the changes to commit, checked against their schemas.
 */
import { Value } from 'typebox/value';
import { type Access, AccessLevel, levelOf } from './access.ts';
import type { Anchor } from './anchor.ts';
import { prepare } from './archetype.ts';
import { graphError } from './errors.ts';
import type { OutboxEntry } from './outbox.ts';

interface Undo {
  data: Record<string, unknown>;
  edges: string[];
  edgesLoaded: boolean;
  access: Access;
  deleted: boolean;
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

function restore(a: Anchor, undo: Undo): void {
  a.data = undo.data;
  a.edges = undo.edges;
  a.edgesLoaded = undo.edgesLoaded;
  a.access = undo.access;
  a.deleted = undo.deleted;
}

/** What a successful run changed, for the partition to commit. */
export interface RunChanges {
  /** Anchors to write (new or changed), the caller's own and — under a WRITE grant — other roots'. */
  upserts: Anchor[];
  /** Anchors to delete (version-checked). */
  deletes: Anchor[];
  /** New anchors that will not be persisted (destroyed, or never connected). */
  dropped: Anchor[];
  /**
   * Per other root: anchors of it that this run wrote or deleted, and its
   * nodes whose edge lists changed — its partition refreshes them once the
   * commit is durable.
   */
  invalidate: Map<string, { ids: Set<string>; edgeNodes: Set<string> }>;
  /** Side effects to release once the changes are durable (dropped if they never are). */
  outbox: readonly OutboxEntry[];
}

const NO_ENTRIES: readonly OutboxEntry[] = Object.freeze([]);

export interface Savepoint {
  state: Map<Anchor, Undo>;
  created: Set<Anchor>;
  edgeNodes: Set<Anchor>;
  outbox: number;
}

/** Values a stored field may hold: what JSON keeps as it is. */
function jsonSafe(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (value === null) return true;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (Array.isArray(value)) return value.every((v) => jsonSafe(v, depth + 1));
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      return Object.values(value as Record<string, unknown>).every((v) => v !== undefined && jsonSafe(v, depth + 1));
    }
    default:
      return false;
  }
}

export class Transaction {
  private readonly touched = new Map<Anchor, Undo>();
  private readonly created = new Set<Anchor>();
  /** Other roots' nodes whose edge lists this run changed. */
  private readonly edgeNodes = new Set<Anchor>();
  /** Made on the first entry: most runs have none. */
  private outbox: OutboxEntry[] | undefined = undefined;

  constructor(private readonly evict: (a: Anchor) => void) {}

  isCreated(a: Anchor): boolean {
    return this.created.has(a);
  }

  /** Keep an undo copy before the first change (or possible in-place change) of an anchor. */
  touch(a: Anchor): void {
    if (!this.created.has(a) && !this.touched.has(a)) this.touched.set(a, snapshot(a));
  }

  adopt(a: Anchor): void {
    this.created.add(a);
  }

  foreignEdgesChanged(node: Anchor): void {
    this.edgeNodes.add(node);
  }

  /** Hold a side effect until the changes are durable. */
  addOutbox(entry: OutboxEntry): void {
    (this.outbox ??= []).push(entry);
  }

  /** Where a nested walker starts: its failure comes back to this point. */
  savepoint(): Savepoint {
    const state = new Map<Anchor, Undo>();
    for (const a of this.touched.keys()) state.set(a, snapshot(a));
    for (const a of this.created) state.set(a, snapshot(a));
    return { state, created: new Set(this.created), edgeNodes: new Set(this.edgeNodes), outbox: this.outbox?.length ?? 0 };
  }

  rollbackTo(sp: Savepoint): void {
    for (const [a, undo] of [...this.touched]) {
      const at = sp.state.get(a);
      if (at) restore(a, at);
      else {
        restore(a, undo);
        this.touched.delete(a);
      }
    }
    for (const a of [...this.created]) {
      const at = sp.state.get(a);
      if (at) restore(a, at);
      else {
        this.created.delete(a);
        this.forget(a);
      }
    }
    this.edgeNodes.clear();
    for (const a of sp.edgeNodes) this.edgeNodes.add(a);
    if (this.outbox) this.outbox.length = sp.outbox;
  }

  /** Put memory back as it was before the run. */
  rollback(): void {
    for (const [a, undo] of this.touched) restore(a, undo);
    for (const a of this.created) this.forget(a);
    this.clear();
  }

  private forget(a: Anchor): void {
    this.evict(a);
    a.home = null;
    a.root = '';
    a.edges = [];
  }

  /**
   * What to commit. New nodes persist when they have an edge. A node whose
   * only change is its edge list is not written: edges are documents of
   * their own. Every anchor written is checked against its schema and must
   * hold JSON values only (in-place changes to arrays are checked here).
   */
  changes(callerRoot: string): RunChanges {
    const upserts: Anchor[] = [];
    const deletes: Anchor[] = [];
    const dropped: Anchor[] = [];
    const invalidate: RunChanges['invalidate'] = new Map();
    const note = (root: string, kind: 'ids' | 'edgeNodes', id: string) => {
      let entry = invalidate.get(root);
      if (!entry) invalidate.set(root, (entry = { ids: new Set(), edgeNodes: new Set() }));
      entry[kind].add(id);
    };
    for (const a of this.created) {
      if (a.deleted || (a.kind === 'node' && a.edges.length === 0)) dropped.push(a);
      else upserts.push(a);
    }
    for (const [a, undo] of this.touched) {
      if (a.deleted) {
        if (!undo.deleted) deletes.push(a);
      } else if (!Value.Equal(undo.data, a.data) || !Value.Equal(undo.access, a.access)) {
        upserts.push(a);
      } else continue;
      if (a.root !== callerRoot) note(a.root, 'ids', a.id);
    }
    for (const node of this.edgeNodes) if (node.root !== callerRoot) note(node.root, 'edgeNodes', node.id);
    this.authorize(callerRoot, upserts, deletes);
    for (const a of upserts) {
      const info = prepare(a.cls);
      if (!info.check(a.data)) {
        const details = [...Value.Errors(info.schema, a.data)].map((e) => ({ field: e.instancePath.slice(1) || '(fields)', message: e.message }));
        throw graphError('SVC_ERR_BAD_WRITE', `${info.name} no longer fits its schema: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`, { details });
      }
      if (!jsonSafe(a.data)) throw graphError('SVC_ERR_BAD_WRITE', `${info.name} holds a value that is not JSON (a function, BigInt, Date, undefined or a cycle)`);
    }
    return { upserts, deletes, dropped, invalidate, outbox: this.outbox ?? NO_ENTRIES };
  }

  /**
   * Every change to another root's anchor needs WRITE on it, as it was before
   * the run — checked here, at commit, whatever way the change was made
   * (assignment is checked when it happens; an array or object changed in
   * place is only seen here). An edge of another root may also go when the
   * caller owns one of its ends, or destroys an end it may write.
   */
  private authorize(callerRoot: string, upserts: Anchor[], deletes: Anchor[]): void {
    const refuse = (a: Anchor, what: string) =>
      graphError('SVC_ERR_ACCESS_DENIED', `no WRITE access to that ${a.cls.name}: ${what} of another root's ${a.kind} cannot be committed`);
    const mayWrite = (a: Anchor) => levelOf(a.root, (this.touched.get(a) as Undo).access, callerRoot) >= AccessLevel.WRITE;
    for (const a of upserts) {
      if (a.root !== callerRoot && !mayWrite(a)) throw refuse(a, 'a change'); // created anchors are the caller's own
    }
    let ends: Map<string, Anchor> | undefined;
    for (const a of deletes) {
      if (a.root === callerRoot || mayWrite(a)) continue;
      if (a.kind === 'edge') {
        // Its ends were touched when the edge came off their lists.
        ends ??= new Map([...this.touched.keys()].map((x) => [x.id, x]));
        const sides = [a.source, a.target].map((id) => (id === undefined ? undefined : ends?.get(id)));
        if (sides.some((end) => end && (end.root === callerRoot || (end.deleted && mayWrite(end))))) continue;
      }
      throw refuse(a, 'the deletion');
    }
  }

  /** The commit is under way: versions move on, dropped and deleted anchors leave memory. */
  committed(changes: RunChanges): void {
    for (const a of changes.upserts) {
      a.version++;
      a.isNew = false;
    }
    for (const a of changes.deletes) this.evict(a);
    for (const a of changes.dropped) {
      this.evict(a);
      a.home = null;
    }
    this.clear();
  }

  private clear(): void {
    this.touched.clear();
    this.created.clear();
    this.edgeNodes.clear();
    // Not emptied in place: committed changes hand this array on.
    this.outbox = undefined;
  }
}
