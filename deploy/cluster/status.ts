/**
 * The live state of a deployment as `svc scale status` shows it: one row per
 * component, computed from the cluster's objects alone (a pure function of a
 * snapshot: no I/O, no cache, no clock).
 *
 * What counts: only objects labelled `app.kubernetes.io/name=<app>`, grouped by
 * `app.kubernetes.io/component`. A component's *current pods* are, for a
 * Deployment, the pods of its current ReplicaSet (the one whose
 * `deployment.kubernetes.io/revision` is the Deployment's); for a StatefulSet or
 * a DaemonSet, every pod it owns (they replace pods in place). Pods of an older
 * ReplicaSet being scaled down never change the status; the reason says
 * `rolling out` while they are being replaced. Terminating pods are listed but
 * not counted. `desired` is a Deployment's `spec.replicas` (absent: 1), a
 * StatefulSet's `spec.replicas`, a DaemonSet's `status.desiredNumberScheduled`.
 *
 * The status, first match wins:
 * 1. Not Deployed — the workload object does not exist.
 * 2. Running, reason `scaled to 0` — desired is 0 (any pods left are on their way out).
 * 3. Restarting — a current pod has a container or init container waiting in CrashLoopBackOff, however many are ready.
 * 4. Failed — no current pod is ready and waiting will not help: a container waiting with ImagePullBackOff,
 *    ErrImagePull, ErrImageNeverPull, InvalidImageName, CreateContainerConfigError or CreateContainerError; every
 *    current pod in phase Failed (an evicted pod that a new one replaces is not a failure); the Deployment's
 *    Progressing condition False with reason ProgressDeadlineExceeded; or a claim of the component Lost.
 * 5. Running — ready ≥ desired and the rollout is complete: a Deployment's updatedReplicas reach desired (pods of an
 *    older ReplicaSet still being scaled down do not matter), a StatefulSet's current and update revisions agree, a
 *    DaemonSet's scheduled pods are all updated.
 * 6. Degraded — some current pods are ready, but fewer than desired (or all are, with a rollout still replacing pods).
 * 7. Pending — no current pod is ready and nothing failed: pods being created, scheduled or started, running but not
 *    yet ready, or no pod yet at all.
 *
 * The row's reason is the most telling pod's reason (crash loop, then a fatal wait, a failed pod, an unschedulable
 * pod, a starting pod, a pod not ready), then the rollout's and the Deployment's notes.
 */
import type { Component } from '../manifests/common.ts';
import { conditionOf, type Json, type K8sObject } from '../spec.ts';

/** A component's status. */
export type Status = 'Running' | 'Degraded' | 'Pending' | 'Restarting' | 'Failed' | 'Not Deployed';

/**
 * What each status means, word for word as the README states it.
 *
 * @example
 * STATUS_MEANINGS.Restarting // 'At least one pod of the current revision …'
 */
export const STATUS_MEANINGS: Readonly<Record<Status, string>> = {
  Running: 'Every desired pod of the current revision is ready and the rollout is complete. A component scaled to 0 replicas is Running 0/0 (reason `scaled to 0`).',
  Degraded: [
    'Some pods of the current revision are ready, but fewer than desired (a pod lost, a scale-out under way),',
    'or all are while a rollout is still replacing pods; none is crash-looping. The reason names the pod that is not ready.',
  ].join(' '),
  Pending: [
    'No pod of the current revision is ready yet and nothing has failed: pods are being created, scheduled (`Unschedulable: …` when no node fits),',
    'pulling their image, running init containers (`Init: 0/1`) or running but not yet ready (`not ready`).',
  ].join(' '),
  Restarting: [
    'At least one pod of the current revision has a container or init container in CrashLoopBackOff, however many pods are ready.',
    'The reason names the container, its last exit code and its restarts (`CrashLoopBackOff: container app exited 1, 5 restarts`).',
  ].join(' '),
  Failed: [
    'Pods are desired, none of the current revision is ready, and waiting will not help: an image cannot be pulled (ImagePullBackOff, ErrImagePull,',
    'ErrImageNeverPull, InvalidImageName), a container cannot be created (CreateContainerConfigError, CreateContainerError), every pod has phase Failed,',
    'the rollout passed its progress deadline (ProgressDeadlineExceeded) or a volume claim is Lost. The reason names which.',
  ].join(' '),
  'Not Deployed': 'The component\'s workload does not exist: never provisioned, deleted, or external (`docdb_uri`, `kv_url`).',
};

/**
 * The human name of each component's row.
 *
 * @example
 * COMPONENT_NAMES.kv // 'Redis'
 */
export const COMPONENT_NAMES: Readonly<Record<Component, string>> = {
  app: 'app',
  docdb: 'document database',
  kv: 'Redis',
  ingress: 'ingress',
  'docdb-dashboard': 'database dashboard',
  'kv-dashboard': 'Redis dashboard',
  prometheus: 'metrics (Prometheus)',
  'kube-state-metrics': 'kube-state-metrics',
  'node-exporter': 'node exporter',
  grafana: 'Grafana',
  loki: 'Loki',
  'log-collector': 'log collector',
  cluster: 'cluster',
};

/** The rows' order; app, document database, Redis and ingress are always shown. */
const ORDER: readonly Component[] = ['app', 'docdb', 'kv', 'ingress', 'docdb-dashboard', 'kv-dashboard', 'prometheus', 'kube-state-metrics', 'node-exporter', 'grafana', 'loki', 'log-collector'];
const ALWAYS: readonly Component[] = ['app', 'docdb', 'kv', 'ingress'];

/**
 * A container waiting for one of these reasons does not get better by waiting: an image or a container spec to fix.
 *
 * @example
 * FATAL_WAITING_REASONS.includes('ImagePullBackOff') // true
 */
export const FATAL_WAITING_REASONS: readonly string[] = ['ImagePullBackOff', 'ErrImagePull', 'ErrImageNeverPull', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError'];

const NAME_LABEL = 'app.kubernetes.io/name';
const COMPONENT_LABEL = 'app.kubernetes.io/component';
const REVISION = 'deployment.kubernetes.io/revision';

/** The app's objects as listed from the cluster (by label `app.kubernetes.io/name=<app>`; others are ignored all the same). */
export interface ClusterSnapshot {
  deployments: readonly K8sObject[];
  statefulSets: readonly K8sObject[];
  daemonSets: readonly K8sObject[];
  replicaSets: readonly K8sObject[];
  pods: readonly K8sObject[];
  services: readonly K8sObject[];
  pvcs: readonly K8sObject[];
  /** traefik.io IngressRoutes (svc's own proxy, or the cluster's Traefik). */
  ingressRoutes?: readonly K8sObject[];
  /** networking.k8s.io Ingresses (another ingress class). */
  ingresses?: readonly K8sObject[];
  /** cert-manager Certificates. */
  certificates?: readonly K8sObject[];
}

export interface StatusOptions {
  app: string;
  /** The URLs the caller knows the app by (`http://<node>:30080/`); passed through, first. */
  urls?: readonly string[];
  /** The components the plan deploys: shown (Not Deployed when absent) even before they exist. */
  expected?: readonly Component[];
  /** The domain the app is served at (`[scale.orchestrator] domain`); absent: read from the IngressRoute or Ingress. */
  domain?: string;
  /** Components svc does not run because they are external: the reason shown on their Not Deployed row. */
  external?: Partial<Record<Component, string>>;
}

/** The last time a container exited. */
export interface LastExit {
  container: string;
  exitCode: number;
  reason?: string;
  finishedAt?: string;
}

/** One pod of a component. */
export interface PodRow {
  name: string;
  ready: boolean;
  /** `status.phase`: Pending, Running, Succeeded, Failed or Unknown. */
  phase: string;
  reason?: string;
  /** Restarts of its containers and init containers. */
  restarts: number;
  lastExit?: LastExit;
}

/** One component's row. */
export interface ComponentRow {
  /** The human name: 'app', 'document database', 'Redis', … */
  component: string;
  /** The `app.kubernetes.io/component` label. */
  key: string;
  status: Status;
  ready: number;
  desired: number;
  reason?: string;
  /** The objects the row was computed from (`Deployment/shop`, `IngressRoute/shop`). */
  workloads: string[];
  /** The current pods, by name. */
  pods: PodRow[];
}

export interface StatusReport {
  app: string;
  rows: ComponentRow[];
  urls: string[];
}

const rec = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(rec) : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const labelOf = (o: K8sObject, key: string): string | undefined => o.metadata.labels?.[key];
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
const detail = (reason: string, message: unknown): string => (str(message) ? `${reason}: ${str(message)}` : reason);
const joinReasons = (...parts: (string | undefined)[]): string | undefined => parts.filter((p): p is string => p !== undefined && p !== '').join('; ') || undefined;

/** How telling a pod's state is, most first: the row's reason comes from the first. */
const RANK = { crashloop: 0, fatal: 1, failed: 2, unschedulable: 3, starting: 4, notready: 5, terminating: 6, ready: 7 } as const;
type PodKind = keyof typeof RANK;
interface Analysed {
  kind: PodKind;
  row: PodRow;
}

function ownedBy(o: K8sObject, kind: string, owner: K8sObject): boolean {
  return list(o.metadata.ownerReferences).some((r) => r.kind === kind && (r.uid !== undefined && owner.metadata.uid !== undefined ? r.uid === owner.metadata.uid : r.name === owner.metadata.name));
}

function exitOf(c: Json): LastExit | undefined {
  const t = rec(rec(c.state).terminated);
  const last = rec(rec(c.lastState).terminated);
  const term = num(t.exitCode) !== undefined ? t : last;
  const exitCode = num(term.exitCode);
  if (exitCode === undefined) return undefined;
  return { container: str(c.name) ?? '?', exitCode, ...(str(term.reason) ? { reason: str(term.reason) } : {}), ...(str(term.finishedAt) ? { finishedAt: str(term.finishedAt) } : {}) };
}

function exitText(e: LastExit | undefined): string {
  return e ? ` exited ${e.exitCode}${e.reason && e.reason !== 'Error' ? ` (${e.reason})` : ''}` : '';
}

/**
 * One pod's row and how telling it is.
 */
function analysePod(pod: K8sObject): Analysed {
  const status = rec(pod.status);
  const phase = str(status.phase) ?? 'Unknown';
  const inits = list(status.initContainerStatuses);
  const mains = list(status.containerStatuses);
  const all = [...inits.map((c) => ({ c, init: true })), ...mains.map((c) => ({ c, init: false }))];
  const ready = conditionOf(pod, 'Ready')?.status === 'True';
  const restarts = all.reduce((n, { c }) => n + (num(c.restartCount) ?? 0), 0);
  const exits = all.map(({ c }) => exitOf(c)).filter((e): e is LastExit => e !== undefined);
  const latest = exits.reduce<LastExit | undefined>((a, e) => (a === undefined || (e.finishedAt ?? '') > (a.finishedAt ?? '') ? e : a), undefined);
  const out = (kind: PodKind, reason?: string, lastExit = latest): Analysed => ({
    kind,
    row: { name: pod.metadata.name, ready, phase, ...(reason ? { reason } : {}), restarts, ...(lastExit ? { lastExit } : {}) },
  });
  const what = (init: boolean, c: Json): string => `${init ? 'init container' : 'container'} ${str(c.name) ?? '?'}`;
  if (pod.metadata.deletionTimestamp) return out('terminating', 'Terminating');
  for (const { c, init } of all) {
    const waiting = rec(rec(c.state).waiting);
    if (waiting.reason !== 'CrashLoopBackOff') continue;
    const e = exitOf(c);
    return out('crashloop', `CrashLoopBackOff: ${what(init, c)}${exitText(e)}, ${plural(num(c.restartCount) ?? 0, 'restart')}`, e ?? latest);
  }
  for (const { c, init } of all) {
    const waiting = rec(rec(c.state).waiting);
    const reason = str(waiting.reason);
    if (reason && FATAL_WAITING_REASONS.includes(reason)) return out('fatal', detail(`${reason}: ${what(init, c)}`, waiting.message));
  }
  if (phase === 'Failed' || phase === 'Succeeded') {
    const why = str(status.reason) !== undefined ? detail(str(status.reason) as string, status.message) : str(status.message);
    return out('failed', why ?? (phase === 'Succeeded' ? 'Completed' : `Failed${latest ? `: container ${latest.container}${exitText(latest)}` : ''}`));
  }
  const scheduled = conditionOf(pod, 'PodScheduled');
  if (scheduled?.status === 'False') return out('unschedulable', detail(str(scheduled.reason) ?? 'Unschedulable', scheduled.message));
  if (ready) return out('ready');
  const initDone = (c: Json): boolean => num(rec(rec(c.state).terminated).exitCode) === 0;
  const pendingInit = inits.find((c) => !initDone(c));
  if (pendingInit) {
    const failed = num(rec(rec(pendingInit.state).terminated).exitCode) !== undefined ? ` (${what(true, pendingInit)}${exitText(exitOf(pendingInit))})` : '';
    return out('starting', `Init: ${inits.filter(initDone).length}/${inits.length}${failed}`);
  }
  for (const c of mains) {
    const waiting = str(rec(rec(c.state).waiting).reason);
    if (waiting) return out('starting', waiting);
    const e = num(rec(rec(c.state).terminated).exitCode) !== undefined ? exitOf(c) : undefined;
    if (e) return out('notready', `container ${e.container}${exitText(e)}`);
  }
  if (phase === 'Pending') return out('starting', mains.length > 0 ? 'Pending' : scheduled ? 'ContainerCreating' : 'waiting to be scheduled');
  if (phase === 'Unknown') return out('notready', str(status.reason) ?? 'Unknown: the node does not report');
  return out('notready', 'not ready');
}

/** A workload as the status reads it. */
interface WorkloadState {
  ref: string;
  desired: number;
  pods: Analysed[];
  /** `rolling out: …` while a rollout replaces pods. */
  rollout?: string;
  /** A condition that makes a component with no ready pod Failed. */
  failure?: string;
  /** Why there may be no pod (the controller's own word). */
  waiting?: string;
  /** The controller has not reported yet (a DaemonSet's desired count is unknown). */
  unobserved?: boolean;
}

const lagging = (o: K8sObject): boolean => (num(rec(o.status).observedGeneration) ?? 0) < (num(o.metadata.generation) ?? 0);

function deploymentState(d: K8sObject, replicaSets: readonly K8sObject[], pods: readonly K8sObject[]): WorkloadState {
  const spec = rec(d.spec);
  const status = rec(d.status);
  const desired = num(spec.replicas) ?? 1;
  const owned = replicaSets.filter((rs) => ownedBy(rs, 'Deployment', d));
  const revision = (o: K8sObject): number => Number(o.metadata.annotations?.[REVISION] ?? 0);
  const wanted = d.metadata.annotations?.[REVISION];
  // Without the Deployment's own revision (not yet reported), the newest ReplicaSet is the current one.
  const current = wanted !== undefined ? owned.find((rs) => rs.metadata.annotations?.[REVISION] === wanted) : [...owned].sort((a, b) => revision(b) - revision(a))[0];
  const podsOf = (rs: K8sObject): K8sObject[] => pods.filter((p) => ownedBy(p, 'ReplicaSet', rs));
  const old = owned.filter((rs) => rs !== current);
  const oldPods = old.flatMap(podsOf).filter((p) => !p.metadata.deletionTimestamp);
  const updated = num(status.updatedReplicas) ?? 0;
  const analysed = current ? podsOf(current).map(analysePod) : [];
  const currentReady = analysed.filter((p) => p.kind === 'ready').length;
  let rollout: string | undefined;
  // A rollout is under way while the new revision is not all in place and an older one still has pods (a first deploy or
  // a scale-out has none); once the new pods are all ready, the old ones left being scaled down are no news.
  if ((updated < desired || currentReady < desired) && (oldPods.length > 0 || old.some((rs) => (num(rec(rs.spec).replicas) ?? 0) > 0))) {
    const serving = oldPods.filter((p) => conditionOf(p, 'Ready')?.status === 'True').length;
    rollout = `rolling out: ${updated}/${desired} updated${serving > 0 ? `, ${plural(serving, 'pod')} of the previous revision serving` : ''}`;
  }
  const progressing = conditionOf(d, 'Progressing');
  const replicaFailure = conditionOf(d, 'ReplicaFailure');
  return {
    ref: `Deployment/${d.metadata.name}`,
    desired,
    pods: analysed,
    ...(rollout ? { rollout } : {}),
    ...(progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded' ? { failure: detail('ProgressDeadlineExceeded', progressing.message) } : {}),
    ...(replicaFailure?.status === 'True' ? { waiting: detail(str(replicaFailure.reason) ?? 'ReplicaFailure', replicaFailure.message) } : {}),
  };
}

function statefulSetState(s: K8sObject, pods: readonly K8sObject[]): WorkloadState {
  const status = rec(s.status);
  const desired = num(rec(s.spec).replicas) ?? 1;
  const from = str(status.currentRevision);
  const to = str(status.updateRevision);
  const rolling = (from !== undefined && to !== undefined && from !== to) || (lagging(s) && status.observedGeneration !== undefined);
  return {
    ref: `StatefulSet/${s.metadata.name}`,
    desired,
    pods: pods.filter((p) => ownedBy(p, 'StatefulSet', s)).map(analysePod),
    ...(rolling ? { rollout: `rolling out: ${num(status.updatedReplicas) ?? 0}/${desired} updated` } : {}),
  };
}

function daemonSetState(ds: K8sObject, pods: readonly K8sObject[]): WorkloadState {
  const status = rec(ds.status);
  const desired = num(status.desiredNumberScheduled);
  const updated = num(status.updatedNumberScheduled) ?? 0;
  const scheduled = num(status.currentNumberScheduled) ?? 0;
  return {
    ref: `DaemonSet/${ds.metadata.name}`,
    desired: desired ?? 0,
    pods: pods.filter((p) => ownedBy(p, 'DaemonSet', ds)).map(analysePod),
    ...(desired === undefined ? { unobserved: true, waiting: 'waiting for the DaemonSet controller' } : {}),
    ...(desired !== undefined && (updated < scheduled || lagging(ds)) ? { rollout: `rolling out: ${updated}/${desired} updated` } : {}),
  };
}

const byRank = (a: Analysed, b: Analysed): number => RANK[a.kind] - RANK[b.kind] || (a.row.name < b.row.name ? -1 : a.row.name > b.row.name ? 1 : 0);

/** A workload's status by the rules of the module's comment. */
function classify(w: WorkloadState, claims: readonly K8sObject[]): { status: Status; ready: number; reason?: string } {
  const live = w.pods.filter((p) => p.kind !== 'terminating').sort(byRank);
  const ready = live.filter((p) => p.row.ready).length;
  const notReady = live.filter((p) => !p.row.ready);
  const row = (status: Status, ...reasons: (string | undefined)[]): { status: Status; ready: number; reason?: string } => {
    const reason = joinReasons(...reasons);
    return { status, ready, ...(reason ? { reason } : {}) };
  };
  if (w.desired === 0 && !w.unobserved) return row('Running', w.ref.startsWith('DaemonSet/') ? 'scaled to 0 (no node to run on)' : 'scaled to 0');
  const crash = live.find((p) => p.kind === 'crashloop');
  if (crash) return row('Restarting', crash.row.reason, w.rollout);
  const lost = claims.find((c) => rec(c.status).phase === 'Lost');
  if (ready === 0) {
    const fatal = live.find((p) => p.kind === 'fatal');
    if (fatal) return row('Failed', fatal.row.reason, w.rollout);
    if (live.length > 0 && live.every((p) => p.kind === 'failed')) return row('Failed', live[0]?.row.reason, w.rollout);
    if (w.failure) return row('Failed', w.failure, notReady[0]?.row.reason);
    if (lost) return row('Failed', `PersistentVolumeClaim ${lost.metadata.name} is Lost (its volume is gone)`);
  }
  if (ready >= w.desired && !w.rollout) return row('Running');
  const missing = w.desired - live.length > 0 ? `${plural(w.desired - live.length, 'pod')} not created yet` : undefined;
  if (ready > 0) return row('Degraded', notReady[0]?.row.reason ?? (missing ? (w.waiting ?? missing) : undefined), w.rollout, w.failure);
  const unbound = claims.find((c) => rec(c.status).phase === 'Pending');
  const starting = live.find((p) => p.kind !== 'failed');
  const claim = unbound ? `PersistentVolumeClaim ${unbound.metadata.name} is Pending` : undefined;
  return row('Pending', starting?.row.reason ?? w.waiting ?? (live.length === 0 ? 'no pods yet' : undefined), claim, w.rollout);
}

/** Severity when a component has more than one workload (none does today): the worst wins. */
const WORST: readonly Status[] = ['Restarting', 'Failed', 'Pending', 'Degraded', 'Running'];

function componentRow(key: string, workloads: WorkloadState[], claims: readonly K8sObject[]): ComponentRow {
  const parts = workloads.map((w) => ({ w, c: classify(w, claims) }));
  const ready = parts.reduce((n, p) => n + p.c.ready, 0);
  const desired = parts.reduce((n, p) => n + p.w.desired, 0);
  const worst = [...parts].sort((a, b) => WORST.indexOf(a.c.status) - WORST.indexOf(b.c.status))[0];
  let status: Status = worst?.c.status ?? 'Not Deployed';
  // One workload serving while another is not: the component serves, with less than asked.
  if (parts.length > 1 && (status === 'Pending' || status === 'Failed') && ready > 0) status = 'Degraded';
  const reason = worst?.c.reason;
  return {
    component: COMPONENT_NAMES[key as Component] ?? key,
    key,
    status,
    ready,
    desired,
    ...(reason ? { reason } : {}),
    workloads: workloads.map((w) => w.ref),
    pods: workloads.flatMap((w) => w.pods.map((p) => p.row)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/** The ingress without a proxy of svc's own: the cluster's Traefik serves the IngressRoute, or another controller the Ingress. */
function routeRow(routes: readonly K8sObject[], ingresses: readonly K8sObject[]): ComponentRow | undefined {
  const base = { component: COMPONENT_NAMES.ingress, key: 'ingress', ready: 0, desired: 0, pods: [] };
  const ingress = ingresses[0];
  if (ingress) {
    const address = list(rec(rec(ingress.status).loadBalancer).ingress)
      .map((a) => str(a.ip) ?? str(a.hostname))
      .find((a) => a !== undefined);
    const cls = str(rec(ingress.spec).ingressClassName) ?? 'its';
    const workloads = [`Ingress/${ingress.metadata.name}`, ...routes.map((r) => `IngressRoute/${r.metadata.name}`)];
    return address
      ? { ...base, status: 'Running', reason: `served by the ${cls} controller at ${address}`, workloads }
      : { ...base, status: 'Pending', reason: `no address from the ${cls} controller yet`, workloads };
  }
  const route = routes[0];
  if (route) return { ...base, status: 'Running', reason: 'served by the cluster\'s Traefik', workloads: routes.map((r) => `IngressRoute/${r.metadata.name}`) };
  return undefined;
}

/** The host an IngressRoute (`Host(\`x\`)`) or an Ingress (`rules[].host`) routes. */
function routedHost(routes: readonly K8sObject[], ingresses: readonly K8sObject[]): string | undefined {
  for (const r of routes) for (const rule of list(rec(r.spec).routes)) {
    const host = /Host\(`([^`]+)`\)/.exec(str(rule.match) ?? '')?.[1];
    if (host) return host;
  }
  for (const i of ingresses) for (const rule of list(rec(i.spec).rules)) if (str(rule.host)) return str(rule.host);
  return undefined;
}

function urlsOf(snapshot: ClusterSnapshot, options: StatusOptions, mine: (o: K8sObject) => boolean): string[] {
  const routes = (snapshot.ingressRoutes ?? []).filter(mine);
  const ingresses = (snapshot.ingresses ?? []).filter(mine);
  const domain = options.domain || routedHost(routes, ingresses);
  const out: string[] = [];
  if (domain) {
    // cert-manager makes the Certificate of an annotated Ingress without our labels: one with no app label counts too.
    const covers = (c: K8sObject): boolean => {
      const names = rec(c.spec).dnsNames;
      return (Array.isArray(names) && names.includes(domain)) || rec(c.spec).commonName === domain;
    };
    const certified = (snapshot.certificates ?? []).some((c) => (labelOf(c, NAME_LABEL) ?? options.app) === options.app && covers(c) && conditionOf(c, 'Ready')?.status === 'True');
    out.push(`${certified ? 'https' : 'http'}://${domain}/`);
  }
  out.push(...(options.urls ?? []));
  for (const s of snapshot.services.filter(mine)) {
    if (rec(s.spec).type !== 'LoadBalancer') continue;
    for (const a of list(rec(rec(s.status).loadBalancer).ingress)) {
      const host = str(a.ip) ?? str(a.hostname);
      if (host) out.push(`http://${host}/`);
    }
  }
  const https = new Set(out.filter((u) => u.startsWith('https://')).map((u) => u.slice('https://'.length)));
  return [...new Set(out)].filter((u) => !(u.startsWith('http://') && https.has(u.slice('http://'.length))));
}

/**
 * The status of every component of an app, from a snapshot of its objects (see the module's comment for the rules).
 * Rows for the app, the document database, Redis and the ingress are always there; the others when their workload
 * exists or `expected` names them.
 *
 * @example
 * const report = deploymentStatus({ deployments, statefulSets, daemonSets, replicaSets, pods, services, pvcs }, { app: 'shop', urls: ['http://10.0.0.5:30080/'] });
 * report.rows[0] // { component: 'app', key: 'app', status: 'Running', ready: 3, desired: 3, workloads: ['Deployment/shop'], pods: [...] }
 */
export function deploymentStatus(snapshot: ClusterSnapshot, options: StatusOptions): StatusReport {
  const mine = (o: K8sObject): boolean => labelOf(o, NAME_LABEL) === options.app;
  const pods = snapshot.pods.filter(mine);
  const states = new Map<string, WorkloadState[]>();
  const add = (o: K8sObject, state: WorkloadState): void => {
    const key = labelOf(o, COMPONENT_LABEL) ?? 'app';
    states.set(key, [...(states.get(key) ?? []), state]);
  };
  const replicaSets = snapshot.replicaSets.filter(mine);
  for (const d of snapshot.deployments.filter(mine)) add(d, deploymentState(d, replicaSets, pods));
  for (const s of snapshot.statefulSets.filter(mine)) add(s, statefulSetState(s, pods));
  for (const ds of snapshot.daemonSets.filter(mine)) add(ds, daemonSetState(ds, pods));
  const keys = new Set<string>([...ALWAYS, ...(options.expected ?? []).filter((c) => c !== 'cluster'), ...states.keys()]);
  const position = (k: string): number => (ORDER.includes(k as Component) ? ORDER.indexOf(k as Component) : ORDER.length);
  const rows = [...keys]
    .sort((a, b) => position(a) - position(b) || (a < b ? -1 : 1))
    .map((key): ComponentRow => {
      const workloads = states.get(key);
      if (workloads) return componentRow(key, workloads, snapshot.pvcs.filter((c) => mine(c) && labelOf(c, COMPONENT_LABEL) === key));
      if (key === 'ingress') {
        const row = routeRow((snapshot.ingressRoutes ?? []).filter(mine), (snapshot.ingresses ?? []).filter(mine));
        if (row) return row;
      }
      const external = options.external?.[key as Component];
      return { component: COMPONENT_NAMES[key as Component] ?? key, key, status: 'Not Deployed', ready: 0, desired: 0, ...(external ? { reason: external } : {}), workloads: [], pods: [] };
    });
  return { app: options.app, rows, urls: urlsOf(snapshot, options, mine) };
}

/** `3/3`, or `-` for a row with no pods to count (not deployed, or an ingress another controller serves). */
function readyText(row: ComponentRow): string {
  const counted = row.workloads.some((w) => /^(Deployment|StatefulSet|DaemonSet)\//.test(w));
  return counted ? `${row.ready}/${row.desired}` : '-';
}

/**
 * The report as a table (`COMPONENT  STATUS  READY  REASON`), then the URLs; with `pods`, each row's pods under it.
 *
 * @example
 * process.stdout.write(renderStatus(report));
 * // COMPONENT          STATUS        READY  REASON
 * // app                Running       3/3
 * // document database  Pending       0/1    Unschedulable: 0/1 nodes are available: 1 Insufficient memory.
 */
export function renderStatus(report: StatusReport, options: { pods?: boolean } = {}): string {
  const cells = [['COMPONENT', 'STATUS', 'READY', 'REASON'], ...report.rows.map((r) => [r.component, r.status, readyText(r), r.reason ?? ''])];
  const width = [0, 1, 2].map((i) => Math.max(...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: string[]): string => `${(c[0] ?? '').padEnd(width[0] ?? 0)}  ${(c[1] ?? '').padEnd(width[1] ?? 0)}  ${(c[2] ?? '').padEnd(width[2] ?? 0)}  ${c[3] ?? ''}`.trimEnd();
  const lines = [line(cells[0] ?? [])];
  for (const [i, row] of report.rows.entries()) {
    lines.push(line(cells[i + 1] ?? []));
    if (!options.pods) continue;
    for (const p of row.pods) {
      const exit = p.lastExit ? `, last exit ${p.lastExit.exitCode}${p.lastExit.reason ? ` (${p.lastExit.reason})` : ''}` : '';
      lines.push(`  ${p.name}  ${p.phase}${p.ready ? ', ready' : ''}, ${plural(p.restarts, 'restart')}${exit}${p.reason ? ` — ${p.reason}` : ''}`);
    }
  }
  if (report.urls.length > 0) lines.push('', ...report.urls.map((u, i) => `${i === 0 ? 'URL: ' : '     '}${u}`));
  return `${lines.join('\n')}\n`;
}

/**
 * The shape of `svc scale status --json` (version 1; a field is only ever added): absent values are `null`, never
 * missing, and keys come in this order.
 */
export interface StatusJson {
  version: 1;
  app: string;
  components: {
    key: string;
    component: string;
    status: Status;
    ready: number;
    desired: number;
    reason: string | null;
    workloads: string[];
    pods: {
      name: string;
      ready: boolean;
      phase: string;
      reason: string | null;
      restarts: number;
      lastExit: { container: string; exitCode: number; reason: string | null; finishedAt: string | null } | null;
    }[];
  }[];
  urls: string[];
}

/**
 * The report in the stable shape of `--json` ({@link StatusJson}).
 *
 * @example
 * process.stdout.write(`${JSON.stringify(statusJson(report), null, 2)}\n`);
 */
export function statusJson(report: StatusReport): StatusJson {
  return {
    version: 1,
    app: report.app,
    components: report.rows.map((r) => ({
      key: r.key,
      component: r.component,
      status: r.status,
      ready: r.ready,
      desired: r.desired,
      reason: r.reason ?? null,
      workloads: [...r.workloads],
      pods: r.pods.map((p) => ({
        name: p.name,
        ready: p.ready,
        phase: p.phase,
        reason: p.reason ?? null,
        restarts: p.restarts,
        lastExit: p.lastExit ? { container: p.lastExit.container, exitCode: p.lastExit.exitCode, reason: p.lastExit.reason ?? null, finishedAt: p.lastExit.finishedAt ?? null } : null,
      })),
    })),
    urls: [...report.urls],
  };
}

/**
 * Whether `--watch` has something new to print: a row came or went, or a row's status, ready/desired count or reason
 * changed, or the URLs did (a certificate became Ready). Restart counts alone are not news: the reason carries them
 * for a crash-looping pod.
 *
 * @example
 * if (statusChanged(previous, next)) process.stdout.write(renderStatus(next));
 */
export function statusChanged(a: StatusReport, b: StatusReport): boolean {
  if (a.rows.length !== b.rows.length || a.urls.join('\n') !== b.urls.join('\n')) return true;
  return a.rows.some((r, i) => {
    const s = b.rows[i];
    return s === undefined || r.key !== s.key || r.status !== s.status || r.ready !== s.ready || r.desired !== s.desired || r.reason !== s.reason;
  });
}
