/**
 * Functions served as endpoints, and the `restspec` options shared with
 * walkers.
 */
import type { Static, TObject, TSchema } from 'typebox';
import Type from 'typebox';
import type { Root } from './archetype.ts';
import { buildInfo, type ClassInfo } from './class-info.ts';
import type { WalkerLogger } from './log.ts';

export const HTTPMethod = {
  GET: 'GET',
  POST: 'POST',
  PUT: 'PUT',
  PATCH: 'PATCH',
  DELETE: 'DELETE',
} as const;
export type HTTPMethod = (typeof HTTPMethod)[keyof typeof HTTPMethod];

export const APIProtocol = {
  HTTP: 'HTTP',
  WEBHOOK: 'WEBHOOK',
  WEBSOCKET: 'WEBSOCKET',
} as const;
export type APIProtocol = (typeof APIProtocol)[keyof typeof APIProtocol];

export type Access = 'pub' | 'priv' | 'protect';

/** How a walker or function is exposed (all optional). */
export interface RestSpec {
  method?: HTTPMethod;
  /** A custom path; `{name}` placeholders become path parameters. */
  path?: string;
  protocol?: APIProtocol;
  /** WebSocket only: every reply goes to every connected client of the walker. */
  broadcast?: boolean;
  /** With `envelope: false`: the Content-Type of the raw body (default `text/plain`). */
  produces?: string;
  /** Functions only: `false` sends the return value as the body, without the envelope. */
  envelope?: boolean;
}

/**
 * @example
 * static spec = restspec({ method: HTTPMethod.GET, path: '/todos/{id}' })
 */
export function restspec(spec: RestSpec): RestSpec {
  return spec;
}

/**
 * What a function handler gets besides its arguments.
 *
 * @example
 * export const tidy = fn({}, async (_args, { root, log, traceId }) => {
 *   log.info({ traceId }, 'tidying');
 *   return (await root.out(Todo)).length;
 * });
 */
export interface FnContext {
  /** The caller's root node (the shared guest root for anonymous callers). */
  root: Root;
  caller: Caller;
  /** Run a walker in the same transaction; resolves to its reports. */
  spawn(walker: string | Function, fields?: Record<string, unknown>, at?: string): Promise<unknown[]>;
  /** The trace id of the request (the run's), if it had one. */
  readonly traceId: string | undefined;
  /** A logger whose lines carry `function` (its name), `trace_id` and `root`; made when first read. */
  readonly log: WalkerLogger;
}

/** Who a walker or function runs for. */
export interface Caller {
  rootId: string;
  userId?: string;
  role?: string;
}

const FN = Symbol('svc.fn');

export interface FunctionDef<A = Record<string, unknown>, R = unknown, Acc extends Access = Access> {
  readonly [FN]: true;
  readonly access: Acc;
  readonly params: TObject;
  readonly spec: RestSpec;
  readonly info: ClassInfo;
  readonly handler: (args: A, ctx: FnContext) => R | Promise<R>;
}

/**
 * Declare a function endpoint (`POST /function/<exported name>`).
 *
 * @example
 * export const add = fn({ access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) }, ({ a, b }) => a + b);
 * export const install = fn({ access: 'pub', method: HTTPMethod.GET, path: '/install.sh', envelope: false,
 *                             produces: 'text/x-shellscript' }, () => 'echo hi');
 */
export function fn<P extends TObject, R, const Acc extends Access = 'priv'>(
  options: { access?: Acc; params?: P } & RestSpec,
  handler: (args: NoInfer<Static<P>>, ctx: FnContext) => R | Promise<R>,
): FunctionDef<Static<P>, R, Acc> {
  const { access = 'priv', params, ...spec } = options;
  const schema = (params ?? Type.Object({})) as TObject;
  const info = buildInfo({ name: 'function', has: schema }, 'function');
  return Object.freeze({ [FN]: true as const, access: access as Acc, params: schema, spec, info, handler });
}

export function isFunctionDef(x: unknown): x is FunctionDef {
  return typeof x === 'object' && x !== null && (x as { [FN]?: unknown })[FN] === true;
}

export type { TSchema };
