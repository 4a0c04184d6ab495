/**
 * WebSockets on uWebSockets.js: `/ws/<Name>` upgrades on the thread's App.
 * Broadcast uses uWS topics, so fanning a reply out to thousands of clients
 * costs one call from JavaScript; a client that stops reading is cut off by
 * uWS once its unsent bytes pass the limit.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpResponse, TemplatedApp, WebSocket } from 'uWebSockets.js';
import { failure, newRequestId } from '../http/index.ts';
import type { Conn, HookApproval, SocketHandle, WsHub, WsRoute } from './hub.ts';

interface Data {
  route: WsRoute;
  token: string | undefined;
  hooked?: HookApproval;
  conn?: Conn;
  socket?: UwsSocket;
}

/** A uWS WebSocket as the hub sees it; calls after the socket closed are ignored (uWS throws on them). */
class UwsSocket implements SocketHandle {
  alive = true;

  constructor(private readonly ws: WebSocket<Data>) {}

  send(text: string): void {
    if (this.alive) this.ws.send(text, false);
  }

  end(code: number, reason: string): void {
    if (!this.alive) return;
    this.alive = false;
    this.ws.end(code, reason);
  }

  ping(): void {
    if (this.alive) this.ws.ping();
  }

  subscribe(topic: string): void {
    if (this.alive) this.ws.subscribe(topic);
  }

  unsubscribe(topic: string): void {
    if (this.alive) this.ws.unsubscribe(topic);
  }

  publishFromHere(topic: string, text: string): void {
    if (this.alive) this.ws.publish(topic, text, false);
  }
}

/** The JSON envelope of a refused upgrade. */
function refusal(code: string, message: string, details?: unknown): string {
  return failure(details === undefined ? { code, message } : { code, message, details }, newRequestId());
}

/** Answer an upgrade request with an error instead (call inside `cork`). */
function writeRefusal(res: HttpResponse, status: number, body: string): void {
  res.writeStatus(`${status} ${STATUS_CODES[status] ?? 'Error'}`);
  res.writeHeader('content-type', 'application/json; charset=utf-8');
  res.end(body, true);
}

export function attachUws(app: TemplatedApp, hub: WsHub): void {
  if (hub.routes.length === 0) return;
  const l = hub.limits;
  app.ws<Data>('/ws/*', {
    // The socket layer refuses (1009) what is far over the limit before JavaScript sees it; the hub closes the rest with 4413.
    maxPayloadLength: Math.max(l.maxFrameBytes * 4, l.maxFrameBytes + 16 * 1024),
    maxBackpressure: l.maxBufferedBytes,
    closeOnBackpressureLimit: 1,
    // Keep-alive and idle timeouts are the hub's (with close code 4408).
    idleTimeout: 0,
    sendPingsAutomatically: false,
    upgrade: (res, req, context) => {
      const path = req.getUrl();
      const query = req.getQuery() ?? '';
      const verdict = hub.upgrade(path, query, req.getHeader('authorization'));
      if (!verdict.ok) {
        const body = refusal(verdict.code, verdict.message);
        res.cork(() => writeRefusal(res, verdict.status, body));
        return;
      }
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      if (!hub.checksHooks) {
        res.upgrade<Data>({ route: verdict.route, token: verdict.token }, key, protocol, extensions, context);
        return;
      }
      // Hook walkers decide first (asynchronously): abort handled, and everything read off `req`, before that.
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      const wanted = hub.hookHeaders;
      const headers: Record<string, string> = {};
      if (wanted === 'all') {
        req.forEach((k, v) => {
          headers[k] = v;
        });
      } else {
        for (const name of wanted) {
          const v = req.getHeader(name);
          if (v !== '') headers[name] = v;
        }
      }
      void hub.admit(verdict, { path, query, headers }).then(
        (admitted) => {
          if (aborted) return;
          if (!admitted.ok) {
            const body = refusal(admitted.code, admitted.message, admitted.details);
            res.cork(() => writeRefusal(res, admitted.status, body));
          } else {
            res.cork(() => res.upgrade<Data>({ route: admitted.route, token: admitted.token, ...(admitted.hooked ? { hooked: admitted.hooked } : {}) }, key, protocol, extensions, context));
          }
        },
        () => {
          if (!aborted) res.cork(() => writeRefusal(res, 500, refusal('INTERNAL_ERROR', 'internal error')));
        },
      );
    },
    open: (ws: WebSocket<Data>) => {
      const data = ws.getUserData();
      data.socket = new UwsSocket(ws);
      data.conn = hub.open(data.route, data.token, data.socket, data.hooked);
    },
    message: (ws, message) => {
      const conn = ws.getUserData().conn;
      // The message's memory is reused after this callback: the hub copies it before returning.
      if (conn) hub.frame(conn, message, message.byteLength);
    },
    pong: (ws) => {
      const conn = ws.getUserData().conn;
      if (conn) hub.seen(conn);
    },
    close: (ws, code) => {
      const data = ws.getUserData();
      // Closed from either side: the handle makes no more calls.
      if (data.socket) data.socket.alive = false;
      if (data.conn) hub.closed(data.conn, code);
    },
  });
  // Upgrades anywhere else are refused like on the node:http transport (plain requests go on to the HTTP routes).
  app.ws('/*', {
    upgrade: (res, req) => {
      const body = refusal('NOT_FOUND', `no WebSocket walker at ${req.getUrl()}`);
      res.cork(() => writeRefusal(res, 404, body));
    },
  });
  hub.attach((topic, text) => {
    app.publish(topic, text, false);
  });
}
