/**
 * The warm pool: `warm_pool_size` idle sandbox pods (labelled
 * `svc-sandbox-pool=warm`) that run their image and wait for code. A create
 * claims one with a conditional update on its `resourceVersion` — of two
 * members racing for the last warm pod one wins, the other gets a conflict
 * and tries the next or starts cold — relabels it with the sandbox, gives it
 * a deadline (its time so far plus `ttl_seconds`: the TTL counts from the
 * claim), streams the project in as one tar, and signals it to start. A
 * claimed pod is never given back: it is deleted with its sandbox, so no pod
 * carries one user's files or processes to another.
 */
import { randomBytes } from 'node:crypto';
import { sandboxError } from './errors.ts';
import { statusOf, type SandboxKube } from './kube-seam.ts';
import { claimedMetadata, ENV_FILE, LABELS, sandboxPod, START_FILE, type KubeObject, type ProjectFile, type SandboxIdentity } from './kube-objects.ts';
import { tarOf } from './tar.ts';
import type { SandboxSettings } from './types.ts';

type Pod = KubeObject & { spec?: any; status?: any };

/** A staged project file (its bytes and mode). */
export type StagedFile = ProjectFile;

/** A warm pod not running after this long (its image cannot be pulled, say) stops counting as one of the pool. */
const PENDING_MS = 2 * 60_000;

const WARM_SELECTOR = `${LABELS.sandbox}=true,${LABELS.pool}=warm`;
/** How long a pod made for one large project may take to run (its image pulled). */
const RUN_WAIT_MS = 120_000;

/** Single-quoted for sh. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function usable(pod: Pod): boolean {
  if (pod.metadata.deletionTimestamp || ['Failed', 'Succeeded'].includes(pod.status?.phase)) return false;
  return pod.status?.phase === 'Running' || Date.now() - Date.parse(String(pod.metadata.creationTimestamp ?? '')) < PENDING_MS;
}

/**
 * @example
 * const pool = new WarmPool(settings, kube);
 * const pod = await pool.claim({ sandbox_id, user, project }); // undefined: the pool is empty
 */
export class WarmPool {
  #filling: Promise<number> | undefined;

  constructor(
    private readonly settings: SandboxSettings,
    private readonly kube: () => Promise<SandboxKube>,
  ) {}

  /** Warm pods that are idle (not claimed, not ending). */
  async idle(): Promise<Pod[]> {
    return ((await (await this.kube()).list('v1', 'Pod', this.settings.namespace, WARM_SELECTOR)) as Pod[]).filter(usable);
  }

  /** Make warm pods until the pool holds `warm_pool_size` (one fill at a time in this process); how many were made. */
  replenish(): Promise<number> {
    if (this.settings.warm_pool_size <= 0) return Promise.resolve(0);
    this.#filling ??= this.#fill().finally(() => (this.#filling = undefined));
    return this.#filling;
  }

  async #fill(): Promise<number> {
    const kube = await this.kube();
    const missing = this.settings.warm_pool_size - (await this.idle()).length;
    for (let i = 0; i < missing; i++) await kube.create(sandboxPod(this.settings, `svc-sbx-warm-${randomBytes(4).toString('hex')}`, undefined));
    return Math.max(0, missing);
  }

  /**
   * Idle warm pods beyond the pool's size (members and threads refilling at once can make a few too many): the newest
   * deleted, each only if it is still as listed (a delete with its `resourceVersion` as precondition: never one a create
   * claimed meanwhile).
   */
  async trim(): Promise<number> {
    const kube = await this.kube();
    const idle = (await this.idle()).sort((a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)));
    let trimmed = 0;
    for (const pod of idle.slice(Math.max(0, this.settings.warm_pool_size))) {
      if (await kube.delete(pod, { resourceVersion: pod.metadata.resourceVersion as string }).catch(() => false)) trimmed++;
    }
    return trimmed;
  }

  /** Claim a running warm pod for the sandbox: its name, or undefined when none could be had. */
  async claim(who: SandboxIdentity): Promise<string | undefined> {
    const kube = await this.kube();
    const pods = (await this.idle()).filter((p) => p.status?.phase === 'Running');
    // Members racing start from different pods: fewer conflicts.
    for (let i = pods.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [pods[i], pods[j]] = [pods[j] as Pod, pods[i] as Pod];
    }
    for (const pod of pods) {
      const now = Date.now();
      const since = Date.parse(pod.status?.startTime ?? pod.metadata.creationTimestamp ?? new Date(now).toISOString());
      const meta = claimedMetadata(who, new Date(now).toISOString());
      const claimed: Pod = {
        ...pod,
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { ...pod.metadata, labels: { ...pod.metadata.labels, ...meta.labels }, annotations: { ...pod.metadata.annotations, ...meta.annotations } },
        spec: { ...pod.spec, activeDeadlineSeconds: Math.max(1, Math.ceil((now - since) / 1000)) + this.settings.ttl_seconds },
      };
      try {
        await kube.replace(claimed);
        return pod.metadata.name;
      } catch (error) {
        // Another member claimed it first (409), or it went away (404): the next one.
        if (statusOf(error) === 409 || statusOf(error) === 404) continue;
        throw error;
      }
    }
    return undefined;
  }

  /** A pod of the sandbox's own (`name`) that waits for its code as a warm one does (a project too large for a ConfigMap, the pool empty); its name once it runs. */
  async coldWaiting(who: SandboxIdentity, name: string, took?: (pod: string) => void): Promise<string> {
    const kube = await this.kube();
    const pod = sandboxPod(this.settings, name, undefined) as Pod;
    const meta = claimedMetadata(who, new Date().toISOString());
    pod.metadata.labels = { ...pod.metadata.labels, ...meta.labels };
    pod.metadata.annotations = meta.annotations;
    pod.spec.activeDeadlineSeconds = this.settings.ttl_seconds;
    await kube.create(pod);
    took?.(name);
    const until = Date.now() + RUN_WAIT_MS;
    for (;;) {
      const now = (await kube.read('v1', 'Pod', this.settings.namespace, name)) as Pod | undefined;
      if (now?.status?.phase === 'Running') return name;
      if (!now || !usable(now)) throw sandboxError('SANDBOX_FAILED', `the pod made for the project (${name}) ended before it ran`);
      if (Date.now() > until) {
        await kube.delete(pod).catch(() => undefined);
        throw sandboxError('SANDBOX_FAILED', `the pod made for the project (${name}) did not run within ${RUN_WAIT_MS / 1000} s`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The project into the pod's /app: one tar over one exec's stdin. */
  async inject(pod: string, files: ReadonlyMap<string, StagedFile>): Promise<void> {
    const err: Buffer[] = [];
    const code = await (await this.kube()).exec(this.settings.namespace, pod, ['sh', '-c', 'mkdir -p /app && tar -x -o -f - -C /app'], {
      container: 'dev',
      stdin: tarOf(new Map([...files].map(([path, f]) => [path, { content: f.content, mode: f.mode }]))),
      timeoutMs: 120_000,
      onStderr: (c) => err.push(c),
    });
    if (code !== 0) throw sandboxError('SANDBOX_FAILED', `the project could not be unpacked in pod ${pod} (tar exited ${code}): ${Buffer.concat(err).toString('utf8').slice(0, 300)}`);
  }

  /** Tell the pod whose it is and let its dev server start (`/app/.svc-start`). */
  async signal(pod: string, who: SandboxIdentity): Promise<void> {
    const env = Object.entries({ SVC_SANDBOX_ID: who.sandbox_id, SVC_SANDBOX_USER: who.user, SVC_SANDBOX_PROJECT: who.project })
      .map(([k, v]) => `export ${k}=${shellQuote(v)}\n`)
      .join('');
    const code = await (await this.kube()).exec(this.settings.namespace, pod, ['sh', '-c', `cat > ${ENV_FILE} && touch ${START_FILE}`], { container: 'dev', stdin: Buffer.from(env), timeoutMs: 30_000 });
    if (code !== 0) throw sandboxError('SANDBOX_FAILED', `pod ${pod} could not be told to start (exit ${code})`);
  }
}
