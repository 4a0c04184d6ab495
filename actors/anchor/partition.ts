/**
 * The partition actor: one per root (a user's graph, or the shared guest
 * graph), the single writer of the anchors that root owns. It holds them in
 * memory once loaded, runs walkers one at a time against them, and commits
 * each run's changes to the store: the reply is sent when the commit is
 * durable, while the next run may already start on the committed-in-memory
 * state (group commit). A store failure poisons the partition: it restarts
 * and reloads from the store.
 */
import { type ActorContext, type ActorLogic, type ActorRef, rejectWith, replyLater, SvcError } from '../../kernel/index.ts';
import {
  Anchor,
  AccessLevel,
  Archetype,
  type Caller,
  type ForeignOp,
  graphError,
  levelOf,
  privateAccess,
  type Registry,
  Root,
  type RunChanges,
  type RunHost,
  viewOf,
  Walker,
  WalkerRun,
} from '../walker/index.ts';
import { decode, encode } from './codec.ts';
import type { AnchorStore, StoredDoc } from './store.ts';

export type PartitionMsg =
  | { t: 'spawn'; walker: string; fields: unknown; at?: string; caller: Caller }
  | { t: 'call'; fn: string; args: unknown; caller: Caller }
  | { t: 'apply'; ops: ForeignOp[]; from: string }
  | { t: 'poisoned' };

export interface WalkerResult {
  reports: unknown[];
}

export interface FunctionResult {
  result: unknown;
}

/** What every partition of a thread shares. */
export interface PartitionContext {
  registry: Registry;
  store: AnchorStore;
  /** The partition of another root (for writes under a grant). */
  partitionOf(root: string): ActorRef<PartitionMsg, unknown>;
  onQuarantine(id: string, reason: string): void;
}

/** Deep copy of what a walker reported, with nodes and edges as `{id, type, context}`. */
export function toPlain(value: unknown, depth = 0): unknown {
  if (depth > 64) throw graphError('SVC_ERR_INVALID_FIELDS', 'reported value is nested too deeply (or circular)');
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Archetype) {
    const json = value.toJSON();
    return { id: json.id, type: json.type, context: structuredClone(json.context) };
  }
  if (value instanceof Walker) return toPlain(value.toJSON(), depth + 1);
  if (Array.isArray(value)) return value.map((v) => toPlain(v, depth + 1));
  if (value instanceof Date) return new Date(value.getTime());
  if (value instanceof Map) return toPlain(Object.fromEntries(value), depth + 1);
  if (value instanceof Set) return toPlain([...value], depth + 1);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = toPlain((value as Record<string, unknown>)[key], depth + 1);
  return out;
}

/** Errors a caller may see as they are; anything else is the walker's own failure. */
function asCallerError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return graphError('SVC_ERR_WALKER_FAILED', message, { cause: error });
}

export class Partition implements ActorLogic<PartitionMsg, unknown>, RunHost {
  currentRun: WalkerRun | null = null;
  private readonly l1 = new Map<string, Anchor>();
  private poisoned: unknown = undefined;
  private self: ActorRef<PartitionMsg, unknown> | undefined;

  constructor(
    readonly rootId: string,
    private readonly context: PartitionContext,
  ) {}

  get registry(): Registry {
    return this.context.registry;
  }

  /** Anchors held in memory (for tests and measurements). */
  get residentCount(): number {
    return this.l1.size;
  }

  async preStart(ctx: ActorContext<PartitionMsg>): Promise<void> {
    this.self = ctx.self;
    const found = await this.fetch([this.rootId]);
    if (found.get(this.rootId)) return;
    const root = new Anchor(this.rootId, 'node', Root, this.rootId, 0, privateAccess(), {}, [], undefined, undefined);
    root.home = this;
    await this.context.store.commit({ upserts: [encode(root, this.registry.module)], deletes: [] });
    root.version = 1;
    root.isNew = false;
    this.l1.set(root.id, root);
  }

  async receive(msg: PartitionMsg): Promise<unknown> {
    if (this.poisoned !== undefined) throw this.poisoned; // restart: memory no longer matches the store
    if (msg.t === 'poisoned') return undefined;
    if (msg.t === 'apply') return this.applyForeign(msg.ops, msg.from);
    if (msg.caller.rootId !== this.rootId) {
      return rejectWith(graphError('SVC_ERR_ACCESS_DENIED', `a run for ${msg.caller.rootId} reached the partition of ${this.rootId}`));
    }
    const run = new WalkerRun(this, msg.caller);
    this.currentRun = run;
    let value: WalkerResult | FunctionResult;
    try {
      value =
        msg.t === 'spawn'
          ? { reports: toPlain(await run.spawnWalker(msg.walker, msg.fields, msg.at)) as unknown[] }
          : { result: toPlain(await run.callFunction(msg.fn, msg.args)) };
    } catch (error) {
      run.rollback();
      this.currentRun = null;
      return rejectWith(asCallerError(error));
    }
    const changes = run.changes();
    try {
      await this.writeForeign(changes);
    } catch (error) {
      run.rollback();
      this.currentRun = null;
      return rejectWith(asCallerError(error));
    }
    this.currentRun = null;
    if (changes.upserts.length === 0 && changes.deletes.length === 0) {
      run.committed(changes);
      return value;
    }
    const batch = {
      upserts: changes.upserts.map((a) => encode(a, this.registry.module)),
      deletes: changes.deletes.map((a) => ({ id: a.id, version: a.version })),
    };
    // Memory moves on now; the caller hears back once the store has it.
    run.committed(changes);
    const durable = this.context.store.commit(batch).then(
      () => value,
      (error: unknown) => {
        this.poison(error);
        throw asCallerError(error);
      },
    );
    return replyLater(durable);
  }

  private poison(error: unknown): void {
    if (this.poisoned !== undefined) return;
    this.poisoned = error;
    this.self?.tell({ t: 'poisoned' });
  }

  /** Send changes made to other roots' anchors to their partitions (each applies its share atomically). */
  private async writeForeign(changes: RunChanges): Promise<void> {
    if (changes.foreign.length === 0) return;
    const byOwner = new Map<string, ForeignOp[]>();
    for (const op of changes.foreign) {
      const ops = byOwner.get(op.root) ?? [];
      ops.push(op);
      byOwner.set(op.root, ops);
    }
    for (const [owner, ops] of byOwner) {
      await this.context.partitionOf(owner).ask({ t: 'apply', ops, from: this.rootId });
    }
  }

  /**
   * Another root's walker changed anchors of this root under a grant: check
   * access (WRITE for data and deletion, CONNECT for edges) and versions,
   * apply, commit. Edge-list changes need no write: edges are documents of
   * the walker's own root; only the lists held in memory here are updated.
   */
  private async applyForeign(ops: ForeignOp[], from: string): Promise<unknown> {
    await this.fetch(ops.map((o) => o.id));
    for (const op of ops) {
      const a = this.l1.get(op.id);
      if (!a || a.root !== this.rootId) return rejectWith(graphError('SVC_ERR_NODE_NOT_FOUND', `no anchor ${op.id} in ${this.rootId}`));
      const writes = op.data !== undefined || op.deleted === true;
      if (writes && a.version !== op.version) return rejectWith(graphError('SVC_ERR_CONFLICT', `${op.id} changed since it was read`));
      if (levelOf(a.root, a.access, from) < (writes ? AccessLevel.WRITE : AccessLevel.CONNECT)) {
        return rejectWith(graphError('SVC_ERR_ACCESS_DENIED', `${from} may not change ${op.id}`));
      }
    }
    const changed: Anchor[] = [];
    const deleted: Anchor[] = [];
    const undo: { a: Anchor; data: Record<string, unknown>; deleted: boolean }[] = [];
    for (const op of ops) {
      const a = this.l1.get(op.id) as Anchor;
      if (op.data || op.deleted) undo.push({ a, data: a.data, deleted: a.deleted });
      if (op.data) {
        a.data = structuredClone(op.data);
        changed.push(a);
      }
      if (op.deleted) {
        a.deleted = true;
        deleted.push(a);
      }
    }
    if (changed.length || deleted.length) {
      try {
        await this.context.store.commit({
          upserts: changed.filter((a) => !a.deleted).map((a) => encode(a, this.registry.module)),
          deletes: deleted.map((a) => ({ id: a.id, version: a.version })),
        });
      } catch (error) {
        for (const u of undo) Object.assign(u.a, { data: u.data, deleted: u.deleted });
        return rejectWith(asCallerError(error));
      }
      for (const a of changed) if (!a.deleted) a.version++;
      for (const a of deleted) this.l1.delete(a.id);
    }
    for (const op of ops) {
      const a = this.l1.get(op.id);
      if (!a?.edgesLoaded) continue;
      for (const id of op.addEdges ?? []) if (!a.edges.includes(id)) a.edges.push(id);
      for (const id of op.removeEdges ?? []) {
        const i = a.edges.indexOf(id);
        if (i >= 0) a.edges.splice(i, 1);
      }
    }
    return true;
  }

  // ---- RunHost -------------------------------------------------------------

  resident(id: string): Anchor | undefined {
    return this.l1.get(id);
  }

  async fetch(ids: string[]): Promise<Map<string, Anchor>> {
    const out = new Map<string, Anchor>();
    if (ids.length === 0) return out;
    let docs: StoredDoc[];
    try {
      docs = await this.context.store.get(ids);
    } catch (error) {
      throw graphError('SVC_ERR_STORE', `loading anchors failed: ${(error as Error).message}`, { cause: error });
    }
    for (const doc of docs) {
      const anchor = this.materialize(doc);
      if (anchor) out.set(anchor.id, anchor);
    }
    return out;
  }

  async fetchEdges(nodeId: string): Promise<Anchor[]> {
    let docs: StoredDoc[];
    try {
      docs = await this.context.store.edges(nodeId);
    } catch (error) {
      throw graphError('SVC_ERR_STORE', `loading edges failed: ${(error as Error).message}`, { cause: error });
    }
    const out: Anchor[] = [];
    for (const doc of docs) {
      const anchor = this.materialize(doc);
      if (anchor && !anchor.deleted) out.push(anchor);
    }
    return out;
  }

  /** A stored document as an anchor: the resident copy when there is one (it may hold committed changes not yet flushed). */
  private materialize(doc: StoredDoc): Anchor | undefined {
    const resident = this.l1.get(doc.id);
    if (resident) return resident;
    const decoded = decode(doc, this.registry);
    if ('quarantine' in decoded) {
      this.quarantine(doc.id, decoded.quarantine);
      return undefined;
    }
    const anchor = decoded.anchor;
    if (anchor.root === this.rootId) {
      anchor.home = this;
      this.l1.set(anchor.id, anchor);
    }
    return anchor;
  }

  private quarantine(id: string, reason: string): void {
    this.context.onQuarantine(id, reason);
    this.context.store.quarantine(id, reason).catch((error: unknown) => {
      // Not moved: it stays where it is (never dropped), and is reported again at the next load.
      this.context.onQuarantine(id, `could not be moved to quarantine: ${(error as Error).message}`);
    });
  }

  adopt(anchor: Anchor): void {
    this.l1.set(anchor.id, anchor);
  }

  evict(anchor: Anchor): void {
    if (this.l1.get(anchor.id) === anchor) this.l1.delete(anchor.id);
  }

  /** The root node (for tests). */
  root(): Root | undefined {
    const a = this.l1.get(this.rootId);
    return a ? viewOf<Root>(a) : undefined;
  }
}
