/**
 * Users, their identities and credentials, one-time tokens, revocation marks
 * and the graphs of deleted users still to delete: one narrow async
 * interface, several backends (embedded SQLite first, in-memory for tests;
 * PostgreSQL and MongoDB later), one conformance suite every backend passes
 * (`test/conformance/users.ts`). Chosen by configuration
 * (`openUsersRepository`, in `open-users.ts`).
 *
 * Each operation is atomic on its own: the guarantees written on it hold
 * however many threads or processes share the backend.
 */
import { rootIdFor } from './root-id.ts';

export type Role = 'admin' | 'system' | 'user';
export type Status = 'active' | 'disabled';

export interface Identity {
  type: 'username' | 'email' | 'sso';
  value_raw: string;
  value_normalized: string;
  verified: boolean;
  is_recovery: boolean;
  provider?: string;
  external_id?: string;
  linked_at?: string;
}

export interface UserRecord {
  user_id: string;
  status: Status;
  role: Role;
  root_id: string;
  profile: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  /** The user must change the password before anything else (forced by admin or bootstrap). */
  must_change_password: boolean;
  /**
   * The security stamp: tokens minted from a read of an older stamp (or,
   * without one, issued before this moment in ms) are revoked. Moves strictly
   * forward at every password change, reset, forced reset, disable, role change.
   */
  tokens_valid_after: number | null;
  /** Cannot be deleted: the bootstrap admin, system accounts, the guest. */
  protected: boolean;
  identities: Identity[];
  password_hash: string | null;
}

export interface OneTimeToken {
  token_hash: string;
  user_id: string;
  kind: 'verify' | 'reset';
  identity: string;
  expires_at: number;
  used_at: number | null;
}

/**
 * An API key as kept: never the key, only its SHA-256. Keys
 * are 256 random bits, so a plain hash is enough to make a stolen table
 * useless; lookups go by that hash.
 */
export interface ApiKeyRecord {
  /** Random, not secret: how the owner names the key (list, revoke). 32 hex chars. */
  api_key_id: string;
  user_id: string;
  name: string;
  /** SHA-256 of the key, lower-case hex (64 chars); unique. */
  key_hash: string;
  /** The webhook walkers the key may run (names); null: any. */
  walkers: string[] | null;
  /** ISO 8601. */
  created_at: string;
  /** ISO 8601; null: never expires. */
  expires_at: string | null;
}

/** What {@link UsersRepository.removeSsoIdentity} did. */
export type SsoUnlink = 'removed' | 'absent' | 'last';

/** Fields of a user that change after creation; absent (or undefined) ones are left as they are. */
export type UserPatch = Partial<Pick<UserRecord, 'status' | 'role' | 'must_change_password' | 'tokens_valid_after' | 'profile' | 'password_hash'>>;

/** The columns a {@link UserPatch} may change (backends write no other). */
export const PATCHABLE = ['status', 'role', 'must_change_password', 'tokens_valid_after', 'profile', 'password_hash'] as const;

export interface UsersPageOptions {
  /** Part of any identity (username or email, any case). */
  search?: string;
  /** 1–500 (clamped), 50 by default. */
  limit?: number;
  /** ≥ 0 (clamped), 0 by default. */
  offset?: number;
}

export interface UsersPage {
  /** Newest first (`created_at`, then `user_id`). */
  users: UserRecord[];
  /** How many users match, over all pages. */
  total: number;
}

/**
 * @example
 * const users = await openUsersRepository(config['scale.database'].docdb_uri, { path: usersPath });
 * await users.create(userRecord({ user_id: randomUUID(), role: 'user', identities }));
 * const alice = await users.byIdentity(normalize('Alice'));
 */
export interface UsersRepository {
  /** `sqlite`, `memory`, … */
  readonly kind: string;

  /**
   * Create a user with its identities, all or nothing. `IDENTITY_TAKEN` when
   * the user id exists, or an identity is used already: a username or email
   * (by its normalised value, across both types) by any user, an SSO identity
   * (provider and external id) by any user, or a second one of a type by this user
   * (for SSO: a second one of the same provider).
   */
  create(user: UserRecord): Promise<void>;
  /** The user with this id (a copy: changing it changes nothing stored). */
  byId(userId: string): Promise<UserRecord | undefined>;
  /** The user with this username or email, given normalised ({@link normalize}); SSO identities are not looked up here. */
  byIdentity(normalized: string): Promise<UserRecord | undefined>;
  /** Whether a user with this id exists (tokens of users that never existed are refused). */
  exists(userId: string): Promise<boolean>;
  /** Whether a user with this id was deleted (its id is never given out again). */
  wasDeleted(userId: string): Promise<boolean>;

  /** Add an identity to a user, under the uniqueness rules of {@link create} (`IDENTITY_TAKEN`). */
  addIdentity(userId: string, identity: Identity): Promise<void>;
  /** Mark the user's username or email with this normalised value verified (nothing when there is none). */
  setVerified(userId: string, normalized: string): Promise<void>;
  /** Change some fields of a user (and `updated_at`); nothing when there is no such user. */
  update(userId: string, patch: UserPatch): Promise<void>;
  /**
   * Compare and set: replace the password hash `was` with `hash` (a rehash)
   * only if it is still `was`; false when it changed meanwhile (a password
   * change that landed is never undone).
   */
  replacePasswordHash(userId: string, was: string, hash: string): Promise<boolean>;
  /**
   * Change some fields (or none) and void every token minted from what was
   * read before, atomically: the security stamp (`tokens_valid_after`)
   * becomes `max(now, stamp + 1)` — strictly forward, even twice in one
   * millisecond. Resolves to the new stamp, undefined when there is no such user.
   */
  updateAndRevoke(userId: string, patch?: UserPatch): Promise<number | undefined>;
  /**
   * Delete a user, with its identities (free again; SSO links too), one-time tokens and API keys,
   * atomically. The deletion is remembered with a revocation mark —
   * `max(at, stamp + 1)`, returned — so every token of theirs stays void
   * and the id is never reused; the user's root is recorded in the pending
   * graph drops (at `at`). An id with no user is still remembered as deleted.
   */
  delete(userId: string, at?: number): Promise<number>;

  /**
   * `[user_id, mark]` of users whose tokens from before `mark` are void, for
   * marks after `since` (ms): security stamps of users, and deletions. In no
   * particular order.
   */
  revocationsSince(since: number): Promise<[userId: string, mark: number][]>;
  /** Roots of deleted users whose graphs are not deleted yet, oldest deletion first. */
  pendingGraphDrops(): Promise<string[]>;
  /** The graph of a deleted user's root is gone: forget the pending drop. */
  graphDropped(rootId: string): Promise<void>;

  /** How many users there are. */
  count(): Promise<number>;
  /** A page of users (as the admin lists them), searched by part of an identity. */
  list(options: UsersPageOptions): Promise<UsersPage>;

  /** Keep a one-time token (by its hash) for a user. */
  putOneTimeToken(token: Omit<OneTimeToken, 'used_at'>): Promise<void>;
  /** Void every unused one-time token of a user of this kind (a newer one replaces them). */
  voidOneTimeTokens(userId: string, kind: OneTimeToken['kind']): Promise<void>;
  /** A one-time token of this kind, unused and unexpired, without using it. */
  peekOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined>;
  /** Use a one-time token: the token if it was unused and unexpired (now used), undefined otherwise. Once only, however many ask at once. */
  takeOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined>;

  // ---- single sign-on identities (type 'sso': provider + external_id) ----

  /** The user with this SSO identity (provider = platform id, `google`, …; external id = the provider's subject). */
  bySso(provider: string, externalId: string): Promise<UserRecord | undefined>;
  /**
   * Remove the user's SSO identity of this provider, atomically with the
   * check that it is not their last way to sign in: `last` (nothing removed)
   * when they have no password and no other SSO identity; `absent` when they
   * have none of this provider (or there is no such user).
   */
  removeSsoIdentity(userId: string, provider: string): Promise<SsoUnlink>;

  // ---- API keys (a user's; deleted with the user) ----

  /** Keep a new key. `NOT_FOUND` (404) when the user does not exist (or is being deleted): no key outlives its user. */
  putApiKey(key: ApiKeyRecord): Promise<void>;
  /** The key with this hash, expired or not (the caller checks `expires_at`). */
  apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  /** A user's keys, oldest first (`created_at`, then `api_key_id`). */
  apiKeysOf(userId: string): Promise<ApiKeyRecord[]>;
  /** Delete one of the user's keys; false when they have none with this id (another user's key is not theirs to delete). */
  deleteApiKey(userId: string, apiKeyId: string): Promise<boolean>;

  close(): Promise<void>;

  // What `svc db copy` needs besides; every backend of its own implements them
  // (a worker thread's forwarding view does not).

  /** Users whole (identities included), by `user_id` ascending, after `after` ('' from the start), at most `limit`. */
  scanUsers?(after: string, limit: number): Promise<UserRecord[]>;
  /** Insert or replace users whole, exactly as given (a copy's writes; idempotent). */
  putUsers?(users: readonly UserRecord[]): Promise<void>;
  /** Every one-time token, used ones included. */
  oneTimeTokens?(): Promise<OneTimeToken[]>;
  /** Insert or replace one-time tokens exactly as given (their users must be there). */
  putOneTimeTokens?(tokens: readonly OneTimeToken[]): Promise<void>;
  /** Every remembered deletion. */
  deletedUsers?(): Promise<DeletedUser[]>;
  putDeletedUsers?(rows: readonly DeletedUser[]): Promise<void>;
  /** Every pending graph drop. */
  graphDrops?(): Promise<GraphDrop[]>;
  putGraphDrops?(rows: readonly GraphDrop[]): Promise<void>;
  /** Every API key. */
  apiKeys?(): Promise<ApiKeyRecord[]>;
  /** Insert or replace API keys exactly as given (their users must be there). */
  putApiKeys?(keys: readonly ApiKeyRecord[]): Promise<void>;
}

/** A deleted user, remembered: its tokens from before `deleted_at` (the revocation mark, ms) are void and its id is never reused. */
export interface DeletedUser {
  user_id: string;
  deleted_at: number;
}

/** The graph of a deleted user still to delete (`since`: the deletion, ms). */
export interface GraphDrop {
  root_id: string;
  since: number;
}

/**
 * A repository that answers "does this user exist" without waiting (an
 * embedded one). The JWT verifier asks synchronously, once per token.
 * TODO: once the authenticator awaits that question, shared backends
 * (PostgreSQL, MongoDB) need not offer this.
 */
export interface ImmediateUserLookup {
  existsNow(userId: string): boolean;
}

/**
 * The synchronous existence check of a repository that has one; throws for
 * one that does not (a token of a user that never existed must not slip
 * through unchecked).
 *
 * @example
 * new JwtVerifier({ secret, algorithm: 'HS256', userExists: immediateUserExists(users) });
 */
export function immediateUserExists(users: UsersRepository): (userId: string) => boolean {
  const lookup = users as Partial<ImmediateUserLookup>;
  if (typeof lookup.existsNow !== 'function') throw new TypeError(`the ${users.kind} users repository cannot tell synchronously whether a user exists, as the JWT verifier asks`);
  return (userId) => (lookup.existsNow as (id: string) => boolean).call(users, userId);
}

/**
 * A whole user record from the fields that differ: active, no profile, no
 * identity, no password, not protected, no revocation, created now; the root
 * derived from the user id unless given.
 *
 * @example
 * await users.create(userRecord({ user_id: randomUUID(), role: 'user', identities, password_hash }));
 */
export function userRecord(fields: Pick<UserRecord, 'user_id' | 'role'> & Partial<UserRecord>): UserRecord {
  const now = new Date().toISOString();
  return {
    status: 'active',
    root_id: rootIdFor(fields.user_id),
    profile: {},
    created_at: now,
    updated_at: now,
    must_change_password: false,
    tokens_valid_after: null,
    protected: false,
    identities: [],
    password_hash: null,
    ...fields,
  };
}

/** An identity from a table row (SQL backends: absent optional columns are null, flags may be 0/1). */
export function identityFromRow(row: {
  type: Identity['type'];
  value_raw: string;
  value_normalized: string;
  verified: boolean | number;
  is_recovery: boolean | number;
  provider: string | null;
  external_id: string | null;
  linked_at: string | null;
}): Identity {
  const id: Identity = { type: row.type, value_raw: row.value_raw, value_normalized: row.value_normalized, verified: Boolean(row.verified), is_recovery: Boolean(row.is_recovery) };
  if (row.provider) id.provider = row.provider;
  if (row.external_id) id.external_id = row.external_id;
  if (row.linked_at) id.linked_at = row.linked_at;
  return id;
}

/** Lower case, trimmed, Unicode-normalised: what uniqueness and lookups use. */
export function normalize(value: string): string {
  return value.normalize('NFKC').trim().toLowerCase();
}

/** `limit` and `offset` of a page, clamped as every backend clamps them. */
export function pageBounds(options: UsersPageOptions): { limit: number; offset: number } {
  return { limit: Math.min(Math.max(options.limit ?? 50, 1), 500), offset: Math.max(options.offset ?? 0, 0) };
}
