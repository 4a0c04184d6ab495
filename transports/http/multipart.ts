/**
 * A small multipart/form-data parser over a complete body (the body size is
 * already bounded by the server's limit). Parts are slices of that body.
 */
import { httpError } from './errors.ts';

export interface Part {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  data: Buffer;
}

const MAX_PARTS = 256;

/** The boundary of a `multipart/form-data; boundary=…` content type, if it is one. */
export function boundaryOf(contentType: string): string | undefined {
  if (!/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/**
 * The parameters of a Content-Disposition value, by exact name (`name` is
 * never read out of `filename`); `filename*=utf-8''…` is decoded.
 */
function dispositionParams(header: string): Map<string, string> {
  const params = new Map<string, string>();
  const re = /;\s*([\w*.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/g;
  for (const m of header.matchAll(re)) {
    const key = (m[1] as string).toLowerCase();
    let value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '');
    if (key.endsWith('*')) {
      const ext = /^[\w-]*'[\w-]*'(.*)$/.exec(value);
      try {
        value = decodeURIComponent(ext ? (ext[1] as string) : value);
      } catch {
        continue;
      }
      params.set(key.slice(0, -1), value);
    } else if (!params.has(key)) params.set(key, value);
  }
  return params;
}

/**
 * @example
 * const parts = parseMultipart(body, boundaryOf(headers['content-type'])!)
 */
export function parseMultipart(body: Buffer, boundary: string): Part[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) throw httpError('VALIDATION_ERROR', 'multipart body without its boundary');
  for (;;) {
    at += delimiter.length;
    if (body[at] === 0x2d && body[at + 1] === 0x2d) break; // closing "--"
    if (body[at] === 0x0d && body[at + 1] === 0x0a) at += 2;
    const headerEnd = body.indexOf('\r\n\r\n', at);
    if (headerEnd < 0) throw httpError('VALIDATION_ERROR', 'malformed multipart part');
    const headers = body.subarray(at, headerEnd).toString('utf8');
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd + 4);
    if (next < 0) throw httpError('VALIDATION_ERROR', 'multipart body ends without its closing boundary');
    const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? '';
    const params = dispositionParams(disposition);
    const name = params.get('name');
    if (!name) throw httpError('VALIDATION_ERROR', 'multipart part without a name');
    parts.push({
      name,
      filename: params.get('filename'),
      contentType: /^content-type:\s*(.*)$/im.exec(headers)?.[1]?.trim(),
      data: body.subarray(headerEnd + 4, next),
    });
    if (parts.length > MAX_PARTS) throw httpError('VALIDATION_ERROR', `more than ${MAX_PARTS} multipart parts`);
    at = next + 2;
  }
  return parts;
}
