/**
 * The orchestrator provider: each sandbox a pod in `[scale.sandbox]
 * namespace` on Kubernetes. A create takes a warm pod when the pool has one
 * (its code streamed in as one tar), else makes the code ConfigMap and a pod
 * whose init container unpacks it; then its NetworkPolicy and, unless
 * previews go through the proxy, its Service and Ingress. Files, commands and
 * logs go through the pod's exec and log subresources, so any member of the
 * cluster answers for any sandbox.
 *
 * The dev server's restarts are the kubelet's (`restartPolicy: Always`); the
 * supervisor sees a sandbox end when its pod does (failed, past its deadline,
 * deleted from outside) and gives it up as `error`.
 */
import { randomBytes } from 'node:crypto';
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sandboxError } from './errors.ts';
import { connectSandboxKube, statusOf, type SandboxKube } from './kube-seam.ts';
import {
  ANNOTATIONS,
  CONFIGMAP_LIMIT,
  codeConfigMap,
  defaultPolicy,
  INTERNAL_PORT,
  LABELS,
  namespaceObject,
  objectNames,
  pathOfKey,
  podName,
  previewUrl,
  roleBindingObject,
  roleObject,
  sandboxIngress,
  sandboxPod,
  sandboxPolicy,
  sandboxService,
  START_FILE,
  type KubeObject,
  type SandboxIdentity,
} from './kube-objects.ts';
import { listProjectFiles, SKIPPED_DIRS } from './paths.ts';
import { appDir, READY_TEXT } from './project.ts';
import { shellQuote, type StagedFile, WarmPool } from './warm-pool.ts';
import type { ExecOptions, RemoteFiles, Runner, SandboxRecord, SandboxSettings, Started } from './types.ts';

/** Most bytes a file read answers (as the other providers). */
const READ_CAP = 16 * 1024 * 1024;
/** Exit code of a file command when the file is not there. */
const NO_FILE = 44;
/** A pod or object no record names is left this long (a create in progress makes its record first, but a cleanup may have read the records before). */
const STRAY_MS = 5 * 60_000;

/** How often the dev server of a pod was restarted by the kubelet. */
function restartsOf(pod: Obj): number {
  return Number(pod.status?.containerStatuses?.find((c: { name: string }) => c.name === 'dev')?.restartCount ?? 0);
}

/** An exec the API server refused because the pod or its container does not run (yet, or any more). */
function notRunning(error: unknown, record: SandboxRecord): unknown {
  const status = statusOf(error);
  if (status === 400 || status === 404) return sandboxError('SANDBOX_NOT_RUNNING', `sandbox ${record.sandbox_id}: its pod does not run a dev container now (${(error as Error).message})`, { cause: error });
  return asSandboxError(error, `sandbox ${record.sandbox_id}`);
}

/** The code volume's items of a ConfigMap svc made (its keys, and the paths of escaped or hashed keys). */
function itemsOf(code: Obj): { key: string; path: string; mode?: number }[] {
  let map: Record<string, [string, number?]> = {};
  try {
    map = JSON.parse(code.metadata.annotations?.[ANNOTATIONS.files] ?? '{}') as Record<string, [string, number?]>;
  } catch {
    map = {};
  }
  return [...Object.keys(code.data ?? {}), ...Object.keys(code.binaryData ?? {})].map((key) => {
    const [path, mode] = map[key] ?? [pathOfKey(key)];
    return { key, path, ...(mode ? { mode } : {}) };
  });
}

type Obj = KubeObject & { spec?: any; status?: any };


/** The staged project (`create` wrote it on this host), file by file with its mode; never under the skipped folders. */
async function stagedFiles(record: SandboxRecord): Promise<Map<string, StagedFile>> {
  const app = appDir(record);
  const files = new Map<string, StagedFile>();
  for (const path of await listProjectFiles(app)) {
    const full = join(app, path);
    const info = await lstat(full);
    // A link the project holds is copied as the file it names within the project (the path checks kept it inside).
    files.set(path, { content: await readFile(full), mode: info.mode & 0o111 ? 0o755 : 0o644 });
  }
  return files;
}

/** A kube API refusal as a sandbox error (its status kept in the message); sandbox errors as they are. */
function asSandboxError(error: unknown, what: string): unknown {
  if (error instanceof Error && 'code' in error && typeof (error as { code: unknown }).code === 'string' && String((error as { code: string }).code).startsWith('SANDBOX_')) return error;
  const status = statusOf(error);
  if (status === undefined && !(error instanceof Error && error.name === 'KubeApiError')) return error;
  return sandboxError('SANDBOX_UNAVAILABLE', `${what}: the Kubernetes API server answered ${status ?? 'an error'}: ${(error as Error).message}`, { cause: error });
}

function identity(record: SandboxRecord): SandboxIdentity {
  return { sandbox_id: record.sandbox_id, user: record.user, project: record.project };
}

/**
 * @example
 * const runner = new OrchestratorRunner(settings); // [scale.sandbox] type = "orchestrator"
 */
export class OrchestratorRunner implements Runner {
  readonly type = 'orchestrator' as const;
  readonly host: string;
  readonly files: RemoteFiles;
  readonly #settings: SandboxSettings;
  #kube: Promise<SandboxKube> | undefined;
  readonly pool: WarmPool;

  constructor(
    settings: SandboxSettings,
    kube?: () => Promise<SandboxKube>,
    /** Where svc runs in the cluster (its service account is bound to the Role): `POD_SERVICE_ACCOUNT`, `POD_NAMESPACE`. */
    private readonly self: { serviceAccount?: string; namespace?: string } = { serviceAccount: process.env.POD_SERVICE_ACCOUNT, namespace: process.env.POD_NAMESPACE },
  ) {
    this.#settings = settings;
    this.host = `kubernetes/${settings.namespace}`;
    const connect = kube ?? connectSandboxKube;
    this.kube = () => (this.#kube ??= connect().catch((error: unknown) => {
      this.#kube = undefined;
      throw sandboxError('SANDBOX_UNAVAILABLE', `no Kubernetes cluster to run sandboxes on: ${(error as Error).message}`, { cause: error });
    }));
    this.pool = new WarmPool(settings, this.kube);
    this.files = {
      list: (record) => this.#list(record),
      read: (record, path) => this.#read(record, path),
      write: (record, path, content) => this.#write(record, path, content),
      remove: (record, path) => this.#remove(record, path),
    };
  }

  readonly kube: () => Promise<SandboxKube>;
  /** The namespace, Role and default policy were made (or found). */
  #opened = false;

  /** The namespace, the Role (bound to svc's service account when it runs in the cluster), the namespace's default policy; then the pool filled. */
  async open(): Promise<() => void> {
    const kube = await this.kube();
    const s = this.#settings;
    await ensure(kube, namespaceObject(s));
    await ensure(kube, roleObject(s));
    if (this.self.serviceAccount && this.self.namespace) await ensure(kube, roleBindingObject(s, this.self.serviceAccount, this.self.namespace));
    await ensure(kube, defaultPolicy(s, this.self.namespace));
    this.#opened = true;
    await this.pool.replenish();
    return () => undefined;
  }

  async prepare(record: SandboxRecord): Promise<Started> {
    const kube = await this.kube();
    const s = this.#settings;
    const files = await stagedFiles(record);
    let pod: string | undefined;
    try {
      return await this.#prepare(kube, record, files, (name) => (pod = name));
    } catch (error) {
      // Nothing of a create that failed is left: its pod (claimed or made) and its objects.
      if (pod) await kube.delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, namespace: s.namespace } }).catch(() => undefined);
      await removeObjects(kube, s.namespace, record.sandbox_id).catch(() => undefined);
      throw asSandboxError(error, 'the sandbox could not be made on the cluster');
    }
  }

  async #prepare(kube: SandboxKube, record: SandboxRecord, files: Map<string, StagedFile>, took: (pod: string) => void): Promise<Started> {
    const s = this.#settings;
    const who = identity(record);
    const url = previewUrl(s, record.sandbox_id);
    let started: Started;
    const claimed = s.warm_pool_size > 0 ? await this.pool.claim(who) : undefined;
    if (claimed) {
      took(claimed);
      started = { pod: claimed, warm: true, port: INTERNAL_PORT, url };
      await this.pool.inject(claimed, files);
      void this.pool.replenish().catch(() => undefined);
    } else {
      const { object, bytes } = codeConfigMap(s, who, files);
      if (bytes > CONFIGMAP_LIMIT) {
        if (s.warm_pool_size === 0) {
          throw sandboxError(
            'SANDBOX_TOO_LARGE',
            `the project is ${bytes} bytes, over the 1 MB a ConfigMap holds (node_modules, dist, .git and the like are left out already): make it smaller, or set [scale.sandbox] warm_pool_size above 0 to stream projects into pods`,
          );
        }
        // The pool is empty: a pod of its own that waits for its code, as a warm one does.
        const name = await this.pool.coldWaiting(who, podName(record.user, record.project, randomBytes(4).toString('hex')), took);
        started = { pod: name, warm: true, port: INTERNAL_PORT, url };
        await this.pool.inject(name, files);
      } else {
        await createOrKeep(kube, object);
        started = { pod: podName(record.user, record.project, randomBytes(4).toString('hex')), warm: false, port: INTERNAL_PORT, url };
      }
    }
    await createOrKeep(kube, sandboxPolicy(s, who, this.self.namespace));
    if (!s.proxy_mode) {
      await createOrKeep(kube, sandboxService(s, who));
      if (s.domain_template) await createOrKeep(kube, sandboxIngress(s, who));
    }
    return started;
  }

  async start(record: SandboxRecord): Promise<Started> {
    const kube = await this.kube();
    const s = this.#settings;
    if (!record.pod) throw sandboxError('SANDBOX_FAILED', 'the sandbox has no pod (it was not prepared)');
    if (record.warm) {
      if (!(await kube.read('v1', 'Pod', s.namespace, record.pod))) throw sandboxError('SANDBOX_FAILED', `its pod ${record.pod} is gone (a warm pod cannot be made again: create a new sandbox)`);
      await this.pool.signal(record.pod, identity(record));
      return {};
    }
    const existing = await kube.read('v1', 'Pod', s.namespace, record.pod);
    if (existing && !existing.metadata.deletionTimestamp && !['Failed', 'Succeeded'].includes((existing as Obj).status?.phase)) return {};
    // A new pod of its own (a restart after its pod ended, or the first start); the ended one goes.
    if (existing) await kube.delete(existing).catch(() => undefined);
    const name = existing ? podName(record.user, record.project, randomBytes(4).toString('hex')) : record.pod;
    const code = await kube.read('v1', 'ConfigMap', s.namespace, objectNames(record.sandbox_id).code);
    if (!code) throw sandboxError('SANDBOX_FAILED', `its code ConfigMap ${objectNames(record.sandbox_id).code} is gone`);
    await kube.create(sandboxPod(s, name, identity(record), itemsOf(code)));
    return { pod: name };
  }

  /** Polled no faster than this while a sandbox starts (each look is a request to the API server). */
  readonly readyPollMs = 250;
  /** Pods read in the last moment (the supervisor's alive and ready look at the same pod back to back). */
  readonly #pods = new Map<string, { at: number; pod: Obj | undefined }>();
  /** Pods whose log said the ready text (a log is read until it has, not after). */
  readonly #said = new Set<string>();

  async #pod(name: string): Promise<Obj | undefined> {
    const hit = this.#pods.get(name);
    if (hit && Date.now() - hit.at < 200) return hit.pod;
    const pod = (await (await this.kube()).read('v1', 'Pod', this.#settings.namespace, name)) as Obj | undefined;
    if (this.#pods.size > 10_000) this.#pods.clear();
    this.#pods.set(name, { at: Date.now(), pod });
    return pod;
  }

  async ready(record: SandboxRecord): Promise<boolean> {
    if (!record.pod) return false;
    const pod = await this.#pod(record.pod);
    const ready = (pod?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
    if (!ready || pod?.status?.phase !== 'Running') return false;
    if (this.#said.has(record.pod)) return true;
    if (!(await (await this.kube()).log(this.#settings.namespace, record.pod, 'dev')).includes(READY_TEXT)) return false;
    if (this.#said.size > 10_000) this.#said.clear();
    this.#said.add(record.pod);
    return true;
  }

  async alive(record: SandboxRecord): Promise<boolean> {
    if (!record.pod) return false;
    const pod = await this.#pod(record.pod);
    if (pod === undefined || pod.metadata.deletionTimestamp || ['Failed', 'Succeeded'].includes(pod.status?.phase)) return false;
    // The kubelet restarts a dev server that exits; one that keeps exiting is given up as the other providers do.
    return restartsOf(pod) <= this.#settings.max_restarts;
  }

  async exitOf(record: SandboxRecord): Promise<{ code?: number; removed?: boolean; reason?: string } | undefined> {
    if (!record.pod) return { removed: true };
    const pod = (await (await this.kube()).read('v1', 'Pod', this.#settings.namespace, record.pod)) as Obj | undefined;
    if (!pod || pod.metadata.deletionTimestamp) return { reason: `its pod ${record.pod} was deleted` };
    const phase = pod.status?.phase;
    if (phase === 'Failed' || phase === 'Succeeded') {
      const why = [pod.status?.reason, pod.status?.message].filter(Boolean).join(': ');
      return { reason: `its pod ${record.pod} ended (${phase}${why ? `, ${why}` : ''})` };
    }
    const code = pod.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode;
    const restarts = restartsOf(pod);
    if (restarts > this.#settings.max_restarts) return { reason: `the dev server exited ${restarts} times (max_restarts = ${this.#settings.max_restarts})${typeof code === 'number' ? `, last with exit code ${code}` : ''}` };
    return typeof code === 'number' ? { code } : undefined;
  }

  async stop(record: SandboxRecord): Promise<void> {
    if (!record.pod) return;
    this.#pods.delete(record.pod);
    this.#said.delete(record.pod);
    await (await this.kube()).delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: record.pod, namespace: this.#settings.namespace } });
  }

  async release(record: SandboxRecord): Promise<void> {
    await removeObjects(await this.kube(), this.#settings.namespace, record.sandbox_id);
  }

  async exec(record: SandboxRecord, command: string, options: ExecOptions): Promise<number> {
    if (!record.pod) throw sandboxError('SANDBOX_NOT_RUNNING', `sandbox ${record.sandbox_id} has no pod`);
    const { signal, timeoutMs } = options;
    if (signal?.aborted) throw signal.reason;
    const kube = await this.kube();
    // Killed in the pod too when the time is up, even if the connection is lost first.
    const seconds = Math.ceil(timeoutMs / 1000) + 1;
    const script = `cd /app && exec timeout -s KILL ${seconds} sh -c "$1"`;
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new Error('timeout'));
    }, timeoutMs);
    const onAbort = () => abort.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await kube.exec(this.#settings.namespace, record.pod, ['sh', '-c', script, 'sh', command], {
        container: 'dev',
        signal: abort.signal,
        ...(options.onStdout ? { onStdout: options.onStdout } : {}),
        ...(options.onStderr ? { onStderr: options.onStderr } : {}),
      });
    } catch (error) {
      if (timedOut) throw sandboxError('SANDBOX_TIMEOUT', `the command did not finish within ${timeoutMs} ms and was killed`);
      if (signal?.aborted) throw signal.reason;
      throw notRunning(error, record);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async logs(record: SandboxRecord, offset: number): Promise<{ content: string; offset: number }> {
    const from = Number.isFinite(offset) && offset > 0 ? Math.floor(offset) : 0;
    if (!record.pod) return { content: '', offset: from };
    const all = Buffer.from(await (await this.kube()).log(this.#settings.namespace, record.pod, 'dev'), 'utf8');
    if (from >= all.length) return { content: '', offset: from };
    let start = from;
    // An offset inside a character: its remaining bytes are skipped.
    while (start < all.length && ((all[start] as number) & 0xc0) === 0x80) start++;
    return { content: all.subarray(start).toString('utf8'), offset: all.length };
  }

  /** Pods no record names, pods past their time or ended, and objects of sandboxes that are gone; then the pool refilled. */
  async sweep(known: ReadonlySet<string>, now: number): Promise<string[]> {
    const kube = await this.kube();
    const s = this.#settings;
    const removed: string[] = [];
    for (const pod of (await kube.list('v1', 'Pod', s.namespace, `${LABELS.sandbox}=true`)) as Obj[]) {
      if (pod.metadata.deletionTimestamp) continue;
      const labels = pod.metadata.labels ?? {};
      const id = labels[LABELS.id];
      const phase = pod.status?.phase;
      const ended = phase === 'Failed' || phase === 'Succeeded';
      if (!id) {
        // A warm pod: one that ended, or never ran (its image cannot be pulled), goes; idle ones have no deadline.
        const stuck = phase !== 'Running' && now - Date.parse(String(pod.metadata.creationTimestamp ?? '')) > STRAY_MS;
        if ((ended || stuck) && labels[LABELS.pool] === 'warm') {
          await kube.delete(pod).catch(() => undefined);
          removed.push(pod.metadata.name);
        }
        continue;
      }
      const since = Date.parse(pod.metadata.annotations?.[ANNOTATIONS.claimed] ?? (pod.metadata.creationTimestamp as string | undefined) ?? '');
      const expired = Number.isFinite(since) && now - since >= s.ttl_seconds * 1000;
      // A pod no record names yet may be a create in progress (its record is made first, but the list of records was read before): only an old one is a stray.
      const stray = !known.has(id) && !(now - since < STRAY_MS);
      if (ended || expired || stray) {
        await kube.delete(pod).catch(() => undefined);
        // Its sandbox's other objects go with it unless the sandbox lives on in another pod (a restart).
        if (!known.has(id) || expired) await removeObjects(kube, s.namespace, id);
        removed.push(pod.metadata.name);
      }
    }
    // Objects of sandboxes no record names (a create that died half-way, a pod deleted from outside), once they are old.
    for (const [apiVersion, kind] of OWNED_KINDS) {
      for (const o of await kube.list(apiVersion, kind, s.namespace, LABELS.id).catch(() => [] as KubeObject[])) {
        const id = o.metadata.labels?.[LABELS.id];
        if (id && !known.has(id) && !(now - Date.parse(String(o.metadata.creationTimestamp ?? '')) < STRAY_MS)) {
          await kube.delete({ ...o, apiVersion, kind }).catch(() => undefined);
          removed.push(`${kind}/${o.metadata.name}`);
        }
      }
    }
    if (!this.#opened) await this.open();
    await this.pool.trim();
    await this.pool.replenish();
    return removed;
  }

  async #execText(record: SandboxRecord, script: string, args: string[], stdin?: Buffer): Promise<{ code: number; out: Buffer; err: string }> {
    if (!record.pod) throw sandboxError('SANDBOX_NOT_RUNNING', `sandbox ${record.sandbox_id} has no pod`);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const over = new AbortController();
    let code: number;
    try {
      code = await (await this.kube()).exec(this.#settings.namespace, record.pod, ['sh', '-c', script, 'sh', ...args], {
        container: 'dev',
        timeoutMs: 60_000,
        signal: over.signal,
        ...(stdin ? { stdin } : {}),
        onStdout: (c) => {
          size += c.length;
          if (size <= READ_CAP) out.push(c);
          else over.abort(new Error('too large'));
        },
        onStderr: (c) => err.push(c),
      });
    } catch (error) {
      if (over.signal.aborted) throw sandboxError('SANDBOX_INVALID', `the file is larger than ${READ_CAP} bytes`);
      throw notRunning(error, record);
    }
    return { code, out: Buffer.concat(out), err: Buffer.concat(err).toString('utf8').slice(0, 500) };
  }

  async #list(record: SandboxRecord): Promise<string[]> {
    const prune = [...SKIPPED_DIRS].map((d) => `-name ${shellQuote(d)}`).join(' -o ');
    const { code, out, err } = await this.#execText(record, `cd /app && find . \\( ${prune} \\) -prune -o \\( -type f -o -type l \\) -print`, []);
    if (code !== 0) throw sandboxError('SANDBOX_FAILED', `listing the files failed: ${err}`);
    return out
      .toString('utf8')
      .split('\n')
      .filter((l) => l.startsWith('./') && l !== `./${START_FILE.slice('/app/'.length)}`)
      .map((l) => l.slice(2))
      .sort();
  }

  async #read(record: SandboxRecord, path: string): Promise<string> {
    const { code, out, err } = await this.#execText(record, `cd /app && [ -f "$1" ] || exit ${NO_FILE}; cat -- "$1"`, [path]);
    if (code === NO_FILE) throw sandboxError('SANDBOX_FILE_NOT_FOUND', `no file ${JSON.stringify(path)} in the sandbox`);
    if (code !== 0) throw sandboxError('SANDBOX_FAILED', `reading ${JSON.stringify(path)} failed: ${err}`);
    return out.toString('utf8');
  }

  async #write(record: SandboxRecord, path: string, content: string | Uint8Array): Promise<void> {
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content);
    const { code, err } = await this.#execText(record, `cd /app && mkdir -p -- "$(dirname -- "$1")" && cat > "$1"`, [path], data);
    if (code !== 0) throw sandboxError('SANDBOX_FAILED', `writing ${JSON.stringify(path)} failed: ${err}`);
  }

  async #remove(record: SandboxRecord, path: string): Promise<void> {
    const { code, err } = await this.#execText(record, `cd /app && [ -e "$1" ] || [ -L "$1" ] || exit ${NO_FILE}; rm -f -- "$1"`, [path]);
    if (code === NO_FILE) throw sandboxError('SANDBOX_FILE_NOT_FOUND', `no file ${JSON.stringify(path)} in the sandbox`);
    if (code !== 0) throw sandboxError('SANDBOX_FAILED', `deleting ${JSON.stringify(path)} failed: ${err}`);
  }
}

/** The kinds of a sandbox's objects besides its pod. */
const OWNED_KINDS: [string, string][] = [
  ['v1', 'ConfigMap'],
  ['v1', 'Service'],
  ['networking.k8s.io/v1', 'Ingress'],
  ['networking.k8s.io/v1', 'NetworkPolicy'],
];

/** A sandbox's ConfigMap, Service, Ingress and NetworkPolicy, deleted (those that exist). */
async function removeObjects(kube: SandboxKube, namespace: string, id: string): Promise<void> {
  const names = objectNames(id);
  await Promise.all([
    kube.delete({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: names.code, namespace } }),
    kube.delete({ apiVersion: 'v1', kind: 'Service', metadata: { name: names.service, namespace } }),
    kube.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: names.ingress, namespace } }),
    kube.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: names.policy, namespace } }),
  ]);
}

/** Create, or keep the one already there (a retried create). */
async function createOrKeep(kube: SandboxKube, o: KubeObject): Promise<void> {
  try {
    await kube.create(o);
  } catch (error) {
    if (statusOf(error) !== 409) throw error;
  }
}

/**
 * Make sure an object exists: created, or already there. Refused (403): svc's account may not make it, so the
 * deployment made it (its plan holds the namespace, the Role and its binding); what is missing then fails the first create, named.
 */
async function ensure(kube: SandboxKube, o: KubeObject): Promise<void> {
  try {
    await kube.create(o);
  } catch (error) {
    const status = statusOf(error);
    if (status === 409 || status === 403) return;
    throw error;
  }
}

