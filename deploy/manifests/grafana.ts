/**
 * The metrics UI at `/metrics-ui`: Grafana, served from that sub-path, user
 * `admin` with the password of `{app}-grafana-secret` (generated when not
 * configured: never a development default), its datasources (Prometheus, and
 * Loki with the log pipeline) and svc's dashboards provisioned from
 * ConfigMaps, read-only.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { CHECKSUM_ANNOTATION, IMAGES, checksum, clusterIpService, configMap, containerSecurity, env, nameOf, podSecurity, scratch, secretEnv, serviceHost, singleDeployment } from './common.ts';
import { LOKI_UID, PROMETHEUS_UID, podLogsDashboard, svcDashboard } from './dashboards.ts';
import { secretNames } from './secrets.ts';

export const GRAFANA_PORT = 3000;
export const LOKI_PORT = 3100;
/** The grafana image's user. */
const GRAFANA_UID = 472;
const PROMETHEUS_PORT = 9090;

/**
 * The provisioning files: datasources and the dashboard provider (JSON, which Grafana's YAML reader takes).
 *
 * @example
 * grafanaProvisioning(spec)['datasources.yaml']
 */
export function grafanaProvisioning(spec: DeploySpec): Record<string, string> {
  const prometheusUrl = `http://${serviceHost(spec, nameOf(spec, 'prometheus'))}:${PROMETHEUS_PORT}`;
  const datasources: Record<string, unknown>[] = [{ name: 'Prometheus', type: 'prometheus', uid: PROMETHEUS_UID, access: 'proxy', url: prometheusUrl, isDefault: true, editable: false }];
  if (spec.monitoring.logPipeline) {
    datasources.push({ name: 'Loki', type: 'loki', uid: LOKI_UID, access: 'proxy', url: `http://${serviceHost(spec, nameOf(spec, 'loki'))}:${LOKI_PORT}`, isDefault: false, editable: false });
  }
  const providers = [{ name: 'svc', folder: 'svc', type: 'file', disableDeletion: true, allowUiUpdates: false, options: { path: '/etc/grafana/dashboards' } }];
  return {
    'datasources.yaml': `${JSON.stringify({ apiVersion: 1, datasources }, null, 2)}\n`,
    'dashboards.yaml': `${JSON.stringify({ apiVersion: 1, providers }, null, 2)}\n`,
  };
}

/**
 * The dashboards, by file name.
 *
 * @example
 * Object.keys(grafanaDashboards(spec)) // ['svc.json'] (and 'pod-logs.json' with the log pipeline)
 */
export function grafanaDashboards(spec: DeploySpec): Record<string, string> {
  const out: Record<string, string> = { 'svc.json': `${JSON.stringify(svcDashboard(spec), null, 2)}\n` };
  if (spec.monitoring.logPipeline) out['pod-logs.json'] = `${JSON.stringify(podLogsDashboard(spec), null, 2)}\n`;
  return out;
}

/**
 * Grafana's ConfigMaps, Service and Deployment `{app}-grafana`.
 *
 * @example
 * grafanaObjects(spec).map((o) => o.metadata.name) // ['shop-grafana-provisioning', 'shop-grafana-dashboards', 'shop-grafana', 'shop-grafana']
 */
export function grafanaObjects(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'grafana');
  const secret = secretNames(spec).grafana;
  const provisioning = grafanaProvisioning(spec);
  const dashboards = grafanaDashboards(spec);
  const data = scratch('data', '/var/lib/grafana');
  const tmp = scratch('tmp', '/tmp');
  const envs = [
    env('GF_SECURITY_ADMIN_USER', 'admin'),
    secretEnv('GF_SECURITY_ADMIN_PASSWORD', secret, 'admin-password'),
    secretEnv('GF_SECURITY_SECRET_KEY', secret, 'secret-key'),
    env('GF_SERVER_ROOT_URL', '%(protocol)s://%(domain)s/metrics-ui'),
    env('GF_SERVER_SERVE_FROM_SUB_PATH', 'true'),
    ...(spec.ingress.domain !== '' ? [env('GF_SERVER_DOMAIN', spec.ingress.domain)] : []),
    env('GF_USERS_ALLOW_SIGN_UP', 'false'),
    env('GF_AUTH_ANONYMOUS_ENABLED', 'false'),
    env('GF_ANALYTICS_REPORTING_ENABLED', 'false'),
    env('GF_ANALYTICS_CHECK_FOR_UPDATES', 'false'),
    env('GF_LOG_MODE', 'console'),
  ];
  const provisioningName = nameOf(spec, 'grafana-provisioning');
  const dashboardsName = nameOf(spec, 'grafana-dashboards');
  const podSpec = {
    automountServiceAccountToken: false,
    securityContext: podSecurity(GRAFANA_UID),
    containers: [
      {
        name: 'grafana',
        image: IMAGES.grafana,
        ports: [{ name: 'http', containerPort: GRAFANA_PORT, protocol: 'TCP' }],
        env: envs,
        // The health page moves with the sub-path: probe the port.
        readinessProbe: { tcpSocket: { port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10 },
        livenessProbe: { tcpSocket: { port: 'http' }, initialDelaySeconds: 30, periodSeconds: 20 },
        securityContext: containerSecurity(),
        volumeMounts: [
          data.mount,
          tmp.mount,
          { name: 'datasources', mountPath: '/etc/grafana/provisioning/datasources', readOnly: true },
          { name: 'dashboard-providers', mountPath: '/etc/grafana/provisioning/dashboards', readOnly: true },
          { name: 'dashboards', mountPath: '/etc/grafana/dashboards', readOnly: true },
        ],
      },
    ],
    volumes: [
      data.volume,
      tmp.volume,
      { name: 'datasources', configMap: { name: provisioningName, items: [{ key: 'datasources.yaml', path: 'datasources.yaml' }] } },
      { name: 'dashboard-providers', configMap: { name: provisioningName, items: [{ key: 'dashboards.yaml', path: 'dashboards.yaml' }] } },
      { name: 'dashboards', configMap: { name: dashboardsName } },
    ],
  };
  return [
    configMap(spec, provisioningName, 'grafana', provisioning),
    configMap(spec, dashboardsName, 'grafana', dashboards),
    clusterIpService(spec, name, 'grafana', [{ name: 'http', port: GRAFANA_PORT }]),
    singleDeployment(spec, name, 'grafana', podSpec, { [CHECKSUM_ANNOTATION]: checksum({ provisioning, dashboards }) }),
  ];
}
