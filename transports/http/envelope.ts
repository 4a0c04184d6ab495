/**
 * The response envelope of every generated endpoint:
 * `{ok, type: 'response', data: {result, reports}, error, meta: {request_id}}`.
 */
import type { ErrorBody } from './errors.ts';

export interface Envelope {
  ok: boolean;
  type: 'response';
  data: unknown;
  error: ErrorBody | null;
  meta: { request_id: string } & Record<string, unknown>;
}

let seq = 0;
const prefix = Math.random().toString(36).slice(2, 8);

/** A request id: the caller's when it is a sane one, otherwise a fresh one. */
export function newRequestId(given?: string): string {
  if (given && given.length <= 128 && /^[\w.:-]+$/.test(given)) return given;
  return `${prefix}-${(++seq).toString(36)}`;
}

export function success(data: unknown, requestId: string, meta?: Record<string, unknown>): string {
  if (meta) return JSON.stringify({ ok: true, type: 'response', data, error: null, meta: { request_id: requestId, ...meta } } satisfies Envelope);
  // The hot path: the same text JSON.stringify would give, without building the outer object.
  return `{"ok":true,"type":"response","data":${JSON.stringify(data)},"error":null,"meta":{"request_id":${JSON.stringify(requestId)}}}`;
}

/** A success envelope around data already in JSON text (`data` is written as it is). */
export function successJson(dataJson: string, requestId: string): string {
  return `{"ok":true,"type":"response","data":${dataJson},"error":null,"meta":{"request_id":${JSON.stringify(requestId)}}}`;
}

export function failure(error: ErrorBody, requestId: string, meta?: Record<string, unknown>): string {
  return JSON.stringify({ ok: false, type: 'response', data: null, error, meta: { request_id: requestId, ...meta } } satisfies Envelope);
}
