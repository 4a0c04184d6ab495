/**
 * The workload controllers: Deployment → ReplicaSets (template hash, revisions, rolling update within maxSurge
 * and maxUnavailable, Recreate, history limit, the Available and Progressing conditions with the progress
 * deadline), ReplicaSet → pods, StatefulSet → ordered pods and their claims, DaemonSet → the node's pod,
 * Job → pods until one succeeds or the backoff limit is passed. Each reconcile is one synchronous step over the
 * stored objects; the controller repeats passes until nothing changes.
 */
import { createHash } from 'node:crypto';
import type { Registry } from './registry.ts';
import { builtinOf } from './resources.ts';
import { selects } from './selectors.ts';
import { clone, isObj, randomSuffix, safeEncode, same, timestamp, type Obj } from './types.ts';

export const POD = builtinOf('Pod');
export const REPLICASET = builtinOf('ReplicaSet');
export const DEPLOYMENT = builtinOf('Deployment');
export const STATEFULSET = builtinOf('StatefulSet');
export const DAEMONSET = builtinOf('DaemonSet');
export const JOB = builtinOf('Job');
export const PVC = builtinOf('PersistentVolumeClaim');
export const REVISION = builtinOf('ControllerRevision');

const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';

/** What the workload controllers share. */
export interface WorkloadContext {
  registry: Registry;
  /** Whether the controller has observed this object's generation (false while `observeDelayMs` runs). */
  observed(object: Obj): boolean;
  /** When the Deployment last made progress, by uid (and what progress looked like then). */
  progress: Map<string, { key: string; at: number }>;
}

/** JSON with sorted keys: the same template always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObj(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The 10-character hash of a pod template (`pod-template-hash`, `controller-revision-hash`).
 *
 * @example
 * templateHash({ metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'web:1' }] } }); // e.g. '7d4b9c5f8x'
 */
export function templateHash(template: unknown): string {
  return safeEncode(createHash('sha256').update(canonical(template)).digest(), 10);
}

function ownerRef(owner: Obj): Obj {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true };
}

/** The objects of a list whose controller is `owner`. */
function ownedBy(list: Obj[], owner: Obj): Obj[] {
  return list.filter((o) => (o.metadata.ownerReferences ?? []).some((r: Obj) => r.uid === owner.metadata.uid && r.controller === true));
}

export function isReady(pod: Obj): boolean {
  return !pod.metadata.deletionTimestamp && (pod.status?.conditions ?? []).some((c: Obj) => c.type === 'Ready' && c.status === 'True');
}

function isAvailable(pod: Obj, minReadySeconds: number): boolean {
  if (!isReady(pod)) return false;
  if (!minReadySeconds) return true;
  const since = (pod.status?.conditions ?? []).find((c: Obj) => c.type === 'Ready')?.lastTransitionTime;
  return since !== undefined && Date.now() - Date.parse(since) >= minReadySeconds * 1000;
}

/** A pod that counts: not being deleted, not finished. */
function isActive(pod: Obj): boolean {
  return !pod.metadata.deletionTimestamp && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

/** Drop the zero counts, as the API's omitempty does (`keep` names the ones that are always there). */
function compact(status: Obj, keep: string[] = []): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(status)) if (v !== undefined && (v !== 0 || keep.includes(k))) out[k] = v;
  return out;
}

function createPod(ctx: WorkloadContext, owner: Obj, template: Obj, name: string | undefined, labels: Obj, extraSpec: Obj = {}): Obj {
  const pod: Obj = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(name ? { name } : { name: `${owner.metadata.name}-${randomSuffix()}`, generateName: `${owner.metadata.name}-` }),
      namespace: owner.metadata.namespace,
      labels: { ...template.metadata?.labels, ...labels },
      ...(template.metadata?.annotations ? { annotations: clone(template.metadata.annotations) } : {}),
      ownerReferences: [ownerRef(owner)],
    },
    spec: { ...clone(template.spec ?? {}), ...extraSpec },
  };
  return ctx.registry.createInternal(POD, pod);
}

/** Delete a pod as the API server would (a runtime gets its grace period). */
function deletePod(ctx: WorkloadContext, pod: Obj): void {
  if (!pod.metadata.deletionTimestamp) ctx.registry.remove(POD, pod);
}

/** `maxSurge`/`maxUnavailable`: an int, or a percent of `total` (surge rounds up, unavailable down). */
function resolve(value: unknown, total: number, up: boolean): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+)%$/.exec(String(value ?? '25%'));
  const pct = m ? Number(m[1]) : 25;
  return up ? Math.ceil((pct * total) / 100) : Math.floor((pct * total) / 100);
}

/** A Deployment's maxSurge and maxUnavailable for its replicas (both 0 → maxUnavailable 1, as the real one makes it). */
function limits(d: Obj): { surge: number; unavailable: number } {
  const desired = d.spec?.replicas ?? 1;
  if (d.spec?.strategy?.type === 'Recreate') return { surge: 0, unavailable: desired };
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  const surge = resolve(ru.maxSurge, desired, true);
  let unavailable = resolve(ru.maxUnavailable, desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable: Math.min(unavailable, desired) };
}

function revisionOf(rs: Obj): number {
  return Number(rs.metadata.annotations?.[REVISION_ANNOTATION] ?? 0);
}

/** A ReplicaSet's template minus its pod-template-hash label: what a Deployment's template is compared with. */
function unhashed(template: Obj | undefined): Obj {
  const t = clone(template ?? {});
  if (t.metadata?.labels) {
    delete t.metadata.labels['pod-template-hash'];
  }
  return t;
}

function setReplicas(ctx: WorkloadContext, rs: Obj, replicas: number, d: Obj): void {
  if ((rs.spec.replicas ?? 1) === replicas) return;
  const copy = clone(rs);
  copy.spec.replicas = replicas;
  copy.metadata.annotations = {
    ...copy.metadata.annotations,
    'deployment.kubernetes.io/desired-replicas': String(d.spec.replicas ?? 1),
    'deployment.kubernetes.io/max-replicas': String((d.spec.replicas ?? 1) + limits(d).surge),
  };
  Object.assign(rs, ctx.registry.save(REPLICASET, copy));
}

/** One step of a Deployment. */
export function reconcileDeployment(ctx: WorkloadContext, d: Obj): void {
  if (!ctx.observed(d) || d.metadata.deletionTimestamp) return;
  const store = ctx.registry.store;
  const ns = d.metadata.namespace;
  const owned = ownedBy(store.list(REPLICASET, ns), d);
  const desired: number = d.spec?.replicas ?? 1;
  const template = clone(d.spec?.template ?? {});
  const hash = templateHash(template);
  let current = owned.find((rs) => same(unhashed(rs.spec?.template), template));
  const maxRevision = Math.max(0, ...owned.map(revisionOf));
  let created = false;
  let found = false;
  if (!current && !d.spec?.paused) {
    const hashed = clone(template);
    hashed.metadata = { ...hashed.metadata, labels: { ...hashed.metadata?.labels, 'pod-template-hash': hash } };
    const anyOld = owned.some((rs) => (rs.spec?.replicas ?? 0) > 0);
    current = ctx.registry.createInternal(REPLICASET, {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        namespace: ns,
        labels: { ...template.metadata?.labels, 'pod-template-hash': hash },
        annotations: {
          [REVISION_ANNOTATION]: String(maxRevision + 1),
          'deployment.kubernetes.io/desired-replicas': String(desired),
          'deployment.kubernetes.io/max-replicas': String(desired + limits(d).surge),
        },
        ownerReferences: [ownerRef(d)],
      },
      spec: {
        replicas: anyOld ? 0 : desired,
        ...(d.spec?.minReadySeconds ? { minReadySeconds: d.spec.minReadySeconds } : {}),
        selector: { ...clone(d.spec.selector), matchLabels: { ...d.spec.selector?.matchLabels, 'pod-template-hash': hash } },
        template: hashed,
      },
    });
    created = true;
  } else if (current && revisionOf(current) < maxRevision) {
    // A template equal to an older ReplicaSet's (a rollback): that ReplicaSet comes back with the next revision.
    const copy = clone(current);
    copy.metadata.annotations = { ...copy.metadata.annotations, [REVISION_ANNOTATION]: String(maxRevision + 1) };
    current = ctx.registry.save(REPLICASET, copy);
    found = true;
  }
  const olds = owned.filter((rs) => rs.metadata.uid !== current?.metadata.uid).sort((a, b) => revisionOf(a) - revisionOf(b));
  if (current && revisionOf(current) && d.metadata.annotations?.[REVISION_ANNOTATION] !== String(revisionOf(current))) {
    const copy = clone(d);
    copy.metadata.annotations = { ...copy.metadata.annotations, [REVISION_ANNOTATION]: String(revisionOf(current)) };
    Object.assign(d, ctx.registry.save(DEPLOYMENT, copy));
  }
  if (current && !d.spec?.paused) rollout(ctx, d, current, olds, desired);
  // The history: old ReplicaSets scaled to 0 and without pods, oldest first, beyond revisionHistoryLimit.
  const limit = d.spec?.revisionHistoryLimit ?? 10;
  const idle = olds.filter((rs) => (rs.spec?.replicas ?? 0) === 0 && (rs.status?.replicas ?? 0) === 0);
  for (const rs of idle.slice(0, Math.max(0, idle.length - limit))) ctx.registry.remove(REPLICASET, rs);
  deploymentStatus(
    ctx,
    d,
    current,
    olds.filter((rs) => store.peek(REPLICASET, ns, rs.metadata.name)),
    desired,
    created ? 'created'
    : found ? 'found'
    : undefined,
  );
}

function rollout(ctx: WorkloadContext, d: Obj, current: Obj, olds: Obj[], desired: number): void {
  const specOf = (rs: Obj): number => rs.spec?.replicas ?? 0;
  const available = (rs: Obj): number => rs.status?.availableReplicas ?? 0;
  if (d.spec?.strategy?.type === 'Recreate') {
    for (const rs of olds) setReplicas(ctx, rs, 0, d);
    const oldPods = olds.reduce((n, rs) => n + (rs.status?.replicas ?? 0), 0);
    if (oldPods === 0) setReplicas(ctx, current, desired, d);
    return;
  }
  if (olds.every((rs) => specOf(rs) === 0)) {
    setReplicas(ctx, current, desired, d);
    return;
  }
  const { surge, unavailable } = limits(d);
  const total = (): number => specOf(current) + olds.reduce((n, rs) => n + specOf(rs), 0);
  // Scale up the new ReplicaSet within maxSurge.
  if (specOf(current) < desired && total() < desired + surge) setReplicas(ctx, current, Math.min(desired, specOf(current) + desired + surge - total()), d);
  if (specOf(current) > desired) setReplicas(ctx, current, desired, d);
  // Scale down old ReplicaSets: first their unhealthy pods, then healthy ones, keeping desired - maxUnavailable available.
  const minAvailable = desired - unavailable;
  const newUnavailable = Math.max(0, specOf(current) - available(current));
  let cleanup = total() - minAvailable - newUnavailable;
  for (const rs of olds) {
    if (cleanup <= 0) break;
    const unhealthy = specOf(rs) - available(rs);
    if (unhealthy <= 0) continue;
    const n = Math.min(cleanup, unhealthy);
    setReplicas(ctx, rs, specOf(rs) - n, d);
    cleanup -= n;
  }
  let scaleDown = available(current) + olds.reduce((n, rs) => n + Math.min(available(rs), specOf(rs)), 0) - minAvailable;
  for (const rs of olds) {
    if (scaleDown <= 0) break;
    if (specOf(rs) === 0) continue;
    const n = Math.min(scaleDown, specOf(rs));
    setReplicas(ctx, rs, specOf(rs) - n, d);
    scaleDown -= n;
  }
}

function deploymentStatus(ctx: WorkloadContext, d: Obj, current: Obj | undefined, olds: Obj[], desired: number, fresh: 'created' | 'found' | undefined): void {
  const all = [...(current ? [current] : []), ...olds];
  const sum = (f: (rs: Obj) => number): number => all.reduce((n, rs) => n + f(rs), 0);
  const replicas = sum((rs) => rs.status?.replicas ?? 0);
  const updated = current?.status?.replicas ?? 0;
  const ready = sum((rs) => rs.status?.readyReplicas ?? 0);
  const available = sum((rs) => rs.status?.availableReplicas ?? 0);
  const unavailable = Math.max(0, sum((rs) => rs.spec?.replicas ?? 0) - available);
  const oldPods = olds.reduce((n, rs) => n + (rs.status?.replicas ?? 0), 0);
  const now = Date.now();
  const stamp = timestamp(now);
  const previous: Obj[] = d.status?.conditions ?? [];
  const condition = (type: string, status: string, reason: string, message: string, progressed: boolean): Obj => {
    const before = previous.find((c) => c.type === type);
    const unchanged = before?.status === status && before.reason === reason && before.message === message;
    return {
      type,
      status,
      lastUpdateTime: unchanged && !progressed ? before.lastUpdateTime : stamp,
      lastTransitionTime: before?.status === status ? before.lastTransitionTime : stamp,
      reason,
      message,
    };
  };
  const availableOk = available >= desired - limits(d).unavailable;
  const conditions = [
    availableOk ?
      condition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.', false)
    : condition('Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.', false),
  ];
  const rsName = current?.metadata.name ?? '';
  const key = `${rsName}|${updated}|${ready}|${available}|${oldPods}|${desired}`;
  const track = ctx.progress.get(d.metadata.uid);
  const progressed = !track || track.key !== key;
  if (progressed) ctx.progress.set(d.metadata.uid, { key, at: now });
  const since = ctx.progress.get(d.metadata.uid)?.at ?? now;
  const complete = updated === desired && replicas === desired && available === desired && oldPods === 0;
  const deadline = (d.spec?.progressDeadlineSeconds ?? 600) * 1000;
  const before = previous.find((c) => c.type === 'Progressing');
  if (d.spec?.paused) conditions.push(condition('Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused', false));
  else if (fresh === 'created') conditions.push(condition('Progressing', 'True', 'NewReplicaSetCreated', `Created new replica set "${rsName}"`, true));
  else if (fresh === 'found') conditions.push(condition('Progressing', 'True', 'FoundNewReplicaSet', `Found new replica set "${rsName}"`, true));
  else if (complete) conditions.push(condition('Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${rsName}" has successfully progressed.`, false));
  else if (!progressed && now - since > deadline) conditions.push(condition('Progressing', 'False', 'ProgressDeadlineExceeded', `ReplicaSet "${rsName}" has timed out progressing.`, false));
  else if (!progressed && before?.status === 'True' && before.reason !== 'NewReplicaSetAvailable' && String(before.message).includes(`"${rsName}"`)) conditions.push(clone(before));
  else conditions.push(condition('Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${rsName}" is progressing.`, progressed));
  const status = compact({ observedGeneration: d.metadata.generation, replicas, updatedReplicas: updated, readyReplicas: ready, availableReplicas: available, unavailableReplicas: unavailable });
  status.conditions = conditions;
  if (same(status, d.status)) return;
  const copy = ctx.registry.store.get(DEPLOYMENT, d.metadata.namespace, d.metadata.name);
  if (!copy) return;
  copy.status = status;
  ctx.registry.save(DEPLOYMENT, copy);
}

/** Pods to remove first: unscheduled, pending, not ready, then the newest. */
function deletionOrder(pods: Obj[]): Obj[] {
  const rank = (p: Obj): number =>
    !p.spec?.nodeName ? 0
    : p.status?.phase === 'Pending' ? 1
    : !isReady(p) ? 2
    : 3;
  return [...pods].sort((a, b) => rank(a) - rank(b) || String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)));
}

/** One step of a ReplicaSet: as many active pods as its replicas, and its status. */
export function reconcileReplicaSet(ctx: WorkloadContext, rs: Obj): void {
  if (rs.metadata.deletionTimestamp) return;
  const store = ctx.registry.store;
  const pods = ownedBy(store.peekList(POD, rs.metadata.namespace), rs);
  let active = pods.filter(isActive);
  const desired: number = rs.spec?.replicas ?? 1;
  if (active.length < desired) {
    for (let i = active.length; i < desired; i++) createPod(ctx, rs, rs.spec.template, undefined, {});
  } else if (active.length > desired) {
    for (const pod of deletionOrder(active).slice(0, active.length - desired)) deletePod(ctx, pod);
  }
  active = ownedBy(store.peekList(POD, rs.metadata.namespace), rs).filter(isActive);
  const minReady = rs.spec?.minReadySeconds ?? 0;
  const labels = rs.spec?.template?.metadata?.labels ?? {};
  const status = compact(
    {
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) => Object.entries(labels).every(([k, v]) => p.metadata.labels?.[k] === v)).length,
      readyReplicas: active.filter(isReady).length,
      availableReplicas: active.filter((p) => isAvailable(p, minReady)).length,
      observedGeneration: rs.metadata.generation,
    },
    ['replicas'],
  );
  if (same(status, rs.status)) return;
  const copy = store.get(REPLICASET, rs.metadata.namespace, rs.metadata.name);
  if (!copy) return;
  copy.status = status;
  ctx.registry.save(REPLICASET, copy);
}

/** The ControllerRevision of a template (made when missing); its name is `{owner}-{hash}`. */
function controllerRevision(ctx: WorkloadContext, owner: Obj, hash: string): string {
  const store = ctx.registry.store;
  const name = `${owner.metadata.name}-${hash}`;
  if (!store.peek(REVISION, owner.metadata.namespace, name)) {
    const existing = ownedBy(store.peekList(REVISION, owner.metadata.namespace), owner);
    ctx.registry.createInternal(REVISION, {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: { name, namespace: owner.metadata.namespace, labels: { ...owner.spec?.selector?.matchLabels, 'controller.kubernetes.io/hash': hash }, ownerReferences: [ownerRef(owner)] },
      data: { spec: { template: { ...clone(owner.spec.template), $patch: 'replace' } } },
      revision: Math.max(0, ...existing.map((r) => Number(r.revision ?? 0))) + 1,
    });
  }
  return name;
}

/** One step of a StatefulSet: claims, then pods `{name}-{i}` in order (or in parallel), updates from the highest ordinal. */
export function reconcileStatefulSet(ctx: WorkloadContext, sts: Obj): void {
  if (!ctx.observed(sts) || sts.metadata.deletionTimestamp) return;
  const store = ctx.registry.store;
  const ns = sts.metadata.namespace;
  const name = sts.metadata.name;
  const desired: number = sts.spec?.replicas ?? 1;
  const revision = controllerRevision(ctx, sts, templateHash(sts.spec.template));
  const parallel = sts.spec?.podManagementPolicy === 'Parallel';
  const ordinal = (p: Obj): number => Number(/-(\d+)$/.exec(p.metadata.name)?.[1] ?? -1);
  const pods = (): Obj[] => ownedBy(store.peekList(POD, ns), sts).sort((a, b) => ordinal(a) - ordinal(b));
  const claims: Obj[] = sts.spec?.volumeClaimTemplates ?? [];
  for (let i = 0; i < desired; i++) {
    for (const claim of claims) {
      const claimName = `${claim.metadata?.name}-${name}-${i}`;
      if (store.peek(PVC, ns, claimName)) continue;
      ctx.registry.createInternal(PVC, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: claimName,
          namespace: ns,
          labels: { ...claim.metadata?.labels, ...sts.spec?.selector?.matchLabels },
          ...(claim.metadata?.annotations ? { annotations: clone(claim.metadata.annotations) } : {}),
          ...(sts.spec?.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete' ? { ownerReferences: [{ ...ownerRef(sts), controller: true }] } : {}),
        },
        spec: clone(claim.spec ?? {}),
      });
    }
  }
  const byOrdinal = new Map(pods().map((p) => [ordinal(p), p]));
  for (let i = 0; i < desired; i++) {
    const pod = byOrdinal.get(i);
    if (pod) {
      if (!parallel && (!isReady(pod) || pod.metadata.deletionTimestamp)) break;
      continue;
    }
    const volumes = claims.map((c) => ({ name: c.metadata?.name, persistentVolumeClaim: { claimName: `${c.metadata?.name}-${name}-${i}` } }));
    const template = clone(sts.spec.template);
    createPod(
      ctx,
      sts,
      template,
      `${name}-${i}`,
      { 'controller-revision-hash': revision, 'statefulset.kubernetes.io/pod-name': `${name}-${i}`, 'apps.kubernetes.io/pod-index': String(i) },
      { hostname: `${name}-${i}`, ...(sts.spec?.serviceName ? { subdomain: sts.spec.serviceName } : {}), ...(volumes.length ? { volumes: [...(template.spec?.volumes ?? []), ...volumes] } : {}) },
    );
    if (!parallel) break;
  }
  const current = pods();
  const terminating = current.some((p) => p.metadata.deletionTimestamp);
  const extras = current.filter((p) => ordinal(p) >= desired && !p.metadata.deletionTimestamp).reverse();
  if (extras.length && (parallel || !terminating)) for (const pod of parallel ? extras : extras.slice(0, 1)) deletePod(ctx, pod);
  const inRange = current.filter((p) => ordinal(p) < desired);
  const allReady = inRange.length === desired && inRange.every(isReady);
  const strategy = sts.spec?.updateStrategy ?? {};
  if (strategy.type !== 'OnDelete' && allReady && !terminating && !extras.length) {
    const partition = strategy.rollingUpdate?.partition ?? 0;
    const stale = inRange.filter((p) => ordinal(p) >= partition && p.metadata.labels?.['controller-revision-hash'] !== revision).pop();
    if (stale) deletePod(ctx, stale);
  }
  const active = pods().filter((p) => !p.metadata.deletionTimestamp);
  const updated = active.filter((p) => p.metadata.labels?.['controller-revision-hash'] === revision);
  const done = updated.length === desired && active.length === desired;
  const currentRevision = done ? revision : (sts.status?.currentRevision ?? revision);
  const status = compact(
    {
      observedGeneration: sts.metadata.generation,
      replicas: active.length,
      readyReplicas: active.filter(isReady).length,
      currentReplicas: active.filter((p) => p.metadata.labels?.['controller-revision-hash'] === currentRevision).length,
      updatedReplicas: updated.length,
      currentRevision,
      updateRevision: revision,
      collisionCount: 0,
      availableReplicas: active.filter((p) => isAvailable(p, sts.spec?.minReadySeconds ?? 0)).length,
    },
    ['replicas', 'availableReplicas'],
  );
  if (same(status, sts.status)) return;
  const copy = store.get(STATEFULSET, ns, name);
  if (!copy) return;
  copy.status = status;
  ctx.registry.save(STATEFULSET, copy);
}

/** One step of a DaemonSet: one pod on the node, replaced when the template changes. */
export function reconcileDaemonSet(ctx: WorkloadContext, ds: Obj): void {
  if (!ctx.observed(ds) || ds.metadata.deletionTimestamp) return;
  const store = ctx.registry.store;
  const ns = ds.metadata.namespace;
  const hash = templateHash(ds.spec.template);
  controllerRevision(ctx, ds, hash);
  const pods = (): Obj[] => ownedBy(store.peekList(POD, ns), ds);
  const active = pods().filter(isActive);
  if (active.length === 0 && !pods().some((p) => p.metadata.deletionTimestamp)) {
    createPod(ctx, ds, ds.spec.template, undefined, { 'controller-revision-hash': hash, 'pod-template-generation': String(ds.metadata.generation ?? 1) }, { nodeName: 'fake-node' });
  } else {
    const stale = active.find((p) => p.metadata.labels?.['controller-revision-hash'] !== hash);
    if (stale && ds.spec?.updateStrategy?.type !== 'OnDelete') deletePod(ctx, stale);
    for (const extra of active.slice(1)) deletePod(ctx, extra);
  }
  const now = pods().filter(isActive);
  const ready = now.filter(isReady).length;
  const status = compact(
    {
      currentNumberScheduled: now.length,
      numberMisscheduled: 0,
      desiredNumberScheduled: 1,
      numberReady: ready,
      observedGeneration: ds.metadata.generation,
      updatedNumberScheduled: now.filter((p) => p.metadata.labels?.['controller-revision-hash'] === hash).length,
      numberAvailable: now.filter((p) => isAvailable(p, ds.spec?.minReadySeconds ?? 0)).length,
      numberUnavailable: Math.max(0, 1 - ready),
    },
    ['currentNumberScheduled', 'numberMisscheduled', 'desiredNumberScheduled', 'numberReady'],
  );
  if (same(status, ds.status)) return;
  const copy = store.get(DAEMONSET, ns, ds.metadata.name);
  if (!copy) return;
  copy.status = status;
  ctx.registry.save(DAEMONSET, copy);
}

/** One step of a Job: pods (restartPolicy Never or OnFailure) until `completions` succeed, or more than `backoffLimit` fail. */
export function reconcileJob(ctx: WorkloadContext, job: Obj): void {
  if (job.metadata.deletionTimestamp) return;
  const store = ctx.registry.store;
  const ns = job.metadata.namespace;
  const finished = (job.status?.conditions ?? []).some((c: Obj) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
  const pods = (): Obj[] => ownedBy(store.peekList(POD, ns), job).filter((p) => selects(job.spec?.selector, p.metadata.labels ?? {}));
  const succeeded = pods().filter((p) => p.status?.phase === 'Succeeded').length;
  const failed = pods().filter((p) => p.status?.phase === 'Failed').length;
  const completions = job.spec?.completions ?? 1;
  const backoffLimit = job.spec?.backoffLimit ?? 6;
  const stamp = timestamp();
  const conditions: Obj[] = clone(job.status?.conditions ?? []);
  if (!finished && !job.spec?.suspend) {
    if (succeeded >= completions) {
      conditions.push({
        type: 'SuccessCriteriaMet',
        status: 'True',
        lastProbeTime: stamp,
        lastTransitionTime: stamp,
        reason: 'CompletionsReached',
        message: 'Reached expected number of succeeded pods',
      });
      conditions.push({ type: 'Complete', status: 'True', lastProbeTime: stamp, lastTransitionTime: stamp, reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' });
    } else if (failed > backoffLimit) {
      conditions.push({
        type: 'FailureTarget',
        status: 'True',
        lastProbeTime: stamp,
        lastTransitionTime: stamp,
        reason: 'BackoffLimitExceeded',
        message: 'Job has reached the specified backoff limit',
      });
      conditions.push({ type: 'Failed', status: 'True', lastProbeTime: stamp, lastTransitionTime: stamp, reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' });
    } else {
      const running = pods().filter(isActive).length;
      const parallelism = Math.min(job.spec?.parallelism ?? 1, completions - succeeded);
      for (let i = running; i < parallelism; i++) createPod(ctx, job, job.spec.template, undefined, {});
    }
  }
  const nowFinished = conditions.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
  const complete = conditions.some((c) => c.type === 'Complete' && c.status === 'True');
  if (nowFinished) for (const p of pods().filter(isActive)) deletePod(ctx, p);
  const active = pods().filter(isActive);
  const status = compact({
    ...(conditions.length ? { conditions } : {}),
    startTime: job.status?.startTime ?? stamp,
    ...(complete ? { completionTime: job.status?.completionTime ?? stamp } : {}),
    active: active.length,
    ready: active.filter(isReady).length,
    succeeded,
    failed,
    terminating: pods().filter((p) => p.metadata.deletionTimestamp).length,
    uncountedTerminatedPods: {},
  });
  if (same(status, job.status)) return;
  const copy = store.get(JOB, ns, job.metadata.name);
  if (!copy) return;
  copy.status = status;
  ctx.registry.save(JOB, copy);
}
