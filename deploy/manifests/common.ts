/**
 * What every builder shares: the pinned images, names, labels, metadata, the
 * security contexts of the restricted Pod Security profile, and the small
 * helpers that keep a credential out of a pod spec (`secretEnv`).
 */
import { createHash } from 'node:crypto';
import { MANAGED_LABEL, type DeploySpec, type K8sObject } from '../spec.ts';

/** Every third-party image, pinned to a tag (never `latest`); the uid each runs as is beside it where the builders set it. */
export const IMAGES = {
  postgres: 'postgres:16.4-alpine',
  mongo: 'mongo:7.0.14',
  redis: 'redis:7.2.5-alpine',
  traefik: 'traefik:v3.3.7',
  pgweb: 'sosedoff/pgweb:0.15.0',
  mongoExpress: 'mongo-express:1.0.2-20-alpine3.19',
  redisCommander: 'ghcr.io/joeferner/redis-commander:0.9.0',
  prometheus: 'prom/prometheus:v2.54.1',
  kubeStateMetrics: 'registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0',
  nodeExporter: 'quay.io/prometheus/node-exporter:v1.8.2',
  grafana: 'grafana/grafana:11.2.0',
  loki: 'grafana/loki:3.1.1',
  alloy: 'grafana/alloy:v1.5.1',
} as const;

/** The uid/gid the app's image runs as (the non-root user its Dockerfile creates). */
export const APP_UID = 1000;
/** The app's directory in its image; svc writes its data under `.svc` in it. */
export const APP_DIR = '/app';

/** The annotation of a pod template that rolls the pods when the configuration it hashes changes. */
export const CHECKSUM_ANNOTATION = 'svc.dev/config-checksum';

/** The parts of a deployment, as `app.kubernetes.io/component` names them. */
export type Component =
  | 'app'
  | 'docdb'
  | 'docdb-dashboard'
  | 'kv'
  | 'kv-dashboard'
  | 'ingress'
  | 'prometheus'
  | 'kube-state-metrics'
  | 'node-exporter'
  | 'grafana'
  | 'loki'
  | 'log-collector'
  | 'cluster';

/** The parts of sandboxes run as pods (`sandbox`: their namespace and rights; `sandbox-proxy`: the routing proxy, a status row by that key). */
export type SandboxComponent = 'sandbox' | 'sandbox-proxy';

/**
 * The labels a component's pods are selected by (stable: a Deployment's selector cannot change).
 *
 * @example
 * selectorLabels(spec, 'app') // { 'app.kubernetes.io/component': 'app', 'app.kubernetes.io/name': 'shop' }
 */
export function selectorLabels(spec: DeploySpec, component: Component | SandboxComponent): Record<string, string> {
  return { 'app.kubernetes.io/component': component, 'app.kubernetes.io/name': spec.app };
}

/**
 * Every label an object of a component carries: the selector labels, `managed: svc-scale` and `app.kubernetes.io/managed-by`.
 *
 * @example
 * labels(spec, 'kv').managed // 'svc-scale'
 */
export function labels(spec: DeploySpec, component: Component | SandboxComponent): Record<string, string> {
  return sortKeys({ ...selectorLabels(spec, component), 'app.kubernetes.io/managed-by': 'svc', 'app.kubernetes.io/part-of': spec.app, ...MANAGED_LABEL });
}

/**
 * The metadata of a namespaced object.
 *
 * @example
 * meta(spec, 'shop-kv', 'kv') // { name: 'shop-kv', namespace: spec.namespace, labels: {...} }
 */
export function meta(spec: DeploySpec, name: string, component: Component | SandboxComponent, annotations?: Record<string, string>): K8sObject['metadata'] {
  return { name, namespace: spec.namespace, labels: labels(spec, component), ...(annotations ? { annotations: sortKeys(annotations) } : {}) };
}

/**
 * The metadata of a cluster-scoped object (no namespace).
 *
 * @example
 * clusterMeta(spec, 'ingressroutes.traefik.io', 'ingress')
 */
export function clusterMeta(spec: DeploySpec, name: string, component: Component | SandboxComponent, annotations?: Record<string, string>): K8sObject['metadata'] {
  return { name, labels: labels(spec, component), ...(annotations ? { annotations: sortKeys(annotations) } : {}) };
}

/**
 * An object's name: `{app}-{suffix}` (`{app}` alone without a suffix).
 *
 * @example
 * nameOf(spec, 'kv') // 'shop-kv'
 */
export function nameOf(spec: DeploySpec, suffix?: string): string {
  return suffix ? `${spec.app}-${suffix}` : spec.app;
}

/**
 * The in-cluster DNS name of a Service (`{svc}.{ns}.svc`: the pods' search path completes the cluster domain, whatever it is).
 *
 * @example
 * serviceHost(spec, 'shop-docdb') // 'shop-docdb.default.svc'
 */
export function serviceHost(spec: DeploySpec, service: string): string {
  return `${service}.${spec.namespace}.svc`;
}

/**
 * A pod's security context for the restricted profile: a fixed non-root uid/gid, the volume group, seccomp RuntimeDefault.
 *
 * @example
 * podSecurity(70) // postgres (alpine) runs as uid 70
 */
export function podSecurity(uid: number, gid = uid, fsGroup = gid): Record<string, unknown> {
  return { runAsNonRoot: true, runAsUser: uid, runAsGroup: gid, fsGroup, seccompProfile: { type: 'RuntimeDefault' } };
}

/**
 * A container's security context for the restricted profile: no privilege escalation, every capability dropped,
 * a read-only root filesystem unless the image must write to its own files.
 *
 * @example
 * containerSecurity() // { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true }
 */
export function containerSecurity(readOnlyRootFilesystem = true): Record<string, unknown> {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem };
}

/**
 * An environment variable read from a Secret key: the only way a credential reaches a pod.
 *
 * @example
 * secretEnv('DOCDB_URI', 'shop-docdb-secret', 'uri')
 */
export function secretEnv(name: string, secret: string, key: string): Record<string, unknown> {
  return { name, valueFrom: { secretKeyRef: { name: secret, key } } };
}

/**
 * A plain environment variable (never a credential).
 *
 * @example
 * env('NODE_ENV', 'production')
 */
export function env(name: string, value: string): Record<string, unknown> {
  return { name, value };
}

/**
 * An emptyDir volume and the mount that puts it at `path` (the writable places of a read-only root filesystem).
 *
 * @example
 * const tmp = scratch('tmp', '/tmp'); // { volume: { name: 'tmp', emptyDir: {} }, mount: { name: 'tmp', mountPath: '/tmp' } }
 */
export function scratch(name: string, path: string): { volume: Record<string, unknown>; mount: Record<string, unknown> } {
  return { volume: { name, emptyDir: {} }, mount: { name, mountPath: path } };
}

/**
 * A ClusterIP Service in front of a component's pods (ports by name: `targetPort` is the container port's name).
 *
 * @example
 * clusterIpService(spec, 'shop-kv', 'kv', [{ name: 'redis', port: 6379 }])
 */
export function clusterIpService(spec: DeploySpec, name: string, component: Component, ports: { name: string; port: number }[]): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(spec, name, component),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(spec, component),
      ports: ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.name, protocol: 'TCP' })),
    },
  };
}

/**
 * The wait an init container does before the app starts: until the TCP port answers.
 *
 * @example
 * waitFor(spec, 'wait-docdb', 'shop-docdb.default.svc', 5432)
 */
export function waitFor(spec: DeploySpec, name: string, host: string, port: number): Record<string, unknown> {
  return {
    name,
    image: spec.images.busybox,
    command: ['sh', '-c', `until nc -z -w 2 ${host} ${port}; do echo "waiting for ${host}:${port}"; sleep 2; done`],
    securityContext: containerSecurity(),
  };
}

/**
 * sha256 (hex) of a value's JSON: the checksum annotation of a pod whose configuration is a ConfigMap.
 *
 * @example
 * checksum({ a: 1 }).length // 64
 */
export function checksum(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/**
 * A copy of a string map with its keys sorted (labels, annotations, Secret data: the same input, the same bytes).
 *
 * @example
 * Object.keys(sortKeys({ b: '1', a: '2' })) // ['a', 'b']
 */
export function sortKeys<T>(map: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * A ServiceAccount with a Role in the namespace and its RoleBinding: for the few pods that read the API server.
 *
 * @example
 * namespacedRbac(spec, 'shop-prometheus', 'prometheus', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }])
 */
export function namespacedRbac(spec: DeploySpec, name: string, component: Component, rules: Record<string, unknown>[]): K8sObject[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(spec, name, component), automountServiceAccountToken: true },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(spec, name, component), rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(spec, name, component),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: spec.namespace }],
    },
  ];
}

/**
 * A one-replica Deployment of a component from its pod spec (selector and template labels from the component).
 *
 * @example
 * singleDeployment(spec, 'shop-grafana', 'grafana', { containers: [...] })
 */
export function singleDeployment(spec: DeploySpec, name: string, component: Component, podSpec: Record<string, unknown>, annotations?: Record<string, string>): K8sObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, name, component),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorLabels(spec, component) },
      template: { metadata: { labels: labels(spec, component), ...(annotations ? { annotations } : {}) }, spec: podSpec },
    },
  };
}

/**
 * A ConfigMap (never a credential in it).
 *
 * @example
 * configMap(spec, 'shop-prometheus-config', 'prometheus', { 'prometheus.yml': '…' })
 */
export function configMap(spec: DeploySpec, name: string, component: Component, data: Record<string, string>): K8sObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(spec, name, component), data: sortKeys(data) };
}
