/**
 * `sv.import`: another svc app as a typed remote module.
 *
 * ```ts
 * const billing = sv.import<typeof import('./billing.ts')>('billing');
 * const total = await billing.charge({ amount: 5 });      // POST /function/charge → its value
 * const invoice = await billing.Invoice({ amount: 5 });   // POST /walker/Invoice → the walker, `reports` attached
 * ```
 *
 * `typeof import(...)` is a type only: the provider's code is never loaded
 * into the consumer. Only `pub` functions and walkers appear on the module's
 * type (and the provider refuses the others to `sv` calls). A walker's and a
 * function's arguments are all optional in the type (TypeBox schemas do not
 * say which fields have defaults), each one type-checked.
 */
import type { Static, TSchema } from 'typebox';
import { wantRunTracking, type FunctionDef } from '../../actors/walker/index.ts';
import { knownTypes, type RemoteWalker } from './boundary.ts';
import type { SvCallOptions, SvClient } from './client.ts';
import { checkModuleName } from './names.ts';

/**
 * What a value becomes on the way back, as JSON carries it: a `Date` is its
 * ISO text, a `Map` a record, a `Set` an array (recursively through arrays
 * and records). Class types are kept: an instance comes back as one when its
 * class is among the import's `types`, and as a record of its fields otherwise.
 */
export type Wire<T> = T extends Date
  ? string
  : T extends Map<string, infer V>
    ? Record<string, Wire<V>>
    : T extends Set<infer U>
      ? Wire<U>[]
      : T extends bigint | symbol | ((...args: never[]) => unknown)
        ? never
        : T extends readonly (infer U)[]
          ? Wire<U>[]
          : T extends object
            ? { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? T[K] : Wire<T[K]> }
            : T;

/** The arguments of a call: every declared field, each optional. */
type Args<S> = { [K in keyof S]?: S[K] };

/** A walker class's declared fields (its `static has` schema). */
type WalkerFields<C> = C extends { has: infer H } ? (H extends TSchema ? Static<H> : Record<string, unknown>) : Record<string, unknown>;

/** Public: `static access = 'pub' as const` (a widened `string` cannot be told, so it is kept). */
type IsPub<C> = C extends { access: infer A } ? (string extends A ? true : A extends 'pub' ? true : false) : false;

/** What one export of the provider becomes. */
type Remote<E> =
  E extends FunctionDef<infer A, infer R, infer Acc>
    ? Acc extends 'pub'
      ? (args?: Args<A>, options?: SvCallOptions) => Promise<Wire<Awaited<R>>>
      : never
    : E extends abstract new (...args: never[]) => unknown
      ? IsPub<E> extends true
        ? (fields?: Args<WalkerFields<E>>, options?: SvCallOptions) => Promise<Wire<WalkerFields<E>> & RemoteWalker>
        : never
      : never;

/** A provider module as the consumer sees it: its public functions and walkers, as async calls. */
export type SvModule<M> = { readonly [K in keyof M as Remote<M[K]> extends never ? never : K]: Remote<M[K]> };

export interface SvImportOptions {
  /**
   * Classes (and walker stubs) to rebuild results into, by name: objects the
   * provider sends as instances of a class of that name become instances of
   * these (`[Money]` or `{ Money }`).
   */
  types?: readonly (abstract new (...args: never[]) => unknown)[] | Record<string, abstract new (...args: never[]) => unknown>;
}

const NOT_REMOTE = new Set(['then', 'toJSON', 'toString', 'valueOf', 'toLocaleString', 'inspect', 'constructor', 'prototype', '__proto__', 'asymmetricMatch', '$$typeof', 'nodeType']);

/**
 * The module proxy: a property read gives a caller; a name starting with an
 * upper-case letter is a walker (class names), any other a function.
 */
export function importModule<M>(client: SvClient, module: string, options: SvImportOptions = {}): SvModule<M> {
  checkModuleName(module);
  const types = knownTypes(options.types);
  // Forwarding the caller's Authorization and trace id needs to know the calling run.
  wantRunTracking();
  const callers = new Map<string, (args?: Record<string, unknown>, o?: SvCallOptions) => Promise<unknown>>();
  return new Proxy(Object.create(null) as object, {
    get(_target, key) {
      // Names JavaScript itself reads (conversions, inspection, promises) are not remote calls.
      if (typeof key !== 'string' || NOT_REMOTE.has(key)) return undefined;
      let caller = callers.get(key);
      if (!caller) {
        const walker = /^[A-Z]/.test(key);
        const stub = types.get(key);
        caller = walker
          ? (args = {}, o = {}) => client.hooks.svWalkerCall(module, key, args, stub, { ...o, types } as SvCallOptions)
          : (args = {}, o = {}) => client.hooks.svServiceCall(module, key, args, { ...o, types } as SvCallOptions);
        Object.defineProperty(caller, 'name', { value: key });
        callers.set(key, caller);
      }
      return caller;
    },
    has: () => false,
    ownKeys: () => [],
    set() {
      throw new TypeError(`the remote module ${module} is read-only`);
    },
  }) as SvModule<M>;
}
