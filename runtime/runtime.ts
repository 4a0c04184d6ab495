/**
 * The composition root: a runtime is a list of modules started in declared
 * order, each `{ start, drain, close }` (as fastify plugins and their
 * `onClose` hooks). Modules meet through typed service keys
 * (`key<AnchorStore>('store')`, catalogued in `keys.ts`) instead of one setup
 * function that knows every subsystem: a transport, or a service of a new
 * kind, is one more module in the list (a store backend registers itself from
 * `stores/`; README *Architecture* says where each kind of addition goes).
 *
 * Decisions:
 * - Each module declares the keys it `needs` (provided by a module before it),
 *   `uses` (read if some module provides them, before or after it: lazily, or
 *   optional) and `provides`. The list is checked when it is composed, before
 *   anything starts (as fastify checks a plugin's `dependencies` at
 *   registration): a key needed that no module provides, or that a later
 *   module provides, and a key provided twice are refused with a message that
 *   names the module and the key (and the provider, when there is one).
 * - The declarations are held to: a module's context refuses a key it did not
 *   declare (`need`, `find`, `provide`), so the lists cannot drift from the code.
 * - `start` runs the modules in order; when one fails, those already started
 *   are closed in reverse order and the error is thrown.
 * - `drain(deadline)` asks each module, in order, to stop taking work and
 *   finish what it holds, sharing one deadline (the front stops accepting
 *   first, then WebSocket sessions, then whatever they feed).
 * - `close` closes in reverse start order (OTP: stop children in reverse),
 *   each module once, every module even when one fails.
 */
import { SvcError } from '../kernel/index.ts';
import { RUNTIME_ERRORS } from './errors.ts';

/**
 * A service's name and type: `rt.need(STORE)` is an `AnchorStore`, no cast.
 *
 * @example
 * export const STORE = key<AnchorStore>('store');
 */
export interface Key<T> {
  readonly name: string;
  /** Never set: carries the service's type. */
  readonly type?: T;
}

/**
 * A service key (see `keys.ts` for the catalogue).
 *
 * @example
 * const GRAPH = key<Graph>('graph');
 */
export function key<T>(name: string): Key<T> {
  return Object.freeze({ name });
}

/** What a module sees of its runtime: only the keys it declared. */
export interface RuntimeContext {
  /** A service for the modules after this one (a key is provided once; declared in `provides`). */
  provide<T>(key: Key<T>, value: NoInfer<T>): T;
  /** A service an earlier module provided (declared in `needs`); throws naming the module that should have. */
  need<T>(key: Key<T>): T;
  /** A service, if some module provided it (declared in `needs` or `uses`). */
  find<T>(key: Key<T>): T | undefined;
}

/**
 * @example
 * const storeModule: RuntimeModule = {
 *   name: 'store',
 *   provides: [STORE],
 *   start: (rt) => void rt.provide(STORE, SqliteStore.open(path)),
 *   close: () => store.close(),
 * };
 */
export interface RuntimeModule {
  readonly name: string;
  /** Services provided by modules before this one (checked at composition). */
  readonly needs?: readonly Key<unknown>[];
  /** Services read when some module provides them (before or after this one), through `find`. */
  readonly uses?: readonly Key<unknown>[];
  /** Services this module provides (at most: one that is off may provide nothing). */
  readonly provides?: readonly Key<unknown>[];
  start(rt: RuntimeContext): void | Promise<void>;
  /** Stop taking new work and finish what is in hand, within `deadlineMs`. */
  drain?(deadlineMs: number): void | Promise<void>;
  /** Release what `start` took (files, sockets, timers). */
  close?(): void | Promise<void>;
}

/** A wiring mistake: a service needed but provided by no module before, a key provided twice, a module started twice. */
export class RuntimeError extends SvcError {
  constructor(message: string) {
    super('SVC_ERR_RUNTIME', message, { status: RUNTIME_ERRORS.SVC_ERR_RUNTIME.status });
    this.name = 'RuntimeError';
  }
}

/** The runtime itself, provided to every module that needs it (to drain on an order). */
export const RUNTIME = key<Runtime>('runtime');

const BY_RUNTIME = 'the runtime';

/**
 * Refuse a list whose declarations do not meet: each needed key is provided
 * by a module before its user, no key by two modules, no two modules of one name.
 */
function checkComposition(modules: readonly RuntimeModule[], given: readonly Key<unknown>[]): void {
  const names = new Set<string>();
  const providers = new Map<string, string>(given.map((k) => [k.name, BY_RUNTIME]));
  for (const m of modules) {
    if (names.has(m.name)) throw new RuntimeError(`two runtime modules are named ${m.name}`);
    names.add(m.name);
    for (const k of m.provides ?? []) {
      const by = providers.get(k.name);
      if (by !== undefined) throw new RuntimeError(`runtime module ${m.name} provides ${k.name}, already provided by ${by}`);
      providers.set(k.name, m.name);
    }
  }
  const before = new Set<string>(given.map((k) => k.name));
  for (const m of modules) {
    for (const k of m.needs ?? []) {
      if (before.has(k.name)) continue;
      const by = providers.get(k.name);
      if (by === undefined) throw new RuntimeError(`runtime module ${m.name} needs ${k.name}, which no module in the list provides`);
      throw new RuntimeError(`runtime module ${m.name} needs ${k.name}, provided by ${by}, which comes after it: list ${by} before ${m.name}`);
    }
    for (const k of m.provides ?? []) before.add(k.name);
  }
}

/**
 * @example
 * const rt = composeRuntime([logModule, storeModule, graphModule, httpModule]); // the list is checked here
 * await rt.start();
 * await rt.drain(10_000);
 * await rt.close();
 */
export class Runtime {
  private readonly services = new Map<string, unknown>();
  private readonly providers = new Map<string, string>();
  private readonly started: RuntimeModule[] = [];
  private state: 'new' | 'starting' | 'started' | 'draining' | 'closed' = 'new';
  private closing: Promise<void> | undefined;

  constructor(
    readonly modules: readonly RuntimeModule[],
    private readonly onError: (error: unknown, module: string, phase: 'drain' | 'close') => void = (error, module, phase) =>
      console.error(`[svc runtime] ${module} failed to ${phase}:`, error),
  ) {
    checkComposition(modules, [RUNTIME]);
    this.services.set(RUNTIME.name, this);
    this.providers.set(RUNTIME.name, BY_RUNTIME);
  }

  /** A service, from outside the modules (tests, the caller that composed the runtime); throws when none was provided. */
  need<T>(key: Key<T>): T {
    if (!this.services.has(key.name)) throw new RuntimeError(`no runtime module provided ${key.name}`);
    return this.services.get(key.name) as T;
  }

  /** A service, if some module provided it. */
  find<T>(key: Key<T>): T | undefined {
    return this.services.get(key.name) as T | undefined;
  }

  /** Names of the modules started so far, in order. */
  get startedModules(): string[] {
    return this.started.map((m) => m.name);
  }

  /** What `module` sees: the keys it declared, and only those. */
  private contextOf(module: RuntimeModule): RuntimeContext {
    const declared = (list: readonly Key<unknown>[] | undefined, k: Key<unknown>) => list?.some((d) => d.name === k.name) === true;
    const refuse = (verb: string, k: Key<unknown>, where: string) => new RuntimeError(`runtime module ${module.name} ${verb} ${k.name} without declaring it in ${where}`);
    return {
      provide: <T>(k: Key<T>, value: T): T => {
        if (!declared(module.provides, k)) throw refuse('provides', k, 'provides');
        const by = this.providers.get(k.name);
        if (by !== undefined) throw new RuntimeError(`runtime module ${module.name} provides ${k.name}, already provided by ${by}`);
        this.services.set(k.name, value);
        this.providers.set(k.name, module.name);
        return value;
      },
      need: <T>(k: Key<T>): T => {
        if (!declared(module.needs, k)) throw refuse('needs', k, 'needs');
        if (!this.services.has(k.name)) throw new RuntimeError(`runtime module ${module.name} needs ${k.name}, which no module before it provided`);
        return this.services.get(k.name) as T;
      },
      find: <T>(k: Key<T>): T | undefined => {
        if (!declared(module.needs, k) && !declared(module.uses, k)) throw refuse('uses', k, 'needs or uses');
        return this.services.get(k.name) as T | undefined;
      },
    };
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new RuntimeError(`the runtime is ${this.state}`);
    this.state = 'starting';
    for (const module of this.modules) {
      try {
        await module.start(this.contextOf(module));
      } catch (error) {
        await this.close();
        throw error;
      }
      this.started.push(module);
    }
    this.state = 'started';
  }

  /** Every started module drains, in start order, within one shared deadline. */
  async drain(deadlineMs: number): Promise<void> {
    if (this.state !== 'started') return;
    this.state = 'draining';
    const until = Date.now() + deadlineMs;
    for (const module of this.started) {
      if (!module.drain) continue;
      try {
        await module.drain(Math.max(0, until - Date.now()));
      } catch (error) {
        this.onError(error, module.name, 'drain');
      }
    }
  }

  /** Close every started module, last started first; once. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.state = 'closed';
      for (const module of [...this.started].reverse()) {
        try {
          await module.close?.();
        } catch (error) {
          this.onError(error, module.name, 'close');
        }
      }
      this.started.length = 0;
    })();
    return this.closing;
  }
}

/** A runtime of these modules, not started yet; throws a {@link RuntimeError} when their needs and provides do not meet. */
export function composeRuntime(modules: readonly RuntimeModule[], options: { onError?: (error: unknown, module: string, phase: 'drain' | 'close') => void } = {}): Runtime {
  return new Runtime(modules, options.onError);
}
