/**
 * The kube room: svc's one way to talk to a Kubernetes API server — the
 * connection (client.ts: KUBECONFIG, ~/.kube/config or the pod's service
 * account; objects as plain JSON), a pod's exec subresource (exec.ts) and
 * watches (watch.ts). The deployment (deploy/) and the sandboxes'
 * orchestrator provider (actors/sandbox/) both use it.
 */
export { CLUSTER_ERRORS, ClusterError, connectCluster, Kube, KubeApiError, nodeAddress, poll, reachCluster } from './client.ts';
export type { ClusterErrorCode, KubeList } from './client.ts';
export { EXEC_PROTOCOLS, podExec } from './exec.ts';
export type { PodExecOptions } from './exec.ts';
export { watchObjects } from './watch.ts';
export type { ObjectWatch, WatchEventType, WatchOptions } from './watch.ts';
export type { K8sObject } from './object.ts';
