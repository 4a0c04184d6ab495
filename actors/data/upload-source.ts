/**
 * What `upload` takes, reduced to three shapes both backends handle: bytes in
 * memory, a local file of known size (read by the backend as a stream, or
 * copied by the kernel), or a stream of chunks of unknown length. A stream is
 * read through `guarded`, which marks the errors the caller's own stream
 * raised: the backends rethrow those as they are (the caller's failure, not
 * the storage's) and wrap everything else in a storage error.
 */
import { realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { storageError } from './storage-errors.ts';
import type { UploadedFile, UploadSource } from './storage-types.ts';

export type OpenedSource =
  | { kind: 'bytes'; bytes: Uint8Array; contentType?: string }
  | { kind: 'file'; path: string; size: number; contentType?: string }
  | { kind: 'stream'; stream: AsyncIterable<Uint8Array>; contentType?: string };

/**
 * Whether `x` is an uploaded file (`T.Upload()`), not bytes or a stream.
 *
 * @example
 * isUploadedFile({ filename: 'a.png', mimetype: 'image/png', size: 3, data: new Uint8Array(3) }) // true
 */
export function isUploadedFile(x: unknown): x is UploadedFile {
  if (typeof x !== 'object' || x === null || x instanceof Uint8Array) return false;
  if (Symbol.asyncIterator in x || typeof (x as { pipe?: unknown }).pipe === 'function') return false;
  return typeof (x as { filename?: unknown }).filename === 'string';
}

/** A local file to upload: its absolute path and size; missing or not a file: `FILE_NOT_FOUND`. */
async function sourceFile(path: string, contentType?: string): Promise<OpenedSource> {
  const absolute = resolve(path);
  try {
    const s = await stat(absolute);
    if (s.isFile()) return { kind: 'file', path: absolute, size: s.size, ...(contentType ? { contentType } : {}) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
  }
  throw storageError('FILE_NOT_FOUND', `the upload source ${JSON.stringify(path)} is not a file`);
}

/**
 * The real path of an uploaded file's `path`, when it is one the HTTP front
 * streamed (transports/http/upload-stream.ts: `<tmp>/svc-uploads-<pid>-XXXXXX/<32 hex>`,
 * this process's) — never any other file: an upload-shaped object can come
 * from a request's JSON (`{ filename, path: '/etc/passwd' }`), and reading
 * a path from it would hand a client the server's files. Anything else is
 * `INVALID_ARGUMENT` (a file of the server's own is uploaded by its path, as a string).
 */
async function streamedUpload(path: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    throw storageError('INVALID_ARGUMENT', 'the uploaded file is not one this server received');
  }
  const folder = dirname(real);
  const prefix = join(await realTmp(), `svc-uploads-${process.pid}-`);
  if (!folder.startsWith(prefix) || folder.slice(prefix.length).includes(sep) || !/^[0-9a-f]{32}$/.test(basename(real))) {
    throw storageError('INVALID_ARGUMENT', 'the uploaded file is not one this server received');
  }
  return real;
}

let tmp: Promise<string> | undefined;
function realTmp(): Promise<string> {
  return (tmp ??= realpath(tmpdir()));
}

/**
 * The shape of an upload source: a string is a local file path (relative to
 * the working folder), an uploaded file its `path` when it has one, else its
 * `data`.
 *
 * @example
 * const src = await openSource(Buffer.from('hi'))   // { kind: 'bytes', bytes }
 */
export async function openSource(source: UploadSource): Promise<OpenedSource> {
  if (typeof source === 'string') return sourceFile(source);
  if (source instanceof Uint8Array) return { kind: 'bytes', bytes: source };
  if (isUploadedFile(source)) {
    const contentType = source.mimetype || undefined;
    if (typeof source.path === 'string' && source.path !== '') return sourceFile(await streamedUpload(source.path), contentType);
    if (source.data instanceof Uint8Array) return { kind: 'bytes', bytes: source.data, ...(contentType ? { contentType } : {}) };
    throw storageError('INVALID_ARGUMENT', `the uploaded file ${JSON.stringify(source.filename)} has neither data nor path`);
  }
  if (typeof source === 'object' && source !== null && Symbol.asyncIterator in source) {
    return { kind: 'stream', stream: source as AsyncIterable<Uint8Array> };
  }
  throw storageError('INVALID_ARGUMENT', 'upload takes a file path, bytes, a readable stream, an async iterable of bytes or an uploaded file');
}

const sourceFailures = new WeakSet<object>();

/**
 * `source`, chunk by chunk (strings as UTF-8 bytes); an error the source
 * itself raises is remembered, so `isSourceFailure` tells it from an error of
 * the destination.
 *
 * @example
 * try { await pipeline(guarded(body), out) } catch (e) { if (isSourceFailure(e)) throw e; ... }
 */
export async function* guarded(source: AsyncIterable<unknown>): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of source) {
      if (typeof chunk === 'string') yield Buffer.from(chunk);
      else if (chunk instanceof Uint8Array) yield chunk;
      else throw new TypeError('an upload stream yields bytes (Uint8Array, Buffer or string)');
    }
  } catch (err) {
    if (typeof err === 'object' && err !== null) sourceFailures.add(err);
    throw err;
  }
}

/**
 * Whether `err` came from a source read through `guarded`.
 *
 * @example
 * if (isSourceFailure(err)) throw err   // the caller's stream failed: its own error
 */
export function isSourceFailure(err: unknown): boolean {
  return typeof err === 'object' && err !== null && sourceFailures.has(err);
}
