/**
 * Class info: what the runtime knows of a node, edge, walker or function
 * class, computed once — its merged `has` schema, the compiled checks of its
 * fields, its fingerprint — and the validation of request fields against it.
 */
import { createHash } from 'node:crypto';
import type { TObject, TSchema } from 'typebox';
import Type, { IsOptional } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import type { AnchorKind } from './anchor.ts';
import { graphError } from './errors.ts';
import { fieldProblems, invalidFields } from './field-errors.ts';

export type FieldCheck = (value: unknown) => boolean;

/** The kinds of class with a `has` schema. */
export type InfoKind = AnchorKind | 'walker' | 'function';

/** What the runtime knows of an archetype class, computed once. */
export interface ClassInfo {
  name: string;
  kind: InfoKind;
  schema: TObject;
  fields: readonly string[];
  fingerprint: string;
  check: FieldCheck;
  fieldChecks: Record<string, FieldCheck>;
  /**
   * How defaults are applied: each field whose own schema has a default, at once (no schema walk per request), or
   * TypeBox's `Value.Default` over the whole schema when a default sits deeper (inside an object field, a union, a
   * reference).
   */
  defaults: { deep: boolean; top: readonly { field: string; value: unknown; schema: TSchema; optional: boolean }[] };
}

/** Whether `schema` declares a default anywhere below its top (or refers to schemas that might). */
function defaultsBelow(schema: unknown): boolean {
  const seen = new Set<object>();
  const walk = (s: unknown, top: boolean): boolean => {
    if (typeof s !== 'object' || s === null || seen.has(s)) return false;
    seen.add(s);
    for (const key of Object.keys(s)) {
      if (!top && key === 'default') return true;
      if (key === '$ref' || key === '$defs') return true;
      if (key !== 'default' && walk((s as Record<string, unknown>)[key], false)) return true;
    }
    return false;
  };
  return walk(schema, true);
}

function defaultsPlan(properties: Record<string, TSchema>): ClassInfo['defaults'] {
  const top: ClassInfo['defaults']['top'][number][] = [];
  let deep = false;
  for (const [field, schema] of Object.entries(properties)) {
    if (Object.hasOwn(schema, 'default')) top.push({ field, value: (schema as { default?: unknown }).default, schema, optional: IsOptional(schema) });
    if (defaultsBelow(schema)) deep = true;
  }
  return { deep, top };
}

const infos = new WeakMap<object, ClassInfo>();

/** Base prototypes whose member names a `has` field may not take. */
const bases: Partial<Record<InfoKind, object>> = {};

/**
 * Register the base class of a kind (`Node`, `Edge` and `Walker` do, where
 * they are declared: this file imports none of them, so no import cycle).
 */
export function registerBase(kind: Exclude<InfoKind, 'function'>, proto: object): void {
  bases[kind] = proto;
}

/** Every member name of a kind's base classes (public or not): a field of that name would shadow it. */
function reserved(kind: InfoKind): Set<string> {
  const names = new Set<string>(kind === 'function' ? [] : ['constructor', 'toJSON', 'source', 'target']);
  const base = bases[kind];
  for (let p = base; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const name of Object.getOwnPropertyNames(p)) names.add(name);
  }
  return names;
}

/** The full schema of a class: its ancestors' `has` fields, then its own (which win). */
function mergedSchema(cls: object): TObject | undefined {
  const chain: TObject[] = [];
  for (let p: unknown = cls; p && p !== Function.prototype; p = Object.getPrototypeOf(p)) {
    if (Object.hasOwn(p as object, 'has') && (p as { has?: TObject }).has) chain.unshift((p as { has: TObject }).has);
  }
  if (chain.length === 0) return undefined;
  if (chain.length === 1) return chain[0] as TObject;
  const properties: Record<string, TSchema> = {};
  for (const schema of chain) Object.assign(properties, schema.properties);
  return Type.Object(properties);
}

function compileCheck(schema: TSchema): FieldCheck {
  const compiled = Compile(schema);
  return (value) => compiled.Check(value);
}

/** The schema, checks and fingerprint of a node, edge or walker class (cached). */
export function buildInfo(cls: { name: string; has?: TObject }, kind: InfoKind): ClassInfo {
  const cached = infos.get(cls);
  if (cached) return cached;
  const schema = mergedSchema(cls) ?? Type.Object({});
  if (schema.type !== 'object' || typeof schema.properties !== 'object') {
    throw graphError('SVC_ERR_BAD_ARCHETYPE', `${cls.name}.has must be a T.Object({...}) schema`);
  }
  const fields = Object.keys(schema.properties);
  const taken = reserved(kind);
  for (const f of fields) {
    if (taken.has(f) || f.startsWith('_')) {
      throw graphError('SVC_ERR_BAD_ARCHETYPE', `${cls.name}.has declares "${f}", a name reserved by svc (or starting with _)`);
    }
  }
  const fieldChecks: Record<string, FieldCheck> = {};
  const required = new Set<string>((schema as { required?: string[] }).required ?? []);
  const properties = schema.properties as Record<string, TSchema>;
  for (const f of fields) {
    const check = compileCheck(properties[f] as TSchema);
    fieldChecks[f] = required.has(f) ? check : (v) => v === undefined || check(v);
  }
  const info: ClassInfo = {
    name: cls.name,
    kind,
    schema,
    fields,
    fingerprint: createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 16),
    check: compileCheck(schema),
    fieldChecks,
    defaults: defaultsPlan(properties),
  };
  infos.set(cls, info);
  return info;
}

/** The cached info of a class, if it was built. */
export function cachedInfo(cls: object): ClassInfo | undefined {
  return infos.get(cls);
}

/**
 * Validate `fields` against a class schema, with defaults applied; throws
 * `SVC_ERR_INVALID_FIELDS` with a sentence per problem (`AddNote: missing
 * required field "text"`, see `field-errors.ts`). Only declared fields come
 * back: anything else (`__proto__` included) is dropped, never copied onto an
 * object — refusing a client's undeclared fields is the transports' part
 * (`unknown-fields.ts`), so app code building nodes is not held to it.
 */
export function validateFields(info: ClassInfo, fields: unknown, what = info.name): Record<string, unknown> {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    throw graphError('SVC_ERR_INVALID_FIELDS', `${what} takes an object of fields`);
  }
  // Only declared fields, copied: objects deeply, so the caller's objects are never shared with a node.
  const declared: Record<string, unknown> = {};
  for (const f of info.fields) {
    if (!Object.hasOwn(fields, f)) continue;
    const v = (fields as Record<string, unknown>)[f];
    declared[f] = typeof v === 'object' && v !== null ? structuredClone(v) : v;
  }
  const value = withDefaults(info, declared);
  if (!info.check(value)) throw invalidFields(what, fieldProblems(info.schema, value));
  return value;
}

/**
 * `declared` with the schema's defaults filled in (changed in place), as TypeBox's `Value.Default` fills them: a field
 * that is missing (or undefined) takes its default — a copy of it, or what a function default returns.
 */
function withDefaults(info: ClassInfo, declared: Record<string, unknown>): Record<string, unknown> {
  const { deep, top } = info.defaults;
  if (deep) return Value.Default(info.schema, declared) as Record<string, unknown>;
  for (const { field, value, schema, optional } of top) {
    if (declared[field] !== undefined) continue;
    const filled = typeof value === 'function' ? (value as (this: TSchema) => unknown).call(schema) : typeof value === 'object' && value !== null ? Value.Clone(value) : value;
    // As TypeBox does: an optional field whose default gives undefined stays absent.
    if (filled === undefined && optional) continue;
    declared[field] = filled;
  }
  return declared;
}
