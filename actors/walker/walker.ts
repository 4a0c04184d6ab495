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
import { type ConnectionInfo, MAX_META_BYTES, messageJson, roomError, type RoomSpec, roomSpecOf, type SendTarget, type SocketEffects, toTarget } from './rooms.ts';

/** What a walker's room calls need of its run (implemented by `WalkerRun`). */
export interface SocketSource {
  /** The WebSocket connection whose frame started the run, if one did. */
  readonly connection: ConnectionInfo | undefined;
  readonly roomSpecs: readonly RoomSpec[];
  /** The run's effects on connections (made on first use). */
  socketEffects(): SocketEffects;
}

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
  sockets: SocketSource;
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

  /**
   * The id of the WebSocket connection whose frame started this run
   * (undefined over HTTP and elsewhere): what `sendTo({ connection })` takes.
   */
  get connection(): string | undefined {
    return this.state().sockets.connection?.id;
  }

  /**
   * Join this run's WebSocket connection to `room` once the run commits.
   * The room must match a `rooms()` declaration of the app (`ROOM_INVALID`),
   * pass its `authorize` (`ROOM_FORBIDDEN`) and stay within the rooms a
   * connection may be in (`ROOM_LIMIT`). `meta`: a small JSON object others
   * see in the room's presence (at most 1 KiB).
   *
   * @example
   * @entry(Root) async enter() { await this.join(`chat:${this.room}`, { name: this.name }); }
   */
  async join(room: string, meta?: Record<string, unknown>): Promise<void> {
    const s = this.state();
    const src = s.sockets;
    const conn = src.connection;
    if (!conn) throw roomError('ROOM_NO_CONNECTION');
    const spec = roomSpecOf(src.roomSpecs, room);
    if (!spec) throw roomError('ROOM_INVALID', `no rooms() declaration matches ${typeof room === 'string' ? JSON.stringify(room.slice(0, 200)) : 'a room that is not a string'}`);
    let metaJson: string | undefined;
    if (meta !== undefined) {
      if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw roomError('ROOM_BAD_MESSAGE', 'join(room, meta): meta is a JSON object');
      metaJson = messageJson(meta, MAX_META_BYTES);
    }
    if (spec.authorize && (await spec.authorize(room, s.caller, meta)) !== true) throw roomError('ROOM_FORBIDDEN', `this connection may not join ${room}`);
    const fx = src.socketEffects();
    const now = roomsAfter(conn, fx);
    if (!now.has(room)) {
      if (now.size >= conn.maxRooms) throw roomError('ROOM_LIMIT', `a connection may be in at most ${conn.maxRooms} rooms`);
      const max = spec.maxPerConnection;
      if (max !== undefined) {
        let n = 0;
        for (const r of now) if (spec.matches(r)) n++;
        if (n >= max) throw roomError('ROOM_LIMIT', `a connection may be in at most ${max} rooms like ${room}`);
      }
    }
    fx.rooms.push(metaJson === undefined ? { op: 'join', room } : { op: 'join', room, meta: metaJson });
  }

  /** Take this run's WebSocket connection out of `room` once the run commits (nothing if it is not in it). */
  leave(room: string): void {
    const src = this.state().sockets;
    if (!src.connection) throw roomError('ROOM_NO_CONNECTION');
    if (typeof room !== 'string') throw roomError('ROOM_INVALID', 'leave(room) takes a room name');
    src.socketEffects().rooms.push({ op: 'leave', room });
  }

  /**
   * Send `data` (JSON) to every connection in a room, every connection of a
   * user (`{ user: id }`) or one connection (`{ connection: id }`), on every
   * worker thread and cluster member, once this run commits (never if it
   * fails). Clients receive `{"type":"message","room"?,"id"?,"data"}`.
   *
   * @example
   * this.sendTo(`chat:${this.room}`, { from: this.caller.userId, text: this.text });
   */
  sendTo(to: SendTarget, data: unknown): void {
    const src = this.state().sockets;
    const target = toTarget(to);
    const json = messageJson(data);
    src.socketEffects().sends.push({ to: target, data: json });
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const f of walkerInfo(this.constructor as WalkerClass).fields) out[f] = (this as unknown as Record<string, unknown>)[f];
    return out;
  }
}

/** The rooms a connection is in once a run's effects so far apply. */
function roomsAfter(conn: ConnectionInfo, fx: SocketEffects): Set<string> {
  const now = new Set(conn.rooms);
  for (const r of fx.rooms) {
    if (r.op === 'join') now.add(r.room);
    else now.delete(r.room);
  }
  return now;
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
