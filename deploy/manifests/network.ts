/**
 * NetworkPolicies: incoming traffic to this app's pods is denied unless a
 * rule below lets it in — the ingress proxy takes traffic from anywhere on
 * its port; the app takes it from the proxy and Prometheus on its port and
 * from its own pods on any port (cluster members link to each other);
 * each database takes it only from the app and its own dashboard; the
 * dashboards and the metrics UI only from the proxy. Only pods labelled as
 * this app's (`managed: svc-scale` and its name) are selected: other
 * workloads of a shared namespace (`default`) are left as they are.
 *
 * Outgoing traffic is left open: apps call identity providers, webhooks and
 * external databases. Traffic from the node itself (the kubelet's probes)
 * is not subject to these policies.
 */
import { MANAGED_LABEL, type DeploySpec, type K8sObject } from '../spec.ts';
import { meta, nameOf, selectorLabels, type Component } from './common.ts';
import { DASHBOARD_PORT } from './docdb.ts';
import { GRAFANA_PORT, LOKI_PORT } from './grafana.ts';
import { PROXY_PORT, ownProxy } from './ingress.ts';
import { KV_DASHBOARD_PORT } from './kv.ts';
import { PROMETHEUS_PORT } from './monitoring.ts';
import { DOCDB_PORT, KV_PORT, docdbDashboardEnabled, kvDashboardEnabled } from './secrets.ts';

const KSM_PORT = 8080;

/** An ingress rule: from these components' pods (any source when `from` is undefined), on these TCP ports (any port when empty). */
interface Rule {
  from?: Component[];
  ports: number[];
}

function policy(spec: DeploySpec, component: Component, rules: Rule[]): K8sObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(spec, nameOf(spec, `allow-${component}`), component),
    spec: {
      podSelector: { matchLabels: selectorLabels(spec, component) },
      policyTypes: ['Ingress'],
      ingress: rules.map((r) => ({
        ...(r.from ? { from: r.from.map((c) => ({ podSelector: { matchLabels: selectorLabels(spec, c) } })) } : {}),
        ...(r.ports.length > 0 ? { ports: r.ports.map((port) => ({ protocol: 'TCP', port })) } : {}),
      })),
    },
  };
}

/**
 * Every NetworkPolicy: the default deny first, then what each component lets in.
 *
 * @example
 * networkPolicies(spec)[0].metadata.name // 'shop-default-deny'
 */
export function networkPolicies(spec: DeploySpec): K8sObject[] {
  // The cluster's own controller (another namespace, perhaps the host network) is not ours to name: its port is open.
  const proxy: Component[] | undefined = ownProxy(spec) ? ['ingress'] : undefined;
  const monitoring = spec.monitoring.enabled;
  const out: K8sObject[] = [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta(spec, nameOf(spec, 'default-deny'), 'cluster'),
      spec: { podSelector: { matchLabels: { 'app.kubernetes.io/name': spec.app, ...MANAGED_LABEL } }, policyTypes: ['Ingress'] },
    },
  ];
  const appRules: Rule[] = [{ from: proxy, ports: [spec.port] }, { from: ['app'], ports: [] }];
  if (monitoring) appRules.push({ from: ['prometheus'], ports: [spec.port] });
  out.push(policy(spec, 'app', appRules));
  if (ownProxy(spec)) out.push(policy(spec, 'ingress', [{ ports: [PROXY_PORT] }]));
  if (spec.docdb.provision) {
    out.push(policy(spec, 'docdb', [{ from: docdbDashboardEnabled(spec) ? ['app', 'docdb-dashboard'] : ['app'], ports: [DOCDB_PORT[spec.docdb.engine]] }]));
    if (docdbDashboardEnabled(spec)) out.push(policy(spec, 'docdb-dashboard', [{ from: proxy, ports: [DASHBOARD_PORT] }]));
  }
  if (spec.kv.provision) {
    out.push(policy(spec, 'kv', [{ from: kvDashboardEnabled(spec) ? ['app', 'kv-dashboard'] : ['app'], ports: [KV_PORT] }]));
    if (kvDashboardEnabled(spec)) out.push(policy(spec, 'kv-dashboard', [{ from: proxy, ports: [KV_DASHBOARD_PORT] }]));
  }
  if (monitoring) {
    out.push(policy(spec, 'grafana', [{ from: proxy, ports: [GRAFANA_PORT] }]));
    out.push(policy(spec, 'prometheus', [{ from: ['grafana'], ports: [PROMETHEUS_PORT] }]));
    if (spec.monitoring.k8sMetrics) out.push(policy(spec, 'kube-state-metrics', [{ from: ['prometheus'], ports: [KSM_PORT] }]));
    if (spec.monitoring.logPipeline) out.push(policy(spec, 'loki', [{ from: ['log-collector', 'grafana'], ports: [LOKI_PORT] }]));
  }
  return out;
}
