/**
 * The Namespace and its Pod Security labels.
 *
 * Every pod svc emits runs as a fixed non-root user, without privilege
 * escalation, with every capability dropped and seccomp RuntimeDefault —
 * the `restricted` profile — except node-exporter (monitoring with
 * `k8s_metrics_enabled`), which reads the host's network, processes and
 * filesystem. No level but `privileged` admits that (`baseline` refuses host
 * namespaces and host paths too), so the namespace enforces `privileged`
 * only while node-exporter runs, and always warns and audits at
 * `restricted`.
 *
 * The Namespace object is always emitted (the apply creates it, or patches
 * the labels of one that exists). A shared namespace — `default` — gets the
 * warn and audit labels only: enforcing there would refuse other workloads'
 * pods; svc's own pods comply either way.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { clusterMeta, sortKeys } from './common.ts';
import { needsHostAccess } from './monitoring.ts';

/** Namespaces other workloads share: svc does not enforce a level there. */
const SHARED_NAMESPACES = new Set(['default']);

/**
 * The Pod Security level the namespace enforces (undefined: none, a shared namespace).
 *
 * @example
 * enforcedLevel({ ...spec, namespace: 'shop' }) // 'restricted'
 */
export function enforcedLevel(spec: DeploySpec): 'restricted' | 'privileged' | undefined {
  if (SHARED_NAMESPACES.has(spec.namespace)) return undefined;
  return needsHostAccess(spec) ? 'privileged' : 'restricted';
}

/**
 * The Namespace object (cluster-scoped), with its Pod Security labels.
 *
 * @example
 * namespaceObject(spec).metadata.labels['pod-security.kubernetes.io/warn'] // 'restricted'
 */
export function namespaceObject(spec: DeploySpec): K8sObject {
  const metadata = clusterMeta(spec, spec.namespace, 'cluster');
  const level = enforcedLevel(spec);
  const security: Record<string, string> = {
    ...(level ? { 'pod-security.kubernetes.io/enforce': level, 'pod-security.kubernetes.io/enforce-version': 'latest' } : {}),
    'pod-security.kubernetes.io/audit': 'restricted',
    'pod-security.kubernetes.io/audit-version': 'latest',
    'pod-security.kubernetes.io/warn': 'restricted',
    'pod-security.kubernetes.io/warn-version': 'latest',
  };
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { ...metadata, labels: sortKeys({ ...metadata.labels, ...security }) } };
}
