/**
 * The uWebSockets.js server: copies everything it needs from the request
 * synchronously, handles aborts before any async work, bounds the body while
 * it streams in, and writes the response corked. Several worker threads may
 * listen on one port (the kernel spreads connections).
 *
 * What this build of the binary gets wrong, and what the front does about it
 * (measured on this build; README *Deployment notes* says the rest):
 * - a pipelined request arriving while an earlier answer is pending makes it
 *   close the connection — after the earlier handler ran. Work therefore
 *   starts on the next turn of the event loop (one `setImmediate` for all
 *   requests of a turn), and a request whose connection closed meanwhile is
 *   never run: no committed write without an answer.
 * - a duplicate `Content-Length` is accepted and the rest of the bytes
 *   dispatched as another request. The front refuses it (400 and close), on
 *   the next turn as well, so that a request smuggled behind it never runs.
 * - its idle timeout (~10 s) fires while a body is still arriving: bodies
 *   get `min(body_timeout_ms, 7 s)` and a 408 rather than a silent close.
 * - out of file descriptors, its accept loop spins: {@link AcceptGuard}.
 * - it writes `uWebSockets: 20` on every answer unless told to be silent.
 */
import { createRequire } from 'node:module';
import { isMainThread } from 'node:worker_threads';
import { STATUS_CODES } from 'node:http';
import { AcceptGuard } from './accept-guard.ts';
import { failure, newRequestId } from './envelope.ts';
import { HTTP_ERRORS, type HttpError, type HttpErrorCode } from './errors.ts';
import type { Front } from './front.ts';
import { type MultipartSource, nativeParser, readPartsAhead } from './multipart.ts';
import { type UploadPlan, UploadReceiver } from './upload-stream.ts';
import type { HttpRequest, HttpResponse } from './types.ts';
import { DRAIN_BYTES, DRAIN_MS, type HttpServer, InFlight, type ListenOptions } from './server.ts';
import { Watchlist } from './watchlist.ts';

type Uws = typeof import('uWebSockets.js');
type UwsResponse = import('uWebSockets.js').HttpResponse;

const require = createRequire(import.meta.url);

/** uWebSockets.js, or the reason it cannot load here (its binaries cover some platforms and Node versions only). */
export function loadUws(): Uws | Error {
  try {
    const uws = require('uWebSockets.js') as Uws & { _cfg?: (key: string) => void };
    // No `uWebSockets: 20` header on answers (a setting of this thread's loop).
    uws._cfg?.('silent');
    return uws;
  } catch (error) {
    return error as Error;
  }
}

const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (!line) statusLines.set(status, (line = `${status} ${STATUS_CODES[status] ?? ''}`));
  return line;
}

const NO_BODY: Buffer = Buffer.alloc(0);
/** The binary's own idle timeout cuts a request at 8–12 s: bodies must be in before that. */
const UWS_BODY_LIMIT_MS = 7_000;
/** Headers copied (beside the front's own) for routes that read the client address. */
const FORWARDED = ['x-forwarded-for', 'forwarded'];

interface State {
  aborted: boolean;
  finished: boolean;
  /** Run once the request is over (answered or aborted): a streamed upload's files are removed. */
  cleanup?: () => void;
  /** The request's Origin (the CORS headers of an answer written without the front). */
  origin?: string | undefined;
}

/** A request whose body is still arriving, and when it must be in. */
interface Slow {
  res: UwsResponse;
  state: State;
  due: number;
  done: () => void;
  /** What the client is told when the deadline passes (REQUEST_TIMEOUT unless said). */
  code?: HttpErrorCode;
  /** Its place in the watchlist while watched. */
  slot?: number;
}

/** Apps open in this thread, closed at once if the thread is about to end. */
const openApps = new Set<() => void>();
let exitGuarded = false;

/**
 * A worker thread that ends with uWebSockets.js sockets still open aborts the
 * whole process (libuv asserts on the handles left in the thread's loop). So in
 * a worker, `process.exit` and an uncaught exception first close every app of
 * the thread; the thread then ends alone and the pool replaces it.
 */
function guardThreadExit(): void {
  if (exitGuarded || isMainThread) return;
  exitGuarded = true;
  const closeAll = (): void => {
    for (const close of [...openApps]) {
      try {
        close();
      } catch {
        // closing what is left, whatever state it is in
      }
    }
  };
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => {
    closeAll();
    return exit(code);
  }) as typeof process.exit;
  process.on('uncaughtException', (error) => {
    console.error('[svc worker] uncaught exception; this thread ends (the pool starts another):', error);
    closeAll();
    exit(1);
  });
}

export async function listenUws(uws: Uws, front: Front, options: ListenOptions): Promise<HttpServer> {
  guardThreadExit();
  const app = uws.App();
  const wanted = front.headerNames;
  const addressPaths = front.addressPaths;
  const bodyTimeoutMs = Math.min(options.bodyTimeoutMs ?? 60_000, UWS_BODY_LIMIT_MS);
  const inFlight = new InFlight();
  // Multipart bodies: the binary's own parser; busboy when this is the package's JavaScript stand-in, which has none.
  const native = typeof uws.getParts === 'function' ? nativeParser(uws.getParts) : undefined;

  const write = (res: UwsResponse, state: State, out: HttpResponse, head: boolean): void => {
    if (state.aborted) return;
    if (state.cleanup) {
      // A streamed upload's files go before the answer: the client that has it finds them gone.
      state.cleanup();
      state.cleanup = undefined;
    }
    res.cork(() => {
      // 200 is the binary's default status line: one native call fewer on the common path.
      if (out.status !== 200) res.writeStatus(statusLine(out.status));
      for (const name in out.headers) {
        if (name !== 'connection' && name !== 'content-length') res.writeHeader(name, out.headers[name] as string);
      }
      // HEAD: the length of the body a GET would get, and no body.
      if (head) res.endWithoutBody(Number(out.headers['content-length'] ?? Buffer.byteLength(out.body)), out.close === true);
      else res.end(out.body, out.close === true);
    });
  };

  /** An error envelope, and the connection closed after it. */
  const refuse = (res: UwsResponse, state: State, code: HttpErrorCode, message: string, details?: unknown): void => {
    if (state.aborted) return;
    state.aborted = true;
    const body = failure(details === undefined ? { code, message } : { code, message, details }, newRequestId());
    res.cork(() => {
      res.writeStatus(statusLine(HTTP_ERRORS[code].status));
      res.writeHeader('content-type', 'application/json; charset=utf-8');
      const cors = front.cors.rawHeaders(state.origin);
      for (const name in cors) res.writeHeader(name, cors[name] as string);
      res.end(body, true);
    });
  };

  // Work starts on the next turn of the loop: by then uWS has seen a pipelined request
  // that makes it drop the connection, and such a request is skipped (see the file's doc).
  let queue: (() => void)[] = [];
  let queued = false;
  const flush = (): void => {
    queued = false;
    const now = queue;
    queue = [];
    for (const job of now) {
      try {
        job();
      } catch (error) {
        options.onError?.(error); // one job's failure does not strand the others
      }
    }
  };
  const later = (job: () => void): void => {
    queue.push(job);
    if (!queued) {
      queued = true;
      setImmediate(flush);
    }
  };

  // Bodies on their way, each with its deadline: one timer for all, ticking only while there are some.
  const slow = new Watchlist<Slow>(
    Math.min(250, bodyTimeoutMs),
    (s) => s.state.aborted || s.state.finished,
    (s) => {
      if (s.code === 'PAYLOAD_TOO_LARGE') refuse(s.res, s.state, s.code, `the body is larger than ${options.maxBodyBytes} bytes`);
      else refuse(s.res, s.state, 'REQUEST_TIMEOUT', `the request body did not arrive within ${bodyTimeoutMs} ms`);
      s.done();
    },
  );
  const watchBody = (s: Slow): void => slow.add(s);

  /** A body streamed through an {@link UploadReceiver} (large uploads): paused while its files catch up. */
  const streamUpload = (res: UwsResponse, state: State, request: HttpRequest & MultipartSource, plan: UploadPlan, declared: string | undefined, finish: () => void, run: () => void): void => {
    if (plan.refusal) {
      // A caller the route does not take: told now, before any of the body is read.
      refuse(res, state, plan.refusal.body.code as HttpErrorCode, plan.refusal.message, plan.refusal.body.details);
      finish();
      return;
    }
    if (declared !== undefined && Number(declared) > plan.limit) {
      refuse(res, state, 'PAYLOAD_TOO_LARGE', `the body is larger than ${plan.limit} bytes (max_body_bytes and the upload fields' own limits)`, { max_bytes: plan.limit });
      finish();
      return;
    }
    const receiver = new UploadReceiver(plan);
    // The files live until the answer is out (or the client left).
    state.cleanup = () => {
      receiver.abort();
      receiver.cleanupNow();
    };
    const watch: Slow = {
      res,
      state,
      due: Date.now() + bodyTimeoutMs,
      done: () => {
        receiver.abort();
        finish();
      },
    };
    watchBody(watch);
    const refused = (error: unknown): void => {
      slow.remove(watch);
      const e = error as HttpError;
      refuse(res, state, (e.body?.code ?? 'BAD_REQUEST') as HttpErrorCode, e.message, e.body?.details);
      finish();
    };
    let paused = false;
    res.onData((chunk, isLast) => {
      if (state.aborted) {
        receiver.abort();
        return;
      }
      // An upload may take long: it must not stall (no byte for body_timeout_ms), however long it lasts.
      watch.due = Date.now() + bodyTimeoutMs;
      // The chunk's memory is reused after this callback: the receiver keeps a copy.
      if (!receiver.write(Buffer.from(chunk.slice(0))) && !paused && !isLast) {
        paused = true;
        res.pause();
        void receiver.whenDrained().then(() => {
          paused = false;
          if (!state.aborted) res.resume();
        });
      }
      if (receiver.failed) {
        void receiver.done.catch(refused);
        return;
      }
      if (isLast) {
        slow.remove(watch);
        receiver.end();
        receiver.done.then(
          (parts) => {
            request.parts = () => parts;
            run();
          },
          refused,
        );
      }
    });
  };

  options.onUwsApp?.(app);
  app.any('/*', (res, req) => {
    // Counted from arrival (a body may still be on its way), until answered or aborted.
    inFlight.start();
    const state: State = { aborted: false, finished: false, origin: undefined };
    const finish = (): void => {
      if (state.finished) return;
      state.finished = true;
      state.cleanup?.();
      inFlight.done();
    };
    res.onAborted(() => {
      state.aborted = true;
      finish();
    });
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const headers: Record<string, string> = {};
    let lengths = 0;
    if (wanted === 'all') {
      req.forEach((k, v) => {
        if (k === 'content-length') lengths++;
        // A header sent twice is joined as node:http joins it (`a, b`): one value for every reader, never the last one alone.
        const had = headers[k];
        headers[k] = had === undefined ? v : `${had}, ${v}`;
      });
    } else {
      // A few native calls are much cheaper than a JS callback per header.
      for (const name of wanted) {
        const v = req.getHeader(name);
        if (v !== '') headers[name] = v;
      }
      if (headers['content-length'] !== undefined) {
        req.forEach((k) => {
          if (k === 'content-length') lengths++;
        });
      }
    }
    state.origin = headers.origin;
    const url = req.getUrl();
    const wantsAddress = addressPaths.has(url);
    if (wantsAddress) {
      // Every line of the forwarding headers, in order (a proxy appends its own line after the
      // client's): joined as node:http joins them, so the chain is read from the right.
      for (const name of FORWARDED) delete headers[name];
      req.forEach((k, v) => {
        if (FORWARDED.includes(k)) headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
      });
    }
    const request: HttpRequest & MultipartSource = {
      method,
      path: url,
      query: req.getQuery() ?? '',
      headers,
      body: NO_BODY,
      // Copying the address costs more than the rest of the request: only where it is read.
      remoteAddress: wantsAddress ? Buffer.from(res.getRemoteAddressAsText()).toString() : '',
    };
    if (lengths > 1) {
      // RFC 9112 §6.3: unrecoverable framing. Answered on the next turn, so that bytes behind it
      // (a smuggled request) make uWS drop the connection instead of dispatching them.
      later(() => {
        refuse(res, state, 'BAD_REQUEST', 'more than one Content-Length header');
        finish();
      });
      return;
    }
    const run = (): void => {
      if (state.aborted) return;
      // With getParts the parts are read when the front asks; busboy reads them first, then this runs again.
      const reading = request.parts ? undefined : readPartsAhead(request, native);
      if (reading) {
        void reading.then(run);
        return;
      }
      // One reaction, not a then/catch/finally chain (two promises fewer per request).
      front.handle(request).then(
        (out) => {
          try {
            write(res, state, out, method === 'HEAD');
          } catch (error) {
            options.onError?.(error);
          }
          finish();
        },
        (error: unknown) => {
          options.onError?.(error);
          finish();
        },
      );
    };
    const declared = headers['content-length'];
    const plan = front.uploadPlan(method, url, headers, options.maxBodyBytes);
    if (plan) {
      streamUpload(res, state, request, plan, declared, finish, run);
      return;
    }
    const tooLarge = `the body is larger than ${options.maxBodyBytes} bytes`;
    // A body over the limit is read and dropped before the 413 goes out (up to DRAIN_BYTES more):
    // closing on a client still sending resets the connection, and the client sees no answer.
    let over = declared !== undefined && Number(declared) > options.maxBodyBytes;
    if (over && !(Number(declared) <= options.maxBodyBytes + DRAIN_BYTES)) {
      refuse(res, state, 'PAYLOAD_TOO_LARGE', tooLarge);
      finish();
      return;
    }
    if (declared === undefined && headers['transfer-encoding'] === undefined) {
      later(run);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const watch: Slow = { res, state, due: Date.now() + bodyTimeoutMs, done: finish };
    const overLimit = (): void => {
      over = true;
      chunks.length = 0;
      watch.code = 'PAYLOAD_TOO_LARGE';
      watch.due = Math.min(watch.due, Date.now() + DRAIN_MS);
    };
    if (over) overLimit();
    watchBody(watch);
    res.onData((chunk, isLast) => {
      if (state.aborted) return;
      size += chunk.byteLength;
      if (!over && size > options.maxBodyBytes) overLimit();
      if (over) {
        if (isLast || size > options.maxBodyBytes + DRAIN_BYTES) {
          slow.remove(watch);
          refuse(res, state, 'PAYLOAD_TOO_LARGE', tooLarge);
          finish();
        }
        return;
      }
      // The chunk's memory is reused after this callback: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) {
        slow.remove(watch);
        request.body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
        later(run);
      }
    });
  });

  const host = options.host;
  const listen = (port: number) =>
    new Promise<import('uWebSockets.js').us_listen_socket | false>((resolve) => app.listen(host, port, resolve));
  let token = await listen(options.port);
  if (!token) throw new Error(`cannot listen on ${host}:${options.port}`);
  const port = uws.us_socket_local_port(token);
  let open = true;
  const guard = new AcceptGuard({
    maxConnections: options.maxConnections ?? 10_000,
    pause: () => {
      if (token) uws.us_listen_socket_close(token);
      token = false;
    },
    resume: async () => {
      if (!open) return false;
      const t = await listen(port);
      if (open) token = t;
      else if (t) uws.us_listen_socket_close(t);
      return t !== false;
    },
    onChange: options.onAcceptChange,
  });
  const stopAccepting = (): void => {
    guard.stop();
    if (open && token) uws.us_listen_socket_close(token);
    open = false;
    token = false;
  };
  const closeNow = (): void => {
    stopAccepting();
    slow.clear();
    (app as { close?: () => void }).close?.();
  };
  openApps.add(closeNow);
  return {
    kind: 'uws',
    port,
    stopAccepting,
    whenIdle() {
      return inFlight.whenIdle();
    },
    close() {
      openApps.delete(closeNow);
      closeNow();
    },
  };
}
