/**
 * Reading a deployment's objects for `svc scale status`: every list fresh from
 * the API server (never a cache that can lie), by the app's label, handed to the
 * pure {@link deploymentStatus}.
 */
import type { DeploySpec } from '../spec.ts';
import { servedUrl } from '../plan.ts';
import { nodeAddress, type Kube } from './kube.ts';
import { deploymentStatus, type ClusterSnapshot, type StatusReport } from './status.ts';

/**
 * The app's objects, listed now.
 *
 * @example
 * const snapshot = await readSnapshot(kube, spec);
 */
export async function readSnapshot(kube: Kube, spec: DeploySpec): Promise<ClusterSnapshot> {
  const sel = `app.kubernetes.io/name=${spec.app}`;
  const ns = spec.namespace;
  const [deployments, statefulSets, daemonSets, replicaSets, pods, services, pvcs, ingressRoutes, ingresses, certificates] = await Promise.all([
    kube.list('apps/v1', 'Deployment', ns, sel),
    kube.list('apps/v1', 'StatefulSet', ns, sel),
    kube.list('apps/v1', 'DaemonSet', ns, sel),
    kube.list('apps/v1', 'ReplicaSet', ns, sel),
    kube.list('v1', 'Pod', ns, sel),
    kube.list('v1', 'Service', ns, sel),
    kube.list('v1', 'PersistentVolumeClaim', ns, sel),
    kube.list('traefik.io/v1alpha1', 'IngressRoute', ns, sel),
    kube.list('networking.k8s.io/v1', 'Ingress', ns, sel),
    kube.list('cert-manager.io/v1', 'Certificate', ns, sel),
  ]);
  return { deployments, statefulSets, daemonSets, replicaSets, pods, services, pvcs, ingressRoutes, ingresses, certificates };
}

/**
 * The status of the app's deployment as the cluster has it now.
 *
 * @example
 * process.stdout.write(renderStatus(await readStatus(kube, spec)));
 */
export async function readStatus(kube: Kube, spec: DeploySpec): Promise<StatusReport> {
  const snapshot = await readSnapshot(kube, spec);
  const urls: string[] = [];
  if (spec.ingress.className === '') {
    const address = await nodeAddress(kube);
    if (address) urls.push(`http://${address.includes(':') ? `[${address}]` : address}:${spec.nodePort}/`);
  } else {
    urls.push(servedUrl(spec));
  }
  const external: Record<string, string> = {};
  if (!spec.docdb.provision) external.docdb = spec.docdb.uri ? 'external: [scale.database] docdb_uri' : 'not provisioned (docdb_enabled = false)';
  if (!spec.kv.provision) external.kv = spec.kv.url ? 'external: [scale.database] kv_url' : 'not provisioned (kv_enabled = false)';
  return deploymentStatus(snapshot, { app: spec.app, urls, domain: spec.ingress.domain || undefined, external });
}
