/**
 * The gateway's HTTP forwarding: one request relayed to its module over the
 * module's keep-alive pool, bodies streamed both ways, hop-by-hop headers
 * dropped, `X-Forwarded-*` added, the gateway's CORS in place of the
 * module's; 502 (or 504) when the module cannot answer.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { type ErrorBody, failure, newRequestId } from '../http/index.ts';
import type { CorsPolicy } from './gateway-cors.ts';
import { reason } from './gateway-errors.ts';
import type { Upstream } from './gateway-upstream.ts';

/** Hop-by-hop headers: never relayed (RFC 9110 §7.6.1), nor `expect` (answered here) or `host` (re-added). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'expect', 'host', 'http2-settings']);
export const JSON_TYPE = 'application/json; charset=utf-8';

/** Relay one request to its module: headers filtered, bodies streamed, CORS applied; 502 when the module cannot be reached. */
export function proxy(u: Upstream, req: IncomingMessage, res: ServerResponse, cors: CorsPolicy, reachable: (name: string, ok: boolean, why?: string) => void): void {
  const abort = new AbortController();
  // A client gone before the answer ended: the upstream request (or its body) is aborted too.
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
  const headers = forwardHeaders(req);
  u.pool
    .request({ path: u.prefix + targetOf(req.url ?? '/'), method: req.method ?? 'GET', headers, body: hasBody ? req : null, signal: abort.signal })
    .then(
      (up) => {
        reachable(u.name, true);
        const out: OutgoingHttpHeaders = {};
        const connection = connectionTokens(up.headers.connection);
        for (const [k, v] of Object.entries(up.headers)) {
          if (v === undefined || HOP_BY_HOP.has(k) || connection.has(k) || k.startsWith('proxy-') || k.startsWith('access-control-')) continue;
          out[k] = v;
        }
        cors.apply(req.headers.origin, out);
        if (res.destroyed) {
          up.body.destroy();
          return;
        }
        res.writeHead(up.statusCode, out);
        pipeline(up.body, res, () => undefined);
      },
      (error: unknown) => {
        if (abort.signal.aborted || res.destroyed) return;
        if (res.headersSent) return void res.destroy();
        const code = (error as { code?: unknown }).code;
        const why = reason(error);
        let status = 502;
        let body: ErrorBody = { code: 'MODULE_UNREACHABLE', message: `module ${u.name} is unreachable: ${why}` };
        if (code === 'UND_ERR_INVALID_ARG') [status, body] = [400, { code: 'BAD_REQUEST', message: `the request cannot be relayed: ${why}` }];
        else if (code === 'UND_ERR_HEADERS_TIMEOUT') [status, body] = [504, { code: 'TIMEOUT', message: `module ${u.name} did not answer in time` }];
        else reachable(u.name, false, why);
        const text = failure(body, newRequestId(req.headers['x-request-id'] as string | undefined));
        const out: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) };
        cors.apply(req.headers.origin, out);
        res.writeHead(status, out);
        res.end(text);
      },
    );
}

/** Request headers for the module: hop-by-hop ones out, `Host` kept, `X-Forwarded-*` added. */
function forwardHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connection = connectionTokens(req.headers.connection);
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || connection.has(k) || k.startsWith('proxy-')) continue;
    out[k] = v;
  }
  Object.assign(out, forwarded(req));
  if (req.headers.host !== undefined) out.host = req.headers.host;
  return out;
}

/** The `X-Forwarded-*` headers of a request to a module. */
export function forwarded(req: IncomingMessage): Record<string, string> {
  const client = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  const before = req.headers['x-forwarded-for'];
  const host = req.headers['x-forwarded-host'] ?? req.headers.host;
  return {
    'x-forwarded-for': before ? `${Array.isArray(before) ? before.join(', ') : before}, ${client}` : client,
    'x-forwarded-proto': (req.headers['x-forwarded-proto'] as string | undefined) ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'),
    ...(host === undefined ? {} : { 'x-forwarded-host': Array.isArray(host) ? (host[0] as string) : host }),
  };
}

function connectionTokens(value: string | string[] | undefined): Set<string> {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(text.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean));
}

/** A request target as path and query (an absolute-form target → its path and query). */
export function targetOf(url: string): string {
  if (url.startsWith('/')) return url;
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return `/${url}`;
  }
}
