/**
 * The manifest builders' door: every object an apply would send for a
 * {@link DeploySpec}, as plain JSON, in the order an apply sends them (what
 * an object refers to comes before it). Pure and deterministic: the same spec
 * gives deep-equal objects with their keys in the same order; nothing is
 * read, generated or contacted here.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { appObjects } from './app.ts';
import { docdbObjects } from './docdb.ts';
import { ingressObjects } from './ingress.ts';
import { kvObjects } from './kv.ts';
import { monitoringObjects } from './monitoring.ts';
import { networkPolicies } from './network.ts';
import { sandboxObjects } from './sandbox.ts';
import { secrets } from './secrets.ts';
import { namespaceObject } from './security.ts';

export { IMAGES, CHECKSUM_ANNOTATION } from './common.ts';
export { graceSeconds, PRE_STOP_SECONDS } from './app.ts';
export { docdbUri, kvUrl, secretNames, jwtRef } from './secrets.ts';
export { ingressRoutes, STICKY_MAX_AGE, type Route } from './ingress.ts';
export { enforcedLevel } from './security.ts';
export { prometheusConfig } from './monitoring.ts';
export { sandboxNames, sandboxObjects, NAMESPACE_NAME_LABEL, PROXY_HEALTH_PATH, SANDBOX_LABEL, SANDBOX_MANAGER_ROLE, SANDBOX_PORT, SANDBOX_PROXY_PORT } from './sandbox.ts';

/**
 * The apply order by kind. Cluster-scoped definitions first (the Traefik CRDs, before any object of their kinds),
 * then the Namespace, the identities and permissions, Secrets and ConfigMaps, storage and the StatefulSet, Services,
 * the workloads, what scales and guards them, the NetworkPolicies, and last the ingress objects.
 */
const ORDER = [
  'CustomResourceDefinition',
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'Secret',
  'ConfigMap',
  'PersistentVolumeClaim',
  'StatefulSet',
  'Service',
  'Deployment',
  'DaemonSet',
  'HorizontalPodAutoscaler',
  'PodDisruptionBudget',
  'NetworkPolicy',
  'Middleware',
  'IngressRoute',
  'Ingress',
];

function rank(o: K8sObject): number {
  const i = ORDER.indexOf(o.kind);
  if (i < 0) throw new Error(`no apply order for kind ${o.kind}`);
  return i;
}

/** Plain JSON (no undefined, no shared references), `apiVersion`, `kind`, `metadata` first. */
function plain(o: K8sObject): K8sObject {
  const { apiVersion, kind, metadata, ...rest } = JSON.parse(JSON.stringify(o)) as K8sObject;
  return { apiVersion, kind, metadata, ...rest };
}

/**
 * Every object of the deployment, in apply order.
 *
 * @example
 * const objects = buildManifests(spec);
 * objects[0].kind // 'CustomResourceDefinition' (own ingress proxy) or 'Namespace'
 * objects.find((o) => o.kind === 'Deployment' && o.metadata.name === spec.app)
 */
export function buildManifests(spec: DeploySpec): K8sObject[] {
  const all = [namespaceObject(spec), ...secrets(spec), ...docdbObjects(spec), ...kvObjects(spec), ...appObjects(spec), ...ingressObjects(spec), ...monitoringObjects(spec), ...networkPolicies(spec), ...sandboxObjects(spec)];
  // A stable sort: within a kind, the order above (databases, app, ingress, monitoring) stays.
  return all
    .map((o, i) => ({ o, i, r: rank(o) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map(({ o }) => plain(o));
}
