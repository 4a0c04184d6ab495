/**
 * What an app declares: its walkers and functions (by exported name), and
 * the node and edge classes stored documents are resolved against, with
 * class-rename aliases (`old` → `new`).
 */
import { Edge, fieldInitializers, GenericEdge, knownClasses, Node, prepare, Root, type ArchetypeClass } from './archetype.ts';
import { graphError } from './errors.ts';
import { isFunctionDef, type FunctionDef } from './fn.ts';
import { isWalkerClass, walkerInfo, type WalkerClass } from './walker.ts';
import { isRoomSpec, type RoomSpec } from './rooms.ts';
import { TRAVERSE_WALKER, TraverseWalker } from './traverse.ts';

/** The type part of a qualified name: `app.Todo` → `Todo`. */
export function typeName(qualified: string): string {
  const i = qualified.lastIndexOf('.');
  return i < 0 ? qualified : qualified.slice(i + 1);
}

/**
 * @example
 * const registry = Registry.fromModule(await import('./app.ts'), 'app');
 * registry.walker('CreateTodo'); registry.fn('add');
 */
export class Registry {
  readonly walkers = new Map<string, WalkerClass>();
  readonly functions = new Map<string, FunctionDef>();
  /** The app's `rooms()` declarations, in export order (the first that matches a room name covers it). */
  readonly rooms: RoomSpec[] = [];
  readonly archetypes = new Map<string, ArchetypeClass>();
  private readonly aliases = new Map<string, string>();

  constructor(readonly module = 'app') {
    for (const cls of [Root, GenericEdge] as ArchetypeClass[]) this.addArchetype(cls);
  }

  /** Everything a module exports: walker classes, `fn` definitions, node and edge classes. */
  static fromModule(exports: Record<string, unknown>, module = 'app'): Registry {
    const registry = new Registry(module);
    for (const [name, value] of Object.entries(exports)) registry.add(name, value);
    return registry;
  }

  /** Register one export under its name. Other values are ignored. */
  add(name: string, value: unknown): void {
    if (isWalkerClass(value)) {
      walkerInfo(value);
      this.walkers.set(name, value);
    } else if (isFunctionDef(value)) {
      this.functions.set(name, value);
    } else if (isRoomSpec(value)) {
      if (!this.rooms.includes(value)) this.rooms.push(value);
    } else if (typeof value === 'function' && (value.prototype instanceof Node || value.prototype instanceof Edge)) {
      this.addArchetype(value as ArchetypeClass);
    }
  }

  addArchetype(cls: ArchetypeClass): void {
    prepare(cls);
    // Found when the app loads, not at the first write: `svc start` refuses it (a `--dev` reload keeps the old version).
    const [initialised] = cls === Root || cls === GenericEdge ? [] : fieldInitializers(cls);
    if (initialised !== undefined) {
      throw graphError(
        'SVC_ERR_BAD_ARCHETYPE',
        `${cls.name}.${initialised} is a class field, so writes to it are not seen; declare it with \`declare ${initialised}: …\``,
      );
    }
    const existing = this.archetypes.get(cls.name);
    if (existing && existing !== cls) {
      throw graphError('SVC_ERR_BAD_ARCHETYPE', `two different classes are named ${cls.name}; stored documents could not tell them apart`);
    }
    this.archetypes.set(cls.name, cls);
  }

  /** Documents stored under `from` now load as `to` (qualified or plain type names). */
  alias(from: string, to: string): void {
    this.aliases.set(typeName(from), typeName(to));
  }

  /**
   * Take `next`'s walkers, functions and classes in place of these, at once
   * (`svc start --dev`: a save's new code, for everything holding this
   * registry); the class-rename aliases of both are kept.
   *
   * @example
   * registry.replaceWith(Registry.fromModule(await import(newBundle), 'app'));
   */
  replaceWith(next: Registry): void {
    for (const [mine, theirs] of [
      [this.walkers, next.walkers],
      [this.functions, next.functions],
      [this.archetypes, next.archetypes],
    ] as [Map<string, unknown>, Map<string, unknown>][]) {
      mine.clear();
      for (const [name, value] of theirs) mine.set(name, value);
    }
    for (const [from, to] of next.aliases) this.aliases.set(from, to);
    this.rooms.splice(0, this.rooms.length, ...next.rooms);
  }

  /** The class a stored `arch_type` resolves to (after aliases), if any. */
  resolve(archType: string): ArchetypeClass | undefined {
    let name = typeName(archType);
    for (let hops = 0; hops < 16 && this.aliases.has(name); hops++) name = this.aliases.get(name) as string;
    return this.archetypes.get(name) ?? knownClasses.get(name);
  }

  /** Whether documents of this class will load: it is registered (exported by the app). */
  owns(cls: ArchetypeClass): boolean {
    return this.archetypes.get(cls.name) === cls;
  }

  /** An exported walker by name, or the runtime's own ({@link TRAVERSE_WALKER}: never an export, never a route). */
  walker(name: string): WalkerClass | undefined {
    return this.walkers.get(name) ?? (name === TRAVERSE_WALKER ? (TraverseWalker as unknown as WalkerClass) : undefined);
  }

  fn(name: string): FunctionDef | undefined {
    return this.functions.get(name);
  }

  /** Middleware hook walkers (names starting with `_`), in declaration order. */
  hooks(): [string, WalkerClass][] {
    return [...this.walkers].filter(([name]) => name.startsWith('_'));
  }

  /** The exported name of a walker class. */
  nameOf(cls: WalkerClass): string | undefined {
    for (const [name, c] of this.walkers) if (c === cls) return name;
    return (cls as unknown) === TraverseWalker ? TRAVERSE_WALKER : undefined;
  }
}
