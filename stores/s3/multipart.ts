/**
 * S3 multipart uploads written with the client's own commands (no
 * `@aws-sdk/lib-storage`): parts go one at a time, so memory stays at one
 * part whatever the size. A stream of unknown length is cut into buffered
 * parts (`bufferedParts`); a large local file is sent as ranged read streams
 * of itself (`fileParts`, nothing buffered). A failure aborts the upload, so
 * no parts are left behind to be billed.
 * TODO: reading the next part while one is sent would overlap the source and
 * the network, for one more part of memory (bench/storage-io.ts compares
 * this with the plainest SDK multipart loop, which does not overlap either).
 *
 * S3's limits: parts of 5 MiB at least (but the last), at most 10,000 parts.
 * With the default 8 MiB parts, a stream of unknown length may be up to
 * about 78 GiB; a file's parts grow with its size to stay within 10,000.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, UploadPartCommand, type CompletedPart } from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { storageError } from '../../actors/data/index.ts';

export const MIB = 2 ** 20;
/** The smallest part S3 takes (all but the last part). */
export const MIN_PART = 5 * MIB;
export const MAX_PARTS = 10_000;
/** Above this a single PutObject is refused by S3: larger files go in parts. */
export const MAX_SINGLE_PUT = 5 * 2 ** 30;

export interface Part {
  body: Uint8Array | Readable;
  length: number;
}

/**
 * The chunks of `source` cut into parts of exactly `size` bytes (the last
 * one shorter; an empty source gives one empty part). `last` is known when a
 * part is handed over: a full part is held until the next chunk shows that
 * more follows, so the caller can send a short stream with one PutObject.
 *
 * One buffer serves every part: a part's `body` is valid until the next part
 * is asked for (send it, then ask). Memory is one part and one chunk.
 *
 * @example
 * for await (const { body, last } of bufferedParts(stream, 8 * MIB)) await send(body, last);
 */
export async function* bufferedParts(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Part & { body: Buffer; last: boolean }> {
  let part: Buffer | undefined;
  let filled = 0;
  let full = false;
  for await (const raw of source) {
    let chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    while (chunk.length > 0) {
      part ??= Buffer.allocUnsafeSlow(size);
      if (full) {
        // More follows: the held part was not the last. Once it is sent, its buffer takes the next part.
        yield { body: part, length: size, last: false };
        full = false;
        filled = 0;
      }
      const n = Math.min(chunk.length, size - filled);
      chunk.copy(part, filled, 0, n);
      filled += n;
      chunk = chunk.subarray(n);
      full = filled === size;
    }
  }
  const body = part ? part.subarray(0, filled) : Buffer.alloc(0);
  yield { body, length: body.length, last: true };
}

/**
 * A part size for a file of `total` bytes: at least `preferred`, large
 * enough to stay within 10,000 parts (whole MiB).
 *
 * @example
 * partSizeFor(6 * 2 ** 30, 8 * MIB)   // 8 MiB
 */
export function partSizeFor(total: number, preferred: number): number {
  return Math.max(preferred, Math.ceil(total / MAX_PARTS / MIB) * MIB);
}

/**
 * A local file of `total` bytes as parts of `size`: each a read stream of
 * its own byte range, opened when the part is sent.
 *
 * @example
 * await multipartUpload(client, { Bucket, Key }, fileParts('/tmp/big.iso', size, partSizeFor(size, 8 * MIB)))
 */
export function* fileParts(path: string, total: number, size: number): Generator<Part> {
  for (let start = 0; start < total; start += size) {
    const length = Math.min(size, total - start);
    yield { body: createReadStream(path, { start, end: start + length - 1 }), length };
  }
}

/**
 * Upload `parts` in order as one object; abort the upload when anything
 * fails (the error is rethrown as it came: the caller maps it).
 *
 * @example
 * await multipartUpload(client, { Bucket: 'b', Key: 'k', ContentType: 'video/mp4' }, parts)
 */
export async function multipartUpload(
  client: S3Client,
  target: { Bucket: string; Key: string; ContentType?: string; Metadata?: Record<string, string> },
  parts: AsyncIterable<Part> | Iterable<Part>,
): Promise<void> {
  const { UploadId } = await client.send(new CreateMultipartUploadCommand(target));
  const { Bucket, Key } = target;
  const done: CompletedPart[] = [];
  try {
    for await (const part of parts) {
      const PartNumber = done.length + 1;
      try {
        if (PartNumber > MAX_PARTS) throw storageError('STORAGE_UNAVAILABLE', `object storage: "${Key}" needs more than ${MAX_PARTS} parts`);
        const sent = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: part.body, ContentLength: part.length }));
        done.push({ ETag: sent.ETag, PartNumber });
      } finally {
        if (part.body instanceof Readable) part.body.destroy();
      }
    }
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: done } }));
  } catch (err) {
    await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => undefined);
    throw err;
  }
}
