/**
 * One HTTP request relayed to a pod and its answer relayed back, both as streams: `pipe` moves each chunk on
 * when the other side has taken the last one (backpressure both ways), so a 100 MB upload or download holds a few
 * chunks of memory, not the body. Connections to pods are kept alive and reused (one Agent for every pod).
 */
import { Agent, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { responseHeaders } from './headers.ts';

/** Where a request goes. */
export interface Target {
  ip: string;
  port: number;
}

/**
 * The Agent the proxy's requests to pods share: kept-alive connections, the most recently used first.
 *
 * @example
 * const agent = podAgent();
 * agent.destroy(); // at close
 */
export function podAgent(): Agent {
  return new Agent({ keepAlive: true, keepAliveMsecs: 1000, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo', timeout: 60_000 });
}

/** How long a pod has to accept a connection, in ms. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Relay `req` to `target` with `headers` and `path`; `onFail` answers when the pod cannot be reached before an
 * answer has begun (after that the client's connection is cut, as the pod's was).
 *
 * @example
 * relayHttp(req, res, { ip: '10.244.0.7', port: 8000 }, req.url ?? '/', headers, agent, (error) => sendError(res, 'PREVIEW_UNREACHABLE'));
 */
export function relayHttp(req: IncomingMessage, res: ServerResponse, target: Target, path: string, headers: string[], agent: Agent, onFail: (error: Error) => void): void {
  const upstream = request({ host: target.ip, port: target.port, method: req.method, path, headers, agent, setHost: false });
  let answered = false;
  upstream.on('socket', (socket) => {
    // No Nagle: a small answer must not wait for the ACK of the head before it (40 ms of delayed ACK).
    socket.setNoDelay(true);
    if (!(socket as { connecting?: boolean }).connecting) return;
    const timer = setTimeout(() => upstream.destroy(new Error(`no connection to ${target.ip}:${target.port} within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
    socket.once('connect', () => clearTimeout(timer));
    socket.once('close', () => clearTimeout(timer));
  });
  upstream.on('response', (answer: IncomingMessage) => {
    answered = true;
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, responseHeaders(answer.rawHeaders));
    // pipe, not pipeline: pipeline makes and aborts an AbortController per call (a DOMException with its stack),
    // which cost more CPU than the rest of the relay. A pod that cuts its answer short cuts the client's too.
    answer.pipe(res);
    answer.once('error', () => res.destroy());
    answer.once('aborted', () => res.destroy());
  });
  upstream.on('error', (error) => {
    if (answered || res.headersSent) return void res.destroy();
    // The rest of the body goes nowhere; the client still gets an answer (not a cut connection).
    req.unpipe(upstream);
    req.resume();
    if (!res.destroyed) onFail(error);
  });
  // pipe, not pipeline: a failed pod must not destroy the client's request before it is answered.
  req.pipe(upstream);
  res.once('close', () => {
    // The client left before its answer was done: the pod's request is abandoned too.
    if (!res.writableFinished) upstream.destroy();
  });
}
