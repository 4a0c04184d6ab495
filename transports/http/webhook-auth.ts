/**
 * Who may run a webhook walker (README *Webhooks*): a JSON body, an API key
 * in `X-API-Key`, and — with `[scale.webhook] verify_signature` — an
 * HMAC-SHA256 of the raw body bytes in the signature header.
 *
 * The signature is keyed with `[scale.webhook] secret` (`WEBHOOK_SECRET`),
 * not with the API key as the original product does: the key travels in the same
 * request, so a signature made with it proves nothing an eavesdropper or a
 * log reader could not forge. It is the raw bytes that are signed — a body
 * parsed and serialised again (other spacing, other key order) no longer
 * matches — and it is sent as 64 hex characters (either case), optionally
 * prefixed `sha256=` (GitHub's spelling). Anything else is a wrong signature.
 *
 * Timestamps (svc's own addition): a sender may add the timestamp header
 * (`X-Webhook-Timestamp`, Unix seconds). When present it must be an integer
 * within ±`timestamp_tolerance_seconds` of the server's clock, else 401
 * `INVALID_TIMESTAMP`, and the signature may then cover `<timestamp>.<raw body>`
 * — the timestamp cannot be swapped for a fresh one without the secret. As
 * the header is optional, a signature of the bare body is accepted beside it
 * (a sender that added the header without changing what it signs keeps
 * working); such a request is replayable like one without the header. With
 * `require_timestamp = true` a request without the header is 401
 * `INVALID_TIMESTAMP` and only the `<timestamp>.<raw body>` form is accepted:
 * then every request is bound to its time, and replays are refused once the
 * window has passed.
 *
 * A missing, unknown, expired or revoked key is one and the same 401
 * `UNAUTHORIZED` (no oracle telling which); a key whose allow-list does not
 * name the walker is 403 `FORBIDDEN`. Comparisons are constant-time.
 */
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { type ApiKeyHolder, identityError } from '../../actors/identity/index.ts';
import { httpError, toHttpError } from './errors.ts';
import type { HttpRequest } from './types.ts';

/** What webhooks need of the API keys: identity's `ApiKeys`, or a stand-in in tests. */
export interface WebhookKeys {
  /** The holder of a good key; undefined for a malformed, unknown, expired or revoked one. */
  check(key: string): ApiKeyHolder | undefined | Promise<ApiKeyHolder | undefined>;
}

/** `[scale.webhook]` as the front uses it. */
export interface WebhookOptions {
  apiKeys: WebhookKeys;
  /** The HMAC key of signatures (`[scale.webhook] secret`); may be empty when `verifySignature` is false. */
  secret: string;
  /** `X-Webhook-Signature` by default (any case). */
  signatureHeader: string;
  verifySignature: boolean;
  /** `X-Webhook-Timestamp` by default (any case). */
  timestampHeader: string;
  toleranceSeconds: number;
  requireTimestamp: boolean;
  /** Milliseconds since the epoch (default `Date.now`): tests move it. */
  clock?: () => number;
}

/** The header the key travels in (lower case, as servers hand headers over). */
export const API_KEY_HEADER = 'x-api-key';

const HEX_SIGNATURE = /^[0-9a-fA-F]{64}$/;
const PREFIX = /^sha256=/i;
const SECONDS = /^\d{1,15}$/;

/**
 * The signature a sender puts in the signature header: lower-case hex of
 * HMAC-SHA256 over the raw body, or over `<timestamp>.<raw body>` when a
 * timestamp is given.
 *
 * @example
 * const body = JSON.stringify({ amount: 3 });
 * const ts = String(Math.floor(Date.now() / 1000));
 * await fetch(`${url}/webhook/Paid`, {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-webhook-timestamp': ts, 'x-webhook-signature': webhookSignature(secret, body, ts) },
 *   body,
 * });
 */
export function webhookSignature(secret: string, body: string | Buffer, timestamp?: string): string {
  const mac = createHmac('sha256', secret);
  if (timestamp !== undefined) mac.update(`${timestamp}.`);
  return mac.update(body).digest('hex');
}

/**
 * The 64 hex characters (optionally `sha256=`-prefixed) as 32 bytes; anything
 * else — another length, other characters, two values joined by a proxy — is
 * undefined, i.e. a wrong signature.
 *
 * @example
 * parseSignature(`sha256=${'ab'.repeat(32)}`)?.length; // 32
 * parseSignature('ab');                                // undefined
 */
export function parseSignature(value: string | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  const hex = PREFIX.test(value) ? value.slice(7) : value;
  return HEX_SIGNATURE.test(hex) ? Buffer.from(hex, 'hex') : undefined;
}

/** Whether a Content-Type is JSON: `application/json`, with parameters (`; charset=utf-8`) or without. */
function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

/**
 * @example
 * const gate = new WebhookGate({ apiKeys, secret, signatureHeader: 'X-Webhook-Signature', verifySignature: true,
 *   timestampHeader: 'X-Webhook-Timestamp', toleranceSeconds: 300, requireTimestamp: false });
 * const holder = await gate.admit(req, 'Paid'); // throws 415, 401 or 403 otherwise
 * graph.spawnJson('Paid', fields, { caller: holder.caller });
 */
export class WebhookGate {
  /** The request headers it reads (lower case): servers must copy these. */
  readonly headerNames: readonly string[];
  private readonly signatureHeader: string;
  private readonly timestampHeader: string;
  private readonly key: KeyObject | undefined;
  private readonly clock: () => number;

  constructor(private readonly o: WebhookOptions) {
    this.signatureHeader = o.signatureHeader.toLowerCase();
    this.timestampHeader = o.timestampHeader.toLowerCase();
    if (o.verifySignature && o.secret === '') throw new Error('webhook signatures are verified ([scale.webhook] verify_signature) but no secret is set ([scale.webhook] secret / WEBHOOK_SECRET)');
    // Made once: a KeyObject spares the HMAC re-reading the secret on every request.
    this.key = o.secret === '' ? undefined : createSecretKey(Buffer.from(o.secret, 'utf8'));
    this.clock = o.clock ?? Date.now;
    this.headerNames = [API_KEY_HEADER, this.signatureHeader, this.timestampHeader];
  }

  /**
   * The key's holder when the request may run `walker`; throws the answer
   * otherwise (415, 401 `UNAUTHORIZED` / `INVALID_TIMESTAMP` /
   * `INVALID_SIGNATURE`, 403). Reads only headers and the raw body.
   */
  async admit(req: HttpRequest, walker: string): Promise<ApiKeyHolder> {
    const h = req.headers;
    // First what costs nothing and says nothing about keys.
    if (!isJson(h['content-type'])) throw httpError('UNSUPPORTED_MEDIA_TYPE', 'a webhook takes a JSON body: send Content-Type: application/json');
    // The signature before the key: someone holding a leaked key but not the secret cannot learn whether the key still works.
    const timestamp = this.timestamp(h[this.timestampHeader]);
    if (this.o.verifySignature) this.verify(h[this.signatureHeader], req.body, timestamp);
    const key = h[API_KEY_HEADER];
    if (key === undefined || key === '') throw unauthorized();
    const checked = this.o.apiKeys.check(key);
    const holder = checked instanceof Promise ? await checked : checked;
    if (holder === undefined) throw unauthorized();
    if (holder.walkers !== null && !holder.walkers.includes(walker)) throw httpError('FORBIDDEN', `this API key may not run ${walker}`);
    return holder;
  }

  /** The timestamp header as sent, once checked; undefined when absent and not required. */
  private timestamp(value: string | undefined): string | undefined {
    // node:http hands over an empty header, uWebSockets.js none: both are no timestamp.
    if (value === undefined || value === '') {
      if (this.o.requireTimestamp) throw refusal('INVALID_TIMESTAMP', `the ${this.o.timestampHeader} header is required ([scale.webhook] require_timestamp): Unix seconds, within ${this.o.toleranceSeconds} s of the server's clock`);
      return undefined;
    }
    if (!SECONDS.test(value) || Math.abs(this.clock() / 1000 - Number(value)) > this.o.toleranceSeconds) throw refusal('INVALID_TIMESTAMP', this.window());
    return value;
  }

  private window(): string {
    return `${this.o.timestampHeader} must be Unix seconds within ${this.o.toleranceSeconds} s of the server's clock`;
  }

  private verify(header: string | undefined, body: Buffer, timestamp: string | undefined): void {
    const given = parseSignature(header);
    if (given === undefined) throw badSignature(this.o.signatureHeader, header === undefined || header === '');
    const key = this.key as KeyObject;
    let ok = false;
    if (timestamp !== undefined) ok = timingSafeEqual(given, createHmac('sha256', key).update(`${timestamp}.`).update(body).digest());
    // The bare body's signature: when the timestamp is optional (see the file's doc).
    // Never for a body that starts `<digits>.`: that is what a timestamped signature covers, so a captured
    // `<ts>.<body>` signature would pass as the bare signature of the body `<ts>.<body>` sent without the header.
    if (!ok && !this.o.requireTimestamp && !startsLikeTimestamp(body)) ok = timingSafeEqual(given, createHmac('sha256', key).update(body).digest());
    if (!ok) throw badSignature(this.o.signatureHeader, false, this.o.requireTimestamp);
  }
}

/** Whether the bytes begin with ASCII digits and a dot (a timestamped signature's message does; a JSON object never). */
function startsLikeTimestamp(body: Buffer): boolean {
  let i = 0;
  while (i < body.length && i < 16 && (body[i] as number) >= 0x30 && (body[i] as number) <= 0x39) i++;
  return i > 0 && body[i] === 0x2e;
}

function unauthorized(): Error {
  // One answer for missing, unknown, expired and revoked keys: a prober learns nothing about which.
  return httpError('UNAUTHORIZED', 'a valid API key is required in the X-API-Key header');
}

/** Identity's code as the front's answer: a plain 401, never a stack (not even in `--dev`). */
function refusal(code: 'INVALID_SIGNATURE' | 'INVALID_TIMESTAMP', message: string): Error {
  return toHttpError(identityError(code, message));
}

function badSignature(header: string, missing: boolean, timestamped = false): Error {
  const what = timestamped ? '`<timestamp>.<raw body>`' : 'the raw body (or of `<timestamp>.<raw body>` with a timestamp header)';
  const how = `the HMAC-SHA256 of ${what}, keyed with the webhook secret (WEBHOOK_SECRET, or .svc/webhook_secret in development; not the API key), as 64 hex characters`;
  return refusal('INVALID_SIGNATURE', missing ? `the ${header} header is missing: send ${how}` : `the ${header} header does not match: send ${how}`);
}
