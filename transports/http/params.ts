/**
 * Where an endpoint's fields come from: path
 * parameters first, then uploaded files, then — for GET — the query string,
 * then the JSON body. Path, query and multipart text values are strings on
 * the wire and are converted to the declared types, strictly (`1.5` is not an
 * integer, `0x10` not a number, an empty string is nothing); JSON bodies are
 * validated as they are, never converted.
 *
 * Names the client chose that the endpoint does not declare — body keys, form
 * parts, GET query parameters — are collected as `unknown` (the front refuses
 * or warns: `UnknownFields`). Query parameters starting with `_` are never
 * fields (svc reserves the prefix), so cache-busters like `?_=1712345` pass;
 * path parameters are the route's own, and the query string of other
 * methods is not read at all.
 */
import type { TSchema } from 'typebox';
import { mayHoldReservedKey, RESERVED_KEY, reservedKeyPath } from '../../kernel/index.ts';
import { type HttpError, httpError } from './errors.ts';
import { boundaryOf, type MultipartSource, partsOf } from './multipart.ts';
import type { EndpointRoute } from './router.ts';
import type { HttpRequest } from './types.ts';

/** Fields the runtime fills itself: never taken from the request. */
export const RUNTIME_FIELDS = new Set(['headers', 'request']);

const INTEGER = /^-?\d+$/;
const NUMBER = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

type Json = { type?: string | string[]; anyOf?: TSchema[]; oneOf?: TSchema[]; items?: TSchema; const?: unknown; enum?: unknown[] };

/**
 * A string from the URL or a form as the declared type, when it is a clean
 * spelling of one; otherwise the string itself, which then fails validation
 * with a clear message.
 */
export function convertString(schema: TSchema | undefined, raw: string): unknown {
  const s = schema as Json | undefined;
  if (!s) return raw;
  for (const alt of s.anyOf ?? s.oneOf ?? []) {
    const v = convertString(alt, raw);
    if (v !== raw || (alt as Json).type === 'string') return v;
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  for (const type of types) {
    if (type === 'integer' && INTEGER.test(raw)) return Number(raw);
    if (type === 'number' && NUMBER.test(raw) && Number.isFinite(Number(raw))) return Number(raw);
    if (type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true';
    if (type === 'null' && raw === 'null') return null;
  }
  if (s.const !== undefined && typeof s.const !== 'string' && String(s.const) === raw) return s.const;
  return raw;
}

function decodeSegment(value: string, name: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw httpError('VALIDATION_ERROR', `path parameter ${name} is not valid percent-encoding`);
  }
}

/**
 * Content types read as a JSON body. Form-urlencoded is among them because
 * `curl -d '{…}'` sends it; anything else (XML, binary…) is 415.
 */
function readsAsJson(contentType: string): boolean {
  if (contentType === 'application/json') return true;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === '' || type === 'application/json' || type === 'text/plain' || type === 'application/x-www-form-urlencoded' || type.endsWith('+json');
}

/** `RESERVED_KEY` (400) naming where the key is. */
export function reservedKey(path: string): HttpError {
  return httpError('RESERVED_KEY', `${path}: a key named ${RESERVED_KEY} cannot be taken (svc would lose or rename it: it names the prototype of a JavaScript object); use another name`, { path });
}

/** The parsed JSON body: an object, `{}` when empty; a `__proto__` key anywhere in it is `RESERVED_KEY`. */
export function jsonBody(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  let parsed: unknown;
  const text = body.toString('utf8');
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw httpError('INVALID_JSON', `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw httpError('VALIDATION_ERROR', 'the body must be a JSON object of fields');
  }
  // `__proto__` would be renamed between threads, or lost in a copy: refused, never changed (kernel/reserved-key.ts).
  const reserved = mayHoldReservedKey(text) ? reservedKeyPath(parsed, 'body') : undefined;
  if (reserved !== undefined) throw reservedKey(reserved);
  return parsed as Record<string, unknown>;
}

export interface Collected {
  fields: Record<string, unknown>;
  /** For `/walker/<Name>/{node_id}`. */
  at: string | undefined;
  /** Names the client sent that the endpoint does not declare (none for an endpoint that takes any). */
  unknown: readonly string[];
}

const NONE: readonly string[] = Object.freeze([]);

/** The fields of one request for one route. */
export function collectFields(route: EndpointRoute, req: HttpRequest & MultipartSource, pathValues: Record<string, string>): Collected {
  const props = route.schema.properties as Record<string, TSchema>;
  const fields: Record<string, unknown> = {};
  // A declared name the client may not set (`headers`, an upload sent as JSON) is ignored, as always; an undeclared one is unknown.
  // Made only when there is one: nothing allocated on the common path.
  let unknown: string[] | undefined;
  const contentType = req.headers['content-type'] ?? '';
  const isGet = req.method === 'GET' || req.method === 'HEAD';
  // The common case — a JSON body (or none) on a route without files, not a GET — in one pass, no closure made.
  if (!isGet && req.parts === undefined && readsAsJson(contentType) && route.fileFields.length === 0) {
    let at: string | undefined;
    if (req.body.length > 0) {
      const body = jsonBody(req.body);
      for (const k in body) {
        if (Object.hasOwn(props, k)) {
          if (!RUNTIME_FIELDS.has(k)) fields[k] = body[k];
        } else if (!route.takesAny && !unknown?.includes(k)) (unknown ??= []).push(k);
      }
    }
    for (const name in pathValues) {
      const value = decodeSegment(pathValues[name] as string, name);
      if (route.spawnAt && name === 'node_id') at = value;
      else fields[name] = convertString(props[name], value);
    }
    return { fields, at, unknown: unknown ?? NONE };
  }
  const takes = (k: string) => Object.hasOwn(props, k) && !RUNTIME_FIELDS.has(k);
  const noteUnknown = (k: string) => {
    if (!route.takesAny && !Object.hasOwn(props, k) && !unknown?.includes(k)) (unknown ??= []).push(k);
  };
  let at: string | undefined;
  const boundary = boundaryOf(contentType);
  if (boundary) {
    for (const part of partsOf(req, boundary)) {
      if (!takes(part.name)) {
        noteUnknown(part.name);
        continue;
      }
      if (route.fileFields.includes(part.name)) {
        const maxBytes = (props[part.name] as { maxBytes?: unknown }).maxBytes;
        const size = part.path === undefined ? part.data.length : (part.size ?? 0);
        if (typeof maxBytes === 'number' && size > maxBytes) {
          throw httpError('PAYLOAD_TOO_LARGE', `the file ${part.name} is larger than its limit of ${maxBytes} bytes`, { field: part.name, max_bytes: maxBytes });
        }
        const file = { filename: part.filename ?? '', mimetype: part.contentType ?? 'application/octet-stream', size };
        // A file streamed to disk is handed over by its path (removed once the request is answered).
        fields[part.name] = part.path === undefined ? { ...file, data: new Uint8Array(part.data) } : { ...file, path: part.path };
      } else {
        fields[part.name] = convertString(props[part.name], part.data.toString('utf8'));
      }
    }
  } else if (/^multipart\//i.test(contentType)) {
    throw httpError('VALIDATION_ERROR', 'a multipart body needs a boundary in its Content-Type');
  } else if (!isGet && req.body.length > 0) {
    if (!readsAsJson(contentType)) throw httpError('UNSUPPORTED_MEDIA_TYPE', `cannot read a ${contentType.split(';')[0]} body: send application/json (or multipart/form-data for uploads)`);
    for (const [k, v] of Object.entries(jsonBody(req.body))) {
      if (takes(k) && !route.fileFields.includes(k)) fields[k] = v;
      else noteUnknown(k);
    }
  }

  if (isGet && req.query) {
    const query = new URLSearchParams(req.query);
    for (const k of new Set(query.keys())) {
      if (!takes(k) || route.fileFields.includes(k)) {
        if (!k.startsWith('_')) noteUnknown(k);
        continue;
      }
      const schema = props[k] as Json | undefined;
      if (schema?.type === 'array') fields[k] = query.getAll(k).map((v) => convertString(schema.items, v));
      else fields[k] = convertString(props[k], query.getAll(k).at(-1) as string);
    }
  }

  for (const [name, raw] of Object.entries(pathValues)) {
    const value = decodeSegment(raw, name);
    if (route.spawnAt && name === 'node_id') at = value;
    else fields[name] = convertString(props[name], value);
  }
  return { fields, at, unknown: unknown ?? NONE };
}
