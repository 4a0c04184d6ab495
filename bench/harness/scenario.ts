/**
 * Scenarios for `svc bench`: load one from a file (TypeScript/JavaScript
 * module, JSON or TOML), check it field by field, or make the default one
 * from the target's `/openapi.json`; then `prepare` it against a running
 * target — register and log in the pool of users, run the `at.setup` walkers,
 * and turn every request into the variants the load engine sends.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import type { EnginePlan, PreparedRequest, Scenario, ScenarioRequest, WsScenario } from './types.ts';

/** A failure `svc bench` reports in one line: exit code 2 for a usage error, 1 for anything that stops the run. */
export class BenchError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'BenchError';
  }
}

/** A scenario and where it came from. */
export interface LoadedScenario {
  scenario: Scenario;
  /** The file, or `default (<origin>/openapi.json)`. */
  source: string;
  /** The module file of a TypeScript/JavaScript scenario (body functions are called from it). */
  module?: string;
}

const SCENARIO_KEYS = ['name', 'requests', 'users', 'ws', 'duration', 'warmup', 'connections', 'rate', 'threads'];
const REQUEST_KEYS = ['name', 'walker', 'function', 'path', 'method', 'body', 'headers', 'weight', 'auth', 'at'];
const AT_KEYS = ['setup', 'body', 'report'];
const WS_KEYS = ['walker', 'clients', 'rate', 'body', 'auth', 'senders'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function fail(where: string, field: string, message: string): never {
  throw new BenchError(`${where}: ${field} ${message}`);
}

function unknownKeys(where: string, prefix: string, x: Record<string, unknown>, known: string[]): void {
  for (const key of Object.keys(x)) if (!known.includes(key)) fail(where, `${prefix}${key}`, `is not a scenario field (known: ${known.join(', ')})`);
}

function number(where: string, field: string, x: unknown, o: { integer?: boolean; min: number; above?: boolean }): void {
  if (x === undefined) return;
  const ok = typeof x === 'number' && Number.isFinite(x) && (o.above ? x > o.min : x >= o.min) && (!o.integer || Number.isInteger(x));
  if (!ok) fail(where, field, `must be ${o.integer ? 'an integer' : 'a number'} ${o.above ? '>' : '≥'} ${o.min}, got ${JSON.stringify(x)}`);
}

function plainJson(where: string, field: string, x: unknown): void {
  if (x === undefined) return;
  if (!isObject(x)) fail(where, field, `must be an object of fields, got ${JSON.stringify(x)}`);
}

/**
 * Check a scenario as written (unknown keys refused, every figure in range,
 * exactly one of walker/function/path per request); the first problem is
 * thrown as a `BenchError` naming the file and the field.
 *
 * @example
 * validateScenario({ requests: [{ walker: 'Echo', body: { msg: 'hi' } }] }, 'echo.json');
 */
export function validateScenario(raw: unknown, where: string): Scenario {
  if (!isObject(raw)) fail(where, 'the scenario', `must be an object (a default export, a JSON object or a TOML document), got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`);
  unknownKeys(where, '', raw, SCENARIO_KEYS);
  const s = raw as Scenario;
  if (s.name !== undefined && typeof s.name !== 'string') fail(where, 'name', 'must be a string');
  number(where, 'users', s.users, { integer: true, min: 0 });
  number(where, 'duration', s.duration, { min: 0, above: true });
  number(where, 'warmup', s.warmup, { min: 0 });
  number(where, 'connections', s.connections, { integer: true, min: 1 });
  number(where, 'rate', s.rate, { min: 0, above: true });
  number(where, 'threads', s.threads, { integer: true, min: 1 });
  if (s.connections !== undefined && s.rate !== undefined) fail(where, 'connections and rate', 'are exclusive: connections is a closed loop, rate an open loop');
  if (s.requests !== undefined && !Array.isArray(s.requests)) fail(where, 'requests', 'must be a list of requests');
  const requests = s.requests ?? [];
  if (requests.length === 0 && s.ws === undefined) fail(where, 'requests', 'is empty: a scenario needs requests, a ws part, or both');
  const names = new Map<string, number>();
  requests.forEach((r: ScenarioRequest, i) => {
    const at = `requests[${i}]`;
    if (!isObject(r)) fail(where, at, 'must be an object');
    unknownKeys(where, `${at}.`, r, REQUEST_KEYS);
    const targets = (['walker', 'function', 'path'] as const).filter((k) => r[k] !== undefined);
    if (targets.length !== 1) fail(where, at, `needs exactly one of walker, function or path${targets.length ? ` (has ${targets.join(' and ')})` : ''}`);
    for (const k of ['walker', 'function'] as const) {
      const v = r[k];
      if (v !== undefined && (typeof v !== 'string' || !/^[^\s/]+$/.test(v))) fail(where, `${at}.${k}`, `must be a name (no spaces or slashes), got ${JSON.stringify(v)}`);
    }
    if (r.path !== undefined && (typeof r.path !== 'string' || !r.path.startsWith('/'))) fail(where, `${at}.path`, `must start with /, got ${JSON.stringify(r.path)}`);
    if (r.method !== undefined) {
      if (r.path === undefined) fail(where, `${at}.method`, "is for path requests: a walker's or function's method is the one the target declares");
      if (typeof r.method !== 'string' || !METHODS.includes(r.method.toUpperCase())) fail(where, `${at}.method`, `must be one of ${METHODS.join(', ')}, got ${JSON.stringify(r.method)}`);
    }
    if (r.name !== undefined && (typeof r.name !== 'string' || r.name === '')) fail(where, `${at}.name`, 'must be a non-empty string');
    if (typeof r.body !== 'function') plainJson(where, `${at}.body`, r.body);
    if (r.headers !== undefined) {
      if (!isObject(r.headers)) fail(where, `${at}.headers`, 'must be an object of header names to strings');
      for (const [h, v] of Object.entries(r.headers)) if (typeof v !== 'string') fail(where, `${at}.headers.${h}`, `must be a string, got ${JSON.stringify(v)}`);
    }
    number(where, `${at}.weight`, r.weight, { min: 0, above: true });
    if (r.auth !== undefined && typeof r.auth !== 'boolean') fail(where, `${at}.auth`, 'must be true or false');
    if (r.at !== undefined) {
      if (r.walker === undefined) fail(where, `${at}.at`, 'is for walkers (spawned at the node a setup walker reported)');
      if (!isObject(r.at)) fail(where, `${at}.at`, 'must be an object {setup, body?, report?}');
      unknownKeys(where, `${at}.at.`, r.at, AT_KEYS);
      if (typeof r.at.setup !== 'string' || !/^[^\s/]+$/.test(r.at.setup)) fail(where, `${at}.at.setup`, `must be a walker name, got ${JSON.stringify(r.at.setup)}`);
      plainJson(where, `${at}.at.body`, r.at.body);
      number(where, `${at}.at.report`, r.at.report, { integer: true, min: 0 });
    }
    const name = requestName(r);
    const seen = names.get(name);
    if (seen !== undefined) fail(where, `${at}.name`, `"${name}" is also the name of requests[${seen}]: give one of them another name`);
    names.set(name, i);
  });
  if (s.ws !== undefined) validateWs(s.ws, where);
  return s;
}

function validateWs(ws: WsScenario, where: string): void {
  if (!isObject(ws)) fail(where, 'ws', 'must be an object {walker, clients, rate, body?, auth?, senders?}');
  unknownKeys(where, 'ws.', ws, WS_KEYS);
  if (typeof ws.walker !== 'string' || !/^[^\s/]+$/.test(ws.walker)) fail(where, 'ws.walker', `must be a WebSocket walker's name, got ${JSON.stringify(ws.walker)}`);
  if (ws.clients === undefined) fail(where, 'ws.clients', 'is required (connections to the walker, at least 2)');
  number(where, 'ws.clients', ws.clients, { integer: true, min: 2 });
  if (ws.rate === undefined) fail(where, 'ws.rate', 'is required (frames per second in total)');
  number(where, 'ws.rate', ws.rate, { min: 0, above: true });
  number(where, 'ws.senders', ws.senders, { integer: true, min: 1 });
  if (ws.senders !== undefined && ws.senders >= ws.clients) fail(where, 'ws.senders', `must be fewer than ws.clients (${ws.clients}): someone has to listen`);
  plainJson(where, 'ws.body', ws.body);
  if (ws.auth !== undefined && typeof ws.auth !== 'boolean') fail(where, 'ws.auth', 'must be true or false');
}

/** The name a request has in the result. */
export function requestName(r: ScenarioRequest): string {
  return r.name ?? r.walker ?? r.function ?? `${(r.method ?? 'GET').toUpperCase()} ${r.path}`;
}

/** Whether the nearest package.json above `file` says "type": "module". */
function esmScope(file: string): boolean {
  for (let d = dirname(file); ; d = dirname(d)) {
    const pkg = join(d, 'package.json');
    if (existsSync(pkg)) {
      try {
        return (JSON.parse(readFileSync(pkg, 'utf8')) as { type?: string }).type === 'module';
      } catch {
        return false;
      }
    }
    if (dirname(d) === d) return false;
  }
}

/**
 * Load and check a scenario file: `.ts/.mts/.js/.mjs` (its default export;
 * TypeScript runs through tsx), `.json` or `.toml`.
 *
 * @example
 * const { scenario, module } = await loadScenario('bench/todo.ts');
 */
export async function loadScenario(file: string, cwd = process.cwd()): Promise<LoadedScenario> {
  const path = resolve(cwd, file);
  const ext = extname(path).toLowerCase();
  let raw: unknown;
  if (['.ts', '.mts', '.js', '.mjs'].includes(ext)) {
    let mod: { default?: unknown };
    try {
      // TypeScript goes through tsx's tsImport, which loads the file as ESM even in a folder whose
      // package.json lacks "type": "module" (there a plain import makes it CommonJS, and a scenario that
      // imports ES modules then fails with "Cannot require() ES Module … in a cycle").
      if (ext === '.ts' || ext === '.mts') {
        if (!existsSync(path)) throw Object.assign(new Error(`Cannot find module '${path}'`), { code: 'ERR_MODULE_NOT_FOUND' });
        const { tsImport } = await import('tsx/esm/api');
        try {
          mod = (await tsImport(pathToFileURL(path).href, import.meta.url)) as { default?: unknown };
        } catch (first) {
          // tsImport's namespaced loader has failed to open such a file under a parallel test run
          // (ENOENT on `s.ts?namespace=…`): the plain import is the second way in; its error is not the one to show.
          try {
            mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
          } catch {
            throw first;
          }
        }
      } else {
        mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
      }
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      if (e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(path)) throw new BenchError(`${file}: no such scenario file`);
      const cjs = (ext === '.ts' || ext === '.js') && !esmScope(path) ? ` (${ext} outside a "type": "module" package loads as CommonJS: name it ${ext === '.ts' ? '.mts' : '.mjs'} or add "type": "module")` : '';
      throw new BenchError(`${file}: the scenario module failed to load: ${e.message.split('\n')[0]}${cjs}`, 1, { cause: error });
    }
    if (mod.default === undefined) throw new BenchError(`${file}: the scenario module has no default export (export default { requests: [...] })`);
    raw = mod.default;
    // Compiled as CommonJS (no "type": "module"), the ES default export arrives one level down.
    if (isObject(raw) && isObject(raw.default) && Object.keys(raw).every((k) => k === 'default' || k === '__esModule')) raw = raw.default;
    return { scenario: validateScenario(raw, file), source: path, module: path };
  }
  if (ext !== '.json' && ext !== '.toml') throw new BenchError(`${file}: a scenario is a .ts, .mts, .js, .mjs, .json or .toml file`);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BenchError(`${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such scenario file' : (error as Error).message}`, 1, { cause: error });
  }
  try {
    raw = ext === '.json' ? JSON.parse(text) : parseToml(text);
  } catch (error) {
    throw new BenchError(`${file}: not valid ${ext === '.json' ? 'JSON' : 'TOML'}: ${(error as Error).message.split('\n')[0]}`, 1, { cause: error });
  }
  const scenario = validateScenario(raw, file);
  for (const [i, r] of (scenario.requests ?? []).entries()) if (typeof r.body === 'function') fail(file, `requests[${i}].body`, 'a body function is for TypeScript scenarios');
  return { scenario, source: path };
}

// ---------------------------------------------------------------------------
// The target's OpenAPI document

interface OpenApiOperation {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; schema?: { default?: unknown } }[];
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, { default?: unknown }>; required?: string[] } }> };
}

/** An endpoint of the target, from its OpenAPI document. */
export interface ApiRoute {
  method: string;
  /** The path template (`/todos/{id}`). */
  template: string;
  /** It asks for a bearer token. */
  secured: boolean;
  op: OpenApiOperation;
}

/** The target's walkers and functions by operation id (`walker_<Name>`, `walker_<Name>_at_node`, `function_<name>`). */
export type ApiIndex = Map<string, ApiRoute>;

/**
 * Read `GET /openapi.json` of the target; undefined when it does not answer
 * one (requests then go to the conventional routes).
 *
 * @example const api = await fetchApi('http://127.0.0.1:8000');
 */
export async function fetchApi(origin: string): Promise<ApiIndex | undefined> {
  const res = await fetch(`${origin}/openapi.json`, { signal: AbortSignal.timeout(HARNESS_FETCH_MS) });
  if (res.status !== 200) {
    await res.body?.cancel();
    return undefined;
  }
  const doc = (await res.json()) as { paths?: Record<string, Record<string, OpenApiOperation>> };
  const index: ApiIndex = new Map();
  for (const [template, ops] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(ops)) {
      if (!isObject(op) || typeof op.operationId !== 'string' || !/^(walker|function)_/.test(op.operationId)) continue;
      index.set(op.operationId, { method: method.toUpperCase(), template, secured: Array.isArray(op.security) && op.security.length > 0, op });
    }
  }
  return index;
}

/** Whether the endpoint can be called with no fields at all (everything it takes has a default). */
function takesNothing(route: ApiRoute): boolean {
  const params = route.op.parameters ?? [];
  if (params.some((p) => p.in === 'path')) return false;
  if (params.some((p) => p.in === 'query' && p.required && p.schema?.default === undefined)) return false;
  const content = route.op.requestBody?.content ?? {};
  if (Object.keys(content).some((type) => type !== 'application/json')) return false;
  const schema = content['application/json']?.schema;
  // A TypeBox field with a default is still listed as required: the server fills it in.
  return (schema?.required ?? []).every((f) => schema?.properties?.[f]?.default !== undefined);
}

/**
 * The scenario when none is given: every public walker and function of the
 * target that takes no required field, evenly weighted — and, with `users`,
 * the private ones too (sent as those users).
 *
 * @example const { scenario } = await defaultScenario('http://127.0.0.1:8000', api, 0);
 */
export function defaultScenario(origin: string, api: ApiIndex | undefined, users = 0): LoadedScenario {
  if (!api) throw new BenchError(`${origin}/openapi.json does not answer: give a scenario (--scenario file)`);
  const requests: ScenarioRequest[] = [];
  for (const [id, route] of api) {
    if (route.secured && users === 0) continue;
    if (!takesNothing(route)) continue;
    const kind = id.startsWith('walker_') ? 'walker' : 'function';
    requests.push({ [kind]: id.slice(kind.length + 1), weight: 1, auth: users > 0 });
  }
  if (requests.length === 0) {
    const privates = [...api.values()].filter((r) => r.secured && takesNothing(r)).length;
    throw new BenchError(
      `${origin} has no ${users > 0 ? '' : 'public '}walker or function that takes no required field, so there is no default scenario: ` +
        `give a scenario (--scenario file)${users === 0 && privates > 0 ? ` or --users n to load its ${privates} private one${privates > 1 ? 's' : ''}` : ''}`,
    );
  }
  return { scenario: { name: 'default', requests, users }, source: `default (${origin}/openapi.json)` };
}

// ---------------------------------------------------------------------------
// Preparing a scenario against the target

/** A registered, logged-in user of the pool. */
export interface PoolUser {
  index: number;
  username: string;
  user_id: string;
  token: string;
}

export interface PrepareOptions {
  /** The scenario module (TypeScript scenarios: body functions are called from it). */
  module?: string;
  /** The target's endpoints (fetched when not given). */
  api?: ApiIndex | null;
  /** Users registered at once (default 4: each costs the target a password hash). */
  concurrency?: number;
  /** Progress lines (registration, setup). */
  log?(line: string): void;
  /** Per-request timeout of the plan (ms). */
  timeoutMs?: number;
}

export interface Prepared {
  plan: EnginePlan;
  users: PoolUser[];
  /** The requests as the result describes them (path templates). */
  described: { name: string; method: string; path: string; weight: number }[];
}

interface Answer {
  status: number;
  body: { ok?: boolean; data?: Record<string, unknown> | null; error?: { code?: string; message?: string } | null } | undefined;
  headers: Headers;
}

/** The deadline of every request the harness makes itself (openapi, users, setup walkers). */
export const HARNESS_FETCH_MS = 10_000;

async function call(origin: string, method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${origin}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(HARNESS_FETCH_MS),
    });
    text = await res.text();
  } catch (error) {
    const why = (error as Error).name === 'TimeoutError' ? `no answer within ${HARNESS_FETCH_MS / 1000} s` : ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
    throw new BenchError(`${method} ${origin}${path.replace(/\?.*$/, '')}: ${why}`, 1, { cause: error });
  }
  let parsed: Answer['body'];
  try {
    parsed = JSON.parse(text) as Answer['body'];
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

function refusal(a: Answer): string {
  return `${a.status}${a.body?.error?.code ? ` ${a.body.error.code}` : ''}${a.body?.error?.message ? `: ${a.body.error.message}` : ''}`;
}

/** Run `work` over `items`, `n` at a time, in order of start. */
async function pool<T, R>(items: T[], n: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const lane = async () => {
    // After a failure the other lanes finish what they hold and take nothing more.
    while (next < items.length && !failed) {
      const i = next++;
      try {
        out[i] = await work(items[i] as T);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, lane));
  return out;
}

/**
 * Register and log in `count` users with fresh usernames and passwords. A
 * refusal stops at once with what the target said; 429 names the setting that
 * limits registrations per client address.
 *
 * @example const users = await registerUsers('http://127.0.0.1:8000', 10);
 */
export async function registerUsers(origin: string, count: number, concurrency = 4, log?: (line: string) => void): Promise<PoolUser[]> {
  if (count === 0) return [];
  const run = randomBytes(4).toString('hex');
  log?.(`registering and logging in ${count} user${count > 1 ? 's' : ''} (bench_${run}_*)`);
  let registered = 0;
  return pool(
    Array.from({ length: count }, (_, i) => i),
    concurrency,
    async (index) => {
      const username = `bench_${run}_${index}`;
      const password = randomBytes(18).toString('base64url');
      const credential = { type: 'password', password };
      const reg = await call(origin, 'POST', '/user/register', { identities: [{ type: 'username', value: username }], credential });
      if (reg.status === 429) {
        throw new BenchError(
          `registering users: ${origin} answered ${refusal(reg)} after ${registered} of ${count} — registrations are limited per client address ` +
            '([scale.auth] register_attempts_per_address, SVC_REGISTER_ATTEMPTS_PER_ADDRESS, default 100 per rate_window_seconds): use fewer users or raise it on the target',
        );
      }
      if (reg.status !== 201) throw new BenchError(`registering user ${username}: ${origin} answered ${refusal(reg)}`);
      registered++;
      const login = await call(origin, 'POST', '/user/login', { identity: { type: 'username', value: username }, credential });
      const data = login.body?.data;
      if (login.status !== 200 || typeof data?.token !== 'string') throw new BenchError(`logging in user ${username}: ${origin} answered ${refusal(login)}`);
      return { index, username, user_id: String(data.user_id), token: data.token };
    },
  );
}

/** The endpoint of a walker or function: the declared one, else the conventional route. */
function routeFor(api: ApiIndex | undefined, kind: 'walker' | 'function', name: string, atNode: boolean, field: string): ApiRoute {
  const id = `${kind}_${name}${atNode ? '_at_node' : ''}`;
  const found = api?.get(id);
  if (found) return found;
  if (api) {
    const known = [...api.keys()].filter((k) => k.startsWith(`${kind}_`) && !k.endsWith('_at_node')).map((k) => k.slice(kind.length + 1));
    throw new BenchError(`${field}: the target has no ${kind} ${name}${atNode ? ' that can be spawned at a node' : ''} (its ${kind}s: ${known.join(', ') || 'none'}; WebSocket walkers go in ws)`);
  }
  return { method: 'POST', template: `/${kind}/${name}${atNode ? '/{node_id}' : ''}`, secured: false, op: {} };
}

function queryString(fields: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) q.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Run a request's `at.setup` walker as `user` and take the id of the node it reported. */
async function setupNode(origin: string, api: ApiIndex | undefined, r: ScenarioRequest, i: number, headers: Record<string, string>, who: string): Promise<string> {
  const at = r.at as NonNullable<ScenarioRequest['at']>;
  const route = routeFor(api, 'walker', at.setup, false, `requests[${i}].at.setup`);
  const report = at.report ?? 0;
  const answer = await call(origin, route.method, route.template, route.method === 'GET' ? undefined : (at.body ?? {}), headers);
  if (answer.status >= 300) throw new BenchError(`requests[${i}].at: the setup walker ${at.setup} (${who}) answered ${refusal(answer)}`);
  const reports = (answer.body?.data as { reports?: unknown[] } | undefined)?.reports;
  const node = Array.isArray(reports) ? reports[report] : undefined;
  const id = isObject(node) ? node.id : undefined;
  if (typeof id !== 'string') throw new BenchError(`requests[${i}].at: the setup walker ${at.setup} reported no node at reports[${report}] (it reported ${JSON.stringify(reports ?? null).slice(0, 200)})`);
  return id;
}

/**
 * Turn a scenario into the engine's plan against `origin`: users registered
 * and logged in, setup walkers run once per user, every request resolved to
 * its method and path (the target's OpenAPI document says which), its body
 * kept as JSON text, per user. `settings` are the figures after flags.
 *
 * @example
 * const { plan } = await prepare(scenario, 'http://127.0.0.1:8000', { duration: 10, warmup: 2, connections: 64, threads: 1 });
 */
export async function prepare(
  scenario: Scenario,
  origin: string,
  settings: { duration: number; warmup: number; connections?: number; rate?: number; threads: number },
  opts: PrepareOptions = {},
): Promise<Prepared> {
  const api = opts.api === null ? undefined : (opts.api ?? (await fetchApi(origin)));
  const requests = scenario.requests ?? [];
  const userCount = scenario.users ?? 0;
  // Resolve every route before registering anyone: a wrong name fails fast.
  // Whether there are users is known only now: --users wins over the file.
  const needUsers = (field: string) => new BenchError(`${field} needs users: set users > 0 in the scenario, or --users n`);
  if (scenario.ws?.auth && userCount === 0) throw needUsers('ws.auth');
  const routes = requests.map((r, i) => {
    const field = `requests[${i}]`;
    if (r.auth === true && userCount === 0) throw needUsers(`${field}.auth`);
    if (r.path !== undefined) return { method: (r.method ?? 'GET').toUpperCase(), template: r.path, secured: false, op: {} } satisfies ApiRoute;
    const kind = r.walker !== undefined ? 'walker' : 'function';
    const route = routeFor(api, kind, (r.walker ?? r.function) as string, r.at !== undefined, `${field}.${kind}`);
    const auth = r.auth ?? userCount > 0;
    if (route.secured && !auth) {
      throw new BenchError(`${field} (${requestName(r)}) needs a signed-in user (the target asks for a bearer token): ${userCount === 0 ? 'set users > 0 (or --users n)' : 'remove auth: false'}`);
    }
    const needs = [...route.template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string).filter((p) => p !== 'node_id' || r.at === undefined);
    if (typeof r.body === 'function' && (needs.length > 0 || route.method === 'GET' || route.method === 'HEAD')) {
      throw new BenchError(`${field}.body: a body function cannot fill ${needs.length ? `the path parameter {${needs[0]}} of ` : 'the query of '}${route.method} ${route.template}: give a fixed body`);
    }
    const body = isObject(r.body) ? r.body : {};
    for (const p of needs) if (body[p] === undefined) throw new BenchError(`${field}.body: ${route.method} ${route.template} needs the field ${p} (it goes in the path)`);
    return route;
  });
  const users = await registerUsers(origin, userCount, opts.concurrency ?? 4, opts.log);
  const setups = requests.filter((r) => r.at).length;
  if (setups) opts.log?.(`running ${setups} setup walker${setups > 1 ? 's' : ''} for ${Math.max(1, users.length)} user${users.length > 1 ? 's' : ''}`);
  const prepared: PreparedRequest[] = [];
  const described: Prepared['described'] = [];
  for (const [i, r] of requests.entries()) {
    const route = routes[i] as ApiRoute;
    const name = requestName(r);
    const auth = r.auth ?? userCount > 0;
    const who: ({ index: number; token?: string })[] = auth ? users : [{ index: -1 }];
    const fixed = typeof r.body === 'function' ? undefined : isObject(r.body) ? { ...r.body } : undefined;
    let template = route.template;
    // Path parameters come from the body's fields (and leave the body).
    for (const m of route.template.matchAll(/\{(\w+)\}/g)) {
      const p = m[1] as string;
      if (p === 'node_id' && r.at) continue;
      template = template.replace(`{${p}}`, encodeURIComponent(String(fixed?.[p])));
      if (fixed) delete fixed[p];
    }
    const bodyless = route.method === 'GET' || route.method === 'HEAD';
    const query = bodyless && fixed ? queryString(fixed) : '';
    const bodyText = bodyless ? undefined : fixed !== undefined ? JSON.stringify(fixed) : r.path === undefined && typeof r.body !== 'function' ? '{}' : undefined;
    const variants = await pool(who, 4, async (u) => {
      const headers: Record<string, string> = {};
      for (const [h, v] of Object.entries(r.headers ?? {})) headers[h.toLowerCase()] = v;
      if (!bodyless && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
      if (u.token !== undefined) headers.authorization = `Bearer ${u.token}`;
      let path = `${template}${query}`;
      if (r.at) path = path.replace('{node_id}', await setupNode(origin, api, r, i, headers, u.index < 0 ? 'as a guest' : `as user ${u.index}`));
      return { path, headers, user: u.index, ...(bodyText === undefined ? {} : { body: bodyText }) };
    });
    prepared.push({
      name,
      method: route.method,
      variants,
      weight: r.weight ?? 1,
      ...(typeof r.body === 'function' ? { generator: { module: opts.module as string, index: i } } : {}),
    });
    if (typeof r.body === 'function' && !opts.module) throw new BenchError(`requests[${i}].body: a body function needs the scenario's module file`);
    described.push({ name, method: route.method, path: route.template, weight: r.weight ?? 1 });
  }
  const open = settings.rate !== undefined;
  const plan: EnginePlan = {
    origin,
    requests: prepared,
    mode: open ? 'open' : 'closed',
    connections: settings.connections ?? (open ? 256 : 64),
    ...(open ? { rate: settings.rate } : {}),
    duration_s: settings.duration,
    warmup_s: settings.warmup,
    threads: settings.threads,
    ...(opts.timeoutMs !== undefined ? { timeout_ms: opts.timeoutMs } : {}),
  };
  return { plan, users, described };
}
