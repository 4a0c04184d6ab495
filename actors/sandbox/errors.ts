/**
 * Errors of `sandboxes()`. Wire codes: a walker that lets one escape answers
 * its status and code (docs/errors.md).
 */
import { SvcError } from '../../kernel/index.ts';

export const SANDBOX_ERRORS = {
  SANDBOX_DISABLED: { status: 503, message: 'sandboxes are turned off ([scale.sandbox] enabled = false)' },
  SANDBOX_NOT_FOUND: { status: 404, message: 'no sandbox has this id' },
  SANDBOX_INVALID: { status: 400, message: 'the sandbox request is not valid (user, project or files)' },
  SANDBOX_BAD_PATH: { status: 400, message: 'the path escapes the sandbox or holds a shell metacharacter' },
  SANDBOX_FILE_NOT_FOUND: { status: 404, message: 'no file at this path in the sandbox' },
  SANDBOX_LIMIT: { status: 429, message: 'this user already has as many sandboxes as [scale.sandbox] max_per_user allows' },
  SANDBOX_NO_PORT: { status: 503, message: 'no free port: every port of the local sandbox pool is in use' },
  SANDBOX_NOT_RUNNING: { status: 409, message: 'the sandbox is stopped or failed: it runs no command' },
  SANDBOX_TIMEOUT: { status: 504, message: 'the command did not finish within its timeout and was killed' },
  SANDBOX_UNAVAILABLE: { status: 503, message: 'the sandbox provider cannot run here (no container engine answers, or the sandbox runs on another host)' },
  SANDBOX_FAILED: { status: 500, message: 'the sandbox could not be started' },
  SANDBOX_TOO_LARGE: { status: 413, message: 'the project is over the 1 MB a Kubernetes ConfigMap holds, and no warm pool streams it instead' },
} as const;

export type SandboxErrorCode = keyof typeof SANDBOX_ERRORS;

/**
 * @example
 * throw sandboxError('SANDBOX_NOT_FOUND', `no sandbox ${id}`)
 */
export function sandboxError(code: SandboxErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? SANDBOX_ERRORS[code].message, { status: SANDBOX_ERRORS[code].status, ...options });
}
