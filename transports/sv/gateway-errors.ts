/**
 * The errors of the microservice gateway: {@link GatewayError}, why it cannot
 * start, and the short, secret-free why of a failed call to a module that goes
 * into its log lines and answers.
 */

/** The codes of {@link GatewayError}. */
export const GATEWAY_ERRORS = {
  SVC_ERR_GATEWAY_CONFIG: { message: 'the gateway options are not valid' },
  SVC_ERR_GATEWAY_UNREACHABLE: { message: 'a module cannot be reached' },
  SVC_ERR_GATEWAY_OPENAPI: { message: 'a module does not serve a usable /openapi.json' },
  SVC_ERR_GATEWAY_ROUTE_COLLISION: { message: 'two modules serve one route' },
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERRORS;

/**
 * Why the gateway cannot start: a route two modules serve, a module that
 * cannot be reached or has no usable OpenAPI document, bad options.
 *
 * @example
 * try { await startGateway(o) } catch (e) { if (e instanceof GatewayError && e.code === 'SVC_ERR_GATEWAY_ROUTE_COLLISION') … }
 */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  constructor(code: GatewayErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GatewayError';
    this.code = code;
  }
}

/** A short, secret-free why: an error code (`ECONNREFUSED`) or message. */
export function reason(error: unknown): string {
  const e = error as { code?: unknown; cause?: { code?: unknown }; message?: unknown };
  const code = typeof e?.code === 'string' && !e.code.startsWith('UND_ERR_') ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  return code ?? (typeof e?.message === 'string' ? e.message : String(error));
}
