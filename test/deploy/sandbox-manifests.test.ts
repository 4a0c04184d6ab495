// Sandboxes as pods in the deployment plan (deploy/config.ts `[scale.sandbox]`, deploy/manifests/sandbox.ts): the app's
// account, token and environment, the sandbox namespace, the Role `svc-sandbox-manager` and its binding, the namespace's
// policies, and with proxy_mode the routing proxy — every object through the manifest validator; nothing of it when
// sandboxes are off or local/container; every configuration problem named. In process, from svc.toml, no cluster.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../runtime/index.ts';
import { buildManifests, DeployConfigError, deploySpec, planText, renderYaml, validateManifests, type DeploySpec, type K8sObject } from '../../deploy/index.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const BASE = '[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop"\n';
const ORCHESTRATOR = '[scale.sandbox]\nenabled = true\ntype = "orchestrator"\n';
const PROXY = `${ORCHESTRATOR}proxy_mode = true\ndomain_template = "{sandbox_id}.preview.example.com"\n`;

function plan(toml: string, env: Record<string, string> = {}): { spec: DeploySpec; objects: K8sObject[]; warnings: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-deploy-sandbox-'));
  try {
    writeFileSync(join(dir, 'svc.toml'), `${BASE}${toml}`);
    const loaded = loadConfig({ dir, env });
    let n = 0;
    const { spec, warnings } = deploySpec({ ...loaded, env, image: 'registry.example.com/shop:0123456789ab', random: () => `generated-${++n}-0123456789abcdef` });
    return { spec, objects: buildManifests(spec), warnings };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function problems(toml: string, env: Record<string, string> = {}): string[] {
  try {
    plan(toml, env);
  } catch (error) {
    if (error instanceof DeployConfigError) {
      if (error.code !== 'SVC_ERR_DEPLOY_CONFIG') throw error;
      return error.problems;
    }
    throw error;
  }
  return [];
}

const find = (objects: K8sObject[], kind: string, name: string, namespace?: string): Any => objects.find((o) => o.kind === kind && o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace));
const podSpec = (d: Any): Any => d.spec.template.spec;
const SANDBOX_COMPONENTS = /^sandbox/;

t.test('nothing of sandboxes when they are off, local or container: the plan is the one without [scale.sandbox]', async (t) => {
  // The checksum of the configuration files differs (their bytes do): everything else is the same.
  const unsummed = (objects: K8sObject[]) => JSON.parse(JSON.stringify(objects).replace(/"svc\.dev\/config-checksum":"[0-9a-f]{64}"/g, '"svc.dev/config-checksum":"-"')) as K8sObject[];
  const baseline = plan('').objects;
  for (const section of [
    '[scale.sandbox]\nenabled = false\ntype = "orchestrator"\nproxy_mode = true\n',
    '[scale.sandbox]\ntype = "local"\n',
    '[scale.sandbox]\ntype = "container"\nproxy_mode = true\ndomain_template = "{sandbox_id}.preview.example.com"\n',
  ]) {
    const { spec, objects } = plan(section);
    t.equal(spec.sandbox, undefined, `${JSON.stringify(section)}: no sandbox in the spec`);
    t.same(unsummed(objects), unsummed(baseline), 'the same objects');
    t.notOk(objects.some((o) => SANDBOX_COMPONENTS.test(o.metadata.labels?.['app.kubernetes.io/component'] ?? '')), 'none of a sandbox component');
  }
  const app = podSpec(find(baseline, 'Deployment', 'shop'));
  t.equal(app.automountServiceAccountToken, false, 'the app mounts no token');
  t.equal(app.serviceAccountName, undefined, 'and runs as no account of its own');
  t.notOk(app.containers[0].env.some((e: Any) => /^POD_/.test(e.name)), 'nor knows its account');
  t.notOk(find(baseline, 'ServiceAccount', 'shop'), 'no ServiceAccount for the app');
});

t.test('orchestrator: the app runs as its own account with its token, and the sandbox namespace, Role and binding are planned', async (t) => {
  const { spec, objects, warnings } = plan(ORCHESTRATOR);
  t.same(spec.sandbox, { namespace: 'svc-sandboxes', securityContext: true, allowEgress: false });
  t.match(warnings.join('\n'), /without proxy_mode each sandbox gets an Ingress of its own in namespace svc-sandboxes, which svc's own Traefik does not read/, "a preview Ingress svc's Traefik would not serve: said");
  t.notMatch(plan(`${ORCHESTRATOR}ingress_class = "nginx"\n`).warnings.join('\n'), /without proxy_mode/, 'not with a class of the cluster');
  t.same(validateManifests(objects), [], 'the manifest validator passes the whole set');

  const account = find(objects, 'ServiceAccount', 'shop', 'shop');
  t.equal(account.automountServiceAccountToken, false, "the account mounts no token by default (the app's pod opts in)");
  const app = podSpec(find(objects, 'Deployment', 'shop', 'shop'));
  t.equal(app.serviceAccountName, 'shop');
  t.equal(app.automountServiceAccountToken, true, 'the app mounts its token: it talks to the API server');
  const env = app.containers[0].env;
  t.same(env.find((e: Any) => e.name === 'POD_SERVICE_ACCOUNT'), { name: 'POD_SERVICE_ACCOUNT', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } });
  t.same(env.find((e: Any) => e.name === 'POD_NAMESPACE'), { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });

  const ns = find(objects, 'Namespace', 'svc-sandboxes');
  t.equal(ns.metadata.namespace, undefined, 'cluster-scoped');
  t.match(ns.metadata.labels, {
    'app.kubernetes.io/managed-by': 'svc',
    'app.kubernetes.io/name': 'shop',
    'app.kubernetes.io/component': 'sandbox',
    managed: 'svc-scale',
    'pod-security.kubernetes.io/enforce': 'restricted',
    'pod-security.kubernetes.io/audit': 'restricted',
    'pod-security.kubernetes.io/warn': 'restricted',
  });
  const role = find(objects, 'Role', 'svc-sandbox-manager', 'svc-sandboxes');
  const all = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  t.same(role.rules, [
    { apiGroups: [''], resources: ['pods', 'services', 'configmaps'], verbs: all },
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses', 'networkpolicies'], verbs: all },
    { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  ]);
  const binding = find(objects, 'RoleBinding', 'shop-shop-sandbox-manager', 'svc-sandboxes');
  t.same(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'svc-sandbox-manager' });
  t.same(binding.subjects, [{ kind: 'ServiceAccount', name: 'shop', namespace: 'shop' }], "bound to the app's account in the app's namespace");
  const deny = find(objects, 'NetworkPolicy', 'shop-shop-sandbox-default-deny', 'svc-sandboxes');
  t.same(deny.spec, { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }, 'nothing in or out of a sandbox pod but what a policy lets through');

  t.notOk(objects.some((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'sandbox-proxy'), 'no proxy without proxy_mode');
  const order = objects.map((o) => `${o.kind}/${o.metadata.name}`);
  t.ok(order.indexOf('Namespace/svc-sandboxes') < order.indexOf('Role/svc-sandbox-manager'), 'the namespace before what lives in it');
  t.ok(order.indexOf('ServiceAccount/shop') < order.indexOf('Deployment/shop'), 'the account before the pods that use it');
  t.match(planText({ spec, objects, warnings: [], imageNote: 'configured' }), /sandbox:\n\s+Namespace\s+svc-sandboxes\n\s+Role\s+svc-sandboxes\/svc-sandbox-manager\n\s+RoleBinding\s+svc-sandboxes\/shop-shop-sandbox-manager/, 'the dry run lists them');
});

t.test('orchestrator: the namespace follows security_context, allow_egress and namespace', async (t) => {
  const loose = plan(`${ORCHESTRATOR}security_context = false\nallow_egress = true\nnamespace = "previews"\n`).objects;
  t.same(validateManifests(loose), []);
  const ns = find(loose, 'Namespace', 'previews');
  t.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'baseline', 'sandboxes that may run as root: baseline (never privileged, no host access)');
  t.equal(ns.metadata.labels['pod-security.kubernetes.io/audit'], 'restricted', 'audited at restricted all the same');
  t.same(find(loose, 'NetworkPolicy', 'shop-shop-sandbox-default-deny', 'previews').spec.policyTypes, ['Ingress'], 'egress allowed');
  t.ok(find(loose, 'Role', 'svc-sandbox-manager', 'previews'), 'the Role in the configured namespace');
});

t.test('proxy_mode: the routing proxy, its rights, Service, budget, policies and the wildcard Ingress', async (t) => {
  const { objects } = plan(PROXY);
  t.same(validateManifests(objects), [], 'the manifest validator passes the whole set');
  const app = find(objects, 'Deployment', 'shop', 'shop');
  const proxy = find(objects, 'Deployment', 'shop-sandbox-proxy', 'shop');
  t.equal(proxy.spec.replicas, 2);
  const labels = { 'app.kubernetes.io/component': 'sandbox-proxy', 'app.kubernetes.io/name': 'shop' };
  t.same(proxy.spec.selector.matchLabels, labels, 'the labels the sandboxes\' own policies let in');
  t.match(proxy.spec.template.metadata.labels, labels);
  const pod = podSpec(proxy);
  t.equal(pod.serviceAccountName, 'shop-sandbox-proxy');
  t.equal(pod.automountServiceAccountToken, true, 'it watches pods: it needs its token');
  t.same(pod.securityContext, podSpec(app).securityContext, "the app's pod security");
  const c = pod.containers[0];
  t.equal(c.image, 'registry.example.com/shop:0123456789ab', "the app's image");
  t.equal(c.command, undefined, "the image's entrypoint (svc)");
  t.same(c.args, ['sandbox', 'proxy']);
  t.same(c.env, [
    { name: 'SANDBOX_NAMESPACE', value: 'svc-sandboxes' },
    { name: 'SANDBOX_LABEL', value: 'svc-sandbox=true' },
    { name: 'INTERNAL_PORT', value: '8000' },
    { name: 'PROXY_PORT', value: '8080' },
    { name: 'PREVIEW_DOMAIN', value: 'preview.example.com' },
  ]);
  t.same(c.ports, [{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
  t.match(c.readinessProbe, { httpGet: { path: '/_proxy/health', port: 'http' } });
  t.same(c.resources, { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } });
  t.same(c.securityContext, podSpec(app).containers[0].securityContext, "the app's container security");

  t.same(find(objects, 'ServiceAccount', 'shop-sandbox-proxy', 'shop').automountServiceAccountToken, false);
  t.same(find(objects, 'Role', 'shop-shop-sandbox-proxy', 'svc-sandboxes').rules, [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }], 'it reads sandbox pods, nothing else');
  t.same(find(objects, 'RoleBinding', 'shop-shop-sandbox-proxy', 'svc-sandboxes').subjects, [{ kind: 'ServiceAccount', name: 'shop-sandbox-proxy', namespace: 'shop' }]);
  t.same(find(objects, 'Service', 'shop-sandbox-proxy', 'shop').spec, { type: 'ClusterIP', selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }] });
  t.same(find(objects, 'PodDisruptionBudget', 'shop-sandbox-proxy-pdb', 'shop').spec, { maxUnavailable: 1, selector: { matchLabels: labels } });

  const inbound = find(objects, 'NetworkPolicy', 'shop-allow-sandbox-proxy', 'shop');
  t.same(inbound.spec.podSelector, { matchLabels: labels });
  t.same(inbound.spec.ingress, [{ from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'ingress', 'app.kubernetes.io/name': 'shop' } } }], ports: [{ protocol: 'TCP', port: 8080 }] }], "svc's own Traefik reaches the proxy");
  const toSandboxes = find(objects, 'NetworkPolicy', 'shop-shop-sandbox-allow-proxy', 'svc-sandboxes');
  t.same(toSandboxes.spec.ingress, [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } }, podSelector: { matchLabels: labels } }], ports: [{ protocol: 'TCP', port: 8000 }] }], 'the proxy reaches sandbox pods on 8000');

  const ingress = find(objects, 'Ingress', 'shop-sandbox-proxy', 'shop');
  t.equal(ingress.metadata.annotations['kubernetes.io/ingress.class'], 'svc-shop', "svc's own Traefik serves it (its class annotation)");
  t.equal(ingress.spec.ingressClassName, undefined);
  t.same(ingress.spec.rules, [{ host: '*.preview.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'shop-sandbox-proxy', port: { number: 80 } } } }] } }]);
  t.equal(ingress.spec.tls, undefined, 'no TLS unless tls_enabled');
  t.notOk(objects.some((o) => o.kind === 'Secret' && /sandbox/.test(o.metadata.name)), 'no Secret without preview_secret');
});

t.test('proxy_mode with an ingress class, TLS, annotations and a preview secret', async (t) => {
  const toml = `${PROXY}ingress_class = "nginx"\ntls_enabled = true\ntls_issuer = "letsencrypt-dns"\npreview_secret = "\${PREVIEW_KEY}"\n[scale.sandbox.ingress_annotations]\n"nginx.ingress.kubernetes.io/proxy-read-timeout" = 3600\nteam = "previews"\n`;
  const { spec, objects, warnings } = plan(toml, { PREVIEW_KEY: 'preview-key-0123456789' });
  t.same(validateManifests(objects), []);
  const ingress = find(objects, 'Ingress', 'shop-sandbox-proxy', 'shop');
  t.equal(ingress.spec.ingressClassName, 'nginx');
  t.same(ingress.metadata.annotations, { 'cert-manager.io/cluster-issuer': 'letsencrypt-dns', 'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600', team: 'previews' }, 'a number written unquoted is its digits');
  t.same(ingress.spec.tls, [{ hosts: ['*.preview.example.com'], secretName: 'shop-sandbox-preview-tls' }]);
  t.match(warnings.join('\n'), /wildcard \(\*\.preview\.example\.com\).*DNS-01/, 'a wildcard certificate needs DNS-01: said');
  t.same(find(objects, 'NetworkPolicy', 'shop-allow-sandbox-proxy', 'shop').spec.ingress, [{ ports: [{ protocol: 'TCP', port: 8080 }] }], "another controller's pods are not ours to name: the port is open");

  const secret = find(objects, 'Secret', 'shop-sandbox-proxy-secret', 'shop');
  t.same(secret.stringData, { 'preview-secret': 'preview-key-0123456789' }, '${VAR} resolved from the environment');
  const env = podSpec(find(objects, 'Deployment', 'shop-sandbox-proxy', 'shop')).containers[0].env;
  t.same(env.find((e: Any) => e.name === 'PREVIEW_SECRET'), { name: 'PREVIEW_SECRET', valueFrom: { secretKeyRef: { name: 'shop-sandbox-proxy-secret', key: 'preview-secret' } } }, 'by secretKeyRef, never in the pod spec');
  const appEnv = podSpec(find(objects, 'Deployment', 'shop', 'shop')).containers[0].env;
  t.same(appEnv.find((e: Any) => e.name === 'SVC_SANDBOX_PREVIEW_SECRET'), { name: 'SVC_SANDBOX_PREVIEW_SECRET', valueFrom: { secretKeyRef: { name: 'shop-sandbox-proxy-secret', key: 'preview-secret' } } }, 'the app signs with the secret the proxy checks');
  const yaml = renderYaml(objects, { showSecrets: false });
  t.notMatch(yaml, 'preview-key-0123456789', 'redacted in the dry run');
  const text = planText({ spec, objects, warnings, imageNote: 'configured' });
  t.match(text, /sandbox-proxy:[\s\S]*Deployment\s+shop\/shop-sandbox-proxy \(2 × registry\.example\.com\/shop:0123456789ab\)[\s\S]*Ingress\s+shop\/shop-sandbox-proxy/, 'the dry run lists the proxy');

  const rolled = plan(toml, { PREVIEW_KEY: 'another-key-0123456789' }).objects;
  const annotation = (objects: K8sObject[]) => (find(objects, 'Deployment', 'shop-sandbox-proxy', 'shop').spec.template.metadata.annotations as Record<string, string>)['svc.dev/config-checksum'];
  t.not(annotation(rolled), annotation(objects), 'a new preview secret rolls the proxy');
  t.notMatch(JSON.stringify(find(rolled, 'Deployment', 'shop-sandbox-proxy', 'shop')), 'another-key', 'and never shows in it');
});

t.test('the same app in two namespaces shares the sandbox namespace without sharing a binding', async (t) => {
  const a = plan(PROXY).objects;
  const dir = mkdtempSync(join(tmpdir(), 'svc-deploy-sandbox-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'svc.toml'), `[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop-staging"\n${PROXY}`);
  const b = buildManifests(deploySpec({ ...loadConfig({ dir, env: {} }), env: {}, image: 'registry.example.com/shop:1' }).spec);
  const inSandboxes = (objects: K8sObject[]) => objects.filter((o) => o.metadata.namespace === 'svc-sandboxes').map((o) => `${o.kind}/${o.metadata.name}`);
  const shared = inSandboxes(a).filter((id) => inSandboxes(b).includes(id));
  t.same(shared, ['Role/svc-sandbox-manager'], 'only the Role, the same for every app');
});

t.test('configuration problems: each named, all at once', async (t) => {
  t.match(problems(`${ORCHESTRATOR}proxy_mode = true\n`), [/proxy_mode needs domain_template with \{sandbox_id\}/]);
  t.match(problems(`${ORCHESTRATOR}proxy_mode = true\ndomain_template = "preview.example.com"\n`), [/proxy_mode needs domain_template with \{sandbox_id\}.*got "preview\.example\.com"/]);
  t.match(problems(`${ORCHESTRATOR}proxy_mode = true\ndomain_template = "preview-{sandbox_id}.example.com"\n`), [/domain_template .*first label/]);
  t.match(problems(`${ORCHESTRATOR}namespace = "Sandboxes_1"\n`), [/\[scale\.sandbox\] namespace "Sandboxes_1": a namespace is lower-case/]);
  t.match(problems(`${ORCHESTRATOR}namespace = "${'a'.repeat(64)}"\n`), [/\[scale\.sandbox\] namespace/]);
  t.match(problems(`${ORCHESTRATOR}namespace = "shop"\n`), [/namespace "shop" is the app's own/]);
  t.match(problems(`${ORCHESTRATOR}namespace = "kube-system"\n`), [/shared with the cluster's own workloads/]);
  t.match(problems(`${ORCHESTRATOR}namespace = "default"\n`), [/shared with the cluster's own workloads/]);
  t.match(problems(`${PROXY}tls_enabled = true\ntls_issuer = ""\n`), [/tls_enabled needs tls_issuer/]);
  t.match(problems(`${PROXY}ingress_class = "Not A Class"\n`), [/\[scale\.sandbox\] ingress_class "Not A Class"/]);
  t.match(problems(`${PROXY}preview_secret = "\${NOT_SET_HERE}"\n`), [/preview_secret: \$\{NOT_SET_HERE\} is not set/]);
  t.match(problems(`${ORCHESTRATOR}[scale.secrets]\nPOD_NAMESPACE = "x"\n`), [/\[scale\.secrets\] POD_NAMESPACE: with sandboxes as pods/]);
  t.equal(problems(`${ORCHESTRATOR}namespace = "Bad_NS"\nproxy_mode = true\n`).length, 2, 'every problem at once');
  t.same(problems('[scale.sandbox]\ntype = "local"\nproxy_mode = true\nnamespace = "shop"\n'), [], 'none when sandboxes are not pods');
  t.same(problems(`[scale.sandbox]\nenabled = false\ntype = "orchestrator"\nproxy_mode = true\n`), [], 'nor when they are off');
});
