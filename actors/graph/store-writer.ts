/**
 * One SQLite writer per process. Every worker thread used to open its own
 * writing connection to the same file; a write then waited on the others'
 * locks for up to `busy_timeout`, blocking that thread's event loop. Now the
 * main thread holds the one writing connection ({@link serveStoreWriter}) and
 * group-commits what every worker sends it; each worker reads through its own
 * read-only connection (WAL readers never wait) and hands its writes over
 * ({@link ForwardingStore}). Commit chains cross the thread as ids: the
 * writer keeps one chain per id, so a batch refused after an earlier failure
 * is refused there too. A batch's fence travels with it, and claims go to the
 * writer too: the token is checked on the one writing connection.
 */
import { randomBytes } from 'node:crypto';
import { type ActorRef, type ActorSystem, decodeError, encodeError, fromReceive, replyLater, type WireError } from '../../kernel/index.ts';
import { type AnchorStore, type BodyForm, type CommitBatch, CommitChain, type Fence, type QuarantineEntry, type StoredDoc } from './store.ts';
import type { SvcError } from '../../kernel/index.ts';
import { storeError } from './errors.ts';

/** The writer's name under `/user` on the main thread. */
export const STORE_WRITER_ACTOR = 'store-writer';

type CommitMsg = Extract<WriterMsg, { t: 'commit' }>;

export type WriterMsg =
  /** `seq` numbers a chain's batches from 1: a gap (a batch lost on the way) breaks the chain. */
  | { t: 'commit'; upserts: StoredDoc[]; deletes: CommitBatch['deletes']; chain?: string; seq?: number; fence?: Fence }
  /** The commits a thread handed over in one tick, answered together: `null` or the error of each, in order. */
  | { t: 'commits'; batches: CommitMsg[] }
  | { t: 'quarantine'; id: string; reason: string }
  | { t: 'restore'; id: string }
  | { t: 'alias'; from: string; to: string }
  | { t: 'deleteRoot'; rootId: string }
  /** Take ownership of a root: answered with its new owner token. */
  | { t: 'claim'; rootId: string };

/** Chains remembered at most (a chain lives as long as one partition incarnation; the oldest are forgotten first). */
const MAX_CHAINS = 50_000;

/**
 * Serve `store`'s writes to the other threads of this process.
 *
 * @example
 * serveStoreWriter(pool.system, SqliteStore.open(path)); // on the main thread, before the workers start
 */
export function serveStoreWriter(system: ActorSystem, store: AnchorStore): ActorRef<WriterMsg, unknown> {
  const chains = new Map<string, { chain: CommitChain; next: number }>();
  /** The chain of a batch, or undefined when the batch does not follow the last one seen (then it must be refused). */
  const chainOf = (id: string, seq: number): CommitChain | undefined => {
    let entry = chains.get(id);
    if (!entry) {
      // Unknown and not the first batch: forgotten (evicted) or an earlier batch never arrived.
      if (seq !== 1) return undefined;
      entry = { chain: new CommitChain(), next: 1 };
      chains.set(id, entry);
      if (chains.size > MAX_CHAINS) chains.delete(chains.keys().next().value as string);
    }
    if (seq !== entry.next) {
      entry.chain.break(entry.chain.refusal());
      return undefined;
    }
    entry.next++;
    return entry.chain;
  };
  const commitOne = (msg: CommitMsg): Promise<void> => {
    const batch: CommitBatch = { upserts: msg.upserts, deletes: msg.deletes };
    if (msg.fence !== undefined) batch.fence = msg.fence;
    if (msg.chain !== undefined) {
      const chain = chainOf(msg.chain, msg.seq ?? 1);
      if (!chain) return Promise.reject(new CommitChain().refusal());
      batch.chain = chain;
    }
    return store.commit(batch);
  };
  return system.spawn(
    fromReceive((msg: WriterMsg) => {
      // Replies come once durable; meanwhile the next messages are taken, so batches from every thread share a transaction.
      switch (msg.t) {
        case 'commit':
          return replyLater(commitOne(msg));
        case 'commits': {
          // Handed to the store in this turn, in order: they share its next transaction.
          const done = msg.batches.map((b) => commitOne(b));
          return replyLater(Promise.allSettled(done).then((outcomes) => outcomes.map((o) => (o.status === 'fulfilled' ? null : encodeError(o.reason)))));
        }
        case 'quarantine':
          return replyLater(store.quarantine(msg.id, msg.reason));
        case 'restore':
          return replyLater(store.restore(msg.id));
        case 'alias':
          return replyLater(store.addAlias(msg.from, msg.to));
        case 'deleteRoot':
          return replyLater(store.deleteRoot(msg.rootId));
        case 'claim':
          return replyLater(store.claim ? store.claim(msg.rootId) : Promise.reject(storeError('SVC_ERR_STORE', `a ${store.kind} store cannot claim roots`)));
      }
    }, { capacity: 100_000 }),
    STORE_WRITER_ACTOR,
  );
}

let chainSeq = 0;

/**
 * A store whose reads go to a local (read-only) connection and whose writes
 * go to the process's writer.
 *
 * @example
 * const store = new ForwardingStore(SqliteStore.open(path, { readOnly: true }), system.refFromAddress({ node: 'main', path: `/user/${STORE_WRITER_ACTOR}` }));
 */
export class ForwardingStore implements AnchorStore {
  readonly kind: string;
  readonly bodyForm: BodyForm | undefined;
  private readonly timeoutMs: number;
  private readonly ids = new WeakMap<CommitChain, { id: string; seq: number }>();
  private readonly prefix: string;
  private closed = false;
  private queue: { msg: CommitMsg; resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly reader: AnchorStore,
    private readonly writer: ActorRef<WriterMsg, unknown>,
    options: { node?: string; timeoutMs?: number } = {},
  ) {
    this.kind = reader.kind;
    this.bodyForm = reader.bodyForm;
    // Unique across the threads (and restarts) of the process: a chain id names one writer's chain only.
    this.prefix = `${options.node ?? 'local'}:${randomBytes(6).toString('hex')}:`;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  get(ids: readonly string[]): Promise<StoredDoc[]> {
    return this.reader.get(ids);
  }

  edges(nodeId: string): Promise<StoredDoc[]> {
    return this.reader.edges(nodeId);
  }

  /** Reads all documents in pages, from the local connection (when it can). */
  get scan(): AnchorStore['scan'] {
    const reader = this.reader;
    return reader.scan === undefined ? undefined : (after, limit) => (reader.scan as NonNullable<AnchorStore['scan']>)(after, limit);
  }

  commit(batch: CommitBatch): Promise<void> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the store is closed'));
    const chain = batch.chain;
    if (chain?.broken) return Promise.reject(chain.refusal());
    const msg: CommitMsg = { t: 'commit', upserts: batch.upserts, deletes: batch.deletes };
    if (batch.fence !== undefined) msg.fence = batch.fence;
    if (chain) {
      let entry = this.ids.get(chain);
      if (entry === undefined) this.ids.set(chain, (entry = { id: `${this.prefix}${++chainSeq}`, seq: 0 }));
      msg.chain = entry.id;
      msg.seq = ++entry.seq;
    }
    const done = new Promise<void>((resolve, reject) => {
      this.queue.push({ msg, resolve, reject });
      if (this.queue.length === 1) void Promise.resolve().then(this.flush);
    });
    // The writer breaks its copy of the chain; this side's copy must refuse what comes next too.
    if (chain) done.catch((error: unknown) => chain.break(error as SvcError));
    return done;
  }

  /** Commits of this turn, handed over in one message (one ask, one reply, for however many runs committed). */
  private readonly flush = (): void => {
    const queue = this.queue;
    this.queue = [];
    if (queue.length === 0) return;
    const answer = this.writer.ask({ t: 'commits', batches: queue.map((q) => q.msg) }, this.timeoutMs) as Promise<(WireError | null)[]>;
    answer.then(
      (outcomes) =>
        queue.forEach((q, i) => {
          const error = outcomes[i];
          if (error) q.reject(decodeError(error));
          else q.resolve();
        }),
      (error: unknown) => queue.forEach((q) => q.reject(error)),
    );
  };

  /** Claims go to the writer: its connection is the one that checks fences. */
  claim(rootId: string): Promise<number> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the store is closed'));
    return this.writer.ask({ t: 'claim', rootId }, this.timeoutMs) as Promise<number>;
  }

  quarantine(id: string, reason: string): Promise<void> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the store is closed'));
    return this.writer.ask({ t: 'quarantine', id, reason }, this.timeoutMs) as Promise<void>;
  }

  quarantined(): Promise<QuarantineEntry[]> {
    return this.reader.quarantined();
  }

  restore(id: string): Promise<boolean> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the store is closed'));
    return this.writer.ask({ t: 'restore', id }, this.timeoutMs) as Promise<boolean>;
  }

  aliases(): Promise<[from: string, to: string][]> {
    return this.reader.aliases();
  }

  addAlias(from: string, to: string): Promise<void> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the store is closed'));
    return this.writer.ask({ t: 'alias', from, to }, this.timeoutMs) as Promise<void>;
  }

  deleteRoot(rootId: string): Promise<number> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the store is closed'));
    // Slices of a large table: well past an ordinary ask.
    return this.writer.ask({ t: 'deleteRoot', rootId }, 3_600_000) as Promise<number>;
  }

  count(): Promise<number> {
    return this.reader.count();
  }

  /** Closes the reader; the writer belongs to the main thread. */
  close(): Promise<void> {
    this.closed = true;
    return this.reader.close();
  }
}
