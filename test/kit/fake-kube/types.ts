/**
 * The shapes the fake Kubernetes API server shares between its files: a stored object, the Status errors it
 * answers with, the options a test gives it, and the pod scripts and runtimes that stand in for a kubelet.
 */

/** A Kubernetes object as the fake stores it: plain JSON (typed loosely, as the API server's JSON is). */
export type Obj = { [key: string]: any };

/**
 * What a scripted pod does, as a kubelet would report it.
 *
 * @example
 * const crashing: PodScript = { state: 'CrashLoopBackOff', exitCode: 3, logs: 'Error: no database\n' };
 */
export interface PodScript {
  state: 'Running' | 'NotReady' | 'CrashLoopBackOff' | 'ImagePullBackOff' | 'ErrImagePull' | 'Unschedulable' | 'InitCrashLoopBackOff' | 'Pending' | 'Failed' | 'Succeeded';
  /** The exit code of the last (or only) run of a crashing, failed or succeeded container (1 by default; 0 for Succeeded). */
  exitCode?: number;
  /** What `GET …/pods/{name}/log` answers. */
  logs?: string;
  /** For Running: Ready only this long after the pod was created (0 by default). */
  readyAfterMs?: number;
  /** Replaces the message the kubelet would give (waiting, terminated or Unschedulable). */
  message?: string;
}

/**
 * A pod's containers really running (a child process, say), for the end-to-end test. The controller polls
 * `ready()` and `exited()` every tick to render the pod (Running and Ready, Running but not Ready, or, once
 * exited, CrashLoopBackOff with `lastState.terminated.exitCode`), answers `…/log` with `logs()`, and calls
 * `stop(terminationGracePeriodSeconds)` when the pod is deleted (scale-down, rollout, namespace or API delete),
 * removing the pod once it resolves.
 *
 * @example
 * const runtime: PodRuntime = {
 *   ready: async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true,
 *   exited: () => child.exitCode ?? undefined,
 *   logs: async () => output,
 *   stop: async (grace) => { child.kill('SIGTERM'); await exitedWithin(grace); },
 * };
 */
export interface PodRuntime {
  ready(): Promise<boolean>;
  /** The exit code once the process has exited; undefined while it runs. */
  exited(): number | undefined;
  logs(): Promise<string>;
  stop(graceSeconds: number): Promise<void>;
}

/**
 * A request as the fake recorded it.
 *
 * @example
 * api.requests.filter((r: FakeKubeRequest) => r.method === 'PATCH' && r.contentType === 'application/apply-patch+yaml');
 */
export interface FakeKubeRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  query: Record<string, string>;
  /** The Content-Type header without parameters ('' when none). */
  contentType: string;
  /** The body parsed (JSON, or YAML for apply patches); undefined when there is none or it does not parse. */
  body: unknown;
  /** For an exec the fake accepted: the command (the query keeps only the last `command`), container and channel protocol. */
  exec?: { command: string[]; container: string; protocol: string };
}

/**
 * A command's end of an exec, for a scripted `exec` (FakeKubeOptions).
 *
 * @example
 * const exec = async (_pod: FakeKubeObject, _container: string, command: string[], io: ExecIo) => {
 *   if (command[0] !== 'cat') return undefined; // run for real
 *   for await (const chunk of io.stdin) io.stdout(chunk);
 *   return 0;
 * };
 */
export interface ExecIo {
  /** What the client sends on stdin; ends when it closes stdin (v5) or leaves. Empty and ended without `stdin=true`. */
  stdin: NodeJS.ReadableStream & AsyncIterable<Buffer>;
  stdout(chunk: Buffer | string): void;
  stderr(chunk: Buffer | string): void;
  /** Aborted when the client closes the connection (or the pod stops): the command should end. */
  signal: AbortSignal;
  /** The pod's folder (`api.podRoot`), standing for its filesystem. */
  root: string;
}

/**
 * How the fake behaves.
 *
 * @example
 * const api = await startFakeKubeApi({ tickMs: 10, pods: (pod) => (pod.metadata.name.startsWith('web-') ? { state: 'CrashLoopBackOff' } : undefined) });
 */
export interface FakeKubeOptions {
  /** The bearer token requests must carry ('fake-token'). */
  token?: string;
  /** How often the controller reconciles, in ms (20). It also runs soon after every write. */
  tickMs?: number;
  /** How long a workload's new generation goes unobserved (status.observedGeneration lags), in ms (0). */
  observeDelayMs?: number;
  /** The node's InternalIP ('127.0.0.1'). */
  nodeAddress?: string;
  /** The script of a pod, asked once when the controller first sees it; undefined: Running (Succeeded for a Job's pod). */
  pods?: (pod: Obj) => PodScript | undefined;
  /** A real runtime for a pod, asked once when the controller first sees it (before `pods`); undefined: the script. */
  runner?: (pod: Obj) => Promise<PodRuntime> | undefined;
  /** 'pending': cert-manager never issues (a Certificate stays Ready False, no Secret). 'issue' by default. */
  certificates?: 'issue' | 'pending';
  /** The IP of a pod, asked once when the kubelet first sees it (a 127.0.0.N a test listens on, say); undefined: the next of 10.244.0.0/16. */
  podIp?: (pod: Obj) => string | undefined;
  /**
   * A scripted `exec`: resolves with the command's exit code (a rejection is the runtime's error, a 500 Status on
   * channel 3); undefined runs the command for real in the pod's folder, as without this option.
   */
  exec?: (pod: Obj, container: string, command: string[], io: ExecIo) => Promise<number> | undefined;
}

/** An error the fake answers with, as a `Status` object. */
export class KubeStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Obj,
  ) {
    super(message);
    this.name = 'KubeStatusError';
  }

  /** The `Status` body of the answer. */
  status(): Obj {
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, ...(this.details ? { details: this.details } : {}), code: this.code };
  }
}

/** The Status reason of an HTTP code, as the API server names it. */
export function reasonOf(code: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    406: 'NotAcceptable',
    409: 'Conflict',
    410: 'Expired',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[code] ?? (code >= 500 ? 'InternalError' : 'Unknown');
}

/** A deep copy of JSON. */
export function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** A plain object (not an array, not null). */
export function isObj(value: unknown): value is Obj {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Deep equality of JSON values (key order ignored). */
export function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => same(v, b[i]));
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => same(a[k], b[k]));
  }
  return false;
}

/** Now as the API server writes times: RFC 3339, whole seconds. */
export function timestamp(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

/** `n` random characters of the alphabet Kubernetes uses for generated names (no vowels, no 0/1/3). */
export function randomSuffix(n = 5): string {
  let out = '';
  for (let i = 0; i < n; i++) out += SAFE[Math.floor(Math.random() * SAFE.length)];
  return out;
}

/** Bytes made into the same alphabet (a template hash). */
export function safeEncode(bytes: Uint8Array, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += SAFE[(bytes[i] ?? 0) % SAFE.length];
  return out;
}
