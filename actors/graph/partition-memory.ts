/**
 * What a partition holds of its root: the anchors resident in memory, the
 * changes handed to the store and not durable yet, and the loading of anchors
 * and edges from the store (a document that does not decode goes to
 * quarantine) — the {@link RunHost} its walker runs read and write through.
 * `Partition` (partition.ts) extends it with the actor: messages, runs, commits.
 */
import { hasCode } from '../../kernel/index.ts';
import { type Anchor, type Registry, type Root, type RunHost, viewOf, type WalkerRun, type WalkerLoggerFactory } from '../walker/index.ts';
import { decode } from './codec.ts';
import { storeError } from './errors.ts';
import type { PartitionContext } from './partition.ts';
import type { StoredDoc } from './store.ts';

export class PartitionMemory implements RunHost {
  currentRun: WalkerRun | null = null;
  protected readonly l1 = new Map<string, Anchor>();
  /** Ids deleted in memory whose deletion is not durable yet: the store still has them. */
  protected readonly pendingDeletes = new Set<string>();
  /** New edges not durable yet, by id: a node reloading its edges must still see them. */
  protected readonly pendingEdges = new Map<string, Anchor>();

  constructor(
    readonly rootId: string,
    protected readonly context: PartitionContext,
  ) {}

  get registry(): Registry {
    return this.context.registry;
  }

  get logger(): WalkerLoggerFactory | undefined {
    return this.context.logger;
  }

  /** Anchors held in memory (for tests and measurements). */
  get residentCount(): number {
    return this.l1.size;
  }

  /**
   * Another root's run changed anchors of this root (under a grant) and its
   * batch is durable: drop the copies held here (they reload from the
   * store), and reload the edge lists of nodes it connected or disconnected.
   */
  protected async invalidate(ids: string[], edgeNodes: string[]): Promise<void> {
    for (const id of ids) this.l1.delete(id);
    for (const id of edgeNodes) {
      const node = this.l1.get(id);
      if (node) {
        node.edges = [];
        node.edgesLoaded = false;
      }
    }
    if (!this.l1.has(this.rootId)) await this.fetch([this.rootId]);
  }

  // ---- RunHost -------------------------------------------------------------

  resident(id: string): Anchor | undefined {
    return this.l1.get(id);
  }

  residentRoot(): Anchor {
    const root = this.l1.get(this.rootId);
    if (!root) throw storeError('SVC_ERR_STORE', 'the caller’s root is not loaded');
    return root;
  }

  async fetch(ids: string[]): Promise<Map<string, Anchor>> {
    const out = new Map<string, Anchor>();
    if (ids.length === 0) return out;
    const docs = await this.readStore('anchors', () => this.context.store.get(ids));
    for (const doc of docs) {
      const anchor = this.materialize(doc);
      if (anchor) out.set(anchor.id, anchor);
    }
    return out;
  }

  async fetchEdges(nodeId: string): Promise<Anchor[]> {
    const docs = await this.readStore('edges', () => this.context.store.edges(nodeId));
    const out: Anchor[] = [];
    const seen = new Set<string>();
    for (const doc of docs) {
      const anchor = this.materialize(doc);
      if (anchor && !anchor.deleted) {
        out.push(anchor);
        seen.add(anchor.id);
      }
    }
    // New edges of this root not durable yet are not in the store: add them.
    for (const edge of this.pendingEdges.values()) {
      if (!seen.has(edge.id) && !edge.deleted && (edge.source === nodeId || edge.target === nodeId)) out.push(edge);
    }
    return out;
  }

  /** A read of the store: an outage as it is (the caller may retry), any other failure `SVC_ERR_STORE` naming what was loaded. */
  private async readStore(what: string, read: () => Promise<StoredDoc[]>): Promise<StoredDoc[]> {
    try {
      return await read();
    } catch (error) {
      if (hasCode(error, 'SVC_ERR_STORE_UNAVAILABLE')) throw error;
      throw storeError('SVC_ERR_STORE', `loading ${what} failed: ${(error as Error).message}`, { cause: error });
    }
  }

  /**
   * A stored document as an anchor: the resident copy when there is one (it
   * may hold committed changes not yet durable); nothing for one deleted in
   * memory whose deletion is not durable yet.
   */
  private materialize(doc: StoredDoc): Anchor | undefined {
    const resident = this.l1.get(doc.id);
    if (resident) return resident;
    if (this.pendingDeletes.has(doc.id) || this.quarantining.has(doc.id)) return undefined;
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

  /** Documents on their way to quarantine: read again meanwhile (the store has not moved them yet), they are not reported twice. */
  private readonly quarantining = new Set<string>();

  private quarantine(id: string, reason: string): void {
    this.context.onQuarantine(id, reason);
    this.quarantining.add(id);
    this.context.store
      .quarantine(id, reason)
      .catch((error: unknown) => {
        // Not moved: it stays where it is (never dropped), and is reported again at the next load.
        this.context.onQuarantine(id, `could not be moved to quarantine: ${(error as Error).message}`);
      })
      .finally(() => this.quarantining.delete(id));
  }

  /**
   * The registry's classes were replaced in place (`svc start --dev`): each
   * resident anchor (and its view) takes the class now registered for its
   * type; its fields, and its changes not durable yet, stay as they are.
   */
  reclassResident(): void {
    for (const anchors of [this.l1.values(), this.pendingEdges.values()]) {
      for (const anchor of anchors) {
        const cls = this.registry.resolve(anchor.cls.name);
        if (!cls || cls === anchor.cls) continue;
        anchor.cls = cls;
        // Its view, if made already (a walker may hold it): the same object, of the new class.
        if (anchor.obj) Object.setPrototypeOf(anchor.obj, cls.prototype);
      }
    }
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
