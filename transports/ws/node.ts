/**
 * WebSockets on node:http with the `ws` package, for where uWebSockets.js
 * cannot load. Broadcast fans out in JavaScript, one send per subscriber; a
 * client whose unsent bytes pass the limit is disconnected.
 */
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { failure, newRequestId } from '../http/index.ts';
import type { Conn, SocketHandle, Upgrade, WsHub } from './hub.ts';

function refuse(socket: Duplex, status: number, code: string, message: string, details?: unknown): void {
  const body = failure(details === undefined ? { code, message } : { code, message, details }, newRequestId());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export function attachNode(server: Server, hub: WsHub): void {
  const l = hub.limits;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: Math.max(l.maxFrameBytes * 4, l.maxFrameBytes + 16 * 1024),
    perMessageDeflate: false,
    clientTracking: false,
  });
  const topics = new Map<string, Set<WebSocket>>();

  /** Send unless the client has fallen too far behind; then cut it off. */
  const sendTo = (ws: WebSocket, data: string | Buffer): void => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > l.maxBufferedBytes) {
      ws.terminate();
      return;
    }
    // A text frame, also when the text was encoded once for many (a Buffer would go as a binary frame: a Blob in a browser).
    ws.send(data, { binary: false });
  };

  /** Every subscriber of a topic on this thread but `except`, one send each (the text encoded once). */
  const fanOut = (topic: string, text: string, except?: WebSocket): void => {
    const data = Buffer.from(text);
    for (const ws of topics.get(topic) ?? []) if (ws !== except) sendTo(ws, data);
  };

  /** Complete the handshake and hand the socket to the hub. */
  const accept = (req: IncomingMessage, socket: Duplex, head: Buffer, verdict: Upgrade & { ok: true }): void => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const subscribed = new Set<string>();
      let alive = true;
      const socketHandle: SocketHandle = {
        send: (text) => sendTo(ws, text),
        end: (code, reason) => {
          if (!alive) return;
          alive = false;
          ws.close(code, reason);
        },
        ping: () => {
          if (ws.readyState === ws.OPEN) ws.ping();
        },
        subscribe: (topic) => {
          let set = topics.get(topic);
          if (!set) topics.set(topic, (set = new Set()));
          set.add(ws);
          subscribed.add(topic);
        },
        unsubscribe: (topic) => {
          if (!subscribed.delete(topic)) return;
          const set = topics.get(topic);
          set?.delete(ws);
          if (set?.size === 0) topics.delete(topic);
        },
        publishFromHere: (topic, text) => fanOut(topic, text, ws),
      };
      const conn: Conn = hub.open(verdict.route, verdict.token, socketHandle, verdict.hooked);
      // binaryType is 'nodebuffer': every message is one Buffer.
      ws.on('message', (data: Buffer) => hub.frame(conn, data, data.length));
      ws.on('pong', () => hub.seen(conn));
      ws.on('error', () => undefined);
      ws.on('close', (code: number) => {
        alive = false;
        for (const topic of subscribed) {
          const set = topics.get(topic);
          set?.delete(ws);
          if (set?.size === 0) topics.delete(topic);
        }
        hub.closed(conn, code);
      });
    });
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (!hub.isWsPath(path) || req.method !== 'GET') {
      refuse(socket, 404, 'NOT_FOUND', `no WebSocket walker at ${path}`);
      return;
    }
    const query = q < 0 ? '' : url.slice(q + 1);
    const verdict = hub.upgrade(path, query, req.headers.authorization);
    if (!verdict.ok) {
      refuse(socket, verdict.status, verdict.code, verdict.message);
      return;
    }
    if (!hub.checksHooks) {
      accept(req, socket, head, verdict);
      return;
    }
    // Hook walkers decide first; the client may be gone by the time they are done.
    const wanted = hub.hookHeaders;
    const all = req.headers as Record<string, string>;
    const headers: Record<string, string> = {};
    if (wanted === 'all') Object.assign(headers, all);
    else for (const name of wanted) if (all[name] !== undefined) headers[name] = all[name];
    void hub.admit(verdict, { path, query, headers }).then(
      (admitted) => {
        if (socket.destroyed) return;
        if (!admitted.ok) refuse(socket, admitted.status, admitted.code, admitted.message, admitted.details);
        else accept(req, socket, head, admitted);
      },
      () => {
        if (!socket.destroyed) refuse(socket, 500, 'INTERNAL_ERROR', 'internal error');
      },
    );
  });

  hub.attach((topic, text) => fanOut(topic, text));
}
