/**
 * The tool server over HTTP: SSE (`GET /sse` opens the event stream,
 * `POST /messages/?sessionId=…` carries the client's messages) or
 * streamable HTTP (`POST /mcp`, with `GET`/`DELETE /mcp` for the session's
 * stream and its end). One server instance per connection (an SSE stream, a
 * streamable-HTTP session).
 *
 * Every request is checked before the SDK sees it:
 * - `Host` must name this server (DNS-rebinding protection: a page on another
 *   site that resolves its name to 127.0.0.1 sends its own name);
 * - `Origin`, when sent, must be this server's or one of `allowed_origins`;
 * - a bearer token, compared in constant time. One is always required:
 *   `run_svc`, `graph_visualize` and `execute_command` run code, and any user
 *   of the machine can reach a loopback port. (`svc mcp` makes one on
 *   loopback when none is configured; beyond loopback it must be configured.)
 *   stdio needs none: the client started the server as itself.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';

/** Largest JSON-RPC body accepted (a 100 KB tool input, escaped, fits with room). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Connections (SSE streams, streamable-HTTP sessions) open at once; more answer 503. */
export const MAX_SESSIONS = 256;
/** A streamable-HTTP session unused this long is closed. */
export const SESSION_IDLE_MS = 30 * 60_000;

export interface McpHttpOptions {
  transport: 'sse' | 'streamable-http';
  host: string;
  port: number;
  /** The bearer token every request must carry (at least 16 characters; required). */
  token?: string;
  /** Origins allowed besides the server's own. */
  allowedOrigins?: string[];
  /** A fresh server for each connection. */
  newServer(): McpServer;
  /** Close streamable-HTTP sessions idle this long (default {@link SESSION_IDLE_MS}). */
  sessionIdleMs?: number;
  /** At most this many connections at once (default {@link MAX_SESSIONS}). */
  maxSessions?: number;
  log?(line: string): void;
}

export interface McpHttpServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

/** The bind address is this machine only. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || (isIP(h) === 4 && h.startsWith('127.'));
}

/** Thrown at start: the settings would expose code execution to the network, or are otherwise unusable. */
export class McpConfigError extends Error {
  override name = 'McpConfigError';
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** A JSON-RPC error answer for a request refused before it reached the protocol. */
function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

async function readJson(req: IncomingMessage): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) return { ok: false, status: 413, message: `the body is larger than ${MAX_BODY_BYTES} bytes` };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return { ok: false, status: 413, message: `the body is larger than ${MAX_BODY_BYTES} bytes` };
    chunks.push(chunk as Buffer);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false, status: 400, message: 'the body is not JSON' };
  }
}

/**
 * Serve the tool server over HTTP.
 * @example
 * const http = await listenMcpHttp({ transport: 'streamable-http', host: '127.0.0.1', port: 3001, newServer: () => createMcpServer(settings, pool) });
 */
export async function listenMcpHttp(options: McpHttpOptions): Promise<McpHttpServer> {
  const loopback = isLoopback(options.host);
  const token = options.token ?? '';
  if (!loopback && token === '') {
    throw new McpConfigError(`svc mcp would listen on ${options.host}, beyond this machine, with no token: set [mcp] token (SVC_MCP_TOKEN); run_svc executes code`);
  }
  if (token === '') {
    throw new McpConfigError('svc mcp over HTTP needs a token even on loopback: any user of this machine can reach the port, and run_svc, graph_visualize and execute_command run code');
  }
  if (token !== '' && token.length < 16) throw new McpConfigError('[mcp] token must be at least 16 characters');
  const log = options.log ?? (() => {});
  const sse = new Map<string, SSEServerTransport>();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const lastSeen = new Map<string, number>();
  const maxSessions = options.maxSessions ?? MAX_SESSIONS;
  const idleMs = options.sessionIdleMs ?? SESSION_IDLE_MS;
  // Sessions a client never ends (no DELETE) would stay for the life of the server.
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const [sid, seen] of lastSeen) {
      if (now - seen < idleMs) continue;
      lastSeen.delete(sid);
      const t = sessions.get(sid);
      sessions.delete(sid);
      void t?.close().catch(() => {});
    }
  }, Math.max(10, Math.min(60_000, idleMs / 2)));
  sweeper.unref();
  let port = options.port;

  // The bound address as a Host header names it (an IPv6 address in brackets).
  const bound = options.host.toLowerCase().replace(/^\[|\]$/g, '');
  const boundHost = bound.includes(':') ? `[${bound}]` : bound;
  const hostAllowed = (host: string | undefined): boolean => {
    if (!host) return false;
    const h = host.toLowerCase();
    // On loopback: the usual names of this machine, and the address bound (127.0.0.2 is loopback too).
    if (loopback) return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${boundHost}:${port}`].includes(h);
    // Bound to a named address: that name; bound to every address, the token is the gate.
    return bound === '0.0.0.0' || bound === '::' || h === `${boundHost}:${port}` || h === boundHost;
  };
  const originAllowed = (origin: string | undefined): boolean => {
    if (origin === undefined) return true; // not a browser
    const o = origin.toLowerCase().replace(/\/$/, '');
    const own = [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`, `http://${boundHost}:${port}`];
    if (!loopback) own.push(`https://${boundHost}:${port}`);
    return own.includes(o) || (options.allowedOrigins ?? []).some((a) => a.toLowerCase().replace(/\/$/, '') === o);
  };
  const tokenOk = (header: string | undefined): boolean => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    // Digests of equal length: the comparison takes the same time whatever the guess.
    return m !== null && timingSafeEqual(digest(m[1] as string), digest(token));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!hostAllowed(req.headers.host)) return refuse(res, 403, 'the Host header does not name this server');
    if (!originAllowed(req.headers.origin)) return refuse(res, 403, 'this Origin may not use the server');
    if (!tokenOk(req.headers.authorization)) return refuse(res, 401, 'a valid bearer token is required', { 'www-authenticate': 'Bearer realm="svc-mcp"' });
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    if (options.transport === 'sse') {
      if (url.pathname === '/sse' && method === 'GET') {
        if (sse.size >= maxSessions) return refuse(res, 503, `${maxSessions} connections are open: try again later`, { 'retry-after': '5' });
        const transport = new SSEServerTransport('/messages/', res);
        sse.set(transport.sessionId, transport);
        res.on('close', () => sse.delete(transport.sessionId));
        await options.newServer().connect(transport);
        return;
      }
      if ((url.pathname === '/messages/' || url.pathname === '/messages') && method === 'POST') {
        const transport = sse.get(url.searchParams.get('sessionId') ?? '');
        if (!transport) return refuse(res, 404, 'no such session (open GET /sse first)');
        const body = await readJson(req);
        if (!body.ok) return refuse(res, body.status, body.message);
        await transport.handlePostMessage(req, res, body.value);
        return;
      }
      return refuse(res, 404, `no route ${method} ${url.pathname} (SSE: GET /sse, POST /messages/)`);
    }
    if (url.pathname !== '/mcp') return refuse(res, 404, `no route ${method} ${url.pathname} (streamable HTTP: POST /mcp)`);
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? sessions.get(id) : undefined;
    if (method === 'POST') {
      const body = await readJson(req);
      if (!body.ok) return refuse(res, body.status, body.message);
      if (existing) {
        lastSeen.set(id as string, Date.now());
        return existing.handleRequest(req, res, body.value);
      }
      if (id !== undefined) return refuse(res, 404, 'no such session');
      if (!isInitializeRequest(body.value)) return refuse(res, 400, 'no session: the first request initializes one');
      if (sessions.size >= maxSessions) return refuse(res, 503, `${maxSessions} sessions are open: end one (DELETE /mcp) or try again later`, { 'retry-after': '5' });
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.set(sid, transport);
          lastSeen.set(sid, Date.now());
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) {
          sessions.delete(transport.sessionId);
          lastSeen.delete(transport.sessionId);
        }
      };
      await options.newServer().connect(transport);
      return transport.handleRequest(req, res, body.value);
    }
    if (method === 'GET' || method === 'DELETE') {
      if (!existing) return refuse(res, id === undefined ? 400 : 404, id === undefined ? 'the Mcp-Session-Id header is required' : 'no such session');
      lastSeen.set(id as string, Date.now());
      return existing.handleRequest(req, res);
    }
    return refuse(res, 405, `${method} is not served on /mcp`, { allow: 'GET, POST, DELETE' });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log(`svc mcp: ${req.method} ${req.url} failed: ${error instanceof Error ? error.message : String(error)}`);
      refuse(res, 500, 'internal error');
    });
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port, options.host, () => done());
  });
  port = (server.address() as { port: number }).port;
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    port,
    url: `http://${shown}:${port}${options.transport === 'sse' ? '/sse' : '/mcp'}`,
    async close() {
      clearInterval(sweeper);
      for (const t of sse.values()) await t.close().catch(() => {});
      for (const t of sessions.values()) await t.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
