/**
 * Checked filters ({@link Clause}) and find options as PostgreSQL SQL over
 * the `svc_docdb` table, for {@link PgDocBackend}. Values are always bound
 * (`$n`, JSON values as `$n::jsonb`); field paths are written as literals,
 * `doc #> ARRAY['a','b']` (quotes doubled), because an expression index
 * serves a query only when the query's expression is the index's.
 *
 * A field is `J = doc #> path` (JSONB, SQL NULL when missing), and the type
 * brackets come from JSONB itself: `'5' = '"5"'` is false, numbers compare
 * numerically (`1 = 1.0`), every test is guarded by `jsonb_typeof(J)` where
 * types could mix. Strings compare as text `COLLATE "C"` (code point order,
 * whatever the database's collation). A field holding an array matches a
 * scalar through containment (`J @> '[x]'`, one level), an object or array
 * value through `jsonb_array_elements` (under a CASE, as PostgreSQL may
 * evaluate an AND's terms in any order). `_id` is the `id` column
 * (`COLLATE "C"`). Negations are `NOT coalesce(…, false)`.
 *
 * Index use: the value index is `(db, col, (doc #> path))` for the documents
 * that have the path, the arrays index `(db, col)` for those holding an
 * array there; an equality is `J = $v OR (jsonb_typeof(J) = 'array' AND
 * J @> $a)`, a BitmapOr of the two (PostgreSQL's planner, unlike SQLite's,
 * proves partial-index predicates inside OR arms and has statistics).
 */
import { type CheckedFind, type Clause, type CompareOp, type FieldClause, type JsonValue, matchClause } from '../../actors/data/index.ts';

/** Positional parameters of one statement. */
class PgParams {
  readonly values: unknown[] = [];
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** `ARRAY['a','b']`: the text[] literal of a path. */
function pgPath(path: readonly string[]): string {
  return `ARRAY[${path.map(sqlString).join(',')}]`;
}

/**
 * The JSONB at a path (NULL when missing), as an index on it is written.
 *
 * @example
 * jsonAt(['profile', 'city']) // "(doc #> ARRAY['profile','city'])"
 */
export function jsonAt(path: readonly string[]): string {
  return `(doc #> ${pgPath(path)})`;
}

function textAt(path: readonly string[]): string {
  return `(doc #>> ${pgPath(path)})`;
}

const SQL_OP: Record<CompareOp, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' };

function typeOf(j: string): string {
  return `jsonb_typeof(${j})`;
}

/** Elements of `j` when it is an array (no rows otherwise, and never an error). */
function elements(j: string, condition: string): string {
  return `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN ${typeOf(j)} = 'array' THEN ${j} END) AS e(v) WHERE ${condition})`;
}

function not(sql: string): string {
  return `NOT coalesce(${sql}, false)`;
}

function equals(path: readonly string[], x: JsonValue, p: PgParams): string {
  const J = jsonAt(path);
  if (x === null) return `(${J} IS NULL OR ${typeOf(J)} = 'null' OR (${typeOf(J)} = 'array' AND ${J} @> '[null]'::jsonb))`;
  const v = p.add(JSON.stringify(x), '::jsonb');
  if (typeof x !== 'object') return `(${J} = ${v} OR (${typeOf(J)} = 'array' AND ${J} @> ${p.add(JSON.stringify([x]), '::jsonb')}))`;
  return `(${J} = ${v} OR (${typeOf(J)} = 'array' AND ${elements(J, `e.v = ${v}`)}))`;
}

function oneOf(path: readonly string[], xs: JsonValue[], p: PgParams): string {
  const J = jsonAt(path);
  const arms: string[] = [];
  const scalars = xs.filter((x) => x !== null && typeof x !== 'object');
  if (scalars.length) {
    const any = p.add(scalars.map((x) => JSON.stringify(x)), '::jsonb[]');
    const contained = p.add(scalars.map((x) => JSON.stringify([x])), '::jsonb[]');
    arms.push(`${J} = ANY(${any})`, `(${typeOf(J)} = 'array' AND ${J} @> ANY(${contained}))`);
  }
  for (const x of xs) if (x === null || typeof x === 'object') arms.push(equals(path, x, p));
  return arms.length ? `(${arms.join(' OR ')})` : 'FALSE';
}

function compare(path: readonly string[], op: CompareOp, x: number | string, p: PgParams): string {
  const J = jsonAt(path);
  const o = SQL_OP[op];
  if (typeof x === 'number') {
    const v = p.add(JSON.stringify(x), '::jsonb');
    return `((${typeOf(J)} = 'number' AND ${J} ${o} ${v}) OR (${typeOf(J)} = 'array' AND ${elements(J, `jsonb_typeof(e.v) = 'number' AND e.v ${o} ${v}`)}))`;
  }
  const v = p.add(x, '::text');
  return `((${typeOf(J)} = 'string' AND ${textAt(path)} COLLATE "C" ${o} ${v}) OR (${typeOf(J)} = 'array' AND ${elements(J, `jsonb_typeof(e.v) = 'string' AND (e.v #>> '{}') COLLATE "C" ${o} ${v}`)}))`;
}

function idClause(c: FieldClause, p: PgParams): string {
  const strings = (xs: JsonValue[]) => xs.filter((x): x is string => typeof x === 'string');
  switch (c.op) {
    case '$eq':
      return typeof c.value === 'string' ? `id = ${p.add(c.value, '::text')}` : 'FALSE';
    case '$ne':
      return typeof c.value === 'string' ? `id <> ${p.add(c.value, '::text')}` : 'TRUE';
    case '$in': {
      const xs = strings(c.value);
      return xs.length ? `id = ANY(${p.add(xs, '::text[]')})` : 'FALSE';
    }
    case '$nin': {
      const xs = strings(c.value);
      return xs.length ? `NOT (id = ANY(${p.add(xs, '::text[]')}))` : 'TRUE';
    }
    case '$exists':
      return c.value ? 'TRUE' : 'FALSE';
    default:
      return typeof c.value === 'string' ? `id ${SQL_OP[c.op]} ${p.add(c.value, '::text')}` : 'FALSE';
  }
}

/** The WHERE condition of a clause. */
function pgWhere(c: Clause, p: PgParams): string {
  if (c.kind === 'and') return c.clauses.length ? `(${c.clauses.map((x) => pgWhere(x, p)).join(' AND ')})` : 'TRUE';
  if (c.kind === 'or') return `(${c.clauses.map((x) => pgWhere(x, p)).join(' OR ')})`;
  if (c.path[0] === '_id') return c.path.length === 1 ? idClause(c, p) : matchClause({}, c) ? 'TRUE' : 'FALSE';
  const { path } = c;
  switch (c.op) {
    case '$eq':
      return equals(path, c.value, p);
    case '$ne':
      return not(equals(path, c.value, p));
    case '$in':
      return oneOf(path, c.value, p);
    case '$nin':
      return not(oneOf(path, c.value, p));
    case '$exists':
      return `${jsonAt(path)} IS ${c.value ? 'NOT ' : ''}NULL`;
    default:
      return compare(path, c.op, c.value, p);
  }
}

/** ORDER BY terms: per key its bracket (Mongo's order of types), numbers and booleans as JSONB, strings in "C" order; `id` last. */
function pgOrderBy(sort: CheckedFind['sort']): string {
  const terms: string[] = [];
  for (const [path, dir] of sort) {
    const d = dir === 1 ? 'ASC' : 'DESC';
    if (path[0] === '_id') {
      if (path.length === 1) terms.push(`id ${d}`);
      continue;
    }
    const J = jsonAt(path);
    terms.push(
      `CASE ${typeOf(J)} WHEN 'number' THEN 1 WHEN 'string' THEN 2 WHEN 'object' THEN 3 WHEN 'array' THEN 4 WHEN 'boolean' THEN 5 ELSE 0 END ${d}`,
      `CASE WHEN ${typeOf(J)} IN ('number', 'boolean') THEN ${J} END ${d}`,
      `(CASE WHEN ${typeOf(J)} = 'string' THEN ${textAt(path)} END) COLLATE "C" ${d}`,
    );
  }
  terms.push('id ASC');
  return terms.join(', ');
}

/**
 * `SELECT <columns> FROM svc_docdb …` for a find, and its parameters.
 *
 * @example
 * const { sql, values } = pgSelect(validateFilter({ email }), validateFind({ limit: 1 }), 'app', 'users');
 */
export function pgSelect(clause: Clause, find: CheckedFind, db: string, col: string, columns = 'id, doc', suffix = ''): { sql: string; values: unknown[] } {
  const p = new PgParams();
  const scope = `db = ${p.add(db, '::text')} AND col = ${p.add(col, '::text')}`;
  const cond = pgWhere(clause, p);
  const page = `ORDER BY ${pgOrderBy(find.sort)} LIMIT ${p.add(find.limit === 0 ? null : find.limit, '::bigint')} OFFSET ${p.add(find.skip, '::bigint')}`;
  return { sql: `SELECT ${columns} FROM svc_docdb WHERE ${scope} AND ${cond} ${page}${suffix}`, values: p.values };
}
