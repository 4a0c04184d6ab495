/**
 * The MongoDB backends (`mongodb://`, `mongodb+srv://`; a replica set, for
 * multi-document transactions): the graph store, the users repository and
 * the documents of `kvstore()`. Importing this door registers them with
 * their seams.
 */
import { registerAnchorStore } from '../../actors/graph/index.ts';
import { registerUsersRepository } from '../../actors/identity/index.ts';
import { registerDocBackend } from '../../actors/data/index.ts';
import { MongoStore } from './graph-store.ts';
import { MongoUsersRepository } from './users.ts';
import { MongoDocBackend } from './docdb.ts';

export { MongoStore } from './graph-store.ts';
export { connectMongo, ensureCollections, mongoFailure, mongoDatabaseOf } from './connection.ts';
export type { MongoStoreOptions } from './graph-store.ts';
export { MongoUsersRepository } from './users.ts';
export type { MongoUsersOptions } from './users.ts';
export { MongoDocBackend } from './docdb.ts';
export type { MongoDocOptions } from './docdb.ts';

for (const scheme of ['mongodb', 'mongodb+srv']) {
  registerAnchorStore(scheme, (uri) => MongoStore.connect(uri.uri));
  registerUsersRepository(scheme, (uri, o) => MongoUsersRepository.connect(uri.uri, { migrateLegacy: o.createSchema !== false }));
  registerDocBackend(scheme, (uri, o) => new MongoDocBackend(uri.uri, o.dbName));
}
