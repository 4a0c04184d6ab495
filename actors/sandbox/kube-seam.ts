/**
 * What the orchestrator provider needs of a Kubernetes API server: a narrow
 * seam (objects as plain JSON, exec and log subresources), filled by svc's
 * Kubernetes client, loaded only when a sandbox provider asks for it (its
 * library is large, and most apps never talk to a cluster).
 */
import type { KubeObject } from './kube-objects.ts';

export interface KubeExecOptions {
  container?: string;
  stdin?: Buffer;
  onStdout?(chunk: Buffer): void;
  onStderr?(chunk: Buffer): void;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * @example
 * const kube = await connectSandboxKube();
 * const pod = await kube.read('v1', 'Pod', 'svc-sandboxes', name);
 */
export interface SandboxKube {
  read(apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  create(o: KubeObject): Promise<KubeObject>;
  /** PUT: a stale `metadata.resourceVersion` fails with status 409. */
  replace(o: KubeObject): Promise<KubeObject>;
  /** Delete; false when it was already gone (or, with a precondition, changed since: 409). */
  delete(o: KubeObject, preconditions?: { resourceVersion?: string }): Promise<boolean>;
  list(apiVersion: string, kind: string, namespace: string | undefined, labelSelector?: string): Promise<KubeObject[]>;
  /** The whole log of a pod's container ('' when it has none yet). */
  log(namespace: string, pod: string, container: string): Promise<string>;
  /** A command in a pod's container; resolves with its exit code. */
  exec(namespace: string, pod: string, command: string[], options: KubeExecOptions): Promise<number>;
}

/** The HTTP status of an API server's refusal (404, 409…), or undefined for another error. */
export function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown } | undefined)?.status;
  return typeof s === 'number' ? s : undefined;
}

let connector: (() => Promise<SandboxKube>) | undefined;

/** Register how the seam is filled (the kube room's client, by default; a test may give its own). */
export function setSandboxKube(connect: () => Promise<SandboxKube>): void {
  connector = connect;
}

/** The cluster of this process's configuration (KUBECONFIG, ~/.kube/config, or the pod's service account). */
export async function connectSandboxKube(): Promise<SandboxKube> {
  if (connector) return connector();
  const { connectCluster, podExec } = await import('../../kube/index.ts');
  const kube = connectCluster(process.env);
  return {
    read: (apiVersion, kind, namespace, name) => kube.read(apiVersion, kind, namespace, name) as Promise<KubeObject | undefined>,
    create: (o) => kube.create(o as never) as Promise<KubeObject>,
    replace: (o) => kube.replace(o as never) as Promise<KubeObject>,
    delete: async (o, preconditions) => {
      if (!preconditions) return kube.delete(o as never);
      const path = `${await kube.collectionPath(o.apiVersion, o.kind, o.metadata.namespace)}/${encodeURIComponent(o.metadata.name)}`;
      try {
        await kube.request('DELETE', path, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', preconditions });
        return true;
      } catch (error) {
        if (statusOf(error) === 404 || statusOf(error) === 409) return false;
        throw error;
      }
    },
    list: (apiVersion, kind, namespace, labelSelector) => kube.list(apiVersion, kind, namespace, labelSelector) as Promise<KubeObject[]>,
    log: async (namespace, pod, container) => {
      try {
        return (await kube.request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log?container=${encodeURIComponent(container)}`, undefined, { text: true })) as string;
      } catch (error) {
        // No log yet (the container has not started): nothing to show.
        if (statusOf(error) === 400 || statusOf(error) === 404) return '';
        throw error;
      }
    },
    exec: (namespace, pod, command, options) => podExec(kube, namespace, pod, command, options),
  };
}
