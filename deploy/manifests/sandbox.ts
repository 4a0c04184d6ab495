/**
 * Sandboxes as Kubernetes pods (`[scale.sandbox] enabled`, `type = "orchestrator"`): what the deployment gives the app
 * so that, running in its Deployment, it can make sandbox pods — and, with `proxy_mode`, the routing proxy in front of
 * them. Nothing here without {@link DeploySpec.sandbox}.
 *
 * Decisions:
 * - The deployment, not the app, makes the sandbox namespace, the Role `svc-sandbox-manager` in it and its binding to
 *   the app's own ServiceAccount `{app}`: creating a namespace takes cluster-wide rights, and RBAC lets a subject grant
 *   only rights it holds; the deployer has both, the app need not. The app finds them made (its own attempt answers
 *   409, or 403 where it may not create them) and uses the rights through `POD_SERVICE_ACCOUNT`/`POD_NAMESPACE`.
 * - The app's pods mount their service-account token only then: without sandboxes on Kubernetes they never talk to the
 *   API server, and the default ServiceAccount of the namespace is never the one bound.
 * - The sandbox namespace enforces Pod Security `restricted` when `security_context` (the sandbox pods run as user 1000,
 *   no privilege escalation, every capability dropped, seccomp RuntimeDefault), else `baseline` (root in the container,
 *   but never privileged, host namespaces or host paths); it audits at `restricted` either way.
 * - Objects of this app in the shared sandbox namespace are named `{app}-{namespace}-…` (the same app deployed in two
 *   namespaces shares `svc-sandboxes` without one deploy rewriting the other's binding); only the Role is one for all
 *   (`svc-sandbox-manager`, as the app names it).
 * - Incoming traffic to every pod of the sandbox namespace is denied unless a policy lets it in (the app makes one per
 *   sandbox; with `proxy_mode` this plan lets the proxy's pods in on the sandbox port), and outgoing traffic too unless
 *   `allow_egress`: a pod the app has not yet covered (a warm pod) is closed, never open.
 * - The proxy runs the app's image (`svc sandbox proxy`: the image's entrypoint is svc, `args` replace its `start`),
 *   2 replicas kept one at a time through drains, in the app's namespace with the app's pod security. Its pods carry
 *   `app.kubernetes.io/component: sandbox-proxy` and `app.kubernetes.io/name: {app}`: the sandboxes' own policies let
 *   those in, from the app's namespace as `kubernetes.io/metadata.name` names it (a label Kubernetes sets on every
 *   namespace itself).
 * - The previews' public route is one `networking.k8s.io/v1` Ingress for the wildcard host, whatever the class: svc's own
 *   Traefik reads it by its class annotation (as it reads cert-manager's), another controller by `ingressClassName`; so
 *   cert-manager's `cert-manager.io/cluster-issuer` annotation issues its certificate the same way everywhere.
 */
import type { DeploySpec, K8sObject, SandboxDeploy } from '../spec.ts';
import {
  APP_DIR,
  APP_UID,
  CHECKSUM_ANNOTATION,
  checksum,
  clusterMeta,
  containerSecurity,
  env,
  labels,
  meta,
  nameOf,
  podSecurity,
  scratch,
  secretEnv,
  selectorLabels,
  sortKeys,
  type Component,
} from './common.ts';

/** The Role the app holds in the sandbox namespace (one for every app there: the app's sandbox provider names it so). */
export const SANDBOX_MANAGER_ROLE = 'svc-sandbox-manager';
/** The port of a sandbox pod's dev server (the proxy's `INTERNAL_PORT`). */
export const SANDBOX_PORT = 8000;
/** The proxy's port in its pod (`PROXY_PORT`). */
export const SANDBOX_PROXY_PORT = 8080;
/** The label every sandbox pod carries, as the proxy selects them (`SANDBOX_LABEL`). */
export const SANDBOX_LABEL = 'svc-sandbox=true';
/** The proxy's health path (`ok (N routes)`). */
export const PROXY_HEALTH_PATH = '/_proxy/health';
/** The label Kubernetes sets on every namespace to its name: how a policy in the sandbox namespace names the app's. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
const API_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const RBAC = 'rbac.authorization.k8s.io';

/**
 * The names of the sandbox objects: the app's ServiceAccount, the proxy's objects (app namespace), and this app's
 * objects in the sandbox namespace.
 *
 * @example
 * sandboxNames(spec).managerBinding // 'shop-shop-ns-sandbox-manager'
 */
export function sandboxNames(spec: DeploySpec) {
  const scoped = (suffix: string) => `${spec.app}-${spec.namespace}-${suffix}`;
  const inSandboxNamespace = {
    managerBinding: scoped('sandbox-manager'),
    proxyReader: scoped('sandbox-proxy'),
    defaultDeny: scoped('sandbox-default-deny'),
    allowProxy: scoped('sandbox-allow-proxy'),
  };
  return {
    ...inSandboxNamespace,
    /** Every name this deployment gives its objects in the sandbox namespace (the shared Role aside). */
    scoped: Object.values(inSandboxNamespace),
    appAccount: nameOf(spec),
    managerRole: SANDBOX_MANAGER_ROLE,
    proxy: nameOf(spec, 'sandbox-proxy'),
    proxySecret: nameOf(spec, 'sandbox-proxy-secret'),
    proxyBudget: nameOf(spec, 'sandbox-proxy-pdb'),
    proxyPolicy: nameOf(spec, 'allow-sandbox-proxy'),
    proxyTls: nameOf(spec, 'sandbox-preview-tls'),
  };
}

/**
 * The environment the app's container gets with sandboxes as pods: `POD_SERVICE_ACCOUNT` and `POD_NAMESPACE`, from the pod itself,
 * and the preview secret (`SVC_SANDBOX_PREVIEW_SECRET`) from the proxy's Secret when previews are private.
 *
 * @example
 * appSandboxEnv(spec).map((e) => e.name) // ['POD_SERVICE_ACCOUNT', 'POD_NAMESPACE'] (none without sandboxes)
 */
export function appSandboxEnv(spec: DeploySpec): Record<string, unknown>[] {
  if (!spec.sandbox) return [];
  const env: Record<string, unknown>[] = [
    { name: 'POD_SERVICE_ACCOUNT', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];
  // The app signs preview tokens with the secret the proxy checks them with (svc.toml's value may be a `${VAR}` resolved only here).
  if (spec.sandbox.proxy?.previewSecret !== undefined) env.push(secretEnv('SVC_SANDBOX_PREVIEW_SECRET', sandboxNames(spec).proxySecret, 'preview-secret'));
  return env;
}

/** The metadata of an object of this app in the sandbox namespace. */
function sandboxMeta(spec: DeploySpec, sandbox: SandboxDeploy, name: string, component: 'sandbox' | 'sandbox-proxy' = 'sandbox'): K8sObject['metadata'] {
  return { ...meta(spec, name, component), namespace: sandbox.namespace };
}

/** The sandbox namespace and its Pod Security labels (see the module's comment). */
function sandboxNamespace(spec: DeploySpec, sandbox: SandboxDeploy): K8sObject {
  const metadata = clusterMeta(spec, sandbox.namespace, 'sandbox');
  const level = sandbox.securityContext ? 'restricted' : 'baseline';
  const security = {
    'pod-security.kubernetes.io/enforce': level,
    'pod-security.kubernetes.io/enforce-version': 'latest',
    'pod-security.kubernetes.io/audit': 'restricted',
    'pod-security.kubernetes.io/audit-version': 'latest',
    'pod-security.kubernetes.io/warn': level,
    'pod-security.kubernetes.io/warn-version': 'latest',
  };
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { ...metadata, labels: sortKeys({ ...metadata.labels, ...security }) } };
}

/** A Role in the sandbox namespace and its binding to a ServiceAccount of the app's namespace. */
function roleAndBinding(
  spec: DeploySpec,
  sandbox: SandboxDeploy,
  names: { role: string; binding: string; account: string },
  component: 'sandbox' | 'sandbox-proxy',
  rules: Record<string, unknown>[],
): K8sObject[] {
  const { role, binding, account } = names;
  return [
    { apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: sandboxMeta(spec, sandbox, role, component), rules },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'RoleBinding',
      metadata: sandboxMeta(spec, sandbox, binding, component),
      roleRef: { apiGroup: RBAC, kind: 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: spec.namespace }],
    },
  ];
}

/** The sandbox namespace's own policies: nothing in (or out, unless `allow_egress`) but what a policy lets through. */
function sandboxPolicies(spec: DeploySpec, sandbox: SandboxDeploy): K8sObject[] {
  const names = sandboxNames(spec);
  const out: K8sObject[] = [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: sandboxMeta(spec, sandbox, names.defaultDeny),
      // Every pod of the namespace: the sandboxes are all it holds (the namespace is refused when it is the app's or a shared one).
      spec: { podSelector: {}, policyTypes: sandbox.allowEgress ? ['Ingress'] : ['Ingress', 'Egress'] },
    },
  ];
  if (sandbox.proxy) {
    out.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: sandboxMeta(spec, sandbox, names.allowProxy, 'sandbox-proxy'),
      spec: {
        podSelector: {},
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: spec.namespace } }, podSelector: { matchLabels: selectorLabels(spec, 'sandbox-proxy') } }],
            ports: [{ protocol: 'TCP', port: SANDBOX_PORT }],
          },
        ],
      },
    });
  }
  return out;
}

/** The proxy's container environment (`svc sandbox proxy` reads it). */
function proxyEnv(spec: DeploySpec, sandbox: SandboxDeploy): Record<string, unknown>[] {
  const out = [
    env('SANDBOX_NAMESPACE', sandbox.namespace),
    env('SANDBOX_LABEL', SANDBOX_LABEL),
    env('INTERNAL_PORT', String(SANDBOX_PORT)),
    env('PROXY_PORT', String(SANDBOX_PROXY_PORT)),
  ];
  // Only hosts of the previews' domain name a sandbox (`*.preview.example.com` → `preview.example.com`).
  if (sandbox.proxy?.wildcardHost.startsWith('*.')) out.push(env('PREVIEW_DOMAIN', sandbox.proxy.wildcardHost.slice(2)));
  if (sandbox.proxy?.previewSecret !== undefined) out.push(secretEnv('PREVIEW_SECRET', sandboxNames(spec).proxySecret, 'preview-secret'));
  return out;
}

/** The proxy's Deployment: 2 replicas of the app's image running `svc sandbox proxy`, spread over nodes where it can. */
function proxyDeployment(spec: DeploySpec, sandbox: SandboxDeploy): K8sObject {
  const name = sandboxNames(spec).proxy;
  // The same writable places as the app's pods: svc may bundle or write its data folder whatever the subcommand.
  const volumes = [scratch('tmp', '/tmp'), scratch('svc-data', `${APP_DIR}/.svc`), scratch('module-cache', `${APP_DIR}/node_modules/.cache`)];
  const probe = { httpGet: { path: PROXY_HEALTH_PATH, port: 'http' } };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, name, 'sandbox-proxy'),
    spec: {
      replicas: 2,
      revisionHistoryLimit: spec.rollout.revisionHistoryLimit,
      selector: { matchLabels: selectorLabels(spec, 'sandbox-proxy') },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        // A changed preview secret rolls the pods (the Secret's value never shows: only a hash of the environment and its hash).
        metadata: {
          labels: labels(spec, 'sandbox-proxy'),
          annotations: { [CHECKSUM_ANNOTATION]: checksum({ env: proxyEnv(spec, sandbox), secret: checksum(sandbox.proxy?.previewSecret ?? '') }) },
        },
        spec: {
          serviceAccountName: name,
          // It watches the sandbox pods: the API server is its route table.
          automountServiceAccountToken: true,
          securityContext: podSecurity(APP_UID),
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: selectorLabels(spec, 'sandbox-proxy') } } }],
            },
          },
          containers: [
            {
              name: 'proxy',
              image: spec.images.app,
              args: ['sandbox', 'proxy'],
              ports: [{ name: 'http', containerPort: SANDBOX_PROXY_PORT, protocol: 'TCP' }],
              env: proxyEnv(spec, sandbox),
              resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
              readinessProbe: { ...probe, initialDelaySeconds: 2, periodSeconds: 5 },
              livenessProbe: { ...probe, initialDelaySeconds: 10, periodSeconds: 20, failureThreshold: 3 },
              securityContext: containerSecurity(),
              volumeMounts: volumes.map((v) => v.mount),
            },
          ],
          volumes: volumes.map((v) => v.volume),
        },
      },
    },
  };
}

/** The previews' Ingress: the wildcard host to the proxy's Service, with the class, the annotations and TLS configured. */
function previewIngress(spec: DeploySpec, proxy: NonNullable<SandboxDeploy['proxy']>): K8sObject {
  const names = sandboxNames(spec);
  const own = proxy.ingressClass === '';
  const annotations: Record<string, string> = {
    // svc's own Traefik reads the Ingresses of its class annotation (ingress.ts), as it reads cert-manager's.
    ...(own ? { 'kubernetes.io/ingress.class': `svc-${spec.app}` } : {}),
    ...(proxy.tlsIssuer ? { 'cert-manager.io/cluster-issuer': proxy.tlsIssuer } : {}),
    ...proxy.annotations,
  };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: meta(spec, names.proxy, 'sandbox-proxy', Object.keys(annotations).length > 0 ? annotations : undefined),
    spec: {
      ...(own ? {} : { ingressClassName: proxy.ingressClass }),
      ...(proxy.tlsIssuer ? { tls: [{ hosts: [proxy.wildcardHost], secretName: names.proxyTls }] } : {}),
      rules: [{ host: proxy.wildcardHost, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: names.proxy, port: { number: 80 } } } }] } }],
    },
  };
}

/** The routing proxy: its account and rights (pods of the sandbox namespace, read only), Secret, Deployment, Service, budget, policy and Ingress. */
function proxyObjects(spec: DeploySpec, sandbox: SandboxDeploy, proxy: NonNullable<SandboxDeploy['proxy']>): K8sObject[] {
  const names = sandboxNames(spec);
  const out: K8sObject[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(spec, names.proxy, 'sandbox-proxy'), automountServiceAccountToken: false },
    ...roleAndBinding(spec, sandbox, { role: names.proxyReader, binding: names.proxyReader, account: names.proxy }, 'sandbox-proxy', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]),
  ];
  if (proxy.previewSecret !== undefined) {
    out.push({ apiVersion: 'v1', kind: 'Secret', metadata: meta(spec, names.proxySecret, 'sandbox-proxy'), type: 'Opaque', stringData: { 'preview-secret': proxy.previewSecret } });
  }
  out.push(
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(spec, names.proxy, 'sandbox-proxy'),
      spec: { type: 'ClusterIP', selector: selectorLabels(spec, 'sandbox-proxy'), ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }] },
    },
    proxyDeployment(spec, sandbox),
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(spec, names.proxyBudget, 'sandbox-proxy'),
      spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(spec, 'sandbox-proxy') } },
    },
  );
  // The app's namespace denies what no policy lets in (network.ts): the previews come through the ingress controller —
  // svc's own Traefik (its pods), or another controller elsewhere (any source, as for the app).
  const from: Component[] | undefined = proxy.ingressClass === '' ? ['ingress'] : undefined;
  out.push({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(spec, names.proxyPolicy, 'sandbox-proxy'),
    spec: {
      podSelector: { matchLabels: selectorLabels(spec, 'sandbox-proxy') },
      policyTypes: ['Ingress'],
      ingress: [{ ...(from ? { from: from.map((c) => ({ podSelector: { matchLabels: selectorLabels(spec, c) } })) } : {}), ports: [{ protocol: 'TCP', port: SANDBOX_PROXY_PORT }] }],
    },
  });
  out.push(previewIngress(spec, proxy));
  return out;
}

/**
 * Every object of sandboxes as pods: none unless {@link DeploySpec.sandbox}; then the app's ServiceAccount, the sandbox
 * namespace, the Role `svc-sandbox-manager` and its binding to the app, the namespace's policies and, with
 * `proxy_mode`, the routing proxy.
 *
 * @example
 * sandboxObjects({ ...spec, sandbox: { namespace: 'svc-sandboxes', securityContext: true, allowEgress: false } }).map((o) => o.kind)
 * // ['ServiceAccount', 'Namespace', 'Role', 'RoleBinding', 'NetworkPolicy']
 */
export function sandboxObjects(spec: DeploySpec): K8sObject[] {
  const sandbox = spec.sandbox;
  if (!sandbox) return [];
  const names = sandboxNames(spec);
  const rules = [
    { apiGroups: [''], resources: ['pods', 'services', 'configmaps'], verbs: API_VERBS },
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses', 'networkpolicies'], verbs: API_VERBS },
    { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  ];
  return [
    // The app's own account: the Role is bound to it, never to the namespace's `default` (which every other pod there uses).
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(spec, names.appAccount, 'app'), automountServiceAccountToken: false },
    sandboxNamespace(spec, sandbox),
    ...roleAndBinding(spec, sandbox, { role: names.managerRole, binding: names.managerBinding, account: names.appAccount }, 'sandbox', rules),
    ...sandboxPolicies(spec, sandbox),
    ...(sandbox.proxy ? proxyObjects(spec, sandbox, sandbox.proxy) : []),
  ];
}
