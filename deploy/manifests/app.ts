/**
 * The app: its Deployment (`svc start` in the app's image, the image's own
 * command), its ClusterIP Service, the autoscaler and the disruption budget.
 * With sandboxes as pods the pods run as the app's own ServiceAccount with its
 * token and know it (`POD_SERVICE_ACCOUNT`, `POD_NAMESPACE`: sandbox.ts); else
 * they mount no token.
 *
 * A rolling deploy drops no request: a new pod takes traffic only once ready
 * (`maxSurge: 1, maxUnavailable: 0`); a pod being replaced first pauses
 * (`preStop`) so the endpoints controller and the ingress take it out of
 * rotation, then gets SIGTERM and drains — WebSocket clients are closed with
 * 4503 (svc is going away) and reconnect to another pod — within `terminationGracePeriodSeconds`,
 * which is above svc's drain deadline.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { APP_DIR, APP_UID, CHECKSUM_ANNOTATION, clusterIpService, containerSecurity, env, labels, meta, nameOf, podSecurity, scratch, secretEnv, selectorLabels, serviceHost, waitFor } from './common.ts';
import { appSandboxEnv, sandboxNames } from './sandbox.ts';
import { DOCDB_PORT, KV_PORT, docdbUri, jwtRef, kvUrl, secretNames } from './secrets.ts';

export { APP_DIR, APP_UID } from './common.ts';

/** Seconds a terminating pod keeps serving before SIGTERM, so it leaves the endpoints (and the proxy) first. */
export const PRE_STOP_SECONDS = 5;
/** Seconds of margin above svc's drain deadline before the kubelet kills the pod. */
export const GRACE_MARGIN_SECONDS = 5;

/**
 * `terminationGracePeriodSeconds` of the app's pods: the preStop pause, svc's drain deadline and a margin.
 *
 * @example
 * graceSeconds({ ...spec, shutdownTimeoutMs: 10_000 }) // 20
 */
export function graceSeconds(spec: DeploySpec): number {
  return PRE_STOP_SECONDS + Math.ceil(spec.shutdownTimeoutMs / 1000) + GRACE_MARGIN_SECONDS;
}

/** The container resources: only the keys set; undefined when none is. */
function resources(spec: DeploySpec): Record<string, unknown> | undefined {
  const out: Record<string, Record<string, string>> = {};
  for (const side of ['requests', 'limits'] as const) {
    const r = spec.resources[side];
    const set: Record<string, string> = {};
    if (r.cpu) set.cpu = r.cpu;
    if (r.memory) set.memory = r.memory;
    if (Object.keys(set).length > 0) out[side] = set;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Pod addresses of a cluster: private ranges (RFC 1918, RFC 4193). */
const TRUSTED_PROXIES = '10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fd00::/8';

/** The app container's environment: plain settings, and every credential by `secretKeyRef`. */
function appEnv(spec: DeploySpec): Record<string, unknown>[] {
  const names = secretNames(spec);
  const jwt = jwtRef(spec);
  const out = [
    env('NODE_ENV', 'production'),
    env('SVC_HOST', '0.0.0.0'),
    env('SVC_PORT', String(spec.port)),
    env('SVC_CLUSTER_NAME', spec.clusterName),
    { name: 'SVC_ADVERTISE_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    env('SVC_SHUTDOWN_TIMEOUT_MS', String(spec.shutdownTimeoutMs)),
    // Worker threads by the pod's CPU, not the node's cores (each opens its own database connections).
    env('SVC_WORKERS', String(spec.workers)),
    // The ingress proxy (the one way in: network.ts) sets X-Forwarded-For; its pods have cluster-private addresses, so
    // per-address limits (logins) count the clients, not the proxy.
    env('SVC_TRUSTED_PROXIES', TRUSTED_PROXIES),
    secretEnv('JWT_SECRET', jwt.secret, jwt.key),
    // The first admin's password from a Secret: without it svc would generate one and print it to the pod's log.
    secretEnv('ADMIN_DEFAULT_PASSWORD', names.admin, 'password'),
  ];
  if (spec.profile !== '') out.splice(3, 0, env('SVC_PROFILE', spec.profile));
  if (docdbUri(spec) !== '') out.push(secretEnv('DOCDB_URI', names.docdb, 'uri'));
  if (kvUrl(spec) !== '') out.push(secretEnv('KV_URL', names.kv, 'url'));
  if (spec.monitoring.enabled) {
    out.push(env('SVC_METRICS_ENABLED', 'true'));
    out.push(secretEnv('SVC_METRICS_SCRAPE_TOKEN', names.scrape, 'token'));
  }
  // Sandboxes as pods: the account and namespace the app binds the sandbox Role to (deploy/manifests/sandbox.ts).
  out.push(...appSandboxEnv(spec));
  return out;
}

/**
 * The app's Deployment `{app}`.
 *
 * @example
 * appDeployment(spec).spec // { replicas: spec.replicas.min, strategy: { type: 'RollingUpdate', … }, … }
 */
export function appDeployment(spec: DeploySpec): K8sObject {
  const data = scratch('svc-data', `${APP_DIR}/.svc`);
  const tmp = scratch('tmp', '/tmp');
  // svc keeps its worker bundles under node_modules/.cache (the root file system is read-only).
  const cache = scratch('module-cache', `${APP_DIR}/node_modules/.cache`);
  const initContainers: Record<string, unknown>[] = [];
  if (spec.docdb.provision) initContainers.push(waitFor(spec, 'wait-docdb', serviceHost(spec, nameOf(spec, 'docdb')), DOCDB_PORT[spec.docdb.engine]));
  if (spec.kv.provision) initContainers.push(waitFor(spec, 'wait-kv', serviceHost(spec, nameOf(spec, 'kv')), KV_PORT));
  const res = resources(spec);
  const container: Record<string, unknown> = {
    name: 'app',
    image: spec.images.app,
    ports: [{ name: 'http', containerPort: spec.port, protocol: 'TCP' }],
    env: appEnv(spec),
    ...(Object.keys(spec.appSecrets).length > 0 ? { envFrom: [{ secretRef: { name: secretNames(spec).app } }] } : {}),
    ...(res ? { resources: res } : {}),
    readinessProbe: {
      httpGet: { path: spec.probes.readinessPath, port: 'http' },
      initialDelaySeconds: spec.probes.readinessInitialDelay,
      periodSeconds: spec.probes.readinessPeriod,
    },
    livenessProbe: {
      httpGet: { path: spec.probes.livenessPath, port: 'http' },
      initialDelaySeconds: spec.probes.livenessInitialDelay,
      periodSeconds: spec.probes.livenessPeriod,
      failureThreshold: spec.probes.livenessFailureThreshold,
    },
    // The image is Debian-based Node: /bin/sh exists (an exec hook works on every cluster version, unlike `sleep`).
    lifecycle: { preStop: { exec: { command: ['/bin/sh', '-c', `sleep ${PRE_STOP_SECONDS}`] } } },
    securityContext: containerSecurity(),
    volumeMounts: [data.mount, tmp.mount, cache.mount],
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, nameOf(spec), 'app'),
    spec: {
      // With an autoscaler the replica count is its own: an apply that set it would scale the app back to min_replicas.
      ...(spec.resources.requests.cpu ? {} : { replicas: spec.replicas.min }),
      // Declared, not left to defaults: the deadline a stalled rollout is failed (and rolled back) at, the revisions kept for rollback.
      progressDeadlineSeconds: spec.rollout.progressDeadlineSeconds,
      revisionHistoryLimit: spec.rollout.revisionHistoryLimit,
      selector: { matchLabels: selectorLabels(spec, 'app') },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: labels(spec, 'app'), annotations: { [CHECKSUM_ANNOTATION]: spec.configChecksum } },
        spec: {
          // Its own account and token only when it makes sandbox pods through the API server; else no token at all.
          ...(spec.sandbox ? { serviceAccountName: sandboxNames(spec).appAccount, automountServiceAccountToken: true } : { automountServiceAccountToken: false }),
          securityContext: podSecurity(APP_UID),
          terminationGracePeriodSeconds: graceSeconds(spec),
          ...(initContainers.length > 0 ? { initContainers } : {}),
          containers: [container],
          volumes: [data.volume, tmp.volume, cache.volume],
        },
      },
    },
  };
}

/**
 * The app's ClusterIP Service `{app}` on its port.
 *
 * @example
 * appService(spec).spec // { type: 'ClusterIP', ports: [{ name: 'http', port: spec.port, targetPort: 'http', … }], … }
 */
export function appService(spec: DeploySpec): K8sObject {
  return clusterIpService(spec, nameOf(spec), 'app', [{ name: 'http', port: spec.port }]);
}

/**
 * The autoscaler `{app}-hpa` (autoscaling/v2, CPU): only with a CPU request, which utilisation is measured against.
 *
 * @example
 * appAutoscaler(spec) // undefined without spec.resources.requests.cpu
 */
export function appAutoscaler(spec: DeploySpec): K8sObject | undefined {
  if (!spec.resources.requests.cpu) return undefined;
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: meta(spec, nameOf(spec, 'hpa'), 'app'),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: nameOf(spec) },
      minReplicas: spec.replicas.min,
      maxReplicas: spec.replicas.max,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: spec.replicas.cpuTarget } } }],
    },
  };
}

/**
 * The disruption budget `{app}-pdb` (one pod down at a time during node drains): only when more than one replica is allowed.
 *
 * @example
 * appDisruptionBudget({ ...spec, replicas: { min: 1, max: 1, cpuTarget: 50 } }) // undefined
 */
export function appDisruptionBudget(spec: DeploySpec): K8sObject | undefined {
  if (spec.replicas.max <= 1) return undefined;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: meta(spec, nameOf(spec, 'pdb'), 'app'),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(spec, 'app') } },
  };
}

/**
 * Every object of the app.
 *
 * @example
 * appObjects(spec).map((o) => o.kind) // ['Service', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget']
 */
export function appObjects(spec: DeploySpec): K8sObject[] {
  return [appService(spec), appDeployment(spec), appAutoscaler(spec), appDisruptionBudget(spec)].filter((o): o is K8sObject => o !== undefined);
}
