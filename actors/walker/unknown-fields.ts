/**
 * Fields a client sent that the walker or function does not declare (a typo:
 * `{"titel": "x"}`). With `strict` (the default) the request is refused with
 * `SVC_ERR_INVALID_FIELDS` — 400 `VALIDATION_ERROR`, `<Name>: unknown field
 * "titel"`, with whatever else is wrong with the rest in the same answer;
 * without it they are ignored as svc always did, and each walker and field is
 * warned about once (the remembered pairs are bounded: a client sending
 * random names cannot grow them).
 *
 * Transports decide what the client sent (HTTP bodies, forms and GET query
 * strings, WebSocket frames) and ask {@link UnknownFields.check}; app code
 * building nodes or spawning walkers is not held to it. Webhook walkers, and
 * walkers that read the raw body themselves (`request.body`), take any
 * fields: {@link takesAnyFields}.
 */
import type { TObject } from 'typebox';
import { Value } from 'typebox/value';
import { APIProtocol } from './fn.ts';
import { fieldProblems, type FieldProblem, invalidFields, quoteField, UNKNOWN_FIELD } from './field-errors.ts';

export interface UnknownFieldsOptions {
  /** Refuse requests with undeclared fields (default true); false: ignore them, with a warning. */
  strict?: boolean;
  /** Where the warnings of a non-strict policy go (once per walker and field). */
  warn?: (message: string, extra: { endpoint: string; field: string }) => void;
  /** Walker-and-field pairs warned about at most (default 1,000); past that, one last line says no more follow. */
  maxWarnings?: number;
}

/** Field names this long are cut in warnings. */
const NAME_CHARS = 100;

/**
 * @example
 * const unknown = new UnknownFields({ strict: config.strict_fields, warn: (m, x) => log.warn(x, m) });
 * unknown.check('AddNote', schema, fields, ['titel']); // throws: AddNote: unknown field "titel"
 */
export class UnknownFields {
  readonly strict: boolean;
  private readonly warned = new Set<string>();
  private readonly maxWarnings: number;
  private full = false;

  constructor(private readonly o: UnknownFieldsOptions = {}) {
    this.strict = o.strict !== false;
    this.maxWarnings = o.maxWarnings ?? 1000;
  }

  /**
   * The client sent `unknown` besides `fields` (what the endpoint takes, the
   * runtime's own filled in): refuse the request, naming each and every other
   * problem of the fields, or warn once per endpoint and field.
   */
  check(endpoint: string, schema: TObject, fields: Record<string, unknown>, unknown: readonly string[]): void {
    if (unknown.length === 0) return;
    if (this.strict) throw unknownFieldsError(endpoint, schema, fields, unknown);
    if (this.full || this.o.warn === undefined) return;
    for (const name of unknown) {
      const field = name.length > NAME_CHARS ? `${name.slice(0, NAME_CHARS)}…` : name;
      const key = `${endpoint}\0${field}`;
      if (this.warned.has(key)) continue;
      if (this.warned.size >= this.maxWarnings) {
        this.full = true;
        this.o.warn(`unknown fields: ${this.maxWarnings} walker and field pairs warned about; no more are`, { endpoint, field });
        return;
      }
      this.warned.add(key);
      this.o.warn(`${endpoint}: ${UNKNOWN_FIELD} ${quoteField(field)} ignored (strict_fields is off; told once per walker and field)`, { endpoint, field });
    }
  }
}

/**
 * The error for fields a client sent that `schema` does not declare: each
 * of them, then whatever else is wrong with the rest (a misspelt field is
 * often a missing one too), in one answer.
 *
 * @example
 * unknownFieldsError('AddNote', schema, {}, ['titel']).message;
 * // AddNote: unknown field "titel"; missing required field "text"
 */
export function unknownFieldsError(endpoint: string, schema: TObject, fields: Record<string, unknown>, unknown: readonly string[]): Error {
  const problems: FieldProblem[] = [...new Set(unknown)].map((field) => ({ field, message: UNKNOWN_FIELD }));
  // Only on the way out: a copy with the schema's defaults, as the run would check it.
  const rest = Value.Default(schema, structuredClone(fields));
  return invalidFields(endpoint, [...problems, ...fieldProblems(schema, rest)]);
}

/**
 * Whether an endpoint takes fields it does not declare: a webhook walker
 * (providers send what they send), or one that reads the raw body itself
 * (`request: T.Object({ body: T.String(), … })`, to check a signature).
 *
 * @example
 * takesAnyFields(walkerInfo(cls).schema, cls.spec?.protocol)
 */
export function takesAnyFields(schema: TObject, protocol?: string): boolean {
  if (protocol === APIProtocol.WEBHOOK) return true;
  const request = (schema.properties as Record<string, { properties?: Record<string, unknown> } | undefined>).request;
  return request?.properties !== undefined && Object.hasOwn(request.properties, 'body');
}
