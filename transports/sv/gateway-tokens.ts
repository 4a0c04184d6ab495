/**
 * The gateway's token judging: main (`GET /user/me`) judges every bearer
 * token sent to another module before it is relayed (the other modules take
 * main's users on the token's signature alone), and the refusal it answers.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { bearer } from '../../actors/identity/index.ts';
import { failure, newRequestId } from '../http/index.ts';
import type { CorsPolicy } from './gateway-cors.ts';
import { reason } from './gateway-errors.ts';
import { forwarded, JSON_TYPE } from './gateway-proxy.ts';
import type { Upstream } from './gateway-upstream.ts';

/** Why main refuses a token: its status and error (undefined: the token stands). */
interface Refusal {
  status: number;
  code: string;
  message: string;
}

/**
 * Main's verdict on a token (`GET /user/me` with it): undefined when it
 * stands, else main's refusal (401 revoked or expired, 403 a password to
 * change first…). Rejects when main cannot be reached.
 */
export async function tokenVerdict(main: Upstream, authorization: string, req: IncomingMessage): Promise<Refusal | undefined> {
  const headers: Record<string, string> = { authorization, accept: 'application/json', ...forwarded(req) };
  const res = await main.pool.request({ method: 'GET', path: `${main.prefix}/user/me`, headers, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  if (res.statusCode < 400) return undefined;
  if (res.statusCode !== 401 && res.statusCode !== 403) throw new Error(`main answered ${res.statusCode} to a token check`);
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
  } catch {
    error = undefined;
  }
  return { status: res.statusCode, code: typeof error?.code === 'string' ? error.code : 'UNAUTHORIZED', message: typeof error?.message === 'string' ? error.message : 'the token was refused' };
}

/** Answer a request the gateway refuses itself (an envelope, the gateway's CORS). */
export function answerWith(refusal: Refusal, req: IncomingMessage, res: ServerResponse, cors: CorsPolicy): void {
  req.resume(); // the body is not wanted
  const text = failure({ code: refusal.code, message: refusal.message }, newRequestId(req.headers['x-request-id'] as string | undefined));
  const out: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) };
  cors.apply(req.headers.origin, out);
  res.writeHead(refusal.status, out);
  res.end(text);
}

/** Main could not be asked about a token: 502, as for any module that cannot be reached. */
export function unreachable(main: Upstream, error: unknown, _req: IncomingMessage): Refusal {
  return { status: 502, code: 'MODULE_UNREACHABLE', message: `module ${main.name} is unreachable (checking the token): ${reason(error)}` };
}

/**
 * The tokens a module would take from an upgrade, as `Authorization` values
 * for main to judge: the header as sent, and the query's `token` unless it is
 * the header's own.
 */
export function upgradeTokens(req: IncomingMessage): string[] {
  const out: string[] = [];
  const header = req.headers.authorization;
  if (header !== undefined) out.push(header);
  // Read exactly as the modules read it (transports/ws): all the target holds after its first `?`, as it
  // was sent. A URL parser would stop at a `#` (a fragment), where a module reads on: `?#&token=…` hid a
  // revoked token from main that the module then took.
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  const queried = q < 0 ? null : new URLSearchParams(target.slice(q + 1)).get('token');
  if (queried && queried !== bearer(header)) out.push(`Bearer ${queried}`);
  return out;
}
