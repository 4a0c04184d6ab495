/**
 * Data for app code (README *Files, documents and locks*): `store()` files on disk or in an object
 * store, `kvstore()` documents and keys, and the locks made of them — bound to
 * the runtime of the thread they run in. None of it is rolled back with a
 * walker run that fails.
 */
import { closeKvstores } from './kvstore.ts';
import { closeStorages } from './store.ts';

export { bindData, dataBinding, setDataFallback } from './binding.ts';
export type { DataBinding } from './binding.ts';
export { store, StorageFactory, closeStorages } from './store.ts';
export { kvstore, DocDbStore, KvStore, closeKvstores } from './kvstore.ts';
export type { DbType, KvstoreOptions, FindNodesOptions } from './kvstore.ts';
export { mutex, debounce } from '../../cluster/index.ts';
export type { Lock, MutexOptions, RetryOptions } from '../../cluster/index.ts';

/** Close what this thread's `store()` and `kvstore()` handles hold (the runtime, when it stops). */
export async function closeData(): Promise<void> {
  await Promise.all([closeStorages(), closeKvstores()]);
}
