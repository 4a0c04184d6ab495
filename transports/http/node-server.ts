/**
 * The node:http server: the same front on Node's own HTTP stack, for
 * platforms where uWebSockets.js cannot load (or with `SVC_TRANSPORT=node`).
 * Node 20 cannot share a port between worker threads, so only one thread
 * listens; the others host partitions.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { failure, newRequestId } from './envelope.ts';
import type { Front } from './front.ts';
import type { HttpServer, ListenOptions } from './server.ts';

export async function listenNode(front: Front, options: ListenOptions): Promise<HttpServer> {
  let inFlight = 0;
  let idle: (() => void) | null = null;

  const done = (): void => {
    if (--inFlight === 0 && idle) idle();
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Counted from arrival (a body may still be on its way), until answered or closed.
    inFlight++;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      done();
    };
    res.once('close', finish);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    // Node has parsed them already, names lower-cased; only set-cookie can be an array, and requests do not send it.
    const headers = req.headers as Record<string, string>;
    const declared = Number(headers['content-length'] ?? 0);
    const reject413 = () => {
      res.writeHead(413, { 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*', connection: 'close' });
      res.end(failure({ code: 'PAYLOAD_TOO_LARGE', message: `the body is larger than ${options.maxBodyBytes} bytes` }, newRequestId()));
      req.destroy();
    };
    if (declared > options.maxBodyBytes) {
      reject413();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let rejected = false;
    req.on('data', (chunk: Buffer) => {
      if (rejected) return;
      size += chunk.length;
      if (size > options.maxBodyBytes) {
        rejected = true;
        reject413();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      if (rejected) return;
      void front
        .handle({
          method: (req.method ?? 'GET').toUpperCase(),
          path: q < 0 ? url : url.slice(0, q),
          query: q < 0 ? '' : url.slice(q + 1),
          headers,
          body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size),
          remoteAddress: req.socket.remoteAddress ?? '',
        })
        .then((out) => {
          if (!res.destroyed) {
            out.headers['content-length'] ??= String(typeof out.body === 'string' ? Buffer.byteLength(out.body) : out.body.length);
            if (out.close) res.shouldKeepAlive = false;
            res.writeHead(out.status, out.headers);
            res.end(out.body);
          }
          finish();
        });
    });
  });
  server.keepAliveTimeout = 65_000;
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
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (idle = resolve));
    },
    close() {
      server.close();
      server.closeAllConnections();
    },
  };
}
