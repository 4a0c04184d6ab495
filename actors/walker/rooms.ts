/**
 * Rooms of WebSocket connections, as the app declares them and walker code
 * uses them: `rooms({...})` exported from the entry file names a family of
 * rooms (a name pattern, who may join, history, presence), and a WebSocket
 * walker joins its connection with `await this.join(room)`. What a run asks
 * of its connection (joins, leaves, messages to send) rides back in its
 * reply and is applied once the run has committed; the transport (the
 * WebSocket hub) does the rest.
 */
import { SvcError } from '../../kernel/index.ts';
import type { Caller } from './fn.ts';

/** Errors of rooms and messages to connections (codes listed in docs/errors.md). */
export const ROOM_ERRORS = {
  ROOM_INVALID: { status: 400, message: 'no rooms declaration matches that room name' },
  ROOM_FORBIDDEN: { status: 403, message: 'the app refused this connection that room' },
  ROOM_LIMIT: { status: 409, message: 'this connection is in as many rooms as it may be' },
  ROOM_NOT_JOINED: { status: 409, message: 'this connection is not in that room' },
  ROOM_NO_CONNECTION: { status: 400, message: 'only a run started by a WebSocket frame has a connection to join rooms with' },
  ROOM_BAD_MESSAGE: { status: 400, message: 'a message to a room, user or connection must be JSON within the frame limit' },
  ROOM_BUSY: { status: 503, message: 'the room cannot take more messages now (its history holds too many waiting): try again' },
} as const;

export type RoomErrorCode = keyof typeof ROOM_ERRORS;

export function roomError(code: RoomErrorCode, message?: string): SvcError {
  return new SvcError(code, message ?? ROOM_ERRORS[code].message, { status: ROOM_ERRORS[code].status });
}

/** Who a message goes to: a room by name, every connection of a user, or one connection. */
export type SendTarget = string | { room: string } | { user: string } | { connection: string };

/** A target in the form that crosses threads: `r` room, `u` user, `c` connection. */
export type Target = { k: 'r' | 'u' | 'c'; n: string };

/** Longest room name, user id or connection id accepted as a target. */
export const MAX_TARGET_LENGTH = 200;

/** A lone surrogate: not text (it would not survive encoding between threads). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `s` is well-formed text (no lone surrogate). */
export function wellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** A target as it crosses threads; throws `ROOM_BAD_MESSAGE` for anything else. */
export function toTarget(to: SendTarget): Target {
  let t: Target | undefined;
  if (typeof to === 'string') t = { k: 'r', n: to };
  else if (to && typeof to === 'object') {
    const o = to as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1) {
      const v = o[keys[0] as string];
      if (typeof v === 'string') {
        if (keys[0] === 'room') t = { k: 'r', n: v };
        else if (keys[0] === 'user') t = { k: 'u', n: v };
        else if (keys[0] === 'connection') t = { k: 'c', n: v };
      }
    }
  }
  if (!t || t.n.length === 0 || t.n.length > MAX_TARGET_LENGTH || !wellFormed(t.n)) {
    throw roomError('ROOM_BAD_MESSAGE', `sendTo() takes a room name, { user: id } or { connection: id } (1 to ${MAX_TARGET_LENGTH} characters)`);
  }
  return t;
}

/** Bounded history of a room: the last `size` messages no older than `ttlSeconds`, at most `maxBytes` of frames together. */
export interface RoomHistory {
  size: number;
  ttlSeconds: number;
  /** Default 1 MiB (characters of the frames kept; the newest is always kept). */
  maxBytes: number;
}

export interface RoomsOptions {
  /** Which room names this declaration covers: a RegExp, or a string where `*` matches any run of characters but `/`. */
  pattern: RegExp | string;
  /**
   * Asked on every join (from walker code or a client's `join` frame), with
   * the presence metadata the join carries: anything but true refuses it
   * (`ROOM_FORBIDDEN`). Without it, a walker's `join` is the check, and a
   * client may rejoin only a room a walker joined it to, with the ticket and
   * the meta it was given.
   */
  authorize?: (room: string, caller: Caller, meta?: Record<string, unknown>) => boolean | Promise<boolean>;
  /** Keep the last messages for reconnecting clients to resume from. */
  history?: Partial<RoomHistory>;
  /** Tell the room's connections when a user joins or leaves (`{"type":"presence"}` frames). Presence can be asked either way. */
  notify?: boolean;
  /** At most this many rooms per connection (all declarations together count against the setting `max_rooms_per_connection`). */
  maxPerConnection?: number;
}

const ROOMS = Symbol.for('svc.rooms');

/** A family of rooms an app declares (what {@link rooms} returns). */
export class RoomSpec {
  readonly [ROOMS] = true;
  readonly pattern: RegExp;
  readonly authorize: ((room: string, caller: Caller, meta?: Record<string, unknown>) => boolean | Promise<boolean>) | undefined;
  readonly history: RoomHistory | undefined;
  readonly notify: boolean;
  readonly maxPerConnection: number | undefined;

  constructor(o: RoomsOptions) {
    if (!o || (typeof o.pattern !== 'string' && !(o.pattern instanceof RegExp))) throw new TypeError('rooms({ pattern }) takes a RegExp or a string pattern');
    this.pattern = typeof o.pattern === 'string' ? globPattern(o.pattern) : o.pattern;
    if (o.authorize !== undefined && typeof o.authorize !== 'function') throw new TypeError('rooms({ authorize }) takes a function (room, caller) => boolean');
    this.authorize = o.authorize;
    if (o.history) {
      const size = o.history.size ?? 100;
      const ttlSeconds = o.history.ttlSeconds ?? 300;
      const maxBytes = o.history.maxBytes ?? 1024 * 1024;
      if (!Number.isInteger(maxBytes) || maxBytes < 1) throw new TypeError('rooms({ history: { maxBytes } }) takes a positive integer');
      if (!Number.isInteger(size) || size < 1 || size > 100_000) throw new TypeError('rooms({ history: { size } }) takes an integer from 1 to 100000');
      if (!(ttlSeconds > 0)) throw new TypeError('rooms({ history: { ttlSeconds } }) takes a positive number');
      this.history = { size, ttlSeconds, maxBytes };
    }
    this.notify = o.notify === true;
    if (o.maxPerConnection !== undefined && (!Number.isInteger(o.maxPerConnection) || o.maxPerConnection < 1)) throw new TypeError('rooms({ maxPerConnection }) takes a positive integer');
    this.maxPerConnection = o.maxPerConnection;
  }

  matches(room: string): boolean {
    this.pattern.lastIndex = 0;
    return this.pattern.test(room);
  }
}

function globPattern(glob: string): RegExp {
  const body = glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]+');
  return new RegExp(`^${body}$`);
}

/**
 * Declare a family of rooms for WebSocket connections. Export it from the
 * entry file; a room name no declaration matches cannot be joined.
 *
 * @example
 * export const chatRooms = rooms({
 *   pattern: /^chat:[a-z0-9-]{1,40}$/,
 *   authorize: (room, caller) => caller.userId !== undefined,
 *   history: { size: 100, ttlSeconds: 600 },
 *   notify: true,
 * });
 */
export function rooms(options: RoomsOptions): RoomSpec {
  return new RoomSpec(options);
}

export function isRoomSpec(x: unknown): x is RoomSpec {
  return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[ROOMS] === true;
}

/** The first declaration that covers `room`, if any. */
export function roomSpecOf(specs: readonly RoomSpec[], room: string): RoomSpec | undefined {
  if (typeof room !== 'string' || room.length === 0 || room.length > MAX_TARGET_LENGTH || !wellFormed(room)) return undefined;
  for (const s of specs) if (s.matches(room)) return s;
  return undefined;
}

/** The connection a WebSocket run came from: its id and the rooms it is in. */
export interface ConnectionInfo {
  id: string;
  rooms: string[];
  /** Rooms it may be in at most (the setting). */
  maxRooms: number;
}

/** What a run asks of its connection and of other connections, applied once it has committed. */
export interface SocketEffects {
  /** Rooms joined (with presence metadata as JSON text) and left, in order. */
  rooms: ({ op: 'join'; room: string; meta?: string } | { op: 'leave'; room: string })[];
  /** Messages, their data as JSON text. */
  sends: { to: Target; data: string }[];
}

/** Presence metadata is at most this many bytes of JSON. */
export const MAX_META_BYTES = 1024;

/** Data of one message is at most this many bytes of JSON (the transport's frame limit applies too). */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** JSON text of a message's data; throws `ROOM_BAD_MESSAGE`. */
export function messageJson(data: unknown, limit = MAX_MESSAGE_BYTES): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw roomError('ROOM_BAD_MESSAGE', 'a message must be JSON (not undefined, a function, or circular)');
  if (json.length > limit && Buffer.byteLength(json) > limit) throw roomError('ROOM_BAD_MESSAGE', `a message is limited to ${limit} bytes of JSON`);
  return json;
}

/** A room's presence, as `presence(room)` and the `presence` frame answer it. */
export interface RoomPresence {
  room: string;
  /** Each user in the room: how many connections they have in it, and the metadata of one of them. */
  users: { user: string; connections: number; meta: unknown }[];
  /** Connections without a user (guests). */
  guests: number;
  /** Every connection in the room. */
  connections: number;
}

/** What the runtime of a thread binds for {@link sendTo} and {@link presence}. */
export interface RoomsBinding {
  /** False when the message could not be taken (a room with history that is busy). */
  send(to: Target, data: string): boolean;
  presence(room: string): Promise<RoomPresence>;
}

const roomBindings: RoomsBinding[] = [];

/** Bind this thread's rooms (the WebSocket hub's); returns the unbinding. */
export function bindRooms(binding: RoomsBinding): () => void {
  roomBindings.push(binding);
  return () => {
    const i = roomBindings.lastIndexOf(binding);
    if (i >= 0) roomBindings.splice(i, 1);
  };
}

function boundRooms(what: string): RoomsBinding {
  const b = roomBindings[roomBindings.length - 1];
  if (!b) throw new Error(`${what}: no svc runtime serves WebSockets in this thread`);
  return b;
}

/**
 * Send `data` (JSON) now to every connection in a room, every connection of
 * a user (`{ user: id }`) or one connection (`{ connection: id }`), on every
 * worker thread and cluster member — from a function, an event handler, any
 * code of a serving app. (In a walker, `this.sendTo` sends only once the run
 * commits.) Clients receive `{"type":"message","room"?,"id"?,"data"}`.
 * Throws `ROOM_BUSY` (503) when a room with history cannot take it now.
 *
 * @example
 * export const announce = fn({ params: T.Object({ text: T.String() }) }, ({ text }) => sendTo('chat:lobby', { text }));
 */
export function sendTo(to: SendTarget, data: unknown): void {
  const target = toTarget(to);
  const json = messageJson(data);
  if (!boundRooms('sendTo()').send(target, json)) throw roomError('ROOM_BUSY', `${target.n} cannot take more messages now: try again`);
}

/**
 * Who is in a room now, on every worker thread and cluster member: each
 * user with their connection count and metadata, and the guests.
 *
 * @example
 * const { users } = await presence('chat:lobby');
 */
export function presence(room: string): Promise<RoomPresence> {
  if (typeof room !== 'string' || room.length === 0 || room.length > MAX_TARGET_LENGTH) return Promise.reject(roomError('ROOM_INVALID', 'presence(room) takes a room name'));
  return boundRooms('presence()').presence(room);
}
