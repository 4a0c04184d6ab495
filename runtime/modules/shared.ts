/** What several modules of a worker thread share: the log's type, and how a failure is logged. */
import type pino from 'pino';
import { resolve } from 'node:path';
import { failureStack } from '../../transports/http/index.ts';

export type Log = pino.Logger;

/**
 * A 5xx in the log, in production too: its code and message, where it
 * happened, and the app's frames of the stack that failed (source-mapped).
 */
export function logFailure(log: Log, error: unknown, projectRoot: string, where: Record<string, unknown>, message: string): void {
  const { code } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown };
  const stack = failureStack(error, resolve(projectRoot));
  // The type the app's code threw (`TypeError`…), not the runtime's wrapper: the first line of the app's stack names it.
  const thrown = /^([A-Za-z_$][\w$]*)(?::|$)/.exec(String((error as { appStack?: unknown }).appStack ?? ''))?.[1];
  // No prototype: pino's error serializer then takes the type from `name` (it would say "Object").
  const err = Object.assign(Object.create(null) as object, { name: thrown ?? (error instanceof Error ? error.name : typeof error), message: error instanceof Error ? error.message : String(error), stack });
  log.error({ ...where, code, err }, message);
}
