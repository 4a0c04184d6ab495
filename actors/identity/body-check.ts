/**
 * A TypeBox schema turned into the check of a request body: compiled once,
 * it refuses what the schema refuses with a 400 VALIDATION_ERROR naming the
 * field the way the identity routes always have (`identities[0].value`,
 * `credential.password`). Bodies are checked as they are, never converted:
 * `3` is not a string. Fields the schema does not declare pass untouched.
 */
import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { TLocalizedValidationError as TValidationError } from 'typebox/error';
import { invalid } from './errors.ts';

/** A body schema with its compiled check: the schema documents the route, `parse` guards it. */
export interface BodyCheck<S extends TSchema = TSchema> {
  /** The TypeBox schema (what `parse` checks against). */
  readonly schema: S;
  /** The same object, typed as the JSON Schema `/openapi.json` carries. */
  readonly doc: Record<string, unknown>;
  /** The body itself, typed, when the schema accepts it; otherwise throws VALIDATION_ERROR for the first wrong field. */
  parse(body: unknown): Static<S>;
}

/**
 * Compile `schema` into a {@link BodyCheck}. `root` names the value itself
 * in errors (a body has none; `profile` when a profile is checked alone).
 *
 * @example
 * const login = bodyCheck(Type.Object({ token: Type.String({ minLength: 1 }) }));
 * login.parse({ token: 3 }); // throws VALIDATION_ERROR "token: must be a string"
 */
export function bodyCheck<S extends TSchema>(schema: S, root = ''): BodyCheck<S> {
  const validator = Compile(schema);
  return {
    schema,
    doc: schema as unknown as Record<string, unknown>,
    parse(body: unknown): Static<S> {
      if (validator.Check(body)) return body as Static<S>;
      const [field, message] = firstError(schema, validator.Errors(body), root);
      throw invalid(field, message);
    },
  };
}

type Json = Record<string, unknown>;

/** The path of the value an error is about: for a missing property, that property. */
function segmentsOf(error: TValidationError): string[] {
  const path = error.instancePath === '' ? [] : error.instancePath.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  const missing = error.keyword === 'required' ? (error.params as { requiredProperties?: string[] }).requiredProperties?.[0] : undefined;
  return missing === undefined ? path : [...path, missing];
}

/** `['identities', '0', 'value']` → `identities[0].value`, under `root` when there is one. */
function fieldName(segments: string[], root: string): string {
  let name = root;
  for (const s of segments) name += /^\d+$/.test(s) ? `[${s}]` : name === '' ? s : `.${s}`;
  return name || 'body';
}

/**
 * Where a path stands in the schema's own order (declared properties, then
 * array indices): the first wrong field is the first one a reader of the
 * docs meets, as when each field was checked in turn.
 */
function rank(schema: TSchema, segments: string[]): number[] {
  const out: number[] = [];
  let at: Json | undefined = schema as unknown as Json;
  for (const s of segments) {
    const properties = at?.properties as Record<string, Json> | undefined;
    if (properties && Object.hasOwn(properties, s)) {
      out.push(Object.keys(properties).indexOf(s));
      at = properties[s];
    } else if (at?.items && /^\d+$/.test(s)) {
      out.push(Number(s));
      at = at.items as Json;
    } else {
      // Keys of a record (a profile's): the order they came in, which the errors keep.
      out.push(0);
      at = undefined;
    }
  }
  return out;
}

function comesFirst(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
  // A value inside a field before the field itself: the deeper error says more (a union's branches fail at its level too).
  return a.length > b.length;
}

const TYPE_NAMES: Record<string, string> = { string: 'a string', number: 'a number', integer: 'a whole number', boolean: 'a boolean', object: 'an object', array: 'an array', null: 'null' };

function typeName(error: TValidationError): string {
  const type = String((error.params as { type?: string }).type);
  return TYPE_NAMES[type] ?? type;
}

function oneOf(words: string[]): string {
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** The words of one error, as the hand-written checks said them. */
function say(error: TValidationError): string {
  const p = error.params as { limit?: number; allowedValues?: unknown[]; allowedValue?: unknown };
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${typeName(error)}`;
    case 'minLength':
      return p.limit === 1 ? 'must be a non-empty string' : `must be at least ${p.limit} characters`;
    case 'maxLength':
      return `must be at most ${p.limit} characters`;
    case 'enum':
      return `must be ${oneOf((p.allowedValues ?? []).map(String))}`;
    case 'const':
      return `must be ${String(p.allowedValue)}`;
    case 'minItems':
      return `must have at least ${p.limit} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${p.limit} items`;
    case 'maxProperties':
      return `at most ${p.limit} keys`;
    default:
      return error.message;
  }
}

/**
 * The first wrong field and what is wrong with it. A value matching none of
 * a union's types (a profile value) is told the types it may have; one of the
 * right type but out of bounds is told the bound.
 */
function firstError(schema: TSchema, errors: TValidationError[], root: string): [string, string] {
  let first = errors[0] as TValidationError;
  let firstRank = rank(schema, segmentsOf(first));
  for (const e of errors.slice(1)) {
    const r = rank(schema, segmentsOf(e));
    if (comesFirst(r, firstRank)) [first, firstRank] = [e, r];
  }
  const field = fieldName(segmentsOf(first), root);
  if (first.keyword === 'required') return [field, say(first)];
  const here = errors.filter((e) => e.instancePath === first.instancePath && e.keyword !== 'required');
  if (here.some((e) => e.keyword === 'anyOf')) {
    const bound = here.find((e) => e.keyword !== 'type' && e.keyword !== 'anyOf');
    if (bound) return [field, say(bound)];
    return [field, `must be ${oneOf(here.filter((e) => e.keyword === 'type').map(typeName))}`];
  }
  return [field, say(first)];
}
