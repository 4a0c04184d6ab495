/**
 * A fake Kubernetes API server (no real one can run on these machines): an HTTP server on a free loopback port
 * that answers as a v1.31 API server does where a client depends on it, plus a kubeconfig pointing at it.
 *
 * Decisions:
 * - Real HTTP and real JSON, so `@kubernetes/client-node` (and the deploy code on it) runs unchanged against it:
 *   bearer-token auth, discovery, CRUD with the real Status errors (AlreadyExists, NotFound, Conflict on a stale
 *   resourceVersion, Invalid with causes, Forbidden in a terminating namespace), merge, strategic merge, JSON and
 *   apply patches, watches, pod logs, the `status` and `scale` subresources, dry runs. Plain HTTP: the kubeconfig
 *   says `insecure-skip-tls-verify: true`, without which client-node refuses an `http:` server.
 * - Where the real server surprises clients, the fake does too: defaults filled in (a Deployment's strategy, a
 *   Service's clusterIP and nodePorts, a pod template's pull policy…), zero counts omitted from status, list items
 *   of built-in kinds without apiVersion and kind, a no-op write keeps the resourceVersion, immutable fields
 *   (selectors, most of a StatefulSet's spec, a claim's spec) refused, every namespace with its `default`
 *   ServiceAccount and `kube-root-ca.crt` ConfigMap, an autoscaler that sets its target's replicas within its bounds.
 * - Objects are checked by the same schemas deploy/validate checks manifests with (deploy's `schemaProblems`):
 *   a schema error is 422 Invalid; an unknown field is dropped with a `Warning` header (the server's default
 *   field validation), or refused with 400 under `fieldValidation=Strict`. Kinds deploy does not validate are
 *   stored as sent.
 * - Custom resources are served only while their CRD exists: before, their paths answer 404, as a real server's do.
 * - A simulated control plane (fake-kube/controller.ts) plays the Deployment, ReplicaSet, StatefulSet, DaemonSet,
 *   Job, autoscaler, disruption-budget, namespace, garbage-collector, endpoints and cert-manager controllers on one
 *   node, `fake-node`, whose kubelet (fake-kube/kubelet.ts) runs each pod from a script (`pods` option,
 *   `scriptPod`) or a real runtime (`runner` option), honouring `restartPolicy` (an exited container of an Always
 *   or OnFailure pod restarts) and `activeDeadlineSeconds` (DeadlineExceeded). Pod IPs are 10.244.x.y, or what the
 *   `podIp` option says. No scheduler counts resources: a pod is Unschedulable only when scripted so.
 * - Server-side apply is a merge patch (no field ownership: a field dropped from the applied object stays).
 * - The exec subresource runs the command for real in a per-pod folder standing for the pod's filesystem
 *   (`podRoot`: `/app` and `/tmp` in the arguments are rewritten into it; it is gone when the pod is deleted), over
 *   the WebSocket channel protocols v5 and v4 (fake-kube/exec.ts); the `exec` option scripts it instead. A pod's
 *   commands are killed when it stops (Succeeded, Failed) or is deleted.
 * - Time is real: `progressDeadlineSeconds`, `readyAfterMs`, `observeDelayMs` count wall-clock time; tests wait
 *   with `until` (bounded polling), never with sleeps.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller } from './fake-kube/controller.ts';
import { PodExec } from './fake-kube/exec.ts';
import { FakeKubeHttp } from './fake-kube/http.ts';
import { Kubelet } from './fake-kube/kubelet.ts';
import { Registry } from './fake-kube/registry.ts';
import { builtinOf, typeKey } from './fake-kube/resources.ts';
import { Store } from './fake-kube/store.ts';
import { clone, type ExecIo, type FakeKubeOptions, type FakeKubeRequest, type Obj, type PodRuntime, type PodScript } from './fake-kube/types.ts';

export type { ExecIo, FakeKubeOptions, FakeKubeRequest, Obj as FakeKubeObject, PodRuntime, PodScript };

/**
 * A running fake API server.
 *
 * @example
 * const api = await startFakeKubeApi();
 * t.teardown(() => api.close());
 * const kc = new KubeConfig();
 * kc.loadFromFile(api.kubeconfig);
 */
export interface FakeKubeApi {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The kubeconfig file naming it (for `KUBECONFIG`), with the bearer token. */
  kubeconfig: string;
  /** Every request received, in order (failed and unauthorized ones included). */
  requests: FakeKubeRequest[];
  /** The recorded requests that are not GETs (the writes a client made). */
  writes(): FakeKubeRequest[];
  /** A copy of a stored object, or undefined (`namespace` undefined for a cluster-scoped kind). */
  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): Obj | undefined;
  /** Copies of the stored objects of a kind (in one namespace, or all), with their apiVersion and kind. */
  list(apiVersion: string, kind: string, namespace?: string): Obj[];
  /** Seed or overwrite an object without HTTP (its namespace made when missing; defaults, allocations and the controller run, the schema is not checked). */
  put(object: Obj): Obj;
  /** Delete an object without HTTP, as a DELETE would (graceful pods, terminating namespaces, garbage collection); false when absent. */
  delete(apiVersion: string, kind: string, namespace: string | undefined, name: string): boolean;
  /**
   * The folder standing for a pod's filesystem, where its exec commands run (`/app` and `/tmp` in their arguments
   * mean its `app/` and `tmp/`): made on first use, removed when the pod is deleted and at close.
   */
  podRoot(namespace: string, name: string): string;
  /** Script a pod from now on (replacing its runtime, which is stopped). */
  scriptPod(namespace: string, name: string, script: PodScript): void;
  /** Answer matching requests with a Status of `status` until the returned function is called. */
  failWhen(when: (req: FakeKubeRequest) => boolean, status: number, message?: string): () => void;
  /** Poll `predicate` (after each controller tick) until it returns a truthy value, which it resolves with; rejects after `timeoutMs`. */
  until<T>(predicate: () => T | Promise<T>, timeoutMs?: number, what?: string): Promise<NonNullable<T>>;
  /** Stop runtimes, end watches, close the server, remove the kubeconfig's folder. */
  close(): Promise<void>;
}

/** The objects a fresh cluster has. */
function seedCluster(registry: Registry, nodeAddress: string): void {
  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) registry.seed({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  registry.seed({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'fake-node', labels: { 'kubernetes.io/hostname': 'fake-node', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'node-role.kubernetes.io/control-plane': '' } },
    spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
    status: {
      addresses: [
        { type: 'InternalIP', address: nodeAddress },
        { type: 'Hostname', address: 'fake-node' },
      ],
      capacity: { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi' },
      allocatable: { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi' },
      conditions: [
        { type: 'MemoryPressure', status: 'False', lastHeartbeatTime: now, lastTransitionTime: now, reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
        { type: 'DiskPressure', status: 'False', lastHeartbeatTime: now, lastTransitionTime: now, reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
        { type: 'PIDPressure', status: 'False', lastHeartbeatTime: now, lastTransitionTime: now, reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
        { type: 'Ready', status: 'True', lastHeartbeatTime: now, lastTransitionTime: now, reason: 'KubeletReady', message: 'kubelet is posting ready status' },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.31.0-fake',
        kubeProxyVersion: 'v1.31.0-fake',
        containerRuntimeVersion: 'containerd://1.7.0',
        operatingSystem: 'linux',
        architecture: 'amd64',
        osImage: 'fake',
        kernelVersion: '6.0.0',
      },
    },
  });
  registry.seed({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
    spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] },
  });
  registry.seed({
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: 'kubernetes', namespace: 'default', labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' } },
    subsets: [{ addresses: [{ ip: nodeAddress }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }],
  });
}

/**
 * Start the fake on a free loopback port.
 *
 * @example
 * const api = await startFakeKubeApi({ pods: (pod) => (pod.metadata.labels?.app === 'web' ? { state: 'CrashLoopBackOff', logs: 'boom\n' } : undefined) });
 * t.teardown(() => api.close());
 * await runSvc(['start', entry, '--scale'], { env: { KUBECONFIG: api.kubeconfig } });
 * await api.until(() => api.get('apps/v1', 'Deployment', 'shop', 'web')?.status?.availableReplicas === 2);
 */
export async function startFakeKubeApi(options: FakeKubeOptions = {}): Promise<FakeKubeApi> {
  // deploy/ is loaded here, not on import: importing the kit stays cheap.
  const deploy = await import('../../deploy/index.ts');
  const tickMs = options.tickMs ?? 20;
  const nodeAddress = options.nodeAddress ?? '127.0.0.1';
  const store = new Store();
  const registry = new Registry(store, {
    schemaProblems: (object) => deploy.schemaProblems(object as Parameters<typeof deploy.schemaProblems>[0]),
    supportedKinds: new Set(deploy.SUPPORTED_KINDS),
    parseQuantity: (q) => deploy.parseQuantity(q),
  });
  let controller: Controller | undefined;
  const kubelet = new Kubelet({ nodeAddress, pods: options.pods, runner: options.runner, podIp: options.podIp }, () => controller?.schedule());
  controller = new Controller(registry, kubelet, { tickMs, observeDelayMs: options.observeDelayMs ?? 0, nodeAddress, certificates: options.certificates ?? 'issue' });
  seedCluster(registry, nodeAddress);
  const dir = mkdtempSync(join(tmpdir(), 'svc-kubeconfig-'));
  const exec = new PodExec(dir, options.exec);
  // A pod's commands end when it stops; its files go with it.
  store.watchers.add({
    key: typeKey(builtinOf('Pod')),
    deliver: ({ type, object, old }) => {
      const { namespace, name } = object.metadata;
      if (type === 'DELETED') exec.forget(namespace, name);
      else if (['Succeeded', 'Failed'].includes(object.status?.phase) && !['Succeeded', 'Failed'].includes(old?.status?.phase)) exec.stop(namespace, name);
    },
  });
  const http = new FakeKubeHttp(registry, kubelet, options.token ?? 'fake-token', exec);
  const server = createServer(http.handle);
  server.on('upgrade', http.upgrade);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  http.address = `127.0.0.1:${port}`;
  controller.start();
  controller.tick();
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      // client-node refuses a plain-HTTP server unless TLS verification is off: there is no TLS to verify.
      `- name: fake\n  cluster:\n    server: ${url}\n    insecure-skip-tls-verify: true`,
      'users:',
      `- name: fake\n  user:\n    token: ${options.token ?? 'fake-token'}`,
      'contexts:',
      '- name: fake\n  context:\n    cluster: fake\n    user: fake',
      'current-context: fake',
      '',
    ].join('\n'),
  );
  const resource = (apiVersion: string, kind: string) => {
    const res = registry.catalog.byKind(apiVersion, kind);
    if (!res) throw new Error(`the fake serves no ${apiVersion} ${kind}`);
    return res;
  };
  const withType = (apiVersion: string, kind: string, o: Obj): Obj => ({ ...o, apiVersion, kind });
  let closed = false;
  const api: FakeKubeApi = {
    url,
    kubeconfig,
    requests: http.requests,
    writes: () => http.requests.filter((r) => r.method !== 'GET'),
    get: (apiVersion, kind, namespace, name) => {
      const res = registry.catalog.byKind(apiVersion, kind);
      const o = res && store.get(res, namespace, name);
      return o ? withType(apiVersion, kind, o) : undefined;
    },
    list: (apiVersion, kind, namespace) => {
      const res = registry.catalog.byKind(apiVersion, kind);
      return res ? store.list(res, namespace).map((o) => withType(apiVersion, kind, o)) : [];
    },
    put: (object) => registry.seed(clone(object)),
    delete: (apiVersion, kind, namespace, name) => {
      const res = resource(apiVersion, kind);
      const o = store.get(res, namespace, name);
      if (!o) return false;
      registry.remove(res, o);
      return true;
    },
    podRoot: (namespace, name) => exec.root(namespace, name),
    scriptPod: (namespace, name, script) => {
      const pod = store.get(builtinOf('Pod'), namespace, name);
      if (!pod) throw new Error(`no pod ${namespace}/${name}`);
      kubelet.script(pod, script);
      controller?.schedule();
    },
    failWhen: (when, status, message) => {
      const failure = { when, status, ...(message ? { message } : {}) };
      http.failures.add(failure);
      return () => {
        http.failures.delete(failure);
      };
    },
    until: async <T>(predicate: () => T | Promise<T>, timeoutMs = 10_000, what?: string): Promise<NonNullable<T>> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await predicate();
        if (value) return value as NonNullable<T>;
        if (Date.now() > deadline) throw new Error(`fake Kubernetes API server: timed out after ${timeoutMs} ms waiting for ${what ?? String(predicate)}`);
        await new Promise((r) => setTimeout(r, Math.min(tickMs, 20)));
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      controller?.close();
      await kubelet.close();
      exec.close();
      for (const res of http.watches) res.end();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
  return api;
}
