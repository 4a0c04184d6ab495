// Deploying to a cluster (deploy/cluster), in-process, against the FAKE Kubernetes API server of the test kit (no
// real API server can run here): the order of the apply, databases provisioned on the first deploy only and their
// credentials read back, rollouts followed to their end and rolled back when they fail, an interrupted apply finished
// by the next run, the checks made before anything is created, status read from the objects, destroy, and TLS.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../runtime/index.ts';
import {
  ClusterError,
  connectCluster,
  deploySpec,
  deployToCluster,
  destroyApply,
  destroyPlan,
  readStatus,
  type DeploySpec,
  type Kube,
} from '../../deploy/index.ts';
import { startFakeKubeApi, standInIngress, type FakeKubeApi, type StandInIngress } from '../kit/index.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Env {
  api: FakeKubeApi;
  ingress: StandInIngress;
  kube: Kube;
  dir: string;
  spec(extra?: string, image?: string): DeploySpec;
  deploy(extra?: string, image?: string, options?: { enableTls?: boolean }): Promise<{ url: string; log: string[]; spec: DeploySpec }>;
}

async function setup(t: Test, options: Parameters<typeof startFakeKubeApi>[0] = {}, base = ''): Promise<Env> {
  const api = await startFakeKubeApi(options);
  t.teardown(() => api.close());
  const ingress = await standInIngress();
  t.teardown(() => ingress.close());
  const dir = mkdtempSync(join(tmpdir(), 'svc-cluster-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kube = connectCluster({ KUBECONFIG: api.kubeconfig });
  const spec = (extra = '', image = 'registry.example.com/shop:v1') => {
    writeFileSync(
      join(dir, 'svc.toml'),
      `[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop"\ningress_node_port = ${ingress.port}\nprogress_deadline_seconds = 2\n${base}\n${extra}\n`,
    );
    const { config, files, warnings } = loadConfig({ dir, env: {} });
    return deploySpec({ config, files, warnings, env: {}, image }).spec;
  };
  const deploy = async (extra = '', image = 'registry.example.com/shop:v1', opts: { enableTls?: boolean } = {}) => {
    const log: string[] = [];
    const s = spec(extra, image);
    const result = await deployToCluster(kube, s, { log: (l) => log.push(l), probeTimeoutMs: 5000, tlsTimeoutMs: 10_000, ...opts });
    return { url: result.url, log, spec: s };
  };
  return { api, ingress, kube, dir, spec, deploy };
}

const secretValue = (api: FakeKubeApi, name: string, key: string) => Buffer.from((api.get('v1', 'Secret', 'shop', name) as Any).data[key], 'base64').toString();

t.test('fake Kubernetes API server: a first deploy applies in dependency order, provisions the databases, rolls out and probes the ingress', async (t) => {
  const env = await setup(t, {}, '[scale.monitoring]\nenabled = true');
  const { url, log } = await env.deploy();
  t.equal(url, `http://127.0.0.1:${env.ingress.port}/`, 'the URL: the node address and the ingress node port');
  t.ok(env.ingress.requests.some((r) => r.path === '/healthz/ready'), 'the health path was probed through the ingress');
  t.ok(log.some((l) => /first deploy/.test(l)), 'a first deploy says so');
  const posts = env.api.writes().filter((r) => r.method === 'POST').map((r) => r.path);
  const first = (re: RegExp) => posts.findIndex((p) => re.test(p));
  const last = (re: RegExp) => posts.length - 1 - [...posts].reverse().findIndex((p) => re.test(p));
  t.equal(first(/\/namespaces$/), 0, 'the namespace first');
  t.ok(last(/\/customresourcedefinitions$/) < first(/\/ingressroutes$/), 'CRDs before their objects');
  t.ok(last(/\/secrets$/) < first(/\/statefulsets$/), 'Secrets before the StatefulSet');
  t.ok(first(/\/configmaps$/) >= 0 && last(/\/configmaps$/) < first(/\/statefulsets$/), 'ConfigMaps before the StatefulSet');
  t.ok(last(/\/statefulsets$/) < first(/\/daemonsets$/), 'the StatefulSet before the other workloads');
  t.ok(last(/\/persistentvolumeclaims$/) < first(/\/statefulsets$/), 'claims before the workloads');
  t.ok(last(/\/services$/) < first(/\/deployments$/), 'Services before the Deployments');
  t.ok(last(/\/deployments$/) < first(/\/poddisruptionbudgets$/), 'workloads before the disruption budget');
  t.ok(first(/\/ingressroutes$/) > last(/\/deployments$/), 'the ingress last');
  t.ok(env.api.get('apps/v1', 'StatefulSet', 'shop', 'shop-docdb'), 'the document database');
  t.ok(env.api.list('v1', 'PersistentVolumeClaim', 'shop').some((c: Any) => c.metadata.name === 'data-shop-docdb-0'), 'and its claim');
  const d = env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any;
  t.equal(d.spec.revisionHistoryLimit, 10, 'revision history declared');
  t.equal(d.spec.progressDeadlineSeconds, 2, 'the progress deadline declared');
  const status = await readStatus(env.kube, env.spec());
  t.same(
    status.rows.filter((r) => ['app', 'docdb', 'kv', 'ingress'].includes(r.key)).map((r) => [r.key, r.status]),
    [
      ['app', 'Running'],
      ['docdb', 'Running'],
      ['kv', 'Running'],
      ['ingress', 'Running'],
    ].filter(([k]) => status.rows.some((r) => r.key === k)),
    'status: every component Running',
  );
});

t.test('fake Kubernetes API server: a second deploy never writes the databases or their credentials, reads them back, and updates the app', async (t) => {
  const env = await setup(t);
  await env.deploy();
  const password = secretValue(env.api, 'shop-docdb-secret', 'password');
  const jwt = secretValue(env.api, 'shop-jwt-secret', 'JWT_SECRET');
  const before = env.api.writes().length;
  const rev1 = (env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any).metadata.annotations['deployment.kubernetes.io/revision'];
  const { log } = await env.deploy('', 'registry.example.com/shop:v2');
  const later = env.api.writes().slice(before);
  t.same(
    later.filter((r) => /shop-docdb|shop-kv|statefulsets|persistentvolumeclaims|-secret$/.test(r.path)).map((r) => `${r.method} ${r.path}`),
    [],
    'no write to the databases, their claims, Services or credential Secrets',
  );
  t.ok(later.some((r) => r.method === 'PATCH' && /\/deployments\/shop$/.test(r.path)), 'the app Deployment is updated');
  t.equal(secretValue(env.api, 'shop-docdb-secret', 'password'), password, 'the database password is the first one');
  t.equal(secretValue(env.api, 'shop-jwt-secret', 'JWT_SECRET'), jwt, 'the JWT secret too (tokens stay valid)');
  t.ok(log.some((l) => /read back/.test(l)), 'the credentials read back are named');
  const d = env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any;
  t.equal(d.spec.template.spec.containers[0].image, 'registry.example.com/shop:v2');
  t.not(d.metadata.annotations['deployment.kubernetes.io/revision'], rev1, 'a new revision rolled out');
  const rs = env.api.list('apps/v1', 'ReplicaSet', 'shop').filter((r: Any) => r.metadata.name.startsWith('shop-') && r.metadata.labels['app.kubernetes.io/component'] === 'app');
  t.equal(rs.filter((r: Any) => (r.spec.replicas ?? 0) > 0).length, 1, 'only the new ReplicaSet keeps pods');
});

t.test('fake Kubernetes API server: a configuration-only change rolls the pods (checksum); no change rolls nothing', async (t) => {
  const env = await setup(t);
  await env.deploy('[scale.secrets]\nGREETING = "hello"');
  const rev = () => (env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any).metadata.annotations['deployment.kubernetes.io/revision'];
  const r1 = rev();
  await env.deploy('[scale.secrets]\nGREETING = "hello"');
  t.equal(rev(), r1, 'the same configuration: the same revision');
  await env.deploy('[scale.secrets]\nGREETING = "bonjour"');
  t.not(rev(), r1, 'a changed secret value: a new revision');
  t.equal(secretValue(env.api, 'shop-secrets', 'GREETING'), 'bonjour', '{app}-secrets updated');
});

t.test('fake Kubernetes API server: a crash-looping new version is rolled back automatically, naming the reason and the log', async (t) => {
  const env = await setup(t, { pods: (pod: Any) => (pod.spec.containers[0].image.endsWith(':broken') ? { state: 'CrashLoopBackOff', exitCode: 3, logs: 'Error: DOCDB_URI refused\n' } : undefined) });
  await env.deploy();
  const started = Date.now();
  const error = await env.deploy('', 'registry.example.com/shop:broken').catch((e: unknown) => e);
  t.ok(error instanceof ClusterError && error.code === 'SVC_ERR_ROLLOUT', 'the deploy fails');
  const message = (error as Error).message;
  t.match(message, /CrashLoopBackOff/, 'the reason');
  t.match(message, /exit code 3/, 'the last exit code');
  t.match(message, /DOCDB_URI refused/, "the failing pod's log");
  t.match(message, /rolled back from revision 2 to revision 1/, 'rolled back');
  t.comment(`crash loop found and rolled back in ${Date.now() - started} ms`);
  const d = env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any;
  t.equal(d.spec.template.spec.containers[0].image, 'registry.example.com/shop:v1', 'the previous version serves again');
});

t.test('fake Kubernetes API server: a first deploy that fails cannot be rolled back and says so', async (t) => {
  const env = await setup(t, { pods: (pod: Any) => (pod.spec.containers[0].image.endsWith(':v1') ? { state: 'ImagePullBackOff' } : undefined) });
  const error = (await env.deploy().catch((e: unknown) => e)) as Error;
  t.match(error.message, /ImagePullBackOff/);
  t.match(error.message, /not rolled back: this was the first revision/);
});

t.test('fake Kubernetes API server: unschedulable pods fail the rollout at its deadline, with the scheduler message', async (t) => {
  const env = await setup(t, { pods: (pod: Any) => (pod.spec.containers[0].image.endsWith(':big') ? { state: 'Unschedulable' } : undefined) });
  await env.deploy();
  const error = (await env.deploy('', 'registry.example.com/shop:big').catch((e: unknown) => e)) as Error;
  t.match(error.message, /no progress within progressDeadlineSeconds \(2 s\)/);
  t.match(error.message, /cannot be scheduled: 0\/1 nodes are available/);
  t.match(error.message, /rolled back from revision 2 to revision 1/);
});

t.test('fake Kubernetes API server: crash-looping pods of another app or of an old ReplicaSet do not fail a rollout', async (t) => {
  const env = await setup(t, { pods: (pod: Any) => (pod.metadata.labels?.['app.kubernetes.io/name'] === 'other' || pod.spec.containers[0].image.endsWith(':v1-crashing') ? { state: 'CrashLoopBackOff' } : undefined) });
  env.api.put({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'other', namespace: 'default', labels: { 'app.kubernetes.io/name': 'other' } },
    spec: { replicas: 1, selector: { matchLabels: { 'app.kubernetes.io/name': 'other' } }, template: { metadata: { labels: { 'app.kubernetes.io/name': 'other', app: 'shop' } }, spec: { containers: [{ name: 'app', image: 'other:1' }] } } },
  });
  await env.deploy();
  // The old revision's pods start crash-looping while the new one rolls out.
  for (const pod of env.api.list('v1', 'Pod', 'shop').filter((p: Any) => p.metadata.labels['app.kubernetes.io/component'] === 'app')) env.api.scriptPod('shop', (pod as Any).metadata.name, { state: 'CrashLoopBackOff' });
  const { url } = await env.deploy('', 'registry.example.com/shop:v2');
  t.match(url, /^http:\/\/127\.0\.0\.1:/, 'the rollout of v2 completes');
});

t.test('fake Kubernetes API server: an interrupted apply names what is missing, still creates the rest, and the next run converges', async (t) => {
  const env = await setup(t, {}, 'cpu_request = "250m"');
  const remove = env.api.failWhen((r) => r.method === 'POST' && /horizontalpodautoscalers$/.test(r.path), 500, 'etcdserver: request timed out');
  const error = (await env.deploy().catch((e: unknown) => e)) as Error;
  t.ok(error instanceof ClusterError && (error as ClusterError).code === 'SVC_ERR_APPLY');
  t.match(error.message, /HorizontalPodAutoscaler\/shop\/shop-hpa: .*500.*etcdserver: request timed out/, 'the object that is missing, and why');
  t.match(error.message, /run the deploy again/);
  t.ok(env.api.get('traefik.io/v1alpha1', 'IngressRoute', 'shop', 'shop'), 'the ingress was still created');
  t.ok(env.api.get('v1', 'Service', 'shop', 'shop'), 'and the Services');
  t.notOk(env.api.get('autoscaling/v2', 'HorizontalPodAutoscaler', 'shop', 'shop-hpa'));
  remove();
  await env.deploy();
  t.ok(env.api.get('autoscaling/v2', 'HorizontalPodAutoscaler', 'shop', 'shop-hpa'), 'the next run converges');
  t.equal((env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any).spec.replicas, 1, 'replicas left to the autoscaler (the default 1, not reset)');
});

t.test('fake Kubernetes API server: nothing is created when the node port is taken or the cluster cannot be reached', async (t) => {
  const env = await setup(t);
  env.api.put({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { type: 'NodePort', selector: { a: 'b' }, ports: [{ port: 80, nodePort: env.ingress.port }] } });
  const before = env.api.writes().length;
  const error = (await env.deploy().catch((e: unknown) => e)) as ClusterError;
  t.equal(error.code, 'SVC_ERR_NODE_PORT_TAKEN');
  t.match(error.message, new RegExp(`node port ${env.ingress.port} is used by default/web`));
  t.equal(env.api.writes().length, before, 'nothing was sent');

  const closed = await startFakeKubeApi();
  const kubeconfig = closed.kubeconfig;
  const url = closed.url;
  // Keep the kubeconfig file, stop the server: the address no longer answers.
  const copy = join(env.dir, 'kubeconfig');
  writeFileSync(copy, (await import('node:fs')).readFileSync(kubeconfig));
  await closed.close();
  const gone = connectCluster({ KUBECONFIG: copy });
  const unreachable = (await deployToCluster(gone, env.spec(), { log: () => undefined }).catch((e: unknown) => e)) as ClusterError;
  t.equal(unreachable.code, 'SVC_ERR_CLUSTER_UNREACHABLE');
  t.match(unreachable.message, `cannot reach the API server at ${url}`);

  const none = (() => {
    try {
      connectCluster({ HOME: env.dir });
    } catch (e) {
      return e as ClusterError;
    }
  })();
  t.equal(none?.code, 'SVC_ERR_NO_CLUSTER');
  t.match(none?.message, /no cluster configured/);
});

t.test('fake Kubernetes API server: destroy deletes the namespace, the cluster-scoped objects and the claims; --keep-data keeps them', async (t) => {
  const env = await setup(t, {}, '[scale.monitoring]\nenabled = true');
  await env.deploy();
  const spec = env.spec();
  const kept = await destroyPlan(env.kube, spec, { keepData: true });
  t.ok(kept.kept.some((i) => i.kind === 'PersistentVolumeClaim'), '--keep-data keeps the claims');
  t.ok(kept.kept.some((i) => i.name === 'shop-docdb-secret'), 'and the credentials');
  t.notOk(kept.deleteNamespace, 'and so the namespace');
  const plan = await destroyPlan(env.kube, spec, { keepData: false });
  t.ok(plan.deleteNamespace, 'the namespace is the app\'s own');
  t.ok(plan.items.some((i) => i.kind === 'ClusterRole'), 'cluster-scoped objects listed');
  t.ok(plan.items.some((i) => i.kind === 'PersistentVolumeClaim' && /data in it/.test(i.note ?? '')), 'claims listed with their data');
  await destroyApply(env.kube, plan, { log: () => undefined });
  t.notOk(env.api.get('v1', 'Namespace', undefined, 'shop'), 'the namespace is gone');
  t.same(env.api.list('rbac.authorization.k8s.io/v1', 'ClusterRole').filter((o: Any) => o.metadata.labels?.['app.kubernetes.io/name'] === 'shop'), [], 'the cluster roles too');
  t.same(env.api.list('v1', 'PersistentVolumeClaim', 'shop'), [], 'and the claims');
  t.ok(env.api.list('apiextensions.k8s.io/v1', 'CustomResourceDefinition').length > 0, 'the shared CRDs stay');
});

t.test("fake Kubernetes API server: destroy in a shared namespace deletes only this app's objects", async (t) => {
  const env = await setup(t);
  const other = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'billing', namespace: 'shop', labels: { 'app.kubernetes.io/name': 'billing' } }, spec: { replicas: 1, selector: { matchLabels: { app: 'billing' } }, template: { metadata: { labels: { app: 'billing' } }, spec: { containers: [{ name: 'b', image: 'billing:1' }] } } } };
  await env.deploy();
  env.api.put(other);
  env.api.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'billing-config', namespace: 'shop' }, data: { a: '1' } });
  const plan = await destroyPlan(env.kube, env.spec(), { keepData: false });
  t.notOk(plan.deleteNamespace, 'a shared namespace stays');
  t.match(plan.namespaceNote, /also holds (Deployment\/shop\/billing|ConfigMap\/shop\/billing-config), not shop.s/);
  await destroyApply(env.kube, plan, { log: () => undefined });
  t.ok(env.api.get('apps/v1', 'Deployment', 'shop', 'billing'), "the other app's Deployment is untouched");
  t.ok(env.api.get('v1', 'ConfigMap', 'shop', 'billing-config'), 'and its ConfigMap');
  t.notOk(env.api.get('apps/v1', 'Deployment', 'shop', 'shop'), "this app's are gone");
  t.same(env.api.list('v1', 'PersistentVolumeClaim', 'shop'), [], 'with its claims');
});

/** A small cert-manager release for the fake cluster: its two CRDs, its namespace and a Deployment. */
function certManagerManifest(dir: string): string {
  const crd = (kind: string, plural: string) => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.cert-manager.io
spec:
  group: cert-manager.io
  names: { kind: ${kind}, listKind: ${kind}List, plural: ${plural}, singular: ${kind.toLowerCase()} }
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: { status: {} }
      schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } }
`;
  const path = join(dir, 'cert-manager.yaml');
  writeFileSync(
    path,
    [
      crd('Certificate', 'certificates'),
      crd('Issuer', 'issuers'),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cert-manager\n  namespace: cert-manager\nspec:\n  replicas: 1\n  selector: { matchLabels: { app: cert-manager } }\n  template:\n    metadata: { labels: { app: cert-manager } }\n    spec: { containers: [{ name: cert-manager, image: "quay.io/jetstack/cert-manager-controller:v1.16.2" }] }\n',
    ].join('---\n'),
  );
  return path;
}

t.test('fake Kubernetes API server: a domain without TLS stays reachable by address and gets a DNS hint; --enable-tls installs cert-manager, issues, binds by merging, and a redeploy keeps it', async (t) => {
  const env = await setup(t);
  const manifest = certManagerManifest(env.dir);
  const tls = `domain = "shop.example.com"\ncert_manager_email = "ops@example.com"\ncert_manager_manifest = "${manifest}"`;
  const plain = await env.deploy(tls);
  t.equal(plain.url, `http://shop.example.com:${env.ingress.port}/`);
  t.ok(plain.log.some((l) => l.includes('create the record shop.example.com.  A  127.0.0.1')), 'the DNS record to create');
  const route = () => env.api.get('traefik.io/v1alpha1', 'IngressRoute', 'shop', 'shop') as Any;
  t.same(route().spec.routes.map((r: Any) => r.match.includes('Host(')), route().spec.routes.map(() => false), 'no host in the rules: the address reaches the app too');

  const secured = await env.deploy(tls, undefined, { enableTls: true });
  t.equal(secured.url, 'https://shop.example.com/');
  t.ok(secured.log.some((l) => /cert-manager: not in the cluster; installing it/.test(l)), 'cert-manager installed');
  t.ok(env.api.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', undefined, 'certificates.cert-manager.io'));
  const issuer = env.api.get('cert-manager.io/v1', 'Issuer', 'shop', 'shop-acme') as Any;
  t.equal(issuer.spec.acme.email, 'ops@example.com', 'the ACME issuer');
  t.same(issuer.spec.acme.solvers[0].http01.ingress.ingressTemplate.metadata.labels, { 'app.kubernetes.io/name': 'shop' }, "its challenges go through the app's own proxy");
  t.equal(issuer.spec.acme.solvers[0].http01.ingress.class, 'svc-shop', 'by the class the proxy reads');
  const cert = env.api.get('cert-manager.io/v1', 'Certificate', 'shop', 'shop-tls') as Any;
  t.same(cert.spec.dnsNames, ['shop.example.com'], 'the certificate for the domain');
  const bound = () => env.api.get('traefik.io/v1alpha1', 'IngressRoute', 'shop', 'shop-tls') as Any;
  t.same(bound().spec.tls, { secretName: 'shop-tls' }, 'the TLS route bound to the certificate');
  t.ok(bound().spec.routes.every((r: Any) => r.match.startsWith('Host(`shop.example.com`) && ')), 'and to the host');
  t.same(bound().spec.routes.map((r: Any) => r.match.replace(/^Host\(`shop\.example\.com`\) && /, '')), route().spec.routes.map((r: Any) => r.match), 'the same routes as the plain one');
  t.notOk(route().spec.tls, 'the plain route stays plain: HTTP at the node address still answers');

  const again = await env.deploy(tls);
  t.same(bound().spec.tls, { secretName: 'shop-tls' }, 'a redeploy keeps the TLS section');
  t.ok(bound().spec.routes.every((r: Any) => r.match.startsWith('Host(`shop.example.com`) && ')), 'and the host');
  t.equal(again.url, 'https://shop.example.com/');
  t.notOk(again.log.some((l) => /create the record/.test(l)), 'no DNS hint once TLS is on');
  const status = await readStatus(env.kube, env.spec(tls));
  t.ok(status.urls.some((u) => u.startsWith('https://shop.example.com')), 'status shows https://domain');
  const moved = await env.deploy(tls.replace('shop.example.com', 'www.example.com'));
  t.ok(bound().spec.routes.every((r: Any) => r.match.startsWith('Host(`shop.example.com`) && ')), 'a changed domain keeps the binding its certificate is for');
  t.ok(moved.log.some((l) => /TLS is bound to shop\.example\.com .* --enable-tls binds the new one/.test(l)), 'and says how to bind the new one');
  const rebound = await env.deploy(tls.replace('shop.example.com', 'www.example.com'), undefined, { enableTls: true });
  t.equal(rebound.url, 'https://www.example.com/');
  t.ok(bound().spec.routes.every((r: Any) => r.match.startsWith('Host(`www.example.com`) && ')), '--enable-tls binds the new domain');
  t.same((env.api.get('cert-manager.io/v1', 'Certificate', 'shop', 'shop-tls') as Any).spec.dnsNames, ['www.example.com'], 'with a certificate for it');
  const reuse = await env.deploy(tls, undefined, { enableTls: true });
  t.ok(reuse.log.some((l) => /cert-manager: installed in the cluster already; reused/.test(l)), 'cert-manager reused');
});

t.test('fake Kubernetes API server: a certificate that is not issued leaves the ingress unbound', async (t) => {
  const env = await setup(t, { certificates: 'pending' });
  const manifest = certManagerManifest(env.dir);
  const tls = `domain = "shop.example.com"\ncert_manager_email = "ops@example.com"\ncert_manager_manifest = "${manifest}"`;
  await env.deploy(tls);
  const log: string[] = [];
  const error = (await deployToCluster(env.kube, env.spec(tls), { log: (l) => log.push(l), enableTls: true, tlsTimeoutMs: 1500, probeTimeoutMs: 5000 }).catch((e: unknown) => e)) as ClusterError;
  t.equal(error.code, 'SVC_ERR_TLS');
  t.match(error.message, /was not issued within 2 s .*the ingress was left as it was/);
  t.notOk(env.api.get('traefik.io/v1alpha1', 'IngressRoute', 'shop', 'shop-tls'), 'no TLS route without a certificate');
  t.notOk((env.api.get('traefik.io/v1alpha1', 'IngressRoute', 'shop', 'shop') as Any).spec.tls, 'the plain route untouched');
});

t.test('fake Kubernetes API server: the health path must answer 2xx through the ingress, with the Host of the domain', async (t) => {
  const env = await setup(t);
  env.ingress.answer(204);
  await env.deploy('domain = "shop.example.com"');
  t.ok(env.ingress.requests.some((r) => r.path === '/healthz/ready' && r.host === 'shop.example.com'), 'the probe names the domain as its Host');
  env.ingress.answer(503);
  const log: string[] = [];
  const error = (await deployToCluster(env.kube, env.spec(), { log: (l) => log.push(l), probeTimeoutMs: 600 }).catch((e: unknown) => e)) as ClusterError;
  t.equal(error.code, 'SVC_ERR_INGRESS_PROBE');
  t.match(error.message, new RegExp(`the app is rolled out, but http://127\\.0\\.0\\.1:${env.ingress.port}/healthz/ready did not answer 2xx through the ingress: 503`));
});
