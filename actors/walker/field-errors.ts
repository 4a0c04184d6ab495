/**
 * Validation errors as sentences. TypeBox's errors for a value checked
 * against a `has` schema become one problem per field — `missing required
 * field "text"`, `field "done" must be a boolean`, `field "count" must be at
 * least 1`, `unknown field "titel"` — and the `SVC_ERR_INVALID_FIELDS` error
 * that carries them (400 `VALIDATION_ERROR` on the wire): its message is
 * `<Name>: ` and the sentences, its `details` one `{field, message}` per
 * problem, the message without the field's name (`must be a boolean`).
 */
import type { TSchema } from 'typebox';
import type { TLocalizedValidationError as TValidationError } from 'typebox/error';
import { Value } from 'typebox/value';
import type { SvcError } from '../../kernel/index.ts';
import { graphError } from './errors.ts';

/** One thing wrong with the fields. */
export interface FieldProblem {
  /** Where: `text`, `address.city`, `tags[2]`; empty for the fields as a whole. */
  field: string;
  /** What, without the field's name: `missing required field`, `must be a boolean`, `unknown field`. */
  message: string;
}

/** The message of a declared field that is not there. */
export const MISSING_FIELD = 'missing required field';
/** The message of a field that is not declared. */
export const UNKNOWN_FIELD = 'unknown field';

/** Sentences listed in an error's message; the rest are counted (all are in `details`). */
const LISTED = 10;
/** Longer field names (a client's own) are cut in sentences. */
const NAME_CHARS = 100;
/** Allowed values listed in a sentence at most. */
const VALUES_LISTED = 10;

/** A field's name in a sentence: in double quotes, escaped, cut when long. */
export function quoteField(field: string): string {
  return JSON.stringify(field.length > NAME_CHARS ? `${field.slice(0, NAME_CHARS)}…` : field);
}

/** A problem as a sentence naming its field: `field "done" must be a boolean`. */
export function sentence(p: FieldProblem): string {
  if (p.message === MISSING_FIELD || p.message === UNKNOWN_FIELD) return `${p.message} ${quoteField(p.field)}`;
  return p.field === '' ? `the fields ${p.message}` : `field ${quoteField(p.field)} ${p.message}`;
}

/**
 * The `SVC_ERR_INVALID_FIELDS` error for these problems, `what` naming the
 * walker, function or class.
 *
 * @example
 * throw invalidFields('AddNote', [{ field: 'text', message: MISSING_FIELD }]);
 * // message: AddNote: missing required field "text"
 */
export function invalidFields(what: string, problems: readonly FieldProblem[]): SvcError {
  const listed = problems.slice(0, LISTED).map(sentence);
  if (problems.length > LISTED) listed.push(`and ${problems.length - LISTED} more`);
  const details = problems.map(({ field, message }) => ({ field, message }));
  return graphError('SVC_ERR_INVALID_FIELDS', `${what}: ${listed.join('; ') || 'the fields do not match the declared schema'}`, { details });
}

/**
 * What is wrong with `value` against `schema`, one problem per field, in the
 * schema's order (TypeBox stops counting errors at its `maxErrors`, 8 by
 * default: a value with more is told the first ones).
 *
 * @example
 * fieldProblems(T.Object({ done: T.Boolean() }), { done: 'yes' });
 * // [{ field: 'done', message: 'must be a boolean' }]
 */
export function fieldProblems(schema: TSchema, value: unknown): FieldProblem[] {
  const errors = [...Value.Errors(schema, value)] as TValidationError[];
  const out: FieldProblem[] = [];
  const seen = new Set<string>();
  const add = (segments: readonly string[], message: string) => {
    const field = fieldName(segments);
    const key = `${field}\0${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ field, message });
  };
  // A union's branches each fail: they are told once, at the union, when all are in.
  const unions = new Map<string, TValidationError[]>();
  for (const e of errors) {
    const at = unionOf(e);
    if (at !== undefined) {
      const group = unions.get(at);
      if (group) group.push(e);
      else unions.set(at, [e]);
    }
  }
  const told = new Set<string>();
  for (const e of errors) {
    const at = unionOf(e);
    if (at !== undefined) {
      if (told.has(at)) continue;
      told.add(at);
      const [segments, message] = unionProblem(schema, at, unions.get(at) as TValidationError[]);
      add(segments, message);
      continue;
    }
    const path = segmentsOf(e.instancePath);
    const p = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'required':
        for (const name of (p.requiredProperties as string[] | undefined) ?? []) add([...path, name], MISSING_FIELD);
        break;
      case 'dependentRequired':
        for (const name of (p.dependencies as string[] | undefined) ?? []) add([...path, name], `is required when ${quoteField(fieldName([...path, String(p.property)]))} is present`);
        break;
      case 'additionalProperties':
        // Each key was told on its own (a `false` schema: unknown; a schema it failed: that failure).
        break;
      case 'propertyNames':
        for (const name of (p.propertyNames as string[] | undefined) ?? []) add([...path, name], 'is not an allowed name');
        break;
      case 'boolean':
        add(path, e.schemaPath.endsWith('/additionalProperties') ? UNKNOWN_FIELD : 'is not allowed');
        break;
      default:
        // The checks of a key's name (propertyNames) are told as one, above.
        if (!e.schemaPath.includes('/propertyNames')) add(path, say(e));
    }
  }
  return out;
}

/** The words of one error, without the field's name. */
function say(e: TValidationError): string {
  const p = e.params as Record<string, unknown>;
  const limit = p.limit as number;
  switch (e.keyword) {
    case 'type':
      return `must be ${typeNames(p.type)}`;
    case 'minimum':
      return `must be at least ${limit}`;
    case 'maximum':
      return `must be at most ${limit}`;
    case 'exclusiveMinimum':
      return `must be greater than ${limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${limit}`;
    case 'multipleOf':
      return `must be a multiple of ${String(p.multipleOf)}`;
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `must be at least ${count(limit, 'character')} long`;
    case 'maxLength':
      return `must be at most ${count(limit, 'character')} long`;
    case 'pattern':
      return `must match the pattern ${JSON.stringify(String(p.pattern))}`;
    case 'format':
      return `must be a valid ${String(p.format)}`;
    case 'enum':
      return allowed(((p.allowedValues as unknown[] | undefined) ?? []).map(show));
    case 'const':
      return `must be ${show(p.allowedValue)}`;
    case 'minItems':
      return limit === 1 ? 'must not be empty' : `must have at least ${count(limit, 'item')}`;
    case 'maxItems':
      return `must have at most ${count(limit, 'item')}`;
    case 'uniqueItems':
      return 'must not contain duplicate items';
    case 'minProperties':
      return `must have at least ${count(limit, 'key')}`;
    case 'maxProperties':
      return `must have at most ${count(limit, 'key')}`;
    case 'contains':
      return p.maxContains === undefined
        ? `must contain at least ${count(Number(p.minContains ?? 1), 'matching item')}`
        : `must contain from ${Number(p.minContains ?? 0)} to ${count(Number(p.maxContains), 'matching item')}`;
    case 'not':
      return 'has a value that is not allowed';
    default:
      return e.message;
  }
}

/**
 * Where the outermost union (`anyOf`, `oneOf`) an error belongs to sits in
 * the schema, or undefined for an error outside any union.
 */
function unionOf(e: TValidationError): string | undefined {
  if (e.keyword === 'anyOf' || e.keyword === 'oneOf') return e.schemaPath;
  const m = /^(.*?)\/(?:anyOf|oneOf)\/\d+(?:\/|$)/.exec(e.schemaPath);
  return m ? (m[1] as string) : undefined;
}

/**
 * A value that matches no branch of a union: told the types or values it may
 * have (`must be a string or null`, `must be one of "low", "high"`), or the
 * bound it broke when it had the right type (`must be at most 5 characters
 * long`); branches that failed deeper in (objects) are told as one. The
 * union's own error comes after its branches': without it, TypeBox stopped
 * counting among them, and only a union of plain values is told from the
 * schema.
 */
function unionProblem(schema: TSchema, at: string, group: TValidationError[]): [string[], string] {
  const summary = group.find((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && e.schemaPath === at);
  const branches = group.filter((e) => e !== summary);
  const where = summary?.instancePath ?? branches.map((e) => e.instancePath).reduce((a, b) => (b.length < a.length ? b : a));
  const segments = segmentsOf(where);
  const vague: [string[], string] = [segments, 'does not match any of the allowed forms'];
  if (summary?.keyword === 'oneOf' && ((summary.params as { passingSchemas?: unknown[] }).passingSchemas?.length ?? 0) > 1) return [segments, 'matches more than one of the allowed forms'];
  if (branches.length === 0 || branches.some((e) => e.instancePath !== where)) return vague;
  if (!summary) {
    const values = valuesOf(schemaAt(schema, at));
    return values ? [segments, allowed(values)] : vague;
  }
  // A literal's branch fails its type and its value: the value says it.
  const valued = new Set(branches.filter((e) => e.keyword === 'const' || e.keyword === 'enum').map((e) => e.schemaPath));
  const here = branches.filter((e) => !(e.keyword === 'type' && valued.has(e.schemaPath)));
  if (here.some((e) => !VALUE_KEYWORDS.has(e.keyword) && !BOUNDS.has(e.keyword))) return vague;
  const bound = here.find((e) => BOUNDS.has(e.keyword));
  if (bound) return [segments, say(bound)];
  const words: string[] = [];
  for (const e of here) {
    const p = e.params as Record<string, unknown>;
    if (e.keyword === 'type') words.push(...typeList(p.type));
    else if (e.keyword === 'const') words.push(show(p.allowedValue));
    else words.push(...((p.allowedValues as unknown[] | undefined) ?? []).map(show));
  }
  const distinct = [...new Set(words)];
  return [segments, here.some((e) => e.keyword === 'type') ? `must be ${orList(distinct)}` : allowed(distinct)];
}

/** The part of a schema a TypeBox schema path (`#/properties/kind`) points at. */
function schemaAt(schema: TSchema, path: string): unknown {
  let at: unknown = schema;
  for (const s of segmentsOf(path.slice(1))) at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[s] : undefined;
  return at;
}

/** The values a union of literals allows, shown; undefined when one branch is more than a value. */
function valuesOf(union: unknown): string[] | undefined {
  const u = union as { anyOf?: unknown[]; oneOf?: unknown[] } | undefined;
  const values: string[] = [];
  for (const branch of u?.anyOf ?? u?.oneOf ?? []) {
    const b = branch as { const?: unknown; enum?: unknown[] };
    if (b.const !== undefined) values.push(show(b.const));
    else if (Array.isArray(b.enum)) values.push(...b.enum.map(show));
    else return undefined;
  }
  return values.length > 0 ? [...new Set(values)] : undefined;
}

/** What a union's branch says of a value's kind. */
const VALUE_KEYWORDS = new Set(['type', 'const', 'enum']);
/** The bounds of a value of the right kind (told as they are when the value's branch broke one). */
const BOUNDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern', 'format', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties']);

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

function typeList(type: unknown): string[] {
  return (Array.isArray(type) ? type : [type]).map((t) => TYPE_NAMES[String(t)] ?? String(t));
}

function typeNames(type: unknown): string {
  return orList(typeList(type));
}

function allowed(values: string[]): string {
  if (values.length > VALUES_LISTED) return `must be one of the ${values.length} allowed values`;
  return values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(', ')}`;
}

function orList(words: string[]): string {
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** A value as a client would write it in JSON. */
function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A JSON pointer's segments, unescaped. */
function segmentsOf(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** `['tags', '2', 'name']` → `tags[2].name`. */
function fieldName(segments: readonly string[]): string {
  let name = '';
  for (const s of segments) name += /^\d+$/.test(s) ? `[${s}]` : name === '' ? s : `.${s}`;
  return name;
}
