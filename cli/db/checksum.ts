/**
 * Checksums that say whether two stores hold the same records, whatever the
 * backend: each record is reduced to a canonical form — its fields, sorted-key
 * JSON, a document body parsed (a document database keeps it as an object and
 * may reorder its keys), dates as ISO strings, absent and null alike where
 * the interfaces allow either — and hashed; a set's checksum is the sum of its
 * records' hashes (so it does not depend on the order a backend lists them in).
 */
import { createHash } from 'node:crypto';
import type { QuarantineEntry, StoredDoc } from '../../actors/graph/index.ts';
import type { DeletedUser, GraphDrop, Identity, OneTimeToken, UserRecord } from '../../actors/identity/index.ts';

/** JSON with object keys sorted at every depth; `undefined` members dropped, as JSON does. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value instanceof Date) return value.toISOString();
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sortKeys(v);
  }
  return out;
}

/** A body as data: JSON text parsed (text that is not JSON — a corrupt body in quarantine — stays text). */
export function bodyValue(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

/** A moment as an ISO string (a backend may hand back a `Date`, or another spelling of the same instant). */
function instant(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    if (!Number.isNaN(ms) && /\d{4}-\d{2}-\d{2}/.test(value)) return new Date(ms).toISOString();
  }
  return value;
}

export function canonicalDoc(doc: StoredDoc): unknown {
  return {
    id: doc.id,
    root: doc.root,
    kind: doc.kind,
    arch_module: doc.arch_module,
    arch_type: doc.arch_type,
    fingerprint: doc.fingerprint,
    format_version: doc.format_version,
    version: doc.version,
    source: doc.source ?? null,
    target: doc.target ?? null,
    body: bodyValue(doc.body),
  };
}

export function canonicalQuarantine(entry: QuarantineEntry): unknown {
  return { ...(canonicalDoc(entry) as object), reason: entry.reason, at: instant(entry.at) };
}

function canonicalIdentity(id: Identity): unknown {
  return {
    type: id.type,
    value_raw: id.value_raw,
    value_normalized: id.value_normalized,
    verified: id.verified,
    is_recovery: id.is_recovery,
    provider: id.provider ?? undefined,
    external_id: id.external_id ?? undefined,
    linked_at: id.linked_at ? instant(id.linked_at) : undefined,
  };
}

export function canonicalUser(user: UserRecord): unknown {
  return {
    user_id: user.user_id,
    status: user.status,
    role: user.role,
    root_id: user.root_id,
    profile: user.profile,
    created_at: instant(user.created_at),
    updated_at: instant(user.updated_at),
    must_change_password: user.must_change_password,
    tokens_valid_after: user.tokens_valid_after ?? null,
    protected: user.protected,
    // Sorted: a backend may list a user's identities in another order.
    identities: user.identities.map((i) => canonicalJson(canonicalIdentity(i))).sort(),
    password_hash: user.password_hash ?? null,
  };
}

export function canonicalToken(token: OneTimeToken): unknown {
  return { token_hash: token.token_hash, user_id: token.user_id, kind: token.kind, identity: token.identity, expires_at: token.expires_at, used_at: token.used_at ?? null };
}

export function canonicalDeleted(row: DeletedUser): unknown {
  return { user_id: row.user_id, deleted_at: row.deleted_at };
}

export function canonicalDrop(row: GraphDrop): unknown {
  return { root_id: row.root_id, since: row.since };
}

export function canonicalAlias([from, to]: [string, string]): unknown {
  return { from, to };
}

const MASK = (1n << 128n) - 1n;

/**
 * A running checksum of a set of records.
 *
 * @example
 * const sum = new SetChecksum();
 * for (const doc of docs) sum.add(canonicalDoc(doc));
 * sum.hex  // 32 hex characters
 */
export class SetChecksum {
  count = 0;
  private sum = 0n;

  add(canonical: unknown): void {
    const digest = createHash('sha256').update(canonicalJson(canonical)).digest();
    this.sum = (this.sum + digest.readBigUInt64BE(0) * (1n << 64n) + digest.readBigUInt64BE(8)) & MASK;
    this.count++;
  }

  get hex(): string {
    return this.sum.toString(16).padStart(32, '0');
  }
}
