/**
 * From configuration to a storage: `[storage]` (or `[scale.storage]`,
 * `SVC_STORAGE_*`) checked, then a `LocalStorage` on a folder of the project
 * or an `ObjectStorage` on a bucket. A configuration that cannot work is
 * `STORAGE_CONFIG` here, at boot, rather than at the first upload.
 */
import { resolve } from 'node:path';
import { storageError } from './errors.ts';
import { LocalStorage } from './local.ts';
import { ObjectStorage } from './lazy-object.ts';
import type { Storage, StorageConfig } from './types.ts';

/** The original product's defaults: `store(base_path='./storage', create_dirs=True)` on the local disk. */
export const STORAGE_DEFAULTS: StorageConfig = Object.freeze({
  type: 'local',
  base_path: './storage',
  create_dirs: true,
  bucket: '',
  region: 'us-east-1',
  prefix: '',
  endpoint_url: '',
  public_read: false,
  access_key_id: '',
  secret_access_key: '',
});

/**
 * `config` over the defaults, checked: the type, a bucket for object storage,
 * an http(s) `endpoint_url` when set. Throws `STORAGE_CONFIG`.
 *
 * @example
 * checkStorageConfig({ type: 'object', bucket: '' })   // throws STORAGE_CONFIG
 */
export function checkStorageConfig(config: Partial<StorageConfig>): StorageConfig {
  const c: StorageConfig = { ...STORAGE_DEFAULTS, ...config };
  if (c.type !== 'local' && c.type !== 'object') throw storageError('STORAGE_CONFIG', `storage type ${JSON.stringify(c.type)} is not "local" or "object"`);
  if (typeof c.base_path !== 'string') throw storageError('STORAGE_CONFIG', 'storage base_path must be a string');
  if (c.type === 'local' && c.base_path.trim() === '') throw storageError('STORAGE_CONFIG', 'local storage needs a base_path (a folder)');
  if (c.type === 'object' && (typeof c.bucket !== 'string' || c.bucket.trim() === '')) throw storageError('STORAGE_CONFIG', 'object storage needs a bucket ([storage] bucket)');
  if (c.endpoint_url) {
    let url: URL | undefined;
    try {
      url = new URL(c.endpoint_url);
    } catch {
      url = undefined;
    }
    // The value is not echoed: an endpoint URL may carry credentials.
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw storageError('STORAGE_CONFIG', 'storage endpoint_url must be an http:// or https:// URL');
  }
  return c;
}

/**
 * The storage `config` describes; a local `base_path` is resolved against
 * the project folder.
 *
 * @example
 * const storage = createStorage({ base_path: './uploads' }, '/srv/app');   // LocalStorage on /srv/app/uploads
 * const s3 = createStorage({ type: 'object', bucket: 'media', prefix: 'app1' }, '/srv/app');
 */
export function createStorage(config: Partial<StorageConfig>, projectRoot: string): Storage {
  const c = checkStorageConfig(config);
  if (c.type === 'object') return new ObjectStorage(c);
  return new LocalStorage({ basePath: resolve(projectRoot, c.base_path), createDirs: c.create_dirs });
}
