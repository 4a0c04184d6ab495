/**
 * Errors of the graph model and walker execution. Each has a stable code
 * (listed in docs/errors.md) and the HTTP status a front answers with.
 * The stores' own (`SVC_ERR_CONFLICT`, `SVC_ERR_STORE`) are in
 * `actors/graph/errors.ts`.
 */
import { SvcError } from '../../kernel/index.ts';

export const GRAPH_ERRORS = {
  SVC_ERR_ACCESS_DENIED: { status: 403, message: 'the caller may not do that to this node or edge' },
  SVC_ERR_NODE_NOT_FOUND: { status: 404, message: 'no such node, or the caller may not read it' },
  SVC_ERR_UNKNOWN_WALKER: { status: 404, message: 'no walker or function of that name' },
  SVC_ERR_INVALID_FIELDS: { status: 400, message: 'fields do not match the declared schema' },
  SVC_ERR_WALKER_FAILED: { status: 500, message: 'the walker or function threw' },
  SVC_ERR_BAD_WRITE: { status: 500, message: 'the walker or function wrote a value its node or edge schema does not allow' },
  SVC_ERR_NOT_IN_RUN: { status: 500, message: 'graph objects can only change inside a walker run' },
  SVC_ERR_DESTROYED: { status: 409, message: 'the node or edge was destroyed' },
  SVC_ERR_BAD_ARCHETYPE: { status: 500, message: 'a node, edge or walker class is declared wrongly' },
  SVC_ERR_WALKER_TIMEOUT: { status: 504, message: 'the walker ran past its deadline; its changes were dropped' },
} as const;

export type GraphErrorCode = keyof typeof GRAPH_ERRORS;

/**
 * @example
 * throw graphError('SVC_ERR_ACCESS_DENIED', `cannot write ${id}`)
 */
export function graphError(code: GraphErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }): SvcError {
  return new SvcError(code, message ?? GRAPH_ERRORS[code].message, { status: GRAPH_ERRORS[code].status, ...options });
}
