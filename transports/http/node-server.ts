/**
 * The node:http server: the same front on Node's own HTTP stack, for
 * platforms where uWebSockets.js cannot load (or with `SVC_TRANSPORT=node`).
 * Node 20 cannot share a port between worker threads, so only one thread
 * listens; the others host partitions.
 *
 * It answers what the uWebSockets.js build cannot: HTTP/1.0, pipelined
 * requests (in order), malformed requests (400 — bare LF, obs-fold, bad
 * header names, NUL or CR in values, duplicate Content-Length — 431 for too
 * many or too large headers, 501 for unknown methods, each closing the
 * connection), `OPTIONS *`, absolute-form targets, and slow bodies
 * (`body_timeout_ms`, 408).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { failure, newRequestId } from './envelope.ts';
import { HTTP_ERRORS, type HttpError, type HttpErrorCode } from './errors.ts';
import type { Front } from './front.ts';
import { type MultipartSource, readPartsAhead } from './multipart.ts';
import { type UploadPlan, UploadReceiver } from './upload-stream.ts';
import { DRAIN_BYTES, DRAIN_MS, type HttpServer, InFlight, type ListenOptions } from './server.ts';
import type { HttpRequest } from './types.ts';
import { Watchlist } from './watchlist.ts';

/** An error envelope as a whole HTTP/1.1 response that closes the connection. */
function rawError(code: HttpErrorCode, message: string, extra = ''): string {
  const body = failure({ code, message }, newRequestId());
  const status = HTTP_ERRORS[code].status;
  return (
    `HTTP/1.1 ${status} ${httpReason(status)}\r\ncontent-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${extra}\r\n${body}`
  );
}

function httpReason(status: number): string {
  return { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large', 501: 'Not Implemented', 413: 'Payload Too Large' }[status] ?? 'Error';
}

/** What Node's parser refused, as the answer to give (llhttp error codes). */
function parseError(code: string | undefined): [HttpErrorCode, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return ['HEADERS_TOO_LARGE', 'the request headers are too large or too many'];
    case 'HPE_INVALID_METHOD':
      return ['NOT_IMPLEMENTED', 'unknown method'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return ['REQUEST_TIMEOUT', 'the request did not arrive in time'];
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return ['BAD_REQUEST', 'more than one Content-Length header, or Content-Length with Transfer-Encoding'];
    default:
      return ['BAD_REQUEST', `malformed request (${code ?? 'parse error'})`];
  }
}

/** A request whose body is still arriving, and what to do when it is late. */
interface Arriving {
  req: IncomingMessage;
  due: number;
  expire(): void;
  /** Its place in the watchlist while watched. */
  slot?: number;
}

/** The path and query of a request target: origin-form, or absolute-form (RFC 9112 §3.2.2). */
function target(url: string): { path: string; query: string } | undefined {
  let t = url;
  if (!t.startsWith('/')) {
    // scheme://authority, then the path and query as sent (not normalised, like origin-form).
    const m = /^https?:\/\/[^/?#]*/i.exec(t);
    if (!m) return undefined;
    t = t.slice(m[0].length) || '/';
    if (!t.startsWith('/')) t = `/${t}`;
  }
  const q = t.indexOf('?');
  return { path: q < 0 ? t : t.slice(0, q), query: q < 0 ? '' : t.slice(q + 1) };
}

export async function listenNode(front: Front, options: ListenOptions): Promise<HttpServer> {
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 60_000;
  const inFlight = new InFlight();
  const sendError = (res: ServerResponse, code: HttpErrorCode, message: string, headers: Record<string, string> = {}, details?: unknown): void => {
    if (res.headersSent || res.destroyed) return;
    res.shouldKeepAlive = false;
    const body = failure(details === undefined ? { code, message } : { code, message, details }, newRequestId());
    res.writeHead(HTTP_ERRORS[code].status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      ...front.cors.rawHeaders(res.req?.headers.origin),
      connection: 'close',
      ...headers,
    });
    res.end(body);
  };

  /** The front's answer, written (the request and its body are complete). */
  const respond = (res: ServerResponse, request: HttpRequest & MultipartSource, finish: () => void, beforeWrite?: () => void): void => {
    // One reaction, not a then/catch/finally chain (two promises fewer per request).
    front.handle(request).then(
      (out) => {
        try {
          beforeWrite?.();
          if (!res.destroyed) {
            out.headers['content-length'] ??= String(typeof out.body === 'string' ? Buffer.byteLength(out.body) : out.body.length);
            if (out.close) res.shouldKeepAlive = false;
            res.writeHead(out.status, out.headers);
            res.end(out.body);
          }
        } catch (error) {
          options.onError?.(error);
          res.destroy();
        }
        finish();
      },
      (error: unknown) => {
        options.onError?.(error);
        res.destroy();
        finish();
      },
    );
  };

  // Bodies on their way, each with its deadline: one timer for all, ticking only while there are some
  // (a timer and two listeners per request cost more than the rest of reading a small body).
  const arriving = new Watchlist<Arriving>(
    Math.min(250, bodyTimeoutMs),
    (a) => a.req.complete || a.req.destroyed,
    (a) => a.expire(),
  );
  const watchBody = (a: Arriving): void => arriving.add(a);

  /** A body streamed through an {@link UploadReceiver} (large uploads), with the socket's own backpressure. */
  const streamUpload = (req: IncomingMessage, res: ServerResponse, plan: UploadPlan, declared: number, request: HttpRequest & MultipartSource, finish: () => void): void => {
    if (plan.refusal) {
      // A caller the route does not take: told now, before any of the body is read.
      sendError(res, plan.refusal.body.code as HttpErrorCode, plan.refusal.message, {}, plan.refusal.body.details);
      res.once('finish', () => req.destroy());
      return;
    }
    if (declared > plan.limit) {
      sendError(res, 'PAYLOAD_TOO_LARGE', `the body is larger than ${plan.limit} bytes (max_body_bytes and the upload fields' own limits)`, {}, { max_bytes: plan.limit });
      res.once('finish', () => req.destroy());
      return;
    }
    const receiver = new UploadReceiver(plan);
    // The files live until the answer is out (or the client left).
    res.once('close', () => {
      receiver.abort();
      receiver.cleanupNow();
    });
    const refused = (error: unknown): void => {
      clearTimeout(deadline);
      const e = error as HttpError;
      sendError(res, (e.body?.code ?? 'BAD_REQUEST') as HttpErrorCode, e.message, {}, e.body?.details);
      res.once('finish', () => req.destroy());
    };
    // An upload may take long: it must not stall (no byte for body_timeout_ms), however long it lasts.
    const stalled = (): void => {
      receiver.abort();
      sendError(res, 'REQUEST_TIMEOUT', `the upload stalled: nothing arrived for ${bodyTimeoutMs} ms`);
      res.once('finish', () => req.destroy());
    };
    const deadline = setTimeout(stalled, bodyTimeoutMs);
    req.on('data', (chunk: Buffer) => {
      if (receiver.failed) return;
      deadline.refresh();
      if (!receiver.write(chunk)) {
        req.pause();
        void receiver.whenDrained().then(() => req.resume());
      }
      if (receiver.failed) void receiver.done.catch(refused);
    });
    req.on('error', () => clearTimeout(deadline));
    req.on('close', () => {
      clearTimeout(deadline);
      // The client left mid-body: its files go now.
      if (!req.complete) receiver.abort();
    });
    // The client ended its side before the body did (node:http then waits for our answer): its files go now.
    const socket = req.socket;
    const cutShort = (): void => {
      if (!req.complete) receiver.abort();
    };
    socket.once('end', cutShort);
    req.once('end', () => socket.off('end', cutShort));
    req.once('close', () => socket.off('end', cutShort));
    req.on('end', () => {
      clearTimeout(deadline);
      if (receiver.failed) return;
      receiver.end();
      receiver.done.then((parts) => {
        request.parts = () => parts;
        // A streamed upload's files go before the answer: the client that has it finds them gone.
        respond(res, request, finish, () => receiver.cleanupNow());
      }, refused);
    });
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Counted from arrival (a body may still be on its way), until answered or closed. A response
    // queued behind a pipelined one gets no 'close' when the connection drops: its request does.
    inFlight.start();
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      inFlight.done();
    };
    res.once('close', finish);
    req.once('close', () => {
      if (!req.complete || res.destroyed) finish();
    });
    const method = (req.method ?? 'GET').toUpperCase();
    const url = req.url ?? '/';
    if (url === '*') {
      // OPTIONS * asks about the server itself; anything else with * is malformed.
      if (method === 'OPTIONS') {
        res.writeHead(204, { allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS', 'content-length': '0' });
        res.end();
      } else sendError(res, 'BAD_REQUEST', `${method} * is not a request target`);
      req.resume();
      return;
    }
    const where = target(url);
    if (!where) {
      sendError(res, 'BAD_REQUEST', 'the request target is neither a path nor an absolute http(s) URL');
      req.resume();
      return;
    }
    // Node has parsed them already, names lower-cased; only set-cookie can be an array, and requests do not send it.
    const headers = req.headers as Record<string, string>;
    const declared = Number(headers['content-length'] ?? 0);
    const plan = front.uploadPlan(method, where.path, headers, options.maxBodyBytes);
    if (plan) {
      streamUpload(req, res, plan, declared, { method, path: where.path, query: where.query, headers, body: Buffer.alloc(0), remoteAddress: req.socket.remoteAddress ?? '' }, finish);
      return;
    }
    let rejected = false;
    let dropped = 0;
    let answer413: (() => void) | undefined;
    // The rest of the body is read and dropped first (up to DRAIN_BYTES, for DRAIN_MS), then the
    // 413 goes out: closing while the client still sends resets the connection, and the client
    // never reads its answer.
    const reject413 = () => {
      rejected = true;
      let answered = false;
      const timer = setTimeout(() => answer413?.(), DRAIN_MS);
      timer.unref();
      answer413 = () => {
        if (answered) return;
        answered = true;
        clearTimeout(timer);
        res.shouldKeepAlive = false;
        sendError(res, 'PAYLOAD_TOO_LARGE', `the body is larger than ${options.maxBodyBytes} bytes`);
        if (!req.complete) res.once('finish', () => req.destroy());
      };
      if (req.complete) answer413();
      else {
        req.once('end', answer413);
        req.once('close', () => clearTimeout(timer));
      }
    };
    const drop = (chunk: Buffer): void => {
      dropped += chunk.length;
      if (dropped > DRAIN_BYTES) answer413?.();
    };
    if (declared > options.maxBodyBytes) {
      if (declared > options.maxBodyBytes + DRAIN_BYTES) {
        sendError(res, 'PAYLOAD_TOO_LARGE', `the body is larger than ${options.maxBodyBytes} bytes`);
        res.once('finish', () => req.destroy());
      } else {
        reject413();
        req.on('data', drop);
      }
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    // The whole body must be in within body_timeout_ms, however steadily it trickles.
    const hasBody = declared > 0 || headers['transfer-encoding'] !== undefined;
    const watch: Arriving | undefined = hasBody
      ? {
          req,
          due: Date.now() + bodyTimeoutMs,
          expire: () => {
            rejected = true;
            sendError(res, 'REQUEST_TIMEOUT', `the request body did not arrive within ${bodyTimeoutMs} ms`);
            res.once('finish', () => req.destroy());
          },
        }
      : undefined;
    if (watch) watchBody(watch);
    req.on('data', (chunk: Buffer) => {
      if (rejected) {
        drop(chunk);
        return;
      }
      size += chunk.length;
      if (size > options.maxBodyBytes) {
        if (watch) arriving.remove(watch);
        chunks.length = 0;
        reject413();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (watch) arriving.remove(watch);
      if (rejected) return;
      const request: HttpRequest & MultipartSource = {
        method,
        path: where.path,
        query: where.query,
        headers,
        body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size),
        remoteAddress: req.socket.remoteAddress ?? '',
      };
      // Multipart bodies are read by busboy first (the front reads parts synchronously).
      const reading = readPartsAhead(request);
      if (reading) void reading.then(() => respond(res, request, finish));
      else respond(res, request, finish);
    });
  });
  // Malformed requests get an envelope and a closed connection instead of Node's bare 400.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    // An earlier request's answer is still on its way: it goes out, then the connection closes
    // (an error written now would read as that request's answer).
    const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (pending && !pending.writableFinished) {
      pending.shouldKeepAlive = false;
      return;
    }
    const [code, message] = parseError(error.code);
    socket.end(rawError(code, message));
  });
  // CONNECT is not for this server (no proxying): 501 rather than a silent close.
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    socket.end(rawError('NOT_IMPLEMENTED', 'CONNECT is not served'));
  });
  server.keepAliveTimeout = 65_000;
  // Node's own whole-request deadline, behind ours (which answers with an envelope).
  server.requestTimeout = bodyTimeoutMs + 5_000;
  server.maxConnections = options.maxConnections ?? 10_000;
  options.onNodeServer?.(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    kind: 'node',
    port,
    stopAccepting() {
      server.close();
      server.closeIdleConnections();
    },
    whenIdle() {
      return inFlight.whenIdle();
    },
    close() {
      arriving.clear();
      server.close();
      server.closeAllConnections();
    },
  };
}
