/**
 * Walkers: objects that travel the graph. A walker is spawned at a node (the
 * caller's root by default) with its `has` fields filled from the request;
 * at each node its matching `@entry` abilities run, it `visit`s more nodes
 * (breadth-first by default), `report`s values, and can `skip` the rest of a
 * node or `disengage` entirely.
 */
import type { TObject } from 'typebox';
import { ANCHOR, type Node, type Root } from './archetype.ts';
import { buildInfo, type ClassInfo, registerBase } from './class-info.ts';
import type { Access, Caller, RestSpec } from './fn.ts';
import { graphError } from './errors.ts';
import type { WalkerLogger } from './log.ts';

/** Makes loggers bound to a walker or function of a run (implemented by `WalkerRun`). */
export interface LogSource {
  loggerFor(key: 'walker' | 'function', name: string): WalkerLogger;
}

/** The runtime's half of a walker (not part of its fields). */
export interface WalkerState {
  queue: NodeQueue;
  reports: unknown[];
  disengaged: boolean;
  root: Root;
  caller: Caller;
  spawn(walker: string | WalkerClass, fields: Record<string, unknown>, at: Node | string | undefined): Promise<unknown[]>;
  /** The name the walker was spawned by (its exported name). */
  name: string;
  traceId: string | undefined;
  /** Made the first time the walker logs. */
  log: WalkerLogger | undefined;
  logs: LogSource;
}

export const STATE = Symbol('svc.walker');

/** The visit queue: O(1) at both ends. */
export class NodeQueue {
  private items: Node[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(nodes: readonly Node[]): void {
    for (const n of nodes) this.items.push(n);
  }

  pushFront(nodes: readonly Node[]): void {
    if (this.head >= nodes.length) {
      this.head -= nodes.length;
      for (let i = 0; i < nodes.length; i++) this.items[this.head + i] = nodes[i] as Node;
    } else {
      this.items = [...nodes, ...this.items.slice(this.head)];
      this.head = 0;
    }
  }

  shift(): Node | undefined {
    if (this.head >= this.items.length) return undefined;
    const n = this.items[this.head] as Node;
    this.items[this.head++] = undefined as unknown as Node;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return n;
  }
}

/** Thrown by `skip()` / `disengage()` and caught by the runtime. */
export class Signal {
  constructor(readonly kind: 'skip' | 'disengage') {}
}
const SKIP = new Signal('skip');
const DISENGAGE = new Signal('disengage');

/**
 * @example
 * export class CreateTodo extends Walker {
 *   static access = 'pub' as const;
 *   static has = T.Object({ title: T.String() });
 *   declare title: string;
 *   @entry(Root) async make(here: Root) {
 *     this.report(await here.connect(new Todo({ title: this.title })));
 *   }
 * }
 */
export class Walker {
  // Subclasses declare (no `override` needed, the base declares none):
  //   static has = T.Object({...})      fields taken from the request body, validated, defaults applied
  //   static access = 'pub'             callable without a token ('priv', the default, and 'protect' need one)
  //   static spec = restspec({...})     how the walker is exposed over HTTP / WebSocket / webhook
  // What the base declares (`report`, `visit`, `root`, `log`, `traceId`, …) are prototype members, never
  // fields: a `has` field may not take their names, and they stay out of reports, schemas and `toJSON`.

  declare [STATE]: WalkerState;

  private state(): WalkerState {
    const s = this[STATE];
    if (!s) throw graphError('SVC_ERR_NOT_IN_RUN', `${this.constructor.name} is not running`);
    return s;
  }

  /** Add a value to what the walker returns (`data.reports`). */
  report(value: unknown): void {
    this.state().reports.push(value);
  }

  /** Queue nodes to visit after the current one (`{ first: true }`: before the others queued). */
  visit(nodes: Node | readonly Node[] | undefined | null, options: { first?: boolean } = {}): void {
    if (!nodes) return;
    const list = Array.isArray(nodes) ? (nodes as Node[]) : [nodes as Node];
    for (const n of list) {
      if (!n || !(n as Node)[ANCHOR]) throw graphError('SVC_ERR_INVALID_FIELDS', 'visit() takes nodes');
    }
    const queue = this.state().queue;
    if (options.first) queue.pushFront(list);
    else queue.push(list);
  }

  /** Stop at once: no more abilities, no more nodes. What was reported stays. */
  disengage(): never {
    this.state().disengaged = true;
    throw DISENGAGE;
  }

  /** Leave the current node at once and go on with the next queued one. */
  skip(): never {
    throw SKIP;
  }

  /** Run another walker now, in the same transaction; resolves to its reports. */
  spawn(walker: string | WalkerClass, fields: Record<string, unknown> = {}, at?: Node | string): Promise<unknown[]> {
    return this.state().spawn(walker, fields, at);
  }

  /** The caller's root node. */
  get root(): Root {
    return this.state().root;
  }

  /** Who the walker runs for. */
  get caller(): Caller {
    return this.state().caller;
  }

  /** What was reported so far. */
  get reports(): readonly unknown[] {
    return this.state().reports;
  }

  /**
   * The trace id of the request that spawned the walker (the run's), if it
   * had one. Node abilities read it from the walker they are given.
   */
  get traceId(): string | undefined {
    return this.state().traceId;
  }

  /**
   * A logger whose lines carry `walker` (its name), `trace_id` and `root`:
   * `this.log.info('msg')`, `this.log.warn({ key }, 'msg')`. Node abilities
   * log through the walker they are given.
   *
   * @example
   * this.log.info({ count: todos.length }, 'tidying');
   */
  get log(): WalkerLogger {
    const s = this.state();
    return (s.log ??= s.logs.loggerFor('walker', s.name));
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const f of walkerInfo(this.constructor as WalkerClass).fields) out[f] = (this as unknown as Record<string, unknown>)[f];
    return out;
  }
}

registerBase('walker', Walker.prototype);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type WalkerClass<W extends Walker = Walker> = (new () => W) & { has?: TObject; access?: Access; spec?: RestSpec; name: string };

export function isWalkerClass(x: unknown): x is WalkerClass {
  return typeof x === 'function' && x.prototype instanceof Walker;
}

export function walkerInfo(cls: WalkerClass): ClassInfo {
  return buildInfo(cls, 'walker');
}
