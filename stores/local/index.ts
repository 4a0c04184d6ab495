/**
 * Files in a folder of the local disk (`[storage] type = "local"`), written
 * whole or not at all. Importing this door registers the `local` storage.
 */
import { resolve } from 'node:path';
import { registerStorage, storageError } from '../../actors/data/index.ts';
import { LocalStorage } from './local-storage.ts';

export { LocalStorage } from './local-storage.ts';
export type { LocalStorageOptions } from './local-storage.ts';
export { writeAtomic, isTempFile, TEMP_FILE } from './atomic-file.ts';
export type { AtomicBody } from './atomic-file.ts';

registerStorage('local', {
  check(c) {
    if (c.base_path.trim() === '') throw storageError('STORAGE_CONFIG', 'local storage needs a base_path (a folder)');
  },
  open: (c, projectRoot) => new LocalStorage({ basePath: resolve(projectRoot, c.base_path), createDirs: c.create_dirs }),
});
