/**
 * Errors of the stores (anchor stores, and the users repositories that sit
 * beside them in the same database). Each has a stable code, listed in
 * docs/errors.md, and the HTTP status a front answers with.
 */
import { SvcError } from '../../kernel/index.ts';

export const STORE_ERRORS = {
  SVC_ERR_CONFLICT: { status: 409, message: 'a concurrent writer changed the same anchor' },
  SVC_ERR_FENCED: { status: 503, message: 'this process no longer owns the graph (another took it over); nothing was stored — retry' },
  SVC_ERR_STORE: { status: 500, message: 'the anchor store failed' },
  SVC_ERR_STORE_UNAVAILABLE: { status: 503, message: 'the database cannot be reached right now — retry (a change cut off mid-commit may or may not have been stored)' },
  SVC_ERR_STORE_BACKEND: { status: 500, message: 'no store backend of this build answers that URI' },
} as const;

export type StoreErrorCode = keyof typeof STORE_ERRORS;

/**
 * @example
 * throw storeError('SVC_ERR_CONFLICT', `${id} is at version 3, expected 2`)
 */
export function storeError(code: StoreErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? STORE_ERRORS[code].message, { status: STORE_ERRORS[code].status, ...options });
}
