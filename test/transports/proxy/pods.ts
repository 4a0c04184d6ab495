// Stand-ins for sandbox pods on loopback: a node:http + ws server on 127.0.0.N:<port> (8000 when free), as a dev
// server in a pod would listen, recording what reaches it; and the pod objects the route table reads.
import { once } from 'node:events';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { PodLike } from '../../../transports/proxy/index.ts';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

export interface SocketSeen {
  url: string;
  protocol: string;
  headers: IncomingHttpHeaders;
  socket: WebSocket;
  /** The close code the proxy's side sent (once closed). */
  closed: Promise<{ code: number; reason: string }>;
}

export interface StandInPod {
  ip: string;
  port: number;
  requests: Seen[];
  sockets: SocketSeen[];
  /** Called on each WebSocket connection. */
  onSocket?: (s: SocketSeen) => void;
  close(): Promise<void>;
}

/**
 * What the stand-in does with a request:
 * - `/count`: counts the body's bytes as they stream (keeps none) and answers `{"bytes":N}`;
 * - `/download?bytes=N`: streams N bytes;
 * - anything else: echoes method, url, headers and body as JSON, with `?status=` as its status, two Set-Cookie
 *   headers (a third with a `Domain` for `?plant`) and `x-pod: <ip>`.
 * WebSockets: selects `vite-hmr` when offered, echoes every message as it came (text or binary); the text
 * `close <code>` makes it close with that code.
 */
export async function standInPod(ip: string, port = 8000): Promise<StandInPod> {
  const requests: Seen[] = [];
  const sockets: SocketSeen[] = [];
  const pod: StandInPod = { ip, port, requests, sockets, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://pod');
    if (url.pathname === '/count') {
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes })));
      return;
    }
    if (url.pathname === '/download') {
      let left = Number(url.searchParams.get('bytes'));
      const chunk = Buffer.alloc(64 * 1024, 120);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const pump = (): void => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(seen);
      const body = JSON.stringify({ ...seen, pod: ip });
      const planted = url.searchParams.has('plant') ? ['set-cookie', 'svc_preview=junk; Domain=preview.example.test; Path=/app'] : [];
      res.writeHead(Number(url.searchParams.get('status') ?? 200), ['content-type', 'application/json', 'x-pod', ip, 'set-cookie', 'a=1; Path=/', 'set-cookie', 'b=2; Path=/', ...planted, 'content-length', String(Buffer.byteLength(body))]);
      res.end(req.method === 'HEAD' ? undefined : body);
    });
  });
  const wss = new WebSocketServer({ server, handleProtocols: (protocols) => (protocols.has('vite-hmr') ? 'vite-hmr' : false) });
  wss.on('connection', (socket, req) => {
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    const seen: SocketSeen = { url: req.url ?? '', protocol: socket.protocol, headers: req.headers, socket, closed };
    sockets.push(seen);
    socket.on('message', (data, isBinary) => {
      const text = isBinary ? '' : data.toString();
      const m = /^close (\d+)$/.exec(text);
      if (m) socket.close(Number(m[1]), 'closed by the pod');
      else socket.send(data, { binary: isBinary });
    });
    pod.onSocket?.(seen);
  });
  server.listen(port, ip);
  await once(server, 'listening');
  pod.port = (server.address() as { port: number }).port;
  pod.close = async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  return pod;
}

/**
 * Stand-ins on each address, sharing one port: 8000 when it is free on all of them, else one the OS picks.
 */
export async function standInPods(ips: string[]): Promise<StandInPod[]> {
  const pods: StandInPod[] = [];
  try {
    for (const ip of ips) pods.push(await standInPod(ip, pods[0]?.port ?? 8000));
    return pods;
  } catch {
    await Promise.all(pods.map((p) => p.close()));
    pods.length = 0;
    for (const ip of ips) pods.push(await standInPod(ip, pods[0]?.port ?? 0));
    return pods;
  }
}

/** A sandbox pod object as the API server would show it. */
export function sandboxPod(name: string, id: string | undefined, ip: string | undefined, ready = true): PodLike {
  return {
    metadata: { name, namespace: 'svc-sandboxes', labels: { 'svc-sandbox': 'true', ...(id ? { 'svc-sandbox-id': id } : { 'svc-sandbox-pool': 'warm' }) } },
    status: { phase: ready ? 'Running' : 'Pending', ...(ip ? { podIP: ip } : {}), conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

/** An answer, its body read whole. */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

/** One request to the proxy with a Host header of our choice (fetch cannot set Host). */
export function ask(port: number, host: string, options: { method?: string; path?: string; headers?: Record<string, string | string[]>; body?: string | Buffer } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path ?? '/', headers: { host, ...options.headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Poll `predicate` until truthy, at most `ms` (no fixed sleep: a bounded poll). */
export async function until<T>(predicate: () => T | Promise<T>, what: string, ms = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await predicate();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
