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
 * What a failure of the local file system is, by its errno code. The caller's
 * own path is at fault (400 `INVALID_PATH`) when the file system refuses what
 * the path names: a folder or a file in the way (`EISDIR`, `ENOTDIR`, `EEXIST`,
 * `ENOTEMPTY` — a file moved onto its own folder), a move the file system
 * cannot make (`EINVAL`: into itself, or a name it does not take), a name too
 * long for it (`ENAMETOOLONG`, past the checks of paths.ts when the base itself
 * is long), a path through a loop of links (`ELOOP`). A folder that refuses
 * access is a setting (`EACCES`, `EPERM`, `EROFS`: 500 `STORAGE_CONFIG`).
 * Everything else is the storage failing, not the caller (503
 * `STORAGE_UNAVAILABLE`): `EIO`, a full or over-quota disk (`ENOSPC`,
 * `EDQUOT`), too many open files (`EMFILE`, `ENFILE`), `EBUSY`, a file too big
 * for the file system (`EFBIG`), too many links (`EMLINK`), a stale mount
 * (`ESTALE`), and codes not named here. `ENOENT` is `FILE_NOT_FOUND`.
 *
 * @example
 * fsErrorCode('ENOTEMPTY') // 'INVALID_PATH'
 * fsErrorCode('ENOSPC')    // 'STORAGE_UNAVAILABLE'
 */
export function fsErrorCode(errno: string): StorageErrorCode {
  switch (errno) {
    case 'ENOENT':
      return 'FILE_NOT_FOUND';
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return 'STORAGE_CONFIG';
    case 'EISDIR':
    case 'ENOTDIR':
    case 'EEXIST':
    case 'ENOTEMPTY':
    case 'EINVAL':
    case 'ENAMETOOLONG':
    case 'ELOOP':
      return 'INVALID_PATH';
    default:
      return 'STORAGE_UNAVAILABLE';
  }
}

/**
 * @example
 * throw storageError('INVALID_PATH', `"../x" leaves the storage`)
 */
export function storageError(code: StorageErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? STORAGE_ERRORS[code].message, { status: STORAGE_ERRORS[code].status, ...options });
}
