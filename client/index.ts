/**
 * A client for WebSocket walkers (`/ws/<Name>`), for tests and for users'
 * Node programs: connect, send walker fields, await the reply.
 *
 * @example
 * const chat = await WalkerSocket.connect('http://127.0.0.1:8000', 'Chat', { token });
 * const data = await chat.send({ text: 'hi' });        // {result, reports}
 * chat.onBroadcast((data) => console.log(data.reports));
 * await chat.close();
 */
import WebSocket from 'ws';

export interface WalkerReply {
  result: unknown;
  reports: unknown[];
}

/** An error frame (`{"ok": false, "error": {code, message}}`) as an exception. */
export class WalkerSocketError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'WalkerSocketError';
  }
}

export interface ConnectOptions {
  /** A JWT for private walkers. */
  token?: string;
  /** Where the token goes: the `token` query parameter (default) or a first frame. */
  tokenIn?: 'query' | 'frame';
  /** How long `send` waits for a reply (default 30 s). */
  timeoutMs?: number;
}

export interface Closed {
  code: number;
  reason: string;
}

type Frame = { ok?: boolean; data?: unknown; error?: { code: string; message: string }; id?: string | number; type?: string };

export class WalkerSocket {
  /** Resolves when the connection has closed, with the close code and reason. */
  readonly closed: Promise<Closed>;
  private nextId = 1;
  /** Ids whose request timed out: a late reply to one is dropped, not taken for a broadcast. */
  private readonly abandoned = new Set<string>();
  private readonly pending = new Map<string, { resolve: (f: Frame) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly listeners: ((data: WalkerReply) => void)[] = [];
  private readonly errors: ((error: WalkerSocketError) => void)[] = [];
  private readonly typed: ((frame: Record<string, unknown>) => void)[] = [];
  private closedWith: Closed | undefined;

  private constructor(
    readonly ws: WebSocket,
    private readonly timeoutMs: number,
  ) {
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closedWith = { code, reason: reason.toString() };
        for (const [, p] of this.pending) {
          clearTimeout(p.timer);
          p.reject(new WalkerSocketError('CLOSED', `connection closed (${code} ${reason.toString()})`));
        }
        this.pending.clear();
        resolve(this.closedWith);
      });
    });
    ws.on('message', (raw) => this.onFrame(raw.toString()));
    ws.on('error', () => undefined);
  }

  /** Open a connection to walker `name` on the server at `baseUrl` (http:// or ws://). */
  static async connect(baseUrl: string, name: string, options: ConnectOptions = {}): Promise<WalkerSocket> {
    const url = new URL(`/ws/${encodeURIComponent(name)}`, baseUrl.replace(/^http/, 'ws'));
    if (options.token && options.tokenIn !== 'frame') url.searchParams.set('token', options.token);
    const timeoutMs = options.timeoutMs ?? 30_000;
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: timeoutMs });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          let code = `HTTP_${res.statusCode}`;
          let message = body;
          try {
            const parsed = JSON.parse(body) as Frame;
            code = parsed.error?.code ?? code;
            message = parsed.error?.message ?? body;
          } catch {
            // not JSON
          }
          reject(new WalkerSocketError(code, message));
        });
      });
      ws.once('error', reject);
    });
    const socket = new WalkerSocket(ws, timeoutMs);
    if (options.token && options.tokenIn === 'frame') {
      try {
        const reply = await socket.request({ token: options.token });
        if (reply.type !== 'authenticated') throw new WalkerSocketError(reply.error?.code ?? 'UNEXPECTED', reply.error?.message ?? `expected {"type":"authenticated"}, got ${JSON.stringify(reply)}`);
      } catch (error) {
        ws.terminate(); // a failed connect leaves nothing open
        throw error;
      }
    }
    return socket;
  }

  /** Run the walker with these fields; resolves to its `{result, reports}`, rejects with a {@link WalkerSocketError}. */
  async send(fields: Record<string, unknown>): Promise<WalkerReply> {
    const reply = await this.request(fields);
    if (reply.ok === true) return reply.data as WalkerReply;
    throw new WalkerSocketError(reply.error?.code ?? 'UNKNOWN', reply.error?.message ?? JSON.stringify(reply));
  }

  /** A `{"type":"ping"}` frame, answered by `{"type":"pong"}`. */
  async ping(): Promise<void> {
    const reply = await this.request({ type: 'ping' });
    if (reply.type !== 'pong') throw new WalkerSocketError('UNEXPECTED', JSON.stringify(reply));
  }

  /** Swap the connection's token for a fresh one (same user). */
  async refresh(token: string): Promise<void> {
    const reply = await this.request({ type: 'refresh', token });
    if (reply.type !== 'refreshed') throw new WalkerSocketError(reply.error?.code ?? 'UNEXPECTED', reply.error?.message ?? JSON.stringify(reply));
  }

  /** Broadcast replies of the walker (frames sent to every client, without an id). */
  onBroadcast(listener: (data: WalkerReply) => void): () => void {
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  /**
   * Frames with a `type` the server sends on its own: room and user messages
   * (`message`), `presence` events, `joined` / `left` after a walker's join or
   * leave, `resync`. (For reconnects that rejoin and resume, use `LiveSocket`.)
   */
  onTyped(listener: (frame: Record<string, unknown>) => void): () => void {
    this.typed.push(listener);
    return () => this.typed.splice(this.typed.indexOf(listener), 1);
  }

  /** Error frames without an id (invalid JSON and the like). */
  onError(listener: (error: WalkerSocketError) => void): void {
    this.errors.push(listener);
  }

  /**
   * Send any frame and await the reply carrying the same id. The frame's own
   * `id` (a string or number) is used when it has one — `id` is the protocol's
   * correlation field — otherwise one is made up.
   */
  request(frame: Record<string, unknown>): Promise<Frame> {
    if (this.closedWith) return Promise.reject(new WalkerSocketError('CLOSED', `connection closed (${this.closedWith.code} ${this.closedWith.reason})`));
    const given = frame.id;
    const id = typeof given === 'string' || typeof given === 'number' ? given : `c${this.nextId++}`;
    const key = String(id);
    if (this.pending.has(key)) return Promise.reject(new WalkerSocketError('DUPLICATE_ID', `a request with id ${key} is already waiting`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key);
        this.abandoned.add(key);
        reject(new WalkerSocketError('TIMEOUT', `no reply in ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(key, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ ...frame, id }));
    });
  }

  /** Close from this side; resolves once closed. */
  async close(code = 1000): Promise<Closed> {
    if (!this.closedWith) this.ws.close(code);
    return this.closed;
  }

  private onFrame(text: string): void {
    let frame: Frame;
    try {
      frame = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    const id = frame.id === undefined ? undefined : String(frame.id);
    if (id !== undefined && this.abandoned.delete(id)) return;
    const waiting = id === undefined ? undefined : this.pending.get(id);
    if (waiting) {
      this.pending.delete(id as string);
      clearTimeout(waiting.timer);
      waiting.resolve(frame);
      return;
    }
    if (typeof frame.type === 'string' && frame.ok === undefined) for (const l of [...this.typed]) l(frame as Record<string, unknown>);
    else if (frame.ok === true) for (const l of [...this.listeners]) l(frame.data as WalkerReply);
    else if (frame.ok === false) for (const l of [...this.errors]) l(new WalkerSocketError(frame.error?.code ?? 'UNKNOWN', frame.error?.message ?? ''));
  }
}

export { LiveSocket, LiveSocketError } from './live.ts';
export type { LiveMessage, LiveOptions, PresenceEvent } from './live.ts';
