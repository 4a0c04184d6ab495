/**
 * The users repository chosen by configuration (`[scale.database]
 * docdb_uri`, the URI the anchor store is chosen by: users follow the graph):
 * backends registered by URI scheme, as emailers are by name. SQLite
 * (`sqlite:`, a file path, or nothing), `memory:`, PostgreSQL and MongoDB are built in.
 */
import { BackendRegistry, type StoreUri } from '../anchor/index.ts';
import type { ActorRef } from '../../kernel/index.ts';
import { MemoryUsersRepository } from './memory-users.ts';
import { PgUsersRepository } from './pg-users.ts';
import { MongoUsersRepository } from './mongo-users.ts';
import { ForwardingUsersRepository, type UsersWriterMsg } from './users-writer.ts';
import { SqliteUsersRepository } from './sqlite-users.ts';
import type { UsersRepository } from './users-repository.ts';

export interface OpenUsersOptions {
  /** The SQLite file when the URI names none (`cli/paths.ts`: `.svc/data/users.db`, or `users_db_path`). */
  path?: string;
  /** Where a relative path in the URI resolves from (the project root; default the working directory). */
  baseDir?: string;
  /** SQLite in a worker thread: the process's one writer (`serveUsersWriter` on the main thread); reads stay on this thread. */
  processWriter?: ActorRef<UsersWriterMsg, unknown>;
  /** PostgreSQL: create the tables and migrate legacy users (default true; worker threads skip it, the main thread did it). */
  createSchema?: boolean;
}

export type UsersRepositoryFactory = (uri: StoreUri, options: OpenUsersOptions) => UsersRepository | Promise<UsersRepository>;

const registered = new BackendRegistry<UsersRepository, OpenUsersOptions>('users repository');

/**
 * Make a backend available for a URI scheme (lower case, without the colon);
 * a later registration of a scheme replaces the earlier one.
 *
 * @example
 * registerUsersRepository('postgres', (uri) => PostgresUsers.connect(uri.uri));
 */
export function registerUsersRepository(scheme: string, factory: UsersRepositoryFactory): void {
  registered.register(scheme, factory);
}

registerUsersRepository('sqlite', (uri, o) => {
  const path = uri.path ?? o.path;
  if (!path) throw new TypeError('openUsersRepository: a SQLite repository needs a file (in the URI or as options.path)');
  if (o.processWriter) return new ForwardingUsersRepository(SqliteUsersRepository.open(path, { readOnly: true }), o.processWriter);
  return SqliteUsersRepository.open(path);
});
registerUsersRepository('memory', () => new MemoryUsersRepository());
// Every thread has its own pool; the tables are made (and legacy users migrated) by the main thread, under a lock.
const postgres: UsersRepositoryFactory = (uri, o) => PgUsersRepository.connect(uri.uri, { createSchema: o.createSchema !== false });
registerUsersRepository('postgres', postgres);
registerUsersRepository('postgresql', postgres);
registerUsersRepository('mongodb', (uri, o) => MongoUsersRepository.connect(uri.uri, { migrateLegacy: o.createSchema !== false }));
registerUsersRepository('mongodb+srv', (uri, o) => MongoUsersRepository.connect(uri.uri, { migrateLegacy: o.createSchema !== false }));

/**
 * Open the users repository a URI names. An unknown scheme, or one whose
 * backend is not in this build, rejects with `SVC_ERR_STORE_BACKEND`.
 *
 * @example
 * const users = await openUsersRepository(config['scale.database'].docdb_uri, { path: usersPath, baseDir: projectRoot });
 */
export function openUsersRepository(uri: string | undefined, options: OpenUsersOptions = {}): Promise<UsersRepository> {
  return registered.open(uri, options);
}
