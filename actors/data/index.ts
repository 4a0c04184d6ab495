/**
 * Data for app code (README *Files, documents and locks*): `store()` files on disk or in an object store,
 * `kvstore()` documents and keys, and the locks made of them — bound to the
 * runtime of the thread they run in. None of it is rolled back with a walker
 * run that fails.
 *
 * This room owns the seams of that data and what every backend shares: the
 * document and kv contracts (`DocBackend`, `KvBackend`) with the one checker
 * of filters, updates and values (`query.ts`), the `Storage` contract with its
 * path, metadata and upload-source checks. Backends register themselves
 * (`registerDocBackend`, `registerKvBackend` by URI scheme, `registerStorage`
 * by `[storage] type`) from `stores/`; this room imports none of them.
 */
import { closeKvstores } from './kvstore.ts';
import { closeStorages } from './store.ts';

export { bindData, dataBinding, setDataFallback } from './binding.ts';
export type { DataBinding } from './binding.ts';
export { store, StorageFactory, closeStorages } from './store.ts';
export { kvstore, DocDbStore, KvStore, closeKvstores } from './kvstore.ts';
export type { DbType, KvstoreOptions, FindNodesOptions } from './kvstore.ts';
export { mutex, debounce } from './locks.ts';
export type { Lock, LockKv, MutexOptions, RetryOptions } from './locks.ts';

// The kvstore seam: contracts, the shared checker, backends by scheme.
export { registerDocBackend, registerKvBackend } from './backends.ts';
export type { DocBackendOptions, DocBackendFactory, KvBackendOptions, KvBackendFactory } from './backends.ts';
export { KVSTORE_ERRORS, kvstoreError } from './kvstore-errors.ts';
export type { KvstoreErrorCode } from './kvstore-errors.ts';
export type { DocBackend, Document, Filter, FindOptions, Update, KvBackend, KvValue } from './kvstore-types.ts';
export { matches, matchClause, validateFilter, validateUpdate, validateFind, applyUpdate, compareStrings, compareDocuments, compileFilter, checkBatch, checkDocument, checkValue, isPlainObject, newId, parsePath, MAX_FILTER_TERMS } from './query.ts';
export type { JsonValue, CompareOp, Clause, FieldClause, CheckedUpdate, CheckedFind } from './query.ts';

// The storage seam: the contract, its checks, backends by type.
export type { Storage, StorageConfig, StorageType, FileMetadata, UploadedFile, UploadSource } from './storage-types.ts';
export { STORAGE_ERRORS, storageError, fsErrorCode } from './storage-errors.ts';
export type { StorageErrorCode } from './storage-errors.ts';
export { safeRelative, safePrefix, assertInside, MAX_PATH_BYTES, MAX_NAME_BYTES } from './paths.ts';
export { checkExpiry, checkMetadata, MAX_EXPIRES } from './storage-checks.ts';
export { openSource, guarded, isSourceFailure, isUploadedFile } from './upload-source.ts';
export type { OpenedSource } from './upload-source.ts';
export { createStorage, checkStorageConfig, registerStorage, STORAGE_DEFAULTS } from './storage-backends.ts';
export type { StorageBackend } from './storage-backends.ts';

/** Close what this thread's `store()` and `kvstore()` handles hold (the runtime, when it stops). */
export async function closeData(): Promise<void> {
  await Promise.all([closeStorages(), closeKvstores()]);
}
