/**
 * The PostgreSQL backends (`postgres://`, `postgresql://`), on one pool per
 * thread: the graph store, the users repository and the documents of
 * `kvstore()`, with the schema lock and the serving lock of a shared
 * database. Importing this door registers them with their seams.
 */
import { registerAnchorStore, type AnchorStoreFactory } from '../../actors/graph/index.ts';
import { registerUsersRepository, type UsersRepositoryFactory } from '../../actors/identity/index.ts';
import { registerDocBackend } from '../../actors/data/index.ts';
import { PgStore } from './graph-store.ts';
import { PgUsersRepository } from './users.ts';
import { PgDocBackend } from './docdb.ts';

export { PgPool, withSchemaLock, redactUri, isUnreachable, takeServingLock } from './pool.ts';
export type { PgHealthEvents } from './pool.ts';
export { PgStore } from './graph-store.ts';
export type { PgStoreOptions } from './graph-store.ts';
export { PgUsersRepository } from './users.ts';
export { PgDocBackend, pgIndexNames } from './docdb.ts';
export type { PgDocOptions } from './docdb.ts';

// Every thread has its own pool; the tables are made by whoever opens first (under a lock), unless told they exist.
const graphs: AnchorStoreFactory = (uri, o) => PgStore.connect(uri.uri, { createSchema: o.createSchema !== false, maxConnections: o.maxConnections });
// The users' tables are made (and legacy users migrated) by the main thread, under a lock.
const users: UsersRepositoryFactory = (uri, o) => PgUsersRepository.connect(uri.uri, { createSchema: o.createSchema !== false });
for (const scheme of ['postgres', 'postgresql']) {
  registerAnchorStore(scheme, graphs);
  registerUsersRepository(scheme, users);
  registerDocBackend(scheme, (uri, o) => new PgDocBackend(uri.uri, o.dbName));
}
