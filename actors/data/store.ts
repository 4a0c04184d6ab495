/**
 * `store()` and `StorageFactory` (README *Files, documents and locks*): the
 * app's files, on the local disk or in an object store, configured by the
 * original product's keys. Precedence, per key: an argument to `store()`, then the
 * environment (`SVC_STORAGE_*`), then `[scale.storage]`, then `[storage]` in
 * `svc.toml`, then the default (`./storage` relative to the project folder).
 *
 * A storage holds connections (the S3 client's sockets): `store()` hands out
 * one instance per settings and thread, kept until the runtime stops.
 * A file written in a walker run is not rolled back if the run fails.
 */
import { createStorage, STORAGE_DEFAULTS } from './storage-backends.ts';
import { storageError } from './storage-errors.ts';
import type { Storage, StorageConfig, StorageType } from './storage-types.ts';
import { dataBinding } from './binding.ts';

const cache = new Map<string, Storage>();

function cached(config: StorageConfig, projectRoot: string): Storage {
  const key = JSON.stringify([projectRoot, config]);
  let storage = cache.get(key);
  if (storage === undefined) cache.set(key, (storage = createStorage(config, projectRoot)));
  return storage;
}

/**
 * The configured storage; `basePath` (local: a folder, relative to the
 * project folder; object: a key prefix under `prefix`) and `createDirs`
 * override the configuration.
 *
 * @example
 * const files = store();
 * await files.upload(this.file, `avatars/${this.username}.png`);
 * for await (const path of files.listFiles('avatars/')) this.report(path);
 */
export function store(basePath?: string, createDirs?: boolean): Storage {
  if (basePath !== undefined && (typeof basePath !== 'string' || basePath === '')) throw storageError('STORAGE_CONFIG', 'store(basePath): a non-empty path');
  if (createDirs !== undefined && typeof createDirs !== 'boolean') throw storageError('STORAGE_CONFIG', 'store(basePath, createDirs): createDirs is true or false');
  const bound = dataBinding();
  const config = { ...bound.storage };
  if (basePath !== undefined) config.base_path = basePath;
  if (createDirs !== undefined) config.create_dirs = createDirs;
  return cached(config, bound.projectRoot);
}

/**
 * Storages by type and settings (the original product's `StorageFactory`): `create` makes
 * a new one (the caller closes it) from the configured settings with `config`
 * over them; `getDefault` is `store()`.
 *
 * @example
 * const archive = StorageFactory.create('object', { bucket: 'archive', endpoint_url: 'http://127.0.0.1:9000' });
 */
export const StorageFactory = {
  create(type: StorageType, config: Partial<StorageConfig> = {}): Storage {
    if (type !== 'local' && type !== 'object') throw storageError('STORAGE_CONFIG', `a storage type is local or object, not ${JSON.stringify(type)}`);
    const bound = dataBinding();
    return createStorage({ ...STORAGE_DEFAULTS, ...bound.storage, ...config, type }, bound.projectRoot);
  },
  getDefault(): Storage {
    return store();
  },
};

/** Close every storage `store()` handed out in this thread (the runtime, when it stops). */
export async function closeStorages(): Promise<void> {
  const all = [...cache.values()];
  cache.clear();
  await Promise.allSettled(all.map((s) => s.close()));
}
