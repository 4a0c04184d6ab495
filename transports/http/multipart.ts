/**
 * multipart/form-data bodies, read by libraries: uWebSockets.js's own
 * `getParts` where the loaded binary has it (the uWS transport, and requests
 * handed to the front directly), busboy otherwise (the node:http transport,
 * and the JavaScript stand-in some uWS builds load instead of the binary).
 * Either way the body is complete and its size already bounded by the server.
 *
 * Both are held to one framing check of ours, so that a body gets the same
 * answer on either transport, and a malformed one is a 400 as it always was.
 * Measured on this build of `getParts` (20.30.0-unofficial.0): it returns
 * whatever it could read and silently drops the rest (a body cut short, a
 * part with a malformed header and every part after it), reads a part after
 * the closing delimiter, cuts a part's data short where the boundary text
 * appears inside it — and then writes into the body it was given. busboy
 * 1.6.0 skips parts without a form-data Content-Disposition and, on some
 * malformed bodies, never finishes. So: the boundary may appear only as a
 * delimiter at the start of a line, the body must hold its closing delimiter,
 * and every part it delimits must come back, with a name.
 *
 * Cost (a 1 MiB file and three fields, median): the hand-written parser this
 * replaced 0.16 ms, `getParts` with the check 0.6 ms, busboy with it 0.6 ms;
 * a 1.4 KB form: 17 µs, 7 µs, 38 µs.
 */
import { createRequire } from 'node:module';
import busboy from 'busboy';
import { httpError } from './errors.ts';
import type { HttpRequest } from './types.ts';

export interface Part {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  /** Empty for a file streamed to disk (`path`). */
  data: Buffer;
  /** A streamed file (upload-stream.ts): where it is, and its size. */
  path?: string;
  size?: number;
}

/** What a transport attaches to a request whose parts it has read (or will read) itself. */
export interface MultipartSource {
  /** The parts of the body; throws the 400 of a malformed one. */
  parts?: () => Part[];
}

/** A synchronous parser over a complete body. */
export type PartsParser = (body: Buffer, boundary: string) => Part[];

type GetParts = typeof import('uWebSockets.js').getParts;

/** More parts than this is a 400. */
export const MAX_PARTS = 256;

/** The boundary of a `multipart/form-data; boundary=…` content type, if it is one. */
export function boundaryOf(contentType: string): string | undefined {
  if (!/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/**
 * The body up to its closing delimiter (the epilogue left out), and how many
 * parts it delimits. The boundary may appear only as a delimiter, at the start
 * of a line: inside a part's data, `getParts` cuts the data short there and
 * reports nothing wrong.
 */
function frame(body: Buffer, boundary: string): { body: Buffer; parts: number } {
  const dashed = Buffer.from(`--${boundary}`);
  const lineStart = (at: number) => at === 0 || (body[at - 2] === 0x0d && body[at - 1] === 0x0a);
  let at = body.indexOf(dashed);
  if (at < 0) throw httpError('VALIDATION_ERROR', 'multipart body without its boundary');
  if (!lineStart(at)) throw httpError('VALIDATION_ERROR', 'malformed multipart delimiter');
  for (let parts = 0; ; parts++) {
    const end = at + dashed.length;
    if (body[end] === 0x2d && body[end + 1] === 0x2d) return { body: body.subarray(0, end + 2), parts }; // "--": the last
    if (body[end] !== 0x0d || body[end + 1] !== 0x0a) throw httpError('VALIDATION_ERROR', 'malformed multipart delimiter');
    if (parts === MAX_PARTS) throw httpError('VALIDATION_ERROR', `more than ${MAX_PARTS} multipart parts`);
    at = body.indexOf(dashed, end);
    if (at < 0) throw httpError('VALIDATION_ERROR', 'multipart body ends without its closing boundary');
    if (!lineStart(at)) throw httpError('VALIDATION_ERROR', 'the multipart boundary appears inside a part');
  }
}

/** The parts a parser gave back, when they are all the body delimits and each has a name. */
function checked(parts: Part[], expected: number): Part[] {
  if (parts.length !== expected) throw httpError('VALIDATION_ERROR', 'malformed multipart part');
  if (parts.some((p) => !p.name)) throw httpError('VALIDATION_ERROR', 'multipart part without a name');
  return parts;
}

/**
 * A parser on uWebSockets.js's `getParts`.
 *
 * @example
 * const parse = nativeParser(uws.getParts);
 * const parts = parse(body, boundaryOf(headers['content-type'])!);
 */
export function nativeParser(getParts: GetParts): PartsParser {
  return (whole, boundary) => {
    const { body, parts } = frame(whole, boundary);
    if (parts === 0) return [];
    // It misreads a quoted boundary, an upper-case type or a parameter before the boundary: it gets a plain one.
    const fields = getParts(body, `multipart/form-data; boundary=${boundary}`) ?? [];
    return checked(
      fields.map((f) => ({ name: f.name, filename: f.filename, contentType: f.type, data: Buffer.from(f.data) })),
      parts,
    );
  };
}

/**
 * busboy reads a body already in memory within a few turns of the event loop;
 * on some malformed ones (a file part without data, then a delimiter followed
 * by a broken header) it never finishes nor fails. Past this, it has stalled.
 */
const BUSBOY_STALL_MS = 1_000;

/**
 * The parts of a complete body, read by busboy.
 *
 * @example
 * const parts = await busboyParts(body, boundaryOf(headers['content-type'])!);
 */
export function busboyParts(whole: Buffer, boundary: string): Promise<Part[]> {
  return new Promise((resolve, reject) => {
    const { body, parts: expected } = frame(whole, boundary);
    if (expected === 0) return resolve([]);
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: { 'content-type': `multipart/form-data; boundary="${boundary}"` },
        // No field truncation (its default is 1 MiB): the body size is the limit. Names as sent, in UTF-8.
        limits: { fieldSize: Infinity },
        preservePath: true,
        defParamCharset: 'utf8',
      });
    } catch (error) {
      throw httpError('VALIDATION_ERROR', `malformed multipart content type: ${(error as Error).message}`);
    }
    const parts: Part[] = [];
    const fail = (message: string): void => {
      clearTimeout(stalled);
      bb.destroy();
      reject(httpError('VALIDATION_ERROR', `malformed multipart body: ${message}`));
    };
    const stalled = setTimeout(() => fail('it could not be read to its end'), BUSBOY_STALL_MS);
    bb.on('field', (name, value, info) => parts.push({ name, filename: undefined, contentType: info.mimeType, data: Buffer.from(value) }));
    bb.on('file', (name, stream, info) => {
      const part: Part = { name, filename: info.filename, contentType: info.mimeType, data: Buffer.alloc(0) };
      parts.push(part);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => (part.data = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
      stream.on('error', () => {}); // told to the form as well
    });
    bb.on('error', (error: Error) => fail(error.message));
    bb.on('close', () => {
      clearTimeout(stalled);
      try {
        resolve(checked(parts, expected));
      } catch (error) {
        reject(error);
      }
    });
    bb.end(body);
  });
}

/**
 * Lets a transport read the parts of a multipart request before handing it to
 * the front: with `native`, lazily when the front asks; otherwise with busboy,
 * now. Nothing to wait for (undefined) unless busboy reads.
 *
 * @example
 * const reading = readPartsAhead(request, native);
 * const res = await (reading ? reading.then(() => front.handle(request)) : front.handle(request));
 */
export function readPartsAhead(req: HttpRequest & MultipartSource, native?: PartsParser): Promise<void> | undefined {
  const boundary = boundaryOf(req.headers['content-type'] ?? '');
  if (boundary === undefined) return undefined;
  if (native) {
    req.parts = () => native(req.body, boundary);
    return undefined;
  }
  return busboyParts(req.body, boundary).then(
    (parts) => void (req.parts = () => parts),
    (error: unknown) =>
      void (req.parts = () => {
        throw error;
      }),
  );
}

let handedOver: PartsParser | null | undefined;

/** The parser for requests handed to the front without their parts read: `getParts`, when this build has it. */
function handedOverParser(): PartsParser | null {
  if (handedOver === undefined) {
    try {
      const getParts = (createRequire(import.meta.url)('uWebSockets.js') as { getParts?: GetParts }).getParts;
      handedOver = typeof getParts === 'function' ? nativeParser(getParts) : null;
    } catch {
      handedOver = null;
    }
  }
  return handedOver;
}

/** The parts of a multipart request: as its transport read them, or with `getParts`. */
export function partsOf(req: HttpRequest & MultipartSource, boundary: string): Part[] {
  if (req.parts) return req.parts();
  const parse = handedOverParser();
  if (!parse) throw httpError('UNSUPPORTED_MEDIA_TYPE', 'this multipart body reached the front unread (readPartsAhead), and uWebSockets.js has no getParts here');
  return parse(req.body, boundary);
}
