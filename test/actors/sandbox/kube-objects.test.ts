// The orchestrator provider's objects, pure: names that fit Kubernetes whatever the user and project, the code
// ConfigMap (text in data, bytes in binaryData, nested paths), the pod (labels, env, limits, deadline, security,
// restart policy, init container, no token), warm pods, NetworkPolicy, Service and Ingress — each set passing the
// manifest validator svc's deployments are checked with.
import t from 'tap';
import { validateManifests } from '../../../deploy/index.ts';
import {
  claimedMetadata,
  codeConfigMap,
  defaultPolicy,
  keyOfPath,
  labelValue,
  namespaceObject,
  pathOfKey,
  podName,
  previewUrl,
  roleBindingObject,
  roleObject,
  sandboxIngress,
  sandboxPod,
  sandboxPolicy,
  sandboxService,
} from '../../../actors/sandbox/kube-objects.ts';
import type { SandboxSettings } from '../../../actors/sandbox/types.ts';
import { orchestratorSettings } from '../../helpers/sandbox.ts';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

const settings = (over: Partial<SandboxSettings> = {}): SandboxSettings => orchestratorSettings(over);

const who = { sandbox_id: 'sbx-0123456789abcdef', user: 'Very_Long_User_Name_1234567890', project: 'My_Project_X' };

t.test('pod names are lowercase DNS labels of at most 63 characters for any names', async (t) => {
  const name = podName(who.user, who.project, '1a2b3c4d');
  t.match(name, /^svc-sbx-very-long-user-name-1234567890-my-project-x-1a2b3c4d$/);
  t.ok(name.length <= 63);
  for (const [u, p] of [
    ['a'.repeat(300), 'b'.repeat(300)],
    ['Ünïcödé @ user!', '../../etc'],
    ['---', '___'],
    ['x', 'y'],
  ] as const) {
    const n = podName(u, p, 'deadbeef');
    t.ok(n.length <= 63, `${n} fits`);
    t.match(n, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, `${n} is a DNS label`);
  }
  t.match(labelValue(who.user), /^[a-z0-9-]{1,63}$/);
});

t.test('ConfigMap keys are reversible and valid, nested paths included', async (t) => {
  for (const path of ['package.json', 'src/components/App.jsx', 'a b/ü_x.txt', 'public/logo.png', '.env']) {
    const key = keyOfPath(path);
    t.match(key, /^[-._a-zA-Z0-9]+$/, `${key} is a ConfigMap key`);
    t.equal(pathOfKey(key), path);
  }
  t.not(keyOfPath('a_2fb'), keyOfPath('a/b'), 'an underscore in a name never collides with a folder separator');
  for (const long of [`src/${'components/'.repeat(20)}App.jsx`, `pages/${'é'.repeat(45)}.md`, '..x']) {
    const key = keyOfPath(long);
    t.ok(key.length <= 253 && /^[-._a-zA-Z0-9]+$/.test(key) && !key.startsWith('..'), `${long.slice(0, 30)}…: a valid key (${key.slice(0, 20)}…)`);
  }
  const { items, object } = codeConfigMap(settings(), who, new Map([[`src/${'components/'.repeat(20)}App.jsx`, { content: Buffer.from('x'), mode: 0o644 }], ['bin/run.sh', { content: Buffer.from('#!/bin/sh'), mode: 0o755 }]]));
  t.same(items.map((i) => i.path), [`src/${'components/'.repeat(20)}App.jsx`, 'bin/run.sh'], 'every file goes back at its path');
  t.equal(items[1]?.mode, 0o755, 'an executable keeps its mode');
  t.match(JSON.parse((object.metadata.annotations as Record<string, string>)['svc.dev/sandbox-files'] as string), { [keyOfPath(`src/${'components/'.repeat(20)}App.jsx`)]: [`src/${'components/'.repeat(20)}App.jsx`] }, 'a hashed key names its path');
});

t.test('the code ConfigMap, pod, policy, Service and Ingress of a cold start pass the validator', async (t) => {
  const s = settings({ tls_enabled: true, tls_issuer: 'letsencrypt-prod', ingress_class: 'traefik', ingress_annotations: { 'traefik.ingress.kubernetes.io/router.entrypoints': 'websecure' } });
  const files = new Map<string, Uint8Array>([
    ['package.json', Buffer.from('{"scripts":{"dev":"node server.js"}}')],
    ['src/server.js', Buffer.from('console.log("Server ready")')],
    ['public/logo.png', PNG],
  ]);
  const { object: cm, bytes, items } = codeConfigMap(s, who, files);
  t.ok(bytes > 0);
  const data = cm.data as Record<string, string>;
  const binary = cm.binaryData as Record<string, string>;
  t.equal(data[keyOfPath('src/server.js')], 'console.log("Server ready")');
  t.same(Buffer.from(binary[keyOfPath('public/logo.png')] as string, 'base64'), PNG, 'the PNG is base64 in binaryData');
  t.notOk(data[keyOfPath('public/logo.png')]);
  const name = podName(who.user, who.project, '1a2b3c4d');
  const pod = sandboxPod(s, name, who, items) as any;
  t.same(pod.metadata.labels['svc-sandbox'], 'true');
  t.equal(pod.metadata.labels['svc-sandbox-id'], who.sandbox_id);
  t.equal(pod.metadata.labels['svc-sandbox-user'], 'very-long-user-name-1234567890');
  t.equal(pod.metadata.labels['svc-sandbox-project'], 'my-project-x');
  t.equal(pod.metadata.annotations['svc.dev/sandbox-user'], who.user, 'the name as given is kept');
  const spec = pod.spec;
  t.equal(spec.restartPolicy, 'Always', 'the dev server restarting does not end the pod');
  t.equal(spec.activeDeadlineSeconds, 3600);
  t.equal(spec.terminationGracePeriodSeconds, 10);
  t.equal(spec.automountServiceAccountToken, false);
  t.same(spec.securityContext, { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } });
  const dev = spec.containers[0];
  t.same(dev.resources, { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '500m', memory: '512Mi' } });
  t.same(dev.securityContext.capabilities, { drop: ['ALL'] });
  t.equal(dev.securityContext.allowPrivilegeEscalation, false);
  const env = Object.fromEntries(dev.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  t.match(env, { SVC_SANDBOX_ID: who.sandbox_id, SVC_SANDBOX_USER: who.user, SVC_SANDBOX_PROJECT: who.project, CHOKIDAR_USEPOLLING: '1', WATCHPACK_POLLING: 'true', PORT: '8000' });
  t.equal(spec.initContainers[0].name, 'unpack');
  const code = spec.volumes.find((v: { name: string }) => v.name === 'code');
  t.same(code.configMap.items.find((i: { path: string }) => i.path === 'src/server.js'), { key: keyOfPath('src/server.js'), path: 'src/server.js' }, 'nested paths come back from their keys');
  const objects = [namespaceObject(s), roleObject(s), roleBindingObject(s, 'shop', 'shop'), defaultPolicy(s), cm, pod, sandboxPolicy(s, who), sandboxService(s, who), sandboxIngress(s, who)];
  t.same(validateManifests(objects as never), [], 'every object passes the manifest validator');
  const ingress = sandboxIngress(s, who) as any;
  t.equal(ingress.metadata.name, `${who.sandbox_id}-ingress`);
  t.equal(ingress.spec.rules[0].host, `${who.sandbox_id}.preview.example.com`);
  t.equal(ingress.spec.ingressClassName, 'traefik');
  t.equal(ingress.metadata.annotations['cert-manager.io/cluster-issuer'], 'letsencrypt-prod');
  t.equal(ingress.metadata.annotations['traefik.ingress.kubernetes.io/router.entrypoints'], 'websecure');
  t.same(ingress.spec.tls, [{ hosts: [`${who.sandbox_id}.preview.example.com`], secretName: `${who.sandbox_id}-tls` }]);
  t.equal((sandboxService(s, who) as any).metadata.name, `${who.sandbox_id}-svc`);
  t.equal(previewUrl(s, who.sandbox_id), `https://${who.sandbox_id}.preview.example.com`);
  const role = roleObject(s) as any;
  t.equal(role.metadata.name, 'svc-sandbox-manager');
  const resources = role.rules.flatMap((r: { resources: string[] }) => r.resources);
  for (const r of ['pods', 'pods/exec', 'pods/log', 'services', 'configmaps', 'ingresses']) t.ok(resources.includes(r), `the Role covers ${r}`);
});

t.test('a sandbox reaches nothing and only the proxy reaches it (proxy mode); without security_context no pod security', async (t) => {
  const s = settings({ proxy_mode: true });
  const policy = sandboxPolicy(s, who) as any;
  t.same(policy.spec.podSelector, { matchLabels: { 'svc-sandbox-id': who.sandbox_id } });
  t.same(policy.spec.policyTypes, ['Ingress', 'Egress']);
  t.same(policy.spec.egress, [], 'no egress');
  t.same(policy.spec.ingress[0].from, [{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/component': 'sandbox-proxy' } } }]);
  const open = sandboxPolicy(settings({ allow_egress: true }), who) as any;
  t.ok(open.spec.egress.length > 0, 'egress when configured');
  const plain = sandboxPod(settings({ security_context: false }), 'svc-sbx-a-b-12345678', who, []) as any;
  t.notOk(plain.spec.securityContext);
  t.same(plain.spec.containers[0].securityContext, {});
  t.same(validateManifests([namespaceObject(settings({ security_context: false })), codeConfigMap(settings(), who, new Map()).object, plain] as never), []);
});

t.test('a warm pod waits for its code, has no deadline and no identity; a claim relabels it', async (t) => {
  const s = settings({ warm_pool_size: 2 });
  const warm = sandboxPod(s, 'svc-sbx-warm-12345678', undefined) as any;
  t.same(warm.metadata.labels, { 'app.kubernetes.io/managed-by': 'svc', 'svc-sandbox': 'true', 'svc-sandbox-pool': 'warm' });
  t.notOk(warm.spec.activeDeadlineSeconds, 'idle warm pods do not die at the sandbox deadline');
  t.notOk(warm.spec.initContainers);
  t.match(warm.spec.containers[0].command[2], /\/app\/\.svc-start/);
  t.same(validateManifests([namespaceObject(s), warm] as never), []);
  const meta = claimedMetadata(who, '2026-12-07T00:00:00.000Z');
  t.match(meta.labels, { 'svc-sandbox-pool': 'active', 'svc-sandbox-id': who.sandbox_id, 'svc-sandbox': 'true' });
  t.equal(meta.annotations['svc.dev/sandbox-claimed-at'], '2026-12-07T00:00:00.000Z');
});
