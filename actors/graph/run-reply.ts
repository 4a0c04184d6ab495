/**
 * What the caller of a run gets: its answer as JSON text (the reports or
 * return value, or for a service-to-service call the whole `data` object with
 * class names kept), or the error it may see of a failure.
 */
import { SvcError } from '../../kernel/index.ts';
import { graphError } from '../walker/index.ts';

/**
 * What a walker reported, as JSON — the snapshot taken at the end of the run
 * (nodes and edges as `{id, type, context}`). One pass, no intermediate copy:
 * the HTTP front puts the text into the envelope as it is.
 */
export function reportJson(value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    // The app's bug, not the caller's: a 500, not a 400.
    throw graphError('SVC_ERR_WALKER_FAILED', `a reported value cannot be sent as JSON: ${(error as Error).message}`);
  }
  return json ?? 'null';
}

/** The codes app errors may carry on the wire (docs/errors.md, *Errors of your app*). */
const APP_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

function appStatus(status: unknown): status is number {
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599;
}

/**
 * What a caller sees of an error a run raised. svc's own errors and app
 * errors with a code (`^[A-Z][A-Z0-9_]{1,63}$`) and a status (400–599) keep
 * them — a plain `Error` with `code` and `status` as much as an `SvcError`;
 * anything else is the walker's own failure, `SVC_ERR_WALKER_FAILED`
 * (`EXECUTION_ERROR` 500). A 5xx keeps the stack of the code that failed
 * (`appStack`) for the server log and `--dev` answers.
 */
export function asCallerError(error: unknown): SvcError {
  let out: SvcError;
  if (error instanceof SvcError && APP_CODE.test(error.code) && appStatus(error.status)) {
    out = error;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    const { code, status, details } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; status?: unknown; details?: unknown };
    out =
      typeof code === 'string' && APP_CODE.test(code) && appStatus(status)
        ? new SvcError(code, message, { status, cause: error, ...(details === undefined ? {} : { details }) })
        : graphError('SVC_ERR_WALKER_FAILED', message, { cause: error });
  }
  if (out.status >= 500 && out.appStack === undefined) {
    const stack = error instanceof Error ? error.stack : undefined;
    if (stack !== undefined) out.appStack = stack;
  }
  return out;
}

/**
 * The whole `data` of a service-to-service call's answer (`{result, reports}`),
 * written with {@link boundaryJson}: a class instance carries its class name,
 * so the caller can rebuild it. Nothing more than any caller gets: a walker's
 * own fields stay here.
 */
export function svReplyJson(kind: 'spawn' | 'call', outcome: unknown): string {
  try {
    if (kind === 'call') return `{"result":${boundaryJson(outcome)},"reports":[]}`;
    return `{"result":null,"reports":${boundaryJson(outcome)}}`;
  } catch (error) {
    throw graphError('SVC_ERR_WALKER_FAILED', `a reported value cannot be sent as JSON: ${(error as Error).message}`);
  }
}

/** The prototypes whose instances are plain data (no class name to carry). */
const PLAIN = new Set<unknown>([Object.prototype, null, Array.prototype]);

/**
 * JSON in which an instance of a class (not a plain object, array or a
 * value with `toJSON`) is written as its own enumerable fields plus
 * `"$class": "<its class name>"`.
 */
export function boundaryJson(value: unknown): string {
  return (
    JSON.stringify(value === undefined ? null : value, function (this: unknown, _key: string, v: unknown) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
      // As arguments cross: a Map with string keys as a record, a Set as an array.
      if (v instanceof Map) return Object.fromEntries([...v].filter(([k]) => typeof k === 'string'));
      if (v instanceof Set) return [...v];
      const proto = Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null;
      if (PLAIN.has(proto)) return v;
      const name = proto?.constructor?.name;
      if (typeof name !== 'string' || name === '' || Object.hasOwn(v, '$class')) return v;
      return { $class: name, ...(v as Record<string, unknown>) };
    }) ?? 'null'
  );
}
