/** What the socket layers (uWebSockets.js, node:http) give the runtime. */

export interface ListenOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
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
