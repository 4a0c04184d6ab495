/**
 * Rooms, per-user and per-connection messages, presence and history for the
 * WebSocket connections of one worker thread.
 *
 * - A room a connection is in is a socket-layer topic (`#r:<room>`); every
 *   connection of a user is subscribed to `#u:<user>`. A message to either
 *   crosses to every worker thread (and cluster member) once, over the bus,
 *   and each thread publishes it to its topic: on uWebSockets.js that costs
 *   no JavaScript per receiving connection.
 * - A room with history has one room actor in the cluster (a virtual actor,
 *   placed like partitions) that numbers its messages (`<epoch>-<seq>`),
 *   keeps the last ones, and answers "what came after id X" for a client
 *   that resumes — or "resync" when the history no longer reaches back.
 * - Presence is each thread's own connections; asking for a room's presence
 *   gathers every thread's. Join and leave notifications go to the room; a
 *   thread that learns a node is down tells its own connections that the
 *   connections of that node left.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type ActorSystem, type Broadcast, type Placement, workerPlacement } from '../../kernel/index.ts';
import { type Caller, MAX_META_BYTES, type RoomPresence, messageJson, roomError, type RoomSpec, roomSpecOf, type SocketEffects, type Target } from '../../actors/walker/index.ts';

/** Messages a room actor holds before refusing more (`sendTo()` throws `ROOM_BUSY`; a committed run's are counted as dropped). */
export const ROOM_MAILBOX = 65_536;

/** How long a ticket lets its holder rejoin a room. */
export const TICKET_SECONDS = 24 * 3600;

/** The bus topic that carries messages to rooms, users and connections between threads. */
export const ROOMS_TOPIC = 'ws.rooms';
/** The bus topic a room's presence is gathered on. */
export const PRESENCE_TOPIC = 'ws.presence';
/** The virtual actor kind of rooms with history. */
export const ROOM_KIND = 'ws-room';

/** A message crossing threads: `k` target kind, `n` its name, `x` the frame text; `p` a presence event (`[join?, user, conn, meta]`). */
type Delivery = { k: 'r' | 'u' | 'c'; n: string; x: string; p?: [boolean, string | null, string, string | null] };

/** What a member of a room is to presence: `[user or null, meta JSON or null, connection id]`. */
type PresenceEntry = [string | null, string | null, string];

/** What the hub's rooms need of a connection. */
export interface RoomConn {
  readonly id: string;
  /** Rooms it is in, with its presence metadata (JSON text). */
  rooms: Map<string, string | undefined> | undefined;
  /** Its user, once authenticated. */
  user: string | undefined;
  closed: boolean;
  readonly socket: { send(text: string): void; subscribe(topic: string): void; unsubscribe(topic: string): void };
}

export interface RoomHubOptions {
  system: ActorSystem;
  bus?: Broadcast;
  /** The app's declarations (read at each use: a `--dev` reload replaces them). */
  specs: () => readonly RoomSpec[];
  /** Signs the tickets that let a client rejoin a room a walker joined it to. */
  ticketKey: Buffer;
  /** Rooms a connection may be in at most. */
  maxRooms: number;
  /** Where room actors live (default: any worker thread of this process). */
  placement?: Placement;
  /** How long an ask to a room actor or a presence gathering may take. */
  askTimeoutMs?: number;
}

export const roomTopic = (room: string): string => `#r:${room}`;
export const userTopic = (user: string): string => `#u:${user}`;

/** A room actor's answer to `since`. */
interface SinceReply {
  /** The id of its latest message ('' when none yet). */
  last: string;
  /** The frames after the asked id, oldest first. */
  texts?: string[];
  /** The history no longer reaches back to the asked id. */
  resync?: true;
}

type RoomMsg = { t: 'send'; data: string } | { t: 'since'; id?: string };

/** The room actor of a room with history. */
class RoomActor {
  private readonly epoch = randomBytes(4).toString('hex');
  private seq = 0;
  private readonly seqs: number[] = [];
  private readonly ats: number[] = [];
  private readonly texts: string[] = [];
  /** Characters of the texts held. */
  private bytes = 0;

  constructor(
    private readonly room: string,
    private readonly history: { size: number; ttlSeconds: number; maxBytes: number },
    private readonly publish: (d: Delivery) => void,
  ) {}

  receive(msg: RoomMsg): SinceReply | undefined {
    const now = Date.now();
    this.trim(now);
    if (msg.t === 'send') {
      const seq = ++this.seq;
      const text = `{"type":"message","room":${JSON.stringify(this.room)},"id":"${this.epoch}-${seq}","data":${msg.data}}`;
      this.seqs.push(seq);
      this.ats.push(now);
      this.texts.push(text);
      this.bytes += text.length;
      if (this.texts.length > this.history.size) this.drop(this.texts.length - this.history.size);
      let n = 0;
      for (let b = this.bytes; b > this.history.maxBytes && n < this.texts.length - 1; n++) b -= (this.texts[n] as string).length;
      if (n > 0) this.drop(n);
      this.publish({ k: 'r', n: this.room, x: text });
      return undefined;
    }
    // `<epoch>-0` before the first message: a client that joined an empty room resumes from it.
    const last = `${this.epoch}-${this.seq}`;
    if (msg.id === undefined) return { last };
    const m = HISTORY_ID.exec(msg.id);
    const seq = m ? Number(m[2]) : -1;
    if (!m || m[1] !== this.epoch || seq > this.seq) return { last, resync: true };
    if (seq === this.seq) return { last, texts: [] };
    const first = this.seqs[0];
    // Everything after `seq` must still be held: the next one is the oldest kept, or later.
    if (first === undefined || first > seq + 1) return { last, resync: true };
    return { last, texts: this.texts.slice(seq + 1 - first) };
  }

  private trim(now: number): void {
    const oldest = now - this.history.ttlSeconds * 1000;
    let n = 0;
    while (n < this.ats.length && (this.ats[n] as number) < oldest) n++;
    if (n > 0) this.drop(n);
  }

  private drop(n: number): void {
    for (let i = 0; i < n; i++) this.bytes -= (this.texts[i] as string).length;
    this.seqs.splice(0, n);
    this.ats.splice(0, n);
    this.texts.splice(0, n);
  }
}

export class RoomHub {
  /** This thread's connections in each room. */
  private readonly local = new Map<string, Map<RoomConn, string | undefined>>();
  private readonly byId = new Map<string, RoomConn>();
  /** Connections of other nodes in rooms with notifications that this thread has connections in: to tell ours when their node is gone. */
  private readonly remote = new Map<string, Map<string, { node: string; user: string | null }>>();
  /** Connections joining a room with history, not subscribed yet: what reaches this thread for the room meanwhile. */
  private readonly resuming = new Map<string, Set<{ conn: RoomConn; texts: string[] }>>();
  private publishLocal: ((topic: string, text: string) => void) | undefined;
  private seq = 0;
  private readonly tag: string;
  private readonly askTimeoutMs: number;
  private readonly unsubscribers: (() => void)[] = [];
  /** For metrics: messages this thread sent into rooms, to users and to connections; publishes to its own topics. */
  readonly counts = { sent: 0, delivered: 0, joins: 0, leaves: 0, dropped: 0 };

  constructor(private readonly o: RoomHubOptions) {
    this.tag = `${o.system.nodeId.replace(/[^A-Za-z0-9_-]/g, '_')}.${randomBytes(3).toString('hex')}`;
    this.askTimeoutMs = o.askTimeoutMs ?? 5000;
    const bus = o.bus;
    if (bus) {
      this.unsubscribers.push(bus.subscribe(ROOMS_TOPIC, (msg, from) => this.delivered(msg as Delivery, from)));
      this.unsubscribers.push(bus.subscribe(PRESENCE_TOPIC, (msg) => this.ownPresence((msg as { room: string }).room)));
    }
    this.unsubscribers.push(o.system.watchNodes((event, node) => event === 'down' && this.nodeDown(node)));
    try {
      o.system.defineKind<RoomMsg, SinceReply | undefined>(ROOM_KIND, {
        props: (room) => ({
          logic: () => {
            const spec = roomSpecOf(this.o.specs(), room);
            const actor = new RoomActor(room, spec?.history ?? { size: 1, ttlSeconds: 1, maxBytes: 1 }, (d) => this.publish(d));
            return { receive: (msg: RoomMsg) => actor.receive(msg) };
          },
          capacity: ROOM_MAILBOX,
          restart: 'temporary',
        }),
        // Idle for as long as the longest history is kept (at least 15 minutes): nothing left to keep after that.
        idleAfterMs: Math.max(15 * 60_000, ...o.specs().map((s) => (s.history ? s.history.ttlSeconds * 1000 : 0))),
        placement: o.placement ?? workerPlacement(),
      });
    } catch {
      // defined already (a second hub on this system, in tests)
    }
  }

  /** Called by the socket layer once it can publish to a topic on this thread. */
  attach(publishLocal: (topic: string, text: string) => void): void {
    this.publishLocal = publishLocal;
  }

  /** A new connection's id (unique in the cluster). */
  newId(): string {
    return `${this.tag}.${(++this.seq).toString(36)}`;
  }

  opened(conn: RoomConn): void {
    this.byId.set(conn.id, conn);
  }

  /** The connection has a user now: it receives that user's messages. */
  identified(conn: RoomConn, user: string): void {
    if (conn.user === user) return;
    conn.user = user;
    if (!conn.closed) conn.socket.subscribe(userTopic(user));
  }

  /** The connection is gone: it leaves its rooms (telling them, where they ask). */
  closed(conn: RoomConn): void {
    this.byId.delete(conn.id);
    if (conn.rooms) for (const room of [...conn.rooms.keys()]) this.leave(conn, room, false);
  }

  /** Rooms the connection is in. */
  roomsOf(conn: RoomConn): string[] {
    return conn.rooms ? [...conn.rooms.keys()] : [];
  }

  get maxRooms(): number {
    return this.o.maxRooms;
  }

  /** Rooms with connections on this thread, and those connections (for metrics). */
  get size(): { rooms: number; members: number } {
    let members = 0;
    for (const m of this.local.values()) members += m.size;
    return { rooms: this.local.size, members };
  }

  /**
   * Apply what a committed run asked of its connection, in order: rooms
   * joined and left (each answered with a `joined` / `left` frame), then its
   * messages sent.
   */
  apply(conn: RoomConn, fx: SocketEffects): Promise<void> | void {
    // Messages alone (the common run): at once, no promise.
    if (fx.rooms.length === 0) {
      for (const s of fx.sends) this.send(s.to, s.data);
      return;
    }
    return this.applyRooms(conn, fx);
  }

  private async applyRooms(conn: RoomConn, fx: SocketEffects): Promise<void> {
    for (const r of fx.rooms) {
      if (r.op === 'join') await this.join(conn, r.room, r.meta, undefined, undefined);
      else this.leave(conn, r.room, true);
    }
    for (const s of fx.sends) this.send(s.to, s.data);
  }

  /**
   * Send a message's data (JSON text) to a room, a user or a connection,
   * wherever they are. Answers false (counted as dropped) when a room with
   * history could not take it: its room actor's mailbox is full, or the node
   * holding it has just gone.
   */
  send(to: Target, data: string): boolean {
    this.counts.sent++;
    if (to.k === 'r') {
      const spec = roomSpecOf(this.o.specs(), to.n);
      if (spec?.history) {
        if (this.o.system.deliverVirtual(ROOM_KIND, to.n, { t: 'send', data } satisfies RoomMsg, null) !== false) return true;
        this.counts.dropped++;
        return false;
      }
      this.publish({ k: 'r', n: to.n, x: `{"type":"message","room":${JSON.stringify(to.n)},"data":${data}}` });
    } else if (to.k === 'u') {
      this.publish({ k: 'u', n: to.n, x: `{"type":"message","user":${JSON.stringify(to.n)},"data":${data}}` });
    } else {
      this.publish({ k: 'c', n: to.n, x: `{"type":"message","connection":${JSON.stringify(to.n)},"data":${data}}` });
    }
    return true;
  }

  /** To every thread (this one included), or this one alone without a bus. */
  private publish(d: Delivery): void {
    if (this.o.bus) this.o.bus.publish(ROOMS_TOPIC, d);
    else this.delivered(d, this.o.system.nodeId);
  }

  /** A message reached this thread: to its connections. */
  private delivered(d: Delivery, from: string): void {
    if (d.k === 'r') {
      if (d.p) this.heard(d.n, d.p, from);
      const waiting = this.resuming.get(d.n);
      if (waiting && !d.p) for (const w of waiting) w.texts.push(d.x);
      if (!this.local.has(d.n)) return;
      this.counts.delivered++;
      this.publishLocal?.(roomTopic(d.n), d.x);
    } else if (d.k === 'u') {
      this.counts.delivered++;
      this.publishLocal?.(userTopic(d.n), d.x);
    } else {
      const conn = this.byId.get(d.n);
      if (conn && !conn.closed) {
        this.counts.delivered++;
        conn.socket.send(d.x);
      }
    }
  }

  /**
   * A client's own `join` frame: the declaration's `authorize` decides, or,
   * without one, the ticket a walker's join gave it. Answers the frame.
   */
  async clientJoin(conn: RoomConn, caller: Caller, f: Record<string, unknown>, reply: (body: Record<string, unknown>) => void): Promise<void> {
    const room = f.room;
    const spec = typeof room === 'string' ? roomSpecOf(this.o.specs(), room) : undefined;
    if (typeof room !== 'string' || !spec) throw roomError('ROOM_INVALID', `no rooms() declaration matches ${describeRoom(room)}`);
    let meta: string | undefined;
    if (f.meta !== undefined) {
      if (typeof f.meta !== 'object' || f.meta === null || Array.isArray(f.meta)) throw roomError('ROOM_BAD_MESSAGE', 'meta is a JSON object');
      meta = messageJson(f.meta, MAX_META_BYTES);
    }
    if (f.since !== undefined && typeof f.since !== 'string') throw roomError('ROOM_BAD_MESSAGE', 'since is the id of the last message received (a string)');
    if (spec.authorize) {
      // The client's meta is the app's to judge too.
      if ((await spec.authorize(room, caller, meta === undefined ? undefined : (JSON.parse(meta) as Record<string, unknown>))) !== true) throw roomError('ROOM_FORBIDDEN', `this connection may not join ${room}`);
    } else if (typeof f.ticket !== 'string' || !this.ticketOk(f.ticket, conn.user, room, meta)) {
      throw roomError('ROOM_FORBIDDEN', `${room} is joined through the app's walkers; rejoining it needs the ticket of an earlier join`);
    }
    if (conn.closed) return;
    this.checkLimit(conn, room, spec);
    await this.join(conn, room, meta, f.since as string | undefined, reply);
  }

  /** A client's `leave` frame. */
  clientLeave(conn: RoomConn, f: Record<string, unknown>, reply: (body: Record<string, unknown>) => void): void {
    const room = f.room;
    if (typeof room !== 'string' || !conn.rooms?.has(room)) throw roomError('ROOM_NOT_JOINED', `this connection is not in ${describeRoom(room)}`);
    this.leave(conn, room, false);
    reply({ type: 'left', room });
  }

  /** A client's `presence` frame: only for a room it is in. */
  async clientPresence(conn: RoomConn, f: Record<string, unknown>, reply: (body: Record<string, unknown>) => void): Promise<void> {
    const room = f.room;
    if (typeof room !== 'string' || !conn.rooms?.has(room)) throw roomError('ROOM_NOT_JOINED', `this connection is not in ${describeRoom(room)}`);
    reply({ type: 'presence', ...(await this.presence(room)) });
  }

  private checkLimit(conn: RoomConn, room: string, spec: RoomSpec): void {
    if (conn.rooms?.has(room)) return;
    const n = conn.rooms?.size ?? 0;
    if (n >= this.o.maxRooms) throw roomError('ROOM_LIMIT', `a connection may be in at most ${this.o.maxRooms} rooms`);
    if (spec.maxPerConnection !== undefined && conn.rooms) {
      let same = 0;
      for (const r of conn.rooms.keys()) if (spec.matches(r)) same++;
      if (same >= spec.maxPerConnection) throw roomError('ROOM_LIMIT', `a connection may be in at most ${spec.maxPerConnection} rooms like ${room}`);
    }
  }

  /** Put a connection in a room (already allowed): subscribed, counted, announced; resumed from `since` where asked. */
  private async join(conn: RoomConn, room: string, meta: string | undefined, since: string | undefined, reply: ((body: Record<string, unknown>) => void) | undefined): Promise<void> {
    if (conn.closed) return;
    const spec = roomSpecOf(this.o.specs(), room);
    const again = conn.rooms?.has(room) === true;
    (conn.rooms ??= new Map()).set(room, meta);
    let members = this.local.get(room);
    const first = !members;
    if (!members) this.local.set(room, (members = new Map()));
    members.set(conn, meta);
    if (!again) this.counts.joins++;
    if (first && spec?.notify) void this.seedRemote(room);
    let last: string | undefined;
    let missed: string[] | undefined;
    let resync = false;
    // A room with history: the connection is subscribed only once its history is sent. Meanwhile what reaches this
    // thread for the room is held for it, and sent after the history, each message once (by its number), in order.
    let held: { conn: RoomConn; texts: string[] } | undefined;
    if (spec?.history && !again) {
      held = { conn, texts: [] };
      let waiting = this.resuming.get(room);
      if (!waiting) this.resuming.set(room, (waiting = new Set()));
      waiting.add(held);
      try {
        const answer = (await this.o.system.deliverVirtual(ROOM_KIND, room, since === undefined ? { t: 'since' } : { t: 'since', id: since }, this.askTimeoutMs)) as SinceReply;
        last = answer.last;
        missed = answer.texts;
        resync = answer.resync === true;
      } catch {
        // The room's history cannot be reached now: the client resyncs if it asked to resume.
        resync = since !== undefined;
      } finally {
        waiting.delete(held);
        if (waiting.size === 0) this.resuming.delete(room);
      }
    } else if (since !== undefined && !spec?.history) {
      resync = true;
    }
    // Closed, or left, while its history was asked for.
    if (conn.closed || !conn.rooms?.has(room)) return;
    const ticket = this.ticket(conn.user, room, meta);
    if (resync) conn.socket.send(JSON.stringify({ type: 'resync', room }));
    else if (missed) for (const text of missed) conn.socket.send(text);
    const body: Record<string, unknown> = { type: 'joined', room, ticket };
    if (last !== undefined) body.last = last;
    // The connection's presence metadata: a client rejoining after a reconnect sends it again.
    if (meta !== undefined) body.meta = JSON.parse(meta);
    if (reply) reply(body);
    else conn.socket.send(JSON.stringify(body));
    if (held) {
      const after = seqOf(last);
      for (const text of held.texts) if (seqAfter(text, after)) conn.socket.send(text);
    }
    if (!again) conn.socket.subscribe(roomTopic(room));
    if (!again && spec?.notify) this.publish({ k: 'r', n: room, x: presenceFrame(room, 'join', conn, meta), p: [true, conn.user ?? null, conn.id, meta ?? null] });
  }

  /** Take a connection out of a room (`tell`: answer it with a `left` frame). */
  private leave(conn: RoomConn, room: string, tell: boolean): void {
    const meta = conn.rooms?.get(room);
    if (!conn.rooms?.delete(room)) return;
    this.counts.leaves++;
    const members = this.local.get(room);
    members?.delete(conn);
    if (members?.size === 0) {
      this.local.delete(room);
      this.remote.delete(room);
    }
    if (!conn.closed) {
      conn.socket.unsubscribe(roomTopic(room));
      if (tell) conn.socket.send(JSON.stringify({ type: 'left', room }));
    }
    if (roomSpecOf(this.o.specs(), room)?.notify) this.publish({ k: 'r', n: room, x: presenceFrame(room, 'leave', conn, meta), p: [false, conn.user ?? null, conn.id, meta ?? null] });
  }

  /** A presence event of another thread, for a room with connections here: remembered, to tell ours if that thread dies. */
  private heard(room: string, p: NonNullable<Delivery['p']>, from: string): void {
    if (from === this.o.system.nodeId || !this.local.has(room)) return;
    let seen = this.remote.get(room);
    if (p[0]) {
      if (!seen) this.remote.set(room, (seen = new Map()));
      seen.set(p[2], { node: from, user: p[1] });
    } else {
      seen?.delete(p[2]);
    }
  }

  /** A room with notifications got its first connection here: learn who else is in it (to tell ours if their node dies). */
  private async seedRemote(room: string): Promise<void> {
    if (!this.o.bus) return;
    let answers: { node: string; members: PresenceEntry[] }[];
    try {
      answers = await this.o.bus.gather<{ node: string; members: PresenceEntry[] }>(PRESENCE_TOPIC, { room }, this.askTimeoutMs);
    } catch {
      return;
    }
    if (!this.local.has(room)) return;
    let seen = this.remote.get(room);
    if (!seen) this.remote.set(room, (seen = new Map()));
    for (const a of answers) {
      if (!a || a.node === this.o.system.nodeId) continue;
      for (const [user, , id] of a.members) if (!seen.has(id)) seen.set(id, { node: a.node, user });
    }
  }

  /** A node is gone: its connections left every room; ours hear of it. */
  private nodeDown(node: string): void {
    for (const [room, seen] of this.remote) {
      for (const [id, who] of seen) {
        if (who.node !== node) continue;
        seen.delete(id);
        if (this.local.has(room)) this.publishLocal?.(roomTopic(room), JSON.stringify({ type: 'presence', room, event: 'leave', user: who.user, connection: id, meta: null }));
      }
    }
  }

  /** This thread's connections in a room. */
  private ownPresence(room: string): { node: string; members: PresenceEntry[] } {
    const members: PresenceEntry[] = [];
    for (const [conn, meta] of this.local.get(room) ?? []) members.push([conn.user ?? null, meta ?? null, conn.id]);
    return { node: this.o.system.nodeId, members };
  }

  /** Who is in a room, on every thread and member that answers in time. */
  async presence(room: string): Promise<RoomPresence> {
    const answers = this.o.bus ? await this.o.bus.gather<{ node: string; members: PresenceEntry[] }>(PRESENCE_TOPIC, { room }, this.askTimeoutMs) : [this.ownPresence(room)];
    const users = new Map<string, { user: string; connections: number; meta: unknown }>();
    let guests = 0;
    let connections = 0;
    for (const a of answers) {
      for (const [user, meta] of a?.members ?? []) {
        connections++;
        if (user === null) {
          guests++;
          continue;
        }
        const u = users.get(user);
        if (u) {
          u.connections++;
          if (meta !== null) u.meta = JSON.parse(meta);
        } else users.set(user, { user, connections: 1, meta: meta === null ? null : JSON.parse(meta) });
      }
    }
    return { room, users: [...users.values()].sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : 0)), guests, connections };
  }

  /** `<expiry, base 36 seconds>.<signature>`: a user's (or, for a guest, any holder's) right to rejoin a room until it expires. */
  /** Signed over the meta too: a client rejoining with it shows the meta its walker chose, not one of its own. */
  private ticket(user: string | undefined, room: string, meta: string | undefined, until = Math.floor(Date.now() / 1000) + TICKET_SECONDS): string {
    const exp = until.toString(36);
    return `${exp}.${createHmac('sha256', this.o.ticketKey).update(`${user ?? ''}\n${room}\n${exp}\n${meta ?? ''}`).digest('base64url')}`;
  }

  private ticketOk(ticket: string, user: string | undefined, room: string, meta: string | undefined): boolean {
    const dot = ticket.indexOf('.');
    const exp = dot > 0 ? ticket.slice(0, dot) : '';
    const until = /^[0-9a-z]{1,11}$/.test(exp) ? parseInt(exp, 36) : NaN;
    if (!Number.isSafeInteger(until) || until * 1000 < Date.now()) return false;
    const want = Buffer.from(this.ticket(user, room, meta, until));
    const got = Buffer.from(ticket);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  stop(): void {
    for (const u of this.unsubscribers.splice(0)) u();
  }
}

/** A history id: `<epoch>-<seq>`, the epoch 8 hex digits. */
const HISTORY_ID = /^([0-9a-f]{8})-(0|[1-9][0-9]{0,14})$/;

/** `[epoch, seq]` of a history id (`<epoch>-<seq>`), or undefined for none. */
function seqOf(id: string | undefined): [string, number] | undefined {
  if (!id) return undefined;
  const dash = id.lastIndexOf('-');
  return [id.slice(0, dash), Number(id.slice(dash + 1))];
}

const ID_IN_TEXT = /"id":"([0-9a-f]+)-(\d+)"/;

/** Whether a room message (its frame text) comes after `after` in the room's history. */
function seqAfter(text: string, after: [string, number] | undefined): boolean {
  if (!after) return true;
  const m = ID_IN_TEXT.exec(text);
  if (!m) return true;
  return m[1] !== after[0] || Number(m[2]) > after[1];
}

/** A room name (or whatever came instead) for an error message. */
function describeRoom(room: unknown): string {
  return typeof room === 'string' ? JSON.stringify(room.slice(0, 200)) : `a ${room === null ? 'null' : typeof room} (not a room name)`;
}

function presenceFrame(room: string, event: 'join' | 'leave', conn: RoomConn, meta: string | undefined): string {
  return `{"type":"presence","room":${JSON.stringify(room)},"event":"${event}","user":${JSON.stringify(conn.user ?? null)},"connection":${JSON.stringify(conn.id)},"meta":${meta ?? 'null'}}`;
}
