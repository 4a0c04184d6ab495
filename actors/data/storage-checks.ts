/**
 * Arguments every backend checks alike, so that what works on the local disk
 * works on object storage too: user metadata (S3 sends it as HTTP headers:
 * names are header tokens, values printable ASCII) and URL expiries (S3's
 * pre-signed URLs last at most 7 days).
 */
import { storageError } from './storage-errors.ts';

/** The longest a pre-signed URL may last: 7 days. */
export const MAX_EXPIRES = 7 * 24 * 3600;
const METADATA_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const METADATA_VALUE = /^[\x20-\x7e]*$/;

/**
 * `expiresIn` as whole seconds, 1 to 7 days; `INVALID_ARGUMENT` otherwise.
 *
 * @example
 * checkExpiry(3600) // 3600
 */
export function checkExpiry(expiresIn: number): number {
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_EXPIRES) {
    throw storageError('INVALID_ARGUMENT', `expiresIn is whole seconds from 1 to ${MAX_EXPIRES} (got ${JSON.stringify(expiresIn)})`);
  }
  return expiresIn;
}

/**
 * Refuse metadata object storage could not keep, with `INVALID_ARGUMENT`.
 *
 * @example
 * checkMetadata({ owner: 'alice' })
 */
export function checkMetadata(metadata: Record<string, string> | undefined): void {
  if (metadata === undefined) return;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) throw storageError('INVALID_ARGUMENT', 'metadata is an object of strings');
  for (const [name, value] of Object.entries(metadata)) {
    if (!METADATA_NAME.test(name) || typeof value !== 'string' || !METADATA_VALUE.test(value)) {
      throw storageError('INVALID_ARGUMENT', `metadata ${JSON.stringify(name)}: names are header tokens and values printable ASCII (object storage sends them as HTTP headers)`);
    }
  }
}
