/**
 * A users repository in memory (`docdb_uri = "memory:"`): for tests and
 * snippets, private to the thread that made it. Every operation runs whole
 * before its promise settles (nothing awaits inside one), which makes each
 * atomic; what goes in and comes out is copied.
 */
import { storeError } from '../../actors/graph/index.ts';
import { identityError, notFound, type ApiKeyRecord, type DeletedUser, type GraphDrop, type Identity, type ImmediateUserLookup, normalize, type OneTimeToken, PATCHABLE, pageBounds, type SsoUnlink, type UserPatch, type UserRecord, type UsersPage, type UsersPageOptions, type UsersRepository } from '../../actors/identity/index.ts';

/** The key an identity holds alone: a username or email by value (across both), SSO by provider and external id. */
function identityKey(id: Identity): string {
  return id.type === 'sso' ? ssoKey(id.provider ?? '', id.external_id ?? '') : `value\u0000${id.value_normalized}`;
}

function ssoKey(provider: string, externalId: string): string {
  return `sso\u0000${provider}\u0000${externalId}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** An identity as stored: optional fields only when set (as SQLite gives them back). */
function stored(id: Identity): Identity {
  const out: Identity = { type: id.type, value_raw: id.value_raw, value_normalized: id.value_normalized, verified: id.verified, is_recovery: id.is_recovery };
  if (id.provider) out.provider = id.provider;
  if (id.external_id) out.external_id = id.external_id;
  if (id.linked_at) out.linked_at = id.linked_at;
  return out;
}

function keyCopy(key: ApiKeyRecord): ApiKeyRecord {
  return {
    api_key_id: key.api_key_id,
    user_id: key.user_id,
    name: key.name,
    key_hash: key.key_hash,
    walkers: key.walkers === null ? null : [...key.walkers],
    created_at: key.created_at,
    expires_at: key.expires_at,
  };
}

/**
 * @example
 * const users = new MemoryUsersRepository();
 * await users.create(userRecord({ user_id: 'u1', role: 'user' }));
 */
export class MemoryUsersRepository implements UsersRepository, ImmediateUserLookup {
  readonly kind = 'memory';
  /** By user id, in creation order. */
  private readonly users = new Map<string, UserRecord>();
  /** {@link identityKey} → user id. */
  private readonly taken = new Map<string, string>();
  /** User id → revocation mark of its deletion. */
  private readonly deleted = new Map<string, number>();
  /** Root id → when its user was deleted. */
  private readonly drops = new Map<string, number>();
  private readonly tokens = new Map<string, OneTimeToken>();
  /** API keys by id, and key hash → id. */
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly keyByHash = new Map<string, string>();
  private closed = false;

  private check(): void {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the users repository is closed');
  }

  private copy(user: UserRecord | undefined): UserRecord | undefined {
    return user && structuredClone(user);
  }

  /** Whether `ids` may join a user who has `have`: the rules of {@link UsersRepository.create}. */
  private free(have: readonly Identity[], ids: readonly Identity[]): boolean {
    const keys = new Set<string>();
    const types = new Set(have.filter((i) => i.type !== 'sso').map((i) => i.type));
    const providers = new Set(have.filter((i) => i.type === 'sso').map((i) => i.provider ?? ''));
    for (const id of ids) {
      const key = identityKey(id);
      if (this.taken.has(key) || keys.has(key)) return false;
      keys.add(key);
      if (id.type !== 'sso') {
        if (types.has(id.type)) return false;
        types.add(id.type);
      } else {
        // One SSO identity per provider and user.
        if (providers.has(id.provider ?? '')) return false;
        providers.add(id.provider ?? '');
      }
    }
    return true;
  }

  async create(user: UserRecord): Promise<void> {
    this.check();
    if (this.users.has(user.user_id) || !this.free([], user.identities)) throw identityError('IDENTITY_TAKEN');
    const record = structuredClone(user);
    record.identities = user.identities.map(stored);
    this.users.set(user.user_id, record);
    for (const id of record.identities) this.taken.set(identityKey(id), user.user_id);
  }

  async byId(userId: string): Promise<UserRecord | undefined> {
    this.check();
    return this.copy(this.users.get(userId));
  }

  async byIdentity(normalized: string): Promise<UserRecord | undefined> {
    this.check();
    const userId = this.taken.get(`value\u0000${normalized}`);
    return userId === undefined ? undefined : this.copy(this.users.get(userId));
  }

  async exists(userId: string): Promise<boolean> {
    return this.existsNow(userId);
  }

  /** {@link exists}, answered at once (for the synchronous JWT verifier). */
  existsNow(userId: string): boolean {
    this.check();
    return this.users.has(userId);
  }

  async wasDeleted(userId: string): Promise<boolean> {
    this.check();
    return this.deleted.has(userId);
  }

  async addIdentity(userId: string, identity: Identity): Promise<void> {
    this.check();
    const user = this.users.get(userId);
    // SQLite's foreign key refuses an identity of no user the same way (a constraint).
    if (!user || !this.free(user.identities, [identity])) throw identityError('IDENTITY_TAKEN');
    const id = stored(identity);
    user.identities.push(id);
    this.taken.set(identityKey(id), userId);
  }

  async setVerified(userId: string, normalized: string): Promise<void> {
    this.check();
    for (const id of this.users.get(userId)?.identities ?? []) if (id.value_normalized === normalized) id.verified = true;
  }

  async update(userId: string, patch: UserPatch): Promise<void> {
    this.check();
    this.patch(userId, patch);
  }

  private patch(userId: string, patch: UserPatch): void {
    const user = this.users.get(userId);
    if (!user) return;
    for (const k of PATCHABLE) {
      const v = patch[k];
      if (v !== undefined) (user as unknown as Record<string, unknown>)[k] = typeof v === 'object' && v !== null ? structuredClone(v) : v;
    }
    user.updated_at = new Date().toISOString();
  }

  async replacePasswordHash(userId: string, was: string, hash: string): Promise<boolean> {
    this.check();
    const user = this.users.get(userId);
    if (!user || user.password_hash !== was) return false;
    user.password_hash = hash;
    user.updated_at = new Date().toISOString();
    return true;
  }

  async updateAndRevoke(userId: string, patch: UserPatch = {}): Promise<number | undefined> {
    this.check();
    const user = this.users.get(userId);
    if (!user) return undefined;
    this.patch(userId, patch);
    user.tokens_valid_after = Math.max(Date.now(), (user.tokens_valid_after ?? 0) + 1);
    user.updated_at = new Date().toISOString();
    return user.tokens_valid_after;
  }

  async delete(userId: string, at = Date.now()): Promise<number> {
    this.check();
    const user = this.users.get(userId);
    const mark = Math.max(at, (user?.tokens_valid_after ?? 0) + 1);
    if (user) {
      this.users.delete(userId);
      for (const id of user.identities) this.taken.delete(identityKey(id));
      for (const [hash, token] of this.tokens) if (token.user_id === userId) this.tokens.delete(hash);
      for (const [id, key] of this.keys) if (key.user_id === userId) this.dropKey(id, key);
      // Re-inserted: a root deleted again is as recent as its latest deletion.
      this.drops.delete(user.root_id);
      this.drops.set(user.root_id, at);
    }
    this.deleted.set(userId, mark);
    return mark;
  }

  async revocationsSince(since: number): Promise<[string, number][]> {
    this.check();
    const out: [string, number][] = [];
    for (const u of this.users.values()) if (u.tokens_valid_after !== null && u.tokens_valid_after > since) out.push([u.user_id, u.tokens_valid_after]);
    for (const [userId, mark] of this.deleted) if (mark > since) out.push([userId, mark]);
    return out;
  }

  async pendingGraphDrops(): Promise<string[]> {
    this.check();
    return [...this.drops].sort((a, b) => a[1] - b[1]).map(([root]) => root);
  }

  async graphDropped(rootId: string): Promise<void> {
    this.check();
    this.drops.delete(rootId);
  }

  async count(): Promise<number> {
    this.check();
    return this.users.size;
  }

  async list(options: UsersPageOptions): Promise<UsersPage> {
    this.check();
    const { limit, offset } = pageBounds(options);
    const part = options.search ? normalize(options.search) : '';
    const matching = [...this.users.values()].filter((u) => !part || u.identities.some((i) => i.value_normalized.includes(part)));
    matching.sort((a, b) => (a.created_at === b.created_at ? (a.user_id < b.user_id ? -1 : a.user_id > b.user_id ? 1 : 0) : a.created_at < b.created_at ? 1 : -1));
    return { users: matching.slice(offset, offset + limit).map((u) => structuredClone(u)), total: matching.length };
  }

  async putOneTimeToken(token: Omit<OneTimeToken, 'used_at'>): Promise<void> {
    this.check();
    // As SQLite's primary and foreign keys: one token per hash, of a user that exists.
    if (this.tokens.has(token.token_hash) || !this.users.has(token.user_id)) throw storeError('SVC_ERR_STORE', 'that one-time token cannot be kept (its hash is used, or its user is gone)');
    this.tokens.set(token.token_hash, { token_hash: token.token_hash, user_id: token.user_id, kind: token.kind, identity: token.identity, expires_at: token.expires_at, used_at: null });
  }

  async voidOneTimeTokens(userId: string, kind: OneTimeToken['kind']): Promise<void> {
    this.check();
    const now = Date.now();
    for (const token of this.tokens.values()) if (token.user_id === userId && token.kind === kind && token.used_at === null) token.used_at = now;
  }

  private usable(hash: string, kind: OneTimeToken['kind'], now: number): OneTimeToken | undefined {
    const token = this.tokens.get(hash);
    return token && token.kind === kind && token.used_at === null && token.expires_at > now ? token : undefined;
  }

  async peekOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    this.check();
    const token = this.usable(hash, kind, Date.now());
    return token && { ...token };
  }

  async takeOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    this.check();
    const now = Date.now();
    const token = this.usable(hash, kind, now);
    if (!token) return undefined;
    token.used_at = now;
    return { ...token };
  }

  async bySso(provider: string, externalId: string): Promise<UserRecord | undefined> {
    this.check();
    const userId = this.taken.get(ssoKey(provider, externalId));
    return userId === undefined ? undefined : this.copy(this.users.get(userId));
  }

  async removeSsoIdentity(userId: string, provider: string): Promise<SsoUnlink> {
    this.check();
    const user = this.users.get(userId);
    const at = user?.identities.findIndex((i) => i.type === 'sso' && i.provider === provider) ?? -1;
    if (!user || at < 0) return 'absent';
    if (user.password_hash === null && !user.identities.some((i) => i.type === 'sso' && i.provider !== provider)) return 'last';
    const [removed] = user.identities.splice(at, 1);
    this.taken.delete(identityKey(removed as Identity));
    return 'removed';
  }

  async putApiKey(key: ApiKeyRecord): Promise<void> {
    this.check();
    // As SQLite's foreign key and unique columns.
    if (!this.users.has(key.user_id)) throw notFound('no such user');
    if (this.keys.has(key.api_key_id) || this.keyByHash.has(key.key_hash)) throw storeError('SVC_ERR_STORE', 'that API key cannot be kept (its hash or id is used)');
    this.keys.set(key.api_key_id, keyCopy(key));
    this.keyByHash.set(key.key_hash, key.api_key_id);
  }

  async apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    this.check();
    const id = this.keyByHash.get(keyHash);
    const key = id === undefined ? undefined : this.keys.get(id);
    return key && keyCopy(key);
  }

  async apiKeysOf(userId: string): Promise<ApiKeyRecord[]> {
    this.check();
    const mine = [...this.keys.values()].filter((k) => k.user_id === userId);
    mine.sort((a, b) => (a.created_at === b.created_at ? compare(a.api_key_id, b.api_key_id) : compare(a.created_at, b.created_at)));
    return mine.map(keyCopy);
  }

  async deleteApiKey(userId: string, apiKeyId: string): Promise<boolean> {
    this.check();
    const key = this.keys.get(apiKeyId);
    if (!key || key.user_id !== userId) return false;
    this.dropKey(apiKeyId, key);
    return true;
  }

  private dropKey(id: string, key: ApiKeyRecord): void {
    this.keys.delete(id);
    if (this.keyByHash.get(key.key_hash) === id) this.keyByHash.delete(key.key_hash);
  }

  // What `svc db copy` needs besides.

  async scanUsers(after: string, limit: number): Promise<UserRecord[]> {
    this.check();
    const ids = [...this.users.keys()].filter((id) => id > after).sort();
    return ids.slice(0, Math.max(limit, 0)).map((id) => structuredClone(this.users.get(id) as UserRecord));
  }

  async putUsers(users: readonly UserRecord[]): Promise<void> {
    this.check();
    // Checked whole first (all of them or none, as SQLite's transaction): an identity may move
    // between users of this batch, never away from a user outside it.
    const incoming = new Map<string, string>();
    for (const user of users) {
      for (const id of user.identities) {
        const key = identityKey(id);
        const holder = incoming.get(key);
        if (holder !== undefined && holder !== user.user_id) throw identityError('IDENTITY_TAKEN');
        incoming.set(key, user.user_id);
      }
    }
    const replaced = new Set(users.map((u) => u.user_id));
    for (const [key, userId] of incoming) {
      const have = this.taken.get(key);
      if (have !== undefined && have !== userId && !replaced.has(have)) throw identityError('IDENTITY_TAKEN');
    }
    for (const user of users) {
      const old = this.users.get(user.user_id);
      for (const id of old?.identities ?? []) if (this.taken.get(identityKey(id)) === user.user_id) this.taken.delete(identityKey(id));
      const record = structuredClone(user);
      record.identities = user.identities.map(stored);
      this.users.set(user.user_id, record);
      for (const id of record.identities) this.taken.set(identityKey(id), user.user_id);
    }
  }

  async oneTimeTokens(): Promise<OneTimeToken[]> {
    this.check();
    return [...this.tokens.values()].map((t) => ({ ...t }));
  }

  async putOneTimeTokens(tokens: readonly OneTimeToken[]): Promise<void> {
    this.check();
    if (tokens.some((t) => !this.users.has(t.user_id))) throw storeError('SVC_ERR_STORE', 'a one-time token of a user that is not there cannot be kept');
    for (const t of tokens) this.tokens.set(t.token_hash, { token_hash: t.token_hash, user_id: t.user_id, kind: t.kind, identity: t.identity, expires_at: t.expires_at, used_at: t.used_at ?? null });
  }

  async deletedUsers(): Promise<DeletedUser[]> {
    this.check();
    return [...this.deleted].map(([user_id, deleted_at]) => ({ user_id, deleted_at }));
  }

  async putDeletedUsers(rows: readonly DeletedUser[]): Promise<void> {
    this.check();
    for (const r of rows) this.deleted.set(r.user_id, r.deleted_at);
  }

  async graphDrops(): Promise<GraphDrop[]> {
    this.check();
    return [...this.drops].sort((a, b) => a[1] - b[1]).map(([root_id, since]) => ({ root_id, since }));
  }

  async putGraphDrops(rows: readonly GraphDrop[]): Promise<void> {
    this.check();
    for (const r of rows) {
      this.drops.delete(r.root_id);
      this.drops.set(r.root_id, r.since);
    }
  }

  async apiKeys(): Promise<ApiKeyRecord[]> {
    this.check();
    return [...this.keys.values()].sort((a, b) => compare(a.api_key_id, b.api_key_id)).map(keyCopy);
  }

  async putApiKeys(keys: readonly ApiKeyRecord[]): Promise<void> {
    this.check();
    // Checked whole first (all or none, as SQLite's transaction): users there, a hash held by one key.
    if (keys.some((k) => !this.users.has(k.user_id))) throw storeError('SVC_ERR_STORE', 'an API key of a user that is not there cannot be kept');
    const used = () => storeError('SVC_ERR_STORE', 'that API key cannot be kept (its hash is used)');
    const incoming = new Map<string, string>();
    for (const k of keys) {
      const holder = incoming.get(k.key_hash);
      if (holder !== undefined && holder !== k.api_key_id) throw used();
      incoming.set(k.key_hash, k.api_key_id);
    }
    // A hash may move between keys of this batch, never away from a key outside it.
    const replaced = new Set(keys.map((k) => k.api_key_id));
    for (const [hash, id] of incoming) {
      const have = this.keyByHash.get(hash);
      if (have !== undefined && have !== id && !replaced.has(have)) throw used();
    }
    for (const k of keys) {
      const old = this.keys.get(k.api_key_id);
      if (old) this.dropKey(k.api_key_id, old);
      this.keys.set(k.api_key_id, keyCopy(k));
      this.keyByHash.set(k.key_hash, k.api_key_id);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
