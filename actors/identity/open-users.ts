/**
 * The users repository chosen by configuration (`[scale.database]
 * docdb_uri`, the URI the anchor store is chosen by: users follow the graph):
 * backends registered by URI scheme, as emailers are by name. This seam
 * imports no backend: SQLite, `memory:`, PostgreSQL and MongoDB register
 * themselves (`stores/`), and the runtime imports the built-ins once.
 */
import { BackendRegistry, type StoreUri } from '../graph/index.ts';
import type { ActorRef } from '../../kernel/index.ts';
import type { UsersWriterMsg } from './users-writer.ts';
import type { UsersRepository } from './users-repository.ts';

export interface OpenUsersOptions {
  /** The SQLite file when the URI names none (`runtime/paths.ts`: `.svc/data/users.db`, or `users_db_path`). */
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
