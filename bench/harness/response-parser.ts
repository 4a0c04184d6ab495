/**
 * The response parser of a generator thread (generator.ts): HTTP/1.1
 * responses read in place off a keep-alive connection, and the envelope code
 * of an error answer.
 */
/** Receives what a `ResponseParser` reads. */
export interface ResponseSink {
  /** `body` is kept only for error answers (status outside 2xx/3xx), for their envelope. */
  onResponse(status: number, body: Buffer | null, close: boolean): void;
  onProtocolError(reason: string): void;
}

const CONTENT_LENGTH = Buffer.from('content-length:');
const TRANSFER_ENCODING = Buffer.from('transfer-encoding:');
const CONNECTION = Buffer.from('connection:');
const MAX_HEAD = 64 * 1024;
const MAX_KEPT_BODY = 64 * 1024;

const HEAD = 0;
const BODY = 1;
const CHUNK_SIZE = 2;
const CHUNK_DATA = 3;
const CHUNK_END = 4;
const TRAILER = 5;
const UNTIL_CLOSE = 6;

/** Whether `buf` at `at` holds `lower` (a lower-case ASCII name), case-insensitively. */
function startsWithLower(buf: Buffer, at: number, len: number, lower: Buffer): boolean {
  if (at + lower.length > len) return false;
  for (let i = 0; i < lower.length; i++) if ((buf[at + i]! | 0x20) !== lower[i]) return false;
  return true;
}

function skipSpaces(buf: Buffer, at: number): number {
  while (buf[at] === 32 || buf[at] === 9) at++;
  return at;
}

/**
 * HTTP/1.1 responses, one after another on a connection: status line,
 * content-length / chunked / until-close bodies, `connection: close`, 1xx
 * skipped; bytes of several responses in one chunk and a response split
 * over many chunks alike. Only the few headers that frame a response are
 * looked at, in place (no string per header).
 * @example
 * const parser = new ResponseParser({ onResponse: (status, body, close) => …, onProtocolError: (why) => … });
 * socket.on('data', (chunk) => parser.execute(chunk));
 * socket.on('end', () => parser.end());
 */
export class ResponseParser {
  /** Set before each request: the answer to HEAD has no body. */
  noBody = false;
  private state = HEAD;
  /** An incomplete head or chunk-size line, waiting for more bytes (a copy: chunks' memory is reused). */
  private pending: Buffer | null = null;
  private status = 0;
  private remaining = 0;
  private close = false;
  private kept: Buffer[] | null = null;
  private keptBytes = 0;

  constructor(private readonly sink: ResponseSink) {}

  /** Parse the first `length` bytes of `chunk` (a read buffer reused from read to read needs no slice). */
  execute(chunk: Buffer, length = chunk.length): void {
    let buf = chunk;
    let len = length;
    if (this.pending !== null) {
      buf = Buffer.concat([this.pending, chunk.subarray(0, length)]);
      len = buf.length;
      this.pending = null;
    }
    let pos = 0;
    while (pos < len) {
      switch (this.state) {
        case HEAD: {
          const end = this.head(buf, pos, len);
          if (end < 0) return;
          if (end === 0) {
            if (len - pos > MAX_HEAD) return void this.fail('response head too large');
            this.pending = Buffer.from(buf.subarray(pos, len));
            return;
          }
          pos = end;
          if (this.status < 200 && this.status !== 101) {
            this.state = HEAD; // interim (100 Continue): the real answer follows
            break;
          }
          const empty = (this.state as number) === BODY && this.remaining === 0;
          if ((empty || this.noBody || this.status === 204 || this.status === 304 || this.status === 101) && this.complete()) return;
          break;
        }
        case BODY:
        case CHUNK_DATA: {
          const n = Math.min(this.remaining, len - pos);
          if (this.kept !== null) this.keep(buf, pos, pos + n);
          pos += n;
          this.remaining -= n;
          if (this.remaining === 0) {
            if (this.state === CHUNK_DATA) {
              this.state = CHUNK_END;
              this.remaining = 2;
            } else if (this.complete()) return;
          }
          break;
        }
        case CHUNK_END: {
          const n = Math.min(this.remaining, len - pos);
          pos += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = CHUNK_SIZE;
          break;
        }
        case CHUNK_SIZE:
        case TRAILER: {
          const eol = buf.indexOf(10, pos);
          if (eol < 0 || eol >= len) {
            if (len - pos > MAX_HEAD) return void this.fail('chunk line too long');
            this.pending = Buffer.from(buf.subarray(pos, len));
            return;
          }
          if (this.state === TRAILER) {
            const empty = eol === pos || (eol === pos + 1 && buf[pos] === 13);
            pos = eol + 1;
            if (empty && this.complete()) return;
            break;
          }
          let size = 0;
          let digits = 0;
          for (let i = pos; i < eol; i++) {
            const c = buf[i]! | 0x20;
            const v = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1;
            if (v < 0) break; // `;extension`, or the CR
            size = size * 16 + v;
            digits++;
          }
          if (digits === 0 || digits > 12) return void this.fail('bad chunk size');
          pos = eol + 1;
          if (size === 0) this.state = TRAILER;
          else {
            this.state = CHUNK_DATA;
            this.remaining = size;
          }
          break;
        }
        default: {
          // UNTIL_CLOSE: the body ends when the server closes.
          if (this.kept !== null) this.keep(buf, pos, len);
          pos = len;
        }
      }
    }
  }

  /** The server closed its side: a body delimited by the close ends here. */
  end(): void {
    if (this.state !== UNTIL_CLOSE) return;
    this.close = true;
    this.complete();
  }

  /**
   * Reads a head from `start`, in one pass over its lines: the status, the
   * headers that frame the body; sets the body state. Returns where the body
   * begins, 0 while the head is incomplete (nothing is kept of a partial
   * parse), -1 on garbage.
   */
  private head(buf: Buffer, start: number, len: number): number {
    let eol = buf.indexOf(10, start);
    if (eol < 0 || eol >= len) return 0;
    // "HTTP/1.1 200 …": the status is bytes 9–11.
    if (eol - start < 12 || buf[start] !== 72 || buf[start + 4] !== 47) return this.fail('not an HTTP response');
    const d0 = buf[start + 9]! - 48;
    const d1 = buf[start + 10]! - 48;
    const d2 = buf[start + 11]! - 48;
    if (d0 < 1 || d0 > 9 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) return this.fail('bad status line');
    let length = -1;
    let chunked = false;
    let close = buf[start + 7] === 48; // HTTP/1.0 closes unless it says keep-alive
    for (let p = eol + 1; ; p = eol + 1) {
      if (p >= len) return 0;
      const c = buf[p]!;
      if (c === 13 || c === 10) {
        // The blank line: the head is whole.
        const body = c === 13 ? p + 2 : p + 1;
        if (body > len) return 0;
        this.status = d0 * 100 + d1 * 10 + d2;
        this.close = close;
        this.kept = this.status < 200 || this.status >= 400 ? [] : null;
        this.keptBytes = 0;
        if (chunked) this.state = CHUNK_SIZE;
        else if (length >= 0) {
          this.state = BODY;
          this.remaining = length;
        } else this.state = UNTIL_CLOSE;
        return body;
      }
      eol = buf.indexOf(10, p);
      if (eol < 0 || eol >= len) return 0;
      const lower = c | 0x20;
      if (lower === 99) {
        if (startsWithLower(buf, p, eol, CONTENT_LENGTH)) {
          let i = skipSpaces(buf, p + CONTENT_LENGTH.length);
          const from = i;
          length = 0;
          for (let d = buf[i]! - 48; d >= 0 && d <= 9; d = buf[++i]! - 48) length = length * 10 + d;
          if (i === from) return this.fail('bad content-length');
        } else if (startsWithLower(buf, p, eol, CONNECTION)) {
          const v = buf[skipSpaces(buf, p + CONNECTION.length)]! | 0x20;
          if (v === 99) close = true; // close
          else if (v === 107) close = false; // keep-alive
        }
      } else if (lower === 116 && startsWithLower(buf, p, eol, TRANSFER_ENCODING)) {
        chunked = buf.toString('latin1', p + TRANSFER_ENCODING.length, eol).toLowerCase().includes('chunked');
      }
    }
  }

  private keep(buf: Buffer, from: number, to: number): void {
    const n = Math.min(to - from, MAX_KEPT_BODY - this.keptBytes);
    if (n <= 0) return;
    this.kept!.push(Buffer.from(buf.subarray(from, from + n)));
    this.keptBytes += n;
  }

  /** One response ended; returns true when the connection is closing (stop reading). */
  private complete(): boolean {
    const body = this.kept === null ? null : this.kept.length === 1 ? this.kept[0]! : Buffer.concat(this.kept);
    const close = this.close;
    this.state = HEAD;
    this.kept = null;
    this.sink.onResponse(this.status, body, close);
    return close;
  }

  private fail(reason: string): -1 {
    this.state = HEAD;
    this.pending = null;
    this.sink.onProtocolError(reason);
    return -1;
  }
}

/** The `error.code` of the server's envelope (`{"ok":false,"error":{"code":…}}`), if the body is one. */
export function envelopeCode(body: Buffer | null): string | undefined {
  if (body === null || body.length === 0) return undefined;
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } } | null)?.error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
