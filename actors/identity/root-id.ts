/**
 * A user's graph root id, derived from the user id: no lookup is needed to
 * route a request to the user's partition, and the id is stable.
 */
import { createHash } from 'node:crypto';

/**
 * @example
 * rootIdFor('3f1c…') // 32 hex chars, the same every time
 */
export function rootIdFor(userId: string): string {
  return createHash('sha256').update(`svc:root:${userId}`).digest('hex').slice(0, 32);
}
