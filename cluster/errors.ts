/**
 * Errors of the cluster. Each has a stable code, listed in docs/errors.md,
 * and the HTTP status a front answers with.
 */
import { SvcError } from '../kernel/index.ts';

export const CLUSTER_ERRORS = {
  SVC_ERR_NOT_MEMBER: { status: 503, message: 'this process is not a serving member of its cluster right now (joining, rejoining after it lost its lease, or Redis is unreachable); retry' },
  SVC_ERR_CLUSTER: { status: 500, message: 'the cluster could not be joined' },
  SVC_ERR_REDIS_UNREACHABLE: { status: 503, message: 'Redis (KV_URL) cannot be reached' },
  SVC_ERR_REDIS_URL: { status: 500, message: 'KV_URL is not a redis:// or rediss:// URL' },
  SVC_ERR_LEASE_TIMEOUT: { status: 503, message: 'the cluster lease of an actor was not given back in time (its holder is busy or was cut off); retry' },
} as const;

export type ClusterErrorCode = keyof typeof CLUSTER_ERRORS;

/**
 * @example
 * throw clusterError('SVC_ERR_NOT_MEMBER')
 */
export function clusterError(code: ClusterErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? CLUSTER_ERRORS[code].message, { status: CLUSTER_ERRORS[code].status, ...options });
}
