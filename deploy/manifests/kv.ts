/**
 * Redis, when provisioned: a one-replica Deployment (`Recreate`: the claim is
 * ReadWriteOnce) with append-only persistence on the claim `{app}-kv-data` —
 * a restart keeps every stream, lease and queued event — its ClusterIP
 * Service `{app}-kv`, and, when asked, the dashboard at `/cache-dashboard/`
 * (Redis Commander, behind HTTP basic auth of its own as well as the
 * ingress proxy's).
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { IMAGES, clusterIpService, containerSecurity, env, labels, meta, nameOf, podSecurity, secretEnv, selectorLabels, serviceHost } from './common.ts';
import { KV_PORT, kvDashboardEnabled, secretNames } from './secrets.ts';

/** The redis (alpine) image's user and group. */
const REDIS_UID = 999;
const REDIS_GID = 1000;
/** Redis Commander's image user (it writes its generated config into its own folder: no read-only root there). */
const COMMANDER_UID = 10000;
export const KV_DASHBOARD_PORT = 8081;

/**
 * The persistent claim `{app}-kv-data` (`pvc_size`; the storage class only when set).
 *
 * @example
 * kvClaim(spec).spec // { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } } }
 */
export function kvClaim(spec: DeploySpec): K8sObject {
  const claim: Record<string, unknown> = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: spec.kv.pvcSize } } };
  if (spec.kv.storageClass !== '') claim.storageClassName = spec.kv.storageClass;
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: meta(spec, nameOf(spec, 'kv-data'), 'kv'), spec: claim };
}

/** The server's command line: the password comes from the environment (a Secret), never from the spec. */
function serverScript(spec: DeploySpec): string {
  const acl = spec.kv.username !== 'default' ? ` --user "$REDIS_USERNAME" on ">$REDIS_PASSWORD" '~*' '&*' '+@all'` : '';
  return `exec redis-server --appendonly yes --appendfsync everysec --dir /data --requirepass "$REDIS_PASSWORD"${acl}`;
}

/**
 * The Deployment `{app}-kv`.
 *
 * @example
 * kvDeployment(spec).spec.strategy // { type: 'Recreate' }
 */
export function kvDeployment(spec: DeploySpec): K8sObject {
  const secret = secretNames(spec).kv;
  // redis-cli reads its password from REDISCLI_AUTH: the probe's command carries none.
  const ping = ['/bin/sh', '-c', 'redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG'];
  const container = {
    name: 'redis',
    image: IMAGES.redis,
    command: ['/bin/sh', '-c', serverScript(spec)],
    ports: [{ name: 'redis', containerPort: KV_PORT, protocol: 'TCP' }],
    env: [secretEnv('REDIS_USERNAME', secret, 'username'), secretEnv('REDIS_PASSWORD', secret, 'password'), secretEnv('REDISCLI_AUTH', secret, 'password')],
    readinessProbe: { exec: { command: ping }, initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 5 },
    livenessProbe: { exec: { command: ping }, initialDelaySeconds: 20, periodSeconds: 20, timeoutSeconds: 5, failureThreshold: 6 },
    securityContext: containerSecurity(),
    volumeMounts: [{ name: 'data', mountPath: '/data' }],
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, nameOf(spec, 'kv'), 'kv'),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorLabels(spec, 'kv') },
      strategy: { type: 'Recreate' },
      template: {
        metadata: { labels: labels(spec, 'kv') },
        spec: {
          automountServiceAccountToken: false,
          securityContext: podSecurity(REDIS_UID, REDIS_GID),
          containers: [container],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: nameOf(spec, 'kv-data') } }],
        },
      },
    },
  };
}

/** Redis Commander `{app}-kv-dashboard` and its Service. */
function dashboardObjects(spec: DeploySpec): K8sObject[] {
  const names = secretNames(spec);
  const name = nameOf(spec, 'kv-dashboard');
  const envs = [
    env('REDIS_HOST', serviceHost(spec, nameOf(spec, 'kv'))),
    env('REDIS_PORT', String(KV_PORT)),
    ...(spec.kv.username !== 'default' ? [secretEnv('REDIS_USERNAME', names.kv, 'username')] : []),
    secretEnv('REDIS_PASSWORD', names.kv, 'password'),
    secretEnv('HTTP_USER', names.kvDashboard, 'username'),
    secretEnv('HTTP_PASSWORD', names.kvDashboard, 'password'),
    env('URL_PREFIX', '/cache-dashboard'),
    env('PORT', String(KV_DASHBOARD_PORT)),
  ];
  const deployment: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(spec, name, 'kv-dashboard'),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorLabels(spec, 'kv-dashboard') },
      template: {
        metadata: { labels: labels(spec, 'kv-dashboard') },
        spec: {
          automountServiceAccountToken: false,
          securityContext: podSecurity(COMMANDER_UID),
          containers: [
            {
              name: 'redis-commander',
              image: IMAGES.redisCommander,
              ports: [{ name: 'http', containerPort: KV_DASHBOARD_PORT, protocol: 'TCP' }],
              env: envs,
              readinessProbe: { tcpSocket: { port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10 },
              securityContext: containerSecurity(false),
            },
          ],
        },
      },
    },
  };
  return [clusterIpService(spec, name, 'kv-dashboard', [{ name: 'http', port: KV_DASHBOARD_PORT }]), deployment];
}

/**
 * Every object of the key-value store (none unless it is provisioned here).
 *
 * @example
 * kvObjects(spec).map((o) => o.kind) // ['PersistentVolumeClaim', 'Deployment', 'Service', …]
 */
export function kvObjects(spec: DeploySpec): K8sObject[] {
  if (!spec.kv.provision) return [];
  const out = [kvClaim(spec), kvDeployment(spec), clusterIpService(spec, nameOf(spec, 'kv'), 'kv', [{ name: 'redis', port: KV_PORT }])];
  if (kvDashboardEnabled(spec)) out.push(...dashboardObjects(spec));
  return out;
}
