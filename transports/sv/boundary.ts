/**
 * What crosses a service boundary, both ways.
 *
 * Sending (before any request): numbers, strings, booleans, null, arrays,
 * records, instances of plain classes (as their own fields), walker
 * instances (as their declared fields), `Date` (ISO text), `Map` with string
 * keys (a record), `Set` (an array), and a value with `toJSON` (a `URL`: its
 * text) as what that gives. Refused, naming where in the
 * arguments: anchors (nodes, edges, roots — send an id or the fields),
 * functions, symbols, bigints, promises, handles (streams, sockets, files,
 * ports, database and storage handles), binary data, NaN and infinities, and
 * a value that contains itself.
 *
 * Receiving: a provider answering an `sv` call writes a class instance with
 * `"$class": "<name>"` beside its fields; {@link rehydrate} builds an
 * instance of that class when the caller knows it (the `types` of
 * `sv.import`), recursively, and a plain record otherwise. Nodes and edges
 * arrive in their wire form `{id, type, context}` (anchors do not cross).
 * TypeScript enums are values (numbers or strings), the same on both sides.
 */
import { EventEmitter } from 'node:events';
import { Archetype, Walker, walkerInfo, type WalkerClass } from '../../actors/walker/index.ts';

/** Why a value cannot cross, and where (`args.items[2]`). */
export class BoundaryError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path} ${why}`);
    this.name = 'BoundaryError';
  }
}

const MAX_DEPTH = 64;
/** Handles of ours, known by class name (no import of their rooms needed). */
const HANDLE_CLASSES = new Set(['DocDbStore', 'KvStore', 'LocalStorage', 'ObjectStorage', 'Graph', 'ActorSystem', 'Pool', 'Agent', 'Client', 'Redis', 'Database']);

/** A value ready for JSON: throws a {@link BoundaryError} for what may not cross. */
export function encodeBoundary(value: unknown, path = 'args'): unknown {
  return encode(value, path, new Set(), 0);
}

function encode(value: unknown, path: string, seen: Set<object>, depth: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new BoundaryError(path, `is ${value}: JSON has no NaN or infinities`);
      return value;
    case 'undefined':
      return undefined;
    case 'function':
      throw new BoundaryError(path, `is a function${value.name ? ` (${value.name})` : ''}: functions and classes do not cross a service boundary`);
    case 'symbol':
      throw new BoundaryError(path, 'is a symbol: symbols do not cross a service boundary');
    case 'bigint':
      throw new BoundaryError(path, 'is a bigint: send it as a string or a number');
  }
  if (value === null) return null;
  const obj = value as object;
  if (depth >= MAX_DEPTH) throw new BoundaryError(path, `is nested more than ${MAX_DEPTH} levels deep`);
  if (seen.has(obj)) throw new BoundaryError(path, 'contains itself: a value with a cycle cannot cross a service boundary');
  refuseHandle(obj, path);
  seen.add(obj);
  try {
    if (Array.isArray(obj)) return obj.map((v, i) => encode(v, `${path}[${i}]`, seen, depth + 1) ?? null);
    if (obj instanceof Date) {
      if (Number.isNaN(obj.getTime())) throw new BoundaryError(path, 'is an invalid Date');
      return obj.toISOString();
    }
    if (obj instanceof Map) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of obj) {
        if (typeof k !== 'string') throw new BoundaryError(path, `is a Map with a ${typeof k} key: only string keys cross (as a record)`);
        out[k] = encode(v, `${path}.get(${JSON.stringify(k)})`, seen, depth + 1);
      }
      return out;
    }
    if (obj instanceof Set) return [...obj].map((v, i) => encode(v, `${path}[${i}]`, seen, depth + 1) ?? null);
    // A value that says how it is written as JSON (a URL, a Decimal…): that.
    if (typeof (obj as { toJSON?: unknown }).toJSON === 'function') return encode((obj as { toJSON(): unknown }).toJSON(), path, seen, depth + 1);
    // A walker: its declared fields (a remote walker's too).
    if (obj instanceof Walker) return fieldsOf(obj, walkerInfo(obj.constructor as WalkerClass).fields, path, seen, depth);
    if (obj instanceof RemoteWalker) return fieldsOf(obj, Object.keys(obj).filter((k) => k !== 'reports'), path, seen, depth);
    return fieldsOf(obj, Object.keys(obj), path, seen, depth);
  } finally {
    seen.delete(obj);
  }
}

function fieldsOf(obj: object, keys: readonly string[], path: string, seen: Set<object>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const v = encode((obj as Record<string, unknown>)[k], /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`, seen, depth + 1);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

function refuseHandle(obj: object, path: string): void {
  if (obj instanceof Archetype) {
    const kind = obj.constructor.name;
    throw new BoundaryError(path, `is a ${kind} (an anchor of this service's graph): anchors do not cross a service boundary; send its id or its fields`);
  }
  if (typeof (obj as { then?: unknown }).then === 'function') throw new BoundaryError(path, 'is a promise: await it before the call');
  if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer || obj instanceof SharedArrayBuffer) throw new BoundaryError(path, 'is binary data: send it as base64 text (or store it and send its path)');
  if (obj instanceof WeakMap || obj instanceof WeakSet || obj instanceof WeakRef) throw new BoundaryError(path, `is a ${obj.constructor.name}: it cannot be sent`);
  if (obj instanceof RegExp || obj instanceof Error) throw new BoundaryError(path, `is ${/^[AEIOU]/.test(obj.constructor.name) ? 'an' : 'a'} ${obj.constructor.name}: send its text`);
  const name = (Object.getPrototypeOf(obj) as { constructor?: { name?: string } } | null)?.constructor?.name ?? '';
  if (obj instanceof EventEmitter || obj instanceof EventTarget || typeof (obj as { fd?: unknown }).fd === 'number' || HANDLE_CLASSES.has(name)) {
    throw new BoundaryError(path, `is a handle (${name || 'an object'}: a stream, socket, file, port or database/storage handle): handles do not cross a service boundary`);
  }
}

/**
 * The base of what a remote walker call resolves to: the walker's fields as
 * the provider's run left them, and what it reported.
 */
export class RemoteWalker {
  /** What the walker reported, rehydrated. */
  reports: unknown[] = [];
}

const remoteClasses = new Map<string, typeof RemoteWalker>();

/** A subclass of {@link RemoteWalker} named after the walker (`result.constructor.name === 'Invoice'`). */
export function remoteWalkerClass(name: string): typeof RemoteWalker {
  let cls = remoteClasses.get(name);
  if (!cls) {
    cls = { [name]: class extends RemoteWalker {} }[name] as typeof RemoteWalker;
    remoteClasses.set(name, cls);
  }
  return cls;
}

/** Classes a caller knows, by name. */
export type KnownTypes = ReadonlyMap<string, abstract new (...args: never[]) => unknown>;

/** `[Money, Currency]` or `{ Money, Currency }` as a map by name (`types` of `sv.import`). */
export function knownTypes(types: unknown): Map<string, abstract new (...args: never[]) => unknown> {
  const out = new Map<string, abstract new (...args: never[]) => unknown>();
  if (types === undefined) return out;
  const entries: [string, unknown][] = Array.isArray(types) ? types.map((t) => [(t as { name?: string })?.name ?? '', t]) : typeof types === 'object' && types !== null ? Object.entries(types) : [];
  if (entries.length === 0 && !Array.isArray(types) && (typeof types !== 'object' || types === null)) throw new TypeError('types: a list of classes ([Money]) or a record of them ({ Money })');
  for (const [name, cls] of entries) {
    if (typeof cls !== 'function' || !name) throw new TypeError(`types: ${JSON.stringify(name)} is not a class`);
    out.set(name, cls as abstract new (...args: never[]) => unknown);
  }
  return out;
}

/**
 * A value received from a provider, with `$class` objects built into the
 * classes of `types` (their constructors are not run: the fields are set on
 * a new instance), recursively; unknown classes stay plain records.
 */
export function rehydrate(value: unknown, types: KnownTypes): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => rehydrate(v, types));
  const record = value as Record<string, unknown>;
  const name = record.$class;
  const cls = typeof name === 'string' ? types.get(name) : undefined;
  const out: Record<string, unknown> = cls ? (Object.create(cls.prototype as object) as Record<string, unknown>) : {};
  for (const [k, v] of Object.entries(record)) {
    if (k === '$class' && typeof name === 'string') continue;
    // A `__proto__` key in an answer is defined, not assigned: it stays a field and never becomes the prototype.
    if (k === '__proto__') Object.defineProperty(out, k, { value: rehydrate(v, types), enumerable: true, writable: true, configurable: true });
    else out[k] = rehydrate(v, types);
  }
  return out;
}
