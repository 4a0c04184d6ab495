/**
 * Where an object store's keys live: `<prefix>/<base_path>/<path>`, the
 * default `base_path` (`./storage`, a local folder's name) left out.
 */
import { storageError, safePrefix, type StorageConfig } from '../../actors/data/index.ts';

/**
 * The key prefix of a configuration (empty, or ending in `/`).
 *
 * @example
 * keyPrefixOf({ ...STORAGE_DEFAULTS, prefix: 'app1' }) // 'app1/'
 */
export function keyPrefixOf(config: StorageConfig): string {
  const parts: string[] = [];
  for (const [name, value] of [['prefix', config.prefix ?? ''], ['base_path', config.base_path ?? '']] as const) {
    let p: string;
    try {
      p = safePrefix(value).replace(/\/$/, '');
    } catch (err) {
      throw storageError('STORAGE_CONFIG', `storage ${name} ${JSON.stringify(value)} is not a relative key prefix`, { cause: err });
    }
    // The default local folder (`./storage`, as written) adds no key prefix; any other base_path, `storage` included, does.
    if (name === 'base_path' && value === './storage') continue;
    if (p !== '') parts.push(p);
  }
  return parts.length === 0 ? '' : `${parts.join('/')}/`;
}

