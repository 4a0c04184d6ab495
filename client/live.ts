/**
 * A WebSocket walker connection that stays up: it reconnects with backoff,
 * authenticates again (asking for a fresh token), rejoins its rooms and
 * resumes each from the last message it saw — the server sends what was
 * missed, or says the room must be resynced. Works in the browser (the
 * standard `WebSocket`) and in Node (the `ws` package).
 *
 * @example
 * const live = await LiveSocket.connect('http://127.0.0.1:8000', 'Chat', { token: () => getToken() });
 * live.onMessage((m) => console.log(m.room, m.data));
 * await live.send({ room: 'chat:lobby', text: 'hi' });   // the walker may join rooms: they are rejoined after a reconnect
 */

/** A message to a room, a user or a connection. */
export interface LiveMessage {
  room?: string;
  user?: string;
  connection?: string;
  /** Its id in the room's history (rooms with history only). */
  id?: string;
  data: unknown;
}

/** Someone joined or left a room (rooms declared with `notify: true`). */
export interface PresenceEvent {
  room: string;
  event: 'join' | 'leave';
  user: string | null;
  connection: string;
  meta: unknown;
}

export interface LiveOptions {
  /** The token, or a function giving a fresh one at each (re)connection. */
  token?: string | (() => string | Promise<string>);
  /** Reconnect delays: from `minMs` doubling to `maxMs` (with jitter). */
  backoff?: { minMs?: number; maxMs?: number };
  /** How long a request waits for its reply (default 30 s). */
  timeoutMs?: number;
  /** A WebSocket constructor (default: the global one, else the `ws` package). */
  WebSocket?: unknown;
}

/** An error frame as an exception, with its stable code. */
export class LiveSocketError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'LiveSocketError';
  }
}

type Frame = Record<string, unknown> & { id?: string | number; type?: string; ok?: boolean; error?: { code: string; message: string } };

interface Sock {
  readyState: number;
  send(text: string): void;
  close(code?: number): void;
  onopen: ((e: unknown) => void) | null;
  onclose: ((e: { code: number; reason: string }) => void) | null;
  onerror: ((e: unknown) => void) | null;
  onmessage: ((e: { data: unknown }) => void) | null;
}

type SockCtor = new (url: string) => Sock;

async function socketCtor(given: unknown): Promise<SockCtor> {
  if (given) return given as SockCtor;
  const g = (globalThis as { WebSocket?: unknown }).WebSocket;
  if (g) return g as SockCtor;
  const mod = (await import('ws')) as { default: unknown };
  return mod.default as SockCtor;
}

/** `<epoch>-<seq>`: whether `id` comes after `last` in the same history. */
function after(id: string, last: string | undefined): boolean {
  if (!last) return true;
  const a = id.lastIndexOf('-');
  const b = last.lastIndexOf('-');
  if (id.slice(0, a) !== last.slice(0, b)) return true;
  return Number(id.slice(a + 1)) > Number(last.slice(b + 1));
}

export class LiveSocket {
  /** Rooms this connection is in: the ticket to rejoin and the last message id seen. */
  readonly rooms = new Map<string, { ticket: string; last: string | undefined; meta?: Record<string, unknown> }>();
  /** Connections made so far (1 before any reconnect). */
  connections = 0;
  private sock: Sock | undefined;
  private closedByUs = false;
  private nextId = 1;
  private attempt = 0;
  private readonly pending = new Map<string, { resolve: (f: Frame) => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> }>();
  private readonly messageListeners: ((m: LiveMessage) => void)[] = [];
  private readonly presenceListeners: ((e: PresenceEvent) => void)[] = [];
  private readonly resyncListeners: ((room: string) => void)[] = [];
  private readonly stateListeners: ((state: 'open' | 'reconnecting' | 'closed') => void)[] = [];
  private readonly broadcastListeners: ((data: unknown) => void)[] = [];
  private ready: Promise<void> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  private constructor(
    private readonly url: string,
    private readonly Ctor: SockCtor,
    private readonly options: LiveOptions,
  ) {}

  /** Connect to walker `name` at `baseUrl` (http(s):// or ws(s)://); resolves once connected (and authenticated). */
  static async connect(baseUrl: string, name: string, options: LiveOptions = {}): Promise<LiveSocket> {
    const url = new URL(`/ws/${encodeURIComponent(name)}`, baseUrl.replace(/^http/, 'ws'));
    const live = new LiveSocket(url.toString(), await socketCtor(options.WebSocket), options);
    await live.open();
    return live;
  }

  /** Run the walker with these fields; resolves to its `{result, reports}`. */
  async send(fields: Record<string, unknown>): Promise<{ result: unknown; reports: unknown[] }> {
    const reply = await this.request(fields);
    if (reply.ok === true) return reply.data as { result: unknown; reports: unknown[] };
    throw new LiveSocketError(reply.error?.code ?? 'UNKNOWN', reply.error?.message ?? JSON.stringify(reply));
  }

  /** Join a room from the client (the room's `authorize` decides); `meta` is this connection's presence metadata. */
  async join(room: string, meta?: Record<string, unknown>): Promise<void> {
    const known = this.rooms.get(room);
    const frame: Frame = { type: 'join', room };
    if (meta) frame.meta = meta;
    if (known?.ticket) frame.ticket = known.ticket;
    await this.expect(frame, 'joined');
    if (meta) {
      const r = this.rooms.get(room);
      if (r) r.meta = meta;
    }
  }

  async leave(room: string): Promise<void> {
    await this.expect({ type: 'leave', room }, 'left');
    this.rooms.delete(room);
  }

  /** Who is in a room this connection is in. */
  async presence(room: string): Promise<{ room: string; users: { user: string; connections: number; meta: unknown }[]; guests: number; connections: number }> {
    const reply = await this.expect({ type: 'presence', room }, 'presence');
    return reply as never;
  }

  onMessage(listener: (m: LiveMessage) => void): () => void {
    return this.listen(this.messageListeners, listener);
  }

  onPresence(listener: (e: PresenceEvent) => void): () => void {
    return this.listen(this.presenceListeners, listener);
  }

  /** The room's history did not reach back to the last message seen: reload what the room shows. */
  onResync(listener: (room: string) => void): () => void {
    return this.listen(this.resyncListeners, listener);
  }

  /** Broadcast replies of a broadcast walker. */
  onBroadcast(listener: (data: unknown) => void): () => void {
    return this.listen(this.broadcastListeners, listener);
  }

  onState(listener: (state: 'open' | 'reconnecting' | 'closed') => void): () => void {
    return this.listen(this.stateListeners, listener);
  }

  /** Close for good (no reconnect). */
  close(): void {
    this.closedByUs = true;
    clearTimeout(this.timer);
    this.sock?.close(1000);
    this.failPending('CLOSED', 'closed');
    for (const l of [...this.stateListeners]) l('closed');
  }

  /** Drop the connection as a network failure would (it reconnects): for tests and for a client that knows the network changed. */
  drop(): void {
    (this.sock as unknown as { terminate?: () => void })?.terminate?.() ?? this.sock?.close(4000);
  }

  private listen<T>(list: T[], l: T): () => void {
    list.push(l);
    return () => {
      const i = list.indexOf(l);
      if (i >= 0) list.splice(i, 1);
    };
  }

  private async token(): Promise<string | undefined> {
    const t = this.options.token;
    return typeof t === 'function' ? await t() : t;
  }

  /** Open a socket, authenticate, rejoin and resume every room. */
  private open(): Promise<void> {
    this.ready = (async () => {
      const token = await this.token();
      const sock = new this.Ctor(this.url);
      this.sock = sock;
      await new Promise<void>((resolve, reject) => {
        sock.onopen = () => resolve();
        sock.onerror = () => reject(new LiveSocketError('CONNECT_FAILED', `cannot connect to ${this.url}`));
        sock.onclose = (e) => reject(new LiveSocketError('CONNECT_FAILED', `closed while connecting (${e.code})`));
      });
      sock.onmessage = (e) => this.onFrame(typeof e.data === 'string' ? e.data : String(e.data));
      sock.onerror = () => undefined;
      sock.onclose = () => this.lost(sock);
      this.connections++;
      if (token) {
        const reply = await this.request({ token });
        if (reply.type !== 'authenticated') throw new LiveSocketError(reply.error?.code ?? 'UNAUTHORIZED', reply.error?.message ?? 'not authenticated');
      }
      // Rejoin and resume, each room from the last message seen.
      for (const [room, r] of [...this.rooms]) {
        const frame: Frame = { type: 'join', room, ticket: r.ticket };
        if (r.last) frame.since = r.last;
        if (r.meta) frame.meta = r.meta;
        try {
          await this.expect(frame, 'joined');
        } catch {
          this.rooms.delete(room);
        }
      }
      this.attempt = 0;
      for (const l of [...this.stateListeners]) l('open');
    })();
    return this.ready;
  }

  private lost(sock: Sock): void {
    if (sock !== this.sock) return;
    this.failPending('CLOSED', 'connection lost');
    if (this.closedByUs) return;
    for (const l of [...this.stateListeners]) l('reconnecting');
    this.retry();
  }

  private retry(): void {
    const min = this.options.backoff?.minMs ?? 250;
    const max = this.options.backoff?.maxMs ?? 10_000;
    const delay = Math.min(max, min * 2 ** this.attempt++) * (0.5 + Math.random() / 2);
    this.timer = setTimeout(() => {
      if (this.closedByUs) return;
      this.open().catch(() => {
        this.sock?.close();
        if (!this.closedByUs) this.retry();
      });
    }, delay);
  }

  private failPending(code: string, message: string): void {
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new LiveSocketError(code, message));
    }
    this.pending.clear();
  }

  private async expect(frame: Frame, type: string): Promise<Frame> {
    const reply = await this.request(frame);
    if (reply.type !== type) throw new LiveSocketError(reply.error?.code ?? 'UNEXPECTED', reply.error?.message ?? JSON.stringify(reply));
    return reply;
  }

  private request(frame: Frame): Promise<Frame> {
    const sock = this.sock;
    if (!sock || sock.readyState !== 1) return Promise.reject(new LiveSocketError('CLOSED', 'not connected'));
    const id = `l${this.nextId++}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new LiveSocketError('TIMEOUT', `no reply in ${this.options.timeoutMs ?? 30_000} ms`));
      }, this.options.timeoutMs ?? 30_000);
      this.pending.set(id, { resolve, reject, timer });
      sock.send(JSON.stringify({ ...frame, id }));
    });
  }

  private onFrame(text: string): void {
    let f: Frame;
    try {
      f = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    // Frames about rooms first: a `joined` that answers a request is taken here too.
    if (f.type === 'joined' && typeof f.room === 'string') {
      const known = this.rooms.get(f.room);
      const last = typeof f.last === 'string' && f.last !== '' ? f.last : undefined;
      const meta = f.meta && typeof f.meta === 'object' ? (f.meta as Record<string, unknown>) : known?.meta;
      this.rooms.set(f.room, { ticket: String(f.ticket), last: known?.last && last && !after(last, known.last) ? known.last : (last ?? known?.last), ...(meta ? { meta } : {}) });
    } else if (f.type === 'left' && typeof f.room === 'string') {
      this.rooms.delete(f.room);
    } else if (f.type === 'resync' && typeof f.room === 'string') {
      const r = this.rooms.get(f.room);
      if (r) r.last = undefined;
      for (const l of [...this.resyncListeners]) l(f.room);
    } else if (f.type === 'message') {
      const m = f as unknown as LiveMessage;
      if (m.room !== undefined && m.id !== undefined) {
        const r = this.rooms.get(m.room);
        // Seen already (resumed and received live both): dropped.
        if (r && !after(m.id, r.last)) return;
        if (r) r.last = m.id;
      }
      for (const l of [...this.messageListeners]) l(m);
      return;
    } else if (f.type === 'presence' && f.event !== undefined) {
      for (const l of [...this.presenceListeners]) l(f as unknown as PresenceEvent);
      return;
    }
    const id = f.id === undefined ? undefined : String(f.id);
    const waiting = id === undefined ? undefined : this.pending.get(id);
    if (waiting) {
      this.pending.delete(id as string);
      clearTimeout(waiting.timer);
      waiting.resolve(f);
      return;
    }
    if (f.ok === true) for (const l of [...this.broadcastListeners]) l(f.data);
  }
}
