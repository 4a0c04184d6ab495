/**
 * The uWebSockets.js server: copies everything it needs from the request
 * synchronously, handles aborts before any async work, bounds the body while
 * it streams in, and writes the response corked. Several worker threads may
 * listen on one port (the kernel spreads connections).
 */
import { createRequire } from 'node:module';
import { STATUS_CODES } from 'node:http';
import { failure, newRequestId } from './envelope.ts';
import { HTTP_ERRORS } from './errors.ts';
import type { Front } from './front.ts';
import type { HttpRequest, HttpResponse } from './types.ts';
import type { HttpServer, ListenOptions } from './server.ts';

type Uws = typeof import('uWebSockets.js');
type UwsResponse = import('uWebSockets.js').HttpResponse;

const require = createRequire(import.meta.url);

/** uWebSockets.js, or the reason it cannot load here (its binaries cover some platforms and Node versions only). */
export function loadUws(): Uws | Error {
  try {
    return require('uWebSockets.js') as Uws;
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

export async function listenUws(uws: Uws, front: Front, options: ListenOptions): Promise<HttpServer> {
  const app = uws.App();
  const wanted = front.headerNames;
  const addressPaths = front.addressPaths;
  let inFlight = 0;
  let idle: (() => void) | null = null;

  const write = (res: UwsResponse, state: { aborted: boolean }, out: HttpResponse, head: boolean): void => {
    if (state.aborted) return;
    res.cork(() => {
      res.writeStatus(statusLine(out.status));
      for (const name in out.headers) {
        if (name !== 'connection' && name !== 'content-length') res.writeHeader(name, out.headers[name] as string);
      }
      // HEAD: the length of the body a GET would get, and no body.
      if (head) res.endWithoutBody(Number(out.headers['content-length'] ?? Buffer.byteLength(out.body)), out.close === true);
      else res.end(out.body, out.close === true);
    });
  };

  const tooLarge = (res: UwsResponse, state: { aborted: boolean }): void => {
    if (state.aborted) return;
    state.aborted = true;
    const body = failure({ code: 'PAYLOAD_TOO_LARGE', message: `the body is larger than ${options.maxBodyBytes} bytes` }, newRequestId());
    res.cork(() => {
      res.writeStatus(statusLine(HTTP_ERRORS.PAYLOAD_TOO_LARGE.status));
      res.writeHeader('content-type', 'application/json; charset=utf-8');
      res.writeHeader('access-control-allow-origin', '*');
      res.writeHeader('connection', 'close');
      res.end(body, true);
    });
  };

  const done = (): void => {
    if (--inFlight === 0 && idle) idle();
  };

  options.onUwsApp?.(app);
  app.any('/*', (res, req) => {
    // Counted from arrival (a body may still be on its way), until answered or aborted.
    inFlight++;
    const state = { aborted: false, finished: false };
    const finish = (): void => {
      if (state.finished) return;
      state.finished = true;
      done();
    };
    res.onAborted(() => {
      state.aborted = true;
      finish();
    });
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const headers: Record<string, string> = {};
    if (wanted === 'all') {
      req.forEach((k, v) => {
        headers[k] = v;
      });
    } else {
      // A few native calls are much cheaper than a JS callback per header.
      for (const name of wanted) {
        const v = req.getHeader(name);
        if (v !== '') headers[name] = v;
      }
    }
    const url = req.getUrl();
    const request: HttpRequest = {
      method,
      path: url,
      query: req.getQuery() ?? '',
      headers,
      body: NO_BODY,
      // Copying the address costs more than the rest of the request: only where it is read.
      remoteAddress: addressPaths.has(url) ? Buffer.from(res.getRemoteAddressAsText()).toString() : '',
    };
    const run = (): void => {
      void front.handle(request).then((out) => {
        write(res, state, out, method === 'HEAD');
        finish();
      });
    };
    const declared = headers['content-length'];
    if (declared !== undefined && Number(declared) > options.maxBodyBytes) {
      tooLarge(res, state);
      finish();
      return;
    }
    if (declared === undefined && headers['transfer-encoding'] === undefined) {
      run();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (state.aborted) return;
      size += chunk.byteLength;
      if (size > options.maxBodyBytes) {
        tooLarge(res, state);
        finish();
        return;
      }
      // The chunk's memory is reused after this callback: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) {
        request.body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
        run();
      }
    });
  });

  const token = await new Promise<import('uWebSockets.js').us_listen_socket | false>((resolve) => app.listen(options.host, options.port, resolve));
  if (!token) throw new Error(`cannot listen on ${options.host}:${options.port}`);
  const port = uws.us_socket_local_port(token);
  let open = true;
  const stopAccepting = (): void => {
    if (open) uws.us_listen_socket_close(token);
    open = false;
  };
  return {
    kind: 'uws',
    port,
    stopAccepting,
    whenIdle() {
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (idle = resolve));
    },
    close() {
      stopAccepting();
      (app as { close?: () => void }).close?.();
    },
  };
}
