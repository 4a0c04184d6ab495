/**
 * `ObjectStorage`: object storage over the S3 API, loading the AWS SDK (about
 * 0.3 s and a few MB per thread) only when a storage of this type is first
 * used — an app that never touches object storage never loads it. Settings
 * are checked at once; every call is handed to the {@link S3Storage} of
 * object-storage.ts.
 */
import { storageError, type FileMetadata, type Storage, type StorageConfig, type UploadSource } from '../../actors/data/index.ts';
import { keyPrefixOf } from './keys.ts';
import type { ObjectStorageOptions, S3Storage } from './object-storage.ts';
import type { Writable } from 'node:stream';

const MIN_PART = 5 * 2 ** 20;

/**
 * @example
 * const storage = new ObjectStorage({ ...STORAGE_DEFAULTS, type: 'object', bucket: 'media', prefix: 'app1' });
 * await storage.upload(Buffer.from('hi'), 'a.txt');        // key app1/a.txt
 * const url = await storage.getUrl('a.txt', 600);           // pre-signed for 10 minutes
 */
export class ObjectStorage implements Storage {
  readonly type = 'object' as const;
  readonly bucket: string;
  /** Every key starts with it (empty, or ending in `/`). */
  readonly keyPrefix: string;
  private real: Promise<S3Storage> | undefined;

  constructor(
    private readonly config: StorageConfig,
    private readonly options: ObjectStorageOptions = {},
  ) {
    if (typeof config.bucket !== 'string' || config.bucket === '') throw storageError('STORAGE_CONFIG', 'object storage needs a bucket ([storage] bucket)');
    if (options.partSize !== undefined && options.partSize < MIN_PART) throw storageError('STORAGE_CONFIG', `object storage parts are 5 MiB at least (got ${options.partSize} bytes)`);
    this.bucket = config.bucket;
    this.keyPrefix = keyPrefixOf(config);
  }

  private load(): Promise<S3Storage> {
    // The pinned SDK runs on Node 20; its warning that *later* releases will not is about versions svc does not load.
    // Set AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=false to see it anyway.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    return (this.real ??= import('./object-storage.ts').then((m) => new m.S3Storage(this.config, this.options)));
  }

  async upload(source: UploadSource, destination: string, metadata?: Record<string, string>): Promise<string> {
    return (await this.load()).upload(source, destination, metadata);
  }

  download(source: string): Promise<Buffer>;
  download(source: string, destination: string | Writable): Promise<null>;
  async download(source: string, destination?: string | Writable): Promise<Buffer | null> {
    const real = await this.load();
    return destination === undefined ? real.download(source) : real.download(source, destination);
  }

  async delete(path: string): Promise<boolean> {
    return (await this.load()).delete(path);
  }

  async exists(path: string): Promise<boolean> {
    return (await this.load()).exists(path);
  }

  async *listFiles(prefix = '', recursive = false): AsyncGenerator<string> {
    yield* (await this.load()).listFiles(prefix, recursive);
  }

  async getMetadata(path: string): Promise<FileMetadata> {
    return (await this.load()).getMetadata(path);
  }

  async copy(source: string, destination: string): Promise<boolean> {
    return (await this.load()).copy(source, destination);
  }

  async move(source: string, destination: string): Promise<boolean> {
    return (await this.load()).move(source, destination);
  }

  async getUrl(path: string, expiresIn = 3600): Promise<string> {
    return (await this.load()).getUrl(path, expiresIn);
  }

  async getUploadUrl(path: string, expiresIn = 3600): Promise<string> {
    return (await this.load()).getUploadUrl(path, expiresIn);
  }

  async close(): Promise<void> {
    if (this.real) await (await this.real).close();
  }
}
