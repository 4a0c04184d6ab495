/**
 * The WebSocket side of one worker thread, whatever the socket layer: which
 * walkers are served at `/ws/<Name>`, one session actor per connection,
 * keep-alive pings, idle and auth timeouts, broadcast relayed to the other
 * threads, hook walkers before an upgrade, and draining on shutdown. The
 * uWebSockets.js and `ws` adapters hand it sockets as {@link SocketHandle}s.
 */
import type { TObject } from 'typebox';
import { type ActorRef, type ActorSystem, type Broadcast } from '../../kernel/index.ts';
import { bearer } from '../../actors/identity/index.ts';
import { APIProtocol, type EndpointAccess, type HookDispatcher, HookRefusal, type Registry, takesAnyFields, UnknownFields, walkerInfo } from '../../actors/walker/index.ts';
import { randomBytes } from 'node:crypto';
import { type ConnectionInfo, type SocketEffects } from '../../actors/walker/index.ts';
import { RoomHub, type RoomHubOptions } from './rooms.ts';
import { CLOSE, Session, type SessionAuth, type SessionCaller, type SessionEnv, type SessionMsg, type SessionSink, sessionProps } from '../../actors/session/index.ts';

/** A walker served over WebSocket. */
export interface WsRoute {
  name: string;
  access: EndpointAccess;
  broadcast: boolean;
  schema: TObject;
  /** Fields taken from frames. */
  fields: Set<string>;
  /** Undeclared fields in frames are not refused (`takesAnyFields`). */
  takesAny?: boolean;
  /** The pub/sub topic of its broadcasts. */
  topic: string;
}

/** Walkers declared with `protocol: APIProtocol.WEBSOCKET`. */
export function wsRoutes(registry: Registry): WsRoute[] {
  const routes: WsRoute[] = [];
  for (const [name, cls] of registry.walkers) {
    if (name.startsWith('_') || cls.spec?.protocol !== APIProtocol.WEBSOCKET) continue;
    const schema = walkerInfo(cls).schema;
    const fields = new Set(Object.keys(schema.properties ?? {}).filter((k) => k !== 'headers' && k !== 'request'));
    routes.push({ name, access: cls.access ?? 'priv', broadcast: cls.spec?.broadcast === true, schema, fields, takesAny: takesAnyFields(schema), topic: `ws/${name}` });
  }
  return routes;
}

export interface WsLimits {
  /** Frames larger than this close the connection with 4413. */
  maxFrameBytes: number;
  /** Unsent bytes a client may fall behind by before it is disconnected. */
  maxBufferedBytes: number;
  /** No frame and no pong for this long: closed with 4408. */
  idleTimeoutMs: number;
  /** A private walker's connection without a token must send one within this: else 4408. */
  authTimeoutMs: number;
  /** A ping goes to a connection silent for this long. */
  pingIntervalMs: number;
}

export const DEFAULT_WS_LIMITS: WsLimits = {
  maxFrameBytes: 64 * 1024,
  maxBufferedBytes: 1024 * 1024,
  idleTimeoutMs: 120_000,
  authTimeoutMs: 10_000,
  pingIntervalMs: 30_000,
};

/** One connection as the socket layer exposes it. */
export interface SocketHandle {
  send(text: string): void;
  end(code: number, reason: string): void;
  ping(): void;
  subscribe(topic: string): void;
  unsubscribe(topic: string): void;
  /** To every subscriber of the topic on this thread but this socket. */
  publishFromHere(topic: string, text: string): void;
}

/** A connection the hub tracks. */
export interface Conn {
  /** Its id in the cluster (what `sendTo({ connection })` takes). */
  readonly id: string;
  /** Rooms it is in, with its presence metadata (made on its first join). */
  rooms: Map<string, string | undefined> | undefined;
  /** Its user, once authenticated. */
  user: string | undefined;
  readonly route: WsRoute;
  readonly socket: SocketHandle;
  readonly session: Session;
  ref: ActorRef<SessionMsg, void> | undefined;
  openedAt: number;
  lastSeen: number;
  lastPing: number;
  closed: boolean;
  /** Bytes of frames received and not yet taken by the session. */
  inbound: number;
}

export interface WsHubOptions {
  system: ActorSystem;
  /** Carries broadcast replies to the hubs of the other threads (and pods); without it, broadcasts stay on this thread. */
  bus?: Broadcast;
  routes: WsRoute[];
  auth: SessionAuth;
  guest: SessionCaller;
  /** `token`: the connection's, when it has one (forwarded by the run's `sv` calls); `conn`: the connection the frame came on. */
  run(walker: string, fields: Record<string, unknown>, caller: SessionCaller, token?: string, conn?: ConnectionInfo): Promise<{ json: string; socket?: SocketEffects }>;
  /** Rooms: the app's declarations, the ticket key, the limit per connection, where room actors live. */
  rooms?: Partial<Omit<RoomHubOptions, 'system' | 'bus'>>;
  /** The stable code, message and (for a refused upgrade) HTTP status of a failure. */
  errorOf(error: unknown): { code: string; message: string; status?: number };
  /** Hook walkers, run before every upgrade (shared with the HTTP front). */
  hooks?: HookDispatcher;
  /** Fields a frame carries that the walker does not declare: refused (the default) or warned about, as HTTP bodies. */
  unknownFields?: UnknownFields;
  limits?: Partial<WsLimits>;
  /** Connection opened / closed (access log). */
  onEvent?: (event: { event: 'open' | 'close'; walker: string; code?: number; user?: string; ms?: number }) => void;
}

/** An error frame answering `text` (with its id, when it has one). */
function refusalFrame(text: string, code: string, message: string): string {
  let id: unknown;
  try {
    id = (JSON.parse(text) as { id?: unknown })?.id;
  } catch {
    // no id to echo
  }
  const frame: Record<string, unknown> = { ok: false, error: { code, message } };
  if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))) frame.id = id;
  return JSON.stringify(frame);
}

/** The broadcast topic that carries WebSocket broadcast replies between hubs. */
export const WS_RELAY_TOPIC = 'ws.relay';

type Relay = { topic: string; text: string };

/** A connection's side of its session: one object per connection (a closure per method cost a few hundred bytes more). */
class ConnSink implements SessionSink {
  conn!: Conn;

  constructor(private readonly hub: WsHub) {}

  send(text: string): void {
    if (!this.conn.closed) this.conn.socket.send(text);
  }

  close(code: number, reason: string): void {
    this.hub.close(this.conn, code, reason);
  }

  subscribe(): void {
    if (!this.conn.closed) this.conn.socket.subscribe(this.conn.route.topic);
  }

  publish(text: string): void {
    this.hub.publishReply(this.conn, text);
  }

  taken(bytes: number): void {
    this.conn.inbound -= bytes;
  }

  identified(user: string): void {
    this.hub.rooms.identified(this.conn, user);
  }

  connection(): ConnectionInfo {
    const rooms = this.hub.rooms;
    return { id: this.conn.id, rooms: rooms.roomsOf(this.conn), maxRooms: rooms.maxRooms };
  }

  apply(fx: SocketEffects): Promise<void> | void {
    return this.hub.rooms.apply(this.conn, fx);
  }

  room(type: 'join' | 'leave' | 'presence', f: Record<string, unknown>, caller: SessionCaller, reply: (body: Record<string, unknown>) => void): Promise<void> | void {
    const rooms = this.hub.rooms;
    if (type === 'join') return rooms.clientJoin(this.conn, caller, f, reply);
    if (type === 'leave') return rooms.clientLeave(this.conn, f, reply);
    return rooms.clientPresence(this.conn, f, reply);
  }
}

/** What {@link WsHub.admit} reads of an upgrade when no hook declares `headers`. */
const HOOK_HEADERS = ['authorization'] as const;

/** The verdict on an upgrade request. */
export type Upgrade =
  | {
      ok: true;
      route: WsRoute;
      token: string | undefined;
      /** What the hook walkers approved: the request they saw and for whom (a later token for someone else is checked again). */
      hooked?: HookApproval;
    }
  | { ok: false; status: number; code: string; message: string; details?: unknown };

/** What an upgrade request carried, copied from it (for hook walkers). */
/** What the hooks approved on an upgrade. */
export interface HookApproval {
  request: UpgradeRequest;
  userId: string | undefined;
}

export interface UpgradeRequest {
  /** As sent, without the query. */
  path: string;
  /** The raw query string (no `?`). */
  query: string;
  /** Lower-case names: every header when {@link WsHub.hookHeaders} is `'all'`, else those it names. */
  headers: Record<string, string>;
}

export class WsHub {
  readonly limits: WsLimits;
  readonly conns = new Set<Conn>();
  private readonly byName = new Map<string, WsRoute>();
  /** What the sessions of one walker share (built once per walker, not per connection). */
  private readonly envs = new Map<WsRoute, SessionEnv>();
  private draining = false;
  /** Session actors not yet stopped (a connection's actor outlives it until its mailbox is done). */
  sessionActors = 0;
  /** Broadcast replies sent from this thread (a frame of a broadcast walker, or `broadcast()`), for metrics. */
  broadcasts = 0;
  private sweeper: NodeJS.Timeout | undefined;
  /** Rooms, messages to users and connections, presence and history. */
  readonly rooms: RoomHub;
  /** Publishes to every subscriber of a topic on this thread (set by the socket layer). */
  private publishLocal: ((topic: string, text: string) => void) | undefined;

  constructor(private readonly o: WsHubOptions) {
    this.limits = { ...DEFAULT_WS_LIMITS, ...o.limits };
    this.rooms = new RoomHub({ system: o.system, ...(o.bus ? { bus: o.bus } : {}), specs: () => [], ticketKey: randomBytes(32), maxRooms: 100, ...o.rooms });
    const unknownFields = o.unknownFields ?? new UnknownFields();
    for (const r of o.routes) {
      const declared = new Set(Object.keys(r.schema.properties ?? {}));
      this.byName.set(r.name, r);
      this.envs.set(r, {
        walker: r.name,
        isPublic: r.access === 'pub',
        broadcast: r.broadcast,
        auth: o.auth,
        guest: o.guest,
        run: (fields, caller, token, conn) => {
          const taken: Record<string, unknown> = {};
          let unknown: string[] | undefined;
          for (const k of Object.keys(fields)) {
            if (r.fields.has(k)) taken[k] = fields[k];
            // `id` is the frame's correlation id unless the walker declares one; `headers` and `request`, when declared, are the runtime's.
            else if (k !== 'id' && !declared.has(k) && !r.takesAny) (unknown ??= []).push(k);
          }
          if (unknown) unknownFields.check(r.name, r.schema, taken, unknown);
          return o.run(r.name, taken, caller, token, conn);
        },
        errorOf: o.errorOf,
        // A walker with a `type` field of its own takes every frame; the others' connections may send room frames.
        roomFrames: !declared.has('type'),
      });
    }
    if (o.bus && o.routes.some((r) => r.broadcast)) {
      const self = o.system.nodeId;
      o.bus.subscribe(WS_RELAY_TOPIC, (msg, from) => {
        // This thread's own subscribers were reached by the sender's socket.
        if (from !== self) this.publishLocal?.((msg as Relay).topic, (msg as Relay).text);
      });
    }
  }

  get routes(): WsRoute[] {
    return this.o.routes;
  }

  /** Called by the socket layer once it can publish to a topic on this thread. */
  attach(publishLocal: (topic: string, text: string) => void): void {
    this.publishLocal = publishLocal;
    this.rooms.attach(publishLocal);
    if (this.sweeper || this.o.routes.length === 0) return;
    const l = this.limits;
    const every = Math.max(100, Math.min(l.idleTimeoutMs, l.authTimeoutMs, l.pingIntervalMs) / 4);
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  /** Whether a path is a WebSocket route (`/ws/<Name>`). */
  isWsPath(path: string): boolean {
    return path.startsWith('/ws/');
  }

  /** Whether an accepted upgrade must still pass the hook walkers ({@link admit}, asynchronous). */
  get checksHooks(): boolean {
    return this.o.hooks?.active === true || this.o.auth.asynchronous === true;
  }

  /** The request headers the socket layer copies for {@link admit}: all when a hook reads them, else the token's. */
  get hookHeaders(): 'all' | readonly string[] {
    return this.o.hooks?.wantsHeaders ? 'all' : HOOK_HEADERS;
  }

  /**
   * Run the hook walkers on an upgrade {@link upgrade} accepted, as the HTTP
   * front runs them on a request: `request` is `{method: 'GET', path}`, the
   * caller the user of a good token (`Authorization: Bearer`, else the query
   * token), else the guest. A refusal answers the upgrade with its status and
   * error body.
   */
  async admit(verdict: Upgrade & { ok: true }, req: UpgradeRequest): Promise<Upgrade> {
    const hooks = this.o.hooks;
    if (!hooks?.active) {
      // A shared users repository: the session verifies the token synchronously, once its user is known here.
      return (verdict.token !== undefined && (await this.prepare(verdict.token))) || verdict;
    }
    // One token per connection (upgrade() took it from the header or the query): the one the hooks judge is the one the session runs as.
    const token = verdict.token;
    const unchecked = token !== undefined && (await this.prepare(token));
    if (unchecked) return unchecked;
    // The walker's own path, whatever percent-encoding reached it: path rules in hooks see what HTTP hooks see.
    const request = { path: `/ws/${verdict.route.name}`, query: req.query, headers: req.headers };
    const caller = this.hookCaller(token);
    try {
      await this.runHooks(request, caller);
    } catch (error) {
      if (error instanceof HookRefusal) return { ok: false, status: error.status, ...error.body };
      const e = this.o.errorOf(error);
      return { ok: false, status: e.status ?? 500, code: e.code, message: e.message };
    }
    // Shutting down began while the hooks ran.
    if (this.draining) return { ok: false, status: 503, code: 'SERVICE_UNAVAILABLE', message: 'the server is shutting down' };
    return { ...verdict, token, hooked: { request, userId: caller.userId } };
  }

  /** Learn the token's user where the repository answers asynchronously; a refusal when it cannot be asked now (503, retry). */
  private async prepare(token: string): Promise<(Upgrade & { ok: false }) | undefined> {
    try {
      await this.o.auth.prepare?.(token);
      return undefined;
    } catch (error) {
      const e = this.o.errorOf(error);
      return { ok: false, status: e.status ?? 503, code: e.code, message: e.message };
    }
  }

  private runHooks(request: UpgradeRequest, caller: SessionCaller): Promise<void> {
    return (this.o.hooks as HookDispatcher).run({ method: 'GET', path: request.path, query: request.query, headers: request.headers, body: '' }, caller);
  }

  /** A session's token now names someone the hooks did not judge: judge them (undefined: approved). */
  private async reapprove(caller: SessionCaller, approval: HookApproval): Promise<{ code: string; message: string } | undefined> {
    try {
      await this.runHooks(approval.request, caller);
      return undefined;
    } catch (error) {
      if (error instanceof HookRefusal) return { code: error.body.code, message: error.body.message };
      return this.o.errorOf(error);
    }
  }

  /** Who hooks run for: the token's user (one that must change its password is a guest), else the guest. */
  private hookCaller(token: string | undefined): SessionCaller {
    if (token === undefined) return this.o.guest;
    try {
      const who = this.o.auth.verify(token);
      if (!who.mustChangePassword) return who.caller;
    } catch {
      // a bad token: the session closes it; the hooks judge a guest
    }
    return this.o.guest;
  }

  /**
   * Decide on an upgrade to `path?query`. The connection's token is the
   * `Authorization: Bearer` header's, else the query's `token`; both, and
   * different, is 400 (one connection runs as one user).
   */
  upgrade(path: string, query: string, authorization?: string): Upgrade {
    if (this.draining) return { ok: false, status: 503, code: 'SERVICE_UNAVAILABLE', message: 'the server is shutting down' };
    let name = path.slice('/ws/'.length);
    try {
      name = decodeURIComponent(name);
    } catch {
      // not valid percent-encoding: no such walker
    }
    const route = this.byName.get(name);
    if (!route) return { ok: false, status: 404, code: 'NOT_FOUND', message: `no WebSocket walker at ${path}` };
    const queried = query ? new URLSearchParams(query).get('token') || undefined : undefined;
    const header = bearer(authorization);
    if (header !== undefined && queried !== undefined && header !== queried) {
      return { ok: false, status: 400, code: 'BAD_REQUEST', message: 'two different tokens (Authorization header and ?token=): send one' };
    }
    return { ok: true, route, token: header ?? queried };
  }

  /** A socket is open: its session starts (closing it at once for a bad query token). */
  open(route: WsRoute, token: string | undefined, socket: SocketHandle, hooked?: HookApproval): Conn {
    const now = Date.now();
    const sink = new ConnSink(this);
    const conn: Conn = {
      id: this.rooms.newId(),
      rooms: undefined,
      user: undefined,
      route,
      socket,
      session: new Session(this.envs.get(route) as SessionEnv, sink),
      ref: undefined,
      openedAt: now,
      lastSeen: now,
      lastPing: now,
      closed: false,
      inbound: 0,
    };
    sink.conn = conn;
    this.conns.add(conn);
    this.rooms.opened(conn);
    this.o.onEvent?.({ event: 'open', walker: route.name });
    conn.session.start(token, hooked && ((caller: SessionCaller) => this.reapprove(caller, hooked)));
    if (!conn.closed) {
      conn.ref = this.o.system.spawn(sessionProps(conn.session));
      this.sessionActors++;
    }
    return conn;
  }

  /** A text frame arrived. */
  frame(conn: Conn, data: ArrayBuffer | Buffer, size: number): void {
    if (conn.closed) return;
    conn.lastSeen = Date.now();
    if (size > this.limits.maxFrameBytes) {
      this.close(conn, CLOSE.TOO_LARGE, `frames are limited to ${this.limits.maxFrameBytes} bytes`);
      return;
    }
    const text = Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
    if (this.draining) {
      conn.socket.send(refusalFrame(text, 'SERVICE_UNAVAILABLE', 'the server is shutting down'));
      return;
    }
    // Frames waiting for the session are bounded in bytes as well as in number.
    if (conn.inbound + size > this.limits.maxBufferedBytes || !conn.ref?.tell({ t: 'frame', text, bytes: size })) {
      conn.socket.send(refusalFrame(text, 'SVC_ERR_MAILBOX_FULL', 'too many frames waiting on this connection: wait for replies before sending more'));
      return;
    }
    conn.inbound += size;
  }

  /** A pong (or any sign of life) arrived. */
  seen(conn: Conn): void {
    conn.lastSeen = Date.now();
  }

  /** The socket is gone (closed by either side): the session ends. */
  closed(conn: Conn, code?: number): void {
    if (!this.conns.delete(conn)) return;
    conn.closed = true;
    conn.session.detach();
    this.rooms.closed(conn);
    if (conn.ref) {
      void this.o.system
        .stop(conn.ref, 1000)
        .catch(() => undefined)
        .finally(() => this.sessionActors--);
    }
    conn.ref = undefined;
    const user = conn.session.user;
    this.o.onEvent?.({ event: 'close', walker: conn.route.name, ...(code === undefined ? {} : { code }), ...(user === undefined ? {} : { user }), ms: Date.now() - conn.openedAt });
  }

  /** Close a connection from the server side. */
  close(conn: Conn, code: number, reason: string): void {
    if (conn.closed) return;
    // A close reason is limited to 123 bytes.
    const short = Buffer.byteLength(reason) > 120 ? `${Buffer.from(reason).subarray(0, 117).toString('utf8').replace(/\uFFFD$/, '')}...` : reason;
    const socket = conn.socket;
    this.closed(conn, code);
    socket.end(code, short);
  }

  /**
   * Run a broadcast WebSocket walker from the server side (an event handler,
   * say) and send its reply to every client of that walker, on every thread
   * (and pod), as the reply of a frame would be. Resolves to the reply's data
   * (JSON text). Rejects for a walker that is not a broadcast WebSocket walker.
   */
  async broadcast(walker: string, fields: Record<string, unknown>, caller: SessionCaller): Promise<string> {
    const route = this.byName.get(walker);
    if (!route || !route.broadcast) throw new TypeError(`broadcast('${walker}'): not a WebSocket walker with broadcast: true`);
    const data = `{"result":null,"reports":${(await this.o.run(walker, fields, caller)).json}}`;
    const text = `{"ok":true,"data":${data}}`;
    this.broadcasts++;
    this.publishLocal?.(route.topic, text);
    this.o.bus?.publish(WS_RELAY_TOPIC, { topic: route.topic, text } satisfies Relay);
    return data;
  }

  /** A broadcast reply: every other subscriber here, and every subscriber on the other threads. */
  publishReply(conn: Conn, text: string): void {
    const topic = conn.route.topic;
    this.broadcasts++;
    // The sender's own socket publishes to the others here; once it is gone, the thread's publisher reaches them all.
    if (!conn.closed) conn.socket.publishFromHere(topic, text);
    else this.publishLocal?.(topic, text);
    this.o.bus?.publish(WS_RELAY_TOPIC, { topic, text } satisfies Relay);
  }

  private sweep(): void {
    const now = Date.now();
    const l = this.limits;
    for (const conn of this.conns) {
      // Listeners that never send a frame lose their connection when their token expires or is revoked.
      conn.session.recheck();
      if (conn.closed) continue;
      if (conn.session.awaitingToken && now - conn.openedAt > l.authTimeoutMs) this.close(conn, CLOSE.TIMEOUT, 'no token in time');
      else if (now - conn.lastSeen > l.idleTimeoutMs) this.close(conn, CLOSE.TIMEOUT, 'idle for too long');
      else if (now - conn.lastSeen > l.pingIntervalMs && now - conn.lastPing > l.pingIntervalMs) {
        conn.lastPing = now;
        conn.socket.ping();
      }
    }
  }

  /** Shutting down: no new connections or frames; frames already taken are answered (up to the deadline), then every connection is closed with 4503. */
  async drain(deadlineMs: number): Promise<void> {
    this.draining = true;
    const open = [...this.conns];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(open.map((c) => (c.ref ? this.o.system.stop(c.ref, deadlineMs).catch(() => undefined) : undefined))),
      new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs))),
    ]);
    clearTimeout(timer);
    for (const conn of open) this.close(conn, CLOSE.DRAINING, 'the server is shutting down');
  }

  stop(): void {
    this.rooms.stop();
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}
