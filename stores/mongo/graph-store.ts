/**
 * The MongoDB anchor store (`docdb_uri = "mongodb://…"`, official driver).
 * Anchors live in the `_anchors` collection of database `svc_db` (or the
 * database the URI names), `_id` the anchor id; quarantine, aliases and
 * owner tokens beside them (`_anchors_quarantine`, `_anchors_aliases`,
 * `_anchors_owners`). Bodies are kept as objects (`bodyForm = 'object'`).
 *
 * A commit is a multi-document transaction of version-checked writes, so the
 * server must be a replica set (a one-member set will do) or a sharded
 * cluster, as MongoDB requires for transactions: `connect` refuses a
 * standalone server with `SVC_ERR_STORE_BACKEND`. Transactions commit with
 * the URI's write concern (the server's default, `majority` since MongoDB 5.0).
 *
 * Group commit: batches handed over while a transaction runs go together in
 * the next one, in the order `commit` was called. MongoDB has no savepoints,
 * so each batch stays all or nothing another way: the transaction reads the
 * versions and owner tokens its batches need, decides batch by batch (chains
 * included, see `CommitChain`) and writes only the batches that pass — every
 * write still conditional, so one that meets a concurrent change aborts the
 * transaction, and its batches are then tried again one transaction each.
 */
import type { AnyBulkWriteOperation, ClientSession, Collection, Db, MongoClient } from 'mongodb';
import { SvcError } from '../../kernel/index.ts';
import { storeError, fenceLapsed, type AnchorStore, type CommitBatch, type CommitChain, type QuarantineEntry, type StoreStats, type StoredDoc } from '../../actors/graph/index.ts';
import { connectMongo, ensureCollections, mongoFailure } from './connection.ts';
import { mongo } from './driver.ts';

export interface MongoStoreOptions {
  /** The database (default: the one the URI names, else `svc_db`). */
  database?: string;
  /** The anchors' collection (default `_anchors`); quarantine, aliases and owners are named after it. */
  collection?: string;
}

/** An anchor as stored: the document's fields, `_id` its id; `source`/`target` only on edges (sparse indexes). */
interface AnchorRow {
  _id: string;
  root: string;
  kind: StoredDoc['kind'];
  arch_module: string;
  arch_type: string;
  fingerprint: string;
  format_version: number;
  version: number;
  source?: string;
  target?: string;
  body: unknown;
  /** Insertion order (see {@link nextSeq}). */
  seq: number;
}

interface QuarantineRow extends Omit<AnchorRow, 'seq'> {
  reason: string;
  at: string;
}

interface AliasRow {
  _id: string;
  to: string;
}

interface OwnerRow {
  _id: string;
  token: number;
  /** Fenced commits: written by each, so that a claim and a commit of one root never overlap unseen. */
  commits?: number;
}

interface Pending {
  batch: CommitBatch;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** A batch's fate in a group: applied (null), failed, or refused because an earlier batch of its chain failed. */
type Outcome = SvcError | 'refused' | null;

/** A conditional write missed though the reads said it would match: the group is retried batch by batch. */
class Unexpected extends Error {}

/** Documents (upserts and deletions) one transaction takes at most, unless a single batch is bigger. */
const GROUP_DOCS = 1000;

let lastSeq = 0;

/**
 * Insertion order: strictly increasing in this thread and, being time first
 * (ms × 1024), roughly ordered across threads and processes.
 */
function nextSeq(): number {
  lastSeq = Math.max(lastSeq + 1, Date.now() * 1024);
  return lastSeq;
}

function toRow(doc: StoredDoc, seq: number): AnchorRow {
  return { _id: doc.id, ...fieldsOf(doc), seq };
}

/** Every field but `_id` and `seq`; `source` and `target` only when set. */
function fieldsOf(doc: StoredDoc): Omit<AnchorRow, '_id' | 'seq'> {
  const out: Omit<AnchorRow, '_id' | 'seq'> = {
    root: doc.root,
    kind: doc.kind,
    arch_module: doc.arch_module,
    arch_type: doc.arch_type,
    fingerprint: doc.fingerprint,
    format_version: doc.format_version,
    version: doc.version,
    body: doc.body,
  };
  if (doc.source != null) out.source = doc.source;
  if (doc.target != null) out.target = doc.target;
  return out;
}

function toDoc(row: Omit<AnchorRow, 'seq'>): StoredDoc {
  return {
    id: row._id,
    root: row.root,
    kind: row.kind,
    arch_module: row.arch_module,
    arch_type: row.arch_type,
    fingerprint: row.fingerprint,
    format_version: row.format_version,
    version: row.version,
    source: row.source ?? null,
    target: row.target ?? null,
    body: row.body,
  };
}

/**
 * Why a batch cannot be applied over `versions` (id → stored version) and
 * `tokens` (root → owner token), or undefined when it can.
 */
function refusalOf(batch: CommitBatch, versions: ReadonlyMap<string, number>, tokens: ReadonlyMap<string, number>): SvcError | undefined {
  if (batch.fence && ((tokens.get(batch.fence.root) ?? 0) !== batch.fence.token || fenceLapsed(batch.fence))) return storeError('SVC_ERR_FENCED');
  // The batch's own earlier writes count for its later ones.
  const mine = new Map<string, number | undefined>();
  const have = (id: string) => (mine.has(id) ? mine.get(id) : versions.get(id));
  for (const doc of batch.upserts) {
    const v = have(doc.id) ?? 0;
    if (v !== doc.version - 1) return storeError('SVC_ERR_CONFLICT', doc.version === 1 ? `${doc.id} already exists` : `${doc.id} is at version ${v}, expected ${doc.version - 1}`);
    mine.set(doc.id, doc.version);
  }
  for (const del of batch.deletes) {
    const v = have(del.id);
    if (v !== undefined && v !== del.version) return storeError('SVC_ERR_CONFLICT', `${del.id} is at version ${v}, expected ${del.version}`);
    mine.set(del.id, undefined);
  }
  return undefined;
}

/**
 * The MongoDB anchor store; needs a replica set or a sharded cluster (see the file's comment).
 *
 * @example
 * const store = await MongoStore.connect('mongodb://db-0,db-1,db-2/svc_db?replicaSet=rs0');
 * await store.commit({ upserts: [doc], deletes: [] });
 */
export class MongoStore implements AnchorStore {
  readonly kind = 'mongo';
  readonly bodyForm = 'object';
  private readonly anchors: Collection<AnchorRow>;
  private readonly quarantine_: Collection<QuarantineRow>;
  private readonly aliases_: Collection<AliasRow>;
  private readonly owners: Collection<OwnerRow>;
  private pending: Pending[] = [];
  /** A drain loop is writing the pending batches. */
  private draining = false;
  /** Settles when the current drain loop ends. */
  private idle: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    collection: string,
  ) {
    this.anchors = db.collection<AnchorRow>(collection);
    this.quarantine_ = db.collection<QuarantineRow>(`${collection}_quarantine`);
    this.aliases_ = db.collection<AliasRow>(`${collection}_aliases`);
    this.owners = db.collection<OwnerRow>(`${collection}_owners`);
  }

  /**
   * Connect, check the server takes transactions, and create the collections
   * and indexes that are missing. The URI may carry any driver option
   * (`tls=true`, `replicaSet=…`, credentials); it never appears in a message.
   */
  static async connect(uri: string, options: MongoStoreOptions = {}): Promise<MongoStore> {
    const { client, db } = await connectMongo(uri, options.database, 'anchor store');
    const store = new MongoStore(client, db, options.collection ?? '_anchors');
    try {
      await store.prepare();
    } catch (error) {
      await client.close().catch(() => undefined);
      throw mongoFailure(error, 'preparing the anchor collections');
    }
    return store;
  }

  private async prepare(): Promise<void> {
    await ensureCollections(this.db, [this.anchors.collectionName, this.quarantine_.collectionName, this.aliases_.collectionName, this.owners.collectionName]);
    await this.anchors.createIndexes([
      // Sparse: only edges have ends, and a node's edges are found through them.
      { key: { source: 1 }, name: 'source', sparse: true },
      { key: { target: 1 }, name: 'target', sparse: true },
      { key: { root: 1 }, name: 'root' },
      { key: { seq: 1 }, name: 'seq' },
    ]);
    await this.quarantine_.createIndexes([
      { key: { root: 1 }, name: 'root' },
      { key: { at: 1 }, name: 'at' },
    ]);
  }

  private check(): void {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the store is closed');
  }

  /** Run a driver call, its failures as store errors. */
  private async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    this.check();
    try {
      return await fn();
    } catch (error) {
      throw mongoFailure(error, what);
    }
  }

  /** One transaction on the primary (retried by the driver on transient errors: `fn` may run more than once). */
  private transaction<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    return this.client.withSession((session) => session.withTransaction(() => fn(session), { readPreference: 'primary' }));
  }

  async get(ids: readonly string[]): Promise<StoredDoc[]> {
    this.check();
    if (ids.length === 0) return [];
    return this.run('get', async () => (await this.anchors.find({ _id: { $in: [...ids] } }).toArray()).map(toDoc));
  }

  async edges(nodeId: string): Promise<StoredDoc[]> {
    return this.run('edges', async () =>
      (
        await this.anchors
          .find({ $or: [{ source: nodeId }, { target: nodeId }] })
          .sort({ seq: 1 })
          .toArray()
      ).map(toDoc),
    );
  }

  commit(batch: CommitBatch): Promise<void> {
    this.check();
    if (batch.chain?.broken) return Promise.reject(batch.chain.refusal());
    return new Promise((resolve, reject) => {
      this.pending.push({ batch, resolve, reject });
      if (!this.draining) {
        this.draining = true;
        this.idle = this.drain();
      }
    });
  }

  /** Write the pending batches, group after group, until none is left. Never rejects. */
  private async drain(): Promise<void> {
    try {
      // The batches handed over in this tick go together.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.pending.length > 0) await this.flush(this.takeGroup());
    } finally {
      // In the same synchronous step as the last check: a commit from now on starts a new loop.
      this.draining = false;
    }
  }

  /** The oldest pending batches, up to {@link GROUP_DOCS} documents (one batch at least). */
  private takeGroup(): Pending[] {
    let docs = 0;
    let n = 0;
    for (const p of this.pending) {
      const size = p.batch.upserts.length + p.batch.deletes.length;
      if (n > 0 && docs + size > GROUP_DOCS) break;
      docs += size;
      n++;
    }
    return this.pending.splice(0, n);
  }

  /**
   * Apply a group in one transaction. When the transaction fails on
   * something other than the server's availability, the batches are tried
   * again one transaction each, in order, so each gets its own answer.
   * Resolves to the availability failure that settled the group, if any.
   */
  private async flush(group: Pending[]): Promise<SvcError | undefined> {
    const live = group.filter((p) => {
      const chain = p.batch.chain;
      if (chain?.broken) p.reject(chain.refusal());
      return !chain?.broken;
    });
    if (live.length === 0) return undefined;
    let outcomes: Outcome[];
    try {
      outcomes = await this.transaction((session) => this.write(live.map((p) => p.batch), session));
    } catch (error) {
      let failure = error instanceof Unexpected || (error instanceof mongo().MongoError && error.code === 11000) ? undefined : mongoFailure(error, 'commit');
      if (live.length > 1 && failure?.code !== 'SVC_ERR_STORE_UNAVAILABLE') {
        for (const [i, p] of live.entries()) {
          const down = await this.flush([p]);
          if (down) {
            this.fail(live.slice(i + 1), down);
            return down;
          }
        }
        return undefined;
      }
      // One batch whose write met a concurrent change the reads did not see: a conflict.
      failure ??= storeError('SVC_ERR_CONFLICT', 'a document of this batch was changed by a concurrent writer', { cause: error });
      this.fail(live, failure);
      return failure.code === 'SVC_ERR_STORE_UNAVAILABLE' ? failure : undefined;
    }
    // In order: a failure breaks its chain before the chain's later batches are told why they were refused.
    live.forEach((p, i) => {
      const outcome = outcomes[i] ?? null;
      if (outcome === null) return p.resolve();
      if (outcome === 'refused') return p.reject((p.batch.chain as CommitChain).refusal());
      p.batch.chain?.break(outcome);
      p.reject(outcome);
    });
    return undefined;
  }

  private fail(batches: readonly Pending[], failure: SvcError): void {
    for (const p of batches) {
      p.batch.chain?.break(failure);
      p.reject(failure);
    }
  }

  /**
   * Inside a transaction: read what the batches need, decide each in order,
   * write those that pass, and check every write landed. Changes nothing in
   * memory (the driver may run it again).
   */
  private async write(batches: readonly CommitBatch[], session: ClientSession): Promise<Outcome[]> {
    const roots = [...new Set(batches.flatMap((b) => (b.fence ? [b.fence.root] : [])))];
    const tokens = new Map<string, number>();
    if (roots.length > 0) {
      // A write to each owner document before reading it: a claim landing meanwhile either waits
      // for this transaction or aborts it (and it runs again), so the tokens read hold until it commits.
      await this.owners.bulkWrite(
        roots.map((root) => ({ updateOne: { filter: { _id: root }, update: { $inc: { commits: 1 }, $setOnInsert: { token: 0 } }, upsert: true } })),
        { session, ordered: true },
      );
      for (const owner of await this.owners.find({ _id: { $in: roots } }, { session }).toArray()) tokens.set(owner._id, owner.token);
    }
    const ids = [...new Set(batches.flatMap((b) => [...b.upserts.map((d) => d.id), ...b.deletes.map((d) => d.id)]))];
    const versions = new Map<string, number>();
    if (ids.length > 0) {
      for (const row of await this.anchors.find({ _id: { $in: ids } }, { session, projection: { version: 1 } }).toArray()) versions.set(row._id, row.version);
    }
    const writes: AnyBulkWriteOperation<AnchorRow>[] = [];
    const expected = { inserted: 0, matched: 0, deleted: 0 };
    const broken = new Set<CommitChain>();
    const outcomes: Outcome[] = [];
    for (const batch of batches) {
      if (batch.chain && broken.has(batch.chain)) {
        outcomes.push('refused');
        continue;
      }
      const refusal = refusalOf(batch, versions, tokens);
      if (refusal) {
        if (batch.chain) broken.add(batch.chain);
        outcomes.push(refusal);
        continue;
      }
      for (const doc of batch.upserts) {
        if (doc.version === 1) {
          writes.push({ insertOne: { document: toRow(doc, nextSeq()) } });
          expected.inserted++;
        } else {
          const unset = { ...(doc.source == null ? { source: '' as const } : {}), ...(doc.target == null ? { target: '' as const } : {}) };
          const update = Object.keys(unset).length > 0 ? { $set: fieldsOf(doc), $unset: unset } : { $set: fieldsOf(doc) };
          writes.push({ updateOne: { filter: { _id: doc.id, version: doc.version - 1 }, update } });
          expected.matched++;
        }
        versions.set(doc.id, doc.version);
      }
      for (const del of batch.deletes) {
        // Gone already: nothing to delete.
        if (!versions.has(del.id)) continue;
        writes.push({ deleteOne: { filter: { _id: del.id, version: del.version } } });
        expected.deleted++;
        versions.delete(del.id);
      }
      outcomes.push(null);
    }
    if (writes.length > 0) {
      const result = await this.anchors.bulkWrite(writes, { session, ordered: true });
      if (result.insertedCount !== expected.inserted || result.matchedCount !== expected.matched || result.deletedCount !== expected.deleted) throw new Unexpected();
    }
    return outcomes;
  }

  async claim(rootId: string): Promise<number> {
    return this.run('claim', async () => {
      // Two first claims of a root may race to insert its document; the loser's upsert is tried again.
      for (let attempt = 0; ; attempt++) {
        try {
          const owner = await this.owners.findOneAndUpdate({ _id: rootId }, { $inc: { token: 1 } }, { upsert: true, returnDocument: 'after' });
          if (!owner) throw new Error('the owner document did not come back');
          return owner.token;
        } catch (error) {
          if (!(error instanceof mongo().MongoError && error.code === 11000) || attempt >= 2) throw error;
        }
      }
    });
  }

  async quarantine(id: string, reason: string): Promise<void> {
    await this.run('quarantine', () =>
      this.transaction(async (session) => {
        const row = await this.anchors.findOne({ _id: id }, { session });
        if (!row) return;
        const { seq: _seq, ...doc } = row;
        await this.quarantine_.replaceOne({ _id: id }, { ...doc, reason, at: new Date().toISOString() }, { upsert: true, session });
        await this.anchors.deleteOne({ _id: id }, { session });
      }),
    );
  }

  async quarantined(): Promise<QuarantineEntry[]> {
    return this.run('quarantined', async () =>
      (await this.quarantine_.find().sort({ at: 1 }).toArray()).map((q) => ({ ...toDoc(q), reason: q.reason, at: q.at })),
    );
  }

  async restore(id: string): Promise<boolean> {
    return this.run('restore', () =>
      this.transaction(async (session) => {
        const entry = await this.quarantine_.findOne({ _id: id }, { session });
        if (!entry) return false;
        const { reason: _reason, at: _at, ...doc } = entry;
        await this.anchors.insertOne({ ...doc, seq: nextSeq() }, { session });
        await this.quarantine_.deleteOne({ _id: id }, { session });
        return true;
      }),
    );
  }

  async aliases(): Promise<[string, string][]> {
    return this.run('aliases', async () => (await this.aliases_.find().toArray()).map((a): [string, string] => [a._id, a.to]));
  }

  async addAlias(from: string, to: string): Promise<void> {
    await this.run('addAlias', () => this.aliases_.replaceOne({ _id: from }, { to }, { upsert: true }));
  }

  /** The documents and quarantine entries of a root; its owner token stays (a late writer of the graph stays fenced). */
  async deleteRoot(rootId: string): Promise<number> {
    return this.run('deleteRoot', async () => {
      const docs = await this.anchors.deleteMany({ root: rootId });
      const quarantined = await this.quarantine_.deleteMany({ root: rootId });
      return docs.deletedCount + quarantined.deletedCount;
    });
  }

  async count(): Promise<number> {
    return this.run('count', () => this.anchors.countDocuments());
  }

  async scan(after: number, limit: number): Promise<{ docs: StoredDoc[]; next: number }> {
    return this.run('scan', async () => {
      const rows = await this.anchors
        .find({ seq: { $gt: after } })
        .sort({ seq: 1 })
        .limit(limit)
        .toArray();
      return { docs: rows.map(toDoc), next: rows.at(-1)?.seq ?? after };
    });
  }

  async putDocs(docs: readonly StoredDoc[]): Promise<void> {
    if (docs.length === 0) return this.check();
    await this.run('putDocs', () =>
      this.anchors.bulkWrite(
        docs.map((doc) => ({ replaceOne: { filter: { _id: doc.id }, replacement: { ...fieldsOf(doc), seq: nextSeq() }, upsert: true } })),
        { ordered: true },
      ),
    );
  }

  async putQuarantine(entries: readonly QuarantineEntry[]): Promise<void> {
    if (entries.length === 0) return this.check();
    await this.run('putQuarantine', () =>
      this.quarantine_.bulkWrite(
        entries.map((q) => ({ replaceOne: { filter: { _id: q.id }, replacement: { ...fieldsOf(q), reason: q.reason, at: q.at }, upsert: true } })),
        { ordered: true },
      ),
    );
  }

  async dropQuarantined(id: string): Promise<boolean> {
    return this.run('dropQuarantined', async () => (await this.quarantine_.deleteOne({ _id: id })).deletedCount === 1);
  }

  async stats(): Promise<StoreStats> {
    return this.run('stats', async () => {
      const kinds = await this.anchors.aggregate<{ _id: string; n: number }>([{ $group: { _id: '$kind', n: { $sum: 1 } } }]).toArray();
      const types = await this.anchors.aggregate<{ _id: string; n: number }>([{ $group: { _id: '$arch_type', n: { $sum: 1 } } }]).toArray();
      const [roots] = await this.anchors.aggregate<{ n: number }>([{ $group: { _id: '$root' } }, { $count: 'n' }], { allowDiskUse: true }).toArray();
      const build = await this.db.command({ buildInfo: 1 });
      const of = (kind: string) => kinds.find((k) => k._id === kind)?.n ?? 0;
      return {
        kind: this.kind,
        documents: kinds.reduce((sum, k) => sum + k.n, 0),
        nodes: of('node'),
        edges: of('edge'),
        roots: roots?.n ?? 0,
        byType: Object.fromEntries(types.map((t) => [t._id, t.n])),
        quarantined: await this.quarantine_.countDocuments(),
        aliases: await this.aliases_.countDocuments(),
        backend: { database: this.db.databaseName, collection: this.anchors.collectionName, serverVersion: build.version },
      };
    });
  }

  /** Write what was handed over, then close the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.idle;
    await this.client.close();
  }
}
