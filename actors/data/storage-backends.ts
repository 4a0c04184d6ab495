/**
 * From configuration to a storage: `[storage]` (or `[scale.storage]`,
 * `SVC_STORAGE_*`) checked, then a `LocalStorage` on a folder of the project
 * or an `ObjectStorage` on a bucket. A configuration that cannot work is
 * `STORAGE_CONFIG` here, at boot, rather than at the first upload.
 */
import { storageError } from './storage-errors.ts';
import type { Storage, StorageConfig } from './storage-types.ts';

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

/** A storage backend for one `[storage] type`: what its configuration needs (throws `STORAGE_CONFIG`), and how it opens. */
export interface StorageBackend {
  /** Throw `STORAGE_CONFIG` for a configuration this backend cannot work with (checked at boot). */
  check?(config: StorageConfig): void;
  /** The storage, a local path resolved against `projectRoot`. */
  open(config: StorageConfig, projectRoot: string): Storage;
}

/** Storage backends by `type`: this seam imports none of them (`stores/local`, `stores/s3` register themselves). */
const backends = new Map<string, StorageBackend>();

/**
 * Make a storage backend available for a `[storage] type`; a later
 * registration of a type replaces the earlier one.
 *
 * @example
 * registerStorage('local', { open: (c, root) => new LocalStorage({ basePath: resolve(root, c.base_path), createDirs: c.create_dirs }) });
 */
export function registerStorage(type: string, backend: StorageBackend): void {
  backends.set(type, backend);
}

/**
 * `config` over the defaults, checked: a registered type, then what that
 * backend needs (a bucket for object storage, an http(s) `endpoint_url` when
 * set, …). Throws `STORAGE_CONFIG`.
 *
 * @example
 * checkStorageConfig({ type: 'object', bucket: '' })   // throws STORAGE_CONFIG
 */
export function checkStorageConfig(config: Partial<StorageConfig>): StorageConfig {
  const c: StorageConfig = { ...STORAGE_DEFAULTS, ...config };
  const backend = backends.get(c.type);
  if (!backend) throw storageError('STORAGE_CONFIG', `storage type ${JSON.stringify(c.type)} is not ${[...backends.keys()].map((k) => JSON.stringify(k)).join(' or ') || 'known'}`);
  if (typeof c.base_path !== 'string') throw storageError('STORAGE_CONFIG', 'storage base_path must be a string');
  backend.check?.(c);
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
  return (backends.get(c.type) as StorageBackend).open(c, projectRoot);
}
