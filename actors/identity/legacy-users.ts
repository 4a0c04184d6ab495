/**
 * Users of the Python original, as our records: the flat documents (or rows)
 * `{_id|id, username, email, password_hash, root_id, role, created_at}` a
 * document-database backend finds at start and migrates once (the
 * migration runs once and is idempotent). Pure: the backend reads and writes.
 *
 * - The user id derives from the legacy id (else the username, else the
 *   email): a second migration of the same rows gives the same ids.
 * - Identities: the username (verified) and the email (unverified, recovery),
 *   normalised. Two legacy users whose normalised values collide (or one that
 *   collides with an identity already taken): the first by `created_at` keeps
 *   it and stays active; a later one is migrated `disabled`, without it.
 * - The password hash is kept as it is (bcrypt or SHA-256 hex): the login
 *   verifies both and rehashes to argon2id at the next success.
 */
import { createHash } from 'node:crypto';
import { rootIdFor } from './root-id.ts';
import { type Identity, normalize, type UserRecord, userRecord } from './users-repository.ts';

/** A user document of the Python original (every field as it may come: a document database keeps what it was given). */
export interface LegacyUser {
  /** The document's id (a string, a number or an ObjectId: its text form is what counts). */
  _id?: string | number | { toString(): string } | null;
  /** The row's id, where `_id` is not there (a SQL table). */
  id?: string | number | { toString(): string } | null;
  username?: string | null;
  email?: string | null;
  password_hash?: string | null;
  root_id?: string | null;
  role?: string | null;
  /** A date, ISO text (with or without a zone: none means UTC, as Python wrote it), or seconds / ms since the epoch. */
  created_at?: Date | string | number | null;
}

/** The legacy id's text, or undefined when a row has nothing to derive an id from. */
function legacyId(row: LegacyUser): string | undefined {
  for (const v of [row._id, row.id]) if (v !== undefined && v !== null && String(v) !== '') return String(v);
  for (const v of [row.username, row.email]) if (typeof v === 'string' && normalize(v) !== '') return normalize(v);
  return undefined;
}

/**
 * A UUID-shaped id from a legacy id: SHA-256 of `legacy:<id>`, with the
 * version (8, "custom") and variant bits of RFC 9562 set.
 *
 * @example
 * legacyUserId('65a1f0c2e4b0a1b2c3d4e5f6') // '…-8…-…', the same every time
 */
export function legacyUserId(id: string): string {
  const hex = createHash('sha256').update(`legacy:${id}`).digest('hex');
  const variant = ((parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The legacy root when it is 32 hex characters (a UUID counts, its dashes dropped), else the one derived from the user id. */
function rootOf(root: unknown, userId: string): string {
  if (typeof root === 'string') {
    const hex = root.trim().toLowerCase().replace(/^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/, '$1$2$3$4$5');
    if (/^[0-9a-f]{32}$/.test(hex)) return hex;
  }
  return rootIdFor(userId);
}

const ISO = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** `created_at` in ms since the epoch, or undefined when there is none that reads as a moment. */
function createdMs(value: LegacyUser['created_at']): number | undefined {
  let ms: number | undefined;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === 'number') ms = value < 1e11 ? value * 1000 : value; // seconds (Python's time.time()) or ms
  else if (typeof value === 'string') {
    const m = ISO.exec(value.trim());
    if (m) {
      const fraction = (m[4] ?? '').padEnd(3, '0').slice(0, 3);
      const zone = m[5] ? (m[5].toUpperCase() === 'Z' ? 'Z' : m[5].replace(/^([+-]\d{2})(\d{2})$/, '$1:$2')) : 'Z';
      ms = Date.parse(`${m[1]}T${m[2] ?? '00:00'}:${m[3] ?? '00'}.${fraction}${zone}`);
    }
  }
  return ms !== undefined && Number.isFinite(ms) ? ms : undefined;
}

function usernameIdentity(value: string): Identity {
  return { type: 'username', value_raw: value, value_normalized: normalize(value), verified: true, is_recovery: false };
}

function emailIdentity(value: string): Identity {
  return { type: 'email', value_raw: value, value_normalized: normalize(value), verified: false, is_recovery: true };
}

/**
 * Our records of legacy users, and the ids of those migrated `disabled`
 * because an identity of theirs was taken (by an earlier legacy user, or in
 * `existing`: normalised usernames and emails already used). Rows without
 * anything to derive an id from are left out; a second row of the same id
 * too (the first is the user).
 *
 * @example
 * const { users, disabled } = legacyUserRecords(await legacy.find().toArray(), taken);
 */
export function legacyUserRecords(rows: readonly LegacyUser[], existing: ReadonlySet<string> = new Set()): { users: UserRecord[]; disabled: string[] } {
  const now = Date.now();
  // Oldest first (those without a date after the others), then by legacy id: the order decides who keeps a contested identity.
  const dated = rows
    .map((row) => ({ row, id: legacyId(row), ms: createdMs(row.created_at) }))
    .filter((r): r is { row: LegacyUser; id: string; ms: number | undefined } => r.id !== undefined)
    .sort((a, b) => {
      if (a.ms !== b.ms) return a.ms === undefined ? 1 : b.ms === undefined ? -1 : a.ms - b.ms;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
  const taken = new Set(existing);
  const seen = new Set<string>();
  const users: UserRecord[] = [];
  const disabled: string[] = [];
  for (const { row, id, ms } of dated) {
    const userId = legacyUserId(id);
    if (seen.has(userId)) continue;
    seen.add(userId);
    const wanted: Identity[] = [];
    if (typeof row.username === 'string' && normalize(row.username) !== '') wanted.push(usernameIdentity(row.username));
    if (typeof row.email === 'string' && normalize(row.email) !== '') {
      const email = emailIdentity(row.email);
      // A username that is the email address itself: one identity, the email (it can recover the account).
      const same = wanted.findIndex((i) => i.value_normalized === email.value_normalized);
      if (same >= 0) wanted.splice(same, 1);
      wanted.push(email);
    }
    const identities = wanted.filter((i) => !taken.has(i.value_normalized));
    for (const i of identities) taken.add(i.value_normalized);
    const collided = identities.length < wanted.length;
    if (collided) disabled.push(userId);
    const created = new Date(ms ?? now).toISOString();
    users.push(
      userRecord({
        user_id: userId,
        role: row.role === 'admin' ? 'admin' : 'user',
        status: collided ? 'disabled' : 'active',
        root_id: rootOf(row.root_id, userId),
        created_at: created,
        updated_at: new Date(now).toISOString(),
        identities,
        password_hash: typeof row.password_hash === 'string' && row.password_hash !== '' ? row.password_hash : null,
      }),
    );
  }
  return { users, disabled };
}
