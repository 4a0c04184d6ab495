/**
 * What a docdb document may hold, and the ids it gets: the value half of the
 * shared checker (query.ts holds filters and updates), apart so that each
 * stays a small room.
 *
 * Values: JSON only — string, finite number, boolean, null, array, plain
 * object, at most 100 levels deep (MongoDB's own limit). An `undefined` object
 * field is dropped (as `JSON.stringify` does); anything else (`undefined` in
 * an array, `NaN`, `Infinity`, a `Date`, a `Map`, a class instance, a bigint)
 * is `INVALID_QUERY` naming the field's path — refused rather than converted,
 * because a silent conversion (a Date to a string) would not compare or sort
 * as the caller meant on any backend. So are keys that are empty, start with
 * `$` or hold a `.` (paths could not reach them), and strings or keys holding
 * NUL or a lone surrogate (PostgreSQL cannot store them). A key (or a path
 * segment) `__proto__` is `RESERVED_KEY`: an assignment would make it the
 * copy's prototype and drop it, msgpackr renames it between threads, and a
 * query's path could reach `Object.prototype` through it — refused on every
 * backend rather than stored changed.
 *
 * Ids: a given `_id` must be a string; else one is made, 24 hex digits shaped
 * like MongoDB's ObjectId (see {@link newId}).
 */
import { randomBytes } from 'node:crypto';
import { RESERVED_KEY } from '../../kernel/index.ts';
import { kvstoreError } from './kvstore-errors.ts';
import type { Document } from './kvstore-types.ts';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** MongoDB's nesting limit, kept on every backend. */
export const MAX_DEPTH = 100;
/** A dotted field path has at most this many segments (documents nest at most {@link MAX_DEPTH} levels). */
export const MAX_PATH_SEGMENTS = 32;
/** NUL, or a lone surrogate. */
const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Throw `INVALID_QUERY` with this message.
 *
 * @example
 * if (!Array.isArray(list)) invalid('$in on tags takes an array');
 */
export function invalid(message: string): never {
  throw kvstoreError('INVALID_QUERY', message);
}

/**
 * An object literal (or `Object.create(null)`): not an array, a Date, a Map, a class instance.
 *
 * @example
 * isPlainObject({ a: 1 }) // true; isPlainObject(new Date()) // false
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * What a value is, for a message (never the value itself, which may be large or private).
 *
 * @example
 * describe(new Map()) // 'a Map'
 */
export function describe(value: unknown): string {
  if (value === undefined || value === null || typeof value === 'boolean' || typeof value === 'number') return String(value);
  if (typeof value === 'string') return 'a string';
  if (Array.isArray(value)) return 'an array';
  if (isPlainObject(value)) return 'an object';
  if (typeof value === 'bigint') return 'a bigint';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  const name = (value as object)?.constructor?.name;
  return name ? `a ${name}` : 'a non-plain object';
}

/** `RESERVED_KEY` naming where: `__proto__` would be lost in a copy or renamed between threads (kernel/reserved-key.ts). */
function reserved(path: string): never {
  throw kvstoreError('RESERVED_KEY', `${path}: a key named ${RESERVED_KEY} cannot be stored (it would be lost or renamed: it names the prototype of a JavaScript object); use another name`, { details: { path } });
}

function checkKey(key: string, where: string): void {
  if (key === RESERVED_KEY) reserved(`${where}.${key}`);
  if (key === '' || key.startsWith('$') || key.includes('.') || UNSTORABLE.test(key)) {
    invalid(`${where}: the key ${JSON.stringify(key)} is not allowed (keys are non-empty, do not start with $, hold no "." and no NUL or lone surrogate)`);
  }
}

/**
 * A JSON copy of `value` (object fields that are `undefined` dropped), or
 * `INVALID_QUERY` naming the first path that is not JSON.
 *
 * @example
 * checkValue({ at: new Date() }, 'doc') // throws INVALID_QUERY: "doc.at holds a Date …"
 */
export function checkValue(value: unknown, path: string, depth = 0): JsonValue {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    if (UNSTORABLE.test(value)) invalid(`${path} holds a NUL character or a lone surrogate, which cannot be stored`);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) invalid(`${path} holds ${value}: only finite numbers are JSON`);
    // -0 is 0 in JSON.
    return value === 0 ? 0 : value;
  }
  if (depth >= MAX_DEPTH) invalid(`${path} is nested deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) {
    const out: JsonValue[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      if (value[i] === undefined) invalid(`${path}.${i} is undefined: an array element must be a JSON value`);
      out[i] = checkValue(value[i], `${path}.${i}`, depth + 1);
    }
    return out;
  }
  if (isPlainObject(value)) {
    const out: { [key: string]: JsonValue } = {};
    for (const key of Object.keys(value)) {
      const v = value[key];
      if (v === undefined) continue;
      checkKey(key, path);
      out[key] = checkValue(v, `${path}.${key}`, depth + 1);
    }
    return out;
  }
  return invalid(`${path} holds ${describe(value)}: only JSON values (string, finite number, boolean, null, array, plain object) can be stored`);
}

/**
 * A document ready to store: a JSON copy, its `_id` a string (given, else
 * {@link newId}). A non-string `_id` is `INVALID_QUERY`.
 *
 * @example
 * const { id, doc } = checkDocument({ name: 'Ada' }); // doc = { _id: id, name: 'Ada' }
 */
export function checkDocument(input: Document, givenId?: string): { id: string; doc: Record<string, JsonValue> } {
  if (!isPlainObject(input)) invalid('a document is a plain object');
  const id = input._id === undefined ? (givenId ?? newId()) : input._id;
  if (typeof id !== 'string') invalid(`_id must be a string, not ${describe(id)}`);
  if (givenId !== undefined && id !== givenId) invalid(`the document's _id (${JSON.stringify(id)}) is not its key (${JSON.stringify(givenId)})`);
  checkValue(id, '_id');
  const { _id: _, ...rest } = input;
  return { id, doc: { _id: id, ...(checkValue(rest, 'doc') as Record<string, JsonValue>) } };
}

/**
 * The documents of an `insertMany`, checked before anything is written: each
 * as {@link checkDocument}; an `_id` given twice is `DUPLICATE_KEY`.
 *
 * @example
 * const batch = checkBatch([{ _id: 'a' }, { name: 'b' }]); // [{ id: 'a', … }, { id: '<new id>', … }]
 */
export function checkBatch(docs: Document[]): { id: string; doc: Record<string, JsonValue> }[] {
  if (!Array.isArray(docs)) invalid('insertMany takes an array of documents');
  const checked = docs.map((d) => checkDocument(d));
  const seen = new Set<string>();
  for (const { id } of checked) {
    if (seen.has(id)) throw kvstoreError('DUPLICATE_KEY', `_id ${JSON.stringify(id)} appears twice in the batch; nothing was inserted`);
    seen.add(id);
  }
  return checked;
}

/**
 * A dotted field path, split and checked (non-empty segments, no leading `$`, no NUL or lone surrogate).
 *
 * @example
 * parsePath('profile.city') // ['profile', 'city']
 */
export function parsePath(field: string, where = 'the filter'): string[] {
  if (typeof field !== 'string' || field === '') invalid(`${where}: a field path is a non-empty string`);
  const path = field.split('.');
  // As deep as a document may be: a longer $set path would write what no filter could read back.
  if (path.length > MAX_PATH_SEGMENTS) invalid(`${where}: the field path ${JSON.stringify(field.slice(0, 80))}… has more than ${MAX_PATH_SEGMENTS} segments`);
  for (const segment of path) {
    if (segment === RESERVED_KEY) reserved(`${where}: the field path ${JSON.stringify(field.slice(0, 80))}`);
    if (segment === '' || segment.startsWith('$') || UNSTORABLE.test(segment)) {
      invalid(`${where}: the field path ${JSON.stringify(field)} is not allowed (an empty segment, a segment starting with $, or NUL)`);
    }
  }
  return path;
}

// ---- ids --------------------------------------------------------------------------------

const PROCESS_RANDOM = randomBytes(5).toString('hex');
let counter = randomBytes(3).readUIntBE(0, 3);

/**
 * A new `_id`: 24 hex digits shaped like MongoDB's ObjectId (4 bytes of
 * seconds, 5 random bytes per process, a 3-byte counter), so ids sort by
 * creation time and the default `_id` order is roughly insertion order.
 *
 * @example
 * newId() // '6745c1e2a1b2c3d4e5000001'
 */
export function newId(): string {
  counter = (counter + 1) % 0x1000000;
  const seconds = Math.floor(Date.now() / 1000) >>> 0;
  return seconds.toString(16).padStart(8, '0') + PROCESS_RANDOM + counter.toString(16).padStart(6, '0');
}
