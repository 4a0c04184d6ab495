/**
 * The service-to-service client (README *Calls between svc apps*): calls another
 * svc app's public functions (`POST /function/<name>`) and walkers
 * (`POST /walker/<Name>`) over HTTP, as if they were local.
 *
 * A provider's URL is, in order: the test client registered for it, the URL
 * given to {@link SvClient.register}, `SVC_SV_<MODULE>_URL`, else the
 * `ensureSvService` hook (by default: start `<module>.ts` beside the entry
 * file as a sibling process, which registers its URL).
 *
 * The default policy, per provider and per thread:
 * - keep-alive connections (an undici `Pool` per provider URL);
 * - the caller's `Authorization` header and `X-Trace-Id` forwarded (inside a
 *   walker or function run: the request's own);
 * - retries, with exponential backoff and full jitter, of failures that
 *   happen before the request reached the provider only — connection
 *   refused, DNS, connect timeout — never an answer (a 4xx or a 5xx), never
 *   a request whose body may have been sent (a reset mid-call);
 * - `rpc_timeout` for the whole call, retries included (504 `SV_TIMEOUT`):
 *   each attempt gets what is left of it as undici's headers and body timeouts;
 * - one circuit breaker (cockatiel) per provider, shared by its functions
 *   and walkers: consecutive failures (transport, timeout, 502/503/504) open
 *   it, then calls fail fast (503 `SV_UNAVAILABLE`) until a trial call after
 *   `breaker_half_open_seconds` succeeds.
 */
import { dirname, resolve as resolvePath } from 'node:path';
import { realpathSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Dispatcher, Pool } from 'undici';

/** undici, loaded with the first call to another service: an app that makes no `sv` call never loads it. */
const undici = (): typeof import('undici') => createRequire(import.meta.url)('undici') as typeof import('undici');
import {
  BrokenCircuitError,
  circuitBreaker,
  CircuitState,
  ConsecutiveBreaker,
  ExponentialBackoff,
  handleAll,
  handleWhen,
  type IPolicy,
  retry,
  wrap,
  type CircuitBreakerPolicy,
} from 'cockatiel';
import { callingRun } from '../../actors/walker/index.ts';
// The header that marks a call as an `sv` call (the provider keeps class names, and serves public endpoints only).
import { SV_HEADER } from '../http/index.ts';
import { BoundaryError, encodeBoundary, knownTypes, type KnownTypes, rehydrate, RemoteWalker, remoteWalkerClass } from './boundary.ts';
import { SvCallError, type SvTarget } from './errors.ts';
import { checkModuleName, checkUrl, timeoutVariable, urlVariable } from './names.ts';


/** The policy's settings (`[scale.sv]`), in milliseconds. */
export interface SvSettings {
  rpcTimeoutMs: number;
  /** Per module, over `rpcTimeoutMs`. */
  rpcTimeoutsMs: Record<string, number>;
  retries: number;
  retryBackoffMs: number;
  breakerFailures: number;
  breakerHalfOpenMs: number;
  autoStart: boolean;
}

export const SV_DEFAULTS: SvSettings = {
  rpcTimeoutMs: 30_000,
  rpcTimeoutsMs: {},
  retries: 2,
  retryBackoffMs: 100,
  breakerFailures: 5,
  breakerHalfOpenMs: 5_000,
  autoStart: true,
};

/** What the runtime of this thread tells the client (`svc start` binds it on every worker). */
export interface SvBinding {
  /** Where module files are found: the folder of the consumer's entry file. */
  baseDir: string;
  settings: SvSettings;
  /** Start (or find) a module's sibling process; resolves to its URL (the process's starter, on the main thread). */
  ensure?: (module: string, baseDir: string) => Promise<string>;
}

/** An in-process app standing in for a provider (`testApp(...)` has this shape). */
export interface SvTestClient {
  inject(request: { method: string; url: string; headers?: Record<string, string>; body?: unknown }): Promise<{ status: number; json(): unknown }>;
}

/** Per call: what to forward when the call is not made from inside a request's run (a script, a test). */
export interface SvCallOptions {
  /** The `Authorization` header to send (default: the calling run's request's). */
  authorization?: string;
  /** The trace id to send (default: the calling run's). */
  traceId?: string;
}

/** The plugin hooks: replace any of them with {@link SvClient.plugin}. */
export interface SvHooks {
  /** Make `module` reachable and end by calling `sv.register(module, url)`; idempotent and safe to call concurrently. */
  ensureSvService(module: string, basePath: string): Promise<void>;
  /** Call a function; resolves to its return value. */
  svServiceCall(module: string, fn: string, args: Record<string, unknown>, options?: SvCallOptions): Promise<unknown>;
  /** Spawn a walker; resolves to the rehydrated walker with `reports` attached. */
  svWalkerCall(module: string, walker: string, args: Record<string, unknown>, stubCls?: abstract new (...a: never[]) => unknown, options?: SvCallOptions): Promise<RemoteWalker>;
}

/** What an `sv` call answers: a provider's envelope, with the status it came with. */
interface Answer {
  status: number;
  envelope: { ok?: unknown; data?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined;
  text: string;
}

/** The largest answer a call takes (64 MiB). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** The call's rpc_timeout ran out (between attempts, or during one). */
class DeadlineExceeded extends Error {
  constructor() {
    super('rpc_timeout ran out');
  }
}

/** undici's timeouts of a request (headers or body too late): the call's deadline. */
const TIMED_OUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** A provider answered 502/503/504: it counts against its circuit (thrown inside the policy, never retried). */
class ProviderUnhealthy extends Error {
  constructor(readonly answer: Answer) {
    super(`the provider answered ${answer.status}${answerError(answer)}`);
  }
}

/** Codes of failures before the request reached the provider: retrying them cannot run a call twice. */
const BEFORE_SENDING = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'EADDRNOTAVAIL']);

function errorCode(error: unknown): string | undefined {
  let e: unknown = error;
  for (let i = 0; i < 4 && e; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return (error as { code?: string } | undefined)?.code;
}

function beforeSending(error: unknown): boolean {
  const code = errorCode(error);
  return code !== undefined && BEFORE_SENDING.has(code);
}

function answerError(answer: Answer): string {
  const e = answer.envelope?.error;
  if (e && typeof e === 'object') return `: ${String(e.code ?? 'ERROR')}: ${String(e.message ?? '')}`;
  return answer.text ? `: ${answer.text.slice(0, 200)}` : '';
}

/** A provider: its URL's connection pool (per URL), its circuit and policy (per module). */
interface Provider {
  breaker: CircuitBreakerPolicy;
  policy: IPolicy;
  timeoutMs: number;
  /** Consecutive failures that open the circuit. */
  failures: number;
}

/**
 * @example
 * import { sv } from 'svc';
 * sv.register('billing', 'http://billing:8000');
 * const billing = sv.import<typeof import('./billing.ts')>('billing');
 * const total = await billing.charge({ amount: 5 });
 */
export class SvClient {
  private readonly urls = new Map<string, { url: string; auto: boolean }>();
  private readonly testClients = new Map<string, SvTestClient>();
  private readonly pools = new Map<string, Pool>();
  private readonly providers = new Map<string, Provider>();
  private readonly ensuring = new Map<string, Promise<void>>();
  /** rpc_timeout given to {@link register}, by module (ms). */
  private readonly timeouts = new Map<string, number>();
  private bindings: SvBinding[] = [];
  private own: ((module: string, baseDir: string) => Promise<string>) | undefined;
  private hooksInUse: SvHooks;
  /** The default hooks (what {@link plugin} replaces). */
  readonly defaults: SvHooks;

  constructor(private readonly localStarter?: () => (module: string, baseDir: string) => Promise<string>) {
    this.defaults = {
      ensureSvService: (module, basePath) => this.defaultEnsure(module, basePath),
      svServiceCall: (module, fn, args, options) => this.callFunction(module, fn, args, options),
      svWalkerCall: (module, walker, args, stubCls, options) => this.spawnWalker(module, walker, args, stubCls, options),
    };
    this.hooksInUse = { ...this.defaults };
  }

  // ---- registration ----------------------------------------------------------

  /** Serve `module` from `url` from now on (over `SVC_SV_<MODULE>_URL` and auto-start). */
  register(module: string, url: string, options: { rpcTimeout?: number } = {}): void {
    checkModuleName(module);
    const checked = checkUrl(url, `sv.register('${module}')`);
    if (options.rpcTimeout !== undefined) {
      if (typeof options.rpcTimeout !== 'number' || !(options.rpcTimeout > 0)) throw new TypeError(`sv.register('${module}', url, { rpcTimeout }): seconds > 0, got ${JSON.stringify(options.rpcTimeout)}`);
      this.timeouts.set(module, options.rpcTimeout * 1000);
      this.providers.delete(module); // its policy is made again with the new timeout (the circuit starts closed)
    }
    this.setUrl(module, checked, false);
  }

  /** Forget `module`'s registered URL; whether one was registered. */
  unregister(module: string): boolean {
    checkModuleName(module);
    return this.urls.delete(module);
  }

  /** Calls to `module` go to this in-process app (no socket), until unregistered. */
  registerTestClient(module: string, client: SvTestClient): void {
    checkModuleName(module);
    if (typeof client?.inject !== 'function') throw new TypeError(`sv.registerTestClient('${module}', client): client must have inject() (a testApp)`);
    this.testClients.set(module, client);
  }

  unregisterTestClient(module: string): boolean {
    return this.testClients.delete(module);
  }

  clearTestClients(): void {
    this.testClients.clear();
  }

  /** The URL `module` is served from: registered, else `SVC_SV_<MODULE>_URL`; throws when neither is known. */
  resolveUrl(module: string): string {
    checkModuleName(module);
    const known = this.urls.get(module);
    if (known) return known.url;
    const variable = urlVariable(module);
    const fromEnv = process.env[variable];
    if (fromEnv) return checkUrl(fromEnv, variable);
    throw new SvCallError('SV_UNKNOWN_SERVICE', { module, name: '*', kind: 'function' }, `no URL for service ${module}: call sv.register('${module}', url), set ${variable}, or let it start (a ${module}.ts beside the entry file)`);
  }

  // ---- hooks -----------------------------------------------------------------

  /** The hooks in use. */
  get hooks(): Readonly<SvHooks> {
    return this.hooksInUse;
  }

  /** Replace some hooks; returns a function that puts the previous ones back. */
  plugin(hooks: Partial<SvHooks>): () => void {
    const before = this.hooksInUse;
    for (const [name, hook] of Object.entries(hooks)) {
      if (!(name in this.defaults)) throw new TypeError(`sv.plugin: unknown hook ${name} (ensureSvService, svServiceCall, svWalkerCall)`);
      if (typeof hook !== 'function') throw new TypeError(`sv.plugin: ${name} must be a function`);
    }
    this.hooksInUse = { ...before, ...hooks };
    return () => {
      this.hooksInUse = before;
    };
  }

  // ---- the runtime's binding -------------------------------------------------

  /** Bind this thread's runtime (base folder, settings, starter); returns the unbinding. */
  bind(binding: SvBinding): () => void {
    this.bindings.push(binding);
    return () => {
      const i = this.bindings.lastIndexOf(binding);
      if (i >= 0) this.bindings.splice(i, 1);
    };
  }

  private binding(): SvBinding {
    const bound = this.bindings[this.bindings.length - 1];
    if (bound) return bound;
    return { baseDir: scriptDir(), settings: settingsFromEnv() };
  }

  // ---- calls -----------------------------------------------------------------

  /** Call `module`'s public function `fn`; resolves to its return value (rehydrated with `types`). */
  async callFunction(module: string, fn: string, args: Record<string, unknown>, options: SvCallOptions & { types?: KnownTypes } = {}): Promise<unknown> {
    const target: SvTarget = { module, name: fn, kind: 'function' };
    const answer = await this.send(target, `/function/${encodeURIComponent(fn)}`, args, options);
    const data = answer.envelope?.data as { result?: unknown } | undefined;
    return readable(target, () => rehydrate(data?.result ?? null, options.types ?? new Map()));
  }

  /** Spawn `module`'s public walker; resolves to it (its fields as the run left them, `reports` attached). */
  async spawnWalker(module: string, walker: string, args: Record<string, unknown>, stubCls?: abstract new (...a: never[]) => unknown, options: SvCallOptions & { types?: KnownTypes } = {}): Promise<RemoteWalker> {
    const target: SvTarget = { module, name: walker, kind: 'walker' };
    const answer = await this.send(target, `/walker/${encodeURIComponent(walker)}`, args, options);
    const types = options.types ?? new Map();
    const data = (answer.envelope?.data ?? {}) as { reports?: unknown };
    const cls = stubCls ?? types.get(walker) ?? remoteWalkerClass(walker);
    const instance = Object.create(cls.prototype as object) as RemoteWalker;
    // Its fields are those it was spawned with (what its run did with them stays on the provider's side, as for
    // any HTTP caller: only its reports come back); defined, so no key can become the prototype.
    for (const [k, v] of Object.entries((encodeBoundary(args ?? {}) ?? {}) as Record<string, unknown>)) {
      Object.defineProperty(instance, k, { value: rehydrate(v, types), enumerable: true, writable: true, configurable: true });
    }
    instance.reports = Array.isArray(data.reports) ? readable(target, () => rehydrate(data.reports, types) as unknown[]) : [];
    return instance;
  }

  /** One call: its arguments checked, its provider found, the policy applied, the envelope read. */
  private async send(target: SvTarget, path: string, args: Record<string, unknown>, options: SvCallOptions): Promise<Answer> {
    checkModuleName(target.module);
    let body: string;
    try {
      if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) throw new BoundaryError('args', 'must be an object of named arguments');
      body = JSON.stringify(encodeBoundary(args ?? {}) ?? {});
    } catch (error) {
      if (error instanceof BoundaryError) throw new SvCallError('SV_BOUNDARY', target, `${error.message} (nothing was sent)`, { cause: error });
      throw error;
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', [SV_HEADER]: '1' };
    const run = callingRun()?.run;
    const authorization = options.authorization ?? run?.authorization;
    const traceId = options.traceId ?? run?.traceId;
    if (authorization) headers.authorization = authorization;
    if (traceId) headers['x-trace-id'] = traceId;

    const test = this.testClients.get(target.module);
    const answer = test ? await this.inject(test, target, path, body, headers) : await this.overHttp(target, path, body, headers);
    if (answer.envelope?.ok === true) return answer;
    const provider = answer.envelope?.error;
    throw new SvCallError('SV_CALL_FAILED', target, answer.envelope ? `${String(provider?.code ?? 'ERROR')}: ${String(provider?.message ?? '')}` : `the provider answered ${answer.status} without an svc envelope${answer.text ? `: ${answer.text.slice(0, 200)}` : ''}`, {
      details: { provider: { status: answer.status, code: provider?.code ?? null, ...(provider?.details === undefined ? {} : { details: provider.details }) } },
    });
  }

  private async inject(client: SvTestClient, target: SvTarget, path: string, body: string, headers: Record<string, string>): Promise<Answer> {
    let res: { status: number; json(): unknown };
    try {
      res = await client.inject({ method: 'POST', url: path, headers, body });
    } catch (error) {
      throw new SvCallError('SV_CALL_FAILED', target, `the test client failed: ${(error as Error).message}`, { cause: error });
    }
    let envelope: Answer['envelope'];
    try {
      envelope = res.json() as Answer['envelope'];
    } catch {
      envelope = undefined;
    }
    return { status: res.status, envelope, text: '' };
  }

  private async overHttp(target: SvTarget, path: string, body: string, headers: Record<string, string>): Promise<Answer> {
    const provider = this.provider(target.module);
    let attempts = 0;
    // Found (and started, if need be) before the policy: a sibling's start has its own limit, not rpc_timeout.
    const first = await this.urlOf(target);
    // rpc_timeout covers the whole call: each attempt gets what is left of it (undici's own timers, no timer of ours).
    const deadline = performance.now() + provider.timeoutMs;
    try {
      return (await provider.policy.execute(async () => {
        const left = Math.floor(deadline - performance.now());
        if (left <= 0) throw new DeadlineExceeded();
        const url = attempts === 0 ? first : await this.urlOf(target);
        attempts++;
        try {
          return await this.attempt(url, path, body, headers, left);
        } catch (error) {
          // A sibling that moved (restarted on another port): ask its starter again before the next attempt.
          if (beforeSending(error) && this.urls.get(target.module)?.auto) this.urls.delete(target.module);
          throw error;
        }
      })) as Answer;
    } catch (error) {
      throw this.failure(target, provider, error, attempts);
    }
  }

  /** One HTTP attempt: an answer (any status but 502/503/504), or a throw (a transport failure, an unhealthy provider). */
  private async attempt(url: string, path: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<Answer> {
    const { origin, prefix } = this.base(url);
    // One timer ends the whole attempt at the deadline (undici's body timeout alone measures idle time between
    // chunks). An EventEmitter as undici's signal: an AbortSignal.timeout() cost ~15 µs a call (bench/sv.ts).
    const stop = new EventEmitter();
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      stop.emit('abort');
    }, timeoutMs);
    let text: string;
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool(origin).request({ method: 'POST', path: `${prefix}${path}`, headers, body, signal: stop, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
      text = await res.body.text();
    } catch (error) {
      if (late) throw new DeadlineExceeded();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    let envelope: Answer['envelope'];
    try {
      envelope = text ? (JSON.parse(text) as Answer['envelope']) : undefined;
    } catch {
      envelope = undefined;
    }
    if (envelope !== undefined && (typeof envelope !== 'object' || envelope === null || !('ok' in envelope))) envelope = undefined;
    const answer: Answer = { status: res.statusCode, envelope, text: envelope ? '' : text };
    if (res.statusCode === 502 || res.statusCode === 503 || res.statusCode === 504) throw new ProviderUnhealthy(answer);
    return answer;
  }

  /** A failure of the policy as the original product's error. */
  private failure(target: SvTarget, provider: Provider, error: unknown, attempts: number): Error {
    if (error instanceof SvCallError) return error;
    if (error instanceof BrokenCircuitError) {
      return new SvCallError('SV_UNAVAILABLE', target, `circuit open: ${target.module} failed ${provider.failures} times in a row; calls fail fast until a trial call succeeds`, { cause: error, details: { attempts } });
    }
    if (error instanceof DeadlineExceeded || TIMED_OUT.has(errorCode(error) ?? '')) return new SvCallError('SV_TIMEOUT', target, `no answer within rpc_timeout (${provider.timeoutMs} ms)`, { cause: error, details: { attempts } });
    if (error instanceof ProviderUnhealthy) {
      const e = error.answer.envelope?.error;
      return new SvCallError('SV_CALL_FAILED', target, error.message.replace(/^the provider answered \d+: /, ''), { details: { attempts, provider: { status: error.answer.status, code: e?.code ?? null } } });
    }
    const code = errorCode(error);
    const message = (error as Error).message ?? String(error);
    return new SvCallError('SV_CALL_FAILED', target, `${message}${code && !message.includes(code) ? ` (${code})` : ''}`, { cause: error, details: { attempts, ...(code ? { transport: code } : {}) } });
  }

  /** The module's URL: registered, environment, else ensured (auto-start) and then registered. */
  private async urlOf(target: SvTarget): Promise<string> {
    const module = target.module;
    const known = this.urls.get(module);
    if (known) return known.url;
    const variable = urlVariable(module);
    if (process.env[variable]) return checkUrl(process.env[variable], variable);
    const binding = this.binding();
    if (!binding.settings.autoStart && this.hooksInUse.ensureSvService === this.defaults.ensureSvService) {
      throw new SvCallError('SV_UNKNOWN_SERVICE', target, `no URL for service ${module}: call sv.register('${module}', url) or set ${variable} ([scale.sv] auto_start is off)`);
    }
    let pending = this.ensuring.get(module);
    if (!pending) {
      pending = Promise.resolve()
        .then(() => this.hooksInUse.ensureSvService(module, binding.baseDir))
        .finally(() => this.ensuring.delete(module));
      this.ensuring.set(module, pending);
    }
    try {
      await pending;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // Nothing to start (no module file): as unknown as a service with no URL.
      if (code === 'SV_UNKNOWN_SERVICE') throw new SvCallError('SV_UNKNOWN_SERVICE', target, (error as Error).message.replace(/^sv-to-sv [^:]+ failed: /, ''), { cause: error });
      throw new SvCallError('SV_UNAVAILABLE', target, `service ${module} could not be started: ${(error as Error).message}`, { cause: error });
    }
    const url = this.urls.get(module)?.url;
    if (!url) throw new SvCallError('SV_UNKNOWN_SERVICE', target, `ensureSvService('${module}') ended without sv.register('${module}', url)`);
    return url;
  }

  private async defaultEnsure(module: string, basePath: string): Promise<void> {
    const binding = this.binding();
    const start = binding.ensure ?? (this.own ??= this.localStarter?.());
    if (!start) throw new Error('no starter: register its URL');
    const url = await start(module, resolvePath(basePath));
    this.setUrl(module, checkUrl(url, `the URL of ${module}`), true);
  }

  private setUrl(module: string, url: string, auto: boolean): void {
    this.urls.set(module, { url, auto });
  }

  private readonly bases = new Map<string, { origin: string; prefix: string }>();

  /** A base URL's origin and path prefix (parsed once per URL). */
  private base(url: string): { origin: string; prefix: string } {
    let b = this.bases.get(url);
    if (!b) {
      const u = new URL(url);
      b = { origin: u.origin, prefix: u.pathname === '/' ? '' : u.pathname };
      this.bases.set(url, b);
    }
    return b;
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      // Idle connections are let go before a provider would close them (uWS and node:http keep them about 5–10 s).
      // An answer larger than MAX_ANSWER_BYTES fails the call (a provider cannot fill this process's memory).
      pool = new (undici().Pool)(origin, { connections: 64, keepAliveTimeout: 4_000, keepAliveMaxTimeout: 4_000, pipelining: 1, maxResponseSize: MAX_ANSWER_BYTES });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  private provider(module: string): Provider {
    let provider = this.providers.get(module);
    if (provider) return provider;
    const s = this.binding().settings;
    const fromEnv = Number(process.env[timeoutVariable(module)]);
    // register(…, { rpcTimeout }) > SVC_SV_<MODULE>_RPC_TIMEOUT > [scale.sv] rpc_timeouts > rpc_timeout.
    const timeoutMs = this.timeouts.get(module) ?? (Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv * 1000 : (s.rpcTimeoutsMs[module] ?? s.rpcTimeoutMs));
    const breaker = circuitBreaker(handleAll, { halfOpenAfter: s.breakerHalfOpenMs, breaker: new ConsecutiveBreaker(s.breakerFailures) });
    const retries = retry(handleWhen(beforeSending), { maxAttempts: s.retries, backoff: new ExponentialBackoff({ initialDelay: s.retryBackoffMs, maxDelay: 2_000 }) });
    // No cockatiel timeout policy: its AbortController per call cost ~50 µs (bench/sv.ts); the deadline rides on undici's timers.
    // The breaker outside the retries: it counts calls, not attempts (a call that spent its retries is one failure).
    const policy = wrap(breaker, retries) as unknown as IPolicy;
    provider = { breaker, policy, timeoutMs, failures: s.breakerFailures };
    this.providers.set(module, provider);
    return provider;
  }

  /** The state of `module`'s circuit in this thread: `closed`, `open`, `half-open` (or `none` before any call). */
  circuit(module: string): 'closed' | 'open' | 'half-open' | 'none' {
    const state = this.providers.get(module)?.breaker.state;
    if (state === undefined) return 'none';
    return state === CircuitState.Closed ? 'closed' : state === CircuitState.HalfOpen ? 'half-open' : 'open';
  }

  /** Close the connection pools and forget circuits and registrations made by auto-start (tests, shutdown). */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    this.providers.clear();
    for (const [module, entry] of this.urls) if (entry.auto) this.urls.delete(module);
    await Promise.all(pools.map((p) => p.close().catch(() => undefined)));
  }
}

/** An answer's value, rebuilt; one too deeply nested to rebuild is the provider's failure, not a crash. */
function readable<T>(target: SvTarget, rebuild: () => T): T {
  try {
    return rebuild();
  } catch (error) {
    throw new SvCallError('SV_CALL_FAILED', target, `the answer cannot be read: ${(error as Error).message}`, { cause: error });
  }
}

/** The folder of the script that runs (outside `svc start`): where its modules are found. */
function scriptDir(): string {
  const main = process.argv[1];
  if (main) {
    try {
      return dirname(realpathSync(main));
    } catch {
      // not a file: the current folder
    }
  }
  return process.cwd();
}

/** The settings outside a runtime: defaults and the `SVC_SV_*` environment. */
function settingsFromEnv(): SvSettings {
  const env = process.env;
  const num = (name: string, fallback: number, min: number): number => {
    const v = Number(env[name]);
    return env[name] !== undefined && env[name] !== '' && Number.isFinite(v) && v >= min ? v : fallback;
  };
  return {
    rpcTimeoutMs: num('SVC_SV_RPC_TIMEOUT', SV_DEFAULTS.rpcTimeoutMs / 1000, 0.001) * 1000,
    rpcTimeoutsMs: {},
    retries: Math.floor(num('SVC_SV_RETRIES', SV_DEFAULTS.retries, 0)),
    retryBackoffMs: num('SVC_SV_RETRY_BACKOFF_MS', SV_DEFAULTS.retryBackoffMs, 1),
    breakerFailures: Math.floor(num('SVC_SV_BREAKER_FAILURES', SV_DEFAULTS.breakerFailures, 1)),
    breakerHalfOpenMs: num('SVC_SV_BREAKER_HALF_OPEN_SECONDS', SV_DEFAULTS.breakerHalfOpenMs / 1000, 0.001) * 1000,
    autoStart: !/^(0|false|no|off)$/i.test(env.SVC_SV_AUTO_START ?? ''),
  };
}

export { knownTypes, RemoteWalker };
