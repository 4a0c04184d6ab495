/**
 * Errors of users, tokens and admin, with the codes of seed 000 §7 where it
 * names one. They travel in the envelope as they are (code and status).
 */
import { SvcError } from '../../kernel/index.ts';

export const IDENTITY_ERRORS = {
  INVALID_CREDENTIALS: { status: 401, message: 'wrong identity or password' },
  IDENTITY_TAKEN: { status: 409, message: 'that identity is already used by another account' },
  INVALID_TOKEN: { status: 400, message: 'the token is unknown, used or expired' },
  EMAIL_DISABLED: { status: 503, message: 'email is not configured on this server' },
  TOO_MANY_REQUESTS: { status: 429, message: 'too many attempts; wait and retry' },
  PASSWORD_CHANGE_REQUIRED: { status: 403, message: 'change the password first (PUT /user/password)' },
  PROTECTED_ACCOUNT: { status: 403, message: 'this account cannot be deleted or demoted' },
} as const;

export type IdentityErrorCode = keyof typeof IDENTITY_ERRORS;

export function identityError(code: IdentityErrorCode, message?: string, details?: unknown): SvcError {
  return new SvcError(code, message ?? IDENTITY_ERRORS[code].message, { status: IDENTITY_ERRORS[code].status, details });
}

/** A 400 VALIDATION_ERROR naming the field. */
export function invalid(field: string, message: string): SvcError {
  return new SvcError('VALIDATION_ERROR', `${field}: ${message}`, { status: 400, details: [{ field, message }] });
}

export function notFound(message: string): SvcError {
  return new SvcError('NOT_FOUND', message, { status: 404 });
}

export function forbidden(message: string): SvcError {
  return new SvcError('FORBIDDEN', message, { status: 403 });
}

export function unauthorized(message: string): SvcError {
  return new SvcError('UNAUTHORIZED', message, { status: 401 });
}
