/**
 * The users repository on MongoDB (`docdb_uri = "mongodb://…"`), in the
 * anchor store's database (`svc_db`, or the one the URI names): users follow
 * the graph, so a user registered through one pod logs in through another.
 *
 * - `users`: one document per user, `_id` the user id, identities embedded.
 * - `identities`: one document per key a user holds alone — `v:<value>` for
 *   a username or email (one namespace for both), `sso:[provider, id]`,
 *   `t:<user>:<type>` (one of a type per user) and `p:[user, provider]` (one
 *   SSO identity per provider per user) — written in the same
 *   transaction as the user. Unique `_id`s are how uniqueness holds when two
 *   pods register one name at once: one transaction wins, the other gets a
 *   duplicate key (`IDENTITY_TAKEN`).
 * - `deleted_users`, `pending_graph_drops`, `one_time_tokens` (`_id` the
 *   token's hash), `webhook_api_keys` (`_id` the key id; its hash unique).
 *
 * Writes over several documents are transactions, so the server must be a
 * replica set (one member will do) or a sharded cluster, as for the anchor
 * store: `connect` refuses a standalone server with `SVC_ERR_STORE_BACKEND`.
 *
 * Users of the Python original — flat documents `{username, email,
 * password_hash, root_id, role, created_at}` in `users` — are migrated at
 * connect ({@link legacyUserRecords}): each in a transaction that deletes the
 * flat document and writes ours, so a second run, or a second pod starting
 * at once, finds nothing left to do.
 */
import type { ClientSession, Collection, Db, Document, MongoClient, TransactionOptions } from 'mongodb';
import { SvcError } from '../../kernel/index.ts';
import { storeError } from '../../actors/graph/index.ts';
import { connectMongo, ensureCollections, mongoFailure } from './connection.ts';
import { mongo } from './driver.ts';
import { identityError, notFound, type LegacyUser, legacyUserId, legacyUserRecords, type ApiKeyRecord, type DeletedUser, type GraphDrop, type Identity, normalize, type OneTimeToken, PATCHABLE, pageBounds, type SsoUnlink, type UserPatch, type UserRecord, type UsersPage, type UsersPageOptions, type UsersRepository } from '../../actors/identity/index.ts';

export interface MongoUsersOptions {
  /** The database (default: the one the URI names, else `svc_db`). */
  database?: string;
  /** Migrate users of the Python original at connect (default true). */
  migrateLegacy?: boolean;
}

interface UserDoc extends Omit<UserRecord, 'user_id'> {
  _id: string;
  user_id: string;
  /** One-time tokens issued: written by each, so that a deletion at the same time conflicts instead of leaving a token of no user. */
  one_time_tokens?: number;
  /** API keys issued: written by each, for the same reason. */
  api_keys?: number;
}

interface ApiKeyDoc extends Omit<ApiKeyRecord, 'api_key_id'> {
  _id: string;
}

interface KeyDoc {
  _id: string;
  user_id: string;
}

interface TokenDoc extends Omit<OneTimeToken, 'token_hash'> {
  _id: string;
}

function isDuplicate(error: unknown): boolean {
  return error instanceof mongo().MongoError && error.code === 11000;
}

/** The keys an identity holds alone (see the file's comment). */
function keysOf(userId: string, identities: readonly Identity[]): KeyDoc[] {
  return identities.flatMap((id) =>
    id.type === 'sso' ? [ssoKey(id.provider ?? '', id.external_id ?? ''), `p:${JSON.stringify([userId, id.provider ?? ''])}`] : [`v:${id.value_normalized}`, `t:${userId}:${id.type}`],
  ).map((_id) => ({ _id, user_id: userId }));
}

function ssoKey(provider: string, externalId: string): string {
  return `sso:${JSON.stringify([provider, externalId])}`;
}

function toKey(doc: ApiKeyDoc): ApiKeyRecord {
  return {
    api_key_id: doc._id,
    user_id: doc.user_id,
    name: doc.name,
    key_hash: doc.key_hash,
    walkers: doc.walkers ?? null,
    created_at: doc.created_at,
    expires_at: doc.expires_at ?? null,
  };
}

function keyDoc(key: ApiKeyRecord): ApiKeyDoc {
  return { _id: key.api_key_id, user_id: key.user_id, name: key.name, key_hash: key.key_hash, walkers: key.walkers === null ? null : [...key.walkers], created_at: key.created_at, expires_at: key.expires_at };
}

/** An identity as stored: optional fields only when set (as SQLite gives them back). */
function stored(id: Identity): Identity {
  const out: Identity = { type: id.type, value_raw: id.value_raw, value_normalized: id.value_normalized, verified: id.verified, is_recovery: id.is_recovery };
  if (id.provider) out.provider = id.provider;
  if (id.external_id) out.external_id = id.external_id;
  if (id.linked_at) out.linked_at = id.linked_at;
  return out;
}

function toDoc(user: UserRecord): UserDoc {
  return {
    _id: user.user_id,
    user_id: user.user_id,
    status: user.status,
    role: user.role,
    root_id: user.root_id,
    profile: user.profile,
    created_at: user.created_at,
    updated_at: user.updated_at,
    must_change_password: user.must_change_password,
    tokens_valid_after: user.tokens_valid_after,
    protected: user.protected,
    identities: user.identities.map(stored),
    password_hash: user.password_hash,
  };
}

function toRecord(doc: UserDoc): UserRecord {
  return {
    user_id: doc._id,
    status: doc.status,
    role: doc.role,
    root_id: doc.root_id,
    profile: doc.profile ?? {},
    created_at: doc.created_at,
    updated_at: doc.updated_at,
    must_change_password: doc.must_change_password === true,
    tokens_valid_after: doc.tokens_valid_after ?? null,
    protected: doc.protected === true,
    identities: (doc.identities ?? []).map(stored),
    password_hash: doc.password_hash ?? null,
  };
}

function toToken(doc: TokenDoc): OneTimeToken {
  return { token_hash: doc._id, user_id: doc.user_id, kind: doc.kind, identity: doc.identity, expires_at: doc.expires_at, used_at: doc.used_at ?? null };
}

/** Text matched as itself in a regular expression. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The flat documents of the Python original: no `user_id`, no `identities`. */
const LEGACY = { user_id: { $exists: false }, identities: { $exists: false } };

/**
 * The MongoDB users repository; needs a replica set or a sharded cluster (see the file's comment).
 *
 * @example
 * const users = await MongoUsersRepository.connect('mongodb://db-0,db-1,db-2/svc_db?replicaSet=rs0');
 * await users.byIdentity(normalize('Alice'));
 */
export class MongoUsersRepository implements UsersRepository {
  readonly kind = 'mongo';
  /** How many legacy users the connect migrated (0 when there were none, or they were migrated before). */
  migrated = 0;
  /** The ids of migrated legacy users disabled because an identity of theirs was taken (by an older user). */
  migratedDisabled: string[] = [];
  private readonly users: Collection<UserDoc>;
  private readonly keys: Collection<KeyDoc>;
  private readonly deleted: Collection<{ _id: string; deleted_at: number }>;
  private readonly drops: Collection<{ _id: string; since: number }>;
  private readonly tokens: Collection<TokenDoc>;
  private readonly apiKeyDocs: Collection<ApiKeyDoc>;
  private closed = false;

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {
    this.users = db.collection('users');
    this.keys = db.collection('identities');
    this.deleted = db.collection('deleted_users');
    this.drops = db.collection('pending_graph_drops');
    this.tokens = db.collection('one_time_tokens');
    this.apiKeyDocs = db.collection('webhook_api_keys');
  }

  /**
   * Connect, check the server takes transactions, create the collections and
   * indexes that are missing, and migrate legacy users (unless told not to).
   * The URI may carry any driver option (`tls=true`, `replicaSet=…`,
   * credentials); it never appears in a message.
   */
  static async connect(uri: string, options: MongoUsersOptions = {}): Promise<MongoUsersRepository> {
    const { client, db } = await connectMongo(uri, options.database, 'users repository');
    const repo = new MongoUsersRepository(client, db);
    try {
      await repo.prepare();
      if (options.migrateLegacy !== false) await repo.migrateLegacy();
    } catch (error) {
      await client.close().catch(() => undefined);
      throw mongoFailure(error, 'preparing the users collections');
    }
    return repo;
  }

  private async prepare(): Promise<void> {
    await ensureCollections(this.db, ['users', 'identities', 'deleted_users', 'pending_graph_drops', 'one_time_tokens', 'webhook_api_keys']);
    await this.users.createIndexes([
      { key: { 'identities.value_normalized': 1 }, name: 'identity_value' },
      { key: { created_at: -1, _id: 1 }, name: 'newest' },
      { key: { tokens_valid_after: 1 }, name: 'stamp' },
      { key: { 'identities.provider': 1, 'identities.external_id': 1 }, name: 'identity_sso' },
    ]);
    await this.keys.createIndex({ user_id: 1 }, { name: 'user' });
    await this.deleted.createIndex({ deleted_at: 1 }, { name: 'deleted_at' });
    await this.drops.createIndex({ since: 1 }, { name: 'since' });
    await this.tokens.createIndex({ user_id: 1, kind: 1 }, { name: 'user_kind' });
    await this.apiKeyDocs.createIndexes([
      { key: { key_hash: 1 }, name: 'key_hash', unique: true },
      { key: { user_id: 1, created_at: 1, _id: 1 }, name: 'user_created' },
    ]);
  }

  /** Legacy users, oldest first, each moved in a transaction of its own (see the file's comment). */
  private async migrateLegacy(): Promise<void> {
    const legacy = this.db.collection<Document>('users');
    const rows = await legacy.find(LEGACY).toArray();
    if (rows.length === 0) return;
    const values = rows.flatMap((r) => [r.username, r.email].filter((v): v is string => typeof v === 'string').map((v) => `v:${normalize(v)}`));
    const taken = new Set((await this.keys.find({ _id: { $in: values } }).toArray()).map((k) => k._id.slice(2)));
    const { users } = legacyUserRecords(rows as LegacyUser[], taken);
    const flatId = new Map(rows.map((r) => [legacyUserId(String(r._id)), r._id]));
    for (const user of users) {
      let moved: UserRecord | undefined;
      try {
        moved = await this.transaction(async (session) => {
          // Gone: another pod moved it meanwhile (a deletion is a write: two pods at once conflict, and one runs again and finds it gone).
          if ((await legacy.deleteOne({ _id: flatId.get(user.user_id) }, { session })).deletedCount === 0) return undefined;
          // Taken since the reads above (a registration meanwhile): migrated disabled without it, as any later duplicate.
          const held = new Set((await this.keys.find({ _id: { $in: keysOf(user.user_id, user.identities).map((k) => k._id) } }, { session }).toArray()).map((k) => k._id));
          const identities = user.identities.filter((i) => keysOf(user.user_id, [i]).every((k) => !held.has(k._id)));
          const record: UserRecord = identities.length < user.identities.length ? { ...user, status: 'disabled', identities } : user;
          await this.users.insertOne(toDoc(record), { session });
          const keys = keysOf(record.user_id, record.identities);
          if (keys.length > 0) await this.keys.insertMany(keys, { session, ordered: true });
          return record;
        });
      } catch (error) {
        // Our user of that id exists already (a flat document written again by the Python original): left as it is.
        if (!isDuplicate(error)) throw error;
      }
      if (!moved) continue;
      this.migrated++;
      if (moved.status === 'disabled') this.migratedDisabled.push(moved.user_id);
    }
  }

  private check(): void {
    if (this.closed) throw storeError('SVC_ERR_STORE', 'the users repository is closed');
  }

  /** Run a driver call, its failures as store errors (a duplicate key as `duplicate()` when given). */
  private async run<T>(what: string, fn: () => Promise<T>, duplicate?: () => SvcError): Promise<T> {
    this.check();
    try {
      return await fn();
    } catch (error) {
      if (duplicate && isDuplicate(error)) throw duplicate();
      throw mongoFailure(error, what);
    }
  }

  /** One transaction on the primary (retried by the driver on transient errors: `fn` may run more than once). */
  private transaction<T>(fn: (session: ClientSession) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.client.withSession((session) => session.withTransaction(() => fn(session), { readPreference: 'primary', ...options }));
  }

  async create(user: UserRecord): Promise<void> {
    await this.run(
      'create',
      () =>
        this.transaction(async (session) => {
          await this.users.insertOne(toDoc(user), { session });
          const keys = keysOf(user.user_id, user.identities);
          if (keys.length > 0) await this.keys.insertMany(keys, { session, ordered: true });
        }),
      () => identityError('IDENTITY_TAKEN'),
    );
  }

  async byId(userId: string): Promise<UserRecord | undefined> {
    return this.run('byId', async () => {
      const doc = await this.users.findOne({ _id: userId });
      return doc ? toRecord(doc) : undefined;
    });
  }

  async byIdentity(normalized: string): Promise<UserRecord | undefined> {
    return this.run('byIdentity', async () => {
      const doc = await this.users.findOne({ identities: { $elemMatch: { value_normalized: normalized, type: { $ne: 'sso' } } } });
      return doc ? toRecord(doc) : undefined;
    });
  }

  async exists(userId: string): Promise<boolean> {
    return this.run('exists', async () => (await this.users.findOne({ _id: userId }, { projection: { _id: 1 } })) !== null);
  }

  async wasDeleted(userId: string): Promise<boolean> {
    return this.run('wasDeleted', async () => (await this.deleted.findOne({ _id: userId }, { projection: { _id: 1 } })) !== null);
  }

  async addIdentity(userId: string, identity: Identity): Promise<void> {
    await this.run(
      'addIdentity',
      () =>
        this.transaction(async (session) => {
          const added = await this.users.updateOne({ _id: userId }, { $push: { identities: stored(identity) } }, { session });
          // No such user: refused as SQLite's foreign key refuses it.
          if (added.matchedCount === 0) throw identityError('IDENTITY_TAKEN');
          await this.keys.insertMany(keysOf(userId, [identity]), { session, ordered: true });
        }),
      () => identityError('IDENTITY_TAKEN'),
    );
  }

  async setVerified(userId: string, normalized: string): Promise<void> {
    await this.run('setVerified', () =>
      this.users.updateOne({ _id: userId }, { $set: { 'identities.$[i].verified': true } }, { arrayFilters: [{ 'i.value_normalized': normalized }] }),
    );
  }

  /** The `$set` of a patch: the fields it gives, and `updated_at`. */
  private static setOf(patch: UserPatch): Partial<UserDoc> {
    const set: Record<string, unknown> = { updated_at: new Date().toISOString() };
    for (const k of PATCHABLE) if (patch[k] !== undefined) set[k] = patch[k];
    return set as Partial<UserDoc>;
  }

  async update(userId: string, patch: UserPatch): Promise<void> {
    await this.run('update', () => this.users.updateOne({ _id: userId }, { $set: MongoUsersRepository.setOf(patch) }));
  }

  async replacePasswordHash(userId: string, was: string, hash: string): Promise<boolean> {
    return this.run('replacePasswordHash', async () => {
      // Only over the hash it replaces: a change that landed meanwhile is not undone.
      const r = await this.users.updateOne({ _id: userId, password_hash: was }, { $set: { password_hash: hash, updated_at: new Date().toISOString() } });
      return r.matchedCount === 1;
    });
  }

  async updateAndRevoke(userId: string, patch: UserPatch = {}): Promise<number | undefined> {
    return this.run('updateAndRevoke', async () => {
      // One update of one document (atomic): the patch, then the stamp moved strictly forward from what it now holds.
      const set = Object.fromEntries(Object.entries(MongoUsersRepository.setOf(patch)).map(([k, v]) => [k, { $literal: v }]));
      const doc = await this.users.findOneAndUpdate(
        { _id: userId },
        [{ $set: set }, { $set: { tokens_valid_after: { $max: [Date.now(), { $add: [{ $ifNull: ['$tokens_valid_after', 0] }, 1] }] } } }],
        { returnDocument: 'after', projection: { tokens_valid_after: 1 } },
      );
      return doc?.tokens_valid_after ?? undefined;
    });
  }

  async delete(userId: string, at = Date.now()): Promise<number> {
    return this.run('delete', () =>
      this.transaction(async (session) => {
        const user = await this.users.findOneAndDelete({ _id: userId }, { session });
        const mark = Math.max(at, (user?.tokens_valid_after ?? 0) + 1);
        await this.keys.deleteMany({ user_id: userId }, { session });
        await this.tokens.deleteMany({ user_id: userId }, { session });
        await this.apiKeyDocs.deleteMany({ user_id: userId }, { session });
        await this.deleted.replaceOne({ _id: userId }, { deleted_at: mark }, { upsert: true, session });
        if (user) await this.drops.replaceOne({ _id: user.root_id }, { since: at }, { upsert: true, session });
        return mark;
      }),
    );
  }

  async revocationsSince(since: number): Promise<[string, number][]> {
    return this.run('revocationsSince', async () => {
      const stamps = await this.users.find({ tokens_valid_after: { $gt: since } }, { projection: { tokens_valid_after: 1 } }).toArray();
      const deletions = await this.deleted.find({ deleted_at: { $gt: since } }).toArray();
      return [...stamps.map((u): [string, number] => [u._id, u.tokens_valid_after as number]), ...deletions.map((d): [string, number] => [d._id, d.deleted_at])];
    });
  }

  async pendingGraphDrops(): Promise<string[]> {
    return this.run('pendingGraphDrops', async () => (await this.drops.find().sort({ since: 1 }).toArray()).map((d) => d._id));
  }

  async graphDropped(rootId: string): Promise<void> {
    await this.run('graphDropped', () => this.drops.deleteOne({ _id: rootId }));
  }

  async count(): Promise<number> {
    return this.run('count', () => this.users.countDocuments());
  }

  async list(options: UsersPageOptions): Promise<UsersPage> {
    const { limit, offset } = pageBounds(options);
    const part = options.search ? normalize(options.search) : '';
    const filter = part ? { 'identities.value_normalized': { $regex: literal(part) } } : {};
    // One snapshot: the page and its total agree.
    return this.run('list', () =>
      this.transaction(
        async (session) => {
          const total = await this.users.countDocuments(filter, { session });
          const docs = await this.users.find(filter, { session }).sort({ created_at: -1, _id: 1 }).skip(offset).limit(limit).toArray();
          return { users: docs.map(toRecord), total };
        },
        { readConcern: { level: 'snapshot' } },
      ),
    );
  }

  async putOneTimeToken(token: Omit<OneTimeToken, 'used_at'>): Promise<void> {
    const refused = () => storeError('SVC_ERR_STORE', 'that one-time token cannot be kept (its hash is used, or its user is gone)');
    await this.run(
      'putOneTimeToken',
      () =>
        this.transaction(async (session) => {
          // A write to the user, not a read: a deletion at the same time conflicts with this transaction.
          const owner = await this.users.updateOne({ _id: token.user_id }, { $inc: { one_time_tokens: 1 } }, { session });
          if (owner.matchedCount === 0) throw refused();
          await this.tokens.insertOne({ _id: token.token_hash, user_id: token.user_id, kind: token.kind, identity: token.identity, expires_at: token.expires_at, used_at: null }, { session });
        }),
      refused,
    );
  }

  async voidOneTimeTokens(userId: string, kind: OneTimeToken['kind']): Promise<void> {
    await this.run('voidOneTimeTokens', () => this.tokens.updateMany({ user_id: userId, kind, used_at: null }, { $set: { used_at: Date.now() } }));
  }

  async peekOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    return this.run('peekOneTimeToken', async () => {
      const doc = await this.tokens.findOne({ _id: hash, kind, used_at: null, expires_at: { $gt: Date.now() } });
      return doc ? toToken(doc) : undefined;
    });
  }

  async takeOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    return this.run('takeOneTimeToken', async () => {
      const now = Date.now();
      // One conditional update of one document: once only, however many ask at once.
      const doc = await this.tokens.findOneAndUpdate({ _id: hash, kind, used_at: null, expires_at: { $gt: now } }, { $set: { used_at: now } }, { returnDocument: 'after' });
      return doc ? toToken(doc) : undefined;
    });
  }

  async bySso(provider: string, externalId: string): Promise<UserRecord | undefined> {
    return this.run('bySso', async () => {
      const doc = await this.users.findOne({ identities: { $elemMatch: { type: 'sso', provider, external_id: externalId } } });
      return doc ? toRecord(doc) : undefined;
    });
  }

  async removeSsoIdentity(userId: string, provider: string): Promise<SsoUnlink> {
    return this.run('removeSsoIdentity', () =>
      this.transaction(async (session): Promise<SsoUnlink> => {
        const doc = await this.users.findOne({ _id: userId }, { session });
        const ssos = (doc?.identities ?? []).filter((i) => i.type === 'sso');
        const gone = ssos.filter((i) => i.provider === provider);
        if (!doc || gone.length === 0) return 'absent';
        if ((doc.password_hash ?? null) === null && ssos.every((i) => i.provider === provider)) return 'last';
        // A write to the user's document: two removals (or a password removal) at once conflict, and the
        // one run again reads what the other left. The filter holds what was read, in any case.
        const pulled = await this.users.updateOne(
          { _id: userId, password_hash: doc.password_hash ?? null, identities: { $elemMatch: { type: 'sso', provider } } },
          { $pull: { identities: { type: 'sso', provider } } },
          { session },
        );
        if (pulled.modifiedCount !== 1) throw storeError('SVC_ERR_STORE_UNAVAILABLE', 'the user changed while a sign-in was being removed; retry');
        await this.keys.deleteMany({ _id: { $in: keysOf(userId, gone).map((k) => k._id) } }, { session });
        return 'removed';
      }),
    );
  }

  async putApiKey(key: ApiKeyRecord): Promise<void> {
    await this.run(
      'putApiKey',
      () =>
        this.transaction(async (session) => {
          // A write to the user, not a read: a deletion at the same time conflicts with this transaction.
          const owner = await this.users.updateOne({ _id: key.user_id }, { $inc: { api_keys: 1 } }, { session });
          if (owner.matchedCount === 0) throw notFound('no such user');
          await this.apiKeyDocs.insertOne(keyDoc(key), { session });
        }),
      () => storeError('SVC_ERR_STORE', 'that API key cannot be kept (its hash or id is used)'),
    );
  }

  async apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return this.run('apiKeyByHash', async () => {
      const doc = await this.apiKeyDocs.findOne({ key_hash: keyHash });
      return doc ? toKey(doc) : undefined;
    });
  }

  async apiKeysOf(userId: string): Promise<ApiKeyRecord[]> {
    return this.run('apiKeysOf', async () => (await this.apiKeyDocs.find({ user_id: userId }).sort({ created_at: 1, _id: 1 }).toArray()).map(toKey));
  }

  async deleteApiKey(userId: string, apiKeyId: string): Promise<boolean> {
    return this.run('deleteApiKey', async () => (await this.apiKeyDocs.deleteOne({ _id: apiKeyId, user_id: userId })).deletedCount === 1);
  }

  async scanUsers(after: string, limit: number): Promise<UserRecord[]> {
    return this.run('scanUsers', async () => (await this.users.find({ _id: { $gt: after } }).sort({ _id: 1 }).limit(limit).toArray()).map(toRecord));
  }

  async putUsers(users: readonly UserRecord[]): Promise<void> {
    if (users.length === 0) return this.check();
    await this.run(
      'putUsers',
      () =>
        this.transaction(async (session) => {
          const ids = users.map((u) => u.user_id);
          await this.keys.deleteMany({ user_id: { $in: ids } }, { session });
          await this.users.bulkWrite(
            users.map((u) => ({ replaceOne: { filter: { _id: u.user_id }, replacement: toDoc(u), upsert: true } })),
            { session, ordered: true },
          );
          const keys = users.flatMap((u) => keysOf(u.user_id, u.identities));
          if (keys.length > 0) await this.keys.insertMany(keys, { session, ordered: true });
        }),
      () => identityError('IDENTITY_TAKEN'),
    );
  }

  async oneTimeTokens(): Promise<OneTimeToken[]> {
    return this.run('oneTimeTokens', async () => (await this.tokens.find().toArray()).map(toToken));
  }

  async putOneTimeTokens(tokens: readonly OneTimeToken[]): Promise<void> {
    if (tokens.length === 0) return this.check();
    await this.run('putOneTimeTokens', () =>
      this.tokens.bulkWrite(
        tokens.map((t) => ({
          replaceOne: { filter: { _id: t.token_hash }, replacement: { user_id: t.user_id, kind: t.kind, identity: t.identity, expires_at: t.expires_at, used_at: t.used_at }, upsert: true },
        })),
      ),
    );
  }

  async deletedUsers(): Promise<DeletedUser[]> {
    return this.run('deletedUsers', async () => (await this.deleted.find().toArray()).map((d) => ({ user_id: d._id, deleted_at: d.deleted_at })));
  }

  async putDeletedUsers(rows: readonly DeletedUser[]): Promise<void> {
    if (rows.length === 0) return this.check();
    await this.run('putDeletedUsers', () =>
      this.deleted.bulkWrite(rows.map((r) => ({ replaceOne: { filter: { _id: r.user_id }, replacement: { deleted_at: r.deleted_at }, upsert: true } }))),
    );
  }

  async graphDrops(): Promise<GraphDrop[]> {
    return this.run('graphDrops', async () => (await this.drops.find().sort({ since: 1 }).toArray()).map((d) => ({ root_id: d._id, since: d.since })));
  }

  async putGraphDrops(rows: readonly GraphDrop[]): Promise<void> {
    if (rows.length === 0) return this.check();
    await this.run('putGraphDrops', () =>
      this.drops.bulkWrite(rows.map((r) => ({ replaceOne: { filter: { _id: r.root_id }, replacement: { since: r.since }, upsert: true } }))),
    );
  }

  async apiKeys(): Promise<ApiKeyRecord[]> {
    return this.run('apiKeys', async () => (await this.apiKeyDocs.find().sort({ _id: 1 }).toArray()).map(toKey));
  }

  async putApiKeys(keys: readonly ApiKeyRecord[]): Promise<void> {
    if (keys.length === 0) return this.check();
    await this.run('putApiKeys', () =>
      this.apiKeyDocs.bulkWrite(keys.map((k) => ({ replaceOne: { filter: { _id: k.api_key_id }, replacement: keyDoc(k), upsert: true } }))),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }
}
