/**
 * The shared half of the document stores (`kvstore(dbName, 'docdb')`): what a
 * filter, an update, a document and find options may hold, checked once here
 * so that only the operators below ever reach SQLite, PostgreSQL or MongoDB;
 * the reference matcher (`matches`, `compileFilter`) and updater
 * (`applyUpdate`) the SQL backends' translations are tested against, and that
 * code filtering plain objects in memory (`findNodes`) can use; and `_id`s.
 *
 * Why one checker: the three backends must answer alike, and the cheapest way
 * to keep a translation honest is to give it a small, closed language. A
 * filter is parsed into a {@link Clause} tree (field conditions under
 * `and` / `or`); the SQL backends translate that tree, the MongoDB backend
 * sends the (checked) filter as given.
 *
 * The language (Mongo's meaning for each):
 * - `{ 'a.b': value }` / `$eq` — a dotted path walks nested objects (a path
 *   through an array finds nothing: `a.0`, `items.sku` are not part of the
 *   contract — MongoDB and PostgreSQL would index into the array, SQLite does
 *   not, so do not rely on either). A field holding an array matches when the
 *   array equals the value or one of its elements does (one level, like
 *   Mongo). `null` also matches a missing field. Object equality compares
 *   keys in order (PostgreSQL's JSONB alone ignores key order: do not rely on it).
 * - `$ne`, `$nin`: the negations, so a missing field matches (`$ne: null` is
 *   "present and not null").
 * - `$gt $gte $lt $lte`: numbers with numbers, strings with strings (by code
 *   point, which is UTF-8 byte order: SQLite's BINARY, PostgreSQL's "C",
 *   MongoDB's simple collation); any other operand is refused. An array field
 *   matches when one element does.
 * - `$in`, `$nin`: an array of values; `$exists`: a boolean.
 * - `$and`, `$or`: non-empty arrays of filters, at the top or nested.
 * Anything else — `$regex`, `$where`, `$not`, `$elemMatch`, … — is
 * `INVALID_QUERY` naming the operator. So is a filter value that is
 * `undefined` (`{ email: input.email }` with no email must not match everything).
 *
 * Values (docdb-values.ts): JSON only, refused otherwise with `INVALID_QUERY`
 * naming the path; `_id`s are strings, made ObjectId-shaped when not given.
 *
 * Updates: `$set` (creating objects along a dotted path; a path through a
 * non-object — a number, null, an array — is `INVALID_QUERY`) and `$unset`
 * (a missing path is no change); `_id` cannot be set or unset; two paths of
 * one update may not overlap (`a` and `a.b`).
 */
import { checkValue, describe, invalid, isPlainObject, parsePath, type JsonValue } from './docdb-values.ts';
import type { Document, Filter, FindOptions, Update } from './kvstore-types.ts';

export { checkBatch, checkDocument, checkValue, isPlainObject, newId, parsePath } from './docdb-values.ts';
export type { JsonValue } from './docdb-values.ts';

export type CompareOp = '$gt' | '$gte' | '$lt' | '$lte';

/** A checked filter: field conditions under `and` / `or`. `path` is the dotted field split at its dots. */
export type Clause =
  | { kind: 'and'; clauses: Clause[] }
  | { kind: 'or'; clauses: Clause[] }
  | { kind: 'field'; path: string[]; op: '$eq' | '$ne'; value: JsonValue }
  | { kind: 'field'; path: string[]; op: CompareOp; value: number | string }
  | { kind: 'field'; path: string[]; op: '$in' | '$nin'; value: JsonValue[] }
  | { kind: 'field'; path: string[]; op: '$exists'; value: boolean };

export type FieldClause = Extract<Clause, { kind: 'field' }>;

/** A checked update: paths already split. */
export interface CheckedUpdate {
  set: [path: string[], value: JsonValue][];
  unset: string[][];
}

/** Checked find options: `limit` 0 means no limit; `sort` in key order, `_id` last as the tie-break unless named. */
export interface CheckedFind {
  limit: number;
  skip: number;
  sort: [path: string[], direction: 1 | -1][];
}

/** Operators a field condition may use. */
const FIELD_OPS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists']);


/**
 * The filter as a {@link Clause} tree, or `INVALID_QUERY` naming what is wrong.
 *
 * @example
 * validateFilter({ age: { $gte: 18 }, $or: [{ role: 'admin' }, { 'org.owner': true }] });
 */
export function validateFilter(filter: Filter): Clause {
  const budget = { left: MAX_FILTER_TERMS };
  return parseFilter(filter, 0, budget);
}

/**
 * A filter holds at most this many terms (conditions, and values of `$in` /
 * `$nin`): past it, `INVALID_QUERY`. A filter is often built from a request;
 * without a cap one request could hold a SQLite thread (or a PostgreSQL
 * backend) for seconds, and its statement could cost megabytes in the cache.
 */
export const MAX_FILTER_TERMS = 256;
/** Filters nest at most this deep (`$and` / `$or` inside each other). */
const MAX_FILTER_DEPTH = 16;

function spend(budget: { left: number }, n: number): void {
  budget.left -= n;
  if (budget.left < 0) invalid(`the filter has more than ${MAX_FILTER_TERMS} terms (conditions and $in / $nin values): split the query`);
}

function parseFilter(filter: unknown, depth: number, budget: { left: number }): Clause {
  if (!isPlainObject(filter)) invalid('a filter is a plain object');
  if (depth > MAX_FILTER_DEPTH) invalid(`the filter is nested deeper than ${MAX_FILTER_DEPTH} levels`);
  const clauses: Clause[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key.startsWith('$')) {
      if (key !== '$and' && key !== '$or') invalid(`unknown operator ${key} in the filter (allowed at the top: $and, $or)`);
      if (!Array.isArray(value) || value.length === 0) invalid(`${key} takes a non-empty array of filters`);
      clauses.push({ kind: key === '$and' ? 'and' : 'or', clauses: value.map((f) => parseFilter(f, depth + 1, budget)) });
      continue;
    }
    const path = parsePath(key);
    if (value === undefined) invalid(`the filter's value for ${key} is undefined`);
    if (isPlainObject(value) && Object.keys(value).some((k) => k.startsWith('$'))) {
      for (const op of Object.keys(value)) {
        const operand = value[op];
        spend(budget, Array.isArray(operand) ? Math.max(1, operand.length) : 1);
        clauses.push(fieldClause(path, key, op, operand));
      }
    } else {
      spend(budget, 1);
      clauses.push({ kind: 'field', path, op: '$eq', value: checkValue(value, key) });
    }
  }
  return clauses.length === 1 ? (clauses[0] as Clause) : { kind: 'and', clauses };
}

function fieldClause(path: string[], key: string, op: string, operand: unknown): Clause {
  if (!op.startsWith('$')) invalid(`${key}: an object mixing operators and fields (${op}); compare with a plain object instead`);
  if (!FIELD_OPS.has(op)) invalid(`unknown operator ${op} on ${key} (allowed: ${[...FIELD_OPS].join(' ')})`);
  if (operand === undefined) invalid(`${op} on ${key} is undefined`);
  switch (op) {
    case '$eq':
    case '$ne':
      return { kind: 'field', path, op, value: checkValue(operand, `${key}.${op}`) };
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      if (typeof operand === 'number' && Number.isFinite(operand)) return { kind: 'field', path, op, value: operand === 0 ? 0 : operand };
      if (typeof operand === 'string') return { kind: 'field', path, op, value: checkValue(operand, `${key}.${op}`) as string };
      return invalid(`${op} on ${key} compares with a number or a string, not ${describe(operand)}`);
    case '$in':
    case '$nin':
      if (!Array.isArray(operand)) invalid(`${op} on ${key} takes an array`);
      return { kind: 'field', path, op, value: operand.map((v, i) => checkValue(v, `${key}.${op}.${i}`)) };
    default:
      if (typeof operand !== 'boolean') invalid(`$exists on ${key} takes true or false`);
      return { kind: 'field', path, op: '$exists', value: operand };
  }
}

/**
 * The update checked: only `$set` and `$unset`, at least one of them, no `_id`,
 * no overlapping paths; `$set` values JSON.
 *
 * @example
 * validateUpdate({ $set: { 'profile.name': 'Ada' }, $unset: { draft: '' } });
 */
export function validateUpdate(update: Update): CheckedUpdate {
  if (!isPlainObject(update)) invalid('an update is a plain object of $set / $unset');
  const keys = Object.keys(update);
  if (keys.length === 0) invalid('an empty update: give $set or $unset (a replacement document is not an update; use set())');
  const out: CheckedUpdate = { set: [], unset: [] };
  const seen: string[][] = [];
  for (const key of keys) {
    if (key !== '$set' && key !== '$unset') {
      invalid(key.startsWith('$') ? `unknown update operator ${key} (allowed: $set, $unset)` : `a replacement document is not an update (field ${key}): use $set, or set()`);
    }
    const fields = (update as Record<string, unknown>)[key];
    if (!isPlainObject(fields)) invalid(`${key} takes an object of field paths`);
    for (const field of Object.keys(fields)) {
      const path = parsePath(field, key);
      if (path[0] === '_id') invalid(`${key} cannot change _id`);
      for (const other of seen) {
        const n = Math.min(other.length, path.length);
        if (other.slice(0, n).every((s, i) => s === path[i])) invalid(`${key}: ${field} overlaps ${other.join('.')} in the same update`);
      }
      seen.push(path);
      if (key === '$set') {
        if (fields[field] === undefined) invalid(`$set.${field} is undefined (use $unset to remove a field)`);
        out.set.push([path, checkValue(fields[field], field)]);
      } else {
        out.unset.push(path);
      }
    }
  }
  return out;
}

/**
 * The document after the update (a new object; `doc` is not changed). A
 * `$set` through a non-object is `INVALID_QUERY`.
 *
 * @example
 * applyUpdate({ _id: 'a', n: 1 }, { $set: { 'x.y': 2 } }) // { _id: 'a', n: 1, x: { y: 2 } }
 */
export function applyUpdate<D extends Document>(doc: D, update: Update | CheckedUpdate): D {
  const checked = 'set' in update && Array.isArray(update.set) ? (update as CheckedUpdate) : validateUpdate(update as Update);
  const root: Record<string, unknown> = { ...doc };
  for (const [path, value] of checked.set) {
    let node = root;
    for (let i = 0; i < path.length - 1; i++) {
      const seg = path[i] as string;
      // Own fields only: `constructor.q` must not find Object.prototype's constructor on the way.
      const next = Object.hasOwn(node, seg) ? node[seg] : undefined;
      if (next === undefined) node[seg] = {};
      else if (isPlainObject(next)) node[seg] = { ...next };
      else invalid(`cannot set ${path.join('.')}: ${path.slice(0, i + 1).join('.')} holds ${Array.isArray(next) ? 'an array' : next === null ? 'null' : `a ${typeof next}`}, not an object`);
      node = node[seg] as Record<string, unknown>;
    }
    node[path[path.length - 1] as string] = value;
  }
  for (const path of checked.unset) {
    let node = root;
    const chain: Record<string, unknown>[] = [root];
    let reachable = true;
    for (let i = 0; i < path.length - 1 && reachable; i++) {
      const next = Object.hasOwn(node, path[i] as string) ? node[path[i] as string] : undefined;
      if (!isPlainObject(next)) reachable = false;
      else node = next;
      chain.push(node);
    }
    if (!reachable || !Object.hasOwn(node, path[path.length - 1] as string)) continue;
    // Copy the objects along the path (they may be shared with `doc`), then delete.
    let parent = root;
    for (let i = 0; i < path.length - 1; i++) {
      const copy = { ...(chain[i + 1] as Record<string, unknown>) };
      parent[path[i] as string] = copy;
      parent = copy;
    }
    delete parent[path[path.length - 1] as string];
  }
  return root as D;
}

/**
 * Find options checked: non-negative integer `limit` (0: none) and `skip`;
 * `sort` of dotted paths to 1 or -1.
 *
 * @example
 * validateFind({ sort: { 'profile.age': -1 }, limit: 10 });
 */
export function validateFind(options: FindOptions = {}): CheckedFind {
  if (!isPlainObject(options)) invalid('find options are a plain object');
  const count = (name: 'limit' | 'skip'): number => {
    const v = options[name];
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) invalid(`${name} is a non-negative integer`);
    return v;
  };
  const sort: CheckedFind['sort'] = [];
  if (options.sort !== undefined) {
    if (!isPlainObject(options.sort)) invalid('sort is an object of field paths to 1 or -1');
    for (const field of Object.keys(options.sort)) {
      const dir = options.sort[field];
      if (dir !== 1 && dir !== -1) invalid(`sort on ${field} is 1 or -1`);
      sort.push([parsePath(field, 'sort'), dir]);
    }
  }
  return { limit: count('limit'), skip: count('skip'), sort };
}


// ---- the reference matcher -----------------------------------------------------------------

const MISSING: unique symbol = Symbol('missing');
type Resolved = unknown | typeof MISSING;

/** The value at `path`, walking plain objects only. */
function resolvePath(doc: unknown, path: readonly string[]): Resolved {
  let node: unknown = doc;
  for (const seg of path) {
    if (!isPlainObject(node) || !Object.prototype.hasOwnProperty.call(node, seg)) return MISSING;
    node = node[seg];
    if (node === undefined) return MISSING;
  }
  return node;
}

/** Deep equality of JSON values: types strict, arrays in order, object keys in order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson(a[k], b[k]));
  }
  return false;
}

/**
 * Strings by code point (UTF-8 byte order), not by UTF-16 unit as `<` does.
 *
 * @example
 * compareStrings('\uffff', '𝄞') < 0 // true, though '\uffff' > '𝄞'
 */
export function compareStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (code points above U+FFFF) sort after U+E000–U+FFFF.
    if (x >= 0xd800) x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
    if (y >= 0xd800) y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    return x - y;
  }
  return a.length - b.length;
}

function equalsAt(v: Resolved, x: JsonValue): boolean {
  if (x === null) return v === MISSING || v === null || (Array.isArray(v) && v.includes(null));
  if (v === MISSING) return false;
  return sameJson(v, x) || (Array.isArray(v) && v.some((e) => sameJson(e, x)));
}

function compares(v: Resolved, op: CompareOp, x: number | string): boolean {
  const test = (e: unknown): boolean => {
    if (typeof e !== typeof x) return false;
    const c = typeof x === 'string' ? compareStrings(e as string, x) : (e as number) - x;
    return op === '$gt' ? c > 0 : op === '$gte' ? c >= 0 : op === '$lt' ? c < 0 : c <= 0;
  };
  if (v === MISSING) return false;
  return test(v) || (Array.isArray(v) && v.some(test));
}

/**
 * Whether `doc` (with its `_id`) satisfies a checked clause.
 *
 * @example
 * matchClause({ _id: 'a', n: 2 }, validateFilter({ n: { $gt: 1 } })) // true
 */
export function matchClause(doc: Document, clause: Clause): boolean {
  switch (clause.kind) {
    case 'and':
      return clause.clauses.every((c) => matchClause(doc, c));
    case 'or':
      return clause.clauses.some((c) => matchClause(doc, c));
    default: {
      const v = resolvePath(doc, clause.path);
      switch (clause.op) {
        case '$eq':
          return equalsAt(v, clause.value);
        case '$ne':
          return !equalsAt(v, clause.value);
        case '$in':
          return clause.value.some((x) => equalsAt(v, x));
        case '$nin':
          return !clause.value.some((x) => equalsAt(v, x));
        case '$exists':
          return (v !== MISSING) === clause.value;
        default:
          return compares(v, clause.op, clause.value);
      }
    }
  }
}

/**
 * A predicate for many documents: the filter checked once.
 *
 * @example
 * const adults = compileFilter({ age: { $gte: 18 } });
 * people.filter(adults);
 */
export function compileFilter(filter: Filter): (doc: Document) => boolean {
  const clause = validateFilter(filter);
  return (doc) => matchClause(doc, clause);
}

/**
 * Whether `doc` matches `filter`, as every docdb backend decides it.
 *
 * @example
 * matches({ _id: 'a', tags: ['x', 'y'] }, { tags: 'x' }) // true
 */
export function matches(doc: Document, filter: Filter): boolean {
  return matchClause(doc, validateFilter(filter));
}

/** The sort bracket of a value (Mongo's order): missing and null, numbers, strings, objects, arrays, booleans. */
function sortBracket(v: Resolved): number {
  if (v === MISSING || v === null) return 0;
  if (typeof v === 'number') return 1;
  if (typeof v === 'string') return 2;
  if (Array.isArray(v)) return 4;
  if (typeof v === 'boolean') return 5;
  return 3;
}

/**
 * A comparator for documents in `find`'s order: the sort keys by bracket,
 * then numbers numerically, strings by code point, false before true; then
 * `_id` ascending. Objects and arrays are ordered by bracket only (the
 * backends differ within it: do not sort on them).
 *
 * @example
 * docs.sort(compareDocuments(validateFind({ sort: { age: -1 } }).sort));
 */
export function compareDocuments(sort: CheckedFind['sort']): (a: Document, b: Document) => number {
  return (a, b) => {
    for (const [path, dir] of sort) {
      const x = resolvePath(a, path);
      const y = resolvePath(b, path);
      let c = sortBracket(x) - sortBracket(y);
      if (c === 0 && typeof x === 'number') c = x - (y as number);
      else if (c === 0 && typeof x === 'string') c = compareStrings(x, y as string);
      else if (c === 0 && typeof x === 'boolean') c = Number(x) - Number(y);
      if (c !== 0) return c * dir;
    }
    return compareStrings(String(a._id), String(b._id));
  };
}
