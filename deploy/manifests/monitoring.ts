/**
 * The metrics stack, when `[scale.monitoring] enabled`: Prometheus (ClusterIP
 * only) scraping the app's pods on their metrics path with the static scrape
 * token (a Secret mounted as a file — it does not expire like an admin
 * token), and with `k8s_metrics_enabled` kube-state-metrics and
 * node-exporter; the metrics UI and the log pipeline are in grafana.ts and
 * logs.ts. Configuration files are JSON, which every YAML reader takes.
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import {
  CHECKSUM_ANNOTATION,
  IMAGES,
  checksum,
  clusterIpService,
  clusterMeta,
  configMap,
  containerSecurity,
  labels,
  meta,
  namespacedRbac,
  nameOf,
  podSecurity,
  selectorLabels,
  serviceHost,
  singleDeployment,
} from './common.ts';
import { grafanaObjects } from './grafana.ts';
import { logObjects } from './logs.ts';
import { secretNames } from './secrets.ts';

export const PROMETHEUS_PORT = 9090;
const KSM_PORT = 8080;
const KSM_TELEMETRY_PORT = 8081;
const NODE_EXPORTER_PORT = 9100;
/** nobody: Prometheus, kube-state-metrics and node-exporter images run as it. */
const NOBODY = 65534;
/** What kube-state-metrics reports on (and may list, cluster-wide: nodes and volumes are cluster-scoped). */
const KSM_RESOURCES = {
  '': ['namespaces', 'nodes', 'persistentvolumeclaims', 'persistentvolumes', 'pods', 'services'],
  apps: ['daemonsets', 'deployments', 'replicasets', 'statefulsets'],
  autoscaling: ['horizontalpodautoscalers'],
  batch: ['cronjobs', 'jobs'],
  'networking.k8s.io': ['ingresses', 'networkpolicies'],
  policy: ['poddisruptionbudgets'],
  'storage.k8s.io': ['storageclasses'],
} as const;

/** A kubernetes_sd job over this namespace's pods of one component, keeping the container port of a name. */
function podJob(spec: DeploySpec, job: string, component: string, portName: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    job_name: job,
    ...extra,
    kubernetes_sd_configs: [
      { role: 'pod', namespaces: { names: [spec.namespace] }, selectors: [{ role: 'pod', label: `app.kubernetes.io/component=${component},app.kubernetes.io/name=${spec.app}` }] },
    ],
    relabel_configs: [
      { source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: portName, action: 'keep' },
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
      { source_labels: ['__meta_kubernetes_pod_node_name'], target_label: 'node' },
    ],
  };
}

/**
 * Prometheus' configuration (`prometheus.yml`, as JSON).
 *
 * @example
 * prometheusConfig(spec).scrape_configs[0].job_name // 'svc'
 */
export function prometheusConfig(spec: DeploySpec): { global: Record<string, string>; scrape_configs: Record<string, unknown>[] } {
  const jobs = [
    podJob(spec, 'svc', 'app', 'http', { metrics_path: spec.monitoring.metricsPath, authorization: { type: 'Bearer', credentials_file: '/etc/prometheus-scrape/token' } }),
    { job_name: 'prometheus', static_configs: [{ targets: [`localhost:${PROMETHEUS_PORT}`] }] },
  ];
  if (spec.monitoring.k8sMetrics) {
    jobs.push({ job_name: 'kube-state-metrics', static_configs: [{ targets: [`${serviceHost(spec, nameOf(spec, 'kube-state-metrics'))}:${KSM_PORT}`] }] });
    jobs.push(podJob(spec, 'node-exporter', 'node-exporter', 'metrics'));
  }
  return { global: { scrape_interval: '15s', evaluation_interval: '15s' }, scrape_configs: jobs };
}

function prometheus(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'prometheus');
  const config = prometheusConfig(spec);
  const configName = nameOf(spec, 'prometheus-config');
  const podSpec = {
    serviceAccountName: name,
    // Service discovery lists the pods: this pod's token is mounted, for its Role (pods in this namespace).
    automountServiceAccountToken: true,
    securityContext: podSecurity(NOBODY),
    containers: [
      {
        name: 'prometheus',
        image: IMAGES.prometheus,
        args: ['--config.file=/etc/prometheus-config/prometheus.yml', '--storage.tsdb.path=/prometheus', '--storage.tsdb.retention.time=7d', `--web.listen-address=:${PROMETHEUS_PORT}`],
        ports: [{ name: 'http', containerPort: PROMETHEUS_PORT, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/-/ready', port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10 },
        livenessProbe: { httpGet: { path: '/-/healthy', port: 'http' }, initialDelaySeconds: 30, periodSeconds: 20 },
        securityContext: containerSecurity(),
        volumeMounts: [
          { name: 'config', mountPath: '/etc/prometheus-config', readOnly: true },
          { name: 'scrape-token', mountPath: '/etc/prometheus-scrape', readOnly: true },
          { name: 'data', mountPath: '/prometheus' },
        ],
      },
    ],
    volumes: [
      { name: 'config', configMap: { name: configName } },
      { name: 'scrape-token', secret: { secretName: secretNames(spec).scrape, defaultMode: 0o440 } },
      // A week of samples in the pod's scratch space: a restart starts the history again.
      { name: 'data', emptyDir: {} },
    ],
  };
  return [
    ...namespacedRbac(spec, name, 'prometheus', [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]),
    configMap(spec, configName, 'prometheus', { 'prometheus.yml': `${JSON.stringify(config, null, 2)}\n` }),
    clusterIpService(spec, name, 'prometheus', [{ name: 'http', port: PROMETHEUS_PORT }]),
    singleDeployment(spec, name, 'prometheus', podSpec, { [CHECKSUM_ANNOTATION]: checksum(config) }),
  ];
}

/** kube-state-metrics: the objects' state as metrics; its ClusterRole lists what it reports on (read-only). */
function kubeStateMetrics(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'kube-state-metrics');
  // Cluster-scoped names are shared by every namespace: the namespace is part of them.
  const clusterName = `${spec.app}-${spec.namespace}-kube-state-metrics`;
  const resources = Object.values(KSM_RESOURCES).flat().sort();
  const podSpec = {
    serviceAccountName: name,
    automountServiceAccountToken: true,
    securityContext: podSecurity(NOBODY),
    containers: [
      {
        name: 'kube-state-metrics',
        image: IMAGES.kubeStateMetrics,
        // Namespaced objects of this namespace only; nodes and volumes are cluster-wide by nature.
        args: [`--port=${KSM_PORT}`, `--telemetry-port=${KSM_TELEMETRY_PORT}`, `--resources=${resources.join(',')}`, `--namespaces=${spec.namespace}`],
        ports: [
          { name: 'http-metrics', containerPort: KSM_PORT, protocol: 'TCP' },
          { name: 'telemetry', containerPort: KSM_TELEMETRY_PORT, protocol: 'TCP' },
        ],
        readinessProbe: { httpGet: { path: '/readyz', port: 'telemetry' }, initialDelaySeconds: 5, periodSeconds: 10 },
        livenessProbe: { httpGet: { path: '/livez', port: 'http-metrics' }, initialDelaySeconds: 5, periodSeconds: 20 },
        securityContext: containerSecurity(),
      },
    ],
  };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(spec, name, 'kube-state-metrics'), automountServiceAccountToken: true },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: clusterMeta(spec, clusterName, 'kube-state-metrics'),
      rules: Object.entries(KSM_RESOURCES).map(([group, list]) => ({ apiGroups: [group], resources: [...list], verbs: ['list', 'watch'] })),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: clusterMeta(spec, clusterName, 'kube-state-metrics'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterName },
      subjects: [{ kind: 'ServiceAccount', name, namespace: spec.namespace }],
    },
    clusterIpService(spec, name, 'kube-state-metrics', [{ name: 'http-metrics', port: KSM_PORT }]),
    singleDeployment(spec, name, 'kube-state-metrics', podSpec),
  ];
}

/**
 * node-exporter on every node. It reads the host (its network, processes and root filesystem, read-only): no Pod
 * Security level below `privileged` admits that, which is why the namespace enforces `privileged` when it runs.
 */
function nodeExporter(spec: DeploySpec): K8sObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: meta(spec, nameOf(spec, 'node-exporter'), 'node-exporter'),
    spec: {
      selector: { matchLabels: selectorLabels(spec, 'node-exporter') },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: labels(spec, 'node-exporter') },
        spec: {
          automountServiceAccountToken: false,
          hostNetwork: true,
          hostPID: true,
          securityContext: podSecurity(NOBODY),
          tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'node-exporter',
              image: IMAGES.nodeExporter,
              args: ['--path.rootfs=/host/root', `--web.listen-address=:${NODE_EXPORTER_PORT}`],
              ports: [{ name: 'metrics', containerPort: NODE_EXPORTER_PORT, hostPort: NODE_EXPORTER_PORT, protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/', port: 'metrics' }, initialDelaySeconds: 5, periodSeconds: 20 },
              securityContext: containerSecurity(),
              volumeMounts: [{ name: 'root', mountPath: '/host/root', readOnly: true, mountPropagation: 'HostToContainer' }],
            },
          ],
          volumes: [{ name: 'root', hostPath: { path: '/' } }],
        },
      },
    },
  };
}

/**
 * Whether a pod that needs the host (node-exporter) is deployed: the namespace's Pod Security level follows.
 *
 * @example
 * needsHostAccess(spec) // true with monitoring and k8s_metrics_enabled
 */
export function needsHostAccess(spec: DeploySpec): boolean {
  return spec.monitoring.enabled && spec.monitoring.k8sMetrics;
}

/**
 * Every object of monitoring (none unless enabled).
 *
 * @example
 * monitoringObjects(spec).some((o) => o.metadata.name === 'shop-prometheus')
 */
export function monitoringObjects(spec: DeploySpec): K8sObject[] {
  if (!spec.monitoring.enabled) return [];
  const out = [...prometheus(spec)];
  if (spec.monitoring.k8sMetrics) out.push(...kubeStateMetrics(spec), nodeExporter(spec));
  out.push(...grafanaObjects(spec));
  if (spec.monitoring.logPipeline) out.push(...logObjects(spec));
  return out;
}
