// The status of a deployment (deploy/cluster/status.ts) on scripted cluster states: objects shaped as the API server
// lists them (ownerReferences, revision annotations, conditions, container states), built by the small helpers below.
import t from 'tap';
import type { K8sObject } from '../../deploy/spec.ts';
import { deploymentStatus, renderStatus, STATUS_MEANINGS, statusChanged, statusJson, type ClusterSnapshot, type ComponentRow, type StatusOptions } from '../../deploy/cluster/status.ts';

const APP = 'shop';
const NOW = '2024-09-01T12:00:00Z';

function labels(component: string, app = APP): Record<string, string> {
  return { 'app.kubernetes.io/component': component, 'app.kubernetes.io/managed-by': 'svc', 'app.kubernetes.io/name': app, 'app.kubernetes.io/part-of': app, managed: 'svc-scale' };
}

function meta(name: string, component: string, app = APP, extra: Record<string, unknown> = {}): K8sObject['metadata'] {
  return { name, namespace: 'shop-prod', uid: `uid-${app}-${name}`, generation: 1, creationTimestamp: NOW, labels: labels(component, app), ...extra };
}

const owner = (kind: string, o: K8sObject): Record<string, unknown> => ({ apiVersion: 'apps/v1', kind, name: o.metadata.name, uid: o.metadata.uid, controller: true, blockOwnerDeletion: true });

interface DeploymentOptions {
  replicas?: number;
  revision?: string;
  updated?: number;
  generation?: number;
  observed?: number;
  conditions?: Record<string, unknown>[];
  app?: string;
}

function deployment(name: string, component: string, o: DeploymentOptions = {}): K8sObject {
  const replicas = o.replicas ?? 1;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(name, component, o.app, { generation: o.generation ?? 1, annotations: { 'deployment.kubernetes.io/revision': o.revision ?? '1' } }),
    spec: { replicas, selector: { matchLabels: { 'app.kubernetes.io/component': component, 'app.kubernetes.io/name': o.app ?? APP } } },
    status: {
      observedGeneration: o.observed ?? o.generation ?? 1,
      replicas,
      updatedReplicas: o.updated ?? replicas,
      conditions: o.conditions ?? [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' }, { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' }],
    },
  };
}

function replicaSet(d: K8sObject, hash: string, revision: string, replicas: number): K8sObject {
  const component = d.metadata.labels?.['app.kubernetes.io/component'] ?? 'app';
  const app = d.metadata.labels?.['app.kubernetes.io/name'] ?? APP;
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      ...meta(`${d.metadata.name}-${hash}`, component, app, { annotations: { 'deployment.kubernetes.io/revision': revision } }),
      labels: { ...labels(component, app), 'pod-template-hash': hash },
      ownerReferences: [owner('Deployment', d)],
    },
    spec: { replicas },
    status: { replicas },
  };
}

function statefulSet(name: string, component: string, replicas = 1, status: Record<string, unknown> = {}): K8sObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(name, component),
    spec: { replicas, serviceName: `${name}-headless` },
    status: { observedGeneration: 1, replicas, currentRevision: `${name}-5d8f`, updateRevision: `${name}-5d8f`, updatedReplicas: replicas, ...status },
  };
}

function daemonSet(name: string, component: string, desired: number): K8sObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: meta(name, component),
    spec: {},
    status: { observedGeneration: 1, desiredNumberScheduled: desired, currentNumberScheduled: desired, updatedNumberScheduled: desired, numberReady: 0 },
  };
}

type PodStatus = Record<string, unknown>;
const running = (name = 'app', restarts = 0): Record<string, unknown> => ({ name, ready: true, restartCount: restarts, state: { running: { startedAt: NOW } } });
const cond = (type: string, status: boolean, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ type, status: status ? 'True' : 'False', ...extra });
const scheduledConds = (ready: boolean): Record<string, unknown>[] => [cond('PodScheduled', true), cond('Initialized', true), cond('ContainersReady', ready), cond('Ready', ready)];

const ready: PodStatus = { phase: 'Running', conditions: scheduledConds(true), containerStatuses: [running()] };
const notReady: PodStatus = { phase: 'Running', conditions: scheduledConds(false), containerStatuses: [{ ...running(), ready: false }] };
/** A scheduled pod whose container `app` waits for `reason`. */
const waiting = (reason: string, message?: string): PodStatus => ({
  phase: 'Pending',
  conditions: [cond('PodScheduled', true), cond('Ready', false)],
  containerStatuses: [{ name: 'app', ready: false, restartCount: 0, state: { waiting: { reason, ...(message ? { message } : {}) } } }],
});
const creating = waiting('ContainerCreating');
const initRunning: PodStatus = {
  phase: 'Pending',
  conditions: [cond('PodScheduled', true), cond('Initialized', false, { reason: 'ContainersNotInitialized' }), cond('Ready', false)],
  initContainerStatuses: [{ name: 'wait-docdb', ready: false, restartCount: 0, state: { running: { startedAt: NOW } } }],
  containerStatuses: [{ name: 'app', ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }],
};
const UNSCHEDULABLE = '0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.';
const unschedulable: PodStatus = { phase: 'Pending', conditions: [cond('PodScheduled', false, { reason: 'Unschedulable', message: UNSCHEDULABLE })] };
const crashLoop = (restarts = 5, exitCode = 1): PodStatus => ({
  phase: 'Running',
  conditions: scheduledConds(false),
  containerStatuses: [
    {
      name: 'app',
      ready: false,
      restartCount: restarts,
      state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 2m40s restarting failed container=app' } },
      lastState: { terminated: { exitCode, reason: 'Error', startedAt: NOW, finishedAt: '2024-09-01T12:01:00Z' } },
    },
  ],
});
const initCrashLoop: PodStatus = {
  phase: 'Pending',
  conditions: [cond('PodScheduled', true), cond('Initialized', false), cond('Ready', false)],
  initContainerStatuses: [
    { name: 'wait-docdb', ready: false, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 2, reason: 'Error', finishedAt: NOW } } },
  ],
  containerStatuses: [{ name: 'app', ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }],
};
const imagePull = waiting('ImagePullBackOff', 'Back-off pulling image "registry.example/shop:v9"');
const evicted: PodStatus = { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.', conditions: [cond('PodScheduled', true), cond('Ready', false)] };

function pod(name: string, ownerObject: K8sObject, ownerKind: string, status: PodStatus, app = APP): K8sObject {
  const component = ownerObject.metadata.labels?.['app.kubernetes.io/component'] ?? 'app';
  const hash = ownerObject.metadata.labels?.['pod-template-hash'];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...meta(name, component, app), labels: { ...labels(component, app), ...(hash ? { 'pod-template-hash': hash } : {}) }, ownerReferences: [owner(ownerKind, ownerObject)] },
    spec: { containers: [{ name: 'app' }] },
    status,
  };
}

function snapshot(parts: Partial<ClusterSnapshot> = {}): ClusterSnapshot {
  return { deployments: [], statefulSets: [], daemonSets: [], replicaSets: [], pods: [], services: [], pvcs: [], ...parts };
}

/** The app Deployment `shop` (current revision 2, ReplicaSet shop-7d4b9) with one pod per status given. */
function appWith(statuses: PodStatus[], o: DeploymentOptions = {}): { d: K8sObject; rs: K8sObject; pods: K8sObject[] } {
  const d = deployment(APP, 'app', { replicas: statuses.length, revision: '2', ...o });
  const rs = replicaSet(d, '7d4b9', '2', o.replicas ?? statuses.length);
  return { d, rs, pods: statuses.map((s, i) => pod(`shop-7d4b9-p${i}`, rs, 'ReplicaSet', s)) };
}

function appRow(statuses: PodStatus[], o: DeploymentOptions = {}, extra: Partial<ClusterSnapshot> = {}): ComponentRow {
  const { d, rs, pods } = appWith(statuses, o);
  const report = deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs], pods, ...extra }), { app: APP });
  const row = report.rows.find((r) => r.key === 'app');
  if (!row) throw new Error('no app row');
  return row;
}

const opts: StatusOptions = { app: APP };

t.test('every status has its meaning', async (t) => {
  t.same(Object.keys(STATUS_MEANINGS).sort(), ['Degraded', 'Failed', 'Not Deployed', 'Pending', 'Restarting', 'Running']);
  for (const text of Object.values(STATUS_MEANINGS)) t.ok(text.length > 40);
});

t.test('Running: every desired pod of the current ReplicaSet is ready', async (t) => {
  const row = appRow([ready, ready, ready]);
  t.match(row, { component: 'app', key: 'app', status: 'Running', ready: 3, desired: 3, workloads: ['Deployment/shop'] });
  t.equal(row.reason, undefined);
  t.equal(row.pods.length, 3);
  t.match(row.pods[0], { name: 'shop-7d4b9-p0', ready: true, phase: 'Running', restarts: 0 });
});

t.test('Degraded: some but not all ready; the reason is the pod that is not', async (t) => {
  t.match(appRow([ready, ready, notReady]), { status: 'Degraded', ready: 2, desired: 3, reason: 'not ready' });
  t.match(appRow([ready, unschedulable]), { status: 'Degraded', ready: 1, desired: 2, reason: `Unschedulable: ${UNSCHEDULABLE}` });
  t.match(appRow([ready, imagePull]), { status: 'Degraded', ready: 1, reason: /^ImagePullBackOff: container app: Back-off pulling image/ }, 'a fatal pod with one ready is Degraded, not Failed');
  t.match(appRow([ready], { replicas: 3 }), { status: 'Degraded', ready: 1, desired: 3, reason: '2 pods not created yet' });
});

t.test('Pending: nothing ready, nothing failed', async (t) => {
  t.match(appRow([unschedulable]), { status: 'Pending', ready: 0, desired: 1, reason: `Unschedulable: ${UNSCHEDULABLE}` });
  t.match(appRow([creating]), { status: 'Pending', reason: 'ContainerCreating' });
  t.match(appRow([initRunning]), { status: 'Pending', reason: 'Init: 0/1' });
  t.match(appRow([notReady]), { status: 'Pending', reason: 'not ready' });
  t.match(appRow([creating, unschedulable]), { status: 'Pending', reason: /^Unschedulable/ }, 'the most telling pod gives the reason');
  t.match(appRow([], { replicas: 2 }), { status: 'Pending', ready: 0, desired: 2, reason: 'no pods yet' }, 'the workload exists, no pod yet');
  const quota = [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "shop-7d4b9-x" is forbidden: exceeded quota: compute' }];
  t.match(appRow([], { replicas: 1, conditions: quota }), { status: 'Pending', reason: /^FailedCreate: pods "shop-7d4b9-x" is forbidden/ });
  t.match(appRow([evicted, creating]), { status: 'Pending', reason: 'ContainerCreating' }, 'an evicted pod being replaced is not a failure');
});

t.test('Restarting: a crash-looping container, however many are ready', async (t) => {
  const row = appRow([ready, ready, crashLoop(5, 1)]);
  t.match(row, { status: 'Restarting', ready: 2, desired: 3, reason: 'CrashLoopBackOff: container app exited 1, 5 restarts' });
  t.match(row.pods[2], { restarts: 5, lastExit: { container: 'app', exitCode: 1, reason: 'Error' } });
  t.match(appRow([crashLoop(1, 137)]), { status: 'Restarting', ready: 0, reason: 'CrashLoopBackOff: container app exited 137, 1 restart' });
  t.match(appRow([imagePull, crashLoop()]), { status: 'Restarting' }, 'a crash loop comes before a fatal wait');
  t.match(appRow([initCrashLoop]), { status: 'Restarting', reason: 'CrashLoopBackOff: init container wait-docdb exited 2, 3 restarts' }, 'an init container counts');
});

t.test('Failed: no pod ready and waiting will not help', async (t) => {
  t.match(appRow([imagePull]), { status: 'Failed', ready: 0, reason: 'ImagePullBackOff: container app: Back-off pulling image "registry.example/shop:v9"' });
  const config = waiting('CreateContainerConfigError', 'secret "shop-secrets" not found');
  t.match(appRow([config, creating]), { status: 'Failed', reason: 'CreateContainerConfigError: container app: secret "shop-secrets" not found' });
  t.match(appRow([evicted]), { status: 'Failed', reason: 'Evicted: The node was low on resource: memory.' }, 'every pod Failed');
  const deadline = [
    { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable' },
    { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "shop-7d4b9" has timed out progressing.' },
  ];
  t.match(appRow([unschedulable], { conditions: deadline }), {
    status: 'Failed',
    reason: `ProgressDeadlineExceeded: ReplicaSet "shop-7d4b9" has timed out progressing.; Unschedulable: ${UNSCHEDULABLE}`,
  });
  t.match(appRow([ready, notReady], { conditions: deadline }), { status: 'Degraded', reason: /^not ready; ProgressDeadlineExceeded/ }, 'with a pod ready it is Degraded');
});

t.test('Running 0/0 when scaled to 0', async (t) => {
  t.match(appRow([], { replicas: 0 }), { status: 'Running', ready: 0, desired: 0, reason: 'scaled to 0' });
  const { d, rs, pods } = appWith([]);
  d.spec = { replicas: undefined };
  const row = deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs], pods }), opts).rows[0];
  t.match(row, { desired: 1, status: 'Pending' }, 'a Deployment without replicas wants 1');
});

t.test('pods of another app or of an older ReplicaSet do not change the app\'s status', async (t) => {
  const { d, rs, pods } = appWith([ready, ready, ready]);
  // Another app's ReplicaSet and crash-looping pod, with the same component label and even the same owner name.
  const other = deployment(APP, 'app', { app: 'shop-staging' });
  const otherRs = { ...replicaSet(other, '7d4b9', '1', 1) };
  const stranger = pod('shop-7d4b9-zzz', otherRs, 'ReplicaSet', crashLoop(40), 'shop-staging');
  const alsoNamed = { ...stranger, metadata: { ...stranger.metadata, ownerReferences: [owner('ReplicaSet', rs)] } };
  // The older revision's ReplicaSet, scaled to 0, still has a crash-looping pod and one not ready.
  const oldRs = replicaSet(d, '5c8f1', '1', 0);
  const oldPods = [pod('shop-5c8f1-a', oldRs, 'ReplicaSet', crashLoop(9)), pod('shop-5c8f1-b', oldRs, 'ReplicaSet', notReady)];
  const report = deploymentStatus(snapshot({ deployments: [d, other], replicaSets: [rs, oldRs, otherRs], pods: [...pods, stranger, alsoNamed, ...oldPods] }), opts);
  t.equal(report.rows.filter((r) => r.key === 'app').length, 1, 'one app row: the other app\'s Deployment is not ours');
  t.match(report.rows[0], { status: 'Running', ready: 3, desired: 3 });
  t.equal(report.rows[0]?.reason, undefined);
  t.same(
    report.rows[0]?.pods.map((p) => p.name),
    ['shop-7d4b9-p0', 'shop-7d4b9-p1', 'shop-7d4b9-p2'],
    'only the current pods are listed',
  );
});

t.test('a rollout in progress: the new pods count, the reason says rolling out', async (t) => {
  const { d, rs, pods } = appWith([ready, creating], { replicas: 3, updated: 2, generation: 2, observed: 2 });
  const oldRs = replicaSet(d, '5c8f1', '1', 2);
  const oldPods = [pod('shop-5c8f1-a', oldRs, 'ReplicaSet', ready), pod('shop-5c8f1-b', oldRs, 'ReplicaSet', ready)];
  const row = deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs, oldRs], pods: [...pods, ...oldPods] }), opts).rows[0];
  t.match(row, { status: 'Degraded', ready: 1, desired: 3, reason: 'ContainerCreating; rolling out: 2/3 updated, 2 pods of the previous revision serving' });
  const broken = appWith([imagePull], { replicas: 1, updated: 1 });
  const old1 = replicaSet(broken.d, '5c8f1', '1', 1);
  const failing = deploymentStatus(snapshot({ deployments: [broken.d], replicaSets: [broken.rs, old1], pods: [...broken.pods, pod('shop-5c8f1-a', old1, 'ReplicaSet', ready)] }), opts).rows[0];
  t.match(failing, { status: 'Failed', ready: 0, reason: /^ImagePullBackOff.*; rolling out: 1\/1 updated, 1 pod of the previous revision serving$/ }, 'the new revision failed, the old one still serves');
  const first = appRow([creating], { replicas: 1, updated: 1 });
  t.equal(first.reason, 'ContainerCreating', 'a first deploy is no rollout');
  const terminating = pod('shop-5c8f1-a', oldRs, 'ReplicaSet', ready);
  terminating.metadata.deletionTimestamp = NOW;
  const done = appWith([ready, ready, ready]);
  const after = deploymentStatus(snapshot({ deployments: [done.d], replicaSets: [done.rs, replicaSet(done.d, '5c8f1', '1', 0)], pods: [...done.pods, terminating] }), opts).rows[0];
  t.match(after, { status: 'Running', ready: 3 }, 'an old pod terminating after the rollout is not news');
});

t.test('the document database (a StatefulSet)', async (t) => {
  const sts = statefulSet('shop-docdb', 'docdb');
  const claim: K8sObject = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: meta('data-shop-docdb-0', 'docdb'), spec: {}, status: { phase: 'Pending' } };
  const docdb = (status: PodStatus, pvcs: K8sObject[] = []): ComponentRow | undefined =>
    deploymentStatus(snapshot({ statefulSets: [sts], pods: [pod('shop-docdb-0', sts, 'StatefulSet', status)], pvcs }), opts).rows.find((r) => r.key === 'docdb');
  t.match(docdb(ready), { component: 'document database', status: 'Running', ready: 1, desired: 1, workloads: ['StatefulSet/shop-docdb'] });
  const unbound: PodStatus = { phase: 'Pending', conditions: [cond('PodScheduled', false, { reason: 'Unschedulable', message: '0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.' })] };
  t.match(docdb(unbound, [claim]), {
    status: 'Pending',
    ready: 0,
    desired: 1,
    reason: 'Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.; PersistentVolumeClaim data-shop-docdb-0 is Pending',
  });
  t.match(docdb(imagePull), { status: 'Failed', ready: 0, reason: /^ImagePullBackOff/ });
  t.match(docdb(crashLoop(2)), { status: 'Restarting', reason: 'CrashLoopBackOff: container app exited 1, 2 restarts' });
  t.match(docdb(notReady, [{ ...claim, status: { phase: 'Lost' } }]), { status: 'Failed', reason: 'PersistentVolumeClaim data-shop-docdb-0 is Lost (its volume is gone)' });
  const none = deploymentStatus(snapshot({ statefulSets: [sts] }), opts).rows.find((r) => r.key === 'docdb');
  t.match(none, { status: 'Pending', reason: 'no pods yet' });
  const three = statefulSet('shop-docdb', 'docdb', 3, { currentRevision: 'shop-docdb-5d8f', updateRevision: 'shop-docdb-9a1c', updatedReplicas: 1 });
  const rolling = deploymentStatus(
    snapshot({ statefulSets: [three], pods: ['0', '1', '2'].map((i) => pod(`shop-docdb-${i}`, three, 'StatefulSet', i === '2' ? creating : ready)) }),
    opts,
  ).rows.find((r) => r.key === 'docdb');
  t.match(rolling, { status: 'Degraded', ready: 2, desired: 3, reason: 'ContainerCreating; rolling out: 1/3 updated' });
});

t.test('rows: the four always, the others when they exist or are expected; Not Deployed otherwise', async (t) => {
  const empty = deploymentStatus(snapshot(), { app: APP, external: { docdb: 'external ([scale.database] docdb_uri)' } });
  t.same(
    empty.rows.map((r) => [r.component, r.status, r.reason ?? '']),
    [
      ['app', 'Not Deployed', ''],
      ['document database', 'Not Deployed', 'external ([scale.database] docdb_uri)'],
      ['Redis', 'Not Deployed', ''],
      ['ingress', 'Not Deployed', ''],
    ],
  );
  const ne = daemonSet('shop-node-exporter', 'node-exporter', 3);
  const grafana = deployment('shop-grafana', 'grafana');
  const gRs = replicaSet(grafana, 'aa11', '1', 1);
  const report = deploymentStatus(
    snapshot({
      deployments: [grafana],
      replicaSets: [gRs],
      daemonSets: [ne],
      pods: [
        pod('shop-grafana-aa11-x', gRs, 'ReplicaSet', ready),
        pod('shop-node-exporter-a', ne, 'DaemonSet', ready),
        pod('shop-node-exporter-b', ne, 'DaemonSet', ready),
        pod('shop-node-exporter-c', ne, 'DaemonSet', unschedulable),
      ],
    }),
    { app: APP, expected: ['app', 'docdb', 'kv', 'ingress', 'prometheus', 'grafana', 'loki'] },
  );
  t.same(
    report.rows.map((r) => `${r.component}: ${r.status} ${r.ready}/${r.desired}`),
    [
      'app: Not Deployed 0/0',
      'document database: Not Deployed 0/0',
      'Redis: Not Deployed 0/0',
      'ingress: Not Deployed 0/0',
      'metrics (Prometheus): Not Deployed 0/0',
      'node exporter: Degraded 2/3',
      'Grafana: Running 1/1',
      'Loki: Not Deployed 0/0',
    ],
  );
});

t.test('the ingress: svc\'s own proxy, the cluster\'s Traefik, another controller', async (t) => {
  const proxy = deployment('shop-ingress', 'ingress');
  const prs = replicaSet(proxy, 'bb22', '1', 1);
  const own = deploymentStatus(snapshot({ deployments: [proxy], replicaSets: [prs], pods: [pod('shop-ingress-bb22-x', prs, 'ReplicaSet', ready)] }), opts).rows.find((r) => r.key === 'ingress');
  t.match(own, { status: 'Running', ready: 1, desired: 1, workloads: ['Deployment/shop-ingress'] });
  const route: K8sObject = { apiVersion: 'traefik.io/v1alpha1', kind: 'IngressRoute', metadata: meta('shop', 'ingress'), spec: { routes: [{ kind: 'Rule', match: 'Host(`shop.example.com`) && PathPrefix(`/`)' }] } };
  const traefik = deploymentStatus(snapshot({ ingressRoutes: [route] }), opts);
  t.match(traefik.rows.find((r) => r.key === 'ingress'), { status: 'Running', reason: 'served by the cluster\'s Traefik', workloads: ['IngressRoute/shop'] });
  t.same(traefik.urls, ['http://shop.example.com/'], 'the routed host');
  const ing: K8sObject = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: meta('shop', 'ingress'),
    spec: { ingressClassName: 'nginx', rules: [{ host: 'shop.example.com' }] },
    status: { loadBalancer: {} },
  };
  t.match(deploymentStatus(snapshot({ ingresses: [ing] }), opts).rows[3], { status: 'Pending', reason: 'no address from the nginx controller yet' });
  const served = { ...ing, status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } };
  t.match(deploymentStatus(snapshot({ ingresses: [served] }), opts).rows[3], { status: 'Running', reason: 'served by the nginx controller at 203.0.113.7' });
});

t.test('URLs: the caller\'s, and https://domain once its Certificate is Ready', async (t) => {
  const cert = (ready: boolean, app = APP): K8sObject => ({
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: meta('shop-tls', 'ingress', app),
    spec: { secretName: 'shop-tls', dnsNames: ['shop.example.com'], issuerRef: { name: 'letsencrypt', kind: 'ClusterIssuer' } },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'Ready' : 'DoesNotExist' }] },
  });
  const o = { app: APP, domain: 'shop.example.com', urls: ['http://203.0.113.7:30080/', 'http://shop.example.com/'] };
  t.same(deploymentStatus(snapshot({ certificates: [cert(false)] }), o).urls, ['http://shop.example.com/', 'http://203.0.113.7:30080/']);
  t.same(deploymentStatus(snapshot({ certificates: [cert(true)] }), o).urls, ['https://shop.example.com/', 'http://203.0.113.7:30080/'], 'https replaces http for the domain');
  t.same(deploymentStatus(snapshot({ certificates: [cert(true, 'other')] }), o).urls[0], 'http://shop.example.com/', 'another app\'s certificate does not count');
  t.same(deploymentStatus(snapshot(), { app: APP, urls: ['http://10.0.0.5:30080/'] }).urls, ['http://10.0.0.5:30080/'], 'passed through');
  const lb: K8sObject = { apiVersion: 'v1', kind: 'Service', metadata: meta('shop-ingress', 'ingress'), spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ hostname: 'lb.example.net' }] } } };
  t.same(deploymentStatus(snapshot({ services: [lb] }), opts).urls, ['http://lb.example.net/'], 'a load balancer\'s address');
});

t.test('renderStatus: a fixed-width table, then the URLs', async (t) => {
  const { d, rs, pods } = appWith([ready, ready, crashLoop(5, 1)]);
  const sts = statefulSet('shop-docdb', 'docdb');
  const report = deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs], statefulSets: [sts], pods: [...pods, pod('shop-docdb-0', sts, 'StatefulSet', ready)] }), {
    app: APP,
    urls: ['http://10.0.0.5:30080/'],
    external: { kv: 'external ([scale.database] kv_url)' },
  });
  t.equal(
    renderStatus(report),
    [
      'COMPONENT          STATUS        READY  REASON',
      'app                Restarting    2/3    CrashLoopBackOff: container app exited 1, 5 restarts',
      'document database  Running       1/1',
      'Redis              Not Deployed  -      external ([scale.database] kv_url)',
      'ingress            Not Deployed  -',
      '',
      'URL: http://10.0.0.5:30080/',
      '',
    ].join('\n'),
  );
  const healthy = deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs], pods: pods.slice(0, 2) }), { app: APP });
  t.match(renderStatus(healthy), /^app\s+Degraded\s+2\/3\s+1 pod not created yet$/m);
  const three = appWith([ready, ready, ready]);
  t.match(renderStatus(deploymentStatus(snapshot({ deployments: [three.d], replicaSets: [three.rs], pods: three.pods }), opts)), /^app\s+Running\s+3\/3$/m);
  const withPods = renderStatus(report, { pods: true });
  t.match(withPods, '  shop-7d4b9-p2  Running, 5 restarts, last exit 1 (Error) — CrashLoopBackOff: container app exited 1, 5 restarts');
  t.match(withPods, '  shop-docdb-0  Running, ready, 0 restarts');
});

t.test('statusJson: the stable shape of --json', async (t) => {
  const { d, rs, pods } = appWith([ready, crashLoop(5, 1)]);
  const json = statusJson(deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs], pods }), { app: APP, urls: ['http://10.0.0.5:30080/'] }));
  t.same(Object.keys(json), ['version', 'app', 'components', 'urls']);
  t.same(json.components[0], {
    key: 'app',
    component: 'app',
    status: 'Restarting',
    ready: 1,
    desired: 2,
    reason: 'CrashLoopBackOff: container app exited 1, 5 restarts',
    workloads: ['Deployment/shop'],
    pods: [
      { name: 'shop-7d4b9-p0', ready: true, phase: 'Running', reason: null, restarts: 0, lastExit: null },
      {
        name: 'shop-7d4b9-p1',
        ready: false,
        phase: 'Running',
        reason: 'CrashLoopBackOff: container app exited 1, 5 restarts',
        restarts: 5,
        lastExit: { container: 'app', exitCode: 1, reason: 'Error', finishedAt: '2024-09-01T12:01:00Z' },
      },
    ],
  });
  t.same(json.components[1], { key: 'docdb', component: 'document database', status: 'Not Deployed', ready: 0, desired: 0, reason: null, workloads: [], pods: [] });
  t.same(json.urls, ['http://10.0.0.5:30080/']);
  t.same(JSON.parse(JSON.stringify(json)), json, 'plain JSON');
});

t.test('statusChanged: status, ready, reason or URLs', async (t) => {
  const at = (statuses: PodStatus[], urls: string[] = []) => {
    const { d, rs, pods } = appWith(statuses, { replicas: 2 });
    return deploymentStatus(snapshot({ deployments: [d], replicaSets: [rs], pods }), { app: APP, urls });
  };
  t.notOk(statusChanged(at([ready, creating]), at([ready, creating])), 'the same state');
  t.ok(statusChanged(at([ready, creating]), at([ready, ready])), 'ready and status changed');
  t.ok(statusChanged(at([ready, creating]), at([ready, initRunning])), 'the reason changed');
  t.ok(statusChanged(at([ready, crashLoop(5)]), at([ready, crashLoop(6)])), 'a new restart shows in the reason');
  t.ok(statusChanged(at([ready, ready]), at([ready, ready], ['https://shop.example.com/'])), 'the URLs changed');
});

t.test('the function is pure: the same snapshot, the same report, the snapshot untouched', async (t) => {
  const { d, rs, pods } = appWith([ready, crashLoop()]);
  const snap = snapshot({ deployments: [d], replicaSets: [rs], pods });
  const before = JSON.stringify(snap);
  t.same(deploymentStatus(snap, opts), deploymentStatus(snap, opts));
  t.equal(JSON.stringify(snap), before);
});
