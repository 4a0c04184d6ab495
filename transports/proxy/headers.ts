/**
 * Headers on the way through: hop-by-hop headers removed (RFC 9110 §7.6.1: `Connection` and what it names,
 * `Keep-Alive`, `Transfer-Encoding`, `TE`, `Trailer`, `Upgrade`, `Proxy-*`), `X-Forwarded-For/-Proto/-Host` added,
 * the preview token's carriers removed, everything else passed as it came (order, case and repeats kept).
 *
 * Decisions:
 * - `Host` becomes the pod's `ip:port` (the original goes in `X-Forwarded-Host`): dev servers that check the Host
 *   header (Vite's `allowedHosts`) accept an IP address without configuration.
 * - `Expect` is answered by the proxy itself (Node sends `100 Continue`) and not forwarded.
 * - For a WebSocket upgrade, `Connection: Upgrade` and `Upgrade: websocket` are set again for the pod.
 */
import type { IncomingMessage } from 'node:http';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** The names a `Connection` header lists (each one hop-by-hop too). */
function connectionTokens(raw: string[]): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() !== 'connection') continue;
    for (const token of (raw[i + 1] as string).split(',')) out.add(token.trim().toLowerCase());
  }
  return out;
}

/** What a request's headers become on the way to the pod. */
export interface ForwardRequest {
  /** The pod's `ip:port`, the new Host. */
  target: string;
  /** The client's address (appended to X-Forwarded-For). */
  clientAddress: string | undefined;
  /** A WebSocket handshake: the upgrade headers are kept. */
  upgrade?: boolean;
  /** Header names (lowercase) dropped too. */
  drop?: ReadonlySet<string>;
  /** A replacement for `Cookie` (null: none), when the token cookie was taken out. */
  cookie?: string | null;
  /** A replacement for `Sec-WebSocket-Protocol` (null: none), when the token subprotocol was taken out. */
  protocols?: string | null;
}

/**
 * The request headers for the pod, as a flat raw list (`[name, value, name, value…]`).
 *
 * @example
 * const headers = forwardRequestHeaders(req, { target: '10.244.0.7:8000', clientAddress: req.socket.remoteAddress });
 */
export function forwardRequestHeaders(req: IncomingMessage, f: ForwardRequest): string[] {
  const raw = req.rawHeaders;
  const named = connectionTokens(raw);
  const out: string[] = ['Host', f.target];
  let forwardedFor: string | undefined;
  let proto: string | undefined;
  let forwardedHost: string | undefined;
  let host: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower) || lower === 'expect' || f.drop?.has(lower)) continue;
    switch (lower) {
      case 'host':
        host = value;
        continue;
      case 'x-forwarded-for':
        forwardedFor = forwardedFor === undefined ? value : `${forwardedFor}, ${value}`;
        continue;
      case 'x-forwarded-proto':
        proto ??= value;
        continue;
      case 'x-forwarded-host':
        forwardedHost ??= value;
        continue;
      case 'cookie':
        if (f.cookie !== undefined) continue;
        break;
      case 'sec-websocket-protocol':
        if (f.protocols !== undefined) continue;
        break;
    }
    out.push(name, value);
  }
  if (f.cookie) out.push('Cookie', f.cookie);
  if (f.protocols) out.push('Sec-WebSocket-Protocol', f.protocols);
  const client = f.clientAddress?.replace(/^::ffff:/, '');
  out.push('X-Forwarded-For', client ? (forwardedFor ? `${forwardedFor}, ${client}` : client) : (forwardedFor ?? 'unknown'));
  out.push('X-Forwarded-Proto', proto ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'));
  if (forwardedHost ?? host) out.push('X-Forwarded-Host', (forwardedHost ?? host) as string);
  if (f.upgrade) out.push('Connection', 'Upgrade', 'Upgrade', 'websocket');
  return out;
}

/**
 * A response's headers for the client, hop-by-hop ones removed (flat raw list).
 *
 * @example
 * res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, responseHeaders(upstream.rawHeaders));
 */
export function responseHeaders(raw: string[]): string[] {
  const named = connectionTokens(raw);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const lower = (raw[i] as string).toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower)) continue;
    out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}

/** The first value of a header, as Node joined it. */
export function firstValue(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v?.split(',')[0]?.trim();
}
