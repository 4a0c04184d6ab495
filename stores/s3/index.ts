/**
 * Files in an object store over the S3 API (`[storage] type = "object"`:
 * AWS S3 or any server that speaks it), the SDK loaded on first use, large
 * uploads in parts. Importing this door registers the `object` storage.
 */
import { registerStorage, storageError } from '../../actors/data/index.ts';
import { ObjectStorage } from './lazy-object.ts';

export { ObjectStorage } from './lazy-object.ts';
export type { ObjectStorageOptions } from './object-storage.ts';

registerStorage('object', {
  check(c) {
    if (typeof c.bucket !== 'string' || c.bucket.trim() === '') throw storageError('STORAGE_CONFIG', 'object storage needs a bucket ([storage] bucket)');
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
  },
  open: (c) => new ObjectStorage(c),
});
