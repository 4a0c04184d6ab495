/**
 * Abilities: methods that run when a walker arrives at (`@entry`) or leaves
 * (`@exit`) a node. On a walker class the types are node classes (none: any
 * node); on a node class they are walker classes (none: any walker).
 * Works with standard (TC39) decorators and with `experimentalDecorators`.
 */

const ABILITY = Symbol('svc.ability');

export type AbilityKind = 'entry' | 'exit';

/**
 * What an ability reacts to: a class; a thunk returning one (`() => Later`,
 * for classes declared further down); or a class name.
 */
export type AbilityType = Function | (() => Function) | string;

interface Mark {
  kind: AbilityKind;
  types: readonly AbilityType[];
}

export interface Ability {
  name: string;
  kind: AbilityKind;
  types: readonly AbilityType[];
  fn: (this: unknown, arg: unknown) => unknown;
}

type MarkedFunction = Function & { [ABILITY]?: Mark[] };

function mark(kind: AbilityKind, types: AbilityType[]) {
  for (const t of types) {
    if (typeof t !== 'function' && typeof t !== 'string') {
      throw new TypeError(`@${kind}() takes classes, thunks (() => Class) or class names; got ${String(t)} (is the class exported and declared above?)`);
    }
  }
  // Standard decorators call (value, context); legacy ones (target, key, descriptor).
  return function decorate(target: unknown, keyOrContext: unknown, descriptor?: PropertyDescriptor): void {
    const fn = (descriptor ? descriptor.value : target) as MarkedFunction;
    if (typeof fn !== 'function') throw new TypeError(`@${kind}() decorates methods only`);
    const marks = fn[ABILITY] ?? [];
    marks.push({ kind, types });
    fn[ABILITY] = marks;
    void keyOrContext;
  } as unknown as MethodDecorator & (<T>(value: T, context: ClassMethodDecoratorContext) => void);
}

/**
 * Run this method when the walker arrives at a node of one of `types`
 * (any node when none are given); on a node class, when one of the walker
 * `types` arrives.
 *
 * Types declared further down in the file are given as a thunk
 * (`@entry(() => Visitor)`) or by name (`@entry('Visitor')`).
 *
 * @example
 * class ListTodos extends Walker {
 *   @entry(Root) async start(here: Root) { this.visit(await here.out(Todo)) }
 *   @entry(Todo) each(here: Todo) { this.report(here) }
 * }
 */
export function entry(...types: AbilityType[]) {
  return mark('entry', types);
}

/** Run this method when the walker leaves a node of one of `types`. */
export function exit(...types: AbilityType[]) {
  return mark('exit', types);
}

const cache = new WeakMap<Function, Ability[]>();

/** The abilities of a class, base classes first, in declaration order. */
export function abilitiesOf(cls: Function): Ability[] {
  const cached = cache.get(cls);
  if (cached) return cached;
  const chain: object[] = [];
  for (let p = cls.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) chain.unshift(p);
  const seen = new Set<string>();
  const out: Ability[] = [];
  // Base classes first; an override keeps the ability of the method it overrides.
  for (const proto of chain) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      const marks = marksOf(cls.prototype, name);
      if (!marks) continue;
      seen.add(name);
      const fn = (cls.prototype as Record<string, unknown>)[name] as Ability['fn'];
      for (const m of marks) out.push({ name, kind: m.kind, types: m.types, fn });
    }
  }
  cache.set(cls, out);
  return out;
}

/** The marks of the most derived definition of `name` that has any. */
function marksOf(proto: object, name: string): Mark[] | undefined {
  for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, name);
    if (d && typeof d.value === 'function' && (d.value as MarkedFunction)[ABILITY]) return (d.value as MarkedFunction)[ABILITY];
  }
  return undefined;
}

/** Whether an ability applies to `subject` (the node for walker abilities, the walker for node abilities). */
export function matches(ability: Ability, subject: object): boolean {
  if (ability.types.length === 0) return true;
  for (const t of ability.types) {
    if (typeof t === 'string') {
      for (let p = Object.getPrototypeOf(subject); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
        if (p.constructor?.name === t) return true;
      }
      continue;
    }
    // A class has a prototype; a thunk (arrow function) has none.
    const cls = t.prototype ? t : (t as () => Function)();
    if (subject instanceof (cls as new () => unknown)) return true;
  }
  return false;
}
