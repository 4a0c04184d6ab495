/**
 * Typed errors of the actor kernel. Every error the kernel raises is an
 * {@link SvcError} with a stable `code` (`SVC_ERR_*`) and, where a transport
 * would surface it over HTTP, a matching status. Codes are listed in
 * `docs/errors.md`; a retired code is never reused.
 */

/** The catalogue of kernel error codes, with the HTTP status each maps to. */
export const KERNEL_ERRORS = {
  SVC_ERR_ASK_TIMEOUT: { status: 504, message: 'the actor did not reply in time' },
  SVC_ERR_MAILBOX_FULL: { status: 503, message: 'the actor mailbox is full' },
  SVC_ERR_MESSAGE_DROPPED: { status: 503, message: 'the message was dropped to make room for newer ones' },
  SVC_ERR_ACTOR_STOPPED: { status: 503, message: 'the actor is stopped' },
  SVC_ERR_NO_SUCH_ACTOR: { status: 404, message: 'no actor at that address' },
  SVC_ERR_NAME_TAKEN: { status: 409, message: 'an actor with that name already exists' },
  SVC_ERR_UNKNOWN_KIND: { status: 500, message: 'no virtual actor kind registered with that name' },
  SVC_ERR_NODE_DOWN: { status: 503, message: 'the thread or node hosting the actor is down' },
  SVC_ERR_RESTART_LIMIT: { status: 500, message: 'a child exceeded its restart limit; the failure escalates' },
  SVC_ERR_SHUTDOWN: { status: 503, message: 'the actor system is shutting down' },
  SVC_ERR_REMOTE: { status: 500, message: 'an error raised on another thread' },
  SVC_ERR_TRANSPORT: { status: 500, message: 'no transport can reach that node' },
  SVC_ERR_MOVED: { status: 503, message: 'the virtual actor is hosted by another node now (the sender retries there)' },
} as const;

export type KernelErrorCode = keyof typeof KERNEL_ERRORS;

/**
 * An error with a stable code. `status` is the HTTP status a front should
 * answer with; `cause` keeps the underlying error.
 *
 * @example
 * try { await ref.ask(msg, 100) }
 * catch (e) { if (e instanceof SvcError && e.code === 'SVC_ERR_ASK_TIMEOUT') retry() }
 */
export class SvcError extends Error {
  readonly code: string;
  readonly status: number;
  /** Extra structured data a caller may show (never a stack trace). */
  readonly details: unknown;
  /**
   * Where app code failed: the stack of the error a walker or function threw
   * (source-mapped), kept for the server log and `--dev` answers. Set only on
   * failures of app code; it crosses threads with the error.
   */
  appStack?: string;

  constructor(code: string, message?: string, options?: { status?: number; cause?: unknown; details?: unknown }) {
    const known = (KERNEL_ERRORS as Record<string, { status: number; message: string }>)[code];
    super(message ?? known?.message ?? code, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = options?.status ?? known?.status ?? 500;
    this.details = options?.details;
  }
}

/**
 * Build a kernel error by code.
 *
 * @example
 * throw kernelError('SVC_ERR_MAILBOX_FULL', `mailbox of ${path} is full`)
 */
export function kernelError(code: KernelErrorCode, message?: string, cause?: unknown): SvcError {
  return new SvcError(code, message, { cause });
}

/** True when `e` carries the given stable code. */
export function hasCode(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/** Turn any thrown value into plain data that can cross a thread. */
export function encodeError(e: unknown): { code: string; message: string; status: number; name?: string; details?: unknown; appStack?: string } {
  if (e instanceof SvcError) {
    const wire: { code: string; message: string; status: number; name?: string; details?: unknown; appStack?: string } = { code: e.code, message: e.message, status: e.status, name: e.name, details: e.details };
    if (e.appStack !== undefined) wire.appStack = e.appStack;
    return wire;
  }
  if (e instanceof Error) {
    const { code, status } = e as { code?: unknown; status?: unknown };
    return {
      code: typeof code === 'string' ? code : 'SVC_ERR_REMOTE',
      message: e.message,
      status: typeof status === 'number' ? status : 500,
      name: e.name,
    };
  }
  return { code: 'SVC_ERR_REMOTE', message: String(e), status: 500 };
}

/** Rebuild an error that crossed a thread. */
export function decodeError(w: { code: string; message: string; status: number; name?: string; details?: unknown; appStack?: string }): SvcError {
  const error = new SvcError(w.code, w.message, { status: w.status, details: w.details });
  if (w.name && w.name !== 'SvcError') error.name = w.name;
  if (typeof w.appStack === 'string') error.appStack = w.appStack;
  return error;
}
