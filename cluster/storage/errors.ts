/**
 * Errors of `store()`. Wire codes: a walker that lets one escape answers its
 * status and code (docs/errors.md).
 */
import { SvcError } from '../../kernel/index.ts';

export const STORAGE_ERRORS = {
  INVALID_PATH: { status: 400, message: 'the path is not inside the storage (a `..` segment, an absolute path, NUL or an empty name)' },
  INVALID_ARGUMENT: { status: 400, message: 'an argument the storage cannot take (metadata, an expiry, an upload source)' },
  FILE_NOT_FOUND: { status: 404, message: 'no such file in the storage' },
  STORAGE_CONFIG: { status: 500, message: 'the storage is not configured correctly' },
  STORAGE_UNAVAILABLE: { status: 503, message: 'the object store cannot be reached or refused the request' },
} as const;

export type StorageErrorCode = keyof typeof STORAGE_ERRORS;

/**
 * @example
 * throw storageError('INVALID_PATH', `"../x" leaves the storage`)
 */
export function storageError(code: StorageErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? STORAGE_ERRORS[code].message, { status: STORAGE_ERRORS[code].status, ...options });
}
