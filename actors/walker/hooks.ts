/**
 * Hook walkers (`_Name`), whatever the transport: they run
 * before every generated walker or function route — whatever their own
 * access — and before a WebSocket walker's upgrade. A hook that declares
 * `headers` gets the request headers (lower-case names); one that declares
 * `request` gets `{method, path}` (and `query`, `body` when its schema asks).
 * A report carrying a numeric `status` from 400 to 599 refuses the request:
 * {@link HookDispatcher.run} throws a {@link HookRefusal} with that status
 * and the report's `code`, `message` and `details`.
 *
 * It lives with the walkers (it is walker semantics, not HTTP) and runs hooks
 * through a `spawn` function — the Graph's — so transports (the HTTP front,
 * the WebSocket hub, later webhooks and the tool server) share one rule.
 */
// STATUS_CODES is only a table of reason phrases (the default code and message of a refusal).
import { STATUS_CODES } from 'node:http';
import type { TSchema } from 'typebox';
import { SvcError } from '../../kernel/index.ts';
import type { Caller } from './fn.ts';
import type { Registry } from './registry.ts';
import { walkerInfo, type WalkerClass } from './walker.ts';

/** A request as hooks see it, whatever carried it. */
export interface HookRequest {
  /** Upper case. */
  method: string;
  /** Decoded path, without the query. */
  path: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The raw query string (no `?`). */
  query: string;
  /** The raw body (empty for GET and WebSocket upgrades). */
  body: Buffer | string;
}

/** Runs a walker for a caller (the Graph's `spawn`). */
export type HookSpawn = (walker: string, fields: Record<string, unknown>, options: { caller: Caller; timeoutMs?: number; traceId?: string }) => Promise<{ reports: unknown[] }>;

/**
 * A hook refused the request. `code`, `message` and `details` come from the
 * hook's report (a code and message from the status when it gave none).
 *
 * @example
 * try { await hooks.run(req, caller) }
 * catch (e) { if (e instanceof HookRefusal) answer(e.status, e.body) }
 */
export class HookRefusal extends SvcError {
  /** The hook walker that refused. */
  readonly hook: string;

  constructor(hook: string, status: number, code: string, message: string, details?: unknown) {
    super(code, message, { status, details });
    this.name = 'HookRefusal';
    this.hook = hook;
  }

  /** The error body of the envelope: `{code, message, details?}`. */
  get body(): { code: string; message: string; details?: unknown } {
    return { code: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) };
  }
}

/**
 * Fill the `headers` and `request` fields a walker, function or hook declares
 * from the request (webhook signatures are computed over the raw `body`).
 *
 * @example
 * fillRequestFields(walkerInfo(cls).schema.properties, fields, req);
 */
export function fillRequestFields(props: Record<string, TSchema> | undefined, fields: Record<string, unknown>, req: HookRequest): void {
  if (!props) return;
  if (props.headers) fields.headers = req.headers;
  const request = props.request as { properties?: Record<string, unknown> } | undefined;
  if (request) {
    const wanted = request.properties ?? {};
    const value: Record<string, unknown> = { method: req.method, path: req.path };
    if ('query' in wanted) value.query = req.query;
    if ('body' in wanted) value.body = typeof req.body === 'string' ? req.body : req.body.toString('utf8');
    fields.request = value;
  }
}

/**
 * The refusal among a hook's reports (the first report with an integer
 * `status` from 400 to 599), if any.
 *
 * @example
 * const refused = hookRefusal('_RateLimit', reports); if (refused) throw refused;
 */
export function hookRefusal(hook: string, reports: readonly unknown[]): HookRefusal | undefined {
  for (const r of reports) {
    const refused = refusal(hook, r);
    if (refused) return refused;
  }
  return undefined;
}

/** A hook run to make before a walker or function, in the same message to its partition ({@link HookDispatcher.plan}). */
export interface HookRun {
  walker: string;
  fields: Record<string, unknown>;
}

/** A report that refuses: an object with an integer `status` from 400 to 599. */
function refusal(hook: string, report: unknown): HookRefusal | undefined {
  if (typeof report !== 'object' || report === null) return undefined;
  const { status, code, message, details } = report as { status?: unknown; code?: unknown; message?: unknown; details?: unknown };
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) return undefined;
  return new HookRefusal(
    hook,
    status,
    typeof code === 'string' ? code : (STATUS_CODES[status] ?? 'ERROR').toUpperCase().replace(/[^A-Z]+/g, '_'),
    typeof message === 'string' ? message : (STATUS_CODES[status] ?? 'error'),
    details,
  );
}

/**
 * @example
 * const hooks = new HookDispatcher(registry, (w, f, o) => graph.spawn(w, f, o), { timeoutMs: 30_000 });
 * if (hooks.active) await hooks.run({ method: 'GET', path: '/ws/Chat', headers, query: '', body: '' }, caller);
 */
export class HookDispatcher {
  private readonly hooks: { name: string; props: Record<string, TSchema> | undefined }[];
  /** Some hook declares `headers`: transports must copy every request header. */
  readonly wantsHeaders: boolean;

  constructor(
    registry: Registry,
    private readonly spawn: HookSpawn,
    private readonly options: { timeoutMs?: number } = {},
  ) {
    const hooks = registry.hooks();
    this.hooks = hooks.map(([name, cls]: [string, WalkerClass]) => ({ name, props: walkerInfo(cls).schema.properties as Record<string, TSchema> | undefined }));
    this.wantsHeaders = hooks.some(([, cls]) => walkerInfo(cls).fields.includes('headers'));
  }

  /** Whether the app declares any hook (no work at all otherwise). */
  get active(): boolean {
    return this.hooks.length > 0;
  }

  /**
   * The hook runs for `req`, in declaration order, to hand to the graph with
   * the run they guard (`SpawnOptions.hooks`): one message to the partition
   * instead of one per hook and one more for the run.
   */
  plan(req: HookRequest): HookRun[] {
    return this.hooks.map(({ name, props }) => {
      const fields: Record<string, unknown> = {};
      fillRequestFields(props, fields, req);
      return { walker: name, fields };
    });
  }

  /**
   * Run every hook, in declaration order, for `caller`; resolves when all let
   * the request through, throws a {@link HookRefusal} at the first refusal
   * (later hooks do not run), or the hook's own failure. `traceId`: the
   * request's, carried into the hooks' runs.
   */
  async run(req: HookRequest, caller: Caller, traceId?: string): Promise<void> {
    for (const { name, props } of this.hooks) {
      const fields: Record<string, unknown> = {};
      fillRequestFields(props, fields, req);
      const options: { caller: Caller; timeoutMs?: number; traceId?: string } = { caller };
      if (this.options.timeoutMs !== undefined) options.timeoutMs = this.options.timeoutMs;
      if (traceId !== undefined) options.traceId = traceId;
      const { reports } = await this.spawn(name, fields, options);
      const refused = hookRefusal(name, reports);
      if (refused) throw refused;
    }
  }
}
