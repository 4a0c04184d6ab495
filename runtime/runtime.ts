/**
 * The composition root: a runtime is a list of modules started in declared
 * order, each `{ start, drain, close }` (as fastify plugins and their
 * `onClose` hooks). Modules meet through named services (`provide` /
 * `need`) instead of one setup function that knows every subsystem: a store,
 * a transport, a metric or an event consumer is one more module in the list.
 *
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

/** What a module sees of its runtime. */
export interface RuntimeContext {
  /** A service for the modules after this one (a name is provided once). */
  provide<T>(name: string, value: T): T;
  /** A service an earlier module provided; throws naming the module that should have. */
  need<T>(name: string): T;
  /** A service, if some module provided it. */
  find<T>(name: string): T | undefined;
}

/**
 * @example
 * const store: RuntimeModule = {
 *   name: 'store',
 *   start: (rt) => { rt.provide('store', SqliteStore.open(path)) },
 *   close: () => store.close(),
 * };
 */
export interface RuntimeModule {
  readonly name: string;
  start(rt: RuntimeContext): void | Promise<void>;
  /** Stop taking new work and finish what is in hand, within `deadlineMs`. */
  drain?(deadlineMs: number): void | Promise<void>;
  /** Release what `start` took (files, sockets, timers). */
  close?(): void | Promise<void>;
}

/** A wiring mistake: a service needed before it is provided, a name provided twice, a module started twice. */
export class RuntimeError extends SvcError {
  constructor(message: string) {
    super('SVC_ERR_RUNTIME', message, { status: RUNTIME_ERRORS.SVC_ERR_RUNTIME.status });
    this.name = 'RuntimeError';
  }
}

/**
 * @example
 * const rt = createRuntime([logModule, storeModule, graphModule, httpModule]);
 * await rt.start();
 * await rt.drain(10_000);
 * await rt.close();
 */
export class Runtime implements RuntimeContext {
  private readonly services = new Map<string, unknown>();
  private readonly providers = new Map<string, string>();
  private readonly started: RuntimeModule[] = [];
  private current = '';
  private state: 'new' | 'starting' | 'started' | 'draining' | 'closed' = 'new';
  private closing: Promise<void> | undefined;

  constructor(
    readonly modules: readonly RuntimeModule[],
    private readonly onError: (error: unknown, module: string, phase: 'drain' | 'close') => void = (error, module, phase) =>
      console.error(`[svc runtime] ${module} failed to ${phase}:`, error),
  ) {
    const names = new Set<string>();
    for (const m of modules) {
      if (names.has(m.name)) throw new RuntimeError(`two runtime modules are named ${m.name}`);
      names.add(m.name);
    }
  }

  provide<T>(name: string, value: T): T {
    const by = this.providers.get(name);
    if (by !== undefined) throw new RuntimeError(`${this.current || 'a module'} provides ${name}, already provided by ${by}`);
    this.services.set(name, value);
    this.providers.set(name, this.current);
    return value;
  }

  need<T>(name: string): T {
    if (!this.services.has(name)) throw new RuntimeError(`${this.current || 'the runtime'} needs ${name}, which no module before it provides`);
    return this.services.get(name) as T;
  }

  find<T>(name: string): T | undefined {
    return this.services.get(name) as T | undefined;
  }

  /** Names of the modules started so far, in order. */
  get startedModules(): string[] {
    return this.started.map((m) => m.name);
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new RuntimeError(`the runtime is ${this.state}`);
    this.state = 'starting';
    for (const module of this.modules) {
      this.current = module.name;
      try {
        await module.start(this);
      } catch (error) {
        this.current = '';
        await this.close();
        throw error;
      }
      this.started.push(module);
    }
    this.current = '';
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

/** A runtime of these modules, not started yet. */
export function composeRuntime(modules: readonly RuntimeModule[], options: { onError?: (error: unknown, module: string, phase: 'drain' | 'close') => void } = {}): Runtime {
  return new Runtime(modules, options.onError);
}
