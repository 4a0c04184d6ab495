/**
 * The error codes clients see in the response envelope, with their HTTP
 * status. The original product's codes where it has one (`UNAUTHORIZED`, `NOT_FOUND`,
 * `VALIDATION_ERROR`, …), svc's own `SVC_ERR_*` where it does not. Every
 * code is listed in docs/errors.md.
 */
import { SvcError } from '../../kernel/index.ts';

export const HTTP_ERRORS = {
  UNAUTHORIZED: { status: 401, message: 'a valid bearer token is required' },
  FORBIDDEN: { status: 403, message: 'not allowed' },
  NOT_FOUND: { status: 404, message: 'no such route, walker, function or node' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'that method is not served on this path' },
  VALIDATION_ERROR: { status: 400, message: 'the request does not match the declared fields' },
  INVALID_JSON: { status: 400, message: 'the body is not valid JSON' },
  RESERVED_KEY: { status: 400, message: 'a key named __proto__ cannot be taken (it names the prototype of a JavaScript object)' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'the body is larger than the server accepts' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'send application/json (or multipart/form-data for uploads)' },
  CONFLICT: { status: 409, message: 'a concurrent change conflicted; retry' },
  EXECUTION_ERROR: { status: 500, message: 'the walker or function failed' },
  INTERNAL_ERROR: { status: 500, message: 'internal error' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'the server is busy or shutting down; retry' },
  TIMEOUT: { status: 504, message: 'the request took too long' },
  BAD_REQUEST: { status: 400, message: 'the request is not well-formed HTTP/1.1 (the connection is closed)' },
  REQUEST_TIMEOUT: { status: 408, message: 'the request body did not arrive in time (the connection is closed)' },
  HEADERS_TOO_LARGE: { status: 431, message: 'the request headers are too large or too many' },
  NOT_IMPLEMENTED: { status: 501, message: 'the server does not know that method' },
  STORE_UNAVAILABLE: { status: 503, message: 'the database cannot be reached right now — retry (a change cut off mid-commit may or may not have been stored)' },
} as const;

export type HttpErrorCode = keyof typeof HTTP_ERRORS;

/** What goes in `error` of the envelope. */
export interface ErrorBody {
  code: string;
  message: string;
  details?: unknown;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

/**
 * @example
 * throw httpError('UNAUTHORIZED', 'token expired')
 */
export function httpError(code: HttpErrorCode, message?: string, details?: unknown): HttpError {
  const body: ErrorBody = { code, message: message ?? HTTP_ERRORS[code].message };
  if (details !== undefined) body.details = details;
  return new HttpError(HTTP_ERRORS[code].status, body);
}

/**
 * A token refused by identity (an `UNAUTHORIZED` SvcError) as the plain 401
 * the front answers: its message, never a stack, even in `--dev`. Other
 * errors are returned as they are.
 *
 * @example
 * try { auth.authenticate(token) } catch (e) { throw unauthorizedAsHttp(e) }
 */
export function unauthorizedAsHttp(error: unknown): unknown {
  return error instanceof SvcError && error.code === 'UNAUTHORIZED' ? httpError('UNAUTHORIZED', error.message) : error;
}

/** Codes of the graph and kernel that become one of the original product's codes on the wire. */
const MAPPED: Record<string, HttpErrorCode> = {
  SVC_ERR_INVALID_FIELDS: 'VALIDATION_ERROR',
  SVC_ERR_UNKNOWN_WALKER: 'NOT_FOUND',
  SVC_ERR_NODE_NOT_FOUND: 'NOT_FOUND',
  SVC_ERR_ACCESS_DENIED: 'FORBIDDEN',
  SVC_ERR_WALKER_FAILED: 'EXECUTION_ERROR',
  SVC_ERR_CONFLICT: 'CONFLICT',
  SVC_ERR_ASK_TIMEOUT: 'TIMEOUT',
  SVC_ERR_STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
};

/**
 * The part of a stack that is the app's: the message, then the frames in the
 * project's own files (under `projectRoot`, outside `node_modules`) — or,
 * when none is there, every frame outside Node's internals and installed
 * packages. Frames are source-mapped TypeScript lines where the code ran
 * from TypeScript.
 *
 * @example
 * appFrames(error.appStack ?? error.stack, '/srv/shop')
 */
export function appFrames(stack: string, projectRoot?: string): string {
  const head: string[] = [];
  const frames: string[] = [];
  for (const line of stack.split('\n')) {
    if (/^\s+at /.test(line)) frames.push(line);
    else if (frames.length === 0) head.push(line);
  }
  const root = projectRoot ? `${projectRoot.replace(/[\\/]+$/, '')}/` : undefined;
  let kept = root ? frames.filter((l) => l.includes(root) && !/[\\/]node_modules[\\/]|svc-worker-entry\.ts/.test(l)) : [];
  if (kept.length === 0) kept = frames.filter((l) => !/\(node:|at node:|[\\/]node_modules[\\/]|<anonymous>\)?$/.test(l));
  if (kept.length === 0) kept = frames;
  return [...head, ...kept].join('\n');
}

/** The stack that says where a failure is: the app's code that threw, else the error's own. */
export function failureStack(error: unknown, projectRoot?: string): string | undefined {
  const stack = (error as { appStack?: unknown }).appStack ?? (error instanceof Error ? error.stack : undefined);
  return typeof stack === 'string' ? appFrames(stack, projectRoot) : undefined;
}

/**
 * Any error as the client sees it: mapped codes, `SVC_ERR_*` and app codes
 * with their own status; anything unknown is a 500 that says nothing more
 * (the stack goes to the log, and to the client only in `--dev`: the app's
 * frames, see {@link appFrames}).
 */
export function toHttpError(error: unknown, dev = false, projectRoot?: string): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof SvcError) {
    const mapped = MAPPED[error.code];
    const stack = dev ? failureStack(error, projectRoot) : undefined;
    const details = error.details ?? (stack !== undefined ? { stack } : undefined);
    // A timeout's message names internal actors: say it plainly.
    if (error.code === 'SVC_ERR_ASK_TIMEOUT') return httpError('TIMEOUT');
    if (mapped) return httpError(mapped, error.message, details);
    const body: ErrorBody = { code: error.code, message: error.message };
    if (details !== undefined) body.details = details;
    return new HttpError(error.status >= 400 && error.status < 600 ? error.status : 500, body);
  }
  return httpError('INTERNAL_ERROR', dev && error instanceof Error ? error.message : undefined, dev && error instanceof Error ? { stack: failureStack(error, projectRoot) } : undefined);
}
