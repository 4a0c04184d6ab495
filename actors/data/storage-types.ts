/**
 * The storage contract (`store()`): one interface, a local
 * folder or an object store over the S3 API behind it. Paths are relative to
 * the storage's base, `/`-separated; `..` segments, absolute paths and NUL are
 * refused with `INVALID_PATH` before anything is touched.
 */
import type { Readable, Writable } from 'node:stream';

export type StorageType = 'local' | 'object';

/** The original product's configuration keys (`[storage]` / `[scale.storage]`, `SVC_STORAGE_*`). */
export interface StorageConfig {
  type: StorageType;
  /** Local: the base folder (relative to the project folder). Object: a key prefix under `prefix`. */
  base_path: string;
  create_dirs: boolean;
  bucket: string;
  region: string;
  prefix: string;
  endpoint_url: string;
  public_read: boolean;
  /** Object storage credentials; empty: the AWS SDK's own chain (AWS_ACCESS_KEY_ID, profiles, roles). Never logged. */
  access_key_id: string;
  secret_access_key: string;
}

/** `getMetadata`: `size`, `modified`, `created`, `is_dir`, `name`; times as ISO 8601. */
export interface FileMetadata {
  name: string;
  size: number;
  modified: string;
  created: string;
  is_dir: boolean;
  /** Object storage: the content type and user metadata stored with the object (local: none). */
  content_type?: string;
  metadata?: Record<string, string>;
}

/** A `T.Upload()` field's value: in memory (`data`) or, past the body limit, a temporary file (`path`). */
export interface UploadedFile {
  filename: string;
  mimetype: string;
  size: number;
  data?: Uint8Array;
  path?: string;
}

/** What `upload` takes: a file path, bytes, a readable stream (or async iterable of bytes), or an uploaded file. */
export type UploadSource = string | Uint8Array | Readable | NodeJS.ReadableStream | AsyncIterable<Uint8Array> | UploadedFile;

export interface Storage {
  readonly type: StorageType;
  /** Store `source` at `destination`; resolves to `destination` as stored (normalised). */
  upload(source: UploadSource, destination: string, metadata?: Record<string, string>): Promise<string>;
  /** The file's bytes; or, with a destination (a local path or a writable stream), written there and `null`. */
  download(source: string): Promise<Buffer>;
  download(source: string, destination: string | Writable): Promise<null>;
  delete(path: string): Promise<boolean>;
  exists(path: string): Promise<boolean>;
  /** Paths relative to the base, `/`-separated, no leading `./` or `/`; files only. */
  listFiles(prefix?: string, recursive?: boolean): AsyncIterable<string>;
  getMetadata(path: string): Promise<FileMetadata>;
  copy(source: string, destination: string): Promise<boolean>;
  move(source: string, destination: string): Promise<boolean>;
  /** Local: a `file://` URI. Object: pre-signed GET for `expiresIn` seconds, or the permanent URL with `public_read`. */
  getUrl(path: string, expiresIn?: number): Promise<string>;
  /** Object: a pre-signed PUT URL for `expiresIn` seconds (a browser uploads straight to the bucket). Local: `STORAGE_CONFIG`. */
  getUploadUrl(path: string, expiresIn?: number): Promise<string>;
  /** Release what the storage holds (the S3 client's sockets). */
  close(): Promise<void>;
}
