// The fake Kubernetes API server of the test kit (test/kit/fake-kube-api.ts), driven through
// @kubernetes/client-node as the deploy code drives a real one: discovery, CRUD and the real
// Status errors, patches, watches, logs, and the simulated controllers (rollouts, progress
// deadlines, StatefulSets and their claims, namespace termination, CRD-gated kinds, cert-manager).
// Waits are `api.until` (bounded polling of the fake's state), never sleeps.
import t, { type Test } from 'tap';
import { AppsV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, PatchStrategy, setHeaderOptions, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { startFakeKubeApi } from '../kit/index.ts';

type Api = Awaited<ReturnType<typeof startFakeKubeApi>>;

/** A started fake (closed when the test ends) and clients on it. */
async function cluster(t: Test, options: Parameters<typeof startFakeKubeApi>[0] = {}) {
  const api = await startFakeKubeApi(options);
  t.teardown(() => api.close());
  const kc = new KubeConfig();
  kc.loadFromFile(api.kubeconfig);
  return { api, kc, core: kc.makeApiClient(CoreV1Api), apps: kc.makeApiClient(AppsV1Api), objects: KubernetesObjectApi.makeApiClient(kc) };
}

/** The error a client call fails with: its HTTP code and the Status body. */
async function failure(call: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await call;
  } catch (e) {
    const error = e as { code?: number; body?: unknown };
    return { code: error.code ?? 0, body: typeof error.body === 'string' ? JSON.parse(error.body) : error.body };
  }
  throw new Error('the call succeeded');
}

function deployment(name: string, image: string, extra: Record<string, any> = {}): any {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop' },
    spec: { replicas: 2, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image }] } }, ...extra },
  };
}

async function namespace(api: Api, core: CoreV1Api, name = 'shop'): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
  if (!api.get('v1', 'Namespace', undefined, name)) throw new Error(`no namespace ${name}`);
}

t.test('fake Kubernetes API server: auth, version, discovery, and CRUD through KubernetesObjectApi', async (t) => {
  const { api, core, objects } = await cluster(t);
  const anonymous = await fetch(`${api.url}/api/v1/namespaces`);
  t.equal(anonymous.status, 401, 'no bearer token: 401');
  t.match(await anonymous.json(), { kind: 'Status', reason: 'Unauthorized', code: 401 });
  const version = await fetch(`${api.url}/version`, { headers: { authorization: 'Bearer fake-token' } });
  t.match(await version.json(), { major: '1', minor: '31', gitVersion: 'v1.31.0-fake', platform: 'linux/amd64' });
  const apps = (await (await fetch(`${api.url}/apis/apps/v1`, { headers: { authorization: 'Bearer fake-token' } })).json()) as any;
  const names = apps.resources.map((r: any) => r.name);
  t.ok(names.includes('deployments/scale') && names.includes('deployments/status') && names.indexOf('deployments') < names.indexOf('deployments/status'), 'subresources listed after their resource');
  const coreList = (await (await fetch(`${api.url}/api/v1`, { headers: { authorization: 'Bearer fake-token' } })).json()) as any;
  t.match(
    coreList.resources.find((r: any) => r.name === 'pods/log'),
    { kind: 'Pod', verbs: ['get'] },
  );
  t.match(
    coreList.resources.find((r: any) => r.name === 'namespaces'),
    { namespaced: false, kind: 'Namespace', singularName: 'namespace' },
  );

  await namespace(api, core);
  const created = await objects.create(deployment('web', 'web:1') as KubernetesObject);
  t.equal(created.metadata?.generation, 1);
  t.ok(created.metadata?.uid && created.metadata.resourceVersion, 'uid and resourceVersion set');
  const read = (await objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } })) as any;
  t.equal(read.spec.strategy.rollingUpdate.maxSurge, '25%', 'defaults filled in, as the real server does');
  const patched = (await objects.patch(
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' }, spec: { replicas: 3 } } as KubernetesObject,
    undefined,
    undefined,
    undefined,
    undefined,
    PatchStrategy.MergePatch,
  )) as any;
  t.equal(patched.spec.replicas, 3);
  t.equal(patched.metadata.generation, 2, 'a spec change bumps the generation');
  const labelled = (await objects.patch(
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop', labels: { tier: 'front' } } } as KubernetesObject,
    undefined,
    undefined,
    undefined,
    undefined,
    PatchStrategy.MergePatch,
  )) as any;
  t.equal(labelled.metadata.generation, 2, 'a metadata change does not');
  const listed = await core.listNamespacedConfigMap({ namespace: 'shop' });
  t.ok(listed.metadata?.resourceVersion, 'a list carries its resourceVersion');
  await objects.delete({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } });
  const gone = await failure(objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } }));
  t.equal(gone.code, 404);
  t.match(gone.body, { reason: 'NotFound', details: { name: 'web', kind: 'deployments' } });
  await api.until(() => api.list('apps/v1', 'ReplicaSet', 'shop').length === 0 && api.list('v1', 'Pod', 'shop').length === 0, 5000, 'the garbage collector');
  t.pass('ReplicaSets and pods of a deleted Deployment are collected');

  const missing = await failure(core.createNamespacedConfigMap({ namespace: 'nowhere', body: { metadata: { name: 'a' } } }));
  t.equal(missing.code, 404, 'creating in a missing namespace: 404');
  t.match(missing.body.message, /namespaces "nowhere" not found/);
  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'a' } } });
  const dup = await failure(core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'a' } } }));
  t.match(dup, { code: 409, body: { reason: 'AlreadyExists' } });
  const secret = await core.createNamespacedSecret({ namespace: 'shop', body: { metadata: { name: 's' }, stringData: { password: 'hunter2' } } });
  t.same(secret.data, { password: Buffer.from('hunter2').toString('base64') }, 'stringData folded into data');
  t.equal(secret.stringData, undefined);
  t.equal(secret.type, 'Opaque');
  const generated = await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { generateName: 'cfg-' } } });
  t.match(generated.metadata?.name, /^cfg-[a-z0-9]{5}$/, 'generateName honoured');
  t.ok(
    api.writes().every((r) => r.method !== 'GET'),
    'writes() holds no GET',
  );
  t.match(
    api.requests.find((r) => r.method === 'POST' && r.path === '/api/v1/namespaces/shop/secrets'),
    { contentType: 'application/json', body: { stringData: { password: 'hunter2' } } },
  );
});

t.test('fake Kubernetes API server: conflicts, invalid objects and taken node ports', async (t) => {
  const { api, kc, core, apps } = await cluster(t);
  await namespace(api, core);
  const cm = await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'a' }, data: { k: '1' } } });
  const updated = await core.replaceNamespacedConfigMap({ namespace: 'shop', name: 'a', body: { ...cm, data: { k: '2' } } });
  t.not(updated.metadata?.resourceVersion, cm.metadata?.resourceVersion, 'a replace bumps the resourceVersion');
  t.equal(updated.metadata?.uid, cm.metadata?.uid, 'and keeps the uid');
  const stale = await failure(core.replaceNamespacedConfigMap({ namespace: 'shop', name: 'a', body: { ...cm, data: { k: '3' } } }));
  t.equal(stale.code, 409, 'a stale resourceVersion: 409');
  t.match(stale.body, { reason: 'Conflict', message: /the object has been modified/ });
  const stalePatch = await failure(
    core.patchNamespacedConfigMap(
      { namespace: 'shop', name: 'a', body: { metadata: { resourceVersion: cm.metadata?.resourceVersion }, data: { k: '4' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ),
  );
  t.equal(stalePatch.code, 409, 'a patch carrying a stale resourceVersion: 409');

  const bad = deployment('web', 'web:1');
  bad.spec.replicas = 'three';
  const invalid = await failure(apps.createNamespacedDeployment({ namespace: 'shop', body: bad }));
  t.equal(invalid.code, 422, 'a schema error: 422');
  t.match(invalid.body, { reason: 'Invalid', details: { name: 'web', kind: 'Deployment', causes: [{ field: 'spec.replicas', reason: 'FieldValueInvalid' }] } });
  const badName = await failure(core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'Not_A_Name' } } }));
  t.equal(badName.code, 422, 'a name that is no DNS-1123 subdomain: 422');
  t.match(badName.body.details.causes, [{ field: 'metadata.name' }]);
  const mismatch = deployment('web', 'web:1');
  mismatch.spec.selector.matchLabels.app = 'other';
  t.match(await failure(apps.createNamespacedDeployment({ namespace: 'shop', body: mismatch })), { code: 422, body: { message: /`selector` does not match template `labels`/ } });
  // The typed clients drop unknown fields before sending (their serializer knows the types): raw requests here.
  const unknown = deployment('web', 'web:1');
  unknown.spec.replcias = 3;
  const post = (query: string) =>
    fetch(`${api.url}/apis/apps/v1/namespaces/shop/deployments${query}`, {
      method: 'POST',
      headers: { authorization: 'Bearer fake-token', 'content-type': 'application/json' },
      body: JSON.stringify(unknown),
    });
  const strict = await post('?fieldValidation=Strict');
  t.equal(strict.status, 400, 'an unknown field under Strict: 400');
  t.match(await strict.json(), { message: 'strict decoding error: unknown field "spec.replcias"' });
  const dropped = await post('');
  t.equal(dropped.status, 201);
  t.match(dropped.headers.get('warning'), /unknown field \\"spec.replcias\\"/, 'by default an unknown field is dropped, with a warning');
  t.equal(((await dropped.json()) as any).spec.replcias, undefined);

  const service = (name: string, nodePort?: number) => ({
    metadata: { name },
    spec: { type: 'NodePort', selector: { app: name }, ports: [{ port: 80, targetPort: 8080, ...(nodePort ? { nodePort } : {}) }] },
  });
  const first = await core.createNamespacedService({ namespace: 'shop', body: service('front', 30080) });
  t.match(first.spec?.clusterIP, /^10\.96\.\d+\.\d+$/, 'a clusterIP allocated');
  t.equal(first.spec?.ports?.[0]?.nodePort, 30080);
  const auto = await core.createNamespacedService({ namespace: 'shop', body: service('back') });
  const allocated = auto.spec?.ports?.[0]?.nodePort ?? 0;
  t.ok(allocated >= 30000 && allocated <= 32767, `a nodePort allocated (${allocated})`);
  await core.createNamespace({ body: { metadata: { name: 'other' } } });
  const taken = await failure(core.createNamespacedService({ namespace: 'other', body: service('x', 30080) }));
  t.equal(taken.code, 422, 'a node port taken in another namespace: 422');
  t.equal(taken.body.message, 'Service "x" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated');
  const replaced = await core.replaceNamespacedService({
    namespace: 'shop',
    name: 'back',
    body: { metadata: { name: 'back' }, spec: { type: 'NodePort', selector: { app: 'back' }, ports: [{ port: 80 }] } },
  });
  t.equal(replaced.spec?.clusterIP, auto.spec?.clusterIP, 'an update keeps the clusterIP');
  t.equal(replaced.spec?.ports?.[0]?.nodePort, allocated, 'and the nodePort');

  const undo = api.failWhen((r) => r.path.includes('horizontalpodautoscalers') && (r.method === 'POST' || r.method === 'PATCH'), 500, 'etcd is on fire');
  const hpa = {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 3 },
  };
  const objects = KubernetesObjectApi.makeApiClient(kc);
  t.match(await failure(objects.create(hpa)), { code: 500, body: { reason: 'InternalError', message: 'etcd is on fire' } }, 'an injected failure');
  undo();
  t.ok(await objects.create(hpa), 'and it is gone once removed');
});

t.test('fake Kubernetes API server: a Deployment rolls out, rolls to a new template and back', async (t) => {
  const { api, kc, core, apps } = await cluster(t);
  await namespace(api, core);
  await apps.createNamespacedDeployment({ namespace: 'shop', body: deployment('web', 'web:1', { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } }) });
  const available = (generation: number) => () => {
    const d = api.get('apps/v1', 'Deployment', 'shop', 'web');
    const ok = d?.status?.observedGeneration === generation && d.status.availableReplicas === 2 && d.status.updatedReplicas === 2 && d.status.replicas === 2;
    return ok && d.status.conditions.find((c: any) => c.type === 'Progressing')?.reason === 'NewReplicaSetAvailable' ? d : undefined;
  };
  const d1 = await api.until(available(1), 5000, 'the first rollout');
  t.match(d1.status.conditions, [
    { type: 'Available', status: 'True' },
    { type: 'Progressing', status: 'True' },
  ]);
  t.equal(d1.metadata.annotations['deployment.kubernetes.io/revision'], '1');
  const [rs1] = api.list('apps/v1', 'ReplicaSet', 'shop');
  t.match(rs1?.metadata.name, /^web-[a-z0-9]{10}$/);
  t.match(rs1?.metadata.ownerReferences, [{ kind: 'Deployment', name: 'web', controller: true }]);
  const pods = api.list('v1', 'Pod', 'shop');
  t.equal(pods.length, 2);
  for (const pod of pods) {
    t.match(pod.metadata.name, new RegExp(`^${rs1?.metadata.name}-[a-z0-9]{5}$`));
    t.equal(pod.metadata.labels['pod-template-hash'], rs1?.metadata.labels['pod-template-hash']);
    t.match(pod, { spec: { nodeName: 'fake-node' }, status: { phase: 'Running', podIP: /^10\.244\./, containerStatuses: [{ name: 'web', ready: true, state: { running: {} } }] } });
  }

  // Watch the pods through the rollout: with maxUnavailable 0 there are never fewer than 2 ready.
  let fewest = 2;
  const watch = new Watch(kc);
  const controller = await watch.watch(
    '/api/v1/namespaces/shop/pods',
    {},
    () => {
      const ready = api.list('v1', 'Pod', 'shop').filter((p) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')).length;
      fewest = Math.min(fewest, ready);
    },
    () => undefined,
  );
  t.teardown(() => controller.abort());
  await apps.patchNamespacedDeployment(
    { namespace: 'shop', name: 'web', body: { spec: { template: { spec: { containers: [{ name: 'web', image: 'web:2' }] } } } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  const d2 = await api.until(available(2), 5000, 'the second rollout');
  t.equal(d2.metadata.annotations['deployment.kubernetes.io/revision'], '2');
  const sets = api.list('apps/v1', 'ReplicaSet', 'shop');
  t.equal(sets.length, 2, 'two ReplicaSets');
  const rs2 = sets.find((rs) => rs.metadata.annotations['deployment.kubernetes.io/revision'] === '2');
  t.equal(rs2?.spec.template.spec.containers[0].image, 'web:2');
  t.equal(api.get('apps/v1', 'ReplicaSet', 'shop', rs1?.metadata.name)?.spec.replicas, 0, 'the old one scaled to 0');
  await api.until(() => api.list('v1', 'Pod', 'shop').every((p) => p.spec.containers[0].image === 'web:2'), 5000, 'only new pods');
  t.equal(fewest, 2, 'maxUnavailable 0: an old pod goes only once a new one is ready');

  // Back to web:1: the first ReplicaSet comes back with revision 3.
  await apps.patchNamespacedDeployment(
    { namespace: 'shop', name: 'web', body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'web:1' }] },
    setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
  );
  const d3 = await api.until(available(3), 5000, 'the rollback');
  t.equal(d3.metadata.annotations['deployment.kubernetes.io/revision'], '3');
  t.equal(api.get('apps/v1', 'ReplicaSet', 'shop', rs1?.metadata.name)?.metadata.annotations['deployment.kubernetes.io/revision'], '3', 'the old ReplicaSet reused');
  t.equal(api.list('apps/v1', 'ReplicaSet', 'shop').length, 2);

  const scale = await apps.readNamespacedDeploymentScale({ namespace: 'shop', name: 'web' });
  t.equal(scale.spec?.replicas, 2);
  await apps.replaceNamespacedDeploymentScale({ namespace: 'shop', name: 'web', body: { ...scale, spec: { replicas: 3 } } });
  await api.until(() => api.get('apps/v1', 'Deployment', 'shop', 'web')?.status?.readyReplicas === 3, 5000, 'scaled to 3');
  t.equal(api.list('v1', 'Pod', 'shop').length, 3);
});

t.test('fake Kubernetes API server: crash loops, progress deadlines, scripts and logs', async (t) => {
  const { api, core, apps } = await cluster(t, {
    pods: (pod) =>
      pod.metadata.labels?.app === 'crash' ? { state: 'CrashLoopBackOff', exitCode: 3, logs: 'starting\nError: no database\n' }
      : pod.metadata.name === 'big' ? { state: 'Unschedulable' }
      : undefined,
  });
  await namespace(api, core);
  await apps.createNamespacedDeployment({ namespace: 'shop', body: deployment('crash', 'crash:1', { progressDeadlineSeconds: 1 }) });
  const exceeded = await api.until(
    () => api.get('apps/v1', 'Deployment', 'shop', 'crash')?.status?.conditions?.find((c: any) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded'),
    5000,
    'ProgressDeadlineExceeded',
  );
  t.match(exceeded, { status: 'False', message: /has timed out progressing/ });
  const d = api.get('apps/v1', 'Deployment', 'shop', 'crash');
  t.match(d?.status, { replicas: 2, unavailableReplicas: 2, conditions: [{ type: 'Available', status: 'False' }] });
  t.equal(d?.status.readyReplicas, undefined, 'zero counts are omitted, as the real API omits them');
  const [pod] = api.list('v1', 'Pod', 'shop');
  t.match(pod?.status, {
    phase: 'Running',
    containerStatuses: [
      {
        name: 'crash',
        ready: false,
        state: { waiting: { reason: 'CrashLoopBackOff', message: /^back-off 10s restarting failed container=crash/ } },
        lastState: { terminated: { exitCode: 3, reason: 'Error' } },
      },
    ],
  });
  t.ok(pod?.status.containerStatuses[0].restartCount >= 1);
  const logs = await core.readNamespacedPodLog({ namespace: 'shop', name: pod?.metadata.name, previous: true, tailLines: 1 });
  t.equal(logs, 'Error: no database\n', "the previous container's logs, tailed");
  const events = await core.listNamespacedEvent({ namespace: 'shop', fieldSelector: `involvedObject.name=${pod?.metadata.name}` });
  t.match(events.items, [{ reason: 'BackOff', type: 'Warning' }], 'a Warning event for the pod');

  // Scripts: each state as the kubelet reports it.
  await core.createNamespacedPod({
    namespace: 'shop',
    body: { metadata: { name: 'solo', labels: { app: 'solo' } }, spec: { containers: [{ name: 'main', image: 'solo:1' }], initContainers: [{ name: 'migrate', image: 'solo:1' }] } },
  });
  const status = async (script: Parameters<Api['scriptPod']>[2], check: (s: any) => boolean) => {
    api.scriptPod('shop', 'solo', script);
    return api.until(
      () => {
        const s = api.get('v1', 'Pod', 'shop', 'solo')?.status;
        return s && check(s) ? s : undefined;
      },
      3000,
      script.state,
    );
  };
  t.match(await status({ state: 'ImagePullBackOff' }, (s) => s.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff'), {
    phase: 'Pending',
    containerStatuses: [{ state: { waiting: { message: 'Back-off pulling image "solo:1"' } } }],
  });
  const pulling = await failure(core.readNamespacedPodLog({ namespace: 'shop', name: 'solo' }));
  t.match(pulling, { code: 400, body: { message: 'container "main" in pod "solo" is waiting to start: trying and failing to pull image' } });
  t.match(await status({ state: 'InitCrashLoopBackOff' }, (s) => s.initContainerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff'), {
    phase: 'Pending',
    conditions: [{ type: 'PodReadyToStartContainers' }, { type: 'Initialized', status: 'False' }],
    initContainerStatuses: [{ name: 'migrate', lastState: { terminated: { reason: 'Error' } } }],
  });
  t.match(await status({ state: 'NotReady' }, (s) => s.phase === 'Running'), { conditions: [{}, {}, { type: 'Ready', status: 'False' }] });
  // `solo` restarts Always: a scripted failure is a restart, not the pod's end (restartPolicy Never is tested below).
  t.match(await status({ state: 'Failed', exitCode: 2 }, (s) => s.containerStatuses?.[0]?.lastState?.terminated?.exitCode === 2), {
    phase: 'Running',
    containerStatuses: [{ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 2, reason: 'Error' } } }],
  });
  t.match(await status({ state: 'Running', readyAfterMs: 0 }, (s) => s.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')), { phase: 'Running' });

  await core.createNamespacedPod({ namespace: 'shop', body: { metadata: { name: 'big' }, spec: { containers: [{ name: 'main', image: 'big:1' }] } } });
  const pending = await api.until(() => api.get('v1', 'Pod', 'shop', 'big')?.status?.conditions?.find((c: any) => c.reason === 'Unschedulable'), 3000, 'Unschedulable');
  t.match(pending, { type: 'PodScheduled', status: 'False', message: '0/1 nodes are available: 1 Insufficient cpu.' });
  t.equal(api.get('v1', 'Pod', 'shop', 'big')?.spec.nodeName, undefined, 'an unschedulable pod has no node');

  await core.createNamespacedPod({
    namespace: 'shop',
    body: {
      metadata: { name: 'two' },
      spec: {
        containers: [
          { name: 'a', image: 'a:1' },
          { name: 'b', image: 'b:1' },
        ],
      },
    },
  });
  api.scriptPod('shop', 'two', { state: 'Running', logs: 'one\ntwo\nthree\n' });
  await api.until(() => api.get('v1', 'Pod', 'shop', 'two')?.status?.phase === 'Running', 3000, 'two running');
  t.match(await failure(core.readNamespacedPodLog({ namespace: 'shop', name: 'two' })), { code: 400, body: { message: 'a container name must be specified for pod two, choose one of: [a b]' } });
  t.equal(await core.readNamespacedPodLog({ namespace: 'shop', name: 'two', container: 'b', tailLines: 2 }), 'two\nthree\n');
});

t.test('fake Kubernetes API server: a StatefulSet makes ordered pods and claims that outlive it', async (t) => {
  const { api, core, apps } = await cluster(t);
  await namespace(api, core);
  await apps.createNamespacedStatefulSet({
    namespace: 'shop',
    body: {
      metadata: { name: 'db' },
      spec: {
        replicas: 2,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'postgres:16', volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }] }] } },
        volumeClaimTemplates: [{ metadata: { name: 'data', labels: { tier: 'db' } }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      },
    },
  });
  const sts = await api.until(
    () => {
      const s = api.get('apps/v1', 'StatefulSet', 'shop', 'db');
      return s?.status?.readyReplicas === 2 && s.status.observedGeneration === 1 ? s : undefined;
    },
    5000,
    'the StatefulSet ready',
  );
  t.match(sts.status, { replicas: 2, currentReplicas: 2, updatedReplicas: 2, availableReplicas: 2 });
  t.same(
    api.list('v1', 'Pod', 'shop').map((p) => p.metadata.name),
    ['db-0', 'db-1'],
  );
  const claims = api.list('v1', 'PersistentVolumeClaim', 'shop');
  t.same(
    claims.map((c) => c.metadata.name),
    ['data-db-0', 'data-db-1'],
  );
  t.match(claims[0], { metadata: { labels: { tier: 'db', app: 'db' } }, status: { phase: 'Bound', capacity: { storage: '1Gi' } } });
  t.match(api.get('v1', 'Pod', 'shop', 'db-0')?.spec.volumes, [{ name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } }]);
  const forbidden = await failure(
    apps.patchNamespacedStatefulSet({ namespace: 'shop', name: 'db', body: { spec: { serviceName: 'other' } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
  );
  t.match(forbidden, { code: 422, body: { message: /updates to statefulset spec for fields other than/ } });
  await apps.deleteNamespacedStatefulSet({ namespace: 'shop', name: 'db' });
  await api.until(() => api.list('v1', 'Pod', 'shop').length === 0, 5000, 'the pods collected');
  t.equal(api.list('v1', 'PersistentVolumeClaim', 'shop').length, 2, 'the claims stay');
});

t.test('fake Kubernetes API server: a namespace delete goes Terminating, then it and its objects are gone', async (t) => {
  const { api, core, apps } = await cluster(t);
  await namespace(api, core);
  await apps.createNamespacedDeployment({ namespace: 'shop', body: deployment('web', 'web:1') });
  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'a' } } });
  // A finalizer nobody removes holds the namespace Terminating until the test removes it.
  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'held', finalizers: ['example.com/hold'] } } });
  await api.until(() => api.list('v1', 'Pod', 'shop').length === 2, 5000, 'pods');
  await core.deleteNamespace({ name: 'shop' });
  t.match(api.get('v1', 'Namespace', undefined, 'shop'), { status: { phase: 'Terminating' }, metadata: { deletionTimestamp: String } }, 'Terminating');
  const refused = await failure(core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'b' } } }));
  t.equal(refused.code, 403, 'no new content in a terminating namespace');
  t.match(refused.body, { reason: 'Forbidden', message: /because it is being terminated/ });
  await api.until(() => api.list('v1', 'Pod', 'shop').length === 0 && api.list('v1', 'ConfigMap', 'shop').length === 1, 5000, 'the content deleted');
  t.match(api.get('v1', 'ConfigMap', 'shop', 'held')?.metadata, { deletionTimestamp: String }, 'the held object waits for its finalizer');
  t.match(api.get('v1', 'Namespace', undefined, 'shop')?.status, { phase: 'Terminating' });
  t.equal((await failure(core.deleteNamespace({ name: 'shop' }))).code, 409, 'deleting it again: 409');
  await core.patchNamespacedConfigMap({ namespace: 'shop', name: 'held', body: { metadata: { finalizers: null } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await api.until(() => !api.get('v1', 'Namespace', undefined, 'shop'), 5000, 'the namespace removed');
  t.equal(api.list('v1', 'ConfigMap', 'shop').length + api.list('v1', 'Pod', 'shop').length + api.list('apps/v1', 'Deployment', 'shop').length, 0, 'with everything in it');
  t.equal((await failure(core.readNamespace({ name: 'shop' }))).code, 404);
});

t.test('fake Kubernetes API server: a watch sees ADDED, MODIFIED and DELETED', async (t) => {
  const { api, kc, core } = await cluster(t);
  await namespace(api, core);
  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'before', labels: { app: 'x' } } } });
  const list = await core.listNamespacedConfigMap({ namespace: 'shop' });
  const seen: string[] = [];
  let ended: unknown = 'not yet';
  const controller = await new Watch(kc).watch(
    '/api/v1/namespaces/shop/configmaps',
    { resourceVersion: list.metadata?.resourceVersion, labelSelector: 'app=x' },
    (type, object) => seen.push(`${type} ${object.metadata.name}`),
    (error) => (ended = error),
  );
  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'c', labels: { app: 'x' } } } });
  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'unlabelled' } } });
  await core.patchNamespacedConfigMap({ namespace: 'shop', name: 'c', body: { data: { k: 'v' } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await core.deleteNamespacedConfigMap({ namespace: 'shop', name: 'c' });
  await api.until(() => seen.length >= 3, 3000, 'three events');
  t.same(seen, ['ADDED c', 'MODIFIED c', 'DELETED c'], 'only changes after the list, only the selected');
  controller.abort();
  await api.until(() => ended !== 'not yet', 3000, 'the done callback');

  const fromNow: string[] = [];
  const again = await new Watch(kc).watch(
    '/api/v1/namespaces/shop/configmaps',
    {},
    (type, object) => fromNow.push(`${type} ${object.metadata.name}`),
    () => undefined,
  );
  await api.until(() => fromNow.length >= 3, 3000, 'the current objects');
  t.same(fromNow.sort(), ['ADDED before', 'ADDED kube-root-ca.crt', 'ADDED unlabelled'], 'without a resourceVersion: ADDED for what exists');
  again.abort();
});

t.test('fake Kubernetes API server: custom resources only while their CRD exists; cert-manager issues', async (t) => {
  const { api, kc, core, objects } = await cluster(t);
  await namespace(api, core);
  const certificate = {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { secretName: 'web-tls', dnsNames: ['shop.example'], issuerRef: { name: 'le', kind: 'ClusterIssuer' } },
  };
  const before = await fetch(`${api.url}/apis/cert-manager.io/v1/namespaces/shop/certificates`, { headers: { authorization: 'Bearer fake-token' } });
  t.equal(before.status, 404, 'no CRD: the path is not served');
  await t.rejects(objects.create(certificate), /Unrecognized API version and kind|404/, 'the client finds no such kind');
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'certificates.cert-manager.io' },
    spec: {
      group: 'cert-manager.io',
      names: { kind: 'Certificate', plural: 'certificates', singular: 'certificate', listKind: 'CertificateList' },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }, subresources: { status: {} } }],
    },
  };
  const created = (await objects.create(crd)) as any;
  t.match(created.status.conditions, [
    { type: 'NamesAccepted', status: 'True' },
    { type: 'Established', status: 'True' },
  ]);
  // A new client: the first cached the group's 404 discovery.
  const fresh = KubernetesObjectApi.makeApiClient(kc);
  await fresh.create(certificate);
  const ready = await api.until(
    () => api.get('cert-manager.io/v1', 'Certificate', 'shop', 'web')?.status?.conditions?.find((c: any) => c.type === 'Ready' && c.status === 'True'),
    3000,
    'the Certificate Ready',
  );
  t.ok(ready);
  t.match(api.get('v1', 'Secret', 'shop', 'web-tls'), { type: 'kubernetes.io/tls', data: { 'tls.crt': /.+/, 'tls.key': /.+/ } });
  await fresh.delete(crd);
  await api.until(() => !api.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', undefined, 'certificates.cert-manager.io'), 3000, 'the CRD removed');
  const after = await fetch(`${api.url}/apis/cert-manager.io/v1/namespaces/shop/certificates`, { headers: { authorization: 'Bearer fake-token' } });
  t.equal(after.status, 404, 'served no more once the CRD is gone');
});

t.test('fake Kubernetes API server: apply patches, strategic merges by name, dry runs and label selectors', async (t) => {
  const { api, core, apps } = await cluster(t);
  await namespace(api, core);
  const body = deployment('web', 'web:1');
  body.spec.template.spec.containers.push({ name: 'sidecar', image: 'side:1' });
  const noManager = await failure(apps.patchNamespacedDeployment({ namespace: 'shop', name: 'web', body }, setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply)));
  t.equal(noManager.code, 422, 'an apply patch needs a fieldManager');
  const applied = await apps.patchNamespacedDeployment({ namespace: 'shop', name: 'web', body, fieldManager: 'svc' }, setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply));
  t.equal(applied.metadata?.generation, 1, 'an apply creates what is absent');
  const merged = await apps.patchNamespacedDeployment(
    { namespace: 'shop', name: 'web', body: { spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'side:2' }] } } } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  t.same(
    merged.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`),
    ['web=web:1', 'sidecar=side:2'],
    'containers merged by name',
  );
  const reapplied = await apps.patchNamespacedDeployment({ namespace: 'shop', name: 'web', body, fieldManager: 'svc' }, setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply));
  t.equal(reapplied.spec?.template.spec?.containers[1]?.image, 'side:1');
  t.equal(reapplied.metadata?.generation, 3);
  const same = await apps.patchNamespacedDeployment({ namespace: 'shop', name: 'web', body, fieldManager: 'svc' }, setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply));
  t.equal(same.metadata?.resourceVersion, api.get('apps/v1', 'Deployment', 'shop', 'web')?.metadata.resourceVersion, 'an unchanged apply is a no-op');
  t.equal(same.metadata?.generation, 3);

  await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name: 'dry' } }, dryRun: 'All' });
  t.equal(api.get('v1', 'ConfigMap', 'shop', 'dry'), undefined, 'a dry run stores nothing');

  for (const [name, labels] of [
    ['a', { app: 'web', tier: 'front' }],
    ['b', { app: 'web', tier: 'back' }],
    ['c', { app: 'db' }],
  ] as const) {
    await core.createNamespacedConfigMap({ namespace: 'shop', body: { metadata: { name, labels } } });
  }
  const names = async (labelSelector: string, fieldSelector?: string) =>
    (await core.listNamespacedConfigMap({ namespace: 'shop', labelSelector, ...(fieldSelector ? { fieldSelector } : {}) })).items.map((i) => i.metadata?.name);
  t.same(await names('app=web'), ['a', 'b']);
  t.same(await names('app!=web'), ['c', 'kube-root-ca.crt'], 'every namespace has its root CA ConfigMap');
  t.same(await names('tier in (front,middle)'), ['a']);
  t.same(await names('tier notin (front),app'), ['b', 'c']);
  t.same(await names('tier'), ['a', 'b']);
  t.same(await names('!tier,app'), ['c']);
  t.same(await names('', 'metadata.name=b'), ['b']);
  const all = await core.listServiceForAllNamespaces();
  t.ok(
    all.items.some((s) => s.metadata?.name === 'kubernetes' && s.metadata.namespace === 'default'),
    'a cluster-wide list spans namespaces',
  );
  await api.until(() => api.list('v1', 'Pod', 'shop').filter((p) => p.status?.phase === 'Running').length === 2, 3000, 'the pods running');
  const running = await core.listPodForAllNamespaces({ fieldSelector: 'status.phase=Running' });
  t.equal(running.items.length, 2, 'a field selector on status.phase');
  t.equal((await core.listPodForAllNamespaces({ fieldSelector: 'status.phase!=Running' })).items.length, 0);
  t.match(await failure(core.listPodForAllNamespaces({ fieldSelector: 'spec.image=x' })), { code: 400, body: { message: 'field label not supported: spec.image' } });
});

t.test('fake Kubernetes API server: a runner stands in for the kubelet', async (t) => {
  const stopped: [string, number][] = [];
  const runtimes = new Map<string, { ready: boolean; exit?: number }>();
  const { api, core, apps } = await cluster(t, {
    runner: (pod) => {
      const state = { ready: false } as { ready: boolean; exit?: number };
      runtimes.set(pod.metadata.name, state);
      return Promise.resolve({
        ready: async () => state.ready,
        exited: () => state.exit,
        logs: async () => `log of ${pod.metadata.name}\n`,
        stop: async (grace: number) => {
          stopped.push([pod.metadata.name, grace]);
        },
      });
    },
  });
  await namespace(api, core);
  const body = deployment('web', 'web:1');
  body.spec.template.spec.terminationGracePeriodSeconds = 7;
  await apps.createNamespacedDeployment({ namespace: 'shop', body });
  await api.until(() => runtimes.size === 2, 3000, 'two runtimes');
  const names = [...runtimes.keys()];
  await api.until(() => api.list('v1', 'Pod', 'shop').every((p) => p.status?.phase === 'Running'), 3000, 'running, not ready');
  t.equal(api.get('apps/v1', 'Deployment', 'shop', 'web')?.status?.readyReplicas, undefined, 'not ready while the runtime says so');
  for (const state of runtimes.values()) state.ready = true;
  await api.until(() => api.get('apps/v1', 'Deployment', 'shop', 'web')?.status?.readyReplicas === 2, 3000, 'ready');
  t.equal(await core.readNamespacedPodLog({ namespace: 'shop', name: names[0] as string }), `log of ${names[0]}\n`);
  (runtimes.get(names[0] as string) as { exit?: number }).exit = 137;
  const crashed = await api.until(() => api.get('v1', 'Pod', 'shop', names[0] as string)?.status?.containerStatuses?.[0]?.lastState?.terminated, 3000, 'the exit seen');
  t.equal(crashed.exitCode, 137);
  await apps.patchNamespacedDeployment({ namespace: 'shop', name: 'web', body: { spec: { replicas: 1 } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await api.until(() => stopped.length === 1 && api.list('v1', 'Pod', 'shop').length === 1, 3000, 'one pod stopped and removed');
  t.same(stopped, [[names[0], 7]], 'the failing pod stopped first, with its grace period');
});

t.test('fake Kubernetes API server: observedGeneration lags by observeDelayMs', async (t) => {
  const { api, core, apps } = await cluster(t, { observeDelayMs: 300 });
  await namespace(api, core);
  await apps.createNamespacedDeployment({ namespace: 'shop', body: deployment('web', 'web:1') });
  t.equal(api.get('apps/v1', 'Deployment', 'shop', 'web')?.status, undefined, 'not observed at once');
  await api.until(() => api.get('apps/v1', 'Deployment', 'shop', 'web')?.status?.observedGeneration === 1, 3000, 'observed');
});

t.test('fake Kubernetes API server: autoscalers keep replicas in bounds, budgets count pods, namespaces get their defaults', async (t) => {
  const { api, core, apps, objects } = await cluster(t);
  await namespace(api, core);
  await api.until(() => api.get('v1', 'ServiceAccount', 'shop', 'default'), 3000, 'the default ServiceAccount');
  t.match(await failure(core.createNamespacedServiceAccount({ namespace: 'shop', body: { metadata: { name: 'default' } } })), { code: 409 }, 'every namespace has a default ServiceAccount already');
  await apps.createNamespacedDeployment({ namespace: 'shop', body: deployment('web', 'web:1', { replicas: 1 }) });
  await objects.create({
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 3, maxReplicas: 5 },
  } as KubernetesObject);
  await objects.create({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
  } as KubernetesObject);
  await api.until(() => api.get('apps/v1', 'Deployment', 'shop', 'web')?.status?.readyReplicas === 3, 5000, 'scaled up to minReplicas');
  t.equal(api.get('apps/v1', 'Deployment', 'shop', 'web')?.spec.replicas, 3, "the autoscaler set the Deployment's replicas");
  t.match(api.get('autoscaling/v2', 'HorizontalPodAutoscaler', 'shop', 'web')?.status, {
    currentReplicas: 3,
    desiredReplicas: 3,
    conditions: [
      { type: 'AbleToScale', status: 'True' },
      { type: 'ScalingActive', status: 'False', reason: 'FailedGetResourceMetric' },
    ],
  });
  const pdb = await api.until(
    () => {
      const s = api.get('policy/v1', 'PodDisruptionBudget', 'shop', 'web')?.status;
      return s?.currentHealthy === 3 ? s : undefined;
    },
    3000,
    'the budget counted',
  );
  t.match(pdb, { expectedPods: 3, desiredHealthy: 2, disruptionsAllowed: 1, conditions: [{ type: 'DisruptionAllowed', status: 'True' }] });
  await apps.patchNamespacedDeployment({ namespace: 'shop', name: 'web', body: { spec: { replicas: 9 } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await api.until(() => api.get('apps/v1', 'Deployment', 'shop', 'web')?.spec.replicas === 5, 3000, 'scaled down to maxReplicas');
});

t.test('fake Kubernetes API server: pod updates as the real server allows them (stale resourceVersion, deadline, images, tolerations)', async (t) => {
  const { api, core } = await cluster(t);
  await namespace(api, core);
  await core.createNamespacedPod({
    namespace: 'shop',
    body: { metadata: { name: 'p', labels: { a: '1' } }, spec: { containers: [{ name: 'main', image: 'img:1' }], tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }] } },
  });
  await api.until(() => api.get('v1', 'Pod', 'shop', 'p')?.status?.phase === 'Running', 3000, 'running');
  const pod = await core.readNamespacedPod({ namespace: 'shop', name: 'p' });
  t.ok(pod.status?.startTime, 'status.startTime set when the pod starts');
  const replace = (change: (p: any) => void, from: any = pod) => {
    const body = JSON.parse(JSON.stringify(from));
    change(body);
    return core.replaceNamespacedPod({ namespace: 'shop', name: 'p', body });
  };
  const fresh = async () => core.readNamespacedPod({ namespace: 'shop', name: 'p' });
  const labelled = await replace((p) => {
    p.metadata.labels.b = '2';
    p.metadata.annotations = { note: 'x' };
  });
  t.match(labelled.metadata, { labels: { a: '1', b: '2' }, annotations: { note: 'x' } }, 'labels and annotations change freely');
  t.match(await failure(replace((p) => (p.metadata.labels.c = '3'))), { code: 409, body: { reason: 'Conflict' } }, 'a stale resourceVersion');
  const invalid = (field: string) => ({ code: 422, body: { reason: 'Invalid', details: { causes: [{ field }] } } });
  t.match(await failure(replace((p) => (p.spec.containers[0].env = [{ name: 'A', value: '1' }]), await fresh())), invalid('spec'), 'env may not change');
  t.match(await failure(replace((p) => (p.spec.restartPolicy = 'Never'), await fresh())), invalid('spec'), 'restartPolicy may not change');
  const image = await replace((p) => (p.spec.containers[0].image = 'img:2'), await fresh());
  t.equal(image.spec?.containers[0]?.image, 'img:2', 'an image may change');
  const tolerated = await replace((p) => p.spec.tolerations.push({ key: 'more', operator: 'Exists' }), await fresh());
  t.equal(tolerated.spec?.tolerations?.length, 2, 'a toleration may be added');
  t.match(await failure(replace((p) => p.spec.tolerations.shift(), await fresh())), invalid('spec.tolerations'), 'not removed');
  const set = await replace((p) => (p.spec.activeDeadlineSeconds = 600), await fresh());
  t.equal(set.spec?.activeDeadlineSeconds, 600, 'activeDeadlineSeconds may be set');
  t.match(await failure(replace((p) => (p.spec.activeDeadlineSeconds = 601), await fresh())), invalid('spec.activeDeadlineSeconds'), 'never raised');
  t.match(await failure(replace((p) => delete p.spec.activeDeadlineSeconds, await fresh())), {
    code: 422,
    body: { message: /spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value/ },
  });
  const lowered = await replace((p) => (p.spec.activeDeadlineSeconds = 1), await fresh());
  t.equal(lowered.spec?.activeDeadlineSeconds, 1, 'lowered');
  const failed = await api.until(() => (api.get('v1', 'Pod', 'shop', 'p')?.status?.phase === 'Failed' ? api.get('v1', 'Pod', 'shop', 'p')?.status : undefined), 5000, 'DeadlineExceeded');
  t.match(failed, { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline', containerStatuses: [{ state: { terminated: {} } }] });
  const events = await core.listNamespacedEvent({ namespace: 'shop', fieldSelector: 'involvedObject.name=p' });
  t.ok(
    events.items.some((e) => e.reason === 'DeadlineExceeded'),
    'a DeadlineExceeded event',
  );
});

t.test('fake Kubernetes API server: a deadline from creation, restart policies for exits, and chosen pod IPs', async (t) => {
  const { api, core } = await cluster(t, {
    podIp: (pod) => pod.metadata.annotations?.ip,
    pods: (pod) => (pod.metadata.labels?.exit ? { state: pod.metadata.labels.exit === '0' ? 'Succeeded' : 'Failed', exitCode: Number(pod.metadata.labels.exit) } : undefined),
  });
  await namespace(api, core);
  const create = (name: string, spec: Record<string, any>, metadata: Record<string, any> = {}) =>
    core.createNamespacedPod({ namespace: 'shop', body: { metadata: { name, ...metadata }, spec: { containers: [{ name: 'main', image: 'img:1' }], ...spec } } });
  const created = Date.now();
  await create('short', { activeDeadlineSeconds: 1, restartPolicy: 'Never' });
  await create('ip', {}, { annotations: { ip: '127.0.0.7' } });
  await create('plain', {});
  for (const [policy, exit] of [
    ['Always', '2'],
    ['Always', '0'],
    ['OnFailure', '2'],
    ['OnFailure', '0'],
    ['Never', '2'],
    ['Never', '0'],
  ] as const)
    await create(`${policy.toLowerCase()}-${exit}`, { restartPolicy: policy }, { labels: { exit } });
  const status = (name: string) => api.get('v1', 'Pod', 'shop', name)?.status;
  await api.until(() => status('ip')?.podIP && status('plain')?.podIP, 3000, 'pod IPs');
  t.equal(status('ip')?.podIP, '127.0.0.7', 'the podIp option');
  t.match(status('ip')?.podIPs, [{ ip: '127.0.0.7' }]);
  t.match(status('plain')?.podIP, /^10\.244\./, 'the default');
  const restarting = (name: string) => api.until(() => status(name)?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' && status(name), 3000, name);
  const ended = (name: string, phase: string) => api.until(() => status(name)?.phase === phase && status(name), 3000, `${name} ${phase}`);
  t.match(await restarting('always-2'), { phase: 'Running', containerStatuses: [{ lastState: { terminated: { exitCode: 2, reason: 'Error' } } }] });
  t.ok((status('always-2')?.containerStatuses[0].restartCount ?? 0) >= 1, 'restartCount grows');
  t.match(await restarting('always-0'), { phase: 'Running', containerStatuses: [{ lastState: { terminated: { exitCode: 0, reason: 'Completed' } } }] });
  t.match(await restarting('onfailure-2'), { phase: 'Running' });
  t.match(await ended('onfailure-0', 'Succeeded'), { containerStatuses: [{ state: { terminated: { exitCode: 0, reason: 'Completed' } } }] });
  t.match(await ended('never-2', 'Failed'), { containerStatuses: [{ state: { terminated: { exitCode: 2, reason: 'Error' } } }] });
  t.match(await ended('never-0', 'Succeeded'), {});
  const short = await ended('short', 'Failed');
  t.match(short, { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' });
  t.ok(Date.now() - created >= 1000, 'not before the deadline has passed');
  t.ok(short.startTime, 'status.startTime kept');
});
