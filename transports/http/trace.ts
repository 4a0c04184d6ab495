/**
 * Trace ids: every request gets one. A caller's `X-Trace-Id` is kept when it
 * is 1–128 characters of `[A-Za-z0-9._:-]` (W3C trace ids and UUIDs qualify);
 * otherwise a new one is made: 32 lower-case hex characters, the W3C
 * trace-id form. The id goes back in the `X-Trace-Id` response header, into
 * the access log, and on the messages the request causes (walker runs, their
 * logs, and what they publish).
 */
import { randomBytes } from 'node:crypto';

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Random per thread, then a counter: unique across threads and pods, and cheap to make. */
const prefix = randomBytes(8).toString('hex');
let counter = 0;

/** Whether a caller's trace id is kept as it is. */
export function isTraceId(given: string): boolean {
  return VALID.test(given);
}

/** The caller's trace id when it is a valid one, otherwise a new one. */
export function traceIdOf(given: string | undefined): string {
  if (given !== undefined && VALID.test(given)) return given;
  return newTraceId();
}

/** A new trace id: 32 lower-case hex characters. */
export function newTraceId(): string {
  counter = (counter + 1) % 0x1_0000_0000_0000;
  return prefix + counter.toString(16).padStart(16, '0');
}
