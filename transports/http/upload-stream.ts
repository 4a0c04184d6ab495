/**
 * Uploads larger than the body limit: a route whose `T.Upload({ maxBytes })`
 * field allows more than `[scale.server] max_body_bytes` takes a multipart
 * body up to `max_body_bytes` plus those fields' limits, and the transport
 * hands the body to a {@link UploadReceiver} as it arrives instead of holding
 * it: busboy splits it, each file of such a field streams into a temporary
 * file (a private folder `<tmp>/svc-uploads-<pid>-XXXXXX/`, removed at exit), everything else (other fields, smaller
 * files) stays in memory within `max_body_bytes`. The walker gets the field as
 * `{ filename, mimetype, size, path }` — hand it to `store().upload` as it is —
 * and the file is removed once the request is answered.
 *
 * A file over its field's limit, a body over the route's, or other parts over
 * `max_body_bytes` end the request with 413 `PAYLOAD_TOO_LARGE` at once (the
 * connection is closed: what the client still sends is not read); a malformed
 * body is a 400, as a buffered one is. Nothing of a refused upload is kept.
 */
import busboy from 'busboy';
import { randomBytes } from 'node:crypto';
import { chmodSync, createWriteStream, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpError, type HttpError } from './errors.ts';
import { MAX_PARTS, type Part } from './multipart.ts';

/** What the front says of a request that is to be streamed. */
export interface UploadPlan {
  boundary: string;
  /** Streamed fields and their limits (bytes). */
  files: ReadonlyMap<string, number>;
  /** Everything else together: `max_body_bytes`. */
  otherBytes: number;
  /** The whole body at most. */
  limit: number;
  /** The caller is not one the route takes (no token, a bad one): answer this at once, read nothing. */
  refusal?: HttpError;
}

let folder: string | undefined;

/** This thread's folder of upload files: made on first use (a fresh, private one), removed when the thread or process exits. */
export function uploadFolder(): string {
  if (folder === undefined) {
    const made = mkdtempSync(join(tmpdir(), `svc-uploads-${process.pid}-`));
    chmodSync(made, 0o700);
    folder = made;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  return folder;
}

/** A 413 with what the client needs to know (the limit, and the field when there is one). */
function tooLarge(message: string, details: Record<string, unknown>): HttpError {
  return httpError('PAYLOAD_TOO_LARGE', message, details);
}

/** The parts of a streamed body, as they arrive; `done` settles once all are in (and every file is on disk). */
export class UploadReceiver {
  private readonly bb: busboy.Busboy;
  private readonly parts: Part[] = [];
  private readonly files: string[] = [];
  private readonly writers = new Set<WriteStream>();
  private otherBytes = 0;
  private received = 0;
  private failure: HttpError | undefined;
  private finished = false;
  private drainWaiters: (() => void)[] = [];
  private settle!: { resolve: (parts: Part[]) => void; reject: (error: HttpError) => void };
  /** All parts in, every file flushed; rejects with the 413 / 400 to answer. */
  readonly done: Promise<Part[]>;

  constructor(private readonly plan: UploadPlan) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => {});
    this.bb = busboy({
      headers: { 'content-type': `multipart/form-data; boundary="${plan.boundary}"` },
      limits: { fieldSize: plan.otherBytes, parts: MAX_PARTS },
      preservePath: true,
      defParamCharset: 'utf8',
    });
    this.bb.on('field', (name, value, info) => {
      if (!name) return this.fail(httpError('VALIDATION_ERROR', 'multipart part without a name'));
      const data = Buffer.from(value);
      if (info.valueTruncated) return this.fail(tooLarge(`the field ${JSON.stringify(name)} is larger than ${plan.otherBytes} bytes`, { field: name, max_bytes: plan.otherBytes }));
      if (!this.countOther(data.length)) return;
      this.parts.push({ name, filename: undefined, contentType: info.mimeType, data });
    });
    this.bb.on('file', (name, stream, info) => {
      // A destroyed form destroys its file streams with an error: every one is listened to (or it would end the thread).
      stream.on('error', () => {});
      if (!name) {
        stream.resume();
        return this.fail(httpError('VALIDATION_ERROR', 'multipart part without a name'));
      }
      const max = plan.files.get(name);
      const part: Part = { name, filename: info.filename, contentType: info.mimeType, data: Buffer.alloc(0) };
      this.parts.push(part);
      if (max === undefined) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => {
          if (!this.failure && this.countOther(chunk.length)) chunks.push(chunk);
        });
        stream.on('end', () => (part.data = Buffer.concat(chunks)));
        return;
      }
      const path = join(uploadFolder(), randomBytes(16).toString('hex'));
      this.files.push(path);
      part.path = path;
      part.size = 0;
      const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
      this.writers.add(out);
      out.on('error', () => this.fail(httpError('INTERNAL_ERROR', 'the upload could not be written to its temporary file')));
      out.on('close', () => {
        this.writers.delete(out);
        // Failed before the file was even opened: the open made it again after the cleanup.
        if (this.failure) rmSync(path, { force: true });
        this.maybeDone();
      });
      out.on('drain', () => this.drained());
      stream.on('data', (chunk: Buffer) => {
        part.size = (part.size ?? 0) + chunk.length;
        if (part.size > max) {
          this.fail(tooLarge(`the file of field ${JSON.stringify(name)} is larger than its limit of ${max} bytes`, { field: name, max_bytes: max }));
          return;
        }
        if (!this.failure) out.write(chunk);
      });
      stream.on('end', () => out.end());
      stream.on('error', () => out.destroy());
    });
    this.bb.on('partsLimit', () => this.fail(httpError('VALIDATION_ERROR', `more than ${MAX_PARTS} multipart parts`)));
    this.bb.on('error', (error: Error) => this.fail(httpError('VALIDATION_ERROR', `malformed multipart body: ${error.message}`)));
    this.bb.on('close', () => {
      this.finished = true;
      this.maybeDone();
    });
  }

  private countOther(bytes: number): boolean {
    this.otherBytes += bytes;
    if (this.otherBytes <= this.plan.otherBytes) return true;
    this.fail(tooLarge(`the fields and files besides the streamed ones are larger than ${this.plan.otherBytes} bytes`, { max_bytes: this.plan.otherBytes }));
    return false;
  }

  /** Whether the receiver has failed (then the transport answers `done`'s error and reads no more). */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /**
   * Hand over the next chunk (the receiver keeps it: copy reused memory
   * first). `false`: pause the socket until {@link whenDrained} resolves.
   */
  write(chunk: Buffer): boolean {
    if (this.failure) return true;
    this.received += chunk.length;
    if (this.received > this.plan.limit) {
      this.fail(tooLarge(`the body is larger than ${this.plan.limit} bytes (max_body_bytes and the upload fields' own limits)`, { max_bytes: this.plan.limit }));
      return true;
    }
    this.bb.write(chunk);
    for (const w of this.writers) if (w.writableNeedDrain) return false;
    return true;
  }

  /** Resolves once every temporary file has room again. */
  whenDrained(): Promise<void> {
    return new Promise((resolve) => {
      this.drainWaiters.push(resolve);
      this.drained();
    });
  }

  private drained(): void {
    for (const w of this.writers) if (w.writableNeedDrain) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** The body is complete. busboy stalls on some malformed bodies: past a second more, it is a 400. */
  end(): void {
    if (this.failure) return;
    this.bb.end();
    const stalled = setTimeout(() => this.fail(httpError('VALIDATION_ERROR', 'malformed multipart body: it could not be read to its end')), 1_000);
    stalled.unref();
    this.done.then(
      () => clearTimeout(stalled),
      () => clearTimeout(stalled),
    );
  }

  /** Stop: the client went away, or the answer went out early. Files are removed. */
  abort(): void {
    this.fail(httpError('BAD_REQUEST', 'the upload was aborted'));
  }

  private fail(error: HttpError): void {
    if (this.failure) return;
    this.failure = error;
    this.bb.removeAllListeners('close');
    this.bb.on('error', () => {});
    this.bb.destroy();
    for (const w of this.writers) w.destroy();
    this.drained();
    for (const resolve of this.drainWaiters.splice(0)) resolve();
    this.settle.reject(error);
    this.cleanupNow();
  }

  private maybeDone(): void {
    if (this.failure || !this.finished || this.writers.size > 0) return;
    if (this.parts.some((p) => p.path !== undefined && p.size === undefined)) return;
    this.settle.resolve(this.parts);
  }

  /** Remove the temporary files now (an unlink each): before the answer goes out, so a client that has it finds them gone. */
  cleanupNow(): void {
    for (const f of this.files.splice(0)) {
      try {
        rmSync(f, { force: true });
      } catch {
        // already gone, or its folder was removed
      }
    }
  }
}
