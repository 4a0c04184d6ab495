/**
 * Private mode: where a request carries its preview token, and how every trace of the token is taken out before
 * the request goes on to the pod.
 *
 * A token may come as the `X-Svc-Preview-Token` header, the `svc_preview_token` query parameter (a browser's first
 * visit, from a link the app gives: answered with a cookie and a redirect to the same URL without it), the
 * `svc_preview` cookie (every later request of that browser, WebSocket handshakes included), or a WebSocket
 * subprotocol `svc-preview.<token>` (a script that can set neither headers nor cookies).
 */
import type { IncomingMessage } from 'node:http';

export const TOKEN_HEADER = 'x-svc-preview-token';
export const TOKEN_PARAM = 'svc_preview_token';
export const TOKEN_COOKIE = 'svc_preview';
export const TOKEN_PROTOCOL_PREFIX = 'svc-preview.';

/** A request's token, where it was found, and the request without it. */
export interface Carried {
  token: string | undefined;
  from: 'header' | 'query' | 'cookie' | 'protocol' | undefined;
  /** The path and query without the token parameter. */
  url: string;
  /** The Cookie header without the token cookie (null: nothing left); undefined when it had none. */
  cookie: string | null | undefined;
  /** The subprotocols without the token one (null: none left); undefined when none was a token. */
  protocols: string | null | undefined;
}

function withoutParam(url: string): { url: string; value: string | undefined } {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes(TOKEN_PARAM, q)) return { url, value: undefined };
  let value: string | undefined;
  const kept: string[] = [];
  for (const part of url.slice(q + 1).split('&')) {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    if (name === TOKEN_PARAM) value ??= decodeURIComponent(eq < 0 ? '' : part.slice(eq + 1).replace(/\+/g, ' '));
    else kept.push(part);
  }
  return { url: kept.length ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q), value };
}

function withoutCookie(header: string | undefined): { cookie: string | null | undefined; value: string | undefined } {
  if (header === undefined) return { cookie: undefined, value: undefined };
  if (!header.includes(TOKEN_COOKIE)) return { cookie: undefined, value: undefined };
  let value: string | undefined;
  const kept: string[] = [];
  for (const pair of header.split(';')) {
    const trimmed = pair.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    if (eq >= 0 && trimmed.slice(0, eq).trim() === TOKEN_COOKIE) value ??= trimmed.slice(eq + 1).trim();
    else kept.push(trimmed);
  }
  return { cookie: kept.length ? kept.join('; ') : null, value };
}

function withoutProtocol(header: string | undefined): { protocols: string | null | undefined; value: string | undefined } {
  if (header === undefined || !header.includes(TOKEN_PROTOCOL_PREFIX)) return { protocols: undefined, value: undefined };
  let value: string | undefined;
  const kept: string[] = [];
  for (const p of header.split(',')) {
    const name = p.trim();
    if (name.startsWith(TOKEN_PROTOCOL_PREFIX)) value ??= name.slice(TOKEN_PROTOCOL_PREFIX.length);
    else if (name) kept.push(name);
  }
  return { protocols: kept.length ? kept.join(', ') : null, value };
}

/**
 * Find the token of a request (header first, then the query, the cookie, the subprotocol) and what the request is
 * without any of them.
 *
 * @example
 * const carried = carriedToken(req); // { token: 'eyJ…', from: 'cookie', url: '/', cookie: 'theme=dark', protocols: undefined }
 */
export function carriedToken(req: IncomingMessage): Carried {
  const header = req.headers[TOKEN_HEADER];
  const fromHeader = Array.isArray(header) ? header[0] : header;
  const { url, value: fromQuery } = withoutParam(req.url ?? '/');
  const cookieHeader = req.headers.cookie;
  const { cookie, value: fromCookie } = withoutCookie(cookieHeader);
  const protocolHeader = req.headers['sec-websocket-protocol'];
  const { protocols, value: fromProtocol } = withoutProtocol(Array.isArray(protocolHeader) ? protocolHeader.join(', ') : protocolHeader);
  const [token, from] =
    fromHeader ? [fromHeader, 'header' as const]
    : fromQuery ? [fromQuery, 'query' as const]
    : fromCookie ? [fromCookie, 'cookie' as const]
    : fromProtocol ? [fromProtocol, 'protocol' as const]
    : [undefined, undefined];
  return { token, from, url, cookie, protocols };
}

/**
 * The Set-Cookie value holding a token for this host until it expires (HttpOnly, SameSite=Lax; Secure when the
 * client came over HTTPS).
 *
 * @example
 * res.setHeader('set-cookie', tokenCookie(token, claims.exp, true));
 */
export function tokenCookie(token: string, exp: number, secure: boolean): string {
  const maxAge = Math.max(0, exp - Math.floor(Date.now() / 1000));
  return `${TOKEN_COOKIE}=${token}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
