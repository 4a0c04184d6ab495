/**
 * The embedded users repository: SQLite through better-sqlite3, in WAL mode,
 * at `.svc/data/users.db`. Synchronous inside: each
 * operation runs whole — in one transaction where it writes several rows —
 * before its promise settles, so it is atomic across the threads and
 * processes sharing the file. Identity values are unique across all users
 * after normalisation (a UNIQUE index, so two workers registering the same
 * name at once cannot both win).
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { storeError } from '../../actors/graph/index.ts';
import { identityError, notFound, type ApiKeyRecord, type DeletedUser, type GraphDrop, type Identity, identityFromRow, type ImmediateUserLookup, normalize, type OneTimeToken, PATCHABLE, pageBounds, type Role, type SsoUnlink, type Status, type UserPatch, type UserRecord, type UsersPage, type UsersPageOptions, type UsersRepository } from '../../actors/identity/index.ts';
import { enableWal } from './wal.ts';

interface UserRow {
  user_id: string;
  status: Status;
  role: Role;
  root_id: string;
  profile: string;
  created_at: string;
  updated_at: string;
  must_change_password: number;
  tokens_valid_after: number | null;
  protected: number;
  password_hash: string | null;
}

interface IdentityRow {
  user_id: string;
  type: Identity['type'];
  value_raw: string;
  value_normalized: string;
  verified: number;
  is_recovery: number;
  provider: string | null;
  external_id: string | null;
  linked_at: string | null;
}

interface ApiKeyRow {
  api_key_id: string;
  user_id: string;
  name: string;
  key_hash: string;
  /** JSON text of the walker names; null: any. */
  walkers: string | null;
  created_at: string;
  expires_at: string | null;
}

function keyRow(key: ApiKeyRecord): ApiKeyRow {
  return {
    api_key_id: key.api_key_id,
    user_id: key.user_id,
    name: key.name,
    key_hash: key.key_hash,
    walkers: key.walkers === null ? null : JSON.stringify(key.walkers),
    created_at: key.created_at,
    expires_at: key.expires_at,
  };
}

function keyRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    api_key_id: row.api_key_id,
    user_id: row.user_id,
    name: row.name,
    key_hash: row.key_hash,
    walkers: row.walkers === null ? null : (JSON.parse(row.walkers) as string[]),
    created_at: row.created_at,
    expires_at: row.expires_at,
  };
}

/** A user's row as the statements take it (its identities go in their own table). */
function userRow(user: UserRecord): UserRow {
  return {
    user_id: user.user_id,
    status: user.status,
    role: user.role,
    root_id: user.root_id,
    profile: JSON.stringify(user.profile),
    created_at: user.created_at,
    updated_at: user.updated_at,
    must_change_password: user.must_change_password ? 1 : 0,
    tokens_valid_after: user.tokens_valid_after,
    protected: user.protected ? 1 : 0,
    password_hash: user.password_hash,
  };
}

function isUnique(error: unknown): boolean {
  return typeof (error as { code?: unknown }).code === 'string' && (error as { code: string }).code.startsWith('SQLITE_CONSTRAINT');
}

function isForeignKey(error: unknown): boolean {
  return (error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/**
 * @example
 * const users = SqliteUsersRepository.open('.svc/data/users.db');
 * await users.byIdentity(normalize('Alice'));
 */
export class SqliteUsersRepository implements UsersRepository, ImmediateUserLookup {
  readonly kind = 'sqlite';
  private readonly db: Database.Database;
  private readonly q;
  private closed = false;

  private constructor(
    readonly path: string,
    readOnly: boolean,
  ) {
    if (path !== ':memory:' && !readOnly) mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path, { readonly: readOnly, fileMustExist: readOnly });
    // The wait first: switching to WAL takes a lock another thread or process opening the same file may hold.
    this.db.pragma('busy_timeout = 5000');
    if (!readOnly) {
      enableWal(this.db);
      this.db.pragma('synchronous = NORMAL');
    }
    this.db.pragma('foreign_keys = ON');
    if (!readOnly) this.db.exec(`
      CREATE TABLE IF NOT EXISTS users (
        user_id TEXT PRIMARY KEY, status TEXT NOT NULL, role TEXT NOT NULL, root_id TEXT NOT NULL,
        profile TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        must_change_password INTEGER NOT NULL DEFAULT 0, tokens_valid_after INTEGER,
        protected INTEGER NOT NULL DEFAULT 0, password_hash TEXT);
      CREATE TABLE IF NOT EXISTS identities (
        user_id TEXT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE, type TEXT NOT NULL,
        value_raw TEXT NOT NULL, value_normalized TEXT NOT NULL, verified INTEGER NOT NULL,
        is_recovery INTEGER NOT NULL, provider TEXT, external_id TEXT, linked_at TEXT);
      CREATE UNIQUE INDEX IF NOT EXISTS identities_value ON identities(value_normalized) WHERE type != 'sso';
      CREATE UNIQUE INDEX IF NOT EXISTS identities_sso ON identities(provider, external_id) WHERE type = 'sso';
      CREATE UNIQUE INDEX IF NOT EXISTS identities_one_per_type ON identities(user_id, type) WHERE type != 'sso';
      -- One SSO identity per provider and user (added later: IF NOT EXISTS upgrades older files on open).
      CREATE UNIQUE INDEX IF NOT EXISTS identities_sso_one_per_provider ON identities(user_id, provider) WHERE type = 'sso';
      CREATE INDEX IF NOT EXISTS identities_user ON identities(user_id);
      CREATE TABLE IF NOT EXISTS deleted_users (user_id TEXT PRIMARY KEY, deleted_at INTEGER NOT NULL);
      -- Graphs of deleted users not deleted yet (done after the user, retried at start until it succeeds).
      CREATE TABLE IF NOT EXISTS pending_graph_drops (root_id TEXT PRIMARY KEY, since INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS one_time_tokens (
        token_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE,
        kind TEXT NOT NULL, identity TEXT NOT NULL, expires_at INTEGER NOT NULL, used_at INTEGER);
      -- API keys (the original product's collection name): only the key's SHA-256; gone with their user.
      CREATE TABLE IF NOT EXISTS webhook_api_keys (
        api_key_id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE,
        name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE, walkers TEXT, created_at TEXT NOT NULL, expires_at TEXT);
      CREATE INDEX IF NOT EXISTS webhook_api_keys_user ON webhook_api_keys(user_id);
    `);
    this.q = {
      insertUser: this.db.prepare(
        `INSERT INTO users (user_id, status, role, root_id, profile, created_at, updated_at, must_change_password, tokens_valid_after, protected, password_hash)
         VALUES (@user_id, @status, @role, @root_id, @profile, @created_at, @updated_at, @must_change_password, @tokens_valid_after, @protected, @password_hash)`,
      ),
      insertIdentity: this.db.prepare(
        `INSERT INTO identities (user_id, type, value_raw, value_normalized, verified, is_recovery, provider, external_id, linked_at)
         VALUES (@user_id, @type, @value_raw, @value_normalized, @verified, @is_recovery, @provider, @external_id, @linked_at)`,
      ),
      userById: this.db.prepare('SELECT * FROM users WHERE user_id = ?'),
      userByIdentity: this.db.prepare("SELECT u.* FROM users u JOIN identities i ON i.user_id = u.user_id WHERE i.value_normalized = ? AND i.type != 'sso'"),
      userBySso: this.db.prepare("SELECT u.* FROM users u JOIN identities i ON i.user_id = u.user_id WHERE i.type = 'sso' AND i.provider = ? AND i.external_id = ?"),
      identitiesOf: this.db.prepare('SELECT * FROM identities WHERE user_id = ? ORDER BY rowid'),
      // Only over the hash it replaces: a change that landed meanwhile is not undone.
      setPassword: this.db.prepare('UPDATE users SET password_hash = @hash, updated_at = @updated_at WHERE user_id = @user_id AND password_hash = @was'),
      setVerified: this.db.prepare('UPDATE identities SET verified = 1 WHERE user_id = ? AND value_normalized = ?'),
      deleteUser: this.db.prepare('DELETE FROM users WHERE user_id = ?'),
      count: this.db.prepare('SELECT count(*) AS n FROM users'),
      // A deleted user's tokens stay void after a restart: the deletion is remembered apart from the user.
      revocations: this.db.prepare(
        'SELECT user_id, tokens_valid_after FROM users WHERE tokens_valid_after > @since UNION ALL SELECT user_id, deleted_at FROM deleted_users WHERE deleted_at > @since',
      ),
      remember: this.db.prepare('INSERT OR REPLACE INTO deleted_users (user_id, deleted_at) VALUES (?, ?)'),
      // The security stamp moves strictly forward, atomically: a token minted from a read before it is void.
      revoke: this.db.prepare(
        'UPDATE users SET tokens_valid_after = max(@now, coalesce(tokens_valid_after, 0) + 1), updated_at = @updated_at WHERE user_id = @user_id RETURNING tokens_valid_after',
      ),
      exists: this.db.prepare('SELECT 1 FROM users WHERE user_id = ?').pluck(),
      wasDeleted: this.db.prepare('SELECT 1 FROM deleted_users WHERE user_id = ?').pluck(),
      pendDrop: this.db.prepare('INSERT OR REPLACE INTO pending_graph_drops (root_id, since) VALUES (?, ?)'),
      pendingDrops: this.db.prepare('SELECT root_id FROM pending_graph_drops ORDER BY since').pluck(),
      dropped: this.db.prepare('DELETE FROM pending_graph_drops WHERE root_id = ?'),
      putToken: this.db.prepare('INSERT INTO one_time_tokens (token_hash, user_id, kind, identity, expires_at) VALUES (?, ?, ?, ?, ?)'),
      voidTokens: this.db.prepare('UPDATE one_time_tokens SET used_at = ? WHERE user_id = ? AND kind = ? AND used_at IS NULL'),
      peekToken: this.db.prepare('SELECT * FROM one_time_tokens WHERE token_hash = @hash AND kind = @kind AND used_at IS NULL AND expires_at > @now'),
      takeToken: this.db.prepare('UPDATE one_time_tokens SET used_at = @now WHERE token_hash = @hash AND kind = @kind AND used_at IS NULL AND expires_at > @now RETURNING *'),
    };
  }

  /**
   * Open (creating the file, its folder and its tables when missing); `:memory:`
   * for a private database. `readOnly`: a worker thread's reading connection
   * (its writes go to the process's one writer, `ForwardingUsersRepository`);
   * the file must exist.
   */
  static open(path: string, options: { readOnly?: boolean } = {}): SqliteUsersRepository {
    return new SqliteUsersRepository(path, options.readOnly === true);
  }

  private check(): void {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the users repository is closed');
  }

  private record(row: UserRow | undefined): UserRecord | undefined {
    if (!row) return undefined;
    const identities = (this.q.identitiesOf.all(row.user_id) as IdentityRow[]).map(identityFromRow);
    return {
      user_id: row.user_id,
      status: row.status,
      role: row.role,
      root_id: row.root_id,
      profile: JSON.parse(row.profile) as Record<string, unknown>,
      created_at: row.created_at,
      updated_at: row.updated_at,
      must_change_password: row.must_change_password === 1,
      tokens_valid_after: row.tokens_valid_after,
      protected: row.protected === 1,
      identities,
      password_hash: row.password_hash,
    };
  }

  async create(user: UserRecord): Promise<void> {
    this.check();
    try {
      this.db.transaction(() => {
        this.q.insertUser.run(userRow(user));
        for (const id of user.identities) this.insertIdentity(user.user_id, id);
      })();
    } catch (error) {
      if (isUnique(error)) throw identityError('IDENTITY_TAKEN');
      throw error;
    }
  }

  private insertIdentity(userId: string, id: Identity): void {
    this.q.insertIdentity.run({
      user_id: userId,
      type: id.type,
      value_raw: id.value_raw,
      value_normalized: id.value_normalized,
      verified: id.verified ? 1 : 0,
      is_recovery: id.is_recovery ? 1 : 0,
      provider: id.provider ?? null,
      external_id: id.external_id ?? null,
      linked_at: id.linked_at ?? null,
    });
  }

  async byId(userId: string): Promise<UserRecord | undefined> {
    this.check();
    return this.record(this.q.userById.get(userId) as UserRow | undefined);
  }

  async byIdentity(normalized: string): Promise<UserRecord | undefined> {
    this.check();
    return this.record(this.q.userByIdentity.get(normalized) as UserRow | undefined);
  }

  async exists(userId: string): Promise<boolean> {
    return this.existsNow(userId);
  }

  /** {@link exists}, answered at once (for the synchronous JWT verifier). */
  existsNow(userId: string): boolean {
    this.check();
    return this.q.exists.get(userId) === 1;
  }

  async wasDeleted(userId: string): Promise<boolean> {
    this.check();
    return this.q.wasDeleted.get(userId) === 1;
  }

  async addIdentity(userId: string, id: Identity): Promise<void> {
    this.check();
    try {
      this.insertIdentity(userId, id);
    } catch (error) {
      if (isUnique(error)) throw identityError('IDENTITY_TAKEN');
      throw error;
    }
  }

  async setVerified(userId: string, normalized: string): Promise<void> {
    this.check();
    this.q.setVerified.run(userId, normalized);
  }

  async update(userId: string, patch: UserPatch): Promise<void> {
    this.check();
    this.patch(userId, patch);
  }

  private patch(userId: string, patch: UserPatch): void {
    const sets: string[] = ['updated_at = @updated_at'];
    const values: Record<string, unknown> = { user_id: userId, updated_at: new Date().toISOString() };
    // Known columns only (the names go into the SQL text).
    for (const k of PATCHABLE) {
      const v = patch[k];
      if (v === undefined) continue;
      sets.push(`${k} = @${k}`);
      values[k] = typeof v === 'boolean' ? (v ? 1 : 0) : k === 'profile' ? JSON.stringify(v) : v;
    }
    this.db.prepare(`UPDATE users SET ${sets.join(', ')} WHERE user_id = @user_id`).run(values);
  }

  async replacePasswordHash(userId: string, was: string, hash: string): Promise<boolean> {
    this.check();
    return this.q.setPassword.run({ hash, was, user_id: userId, updated_at: new Date().toISOString() }).changes === 1;
  }

  async updateAndRevoke(userId: string, patch: UserPatch = {}): Promise<number | undefined> {
    this.check();
    return this.db.transaction(() => {
      if (PATCHABLE.some((k) => patch[k] !== undefined)) this.patch(userId, patch);
      const row = this.q.revoke.get({ user_id: userId, now: Date.now(), updated_at: new Date().toISOString() }) as { tokens_valid_after: number } | undefined;
      return row?.tokens_valid_after;
    })();
  }

  async delete(userId: string, at = Date.now()): Promise<number> {
    this.check();
    return this.db.transaction(() => {
      const row = this.q.userById.get(userId) as UserRow | undefined;
      const mark = Math.max(at, (row?.tokens_valid_after ?? 0) + 1);
      this.q.deleteUser.run(userId);
      this.q.remember.run(userId, mark);
      if (row) this.q.pendDrop.run(row.root_id, at);
      return mark;
    })();
  }

  async revocationsSince(since: number): Promise<[string, number][]> {
    this.check();
    return (this.q.revocations.all({ since }) as { user_id: string; tokens_valid_after: number }[]).map((r) => [r.user_id, r.tokens_valid_after]);
  }

  async pendingGraphDrops(): Promise<string[]> {
    this.check();
    return this.q.pendingDrops.all() as string[];
  }

  async graphDropped(rootId: string): Promise<void> {
    this.check();
    this.q.dropped.run(rootId);
  }

  async count(): Promise<number> {
    this.check();
    return (this.q.count.get() as { n: number }).n;
  }

  async list(options: UsersPageOptions): Promise<UsersPage> {
    this.check();
    const { limit, offset } = pageBounds(options);
    const like = options.search ? `%${normalize(options.search).replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
    const where = like ? "WHERE EXISTS (SELECT 1 FROM identities i WHERE i.user_id = u.user_id AND i.value_normalized LIKE @like ESCAPE '\\')" : '';
    // One read transaction: the page and its total agree.
    return this.db.transaction(() => {
      const total = (this.db.prepare(`SELECT count(*) AS n FROM users u ${where}`).get({ like }) as { n: number }).n;
      const rows = this.db.prepare(`SELECT * FROM users u ${where} ORDER BY created_at DESC, user_id LIMIT @limit OFFSET @offset`).all({ like, limit, offset }) as UserRow[];
      return { users: rows.map((r) => this.record(r) as UserRecord), total };
    })();
  }

  async putOneTimeToken(token: Omit<OneTimeToken, 'used_at'>): Promise<void> {
    this.check();
    this.q.putToken.run(token.token_hash, token.user_id, token.kind, token.identity, token.expires_at);
  }

  async voidOneTimeTokens(userId: string, kind: OneTimeToken['kind']): Promise<void> {
    this.check();
    this.q.voidTokens.run(Date.now(), userId, kind);
  }

  async peekOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    this.check();
    return this.q.peekToken.get({ hash, kind, now: Date.now() }) as OneTimeToken | undefined;
  }

  async takeOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    this.check();
    return this.q.takeToken.get({ hash, kind, now: Date.now() }) as OneTimeToken | undefined;
  }

  async bySso(provider: string, externalId: string): Promise<UserRecord | undefined> {
    this.check();
    return this.record(this.q.userBySso.get(provider, externalId) as UserRow | undefined);
  }

  async removeSsoIdentity(userId: string, provider: string): Promise<SsoUnlink> {
    this.check();
    const k = this.keys;
    // IMMEDIATE: the write lock first, so the check and the removal see one state across connections.
    return this.db
      .transaction((): SsoUnlink => {
        const user = this.q.userById.get(userId) as UserRow | undefined;
        if (!user) return 'absent';
        const providers = k.ssoProviders.all(userId) as string[];
        if (!providers.includes(provider)) return 'absent';
        if (user.password_hash === null && providers.every((p) => p === provider)) return 'last';
        k.removeSso.run(userId, provider);
        return 'removed';
      })
      .immediate();
  }

  async putApiKey(key: ApiKeyRecord): Promise<void> {
    this.check();
    try {
      this.keys.put.run(keyRow(key));
    } catch (error) {
      // The foreign key: no key outlives (or precedes) its user.
      if (isForeignKey(error)) throw notFound('no such user');
      if (isUnique(error)) throw storeError('SVC_ERR_STORE', 'that API key cannot be kept (its hash or id is used)');
      throw error;
    }
  }

  async apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    this.check();
    const row = this.keys.byHash.get(keyHash) as ApiKeyRow | undefined;
    return row && keyRecord(row);
  }

  async apiKeysOf(userId: string): Promise<ApiKeyRecord[]> {
    this.check();
    return (this.keys.of.all(userId) as ApiKeyRow[]).map(keyRecord);
  }

  async deleteApiKey(userId: string, apiKeyId: string): Promise<boolean> {
    this.check();
    return this.keys.delete.run(apiKeyId, userId).changes === 1;
  }

  /**
   * SSO and API-key statements, prepared on first use: a worker's read-only
   * connection to a file no writer of this version upgraded yet still opens
   * (only these calls would fail).
   */
  private keys_: ReturnType<SqliteUsersRepository['prepareKeys']> | undefined;

  private get keys(): ReturnType<SqliteUsersRepository['prepareKeys']> {
    return (this.keys_ ??= this.prepareKeys());
  }

  private prepareKeys() {
    return {
      ssoProviders: this.db.prepare("SELECT provider FROM identities WHERE user_id = ? AND type = 'sso'").pluck(),
      removeSso: this.db.prepare("DELETE FROM identities WHERE user_id = ? AND type = 'sso' AND provider = ?"),
      put: this.db.prepare(
        `INSERT INTO webhook_api_keys (api_key_id, user_id, name, key_hash, walkers, created_at, expires_at)
         VALUES (@api_key_id, @user_id, @name, @key_hash, @walkers, @created_at, @expires_at)`,
      ),
      byHash: this.db.prepare('SELECT * FROM webhook_api_keys WHERE key_hash = ?'),
      of: this.db.prepare('SELECT * FROM webhook_api_keys WHERE user_id = ? ORDER BY created_at, api_key_id'),
      delete: this.db.prepare('DELETE FROM webhook_api_keys WHERE api_key_id = ? AND user_id = ?'),
      all: this.db.prepare('SELECT * FROM webhook_api_keys ORDER BY api_key_id'),
      upsert: this.db.prepare(
        `INSERT INTO webhook_api_keys (api_key_id, user_id, name, key_hash, walkers, created_at, expires_at)
         VALUES (@api_key_id, @user_id, @name, @key_hash, @walkers, @created_at, @expires_at)
         ON CONFLICT(api_key_id) DO UPDATE SET user_id = excluded.user_id, name = excluded.name, key_hash = excluded.key_hash,
           walkers = excluded.walkers, created_at = excluded.created_at, expires_at = excluded.expires_at`,
      ),
    };
  }

  // What `svc db copy` needs besides.

  /** Prepared on first use: the serving path never pays for them. */
  private ops_: ReturnType<SqliteUsersRepository['prepareOps']> | undefined;

  private get ops(): ReturnType<SqliteUsersRepository['prepareOps']> {
    return (this.ops_ ??= this.prepareOps());
  }

  private prepareOps() {
    return {
      scanUsers: this.db.prepare('SELECT * FROM users WHERE user_id > ? ORDER BY user_id LIMIT ?'),
      // An upsert, not INSERT OR REPLACE: replacing the row would cascade to the user's one-time tokens.
      putUser: this.db.prepare(
        `INSERT INTO users (user_id, status, role, root_id, profile, created_at, updated_at, must_change_password, tokens_valid_after, protected, password_hash)
         VALUES (@user_id, @status, @role, @root_id, @profile, @created_at, @updated_at, @must_change_password, @tokens_valid_after, @protected, @password_hash)
         ON CONFLICT(user_id) DO UPDATE SET status = excluded.status, role = excluded.role, root_id = excluded.root_id, profile = excluded.profile,
           created_at = excluded.created_at, updated_at = excluded.updated_at, must_change_password = excluded.must_change_password,
           tokens_valid_after = excluded.tokens_valid_after, protected = excluded.protected, password_hash = excluded.password_hash`,
      ),
      dropIdentities: this.db.prepare('DELETE FROM identities WHERE user_id = ?'),
      tokens: this.db.prepare('SELECT * FROM one_time_tokens ORDER BY token_hash'),
      putToken: this.db.prepare(
        `INSERT INTO one_time_tokens (token_hash, user_id, kind, identity, expires_at, used_at) VALUES (@token_hash, @user_id, @kind, @identity, @expires_at, @used_at)
         ON CONFLICT(token_hash) DO UPDATE SET user_id = excluded.user_id, kind = excluded.kind, identity = excluded.identity,
           expires_at = excluded.expires_at, used_at = excluded.used_at`,
      ),
      deleted: this.db.prepare('SELECT user_id, deleted_at FROM deleted_users ORDER BY user_id'),
      drops: this.db.prepare('SELECT root_id, since FROM pending_graph_drops ORDER BY since, root_id'),
    };
  }

  async scanUsers(after: string, limit: number): Promise<UserRecord[]> {
    this.check();
    return this.db.transaction(() => (this.ops.scanUsers.all(after, limit) as UserRow[]).map((r) => this.record(r) as UserRecord))();
  }

  async putUsers(users: readonly UserRecord[]): Promise<void> {
    this.check();
    const ops = this.ops;
    try {
      this.db.transaction(() => {
        for (const user of users) {
          ops.putUser.run(userRow(user));
          ops.dropIdentities.run(user.user_id);
          for (const id of user.identities) this.insertIdentity(user.user_id, id);
        }
      })();
    } catch (error) {
      if (isUnique(error)) throw identityError('IDENTITY_TAKEN');
      throw error;
    }
  }

  async oneTimeTokens(): Promise<OneTimeToken[]> {
    this.check();
    return this.ops.tokens.all() as OneTimeToken[];
  }

  async putOneTimeTokens(tokens: readonly OneTimeToken[]): Promise<void> {
    this.check();
    const put = this.ops.putToken;
    this.db.transaction(() => {
      for (const token of tokens) put.run({ ...token, used_at: token.used_at ?? null });
    })();
  }

  async deletedUsers(): Promise<DeletedUser[]> {
    this.check();
    return this.ops.deleted.all() as DeletedUser[];
  }

  async putDeletedUsers(rows: readonly DeletedUser[]): Promise<void> {
    this.check();
    this.db.transaction(() => {
      for (const r of rows) this.q.remember.run(r.user_id, r.deleted_at);
    })();
  }

  async graphDrops(): Promise<GraphDrop[]> {
    this.check();
    return this.ops.drops.all() as GraphDrop[];
  }

  async putGraphDrops(rows: readonly GraphDrop[]): Promise<void> {
    this.check();
    this.db.transaction(() => {
      for (const r of rows) this.q.pendDrop.run(r.root_id, r.since);
    })();
  }

  async apiKeys(): Promise<ApiKeyRecord[]> {
    this.check();
    return (this.keys.all.all() as ApiKeyRow[]).map(keyRecord);
  }

  async putApiKeys(keys: readonly ApiKeyRecord[]): Promise<void> {
    this.check();
    const upsert = this.keys.upsert;
    this.db.transaction(() => {
      for (const key of keys) upsert.run(keyRow(key));
    })();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
