/**
 * The one door into the deployment.
 *
 * - `ingress_class` empty: svc runs its own Traefik v3 proxy in the namespace
 *   (its CRDs, a namespace-scoped Role, a Deployment and a NodePort Service on
 *   `ingress_node_port`), configured by the Middlewares and the IngressRoute below.
 * - `traefik`: the cluster's Traefik serves the same Middlewares and IngressRoute.
 * - another class: a plain `networking.k8s.io/v1` Ingress of that class with
 *   the same paths; limits and stickiness are that controller's to configure.
 *
 * Per client IP: `rps` requests per second sustained with a burst of `burst`
 * (RateLimit), `connections` requests in flight (InFlightReq); both answer 429.
 * Sticky sessions: cookie `route`, ~68 years, rewritten by Traefik when the
 * pod it names is gone.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { IMAGES, clusterMeta, containerSecurity, labels, meta, nameOf, podSecurity, selectorLabels } from './common.ts';
import { DASHBOARD_PORT } from './docdb.ts';
import { KV_DASHBOARD_PORT } from './kv.ts';
import { GRAFANA_PORT } from './grafana.ts';
import { docdbDashboardEnabled, kvDashboardEnabled, secretNames } from './secrets.ts';

/** The proxy's unprivileged ports in its pod: `web` takes the traffic, `traefik` answers the health check (`/ping`). */
export const PROXY_PORT = 8000;
const PING_PORT = 8080;
/** The uid of the proxy's pod (Traefik's image defaults to root; the ports above need no privilege). */
const TRAEFIK_UID = 65532;
/** A cookie that never expires, as far as a browser is concerned: 2^31 - 1 seconds (~68 years). */
export const STICKY_MAX_AGE = 2147483647;
const TRAEFIK_GROUP = 'traefik.io';
/** Every kind Traefik's CRD provider watches: it waits for all of them to be listable before serving. */
const TRAEFIK_KINDS = ['IngressRoute', 'IngressRouteTCP', 'IngressRouteUDP', 'Middleware', 'MiddlewareTCP', 'ServersTransport', 'ServersTransportTCP', 'TLSOption', 'TLSStore', 'TraefikService'];

/** Whether svc runs its own proxy (no `ingress_class`). */
export function ownProxy(spec: DeploySpec): boolean {
  return spec.ingress.className === '';
}

/** A route of the ingress: a path prefix and the Service behind it. */
export interface Route {
  path: string;
  service: string;
  port: number;
  /** The kv dashboard: behind the proxy's basic auth. */
  basicAuth?: boolean;
  sticky?: boolean;
}

/**
 * The routes, most specific first: `/metrics-ui` (monitoring), `/cache-dashboard` and `/db-dashboard` (when deployed), `/`.
 *
 * @example
 * ingressRoutes(spec).map((r) => r.path) // ['/metrics-ui', '/', …]
 */
export function ingressRoutes(spec: DeploySpec): Route[] {
  const out: Route[] = [];
  if (spec.monitoring.enabled) out.push({ path: '/metrics-ui', service: nameOf(spec, 'grafana'), port: GRAFANA_PORT });
  if (kvDashboardEnabled(spec)) out.push({ path: '/cache-dashboard', service: nameOf(spec, 'kv-dashboard'), port: KV_DASHBOARD_PORT, basicAuth: true });
  if (docdbDashboardEnabled(spec)) out.push({ path: '/db-dashboard', service: nameOf(spec, 'docdb-dashboard'), port: DASHBOARD_PORT });
  out.push({ path: '/', service: nameOf(spec), port: spec.port, sticky: spec.ingress.sticky });
  return out;
}

/** The CRDs of the proxy (cluster-scoped): a minimal schema that keeps every field; the apply creates them only where absent. */
function traefikCrds(spec: DeploySpec): K8sObject[] {
  return TRAEFIK_KINDS.map((kind) => {
    const plural = `${kind.toLowerCase()}s`;
    return {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      // An existing definition (a cluster that runs Traefik already) is the one to keep: it carries the full schema.
      metadata: clusterMeta(spec, `${plural}.${TRAEFIK_GROUP}`, 'ingress', { 'svc.dev/apply': 'create-only' }),
      spec: {
        group: TRAEFIK_GROUP,
        names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
        scope: 'Namespaced',
        versions: [{ name: 'v1alpha1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    };
  });
}

/** ServiceAccount, Role and RoleBinding of the proxy: it reads its routes, Services, endpoints and Secrets in this namespace only. */
function proxyRbac(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'ingress');
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(spec, name, 'ingress'), automountServiceAccountToken: true },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(spec, name, 'ingress'),
      rules: [
        { apiGroups: [''], resources: ['secrets', 'services'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
        // The Ingress provider: cert-manager's HTTP-01 solver publishes its challenge as an Ingress (`--enable-tls`).
        { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [TRAEFIK_GROUP], resources: TRAEFIK_KINDS.map((k) => `${k.toLowerCase()}s`), verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(spec, name, 'ingress'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: spec.namespace }],
    },
  ];
}

/** The proxy's command line. */
function proxyArgs(spec: DeploySpec): string[] {
  return [
    `--entryPoints.web.address=:${PROXY_PORT}`,
    `--entryPoints.traefik.address=:${PING_PORT}`,
    // Traefik v3 cuts a request body still being read after 60 s by default; long uploads and streams are the app's to bound.
    '--entryPoints.web.transport.respondingTimeouts.readTimeout=0s',
    '--ping=true',
    '--ping.entryPoint=traefik',
    '--providers.kubernetescrd=true',
    `--providers.kubernetescrd.namespaces=${spec.namespace}`,
    // Only this app's routes: another svc app in the namespace runs its own proxy.
    `--providers.kubernetescrd.labelSelector=app.kubernetes.io/name=${spec.app}`,
    '--providers.kubernetescrd.allowCrossNamespace=false',
    // No Nodes (cluster-scoped): the Role above is all it may read.
    '--providers.kubernetescrd.disableClusterScopeResources=true',
    // Ingresses of this app only: those of cert-manager's HTTP-01 solver (labelled by the Issuer `--enable-tls` makes).
    '--providers.kubernetesingress=true',
    `--providers.kubernetesingress.namespaces=${spec.namespace}`,
    `--providers.kubernetesingress.labelSelector=app.kubernetes.io/name=${spec.app}`,
    // Their class (an annotation cert-manager sets, which a cluster's default IngressClass does not override).
    `--providers.kubernetesingress.ingressClass=svc-${spec.app}`,
    '--providers.kubernetesingress.disableClusterScopeResources=true',
    '--global.checkNewVersion=false',
    '--global.sendAnonymousUsage=false',
    '--log.level=INFO',
  ];
}

/** The proxy's Deployment `{app}-ingress` and its NodePort Service `{app}-ingress`. */
function proxy(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'ingress');
  const deployment: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, name, 'ingress'),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorLabels(spec, 'ingress') },
      template: {
        metadata: { labels: labels(spec, 'ingress') },
        spec: {
          serviceAccountName: name,
          // The one pod here that talks to the API server (its routes are Kubernetes objects).
          automountServiceAccountToken: true,
          securityContext: podSecurity(TRAEFIK_UID),
          containers: [
            {
              name: 'traefik',
              image: IMAGES.traefik,
              args: proxyArgs(spec),
              ports: [
                { name: 'web', containerPort: PROXY_PORT, protocol: 'TCP' },
                { name: 'traefik', containerPort: PING_PORT, protocol: 'TCP' },
              ],
              readinessProbe: { httpGet: { path: '/ping', port: 'traefik' }, initialDelaySeconds: 2, periodSeconds: 10 },
              livenessProbe: { httpGet: { path: '/ping', port: 'traefik' }, initialDelaySeconds: 10, periodSeconds: 20, failureThreshold: 3 },
              securityContext: containerSecurity(),
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  };
  const service: K8sObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(spec, name, 'ingress'),
    spec: {
      type: 'NodePort',
      // The client's own address reaches the proxy (the per-IP limits count clients, not nodes); the node port answers on
      // the node(s) running the proxy.
      externalTrafficPolicy: 'Local',
      selector: selectorLabels(spec, 'ingress'),
      ports: [{ name: 'web', port: 80, targetPort: 'web', nodePort: spec.nodePort, protocol: 'TCP' }],
    },
  };
  return [service, deployment];
}

/** Annotations of the CRD objects when the cluster's Traefik serves them. */
function classAnnotations(spec: DeploySpec): Record<string, string> | undefined {
  return ownProxy(spec) ? undefined : { 'kubernetes.io/ingress.class': spec.ingress.className };
}

/** The per-client-IP limits and the dashboard's basic auth. */
function middlewares(spec: DeploySpec): K8sObject[] {
  const perIp = { ipStrategy: { depth: 0 } };
  const mw = (suffix: string, body: Record<string, unknown>): K8sObject => ({
    apiVersion: `${TRAEFIK_GROUP}/v1alpha1`,
    kind: 'Middleware',
    metadata: meta(spec, nameOf(spec, suffix), 'ingress', classAnnotations(spec)),
    spec: body,
  });
  const out = [
    mw('ratelimit', { rateLimit: { average: spec.ingress.rps, burst: spec.ingress.burst, period: '1s', sourceCriterion: perIp } }),
    mw('inflight', { inFlightReq: { amount: spec.ingress.connections, sourceCriterion: perIp } }),
  ];
  if (kvDashboardEnabled(spec)) out.push(mw('kv-dashboard-auth', { basicAuth: { secret: secretNames(spec).kvDashboard, realm: `${spec.app} cache dashboard` } }));
  return out;
}

/**
 * A route's rule: by path only, so the app answers by the node's address and by its domain alike until TLS is
 * enabled (`--enable-tls` binds the routes to the domain: deploy/cluster/tls.ts).
 */
function match(path: string): string {
  return `PathPrefix(\`${path}\`)`;
}

/** The IngressRoute `{app}`: every route through the limits; the app's with the sticky cookie. */
function ingressRoute(spec: DeploySpec): K8sObject {
  const limits = [nameOf(spec, 'ratelimit'), nameOf(spec, 'inflight')];
  const routes = ingressRoutes(spec).map((r) => {
    const names = r.basicAuth ? [...limits, nameOf(spec, 'kv-dashboard-auth')] : limits;
    const service: Record<string, unknown> = { kind: 'Service', name: r.service, port: r.port };
    if (r.sticky) service.sticky = { cookie: { name: 'route', maxAge: STICKY_MAX_AGE, httpOnly: true, sameSite: 'lax', secure: false } };
    return { kind: 'Rule', match: match(r.path), middlewares: names.map((name) => ({ name, namespace: spec.namespace })), services: [service] };
  });
  return {
    apiVersion: `${TRAEFIK_GROUP}/v1alpha1`,
    kind: 'IngressRoute',
    metadata: meta(spec, nameOf(spec), 'ingress', classAnnotations(spec)),
    spec: { entryPoints: ['web'], routes },
  };
}

/** A plain Ingress `{app}` of another controller's class: the same paths. */
function plainIngress(spec: DeploySpec): K8sObject {
  const paths = ingressRoutes(spec).map((r) => ({ path: r.path, pathType: 'Prefix', backend: { service: { name: r.service, port: { number: r.port } } } }));
  // No host until TLS is enabled: reachable by address and by domain alike.
  const rule: Record<string, unknown> = { http: { paths } };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: meta(spec, nameOf(spec), 'ingress'),
    spec: { ingressClassName: spec.ingress.className, rules: [rule] },
  };
}

/**
 * Every object of the ingress, by the class in use.
 *
 * @example
 * ingressObjects(spec).map((o) => o.kind) // ['CustomResourceDefinition', …, 'Middleware', 'IngressRoute']
 */
export function ingressObjects(spec: DeploySpec): K8sObject[] {
  const cls = spec.ingress.className;
  if (cls === '') return [...traefikCrds(spec), ...proxyRbac(spec), ...proxy(spec), ...middlewares(spec), ingressRoute(spec)];
  if (cls === 'traefik') return [...middlewares(spec), ingressRoute(spec)];
  return [plainIngress(spec)];
}
