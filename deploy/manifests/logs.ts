/**
 * The log pipeline (`log_pipeline_enabled`, with monitoring): Loki as the log
 * store, and Grafana Alloy as the collector. Alloy tails the namespace's pod
 * logs through the Kubernetes API (`pods/log`) — no host path, no root, no
 * DaemonSet — so the pipeline keeps the namespace at the restricted Pod
 * Security level. Logs live a week in Loki's scratch space (a restart of
 * Loki starts again).
 */
import type { DeploySpec, K8sObject } from '../spec.ts';
import { CHECKSUM_ANNOTATION, IMAGES, checksum, clusterIpService, configMap, containerSecurity, namespacedRbac, nameOf, podSecurity, scratch, serviceHost, singleDeployment } from './common.ts';
import { LOKI_PORT } from './grafana.ts';

/** The loki image's user; Alloy's image creates user alloy (473). */
const LOKI_UID = 10001;
const ALLOY_UID = 473;
const ALLOY_PORT = 12345;

/**
 * Loki's configuration: one process, filesystem storage, a week of retention (JSON, which its YAML reader takes).
 *
 * @example
 * lokiConfig().limits_config // { retention_period: '168h' }
 */
export function lokiConfig(): Record<string, unknown> {
  return {
    auth_enabled: false,
    server: { http_listen_port: LOKI_PORT, grpc_listen_port: 9095, log_level: 'warn' },
    common: {
      instance_addr: '127.0.0.1',
      path_prefix: '/loki',
      replication_factor: 1,
      ring: { kvstore: { store: 'inmemory' } },
      storage: { filesystem: { chunks_directory: '/loki/chunks', rules_directory: '/loki/rules' } },
    },
    schema_config: { configs: [{ from: '2024-01-01', store: 'tsdb', object_store: 'filesystem', schema: 'v13', index: { prefix: 'index_', period: '24h' } }] },
    limits_config: { retention_period: '168h' },
    compactor: { working_directory: '/loki/compactor', retention_enabled: true, delete_request_store: 'filesystem' },
    analytics: { reporting_enabled: false },
  };
}

/**
 * The collector's configuration (Alloy syntax): this namespace's pods, labelled namespace/pod/container/component, to Loki.
 *
 * @example
 * alloyConfig(spec).includes('loki.source.kubernetes') // true
 */
export function alloyConfig(spec: DeploySpec): string {
  const rule = (from: string, to: string): string => `  rule {\n    source_labels = ["${from}"]\n    target_label  = "${to}"\n  }\n`;
  return [
    'discovery.kubernetes "pods" {\n  role = "pod"\n  namespaces {\n    names = ["' + spec.namespace + '"]\n  }\n}\n',
    'discovery.relabel "pods" {\n  targets = discovery.kubernetes.pods.targets\n' +
      rule('__meta_kubernetes_namespace', 'namespace') +
      rule('__meta_kubernetes_pod_name', 'pod') +
      rule('__meta_kubernetes_pod_container_name', 'container') +
      rule('__meta_kubernetes_pod_label_app_kubernetes_io_component', 'component') +
      '}\n',
    'loki.source.kubernetes "pods" {\n  targets    = discovery.relabel.pods.output\n  forward_to = [loki.write.default.receiver]\n}\n',
    `loki.write "default" {\n  endpoint {\n    url = "http://${serviceHost(spec, nameOf(spec, 'loki'))}:${LOKI_PORT}/loki/api/v1/push"\n  }\n}\n`,
  ].join('\n');
}

function loki(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'loki');
  const configName = nameOf(spec, 'loki-config');
  const config = lokiConfig();
  const data = scratch('data', '/loki');
  const tmp = scratch('tmp', '/tmp');
  const podSpec = {
    automountServiceAccountToken: false,
    securityContext: podSecurity(LOKI_UID),
    containers: [
      {
        name: 'loki',
        image: IMAGES.loki,
        args: ['-config.file=/etc/loki/loki.yaml'],
        ports: [{ name: 'http', containerPort: LOKI_PORT, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/ready', port: 'http' }, initialDelaySeconds: 15, periodSeconds: 10 },
        securityContext: containerSecurity(),
        volumeMounts: [{ name: 'config', mountPath: '/etc/loki', readOnly: true }, data.mount, tmp.mount],
      },
    ],
    volumes: [{ name: 'config', configMap: { name: configName } }, data.volume, tmp.volume],
  };
  return [
    configMap(spec, configName, 'loki', { 'loki.yaml': `${JSON.stringify(config, null, 2)}\n` }),
    clusterIpService(spec, name, 'loki', [{ name: 'http', port: LOKI_PORT }]),
    singleDeployment(spec, name, 'loki', podSpec, { [CHECKSUM_ANNOTATION]: checksum(config) }),
  ];
}

function collector(spec: DeploySpec): K8sObject[] {
  const name = nameOf(spec, 'log-collector');
  const configName = nameOf(spec, 'log-collector-config');
  const config = alloyConfig(spec);
  const data = scratch('data', '/var/lib/alloy');
  const tmp = scratch('tmp', '/tmp');
  const podSpec = {
    serviceAccountName: name,
    // It reads pod logs through the API server: its token is mounted, for its Role (pods and their logs, this namespace).
    automountServiceAccountToken: true,
    securityContext: podSecurity(ALLOY_UID),
    containers: [
      {
        name: 'alloy',
        image: IMAGES.alloy,
        args: ['run', '/etc/alloy/config.alloy', '--storage.path=/var/lib/alloy/data', `--server.http.listen-addr=0.0.0.0:${ALLOY_PORT}`, '--disable-reporting'],
        ports: [{ name: 'http', containerPort: ALLOY_PORT, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/-/ready', port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10 },
        securityContext: containerSecurity(),
        volumeMounts: [{ name: 'config', mountPath: '/etc/alloy', readOnly: true }, data.mount, tmp.mount],
      },
    ],
    volumes: [{ name: 'config', configMap: { name: configName } }, data.volume, tmp.volume],
  };
  return [
    ...namespacedRbac(spec, name, 'log-collector', [
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
    ]),
    configMap(spec, configName, 'log-collector', { 'config.alloy': config }),
    singleDeployment(spec, name, 'log-collector', podSpec, { [CHECKSUM_ANNOTATION]: checksum(config) }),
  ];
}

/**
 * Every object of the log pipeline.
 *
 * @example
 * logObjects(spec).map((o) => o.metadata.name)
 */
export function logObjects(spec: DeploySpec): K8sObject[] {
  return [...loki(spec), ...collector(spec)];
}
