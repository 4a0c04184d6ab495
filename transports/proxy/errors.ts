/**
 * The answers of the sandbox proxy that are its own (not the sandbox's), each with a stable code and its HTTP
 * status, sent in the envelope every svc error uses: `{"error":{"code","message"}}`. Every code is listed in
 * docs/errors.md. A setting the proxy cannot start with is a {@link ProxyConfigError} (a CLI exit, not a wire answer).
 */

export const PROXY_ERRORS = {
  PREVIEW_NO_SANDBOX: { status: 404, message: 'the Host header names no sandbox ({sandbox_id}.preview.<domain>)' },
  PREVIEW_UNKNOWN_SANDBOX: { status: 502, message: 'no sandbox pod has this id (not created yet, or gone)' },
  PREVIEW_NOT_READY: { status: 503, message: 'the sandbox pod is not ready yet; retry' },
  PREVIEW_UNREACHABLE: { status: 502, message: 'the sandbox pod did not answer (its dev server refused the connection or went away)' },
  PREVIEW_TOKEN: { status: 401, message: 'a valid preview token for this sandbox is required' },
} as const;

export type ProxyErrorCode = keyof typeof PROXY_ERRORS;

/** The CLI code of a proxy that refuses to start (docs/errors.md). */
export const PROXY_CONFIG_CODE = 'SVC_ERR_PROXY_CONFIG';

/**
 * A setting the proxy cannot run with (a port out of range, a preview secret shorter than 32 bytes).
 *
 * @example
 * throw new ProxyConfigError('PREVIEW_SECRET must be at least 32 bytes');
 */
export class ProxyConfigError extends Error {
  readonly code = PROXY_CONFIG_CODE;

  constructor(message: string) {
    super(message);
    this.name = 'ProxyConfigError';
  }
}
