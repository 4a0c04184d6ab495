/**
 * One SQLite writer per process for the users, as for the graph
 * (`actors/graph/store-writer.ts`): the main thread holds the one writing
 * connection ({@link serveUsersWriter}); each worker thread reads through its
 * own read-only connection and hands every write over
 * ({@link ForwardingUsersRepository}). A write's atomicity (compare-and-set,
 * stamp and change together, uniqueness) is the writer's, unchanged.
 */
import { type ActorRef, type ActorSystem, fromReceive, replyLater } from '../../kernel/index.ts';
import { storeError } from '../graph/index.ts';
import type {
  ApiKeyRecord,
  ImmediateUserLookup,
  Identity,
  OneTimeToken,
  SsoUnlink,
  UserPatch,
  UserRecord,
  UsersPage,
  UsersPageOptions,
  UsersRepository,
} from './users-repository.ts';

/** The writer's name under `/user` on the main thread. */
export const USERS_WRITER_ACTOR = 'users-writer';

/** The methods that write: only these cross to the writer. */
const WRITES = [
  'create',
  'addIdentity',
  'setVerified',
  'update',
  'replacePasswordHash',
  'updateAndRevoke',
  'delete',
  'graphDropped',
  'putOneTimeToken',
  'voidOneTimeTokens',
  'takeOneTimeToken',
  'removeSsoIdentity',
  'putApiKey',
  'deleteApiKey',
] as const;
type WriteMethod = (typeof WRITES)[number];
const IS_WRITE = new Set<string>(WRITES);

export type UsersWriterMsg = { m: WriteMethod; a: unknown[] };

/**
 * Serve `users`' writes to the other threads of this process.
 *
 * @example
 * serveUsersWriter(pool.system, SqliteUsersRepository.open(usersPath)); // main thread, before the workers start
 */
export function serveUsersWriter(system: ActorSystem, users: UsersRepository): ActorRef<UsersWriterMsg, unknown> {
  return system.spawn(
    fromReceive((msg: UsersWriterMsg) => {
      if (!IS_WRITE.has(msg.m)) throw new TypeError(`${String(msg.m)} is not a write of the users repository`);
      const method = users[msg.m] as (...args: unknown[]) => Promise<unknown>;
      return replyLater(method.apply(users, msg.a));
    }, { capacity: 100_000 }),
    USERS_WRITER_ACTOR,
  );
}

/**
 * @example
 * const users = new ForwardingUsersRepository(SqliteUsersRepository.open(path, { readOnly: true }), system.refFromAddress({ node: 'main', path: `/user/${USERS_WRITER_ACTOR}` }));
 */
export class ForwardingUsersRepository implements UsersRepository, ImmediateUserLookup {
  readonly kind: string;
  private closed = false;

  constructor(
    private readonly reader: UsersRepository & ImmediateUserLookup,
    private readonly writer: ActorRef<UsersWriterMsg, unknown>,
    private readonly timeoutMs = 60_000,
  ) {
    this.kind = reader.kind;
  }

  private write<R>(m: WriteMethod, ...a: unknown[]): Promise<R> {
    if (this.closed) return Promise.reject(storeError('SVC_ERR_STORE', 'the users repository is closed'));
    return this.writer.ask({ m, a }, this.timeoutMs) as Promise<R>;
  }

  create(user: UserRecord): Promise<void> {
    return this.write('create', user);
  }
  byId(userId: string): Promise<UserRecord | undefined> {
    return this.reader.byId(userId);
  }
  byIdentity(normalized: string): Promise<UserRecord | undefined> {
    return this.reader.byIdentity(normalized);
  }
  exists(userId: string): Promise<boolean> {
    return this.reader.exists(userId);
  }
  existsNow(userId: string): boolean {
    return this.reader.existsNow(userId);
  }
  wasDeleted(userId: string): Promise<boolean> {
    return this.reader.wasDeleted(userId);
  }
  addIdentity(userId: string, identity: Identity): Promise<void> {
    return this.write('addIdentity', userId, identity);
  }
  setVerified(userId: string, normalized: string): Promise<void> {
    return this.write('setVerified', userId, normalized);
  }
  update(userId: string, patch: UserPatch): Promise<void> {
    return this.write('update', userId, patch);
  }
  replacePasswordHash(userId: string, was: string, hash: string): Promise<boolean> {
    return this.write('replacePasswordHash', userId, was, hash);
  }
  updateAndRevoke(userId: string, patch?: UserPatch): Promise<number | undefined> {
    return patch === undefined ? this.write('updateAndRevoke', userId) : this.write('updateAndRevoke', userId, patch);
  }
  delete(userId: string, at?: number): Promise<number> {
    return at === undefined ? this.write('delete', userId) : this.write('delete', userId, at);
  }
  revocationsSince(since: number): Promise<[userId: string, mark: number][]> {
    return this.reader.revocationsSince(since);
  }
  pendingGraphDrops(): Promise<string[]> {
    return this.reader.pendingGraphDrops();
  }
  graphDropped(rootId: string): Promise<void> {
    return this.write('graphDropped', rootId);
  }
  count(): Promise<number> {
    return this.reader.count();
  }
  list(options: UsersPageOptions): Promise<UsersPage> {
    return this.reader.list(options);
  }
  putOneTimeToken(token: Omit<OneTimeToken, 'used_at'>): Promise<void> {
    return this.write('putOneTimeToken', token);
  }
  voidOneTimeTokens(userId: string, kind: OneTimeToken['kind']): Promise<void> {
    return this.write('voidOneTimeTokens', userId, kind);
  }
  peekOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    return this.reader.peekOneTimeToken(hash, kind);
  }
  takeOneTimeToken(hash: string, kind: OneTimeToken['kind']): Promise<OneTimeToken | undefined> {
    return this.write('takeOneTimeToken', hash, kind);
  }
  bySso(provider: string, externalId: string): Promise<UserRecord | undefined> {
    return this.reader.bySso(provider, externalId);
  }
  removeSsoIdentity(userId: string, provider: string): Promise<SsoUnlink> {
    return this.write('removeSsoIdentity', userId, provider);
  }
  putApiKey(key: ApiKeyRecord): Promise<void> {
    return this.write('putApiKey', key);
  }
  apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return this.reader.apiKeyByHash(keyHash);
  }
  apiKeysOf(userId: string): Promise<ApiKeyRecord[]> {
    return this.reader.apiKeysOf(userId);
  }
  deleteApiKey(userId: string, apiKeyId: string): Promise<boolean> {
    return this.write('deleteApiKey', userId, apiKeyId);
  }
  /** Closes the reader; the writer belongs to the main thread. */
  close(): Promise<void> {
    this.closed = true;
    return this.reader.close();
  }
}
