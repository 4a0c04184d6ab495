/**
 * The one way svc talks to a Kubernetes API server: `@kubernetes/client-node`'s
 * KubeConfig finds the cluster and its credentials (KUBECONFIG, ~/.kube/config
 * or the pod's service account), and a small JSON client sends the requests
 * (objects stay plain JSON: no model classes, no field dropped on the way).
 * Resource paths come from the server's own discovery, so a custom resource is
 * addressed as soon as its definition is served.
 */
import { existsSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { K8sObject } from './object.ts';

/** The errors of talking to a cluster, each with a stable code (docs/errors.md). */
export const CLUSTER_ERRORS = {
  SVC_ERR_NO_CLUSTER: 'no cluster is configured: no KUBECONFIG, no ~/.kube/config, not in a pod',
  SVC_ERR_CLUSTER_UNREACHABLE: 'the API server does not answer',
  SVC_ERR_NODE_PORT_TAKEN: "the ingress node port is used by another Service",
  SVC_ERR_APPLY: 'some objects of the plan could not be applied (each is named)',
  SVC_ERR_ROLLOUT: 'the new version did not become healthy and was rolled back (or could not be)',
  SVC_ERR_NOT_DEPLOYED: 'the app is not deployed in that namespace',
  SVC_ERR_KUBE_API: 'the API server refused a request',
  SVC_ERR_TLS: '--enable-tls could not finish: cert-manager, the issuer or the certificate (the reason is named)',
  SVC_ERR_ROLLBACK: 'there is no revision to roll back to',
  SVC_ERR_INGRESS_PROBE: 'the app rolled out but its health path does not answer 2xx through the ingress',
  SVC_ERR_DESTROY: 'objects of the app were still there when the destroy gave up waiting',
} as const;

export type ClusterErrorCode = keyof typeof CLUSTER_ERRORS;

/**
 * @example
 * throw new ClusterError('SVC_ERR_NO_CLUSTER', 'no cluster configured: set KUBECONFIG or create ~/.kube/config');
 */
export class ClusterError extends Error {
  constructor(
    readonly code: ClusterErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ClusterError';
  }
}

/** An answer of the API server other than 2xx. */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

interface Resource {
  plural: string;
  namespaced: boolean;
}

/** A list answer. */
export interface KubeList {
  items: K8sObject[];
  metadata?: { resourceVersion?: string };
}

/**
 * The cluster as svc sees it.
 *
 * @example
 * const kube = connectCluster(process.env);
 * const deployment = await kube.read('apps/v1', 'Deployment', 'shop', 'shop');
 */
export class Kube {
  private readonly resources = new Map<string, Map<string, Resource>>();

  constructor(
    readonly config: KubeConfig,
    /** The API server's URL (for messages). */
    readonly server: string,
  ) {}

  /** One request; the answer's JSON (or text for `text`), a {@link KubeApiError} for a non-2xx answer. */
  async request(method: string, path: string, body?: unknown, options: { contentType?: string; timeoutMs?: number; text?: boolean } = {}): Promise<unknown> {
    const url = new URL(path, this.server.endsWith('/') ? this.server : `${this.server}/`);
    // The server's own path prefix (a proxy in front of the API) stays in front of the resource path.
    const base = new URL(this.server);
    const fullPath = `${base.pathname.replace(/\/+$/, '')}${path}`;
    const opts: RequestOptions = { method, hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || undefined, path: fullPath, headers: { accept: options.text ? 'text/plain, */*' : 'application/json' } };
    await this.config.applyToHTTPSOptions(opts);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    if (payload) Object.assign(opts.headers as Record<string, string>, { 'content-type': options.contentType ?? 'application/json', 'content-length': String(payload.length) });
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = send(opts as RequestOptions, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.setTimeout(options.timeoutMs ?? 30_000, () => req.destroy(new Error(`no answer within ${Math.round((options.timeoutMs ?? 30_000) / 1000)} s`)));
      req.on('error', reject);
      req.end(payload);
    });
    if (status >= 200 && status < 300) {
      if (options.text) return text;
      return text === '' ? undefined : JSON.parse(text);
    }
    let reason = '';
    let message = text.slice(0, 500);
    try {
      const s = JSON.parse(text) as { reason?: string; message?: string };
      reason = s.reason ?? '';
      if (s.message) message = s.message;
    } catch {
      // not a Status object: keep the text
    }
    throw new KubeApiError(status, reason, `${method} ${path.split('?')[0]}: ${status}${reason ? ` ${reason}` : ''}: ${message}`);
  }

  /** The plural and scope of a kind, from the server's discovery (cached; refreshed once when the kind is unknown). */
  async resource(apiVersion: string, kind: string): Promise<Resource> {
    let kinds = this.resources.get(apiVersion);
    if (!kinds?.has(kind)) {
      kinds = new Map();
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      try {
        const list = (await this.request('GET', path)) as { resources?: { name: string; kind: string; namespaced: boolean }[] };
        for (const r of list.resources ?? []) if (!r.name.includes('/')) kinds.set(r.kind, { plural: r.name, namespaced: r.namespaced });
      } catch (error) {
        if (!(error instanceof KubeApiError && error.status === 404)) throw error;
      }
      this.resources.set(apiVersion, kinds);
    }
    const found = kinds.get(kind);
    if (!found) throw new KubeApiError(404, 'NotFound', `the cluster serves no ${kind} of ${apiVersion} (is its CustomResourceDefinition installed?)`);
    return found;
  }

  /** Every namespaced kind the server lists (its preferred version of each group), from discovery. */
  async namespacedKinds(): Promise<{ apiVersion: string; kind: string }[]> {
    const out: { apiVersion: string; kind: string }[] = [];
    const versions = ['v1'];
    const groups = (await this.request('GET', '/apis')) as { groups?: { preferredVersion?: { groupVersion?: string } }[] };
    for (const g of groups.groups ?? []) if (g.preferredVersion?.groupVersion) versions.push(g.preferredVersion.groupVersion);
    for (const apiVersion of versions) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const list = (await this.request('GET', path)) as { resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[] };
      for (const r of list.resources ?? []) if (r.namespaced && !r.name.includes('/') && (r.verbs ?? []).includes('list')) out.push({ apiVersion, kind: r.kind });
    }
    return out;
  }

  /** The path of a kind's collection (namespace '' or absent: every namespace, for a namespaced kind). */
  async collectionPath(apiVersion: string, kind: string, namespace?: string): Promise<string> {
    const r = await this.resource(apiVersion, kind);
    const prefix = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    return r.namespaced && namespace ? `${prefix}/namespaces/${encodeURIComponent(namespace)}/${r.plural}` : `${prefix}/${r.plural}`;
  }

  private async objectPath(o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): Promise<string> {
    return `${await this.collectionPath(o.apiVersion, o.kind, o.metadata.namespace)}/${encodeURIComponent(o.metadata.name)}`;
  }

  /** The object, or undefined when there is none. */
  async read(apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<K8sObject | undefined> {
    try {
      return (await this.request('GET', await this.objectPath({ apiVersion, kind, metadata: { name, namespace } }))) as K8sObject;
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  async create(o: K8sObject): Promise<K8sObject> {
    return (await this.request('POST', `${await this.collectionPath(o.apiVersion, o.kind, o.metadata.namespace)}?fieldManager=svc`, o)) as K8sObject;
  }

  /** A JSON merge patch (RFC 7386): the fields given replace the object's; those left out stay. */
  async mergePatch(o: K8sObject, patch: unknown = o): Promise<K8sObject> {
    return (await this.request('PATCH', `${await this.objectPath(o)}?fieldManager=svc`, patch, { contentType: 'application/merge-patch+json' })) as K8sObject;
  }

  /** A replace (PUT): conflicts (409) when `metadata.resourceVersion` is given and stale. */
  async replace(o: K8sObject): Promise<K8sObject> {
    return (await this.request('PUT', `${await this.objectPath(o)}?fieldManager=svc`, o)) as K8sObject;
  }

  /** Delete (background propagation); false when it was already gone. */
  async delete(o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): Promise<boolean> {
    try {
      await this.request('DELETE', await this.objectPath(o), { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' });
      return true;
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return false;
      throw error;
    }
  }

  /** The objects of a kind (in a namespace, or all; by label selector). */
  async list(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<K8sObject[]> {
    const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
    try {
      const list = (await this.request('GET', `${await this.collectionPath(apiVersion, kind, namespace)}${query}`)) as KubeList;
      return (list.items ?? []).map((item) => ({ ...item, apiVersion, kind }));
    } catch (error) {
      // A custom resource the cluster does not serve has no objects.
      if (error instanceof KubeApiError && error.status === 404) return [];
      throw error;
    }
  }

  /** The last lines of a pod's log ('' when it has none to give). */
  async podLog(namespace: string, pod: string, options: { container?: string; tailLines?: number; previous?: boolean } = {}): Promise<string> {
    const q = new URLSearchParams();
    if (options.container) q.set('container', options.container);
    q.set('tailLines', String(options.tailLines ?? 20));
    if (options.previous) q.set('previous', 'true');
    try {
      return (await this.request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log?${q}`, undefined, { text: true })) as string;
    } catch {
      return '';
    }
  }
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The cluster of this machine's configuration: `KUBECONFIG` (its files merged, the first one's context, as kubectl does), else
 * ~/.kube/config, else the pod's service account when svc runs in a cluster. `SVC_KUBE_CONTEXT` picks a context.
 * Nothing is contacted.
 *
 * @example
 * const kube = connectCluster(process.env); // throws ClusterError SVC_ERR_NO_CLUSTER when there is none
 */
export function connectCluster(env: NodeJS.ProcessEnv): Kube {
  const kc = new KubeConfig();
  const kubeconfig = (env.KUBECONFIG ?? '').split(':').filter((f) => f !== '');
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  try {
    if (kubeconfig.length > 0) {
      const missing = kubeconfig.find((f) => !existsSync(f));
      if (missing && kubeconfig.length === 1) throw new ClusterError('SVC_ERR_NO_CLUSTER', `no cluster configured: KUBECONFIG names ${missing}, which does not exist`);
      // As kubectl: every file of KUBECONFIG, merged (the first one's current context).
      const present = kubeconfig.filter((f) => existsSync(f));
      kc.loadFromFile(present[0] as string);
      for (const f of present.slice(1)) {
        const more = new KubeConfig();
        more.loadFromFile(f);
        kc.mergeConfig(more, true);
      }
    } else if (existsSync(home)) {
      kc.loadFromFile(home);
    } else if (env.KUBERNETES_SERVICE_HOST && existsSync(SERVICE_ACCOUNT_TOKEN)) {
      kc.loadFromCluster();
    } else {
      throw new ClusterError('SVC_ERR_NO_CLUSTER', 'no cluster configured: set KUBECONFIG, or create ~/.kube/config (kubectl config view shows what kubectl uses); nothing was created');
    }
  } catch (error) {
    if (error instanceof ClusterError) throw error;
    // The parser's message quotes the lines around the error (tokens, keys): only its first line is said.
    throw new ClusterError('SVC_ERR_NO_CLUSTER', `no cluster configured: the kubeconfig cannot be read: ${String((error as Error).message).split('\n')[0]?.slice(0, 200)}`);
  }
  if (env.SVC_KUBE_CONTEXT) kc.setCurrentContext(env.SVC_KUBE_CONTEXT);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ClusterError('SVC_ERR_NO_CLUSTER', 'no cluster configured: the kubeconfig has no current context (kubectl config use-context …)');
  return new Kube(kc, cluster.server);
}

/**
 * Check the API server answers (GET /version) and our credentials are accepted.
 *
 * @example
 * const version = await reachCluster(kube); // 'v1.31.0'
 */
export async function reachCluster(kube: Kube, timeoutMs = 10_000): Promise<string> {
  try {
    const v = (await kube.request('GET', '/version', undefined, { timeoutMs })) as { gitVersion?: string };
    // /version is often public: discovery needs an accepted user (401 otherwise).
    await kube.request('GET', '/api', undefined, { timeoutMs });
    return v?.gitVersion ?? 'unknown';
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 401 || error.status === 403)) {
      throw new ClusterError('SVC_ERR_CLUSTER_UNREACHABLE', `the API server at ${kube.server} refused our credentials (${error.status}): check the kubeconfig's user; nothing was created`);
    }
    throw new ClusterError('SVC_ERR_CLUSTER_UNREACHABLE', `cannot reach the API server at ${kube.server}: ${(error as Error).message}; nothing was created`);
  }
}

/** The address a node of the cluster is reached at: its ExternalIP, else its InternalIP. */
export async function nodeAddress(kube: Kube): Promise<string | undefined> {
  const nodes = await kube.list('v1', 'Node').catch(() => [] as K8sObject[]);
  const addresses = nodes.flatMap((n) => (((n.status as Record<string, unknown> | undefined)?.addresses as { type: string; address: string }[] | undefined) ?? []));
  return (addresses.find((a) => a.type === 'ExternalIP') ?? addresses.find((a) => a.type === 'InternalIP'))?.address;
}

/** Call `check` every `intervalMs` until it answers a value (returned) or `timeoutMs` passes (undefined). */
export async function poll<T>(check: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 250): Promise<T | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
