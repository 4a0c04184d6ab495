/**
 * The cluster side of the deploy room: connecting and running a command in a pod (the kube room's, re-exported), applying a plan
 * (apply.ts), following and rolling back rollouts (rollout.ts), the whole deploy
 * (deploy.ts), TLS through cert-manager (tls.ts), status (status.ts, a pure
 * function of the objects; observe.ts reads them) and destroy (destroy.ts).
 */
export { CLUSTER_ERRORS, ClusterError, connectCluster, EXEC_PROTOCOLS, Kube, KubeApiError, nodeAddress, podExec, reachCluster, watchObjects } from './kube.ts';
export type { ClusterErrorCode, ObjectWatch, PodExecOptions, WatchEventType, WatchOptions } from './kube.ts';
export { adoptCredentials, applyObjects, applyOrder, CREATE_ONLY_ANNOTATION, objectId, provisionedOnce } from './apply.ts';
export type { ApplyReport } from './apply.ts';
export { awaitRollout, podTrouble, replicaSetsOf, revisionOf, revisions, rollback } from './rollout.ts';
export type { RolloutFailure, RolloutOutcome } from './rollout.ts';
export { deployToCluster, nodePortHolder, preflight } from './deploy.ts';
export type { DeployResult } from './deploy.ts';
export { bindTls, boundTls, carryTls, dnsRecord, enableTls, ingressRef, liveTls, tlsConfigProblems, tlsNames, tlsObjects, tlsRoute } from './tls.ts';
export { destroyApply, destroyPlan, destroyText } from './destroy.ts';
export type { DestroyItem, DestroyPlan } from './destroy.ts';
export { COMPONENT_NAMES, deploymentStatus, renderStatus, STATUS_MEANINGS, statusChanged, statusJson } from './status.ts';
export type { ClusterSnapshot, ComponentRow, Status, StatusJson, StatusReport } from './status.ts';
export { readSnapshot, readStatus } from './observe.ts';
