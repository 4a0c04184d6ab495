/**
 * Errors of users, tokens and admin, with the codes the
 * original product's clients know where it has one. They travel in the envelope as they are (code and status).
 */
import { SvcError } from '../../kernel/index.ts';

export const IDENTITY_ERRORS = {
  INVALID_CREDENTIALS: { status: 401, message: 'wrong identity or password' },
  IDENTITY_TAKEN: { status: 409, message: 'that identity is already used by another account' },
  INVALID_TOKEN: { status: 400, message: 'the token is unknown, used or expired' },
  EMAIL_DISABLED: { status: 503, message: 'email is not configured on this server' },
  TOO_MANY_REQUESTS: { status: 429, message: 'too many attempts; wait and retry' },
  PASSWORD_CHANGE_REQUIRED: { status: 403, message: 'change the password first (PUT /user/password)' },
  PROTECTED_ACCOUNT: { status: 403, message: 'this account cannot be deleted, disabled or demoted, nor have a password reset forced or its profile edited by another' },
  // Single sign-on
  SSO_NOT_CONFIGURED: { status: 501, message: 'this sign-in provider is not configured on this server (client_id and client_secret)' },
  SSO_INVALID_STATE: { status: 400, message: 'the sign-in is unknown, expired, already finished or was started for another provider: start again' },
  SSO_MISSING_CODE: { status: 400, message: 'the provider sent no authorization code' },
  SSO_PROVIDER_ERROR: { status: 400, message: 'the provider refused the sign-in' },
  SSO_EXCHANGE_FAILED: { status: 400, message: 'the provider did not accept the authorization code, or its answer could not be verified' },
  SSO_PROVIDER_UNAVAILABLE: { status: 502, message: 'the sign-in provider cannot be reached right now' },
  SSO_EMAIL_UNVERIFIED: { status: 403, message: 'the provider gives no verified email for this account: no account is created or linked' },
  SSO_LAST_SIGN_IN: { status: 409, message: 'this is the only way left to sign in to the account: set a password or link another provider first' },
  // API keys and webhooks
  TOO_MANY_API_KEYS: { status: 409, message: 'this user holds as many API keys as allowed: revoke one first' },
  INVALID_SIGNATURE: { status: 401, message: 'the webhook signature is missing or does not match the body' },
  INVALID_TIMESTAMP: { status: 401, message: 'the webhook timestamp is missing, malformed, or outside the allowed window' },
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
