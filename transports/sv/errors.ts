/**
 * The errors of service-to-service calls. Their messages are the
 * original product's: `sv-to-sv RPC '<module>.<func>' failed: <why>` for functions and
 * `sv-to-sv walker spawn '<module>.<walker>' failed: <why>` for walkers. A
 * call that fails inside a walker or function answers the consumer's caller
 * with the code and status below (docs/errors.md).
 */
import { SvcError } from '../../kernel/index.ts';

export const SV_ERRORS = {
  SV_CALL_FAILED: { status: 502, message: 'the provider answered an error, or could not be reached after the retries' },
  SV_UNAVAILABLE: { status: 503, message: "the provider's circuit is open, or it could not be started: calls fail fast" },
  SV_TIMEOUT: { status: 504, message: 'the call took longer than its rpc_timeout' },
  SV_BOUNDARY: { status: 500, message: 'an argument cannot cross the service boundary (an anchor, a function, a handle)' },
  SV_UNKNOWN_SERVICE: { status: 500, message: 'no URL for the service: not registered, no SVC_SV_<MODULE>_URL, and no module file to start' },
  /** The microservice gateway's answer when the module owning a route cannot be reached. */
  MODULE_UNREACHABLE: { status: 502, message: 'the module that serves this route cannot be reached' },
} as const;

export type SvErrorCode = keyof typeof SV_ERRORS;

/** What failed: a function (`RPC`) or a walker (`walker spawn`), by module and name. */
export interface SvTarget {
  module: string;
  name: string;
  kind: 'function' | 'walker';
}

/** The original product's prefix: `sv-to-sv RPC 'billing.charge' failed: ` or `sv-to-sv walker spawn 'billing.Invoice' failed: `. */
export function svPrefix(target: SvTarget): string {
  return `sv-to-sv ${target.kind === 'function' ? 'RPC' : 'walker spawn'} '${target.module}.${target.name}' failed: `;
}

/**
 * An error of a call, its message in the original product's form.
 *
 * - `status` / `code` of the provider's answer, when it answered, are in
 *   `details.provider`.
 */
export class SvCallError extends SvcError {
  constructor(code: SvErrorCode, target: SvTarget, why: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(code, `${svPrefix(target)}${why}`, { status: SV_ERRORS[code].status, details: { module: target.module, [target.kind]: target.name, ...options.details }, ...(options.cause === undefined ? {} : { cause: options.cause }) });
    this.name = 'SvCallError';
  }
}
