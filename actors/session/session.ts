/**
 * One WebSocket connection to a walker, as an actor: it holds the caller (user
 * and root) and handles the client's frames one at a time, in order. It knows
 * nothing of sockets: the transport gives it a {@link SessionSink} to answer
 * through, and the functions to verify tokens and run walkers.
 *
 * Frames (text, JSON):
 * - a walker run: `{...fields, "id"?}` → `{"ok": true, "data": {"result": null, "reports": [...]}, "id"?}`
 *   or `{"ok": false, "error": {"code", "message"}, "id"?}`;
 * - `{"token": "..."}` alone (with an optional id): authenticate (answered `{"type": "authenticated"}`);
 * - `{"type": "ping"}` → `{"type": "pong"}`;
 * - `{"type": "refresh", "token": "..."}`: swap the token of the live connection (same user).
 *
 * A `token` in any frame is verified before anything runs: the first one makes
 * a guest the token's user; later ones must be the same user's (4403 otherwise)
 * and replace the current token. A bad one closes the connection (4401).
 */
import { type ActorLogic, mayHoldReservedKey, type Props, RESERVED_KEY, reservedKeyPath } from '../../kernel/index.ts';
import type { ConnectionInfo, SocketEffects } from '../walker/index.ts';

/** Close codes of a session (WebSocket application range). */
export const CLOSE = {
  /** A bad, expired, revoked or missing token. */
  UNAUTHORIZED: 4401,
  /** A good token that may not use this walker (or must change its password first). */
  FORBIDDEN: 4403,
  /** No frame (or no token) in time. */
  TIMEOUT: 4408,
  /** A frame over the size limit. */
  TOO_LARGE: 4413,
  /** The server is shutting down. */
  DRAINING: 4503,
  /** The token could not be checked now (the shared database cannot be reached): try again later. */
  TRY_AGAIN: 1013,
} as const;

/** What a session needs of the socket under it. */
export interface SessionSink {
  send(text: string): void;
  close(code: number, reason: string): void;
  /** Start receiving the walker's broadcasts (called once the session may). */
  subscribe(): void;
  /** Send to every other subscriber of the walker, on every thread. */
  publish(text: string): void;
  /** A frame of `bytes` has been taken off the queue (inbound accounting). */
  taken(bytes: number): void;
  /** The connection has a user now (it receives that user's messages). */
  identified?(userId: string): void;
  /** The connection as a run sees it (its id, its rooms). */
  connection?(): ConnectionInfo;
  /** Apply what a committed run asked of connections (rooms, messages), before its reply is sent: a promise while joins are under way. */
  apply?(effects: SocketEffects): Promise<void> | void;
  /** A room frame of the client (`join`, `leave`, `presence`): answered through `reply`; throws an error with a code for a refusal. */
  room?(type: 'join' | 'leave' | 'presence', frame: Record<string, unknown>, caller: SessionCaller, reply: (body: Record<string, unknown>) => void): Promise<void> | void;
}

export interface SessionCaller {
  userId?: string;
  rootId: string;
  role?: string;
}

/** What the transport resolves from a token (throws an error with `code` and `message` when bad). */
export interface SessionAuth {
  verify(token: string): { caller: SessionCaller; userId: string; mustChangePassword: boolean };
  /** Make `verify` able to answer for this token (a shared users repository learns the user first); undefined when it already can. */
  prepare?(token: string): Promise<void> | undefined;
  /** Whether {@link prepare} may have to wait (the socket layer then admits upgrades asynchronously). */
  readonly asynchronous?: boolean;
}

/** Everything a session shares with the others of its walker on this thread. */
export interface SessionEnv {
  walker: string;
  /** `pub`: no token needed. */
  isPublic: boolean;
  broadcast: boolean;
  auth: SessionAuth;
  /**
   * Run the walker for a caller; resolves to the reports as JSON text, and
   * what the run asked of connections. `token`: the connection's (for the
   * run's service-to-service calls to forward); `conn`: the connection.
   */
  run(fields: Record<string, unknown>, caller: SessionCaller, token?: string, conn?: ConnectionInfo): Promise<{ json: string; socket?: SocketEffects }>;
  /** The stable code and message of a failure (no stack outside development). */
  errorOf(error: unknown): { code: string; message: string };
  /** The guest caller (public walkers without a token). */
  guest: SessionCaller;
  /** Frames `{"type": "join" | "leave" | "presence", ...}` are the client's room frames (false when the walker declares a `type` field: they are its own). */
  roomFrames?: boolean;
}

export type SessionMsg = { t: 'frame'; text: string; bytes: number };

type Id = string | number;

function idOf(frame: Record<string, unknown>): Id | undefined {
  const id = frame.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : undefined;
}

function reply(body: Record<string, unknown>, id: Id | undefined): string {
  if (id !== undefined) body.id = id;
  return JSON.stringify(body);
}

function errorFrame(code: string, message: string, id: Id | undefined): string {
  return reply({ ok: false, error: { code, message } }, id);
}

const CONTROL_KEYS = new Set(['type', 'token', 'id']);
/** Room frames of the client, and the keys they may carry. */
const ROOM_FRAMES = new Set(['join', 'leave', 'presence']);
const ROOM_KEYS = new Set(['type', 'token', 'id', 'room', 'since', 'ticket', 'meta']);

/** The state of one connection. */
export class Session implements ActorLogic<SessionMsg, void> {
  private caller: SessionCaller | undefined;
  private token: string | undefined;
  private userId: string | undefined;
  private closed = false;
  private reapprove: ((caller: SessionCaller) => Promise<{ code: string; message: string } | undefined>) | undefined;

  constructor(
    private readonly env: SessionEnv,
    private readonly sink: SessionSink,
  ) {}

  /**
   * The connection is open: take the query token (closing at once when it is
   * bad), or the guest on a public walker. `reapprove`: hook walkers judged the
   * upgrade for its caller; a frame token for someone else is judged again.
   */
  start(queryToken: string | undefined, reapprove?: (caller: SessionCaller) => Promise<{ code: string; message: string } | undefined>): void {
    this.reapprove = reapprove;
    if (queryToken !== undefined) {
      this.authenticate(queryToken);
    } else if (this.env.isPublic) {
      this.caller = this.env.guest;
      if (this.env.broadcast) this.sink.subscribe();
    }
  }

  /** The user of the connection's token, once it has one. */
  get user(): string | undefined {
    return this.userId;
  }

  /** Whether the session still waits for its token (private walker, none given yet). */
  get awaitingToken(): boolean {
    return !this.closed && this.caller === undefined;
  }

  /** The socket went away (or is being closed by the server): send nothing more. */
  detach(): void {
    this.closed = true;
  }

  /** Check the current token again (expiry, revocation): a listener that never sends frames is closed too. */
  recheck(): void {
    if (!this.closed && this.token !== undefined) this.authenticate(this.token);
  }

  private close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.sink.close(code, reason);
  }

  /** Verify a token and take its caller; closes the connection (and returns false) when it is not good. */
  private authenticate(token: string): boolean {
    let who: ReturnType<SessionAuth['verify']>;
    try {
      who = this.env.auth.verify(token);
    } catch (error) {
      this.close(CLOSE.UNAUTHORIZED, this.env.errorOf(error).message);
      return false;
    }
    if (who.mustChangePassword) {
      this.close(CLOSE.FORBIDDEN, 'change the password first (PUT /user/password)');
      return false;
    }
    if (this.userId !== undefined && who.userId !== this.userId) {
      this.close(CLOSE.FORBIDDEN, 'a refreshed token must be for the same user');
      return false;
    }
    const first = this.caller === undefined || this.token === undefined;
    this.caller = who.caller;
    this.token = token;
    this.userId = who.userId;
    if (first && this.env.broadcast) this.sink.subscribe();
    if (first) this.sink.identified?.(who.userId);
    return true;
  }

  async receive(msg: SessionMsg): Promise<void> {
    this.sink.taken(msg.bytes);
    if (this.closed) return;
    let frame: unknown;
    try {
      frame = JSON.parse(msg.text);
    } catch (error) {
      if (this.awaitingToken) return this.close(CLOSE.UNAUTHORIZED, 'the first frame must be a JSON object with a token');
      return this.sink.send(errorFrame('INVALID_JSON', `the frame is not valid JSON: ${(error as Error).message}`, undefined));
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
      if (this.awaitingToken) return this.close(CLOSE.UNAUTHORIZED, 'the first frame must be a JSON object with a token');
      return this.sink.send(errorFrame('VALIDATION_ERROR', 'a frame must be a JSON object of walker fields', undefined));
    }
    const f = frame as Record<string, unknown>;
    const id = idOf(f);
    // `__proto__` would be renamed on its way to the partition's thread: refused, never changed (kernel/reserved-key.ts).
    const reserved = mayHoldReservedKey(msg.text) ? reservedKeyPath(f, 'frame') : undefined;
    if (reserved !== undefined) {
      return this.sink.send(errorFrame('RESERVED_KEY', `${reserved}: a key named ${RESERVED_KEY} cannot be taken (svc would lose or rename it: it names the prototype of a JavaScript object); use another name`, id));
    }
    const keys = Object.keys(f);
    const control =
      typeof f.type === 'string' && (keys.every((k) => CONTROL_KEYS.has(k)) || (ROOM_FRAMES.has(f.type) && this.env.roomFrames === true && this.sink.room !== undefined && keys.every((k) => ROOM_KEYS.has(k)))) ? f.type : undefined;

    if (Object.hasOwn(f, 'token')) {
      // A token in a frame is verified first, whatever else the frame holds.
      if (typeof f.token !== 'string' || f.token === '') return this.close(CLOSE.UNAUTHORIZED, 'the token must be a non-empty string');
      const before = this.userId;
      // A shared users repository: learn the token's user first (an unreachable database closes with "try again later").
      const learning = this.env.auth.prepare?.(f.token);
      if (learning) {
        try {
          await learning;
        } catch (error) {
          return this.close(CLOSE.TRY_AGAIN, this.env.errorOf(error).message);
        }
        if (this.closed) return;
      }
      if (!this.authenticate(f.token)) return;
      if (this.reapprove && this.userId !== before) {
        // The hooks judged the upgrade for someone else (the guest): they judge this user too.
        const refusal = await this.reapprove(this.caller as SessionCaller);
        if (refusal) return this.close(CLOSE.FORBIDDEN, `${refusal.code}: ${refusal.message}`);
      }
    } else if (this.awaitingToken) {
      return this.close(CLOSE.UNAUTHORIZED, `walker ${this.env.walker} needs a token (query parameter "token" or a first frame {"token": "..."})`);
    } else if (this.token !== undefined) {
      // Every frame re-checks the token: an expired or revoked one ends the connection.
      if (!this.authenticate(this.token)) return;
    }

    if (control === 'ping') return this.sink.send(reply({ type: 'pong' }, id));
    if (control === 'refresh') {
      if (!Object.hasOwn(f, 'token')) return this.sink.send(errorFrame('VALIDATION_ERROR', 'refresh needs a token', id));
      return this.sink.send(reply({ type: 'refreshed' }, id));
    }
    if (control !== undefined && ROOM_FRAMES.has(control) && this.sink.room) {
      try {
        await this.sink.room(control as 'join' | 'leave' | 'presence', f, this.caller as SessionCaller, (body) => {
          if (!this.closed) this.sink.send(reply(body, id));
        });
      } catch (error) {
        const e = this.env.errorOf(error);
        if (!this.closed) this.sink.send(errorFrame(e.code, e.message, id));
      }
      return;
    }
    // A frame that only carries a token (and perhaps an id) authenticates and runs nothing.
    if (Object.hasOwn(f, 'token') && keys.every((k) => k === 'token' || k === 'id')) return this.sink.send(reply({ type: 'authenticated' }, id));

    // The transport keeps the walker's declared fields only (`id` among them when the walker declares one); a frame
    // without a token goes as it is (a `__proto__` key was refused above).
    let fields = f;
    if (Object.hasOwn(f, 'token')) {
      fields = {};
      for (const k of keys) if (k !== 'token' && k !== '__proto__') fields[k] = f[k];
    }
    let json: string;
    let effects: SocketEffects | undefined;
    try {
      ({ json, socket: effects } = await this.env.run(fields, this.caller as SessionCaller, this.token, this.sink.connection?.()));
    } catch (error) {
      const e = this.env.errorOf(error);
      if (!this.closed) this.sink.send(errorFrame(e.code, e.message, id));
      return;
    }
    // Committed: its rooms and messages first, so its reply comes after the `joined` frames (a message to a room with
    // history goes through the room's actor first: it may come after the reply).
    if (effects !== undefined && this.sink.apply) {
      const applying = this.sink.apply(effects);
      if (applying !== undefined) await applying;
    }
    const data = `{"result":null,"reports":${json}}`;
    // The run is committed: the others hear of it even when the sender has gone meanwhile.
    if (this.env.broadcast) this.sink.publish(`{"ok":true,"data":${data}}`);
    if (this.closed) return;
    this.sink.send(id === undefined ? `{"ok":true,"data":${data}}` : `{"ok":true,"data":${data},"id":${JSON.stringify(id)}}`);
  }
}

/** Frames a session holds while it works on one (more are refused with an error frame). */
export const SESSION_MAILBOX = 256;

/** Props for one session's actor (not restarted: its state is the connection's). */
export function sessionProps(session: Session): Props<SessionMsg, void> {
  return { logic: () => session, capacity: SESSION_MAILBOX, overflow: 'reject', restart: 'temporary' };
}
