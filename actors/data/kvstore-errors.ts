/**
 * Errors of `kvstore()` and its locks. Wire codes: a walker that lets one
 * escape answers its status and code (docs/errors.md).
 */
import { SvcError } from '../../kernel/index.ts';

export const KVSTORE_ERRORS = {
  NOT_IMPLEMENTED: { status: 501, message: 'this method belongs to another kvstore backend' },
  INVALID_QUERY: { status: 400, message: 'the filter or update is not one the document store understands' },
  RESERVED_KEY: { status: 400, message: 'a key named __proto__ cannot be stored (it names the prototype of a JavaScript object)' },
  INVALID_NAME: { status: 400, message: 'a database, collection or key name is not allowed' },
  DUPLICATE_KEY: { status: 409, message: 'a document with this _id already exists' },
  RESERVED_COLLECTION: { status: 403, message: "the runtime's own collections (users, tokens, anchors) are not reachable through kvstore unless named explicitly" },
  KV_NOT_CONFIGURED: { status: 500, message: "the kv backend needs Redis: set KV_URL (or [scale.database] kv_url), or pass the URI to kvstore()" },
  KV_UNAVAILABLE: { status: 503, message: 'the key-value or document store cannot be reached' },
  LOCK_TIMEOUT: { status: 503, message: 'the lock was not acquired in time' },
} as const;

export type KvstoreErrorCode = keyof typeof KVSTORE_ERRORS;

/**
 * @example
 * throw kvstoreError('NOT_IMPLEMENTED', 'findNodes is not available on the kv backend')
 */
export function kvstoreError(code: KvstoreErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? KVSTORE_ERRORS[code].message, { status: KVSTORE_ERRORS[code].status, ...options });
}
