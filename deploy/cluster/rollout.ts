/**
 * Following a rollout of the app's Deployment to its end: healthy (the new
 * ReplicaSet of *this* app available), or failed — a crash loop, an image that
 * cannot be pulled, a container that cannot be created, or no progress within the
 * Deployment's progressDeadlineSeconds (unschedulable pods, failing readiness).
 * Only the pods of the Deployment's current ReplicaSet count: a crash-looping pod
 * of another app or of an older ReplicaSet never fails a rollout (the original
 * product's false failures).
 *
 * Rolling back is what `kubectl rollout undo` does: the Deployment's pod template
 * is set to that of an earlier revision's ReplicaSet.
 */
import { conditionOf, type Json, type K8sObject } from '../spec.ts';
import { ClusterError, type Kube } from './kube.ts';

const REVISION = 'deployment.kubernetes.io/revision';

/**
 * Waiting reasons that do not go away by waiting. Not ErrImagePull: a first pull error can be a registry's hiccup
 * (the kubelet turns a lasting one into ImagePullBackOff).
 */
const FATAL_WAITING = new Set(['CrashLoopBackOff', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);

export function revisionOf(o: K8sObject | undefined): number {
  return Number(o?.metadata.annotations?.[REVISION] ?? 0);
}

/** The ReplicaSets a Deployment owns, oldest revision first. */
export async function replicaSetsOf(kube: Kube, deployment: K8sObject): Promise<K8sObject[]> {
  const selector = Object.entries(((deployment.spec as Json).selector as { matchLabels?: Record<string, string> }).matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const uid = (deployment.metadata as { uid?: string }).uid;
  const all = await kube.list('apps/v1', 'ReplicaSet', deployment.metadata.namespace, selector);
  return all.filter((rs) => ((rs.metadata.ownerReferences as { uid?: string }[] | undefined) ?? []).some((r) => r.uid === uid)).sort((a, b) => revisionOf(a) - revisionOf(b));
}

/** A pod's trouble, when it has one that waiting will not cure (or any waiting reason when `all`). */
export function podTrouble(pod: K8sObject, all = false): { container: string; reason: string; message: string; lastExit?: number; previous: boolean } | undefined {
  const status = (pod.status ?? {}) as Json;
  const statuses = [...(((status.initContainerStatuses as Json[]) ?? []).map((s) => ({ s, init: true }))), ...(((status.containerStatuses as Json[]) ?? []).map((s) => ({ s, init: false })))];
  for (const { s, init } of statuses) {
    const waiting = (s.state as Json | undefined)?.waiting as Json | undefined;
    const reason = String(waiting?.reason ?? '');
    if (!reason || (!all && !FATAL_WAITING.has(reason))) continue;
    const terminated = (s.lastState as Json | undefined)?.terminated as Json | undefined;
    return {
      container: `${init ? 'init container ' : ''}${String(s.name)}`,
      reason,
      message: String(waiting?.message ?? ''),
      lastExit: terminated?.exitCode as number | undefined,
      previous: terminated !== undefined,
    };
  }
  // A pod in phase Failed (evicted, a node's affinity lost, a node shut down) is replaced by its ReplicaSet: not a failure of the version.
  return undefined;
}

/** Why a pod is not scheduled ('' when it is). */
function unschedulable(pod: K8sObject): string {
  const c = conditionOf(pod, 'PodScheduled');
  return c?.status === 'False' && c.reason === 'Unschedulable' ? String(c.message ?? 'Unschedulable') : '';
}

export interface RolloutFailure {
  reason: string;
  /** The pod the reason is about, and the last lines of its log. */
  pod?: string;
  logs?: string;
}

export interface RolloutOutcome {
  ok: boolean;
  failure?: RolloutFailure;
  /** The revision that rolled out (or failed to). */
  revision: number;
  /** ms from the start of the wait to the outcome. */
  ms: number;
}

/**
 * Wait for the Deployment's rollout: its generation observed, the new ReplicaSet's pods updated, ready and
 * available, the old ones gone, `Available` true — or a failure, found as soon as it shows.
 *
 * @example
 * const outcome = await awaitRollout(kube, 'shop', 'shop', { onProgress: (line) => console.error(line) });
 * if (!outcome.ok) await rollback(kube, 'shop', 'shop');
 */
export async function awaitRollout(
  kube: Kube,
  namespace: string,
  name: string,
  options: { onProgress?: (line: string) => void; pollMs?: number; observeTimeoutMs?: number; timeoutMs?: number } = {},
): Promise<RolloutOutcome> {
  const started = Date.now();
  const pollMs = options.pollMs ?? 250;
  // As `kubectl rollout status`: no limit on a rollout that progresses (ProgressDeadlineExceeded ends one that does not);
  // a limit only on the controller never observing the new generation, and a last guard of an hour.
  const observeTimeoutMs = options.observeTimeoutMs ?? 120_000;
  const timeoutMs = options.timeoutMs ?? 3_600_000;
  let lastLine = '';
  for (;;) {
    const d = await kube.read('apps/v1', 'Deployment', namespace, name);
    if (!d) throw new ClusterError('SVC_ERR_NOT_DEPLOYED', `Deployment ${namespace}/${name} is not in the cluster`);
    const spec = d.spec as Json;
    const status = (d.status ?? {}) as Json;
    const revision = revisionOf(d);
    const done = (ok: boolean, failure?: RolloutFailure): RolloutOutcome => ({ ok, failure, revision, ms: Date.now() - started });
    const observed = Number(status.observedGeneration ?? 0) >= Number(d.metadata.generation ?? 1);
    if (observed) {
      const progressing = conditionOf(d, 'Progressing');
      const desired = Number(spec.replicas ?? 1);
      const updated = Number(status.updatedReplicas ?? 0);
      const ready = Number(status.readyReplicas ?? 0);
      const available = Number(status.availableReplicas ?? 0);
      const total = Number(status.replicas ?? 0);
      const line = `app: ${Math.min(updated, desired)}/${desired} pods of revision ${revision} updated, ${ready} ready${total > updated ? `, ${total - updated} old still serving` : ''}`;
      if (line !== lastLine) options.onProgress?.(line);
      lastLine = line;
      const availableCond = conditionOf(d, 'Available')?.status === 'True';
      // Complete (kubectl's rule): every replica updated, no old one left, every updated one available.
      if (updated >= desired && total <= updated && available >= updated && ready >= desired && availableCond) return done(true);
      // (A ReplicaFailure — quota, admission — may be an old ReplicaSet's or pass: it is named at the deadline, not failed on.)
      const replicaFailure = conditionOf(d, 'ReplicaFailure');
      // The current ReplicaSet's pods: a failure the kubelet reports is a failure now, not at the deadline.
      const current = (await replicaSetsOf(kube, d)).find((rs) => revisionOf(rs) === revision);
      if (current) {
        const hash = current.metadata.labels?.['pod-template-hash'];
        const pods = hash ? (await kube.list('v1', 'Pod', namespace, `pod-template-hash=${hash}`)).filter((p) => ((p.metadata.ownerReferences as { uid?: string }[] | undefined) ?? []).some((r) => r.uid === current.metadata.uid)) : [];
        for (const pod of pods) {
          if (pod.metadata.deletionTimestamp) continue;
          const trouble = podTrouble(pod);
          if (!trouble) continue;
          const logs = await kube.podLog(namespace, pod.metadata.name, { container: trouble.container.replace(/^init container /, '') || undefined, tailLines: 20, previous: trouble.previous });
          const exit = trouble.lastExit !== undefined ? ` (last exit code ${trouble.lastExit})` : '';
          return done(false, { reason: `${trouble.reason}${trouble.container ? ` in ${trouble.container}` : ''} of pod ${pod.metadata.name}${exit}${trouble.message ? `: ${trouble.message}` : ''}`, pod: pod.metadata.name, logs });
        }
        if (progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded') {
          const stuck = pods.map((p) => ({ p, why: unschedulable(p) })).find((x) => x.why !== '');
          const notReady = pods.find((p) => conditionOf(p, 'Ready')?.status !== 'True');
          const why = stuck
            ? `pod ${stuck.p.metadata.name} cannot be scheduled: ${stuck.why}`
            : notReady
              ? `pod ${notReady.metadata.name} never became ready (its readiness probe fails)`
              : replicaFailure?.status === 'True'
                ? `pods cannot be created: ${String(replicaFailure.message ?? replicaFailure.reason ?? '')}`
                : String(progressing.message ?? '');
          const logs = !stuck && notReady ? await kube.podLog(namespace, notReady.metadata.name, { tailLines: 20 }) : undefined;
          return done(false, { reason: `no progress within progressDeadlineSeconds (${spec.progressDeadlineSeconds ?? 600} s): ${why}`, pod: (stuck?.p ?? notReady)?.metadata.name, logs });
        }
      }
    } else if (Date.now() - started > observeTimeoutMs) {
      return done(false, { reason: `the Deployment controller did not observe generation ${d.metadata.generation} within ${Math.round(observeTimeoutMs / 1000)} s (is kube-controller-manager running?)` });
    }
    if (Date.now() - started > timeoutMs) return done(false, { reason: `the rollout did not finish within ${Math.round(timeoutMs / 1000)} s (${lastLine})` });
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Roll the Deployment back to an earlier revision (`to`, or the one before the current): its pod template becomes
 * that revision's, as `kubectl rollout undo` does. Answers the revisions (from, to).
 *
 * @example
 * const { from, to } = await rollback(kube, 'shop', 'shop'); // { from: 3, to: 2 }
 */
export async function rollback(kube: Kube, namespace: string, name: string, to?: number): Promise<{ from: number; to: number }> {
  for (let attempt = 0; ; attempt++) {
    const d = await kube.read('apps/v1', 'Deployment', namespace, name);
    if (!d) throw new ClusterError('SVC_ERR_NOT_DEPLOYED', `Deployment ${namespace}/${name} is not in the cluster: nothing to roll back`);
    const from = revisionOf(d);
    const sets = await replicaSetsOf(kube, d);
    const target = to !== undefined ? sets.find((rs) => revisionOf(rs) === to) : [...sets].reverse().find((rs) => revisionOf(rs) < from);
    if (!target) {
      const kept = sets.map(revisionOf).filter((r) => r !== from);
      throw new ClusterError('SVC_ERR_ROLLBACK', to !== undefined ? `revision ${to} is not kept (kept: ${kept.join(', ') || 'none'}; the current is ${from})` : `no revision before ${from} is kept: nothing to roll back to`);
    }
    if (revisionOf(target) === from) return { from, to: from };
    const template = structuredClone((target.spec as Json).template) as { metadata?: { labels?: Record<string, string> } };
    delete template.metadata?.labels?.['pod-template-hash'];
    const next = structuredClone(d);
    (next.spec as Json).template = template;
    delete next.status;
    try {
      await kube.replace(next);
      return { from, to: revisionOf(target) };
    } catch (error) {
      // A write in between (the autoscaler): read again and retry.
      if ((error as { status?: number }).status === 409 && attempt < 5) continue;
      throw error;
    }
  }
}

/** The revisions kept, for `svc scale rollback` to show. */
export async function revisions(kube: Kube, namespace: string, name: string): Promise<{ revision: number; image: string; current: boolean; created: string }[]> {
  const d = await kube.read('apps/v1', 'Deployment', namespace, name);
  if (!d) return [];
  const current = revisionOf(d);
  return (await replicaSetsOf(kube, d)).map((rs) => {
    const containers = ((((rs.spec as Json).template as Json).spec as Json).containers as Json[]) ?? [];
    return { revision: revisionOf(rs), image: String(containers[0]?.image ?? ''), current: revisionOf(rs) === current, created: String(rs.metadata.creationTimestamp ?? '') };
  });
}
