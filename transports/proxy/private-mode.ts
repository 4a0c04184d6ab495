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
  /** The first token found (header, query, cookie, subprotocol in that order). */
  token: string | undefined;
  from: 'header' | 'query' | 'cookie' | 'protocol' | undefined;
  /** Every token the request carries, in that order, with where each was found: any valid one lets it through (a stale header or a cookie another site planted does not lock its owner out). */
  tokens: { token: string; from: 'header' | 'query' | 'cookie' | 'protocol' }[];
  /** The path and query without the token parameter. */
  url: string;
  /** The Cookie header without the token cookie (null: nothing left); undefined when it had none. */
  cookie: string | null | undefined;
  /** The subprotocols without the token one (null: none left); undefined when none was a token. */
  protocols: string | null | undefined;
}

/** Percent-decoded, or '' when the encoding is broken (an unusable token: refused like a wrong one). */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return '';
  }
}

function withoutParam(url: string): { url: string; values: string[] } {
  const q = url.indexOf('?');
  if (q < 0) return { url, values: [] };
  const values: string[] = [];
  const kept: string[] = [];
  for (const part of url.slice(q + 1).split('&')) {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    // An encoded name (`svc%5Fpreview%5Ftoken`) is the same parameter to the app behind: taken out too.
    if (name === TOKEN_PARAM || (name.includes('%') && decoded(name) === TOKEN_PARAM)) values.push(decoded(eq < 0 ? '' : part.slice(eq + 1)));
    else kept.push(part);
  }
  return { url: kept.length ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q), values };
}

function withoutCookie(header: string | undefined): { cookie: string | null | undefined; values: string[] } {
  if (header === undefined) return { cookie: undefined, values: [] };
  if (!header.includes(TOKEN_COOKIE)) return { cookie: undefined, values: [] };
  const values: string[] = [];
  const kept: string[] = [];
  for (const pair of header.split(';')) {
    const trimmed = pair.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    if (eq >= 0 && trimmed.slice(0, eq).trim() === TOKEN_COOKIE) values.push(trimmed.slice(eq + 1).trim());
    else kept.push(trimmed);
  }
  return { cookie: kept.length ? kept.join('; ') : null, values };
}

function withoutProtocol(header: string | undefined): { protocols: string | null | undefined; values: string[] } {
  if (header === undefined || !header.includes(TOKEN_PROTOCOL_PREFIX)) return { protocols: undefined, values: [] };
  const values: string[] = [];
  const kept: string[] = [];
  for (const p of header.split(',')) {
    const name = p.trim();
    if (name.startsWith(TOKEN_PROTOCOL_PREFIX)) values.push(name.slice(TOKEN_PROTOCOL_PREFIX.length));
    else if (name) kept.push(name);
  }
  return { protocols: kept.length ? kept.join(', ') : null, values };
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
  const fromHeader = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((v) => v.trim()).filter(Boolean);
  const { url, values: fromQuery } = withoutParam(req.url ?? '/');
  const { cookie, values: fromCookie } = withoutCookie(req.headers.cookie);
  const protocolHeader = req.headers['sec-websocket-protocol'];
  const { protocols, values: fromProtocol } = withoutProtocol(Array.isArray(protocolHeader) ? protocolHeader.join(', ') : protocolHeader);
  const tokens = [
    ...fromHeader.map((token) => ({ token, from: 'header' as const })),
    ...fromQuery.map((token) => ({ token, from: 'query' as const })),
    ...fromCookie.map((token) => ({ token, from: 'cookie' as const })),
    ...fromProtocol.map((token) => ({ token, from: 'protocol' as const })),
  ];
  return { token: tokens[0]?.token, from: tokens[0]?.from, tokens, url, cookie, protocols };
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
