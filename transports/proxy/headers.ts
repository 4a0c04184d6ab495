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

/** What a request's headers are looked at for before it is routed, read in one pass over the raw list. */
export interface RequestFacts {
  host: string | undefined;
  /** It accepts HTML (a browser navigation). */
  html: boolean;
  /** It has a body (RFC 9112 §6.3: Transfer-Encoding, or a Content-Length other than 0). */
  hasBody: boolean;
}

/**
 * The facts routing needs, without building `req.headers`.
 *
 * @example
 * const { host, html, hasBody } = requestFacts(req.rawHeaders);
 */
export function requestFacts(raw: string[]): RequestFacts {
  let host: string | undefined;
  let html = false;
  let hasBody = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    // Only names of these lengths matter: most headers are passed over without lowercasing them.
    switch (name.length) {
      case 4:
        if (host === undefined && name.toLowerCase() === 'host') host = raw[i + 1];
        break;
      case 6:
        if (!html && name.toLowerCase() === 'accept') html = (raw[i + 1] as string).includes('text/html');
        break;
      case 14:
        if (name.toLowerCase() === 'content-length' && raw[i + 1] !== '0') hasBody = true;
        break;
      case 17:
        if (name.toLowerCase() === 'transfer-encoding') hasBody = true;
        break;
    }
  }
  return { host, html, hasBody };
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
  const out: string[] = ['Host', f.target];
  let forwardedFor: string | undefined;
  let proto: string | undefined;
  let forwardedHost: string | undefined;
  let host: string | undefined;
  // What `Connection` names besides hop-by-hop ones and `close` is rare: taken out afterwards, only then.
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) {
      if (lower === 'connection') named = namesBeyond(value, named);
      continue;
    }
    if (lower === 'expect' || f.drop?.has(lower)) continue;
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
  const passed = out.length;
  if (f.cookie) out.push('Cookie', f.cookie);
  if (f.protocols) out.push('Sec-WebSocket-Protocol', f.protocols);
  const client = f.clientAddress?.startsWith('::ffff:') ? f.clientAddress.slice(7) : f.clientAddress;
  out.push('X-Forwarded-For', client ? (forwardedFor ? `${forwardedFor}, ${client}` : client) : (forwardedFor ?? 'unknown'));
  out.push('X-Forwarded-Proto', proto ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'));
  if (forwardedHost ?? host) out.push('X-Forwarded-Host', (forwardedHost ?? host) as string);
  if (f.upgrade) out.push('Connection', 'Upgrade', 'Upgrade', 'websocket');
  // Only the client's own headers are taken out: Host (first) and what was added after them are the proxy's.
  return named ? without(out, named, 2, passed) : out;
}

/** `list` (flat raw) without the headers `names` names, looking only at entries `from` to `to`. */
function without(list: string[], names: ReadonlySet<string>, from = 0, to = list.length): string[] {
  const kept = list.slice(0, from);
  for (let i = from; i < list.length; i += 2) if (i >= to || !names.has((list[i] as string).toLowerCase())) kept.push(list[i] as string, list[i + 1] as string);
  return kept;
}

/**
 * A response's headers for the client, hop-by-hop ones removed (flat raw list).
 *
 * @example
 * res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, responseHeaders(upstream.rawHeaders));
 */
export function responseHeaders(raw: ReadonlyArray<string | Buffer>): string[] {
  const out: string[] = [];
  // What `Connection` names besides itself (`keep-alive`, `close`) is rare: a second pass only then.
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string | Buffer;
    const value = raw[i + 1] as string | Buffer;
    const n = typeof name === 'string' ? name : name.toString('latin1');
    const v = typeof value === 'string' ? value : value.toString('latin1');
    const lower = n.toLowerCase();
    if (HOP_BY_HOP.has(lower)) {
      if (lower === 'connection') named = namesBeyond(v, named);
      continue;
    }
    // A pod's cookie is its own host's: a `Domain` would reach every sandbox under the preview domain (another
    // tenant's previews, the proxy's own token cookie).
    out.push(n, lower === 'set-cookie' ? hostOnlyCookie(v) : v);
  }
  return named ? without(out, named) : out;
}

/** A Set-Cookie value without its `Domain` attribute (the cookie stays with the host that set it). */
export function hostOnlyCookie(value: string): string {
  if (!/;\s*domain\s*=/i.test(value)) return value;
  return value
    .split(';')
    .filter((part, i) => i === 0 || !/^\s*domain\s*=/i.test(part))
    .join(';');
}

/** The names a `Connection` value lists besides hop-by-hop ones and `close`, added to `into`; undefined when none. */
function namesBeyond(value: string, into: Set<string> | undefined): Set<string> | undefined {
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (HOP_BY_HOP.has(name) || name === 'close' || name === '') continue;
    (into ??= new Set()).add(name);
  }
  return into;
}

/** The first value of a header, as Node joined it. */
export function firstValue(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v?.split(',')[0]?.trim();
}
