/**
 * `svc db copy`: everything one store holds into another — graph documents
 * (in insertion order), quarantine, aliases, users, one-time tokens, API
 * keys, deleted users, pending graph drops — through the store interfaces only, so any
 * backend to any backend. Every write is an idempotent upsert and a
 * checkpoint file records how far the two long scans (documents, users) got,
 * so an interrupted copy run again continues where it stopped. It ends by
 * comparing counts and checksums ({@link SetChecksum}) of every kind of
 * record on both sides.
 *
 * The service should be stopped meanwhile: what it writes during a copy may
 * be missed, and the verification then fails.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AnchorStore, StoredDoc } from '../../actors/graph/index.ts';
import type { ApiKeyRecord, UsersRepository } from '../../actors/identity/index.ts';
import type { Progress } from '../progress.ts';
import {
  bodyValue,
  canonicalAlias,
  canonicalDeleted,
  canonicalDoc,
  canonicalDrop,
  canonicalQuarantine,
  canonicalToken,
  canonicalUser,
  SetChecksum,
} from './checksum.ts';
import { atStore, DbError, type StoreLocation } from './stores.ts';

/** One side of a copy: where it is and its two stores. */
export interface CopySide {
  location: StoreLocation;
  anchors: AnchorStore;
  users: UsersRepository;
}

export interface CopyOptions {
  from: CopySide;
  to: CopySide;
  /** The checkpoint file ({@link checkpointPath}). */
  checkpoint: string;
  /** Ignore (and replace) a checkpoint left by an earlier run. */
  restart?: boolean;
  /** Records per read and per write (default 500). */
  batch?: number;
  /** A progress line for a phase. */
  progress: (label: string, total: number | undefined) => Progress;
  /** A note for the operator (stderr). */
  note: (line: string) => void;
  /**
   * Tests: stop (as if interrupted) once this many documents are copied,
   * leaving the checkpoint. The CLI takes it from `SVC_DB_COPY_STOP_AFTER`.
   */
  stopAfter?: number;
}

export const KINDS = ['documents', 'quarantine', 'aliases', 'users', 'one_time_tokens', 'api_keys', 'deleted_users', 'graph_drops'] as const;
export type RecordKind = (typeof KINDS)[number];

export interface SideSummary {
  count: number;
  checksum: string;
}

export interface CopyReport {
  from: string;
  to: string;
  /** Where an earlier run had got to (null: from the start). */
  resumed: { documents: number; users: number } | null;
  /** Records written by this run. */
  copied: Record<RecordKind, number>;
  verified: Record<RecordKind, { source: SideSummary; destination: SideSummary; equal: boolean }>;
  /** The kinds whose count or checksum differ (none: the copy is equal). */
  differs: RecordKind[];
  ok: boolean;
}

/** The interrupted copy's note: what was done, so a new run continues from there. */
interface Checkpoint {
  format: 1;
  key: string;
  from: string;
  to: string;
  /** The document scan's cursor, and how many were copied up to it. */
  documents: { next: number; copied: number; done: boolean };
  /** The user scan's cursor (the last user id copied). */
  users: { after: string; copied: number; done: boolean };
  updated_at: string;
}

/** A copy stopped on purpose (the test hook): the checkpoint stays. */
export class CopyInterrupted extends DbError {}

function pairKey(from: StoreLocation, to: StoreLocation): string {
  return createHash('sha256').update(`${from.key}\u0000${to.key}`).digest('hex').slice(0, 16);
}

/**
 * The default checkpoint file of a copy between two stores:
 * `.svc/db-copy-<hash of from and to>.json` under the project.
 */
export function checkpointPath(projectRoot: string, from: StoreLocation, to: StoreLocation): string {
  return join(projectRoot, '.svc', `db-copy-${pairKey(from, to)}.json`);
}

function readCheckpoint(path: string, key: string): Checkpoint | undefined {
  if (!existsSync(path)) return undefined;
  let parsed: Checkpoint;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as Checkpoint;
  } catch (error) {
    throw new DbError(`the checkpoint ${path} is not readable (${(error as Error).message}); run with --restart to copy from the start`);
  }
  if (parsed.format !== 1 || parsed.key !== key || typeof parsed.documents?.next !== 'number' || typeof parsed.users?.after !== 'string') {
    throw new DbError(`the checkpoint ${path} is not one of this copy; run with --restart to copy from the start`);
  }
  return parsed;
}

/** Written whole then renamed: a copy killed while writing it leaves the previous one. */
function writeCheckpoint(path: string, checkpoint: Checkpoint): void {
  checkpoint.updated_at = new Date().toISOString();
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(checkpoint, null, 2)}\n`);
  renameSync(temp, path);
}

/** A body in the form the destination takes ({@link AnchorStore.bodyForm}). */
function inForm<D extends StoredDoc>(doc: D, store: AnchorStore): D {
  const form = store.bodyForm ?? 'text';
  if (form === 'text' && typeof doc.body !== 'string') return { ...doc, body: JSON.stringify(doc.body) };
  if (form === 'object' && typeof doc.body === 'string') {
    const value = bodyValue(doc.body);
    // A corrupt body (in quarantine) stays text, as a document database keeps a string field.
    return value === doc.body ? doc : { ...doc, body: value };
  }
  return doc;
}

/** The store, with the optional methods a copy needs of it (or an error naming those its backend lacks). */
function need<S extends object, M extends keyof S>(location: StoreLocation, what: string, store: S, methods: readonly M[]): S & Required<Pick<S, M>> {
  const missing = methods.filter((m) => typeof store[m] !== 'function');
  if (missing.length > 0) throw new DbError(`the ${what} at ${location.label} cannot take part in a copy (this backend lacks ${missing.map(String).join(', ')})`);
  return store as S & Required<Pick<S, M>>;
}

/** What a copy reads from a side (and, for the destination, verifies). */
const READS = { anchors: ['scan'], users: ['scanUsers', 'oneTimeTokens', 'apiKeys', 'deletedUsers', 'graphDrops'] } as const;

/** An API key in the form checksums compare (absent and null alike). */
function canonicalApiKey(key: ApiKeyRecord): unknown {
  return {
    api_key_id: key.api_key_id,
    user_id: key.user_id,
    name: key.name,
    key_hash: key.key_hash,
    walkers: key.walkers ?? null,
    created_at: key.created_at,
    expires_at: key.expires_at ?? null,
  };
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Copy everything `from` holds into `to`, then verify.
 *
 * @example
 * const report = await copyStores({ from, to, checkpoint: checkpointPath(root, from.location, to.location), progress, note });
 * if (!report.ok) process.exit(1);
 */
export async function copyStores(options: CopyOptions): Promise<CopyReport> {
  const { from, to } = options;
  const batch = options.batch ?? 500;
  const key = pairKey(from.location, to.location);
  const fromAnchors = need(from.location, 'graph store', from.anchors, READS.anchors);
  const fromUsers = need(from.location, 'users store', from.users, READS.users);
  const toAnchors = need(to.location, 'graph store', to.anchors, [...READS.anchors, 'putDocs', 'putQuarantine']);
  const toUsers = need(to.location, 'users store', to.users, [...READS.users, 'putUsers', 'putOneTimeTokens', 'putApiKeys', 'putDeletedUsers', 'putGraphDrops']);

  if (options.restart) rmSync(options.checkpoint, { force: true });
  const earlier = readCheckpoint(options.checkpoint, key);
  const checkpoint: Checkpoint = earlier ?? {
    format: 1,
    key,
    from: from.location.label,
    to: to.location.label,
    documents: { next: 0, copied: 0, done: false },
    users: { after: '', copied: 0, done: false },
    updated_at: '',
  };
  const resumed = earlier ? { documents: earlier.documents.copied, users: earlier.users.copied } : null;
  if (earlier) options.note(`svc: resuming the copy from its checkpoint (${earlier.documents.copied} documents and ${earlier.users.copied} users copied before; --restart copies from the start)`);
  const copied = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<RecordKind, number>;
  const src = (what: string) => <T>(call: () => Promise<T>) => atStore(from.location, what, call);
  const dst = (what: string) => <T>(call: () => Promise<T>) => atStore(to.location, what, call);

  // Graph documents, in insertion order (a node's edges keep their order), checkpointed after each batch.
  if (!checkpoint.documents.done) {
    const total = await src('counting documents')(() => from.anchors.count());
    const progress = options.progress('copy documents', total);
    progress.add(checkpoint.documents.copied);
    for (;;) {
      let limit = batch;
      if (options.stopAfter !== undefined) {
        limit = Math.min(batch, options.stopAfter - copied.documents);
        if (limit <= 0) {
          progress.done();
          throw new CopyInterrupted(`copy interrupted after ${checkpoint.documents.copied} documents (SVC_DB_COPY_STOP_AFTER); run it again to resume`);
        }
      }
      const page = await src('reading documents')(() => fromAnchors.scan(checkpoint.documents.next, limit));
      if (page.docs.length === 0) break;
      await dst('writing documents')(() => toAnchors.putDocs(page.docs.map((d) => inForm(d, toAnchors))));
      checkpoint.documents.next = page.next;
      checkpoint.documents.copied += page.docs.length;
      copied.documents += page.docs.length;
      writeCheckpoint(options.checkpoint, checkpoint);
      progress.add(page.docs.length);
    }
    checkpoint.documents.done = true;
    writeCheckpoint(options.checkpoint, checkpoint);
    progress.done();
  }

  // Users whole (identities with them), before the one-time tokens and API keys that belong to them.
  if (!checkpoint.users.done) {
    const total = await src('counting users')(() => from.users.count());
    const progress = options.progress('copy users', total);
    progress.add(checkpoint.users.copied);
    for (;;) {
      const page = await src('reading users')(() => fromUsers.scanUsers(checkpoint.users.after, batch));
      if (page.length === 0) break;
      await dst('writing users')(() => toUsers.putUsers(page));
      checkpoint.users.after = (page[page.length - 1] as { user_id: string }).user_id;
      checkpoint.users.copied += page.length;
      copied.users += page.length;
      writeCheckpoint(options.checkpoint, checkpoint);
      progress.add(page.length);
    }
    checkpoint.users.done = true;
    writeCheckpoint(options.checkpoint, checkpoint);
    progress.done();
  }

  // The smaller sets, whole each run (upserts: copying one twice changes nothing).
  const quarantine = await src('reading the quarantine')(() => from.anchors.quarantined());
  for (const part of chunks(quarantine, batch)) {
    await dst('writing the quarantine')(() => toAnchors.putQuarantine(part.map((q) => inForm(q, toAnchors))));
  }
  copied.quarantine = quarantine.length;
  const aliases = await src('reading aliases')(() => from.anchors.aliases());
  for (const [old, now] of aliases) await dst('writing aliases')(() => to.anchors.addAlias(old, now));
  copied.aliases = aliases.length;
  const tokens = await src('reading one-time tokens')(() => fromUsers.oneTimeTokens());
  for (const part of chunks(tokens, batch)) await dst('writing one-time tokens')(() => toUsers.putOneTimeTokens(part));
  copied.one_time_tokens = tokens.length;
  const keys = await src('reading API keys')(() => fromUsers.apiKeys());
  for (const part of chunks(keys, batch)) await dst('writing API keys')(() => toUsers.putApiKeys(part));
  copied.api_keys = keys.length;
  const deleted = await src('reading deleted users')(() => fromUsers.deletedUsers());
  for (const part of chunks(deleted, batch)) await dst('writing deleted users')(() => toUsers.putDeletedUsers(part));
  copied.deleted_users = deleted.length;
  const drops = await src('reading pending graph drops')(() => fromUsers.graphDrops());
  for (const part of chunks(drops, batch)) await dst('writing pending graph drops')(() => toUsers.putGraphDrops(part));
  copied.graph_drops = drops.length;

  const source = await summarize(from, batch, options.progress, 'verify source');
  const destination = await summarize(to, batch, options.progress, 'verify destination');
  const verified = {} as CopyReport['verified'];
  const differs: RecordKind[] = [];
  for (const kind of KINDS) {
    const equal = source[kind].count === destination[kind].count && source[kind].checksum === destination[kind].checksum;
    verified[kind] = { source: source[kind], destination: destination[kind], equal };
    if (!equal) differs.push(kind);
  }
  // Equal: the copy is done. Different: a new run copies everything again (the source changed
  // during the copy, or the destination holds records the source does not).
  rmSync(options.checkpoint, { force: true });
  return {
    from: from.location.label,
    to: to.location.label,
    resumed,
    copied,
    verified,
    differs,
    ok: differs.length === 0,
  };
}

/**
 * Counts and checksums of everything a side holds.
 *
 * @example
 * const { documents } = await summarize(side, 500, progress, 'verify');
 */
export async function summarize(side: CopySide, batch: number, progress: CopyOptions['progress'], label: string): Promise<Record<RecordKind, SideSummary>> {
  const at = <T>(what: string, call: () => Promise<T>) => atStore(side.location, what, call);
  const anchors = need(side.location, 'graph store', side.anchors, READS.anchors);
  const users = need(side.location, 'users store', side.users, READS.users);
  const sums = Object.fromEntries(KINDS.map((k) => [k, new SetChecksum()])) as Record<RecordKind, SetChecksum>;
  const bar = progress(label, await at('counting documents', () => anchors.count()));
  for (let next = 0; ; ) {
    const page = await at('reading documents', () => anchors.scan(next, batch));
    if (page.docs.length === 0) break;
    for (const doc of page.docs) sums.documents.add(canonicalDoc(doc));
    next = page.next;
    bar.add(page.docs.length);
  }
  bar.done();
  for (const q of await at('reading the quarantine', () => anchors.quarantined())) sums.quarantine.add(canonicalQuarantine(q));
  for (const a of await at('reading aliases', () => anchors.aliases())) sums.aliases.add(canonicalAlias(a));
  for (let after = ''; ; ) {
    const page = await at('reading users', () => users.scanUsers(after, batch));
    if (page.length === 0) break;
    for (const user of page) sums.users.add(canonicalUser(user));
    after = (page[page.length - 1] as { user_id: string }).user_id;
  }
  for (const t of await at('reading one-time tokens', () => users.oneTimeTokens())) sums.one_time_tokens.add(canonicalToken(t));
  for (const k of await at('reading API keys', () => users.apiKeys())) sums.api_keys.add(canonicalApiKey(k));
  for (const d of await at('reading deleted users', () => users.deletedUsers())) sums.deleted_users.add(canonicalDeleted(d));
  for (const g of await at('reading pending graph drops', () => users.graphDrops())) sums.graph_drops.add(canonicalDrop(g));
  return Object.fromEntries(KINDS.map((k) => [k, { count: sums[k].count, checksum: sums[k].hex }])) as Record<RecordKind, SideSummary>;
}
