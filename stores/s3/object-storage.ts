/**
 * `store()` on an object store over the S3 API (`[storage] type = "object"`:
 * AWS S3, MinIO, R2, s3rver, … through `endpoint_url`).
 *
 * Keys: `<prefix>/<base_path>/<path>`, each part only when set, where
 * `base_path` counts only when it is not the default (`./storage`, the local
 * folder's name, means nothing in a bucket). So with `prefix = "app1"`,
 * `store().upload(x, 'a.txt')` writes `app1/a.txt` and `listFiles()` yields
 * `a.txt`; `store('./avatars')` writes under `app1/avatars/`. Both must be
 * relative (no `..`, no leading `/`), else `STORAGE_CONFIG`.
 *
 * Decisions, and why:
 * - The client always runs with `requestChecksumCalculation` and
 *   `responseChecksumValidation` at `WHEN_REQUIRED`: with the SDK's defaults a
 *   streamed body is sent `aws-chunked` with a trailing checksum, which
 *   S3-compatible servers (s3rver among them) store framing and all.
 * - Uploads: bytes and files up to 5 GiB in one PutObject (a file streamed
 *   from disk with its length); larger files and streams of unknown length in
 *   a multipart upload, one part in memory at a time (`multipart.ts`). A
 *   stream that turns out shorter than one part goes in one PutObject.
 * - `metadata` becomes S3 user metadata (S3 lowercases the names; names must
 *   be header tokens and values printable ASCII, else a TypeError); the
 *   content type is the uploaded file's `mimetype` when there is one.
 * - S3 has no creation time: `getMetadata().created` is the last-modified
 *   time. There are no folders: `is_dir` is always false, and a "folder"
 *   (`docs`) neither exists nor has metadata.
 * - `delete` and `copy` ask HeadObject first, to answer false for a missing
 *   source (S3's DeleteObject succeeds on a missing key). `move` is copy then
 *   delete: not atomic, as nothing in S3 is.
 * - `public_read` says the bucket is readable by everyone (a bucket policy);
 *   `getUrl` then answers the permanent URL. Objects are not uploaded with an
 *   ACL: most buckets today refuse ACLs.
 * - Errors: a missing key is `FILE_NOT_FOUND`, a missing bucket or no
 *   credentials `STORAGE_CONFIG`, everything else (network, refused access,
 *   throttling) `STORAGE_UNAVAILABLE` with the SDK's error as the cause;
 *   messages name the operation and the path, never a credential.
 */
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type HeadObjectCommandOutput,
  type ListObjectsV2CommandOutput,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createReadStream } from 'node:fs';
import { posix, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError } from '../../kernel/index.ts';
import { writeAtomic } from '../local/index.ts';
import { storageError, checkExpiry, checkMetadata, safePrefix, safeRelative, guarded, isSourceFailure, openSource, type FileMetadata, type Storage, type StorageConfig, type UploadSource } from '../../actors/data/index.ts';
import { bufferedParts, fileParts, MAX_SINGLE_PUT, MIB, MIN_PART, multipartUpload, partSizeFor, type Part } from './multipart.ts';
import { keyPrefixOf } from './keys.ts';

export interface ObjectStorageOptions {
  /** Bytes per part of a multipart upload (default 8 MiB, at least 5 MiB). */
  partSize?: number;
  /** Files larger than this go in a multipart upload (default 5 GiB, S3's limit for one PutObject). */
  multipartAbove?: number;
  /** Keys asked for per ListObjectsV2 page (default 1000, S3's most). */
  listPageSize?: number;
}

/** A key's segments URL-encoded, its slashes kept (a URL path, or an `x-amz-copy-source`). */
function encodeKey(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

/** The S3 client behind {@link ObjectStorage} (lazy-object.ts), loaded with the SDK on first use. */
export class S3Storage implements Storage {
  readonly type = 'object' as const;
  readonly bucket: string;
  /** What every key starts with (`app1/` …, or ''). */
  readonly keyPrefix: string;
  private readonly client: S3Client;
  private readonly config: StorageConfig;
  private readonly partSize: number;
  private readonly multipartAbove: number;
  private readonly listPageSize: number;

  constructor(config: StorageConfig, options: ObjectStorageOptions = {}) {
    if (typeof config.bucket !== 'string' || config.bucket === '') throw storageError('STORAGE_CONFIG', 'object storage needs a bucket ([storage] bucket)');
    this.config = config;
    this.bucket = config.bucket;
    this.keyPrefix = keyPrefixOf(config);
    this.partSize = options.partSize ?? 8 * MIB;
    if (this.partSize < MIN_PART) throw storageError('STORAGE_CONFIG', `object storage parts are 5 MiB at least (got ${this.partSize} bytes)`);
    this.multipartAbove = Math.min(options.multipartAbove ?? MAX_SINGLE_PUT, MAX_SINGLE_PUT);
    this.listPageSize = Math.max(1, Math.min(options.listPageSize ?? 1000, 1000));
    const endpoint = config.endpoint_url || undefined;
    const credentials = config.access_key_id && config.secret_access_key ? { accessKeyId: config.access_key_id, secretAccessKey: config.secret_access_key } : undefined;
    this.client = new S3Client({
      region: config.region || 'us-east-1',
      ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      ...(credentials ? { credentials } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: 10_000 },
    });
  }

  private key(rel: string): string {
    return this.keyPrefix + rel;
  }

  /** The storage error for an SDK failure of `op` on `path`. */
  private failure(err: unknown, op: string, path: string): unknown {
    if (err instanceof SvcError || isSourceFailure(err)) return err;
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    const status = e?.$metadata?.httpStatusCode;
    const shown = JSON.stringify(path);
    if (e?.name === 'NoSuchBucket') return storageError('STORAGE_CONFIG', `object storage: the bucket ${JSON.stringify(this.bucket)} does not exist`, { cause: err });
    if (e?.name === 'CredentialsProviderError') return storageError('STORAGE_CONFIG', 'object storage: no credentials (set access_key_id and secret_access_key, or the AWS environment)', { cause: err });
    if (e?.name === 'NoSuchKey' || e?.name === 'NotFound' || status === 404) return storageError('FILE_NOT_FOUND', `no such file ${shown} in the storage`, { cause: err });
    return storageError('STORAGE_UNAVAILABLE', `object storage: ${op} ${shown} failed: ${e?.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}`, { cause: err });
  }

  /** HeadObject; `undefined` when the key does not exist. */
  private async head(rel: string, op: string): Promise<HeadObjectCommandOutput | undefined> {
    try {
      return await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(rel) }));
    } catch (err) {
      const mapped = this.failure(err, op, rel);
      if (mapped instanceof SvcError && mapped.code === 'FILE_NOT_FOUND') return undefined;
      throw mapped;
    }
  }

  /**
   * @example
   * await storage.upload(uploadedFile, 'avatars/u1.png')   // content type from the upload
   */
  async upload(source: UploadSource, destination: string, metadata?: Record<string, string>): Promise<string> {
    const rel = safeRelative(destination);
    checkMetadata(metadata);
    const src = await openSource(source);
    const target = {
      Bucket: this.bucket,
      Key: this.key(rel),
      ...(src.contentType ? { ContentType: src.contentType } : {}),
      ...(metadata && Object.keys(metadata).length > 0 ? { Metadata: metadata } : {}),
    };
    try {
      if (src.kind === 'bytes') {
        await this.client.send(new PutObjectCommand({ ...target, Body: src.bytes, ContentLength: src.bytes.byteLength }));
      } else if (src.kind === 'file' && src.size <= this.multipartAbove) {
        const body = createReadStream(src.path);
        try {
          await this.client.send(new PutObjectCommand({ ...target, Body: body, ContentLength: src.size }));
        } finally {
          body.destroy();
        }
      } else if (src.kind === 'file') {
        await multipartUpload(this.client, target, fileParts(src.path, src.size, partSizeFor(src.size, this.partSize)));
      } else {
        const parts = bufferedParts(guarded(src.stream), this.partSize);
        try {
          const first = (await parts.next()).value as Part & { last: boolean };
          if (first.last) await this.client.send(new PutObjectCommand({ ...target, Body: first.body, ContentLength: first.length }));
          else
            await multipartUpload(
              this.client,
              target,
              (async function* () {
                yield first;
                yield* parts;
              })(),
            );
        } finally {
          await parts.return(undefined);
        }
      }
    } catch (err) {
      throw this.failure(err, 'upload', rel);
    }
    return rel;
  }

  /**
   * @example
   * await storage.download('a.txt', res)   // streamed into an HTTP response; null
   */
  download(source: string): Promise<Buffer>;
  download(source: string, destination: string | Writable): Promise<null>;
  async download(source: string, destination?: string | Writable): Promise<Buffer | null> {
    const rel = safeRelative(source);
    let body: Readable & { transformToByteArray(): Promise<Uint8Array> };
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(rel) }));
      body = got.Body as typeof body;
    } catch (err) {
      throw this.failure(err, 'download', rel);
    }
    try {
      if (destination === undefined) {
        const bytes = await body.transformToByteArray();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      }
      if (typeof destination === 'string') await writeAtomic(resolve(destination), guarded(body));
      else await pipeline(guarded(body), destination);
      return null;
    } catch (err) {
      // The destination's own errors are the app's: through unchanged. The body's are the store's.
      throw isSourceFailure(err) || destination === undefined ? this.failure(err, 'download', rel) : err;
    } finally {
      body.destroy();
    }
  }

  /**
   * @example
   * await storage.delete('a.txt')   // true; false when there was no such object
   */
  async delete(path: string): Promise<boolean> {
    const rel = safeRelative(path);
    if (!(await this.head(rel, 'delete'))) return false;
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(rel) }));
    } catch (err) {
      throw this.failure(err, 'delete', rel);
    }
    return true;
  }

  /**
   * @example
   * await storage.exists('a.txt')
   */
  async exists(path: string): Promise<boolean> {
    return (await this.head(safeRelative(path), 'exists')) !== undefined;
  }

  /**
   * ListObjectsV2, page by page; non-recursive with `Delimiter: '/'` (the
   * "folders" it reports are not files and are not yielded). Keys that no
   * path can name (`a//b`, `x/../y`, a trailing `/` folder marker) are skipped.
   *
   * @example
   * for await (const path of storage.listFiles('docs/re')) console.log(path); // docs/readme.md
   */
  async *listFiles(prefix = '', recursive = false): AsyncGenerator<string> {
    const p = safePrefix(prefix);
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            ...(this.keyPrefix + p ? { Prefix: this.keyPrefix + p } : {}),
            ...(recursive ? {} : { Delimiter: '/' }),
            ...(this.listPageSize < 1000 ? { MaxKeys: this.listPageSize } : {}),
            ...(token ? { ContinuationToken: token } : {}),
          }),
        );
      } catch (err) {
        throw this.failure(err, 'listFiles', prefix);
      }
      for (const object of page.Contents ?? []) {
        const rel = object.Key?.startsWith(this.keyPrefix) ? object.Key.slice(this.keyPrefix.length) : undefined;
        if (rel && wellFormed(rel)) yield rel;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /**
   * @example
   * await storage.getMetadata('a.txt')   // { name, size, modified, created, is_dir: false, content_type, metadata }
   */
  async getMetadata(path: string): Promise<FileMetadata> {
    const rel = safeRelative(path);
    const head = await this.head(rel, 'getMetadata');
    if (!head) throw storageError('FILE_NOT_FOUND', `no such file ${JSON.stringify(rel)} in the storage`);
    const modified = (head.LastModified ?? new Date(0)).toISOString();
    return {
      name: posix.basename(rel),
      size: head.ContentLength ?? 0,
      modified,
      created: modified,
      is_dir: false,
      ...(head.ContentType ? { content_type: head.ContentType } : {}),
      metadata: head.Metadata ?? {},
    };
  }

  /**
   * CopyObject (content type and metadata go along).
   * TODO: objects above 5 GiB need UploadPartCopy; refused for now.
   *
   * @example
   * await storage.copy('a.txt', 'backup/a.txt')   // true; false when a.txt does not exist
   */
  async copy(source: string, destination: string): Promise<boolean> {
    const from = safeRelative(source);
    const to = safeRelative(destination);
    const head = await this.head(from, 'copy');
    if (!head) return false;
    if (from === to) return true;
    if ((head.ContentLength ?? 0) > MAX_SINGLE_PUT) throw storageError('STORAGE_UNAVAILABLE', `object storage: copying ${JSON.stringify(from)} (above 5 GiB) needs a multipart copy, not supported yet`);
    try {
      await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: this.key(to), CopySource: `${encodeURIComponent(this.bucket)}/${encodeKey(this.key(from))}` }));
    } catch (err) {
      const mapped = this.failure(err, 'copy', from);
      if (mapped instanceof SvcError && mapped.code === 'FILE_NOT_FOUND') return false;
      throw mapped;
    }
    return true;
  }

  /**
   * Copy, then delete the source.
   *
   * @example
   * await storage.move('inbox/a.txt', 'done/a.txt')   // true
   */
  async move(source: string, destination: string): Promise<boolean> {
    const from = safeRelative(source);
    const to = safeRelative(destination);
    if (!(await this.copy(from, to))) return false;
    if (from === to) return true;
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(from) }));
    } catch (err) {
      throw this.failure(err, 'move', from);
    }
    return true;
  }

  /**
   * A pre-signed GET URL valid `expiresIn` seconds; with `public_read`, the
   * permanent URL (path style under `endpoint_url`, else virtual-hosted AWS).
   * The object need not exist.
   *
   * @example
   * await storage.getUrl('a.txt', 60)   // https://…/a.txt?X-Amz-Algorithm=…&X-Amz-Expires=60…
   */
  async getUrl(path: string, expiresIn = 3600): Promise<string> {
    const rel = safeRelative(path);
    if (this.config.public_read) {
      const key = encodeKey(this.key(rel));
      if (this.config.endpoint_url) return `${this.config.endpoint_url.replace(/\/+$/, '')}/${this.bucket}/${key}`;
      return `https://${this.bucket}.s3.${this.config.region || 'us-east-1'}.amazonaws.com/${key}`;
    }
    const seconds = checkExpiry(expiresIn);
    try {
      return await getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: this.key(rel) }), { expiresIn: seconds });
    } catch (err) {
      throw this.failure(err, 'getUrl', rel);
    }
  }

  /**
   * A pre-signed PUT URL valid `expiresIn` seconds: a browser uploads straight
   * to the bucket (`fetch(url, { method: 'PUT', body })`).
   *
   * @example
   * const url = await storage.getUploadUrl('avatars/u1.png', 300);
   */
  async getUploadUrl(path: string, expiresIn = 3600): Promise<string> {
    const rel = safeRelative(path);
    const seconds = checkExpiry(expiresIn);
    try {
      return await getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucket, Key: this.key(rel) }), { expiresIn: seconds });
    } catch (err) {
      throw this.failure(err, 'getUploadUrl', rel);
    }
  }

  /** Close the client's sockets. */
  async close(): Promise<void> {
    this.client.destroy();
  }
}

/** Whether a relative key is a path this storage can name (so a listed path can be read back). */
function wellFormed(rel: string): boolean {
  try {
    return safeRelative(rel) === rel;
  } catch {
    return false;
  }
}
