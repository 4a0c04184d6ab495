/**
 * The anchor store: one narrow interface, several backends (embedded SQLite,
 * in-memory, MongoDB), one conformance suite (`test/conformance/`, run per backend under `test/stores/`).
 *
 * Documents carry `arch_module`, `arch_type`, `fingerprint`,
 * `format_version` and a `version`; a commit is atomic and checks versions
 * (a stale writer gets `SVC_ERR_CONFLICT`). A document that cannot be
 * decoded is moved to quarantine, never dropped.
 */
import type { SvcError } from '../../kernel/index.ts';
import type { AnchorKind } from '../walker/index.ts';
import { storeError } from './errors.ts';

/** A document as stored: the indexed columns, and a body the codec decodes. */
export interface StoredDoc {
  id: string;
  root: string;
  kind: AnchorKind;
  arch_module: string;
  arch_type: string;
  fingerprint: string;
  format_version: number;
  version: number;
  /** Edges: the node ids they join (indexed: a node's edges are found through them). */
  source?: string | null;
  target?: string | null;
  /**
   * `{access, context}`, in the form the store takes ({@link AnchorStore.bodyForm}):
   * JSON text (SQLite, memory) or an object (a document database). Decoding takes both.
   */
  body: unknown;
}

/**
 * How a store takes document bodies: `text` (JSON text, what SQLite and the
 * memory store keep) or `object` (a plain object of its own — a copy the store
 * may keep or serialize later — for a document database that would otherwise
 * parse the text again).
 */
export type BodyForm = 'text' | 'object';

/** One atomic write: new versions of documents, and deletions, each checked against its expected version. */
export interface CommitBatch {
  /** `version` is the new version; the stored one must be `version - 1` (absent when 1). */
  upserts: StoredDoc[];
  deletes: { id: string; version: number }[];
  /** The writer's chain: this batch is applied only if every earlier batch of the chain was. */
  chain?: CommitChain;
  /**
   * Ownership: applied only if `root`'s owner token ({@link AnchorStore.claim})
   * is still `token`, checked in the same transaction as the writes, and —
   * when the fence has an `until` — only while `Date.now()` has not passed it
   * when the store applies (or sends) the batch; otherwise `SVC_ERR_FENCED`
   * and nothing is applied. A root never claimed has token 0.
   */
  fence?: Fence;
}

/** The owner token a batch must match (see {@link CommitBatch.fence}). */
export interface Fence {
  root: string;
  token: number;
  /**
   * The `Date.now()` instant the writer's ownership ends (a cluster member's
   * lease): a batch that reaches the database later — it waited in a queue
   * while its process was paused — is refused, as if another had claimed
   * the root (others may take it over once the lease lapsed).
   */
  until?: number;
}

/** Whether a fence's ownership has ended by the clock (see {@link Fence.until}). */
export function fenceLapsed(fence: Fence | undefined): boolean {
  return fence?.until !== undefined && Date.now() > fence.until;
}

/**
 * The batches of one writer (a partition incarnation) in the order it handed
 * them over. A writer pipelines: batch N+1 is built on memory that already
 * holds batch N's changes, before N is durable. So once a batch of a chain
 * fails, a store refuses every later batch of that chain — already handed
 * over or not — with `SVC_ERR_CONFLICT` (`SVC_ERR_FENCED` when a fence broke
 * it), and applies none of them: no
 * acknowledged batch ever rests on one that was not stored. Stores apply a
 * chain's batches in the order `commit` was called.
 *
 * @example
 * const chain = new CommitChain();
 * const a = store.commit({ upserts: [stale], deletes: [], chain }); // rejects: conflict
 * const b = store.commit({ upserts: [built_on_a], deletes: [], chain }); // rejects: refused, not applied
 */
export class CommitChain {
  /** The first failure of the chain: later batches are refused. */
  broken: SvcError | undefined = undefined;

  /** A batch of the chain failed (or its writer gave up on its memory). */
  break(reason: SvcError): void {
    this.broken ??= reason;
  }

  /**
   * The error a batch gets when it is refused because an earlier batch of its
   * chain failed. It does not repeat that failure: on a shared graph the
   * earlier run was someone else's. A chain broken by a fence says so: the
   * writer lost the graph, and a retry goes to its new owner.
   */
  refusal(): SvcError {
    if (this.broken?.code === 'SVC_ERR_FENCED') return storeError('SVC_ERR_FENCED');
    if (this.broken?.code === 'SVC_ERR_STORE_UNAVAILABLE') return storeError('SVC_ERR_STORE_UNAVAILABLE');
    return storeError('SVC_ERR_CONFLICT', 'an earlier change of this graph failed to commit and this run may have read it; nothing of this run was stored — retry');
  }
}

export interface QuarantineEntry extends StoredDoc {
  reason: string;
  at: string;
}

/**
 * @example
 * const store = SqliteStore.open('.svc/data/anchor_store.db');
 * await store.commit({ upserts: [doc], deletes: [] });
 * const [found] = await store.get([doc.id]);
 * // Fenced: once another process claims the root, this commit is refused.
 * const token = await store.claim!(rootId);
 * await store.commit({ upserts: [next], deletes: [], fence: { root: rootId, token } });
 */
export interface AnchorStore {
  /** `sqlite`, `memory`, `mongo`. */
  readonly kind: string;
  /** The body form `commit` is handed (`text` when absent). */
  readonly bodyForm?: BodyForm;
  /** The documents with these ids that exist, in no particular order (an object body is the caller's to keep: no store shares it). */
  get(ids: readonly string[]): Promise<StoredDoc[]>;
  /** The edges whose source or target is `nodeId`, oldest first. */
  edges(nodeId: string): Promise<StoredDoc[]>;
  /** Apply atomically, or not at all (`SVC_ERR_CONFLICT` on a version mismatch, `SVC_ERR_FENCED` on a stale owner token). */
  commit(batch: CommitBatch): Promise<void>;
  /**
   * Take ownership of a root: atomically increment its owner token and resolve
   * to the new one (the first claim gives 1). Every claim, by anyone, fences
   * the batches of earlier tokens ({@link CommitBatch.fence}). Optional: a
   * store without it cannot serve fenced graphs.
   */
  claim?(rootId: string): Promise<number>;
  /** Move a document to quarantine with a reason (atomic; the document is kept). */
  quarantine(id: string, reason: string): Promise<void>;
  quarantined(): Promise<QuarantineEntry[]>;
  /** Move a quarantined document back (after an alias or a fix); false if there was none. */
  restore(id: string): Promise<boolean>;
  aliases(): Promise<[from: string, to: string][]>;
  addAlias(from: string, to: string): Promise<void>;
  /** Delete every document of a root (quarantined ones too, and its owner token); resolves to how many documents went. */
  deleteRoot(rootId: string): Promise<number>;
  /** Number of documents (quarantine excluded). */
  count(): Promise<number>;
  close(): Promise<void>;

  // What the operator commands (`svc db`) need besides; every backend of its own implements them
  // (a worker thread's forwarding view does not).

  /**
   * Documents in insertion order, after the cursor `after` (0: from the
   * start), at most `limit`; `next` is the cursor to continue from (copies
   * keep insertion order, so a node's edges come back in the same order).
   */
  scan?(after: number, limit: number): Promise<{ docs: StoredDoc[]; next: number }>;
  /** Insert or replace documents exactly as given, versions unchecked (a copy's writes; idempotent, appended in the given order). */
  putDocs?(docs: readonly StoredDoc[]): Promise<void>;
  /** Insert or replace quarantine entries exactly as given. */
  putQuarantine?(entries: readonly QuarantineEntry[]): Promise<void>;
  /** Forget a quarantined document for good; false if there was none. */
  dropQuarantined?(id: string): Promise<boolean>;
  /** Figures for `svc db stats`: documents by kind and type, quarantine size, aliases, backend facts. */
  stats?(): Promise<StoreStats>;
}

/** What `svc db stats` shows of an anchor store. */
export interface StoreStats {
  kind: string;
  documents: number;
  nodes: number;
  edges: number;
  roots: number;
  /** Documents per `arch_type`. */
  byType: Record<string, number>;
  quarantined: number;
  aliases: number;
  /** Backend facts (file size, server version, …), free form. */
  backend?: Record<string, unknown>;
}
