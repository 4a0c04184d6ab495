/** What the socket layers (uWebSockets.js, node:http) give the runtime. */

/**
 * A body over the limit is read and dropped, up to this many bytes more and for this long, before
 * the connection closes: closing on a client that is still sending resets the connection, and the
 * client never reads its 413.
 */
export const DRAIN_BYTES = 16 * 1024 * 1024;
export const DRAIN_MS = 5_000;

export interface ListenOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  /** A request body must have arrived within this long (408 otherwise; default 60 s). */
  bodyTimeoutMs?: number;
  /** Open connections at most (default 10,000): past it, accepting pauses (uWS) or new ones are dropped (node). */
  maxConnections?: number;
  /** Told when accepting pauses or resumes (file descriptors exhausted, max_connections). */
  onAcceptChange?: (paused: boolean, reason: string) => void;
  /** Told about a failure writing an answer (the front itself never rejects). */
  onError?: (error: unknown) => void;
  /** Add routes of other protocols (WebSockets) to the uWebSockets.js App before it listens. */
  onUwsApp?: (app: import('uWebSockets.js').TemplatedApp) => void;
  /** Hook other protocols (WebSocket upgrades) onto the node:http server before it listens. */
  onNodeServer?: (server: import('node:http').Server) => void;
}

export interface HttpServer {
  readonly kind: 'uws' | 'node';
  /** The port actually bound. */
  readonly port: number;
  /** Close the listening socket: no new connections. */
  stopAccepting(): void;
  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void>;
  /** Close everything now. */
  close(): void;
}

/** Requests in flight on a server, and who waits for there to be none (drain). */
export class InFlight {
  private n = 0;
  private waiting: (() => void)[] = [];

  get count(): number {
    return this.n;
  }

  start(): void {
    this.n++;
  }

  done(): void {
    if (--this.n === 0 && this.waiting.length > 0) {
      const waiting = this.waiting;
      this.waiting = [];
      for (const resolve of waiting) resolve();
    }
  }

  whenIdle(): Promise<void> {
    return this.n === 0 ? Promise.resolve() : new Promise<void>((resolve) => this.waiting.push(resolve));
  }
}
