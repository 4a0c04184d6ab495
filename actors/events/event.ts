/**
 * An event, and its wire form: CloudEvents 1.0 in JSON (`specversion`,
 * `type`, `source`, `id`, `time`, `datacontenttype`, `data`), with the
 * extensions `traceid` (the original product's `trace_id`) and `svcheaders` (its
 * `headers` map as one JSON string: CloudEvents extension values cannot be
 * maps). Delivery fields (`deliveryId`, `deliveryTopic`, `deliveryGroup`,
 * `attempt`) are set by the broker on delivery and never serialised.
 *
 * @example
 * publish('orders', new Event({ data: { id: 7 }, eventType: 'order.placed' }));
 */
import { randomUUID } from 'node:crypto';

export interface EventInit<D = unknown> {
  /** The payload: anything JSON can hold. */
  data: D;
  /** Defaults to the topic it is published on. */
  eventType?: string;
  /** Defaults to the trace id of the request (or walker run, or handled event) that publishes it. */
  traceId?: string;
  /** Defaults to a random UUID; stable across redeliveries. */
  id?: string;
  /** Defaults to the broker's source (`svc/<app>`). */
  source?: string;
  /** ISO 8601; defaults to the time it is published. */
  time?: string;
  /** String headers travelling with the event (a dead-lettered event carries its failure here). */
  headers?: Record<string, string>;
}

export class Event<D = unknown> {
  data: D;
  eventType: string;
  traceId: string;
  id: string;
  source: string;
  time: string;
  headers: Record<string, string>;
  /** The stream entry it was delivered as (broker-set, never serialised). */
  deliveryId: string | undefined = undefined;
  /** The topic it was delivered from (broker-set). */
  deliveryTopic: string | undefined = undefined;
  /** The consumer group it was delivered to (broker-set). */
  deliveryGroup: string | undefined = undefined;
  /** Which try of its handler this is, from 1 (broker-set). */
  attempt = 0;

  constructor(init: EventInit<D>) {
    if (typeof init !== 'object' || init === null || !('data' in init)) throw new TypeError('new Event({ data, eventType?, traceId? }): data is required');
    this.data = init.data;
    this.eventType = init.eventType ?? '';
    this.traceId = init.traceId ?? '';
    this.id = init.id ?? '';
    this.source = init.source ?? '';
    this.time = init.time ?? '';
    this.headers = { ...init.headers };
  }

  /** The original product's snake_case names, read-only aliases. */
  get event_type(): string {
    return this.eventType;
  }
  get trace_id(): string {
    return this.traceId;
  }
}

/** A CloudEvents 1.0 JSON object as svc writes it. */
export interface CloudEventJson {
  specversion: '1.0';
  type: string;
  source: string;
  id: string;
  time: string;
  datacontenttype: 'application/json';
  data: unknown;
  traceid?: string;
  svcheaders?: string;
}

/** The millisecond {@link isoNow} last wrote, and what it wrote (events published together share it). */
let isoMs = Number.NaN;
let isoText = '';

/** `new Date().toISOString()`, written once per millisecond. */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

/** Whether `headers` has a key of its own (without listing them). */
function hasHeaders(headers: Record<string, string>): boolean {
  for (const key in headers) if (Object.hasOwn(headers, key)) return true;
  return false;
}

/** Fill what the publisher left empty, for `topic`. Changes and returns `event`. */
export function stamp(event: Event, topic: string, defaults: { source: string; traceId?: string | undefined }): Event {
  if (!event.eventType) event.eventType = topic;
  if (!event.id) event.id = randomUUID();
  if (!event.source) event.source = defaults.source;
  if (!event.time) event.time = isoNow();
  if (!event.traceId && defaults.traceId) event.traceId = defaults.traceId;
  return event;
}

/** The wire form (JSON text) of a stamped event. */
export function encodeEvent(event: Event): string {
  const out: CloudEventJson = {
    specversion: '1.0',
    type: event.eventType,
    source: event.source,
    id: event.id,
    time: event.time,
    datacontenttype: 'application/json',
    data: event.data ?? null,
  };
  if (event.traceId) out.traceid = event.traceId;
  if (hasHeaders(event.headers)) out.svcheaders = JSON.stringify(event.headers);
  return JSON.stringify(out);
}

/** An event from its wire form; throws on text that is not a CloudEvents 1.0 JSON event. */
export function decodeEvent(text: string): Event {
  const raw = JSON.parse(text) as Partial<CloudEventJson> & Record<string, unknown>;
  if (typeof raw !== 'object' || raw === null || raw.specversion !== '1.0' || typeof raw.type !== 'string' || typeof raw.id !== 'string') {
    throw new Error('not a CloudEvents 1.0 JSON event (specversion, type and id are required)');
  }
  let headers: Record<string, string> = {};
  if (typeof raw.svcheaders === 'string') {
    const parsed = JSON.parse(raw.svcheaders) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) headers = parsed as Record<string, string>;
  }
  const init: EventInit = { data: raw.data, eventType: raw.type, id: raw.id, source: typeof raw.source === 'string' ? raw.source : '', time: typeof raw.time === 'string' ? raw.time : '', headers };
  if (typeof raw.traceid === 'string') init.traceId = raw.traceid;
  return new Event(init);
}
