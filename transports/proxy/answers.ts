/**
 * The proxy's own answers: the JSON error envelope for API callers, the loading page for browser navigations, and
 * both written on a raw socket for a WebSocket handshake that goes no further.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROXY_ERRORS, type ProxyErrorCode } from './errors.ts';
import { LOADING_REFRESH_SECONDS, loadingPage } from './loading-page.ts';

/** Whether the request is a browser navigation (it accepts HTML). */
export function wantsHtml(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return typeof accept === 'string' && accept.includes('text/html');
}

/** The envelope of an error. */
export function errorBody(code: ProxyErrorCode, message?: string): string {
  return JSON.stringify({ error: { code, message: message ?? PROXY_ERRORS[code].message } });
}

/** Answer with an error envelope (`extra` headers too). */
export function sendError(res: ServerResponse, code: ProxyErrorCode, message?: string, extra: Record<string, string> = {}): void {
  const body = errorBody(code, message);
  res.writeHead(PROXY_ERRORS[code].status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', ...extra });
  res.end(body);
}

/** Answer a browser with the loading page (503, reloading itself). */
export function sendLoading(res: ServerResponse, sandboxId: string, state: string): void {
  const body = loadingPage(sandboxId, state);
  res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', 'retry-after': String(LOADING_REFRESH_SECONDS) });
  res.end(body);
}

/** An error envelope on the raw socket of an upgrade request, then the end of the connection. */
export function rawError(socket: Duplex, code: ProxyErrorCode, message?: string): void {
  const body = errorBody(code, message);
  const status = PROXY_ERRORS[code].status;
  const reason = { 401: 'Unauthorized', 404: 'Not Found', 502: 'Bad Gateway', 503: 'Service Unavailable' }[status as number] ?? 'Error';
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`);
}
