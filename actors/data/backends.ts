/**
 * The backends of `kvstore()`, by URI scheme: documents (`docdb`: the
 * embedded SQLite, `memory:`, PostgreSQL, MongoDB) and keys (`kv`: Redis).
 * This seam imports no backend: each registers itself (`stores/`), and the
 * runtime imports the built-ins once. A scheme nobody registered is
 * `NOT_IMPLEMENTED`, naming the schemes there are and never the URI.
 */
import { BackendRegistry, schemeWritten, type StoreUri } from '../graph/index.ts';
import { kvstoreError } from './kvstore-errors.ts';
import type { DocBackend, KvBackend } from './kvstore-types.ts';

export interface DocBackendOptions {
  /** The documents' database (the first argument of `kvstore()`). */
  dbName: string;
  /** A file-backed backend's file when the URI names none (the app's documents: `<data folder>/docdb.db`). */
  path: string;
  /** Where a relative path in the URI resolves from (the project root). */
  baseDir?: string;
}

export type DocBackendFactory = (uri: StoreUri, options: DocBackendOptions) => DocBackend;

export interface KvBackendOptions {
  /** The namespace of the keys (the first argument of `kvstore()`). */
  dbName: string;
  baseDir?: string;
}

export type KvBackendFactory = (uri: StoreUri, options: KvBackendOptions) => KvBackend;

const noBackend =
  (dbType: string) =>
  (uri: StoreUri, _what: string, known: readonly string[]): Error =>
    // The scheme, never the URI: it may hold a password.
    kvstoreError('NOT_IMPLEMENTED', `${dbType} has no backend for ${schemeWritten(uri)} (${known.map((s) => `${s}:`).join(', ') || 'none registered'})`);

const docdb = new BackendRegistry<DocBackend, DocBackendOptions>('docdb', noBackend('docdb'));
const kv = new BackendRegistry<KvBackend, KvBackendOptions>('kv', noBackend('kv'));

/**
 * Make a document backend available for a URI scheme (lower case, without the colon).
 *
 * @example
 * registerDocBackend('postgres', (uri, o) => new PgDocBackend(uri.uri, o.dbName));
 */
export function registerDocBackend(scheme: string, factory: DocBackendFactory): void {
  docdb.register(scheme, factory);
}

/**
 * Make a kv backend available for a URI scheme (lower case, without the colon).
 *
 * @example
 * registerKvBackend('redis', (uri, o) => openRedisKv(uri.uri, o.dbName));
 */
export function registerKvBackend(scheme: string, factory: KvBackendFactory): void {
  kv.register(scheme, factory);
}

/** The registered document backend `uri` names, parsed (throws `NOT_IMPLEMENTED` for a scheme nobody registered). */
export function docBackendFor(uri: string, baseDir?: string): { uri: StoreUri; open: DocBackendFactory } {
  const found = docdb.resolve(uri, baseDir);
  return { uri: found.uri, open: found.factory as DocBackendFactory };
}

/** The registered kv backend `uri` names (throws `NOT_IMPLEMENTED` for a scheme nobody registered). */
export function kvBackendFor(uri: string): { uri: StoreUri; open: (options: KvBackendOptions) => KvBackend } {
  const found = kv.resolve(uri);
  return { uri: found.uri, open: (options) => found.factory(found.uri, options) as KvBackend };
}
