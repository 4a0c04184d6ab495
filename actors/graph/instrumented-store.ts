/**
 * The instrumented store: a decorator around any {@link AnchorStore} that
 * tells observers (and the `svc:store:*` diagnostics channels) how each commit
 * and read went — latency, batch size, conflicts — without the stores or the
 * partitions knowing. Metrics subscribe; nothing is measured while nobody
 * listens (a call then goes straight through).
 */
import { channel } from 'node:diagnostics_channel';
import type { AnchorStore, CommitBatch, StoredDoc } from './store.ts';

/** How one commit went. */
export interface StoreCommitEvent {
  /** The backend (`sqlite`, `postgres`, `mongo`, `memory`). */
  store: string;
  durationMs: number;
  /** Documents written and deleted by the batch. */
  upserts: number;
  deletes: number;
  /** `conflict`: a version check failed; `fenced`: the writer no longer owns the graph; `error`: anything else. */
  outcome: 'ok' | 'conflict' | 'fenced' | 'error';
  /** The error code when it failed (`SVC_ERR_*`). */
  code?: string;
}

/** How one read went (`get`: documents by id; `edges`: a node's edges). */
export interface StoreReadEvent {
  store: string;
  op: 'get' | 'edges';
  durationMs: number;
  /** Documents found. */
  docs: number;
}

export interface StoreObserver {
  commit?(event: StoreCommitEvent): void;
  read?(event: StoreReadEvent): void;
}

/** Diagnostics channels the instrumented store publishes on, when subscribed. */
export const STORE_COMMIT_CHANNEL = 'svc:store:commit';
export const STORE_READ_CHANNEL = 'svc:store:read';
const commits = channel(STORE_COMMIT_CHANNEL);
const reads = channel(STORE_READ_CHANNEL);

/** The methods the decorator passes through as they are (bound to the store). */
const PASSED = ['claim', 'quarantine', 'quarantined', 'restore', 'aliases', 'addAlias', 'deleteRoot', 'count', 'close', 'scan', 'putDocs', 'putQuarantine', 'dropQuarantined', 'stats'] as const;

/**
 * @example
 * const store = new InstrumentedStore(await openAnchorStore(uri, options));
 * const stop = store.observe({ commit: (e) => histogram.observe(e.durationMs / 1000) });
 */
export class InstrumentedStore implements AnchorStore {
  readonly kind: string;
  readonly bodyForm: AnchorStore['bodyForm'];
  private readonly observers = new Set<StoreObserver>();

  constructor(readonly inner: AnchorStore) {
    this.kind = inner.kind;
    this.bodyForm = inner.bodyForm;
    const self = this as unknown as Record<string, unknown>;
    const from = inner as unknown as Record<string, unknown>;
    for (const name of PASSED) {
      const method = from[name];
      if (typeof method === 'function') self[name] = method.bind(inner);
    }
  }

  /** Whether the backend can be reached (stores without a health check are). */
  get healthy(): boolean {
    return (this.inner as { healthy?: boolean }).healthy !== false;
  }

  /** Tell `observer` of every commit and read from now on; returns the function that stops it. */
  observe(observer: StoreObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  private get watched(): boolean {
    return this.observers.size > 0 || commits.hasSubscribers || reads.hasSubscribers;
  }

  commit(batch: CommitBatch): Promise<void> {
    if (!this.watched) return this.inner.commit(batch);
    const started = performance.now();
    const told = (outcome: StoreCommitEvent['outcome'], code?: string) => {
      const event: StoreCommitEvent = { store: this.kind, durationMs: performance.now() - started, upserts: batch.upserts.length, deletes: batch.deletes.length, outcome, ...(code === undefined ? {} : { code }) };
      for (const o of this.observers) safely(() => o.commit?.(event));
      if (commits.hasSubscribers) commits.publish(event);
    };
    return this.inner.commit(batch).then(
      () => told('ok'),
      (error: unknown) => {
        const code = (error as { code?: unknown })?.code;
        const text = typeof code === 'string' ? code : undefined;
        told(text === 'SVC_ERR_CONFLICT' ? 'conflict' : text === 'SVC_ERR_FENCED' ? 'fenced' : 'error', text);
        throw error;
      },
    );
  }

  get(ids: readonly string[]): Promise<StoredDoc[]> {
    return this.watched ? this.timedRead('get', this.inner.get(ids)) : this.inner.get(ids);
  }

  edges(nodeId: string): Promise<StoredDoc[]> {
    return this.watched ? this.timedRead('edges', this.inner.edges(nodeId)) : this.inner.edges(nodeId);
  }

  private async timedRead(op: StoreReadEvent['op'], pending: Promise<StoredDoc[]>): Promise<StoredDoc[]> {
    const started = performance.now();
    const docs = await pending;
    const event: StoreReadEvent = { store: this.kind, op, durationMs: performance.now() - started, docs: docs.length };
    for (const o of this.observers) safely(() => o.read?.(event));
    if (reads.hasSubscribers) reads.publish(event);
    return docs;
  }

  // Declared for the interface; the constructor binds the store's own.
  declare quarantine: AnchorStore['quarantine'];
  declare quarantined: AnchorStore['quarantined'];
  declare restore: AnchorStore['restore'];
  declare aliases: AnchorStore['aliases'];
  declare addAlias: AnchorStore['addAlias'];
  declare deleteRoot: AnchorStore['deleteRoot'];
  declare count: AnchorStore['count'];
  declare close: AnchorStore['close'];
  declare claim?: AnchorStore['claim'];
  declare scan?: AnchorStore['scan'];
  declare putDocs?: AnchorStore['putDocs'];
  declare putQuarantine?: AnchorStore['putQuarantine'];
  declare dropQuarantined?: AnchorStore['dropQuarantined'];
  declare stats?: AnchorStore['stats'];
}

/** An observer that throws does not fail the store call it watches. */
function safely(call: () => void): void {
  try {
    call();
  } catch {
    // an observer's own failure is its own
  }
}
