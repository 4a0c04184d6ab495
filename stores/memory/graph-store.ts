/**
 * An anchor store in memory: for tests and for running snippets without
 * touching disk. Bodies are kept as JSON text — or, with `bodyForm: 'object'`,
 * as objects, as a document database takes them — and what comes back is a copy.
 */
import { storeError, fenceLapsed, type AnchorStore, type BodyForm, type CommitBatch, type QuarantineEntry, type StoredDoc, type StoreStats } from '../../actors/graph/index.ts';

/**
 * @example
 * const graph = new Graph({ system, registry, store: new MemoryStore() })
 */
export class MemoryStore implements AnchorStore {
  readonly kind = 'memory';
  readonly bodyForm: BodyForm;
  private docs = new Map<string, StoredDoc>();
  /** Node id → ids of edges that touch it, in insertion order. */
  private incident = new Map<string, Set<string>>();
  private quarantine_ = new Map<string, QuarantineEntry>();
  private aliases_ = new Map<string, string>();
  /** Owner token per claimed root. */
  private owners = new Map<string, number>();
  /** Insertion number of each document (the cursor of {@link scan}). */
  private seqs = new Map<string, number>();
  private lastSeq = 0;
  private closed = false;

  constructor(options: { bodyForm?: BodyForm } = {}) {
    this.bodyForm = options.bodyForm ?? 'text';
  }

  /**
   * A body as kept: text (an object is stringified), or — in object form — a
   * copy of its own; text handed to an object store stays text, as a document
   * database would keep a string field (decoding takes both).
   */
  private keep(body: unknown): unknown {
    if (typeof body === 'string') return body;
    return this.bodyForm === 'text' ? JSON.stringify(body) : structuredClone(body);
  }

  /** A document handed out: the caller may change it (an object body is copied). */
  private copy<D extends StoredDoc>(doc: D): D {
    return { ...doc, body: typeof doc.body === 'object' && doc.body !== null ? structuredClone(doc.body) : doc.body };
  }

  private check(): void {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the store is closed');
  }

  async get(ids: readonly string[]): Promise<StoredDoc[]> {
    this.check();
    const out: StoredDoc[] = [];
    for (const id of ids) {
      const doc = this.docs.get(id);
      if (doc) out.push(this.copy(doc));
    }
    return out;
  }

  async edges(nodeId: string): Promise<StoredDoc[]> {
    this.check();
    const out: StoredDoc[] = [];
    for (const id of this.incident.get(nodeId) ?? []) {
      const doc = this.docs.get(id);
      if (doc) out.push(this.copy(doc));
    }
    return out;
  }

  private put(doc: StoredDoc): void {
    if (!this.docs.has(doc.id)) this.seqs.set(doc.id, ++this.lastSeq);
    this.unindex(doc.id);
    this.docs.set(doc.id, doc);
    for (const end of [doc.source, doc.target]) {
      if (!end) continue;
      let set = this.incident.get(end);
      if (!set) this.incident.set(end, (set = new Set()));
      set.add(doc.id);
    }
  }

  private remove(id: string): void {
    this.unindex(id);
    this.docs.delete(id);
    this.seqs.delete(id);
  }

  private unindex(id: string): void {
    const old = this.docs.get(id);
    for (const end of [old?.source, old?.target]) {
      if (!end) continue;
      const set = this.incident.get(end);
      set?.delete(id);
      if (set?.size === 0) this.incident.delete(end);
    }
  }

  async commit(batch: CommitBatch): Promise<void> {
    this.check();
    const chain = batch.chain;
    if (chain?.broken) throw chain.refusal();
    const conflict = (message: string) => {
      const error = storeError('SVC_ERR_CONFLICT', message);
      chain?.break(error);
      return error;
    };
    if (batch.fence && ((this.owners.get(batch.fence.root) ?? 0) !== batch.fence.token || fenceLapsed(batch.fence))) {
      const error = storeError('SVC_ERR_FENCED');
      chain?.break(error);
      throw error;
    }
    for (const doc of batch.upserts) {
      const have = this.docs.get(doc.id)?.version ?? 0;
      if (have !== doc.version - 1) throw conflict(`${doc.id} is at version ${have}, expected ${doc.version - 1}`);
    }
    for (const del of batch.deletes) {
      const have = this.docs.get(del.id)?.version;
      if (have !== undefined && have !== del.version) throw conflict(`${del.id} is at version ${have}, expected ${del.version}`);
    }
    // Every body first: one that cannot be kept fails the batch before any of it is applied.
    let kept: StoredDoc[];
    try {
      kept = batch.upserts.map((doc) => ({ ...doc, body: this.keep(doc.body) }));
    } catch (error) {
      const failure = storeError('SVC_ERR_STORE', `commit failed: ${(error as Error).message}`, { cause: error });
      chain?.break(failure);
      throw failure;
    }
    for (const doc of kept) this.put(doc);
    for (const del of batch.deletes) this.remove(del.id);
  }

  async claim(rootId: string): Promise<number> {
    this.check();
    const token = (this.owners.get(rootId) ?? 0) + 1;
    this.owners.set(rootId, token);
    return token;
  }

  async quarantine(id: string, reason: string): Promise<void> {
    this.check();
    const doc = this.docs.get(id);
    if (!doc) return;
    this.quarantine_.set(id, { ...doc, reason, at: new Date().toISOString() });
    this.remove(id);
  }

  async quarantined(): Promise<QuarantineEntry[]> {
    return [...this.quarantine_.values()].map((q) => this.copy(q));
  }

  async restore(id: string): Promise<boolean> {
    const q = this.quarantine_.get(id);
    if (!q) return false;
    const { reason: _reason, at: _at, ...doc } = q;
    this.put(doc);
    this.quarantine_.delete(id);
    return true;
  }

  async aliases(): Promise<[string, string][]> {
    return [...this.aliases_];
  }

  async addAlias(from: string, to: string): Promise<void> {
    this.aliases_.set(from, to);
  }

  async deleteRoot(rootId: string): Promise<number> {
    this.check();
    let n = 0;
    for (const doc of [...this.docs.values()]) {
      if (doc.root !== rootId) continue;
      this.remove(doc.id);
      n++;
    }
    for (const [id, q] of this.quarantine_) {
      if (q.root !== rootId) continue;
      this.quarantine_.delete(id);
      n++;
    }
    return n;
  }

  async count(): Promise<number> {
    return this.docs.size;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  // What the operator commands (`svc db`) need besides.

  async scan(after: number, limit: number): Promise<{ docs: StoredDoc[]; next: number }> {
    this.check();
    const docs: StoredDoc[] = [];
    let next = after;
    // The map keeps first-insertion order, and seqs grow along it.
    for (const [id, doc] of this.docs) {
      if (docs.length >= limit) break;
      const seq = this.seqs.get(id) ?? 0;
      if (seq <= after) continue;
      docs.push(this.copy(doc));
      next = seq;
    }
    return { docs, next };
  }

  async putDocs(docs: readonly StoredDoc[]): Promise<void> {
    this.check();
    const kept = docs.map((doc) => ({ ...doc, body: this.keep(doc.body) }));
    for (const doc of kept) this.put(doc);
  }

  async putQuarantine(entries: readonly QuarantineEntry[]): Promise<void> {
    this.check();
    for (const entry of entries) this.quarantine_.set(entry.id, { ...entry, body: this.keep(entry.body) });
  }

  async dropQuarantined(id: string): Promise<boolean> {
    this.check();
    return this.quarantine_.delete(id);
  }

  async stats(): Promise<StoreStats> {
    this.check();
    const byType: Record<string, number> = {};
    const roots = new Set<string>();
    let nodes = 0;
    for (const doc of this.docs.values()) {
      byType[doc.arch_type] = (byType[doc.arch_type] ?? 0) + 1;
      roots.add(doc.root);
      if (doc.kind === 'node') nodes++;
    }
    return {
      kind: this.kind,
      documents: this.docs.size,
      nodes,
      edges: this.docs.size - nodes,
      roots: roots.size,
      byType,
      quarantined: this.quarantine_.size,
      aliases: this.aliases_.size,
      backend: { body_form: this.bodyForm },
    };
  }

  /** Test hook: put a raw document in place (to simulate old or corrupt data). */
  putRaw(doc: StoredDoc): void {
    this.put(doc);
  }
}
