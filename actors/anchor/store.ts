/**
 * The anchor store: one narrow interface, several backends (embedded SQLite,
 * in-memory, MongoDB), one conformance suite (`test/actors/anchor/`).
 *
 * Documents carry `arch_module`, `arch_type`, `fingerprint`,
 * `format_version` and a `version`; a commit is atomic and checks versions
 * (a stale writer gets `SVC_ERR_CONFLICT`). A document that cannot be
 * decoded is moved to quarantine, never dropped.
 */
import type { AnchorKind } from '../walker/index.ts';

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
  /** `{access, context}`: JSON text (SQLite, memory) or an object (MongoDB). */
  body: unknown;
}

/** One atomic write: new versions of documents, and deletions, each checked against its expected version. */
export interface CommitBatch {
  /** `version` is the new version; the stored one must be `version - 1` (absent when 1). */
  upserts: StoredDoc[];
  deletes: { id: string; version: number }[];
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
 */
export interface AnchorStore {
  /** `sqlite`, `memory`, `mongo`. */
  readonly kind: string;
  /** The documents with these ids that exist, in no particular order. */
  get(ids: readonly string[]): Promise<StoredDoc[]>;
  /** The edges whose source or target is `nodeId`, oldest first. */
  edges(nodeId: string): Promise<StoredDoc[]>;
  /** Apply atomically, or not at all (`SVC_ERR_CONFLICT` on a version mismatch). */
  commit(batch: CommitBatch): Promise<void>;
  /** Move a document to quarantine with a reason (atomic; the document is kept). */
  quarantine(id: string, reason: string): Promise<void>;
  quarantined(): Promise<QuarantineEntry[]>;
  /** Move a quarantined document back (after an alias or a fix); false if there was none. */
  restore(id: string): Promise<boolean>;
  aliases(): Promise<[from: string, to: string][]>;
  addAlias(from: string, to: string): Promise<void>;
  /** Number of documents (quarantine excluded). */
  count(): Promise<number>;
  close(): Promise<void>;
}
