// Sandboxes as pods against the FAKE Kubernetes API server of the test kit (no real API server runs here): a deploy
// makes the sandbox namespace (marked as made for the app), the Role, the bindings and the proxy; destroy removes the
// namespace with the sandboxes in it, or — when another deployment uses it too — only this deployment's objects.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../runtime/index.ts';
import { connectCluster, deploySpec, deployToCluster, destroyApply, destroyPlan, destroyText, type DeploySpec, type Kube } from '../../deploy/index.ts';
import { startFakeKubeApi, standInIngress, type FakeKubeApi } from '../kit/index.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const SANDBOX = '[scale.sandbox]\nenabled = true\ntype = "orchestrator"\nproxy_mode = true\ndomain_template = "{sandbox_id}.preview.example.com"\n';

async function setup(t: Test): Promise<{ api: FakeKubeApi; kube: Kube; spec(extra?: string): DeploySpec; deploy(extra?: string): Promise<DeploySpec> }> {
  const api = await startFakeKubeApi({});
  t.teardown(() => api.close());
  const ingress = await standInIngress();
  t.teardown(() => ingress.close());
  const dir = mkdtempSync(join(tmpdir(), 'svc-sandbox-cluster-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const kube = connectCluster({ KUBECONFIG: api.kubeconfig });
  const spec = (extra = SANDBOX) => {
    writeFileSync(join(dir, 'svc.toml'), `[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop"\ningress_node_port = ${ingress.port}\nprogress_deadline_seconds = 2\n${extra}\n`);
    const { config, files, warnings } = loadConfig({ dir, env: {} });
    return deploySpec({ config, files, warnings, env: {}, image: 'registry.example.com/shop:v1' }).spec;
  };
  const deploy = async (extra = SANDBOX) => {
    const s = spec(extra);
    await deployToCluster(kube, s, { log: () => undefined, probeTimeoutMs: 5000, tlsTimeoutMs: 10_000 });
    return s;
  };
  return { api, kube, spec, deploy };
}

/** A sandbox pod as the app would make it (labelled, in the sandbox namespace). */
const sandboxPod = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'svc-sandboxes', labels: { 'svc-sandbox': 'true', 'svc-sandbox-id': name } },
  spec: { containers: [{ name: 'dev', image: 'node:20-slim' }] },
});

t.test('fake Kubernetes API server: a deploy makes the sandbox namespace, its Role and bindings, and the proxy', async (t) => {
  const env = await setup(t);
  await env.deploy();
  const ns = env.api.get('v1', 'Namespace', undefined, 'svc-sandboxes') as Any;
  t.ok(ns, 'the sandbox namespace');
  t.equal(ns.metadata.annotations['svc.dev/created-for'], 'shop', 'marked as made for the app (destroy may delete it whole)');
  t.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  t.ok(env.api.get('rbac.authorization.k8s.io/v1', 'Role', 'svc-sandboxes', 'svc-sandbox-manager'), 'the Role in it');
  t.same((env.api.get('rbac.authorization.k8s.io/v1', 'RoleBinding', 'svc-sandboxes', 'shop-shop-sandbox-manager') as Any).subjects, [{ kind: 'ServiceAccount', name: 'shop', namespace: 'shop' }]);
  t.ok(env.api.get('v1', 'ServiceAccount', 'shop', 'shop'), "the app's account");
  t.equal((env.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any).spec.template.spec.serviceAccountName, 'shop');
  t.ok(env.api.get('apps/v1', 'Deployment', 'shop', 'shop-sandbox-proxy'), 'the proxy');
  t.ok(env.api.get('networking.k8s.io/v1', 'Ingress', 'shop', 'shop-sandbox-proxy'), 'its Ingress');
  t.ok(env.api.get('networking.k8s.io/v1', 'NetworkPolicy', 'svc-sandboxes', 'shop-shop-sandbox-allow-proxy'), 'its way into the sandboxes');
  await env.deploy();
  t.ok(env.api.get('v1', 'Namespace', undefined, 'svc-sandboxes'), 'a second deploy converges');
});

t.test('fake Kubernetes API server: destroy deletes the sandbox namespace with the sandboxes in it', async (t) => {
  const env = await setup(t);
  await env.deploy();
  env.api.put(sandboxPod('svc-sbx-ann-site-0001'));
  env.api.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'svc-sbx-ann-site-0001-code', namespace: 'svc-sandboxes', labels: { 'svc-sandbox': 'true' } }, data: { 'a.txt': 'a' } });
  // A binding the app made itself at run time (to its own account): the deployment's already existed, so it is ours too.
  env.api.put({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'svc-sandbox-manager', namespace: 'svc-sandboxes' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'svc-sandbox-manager' }, subjects: [{ kind: 'ServiceAccount', name: 'shop', namespace: 'shop' }] });
  const plan = await destroyPlan(env.kube, env.spec(), { keepData: false });
  t.same(plan.sandboxNamespaces, [{ name: 'svc-sandboxes', delete: true }]);
  t.ok(plan.items.some((i) => i.kind === 'RoleBinding' && i.namespace === 'svc-sandboxes'), "this deployment's objects in it are listed");
  t.match(destroyText(plan), /Namespace svc-sandboxes \(the sandboxes\), and every sandbox in it/);
  await destroyApply(env.kube, plan, { log: () => undefined });
  t.notOk(env.api.get('v1', 'Namespace', undefined, 'svc-sandboxes'), 'the sandbox namespace is gone');
  t.notOk(env.api.get('v1', 'Pod', 'svc-sandboxes', 'svc-sbx-ann-site-0001'), 'with its sandboxes');
  t.notOk(env.api.get('v1', 'Namespace', undefined, 'shop'), "and the app's namespace");
});

t.test('fake Kubernetes API server: destroy is found even with sandboxes turned off since', async (t) => {
  const env = await setup(t);
  await env.deploy();
  const plan = await destroyPlan(env.kube, env.spec(''), { keepData: false });
  t.same(plan.sandboxNamespaces, [{ name: 'svc-sandboxes', delete: true }], 'the namespace labelled for the app is found');
  await destroyApply(env.kube, plan, { log: () => undefined });
  t.notOk(env.api.get('v1', 'Namespace', undefined, 'svc-sandboxes'));
});

t.test('fake Kubernetes API server: a sandbox namespace another deployment uses too keeps its objects', async (t) => {
  const env = await setup(t);
  await env.deploy();
  // The same app deployed in shop-staging: its binding names its own namespace's account.
  env.api.put({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'shop-shop-staging-sandbox-manager', namespace: 'svc-sandboxes', labels: { 'app.kubernetes.io/name': 'shop', managed: 'svc-scale' } }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'svc-sandbox-manager' }, subjects: [{ kind: 'ServiceAccount', name: 'shop', namespace: 'shop-staging' }] });
  const plan = await destroyPlan(env.kube, env.spec(), { keepData: false });
  t.equal(plan.sandboxNamespaces?.[0]?.delete, false, 'the namespace stays');
  t.match(plan.sandboxNamespaces?.[0]?.note, /also holds RoleBinding\/svc-sandboxes\/shop-shop-staging-sandbox-manager/);
  t.notOk(plan.items.some((i) => i.kind === 'Role' && i.name === 'svc-sandbox-manager'), 'the shared Role stays: another binding uses it');
  await destroyApply(env.kube, plan, { log: () => undefined });
  t.ok(env.api.get('rbac.authorization.k8s.io/v1', 'Role', 'svc-sandboxes', 'svc-sandbox-manager'), 'the Role is still there');
  t.ok(env.api.get('rbac.authorization.k8s.io/v1', 'RoleBinding', 'svc-sandboxes', 'shop-shop-staging-sandbox-manager'), "and the other deployment's binding");
  t.notOk(env.api.get('rbac.authorization.k8s.io/v1', 'RoleBinding', 'svc-sandboxes', 'shop-shop-sandbox-manager'), "this deployment's binding is gone");
  t.notOk(env.api.get('networking.k8s.io/v1', 'NetworkPolicy', 'svc-sandboxes', 'shop-shop-sandbox-default-deny'), 'and its policies');
});
