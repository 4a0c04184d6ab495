/**
 * The metrics UI's dashboards, provisioned from ConfigMaps: svc's own
 * figures (requests, latency, WebSockets, cluster, actors, store, threads),
 * the pods' state and the nodes when `k8s_metrics_enabled`, and the pods'
 * logs when the log pipeline runs. Metric names carry the app's
 * `[scale.metrics] namespace` (`svc` by default).
 */
import type { DeploySpec } from '../spec.ts';

/** The datasource uids the provisioning names (and the panels refer to). */
export const PROMETHEUS_UID = 'prometheus';
export const LOKI_UID = 'loki';

interface Panel {
  title: string;
  /** PromQL (or LogQL for a logs panel), one query per legend. */
  queries: { expr: string; legend: string }[];
  unit?: string;
  type?: 'timeseries' | 'stat' | 'logs';
  /** Panel width on Grafana's 24-column grid (default 12). */
  width?: number;
  height?: number;
}

interface Row {
  title: string;
  panels: Panel[];
}

/** A dashboard JSON model from rows of panels, laid out left to right, top to bottom. */
function dashboard(uid: string, title: string, rows: Row[], datasource: { type: string; uid: string }): Record<string, unknown> {
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const p of row.panels) {
      const w = p.width ?? 12;
      const h = p.height ?? 8;
      if (x + w > 24) {
        x = 0;
        y += rowHeight;
        rowHeight = 0;
      }
      const type = p.type ?? 'timeseries';
      panels.push({
        id: id++,
        type,
        title: p.title,
        datasource,
        gridPos: { h, w, x, y },
        targets: p.queries.map((q, i) => ({ refId: String.fromCharCode(65 + i), datasource, expr: q.expr, legendFormat: q.legend })),
        fieldConfig: { defaults: p.unit ? { unit: p.unit } : {}, overrides: [] },
        options: type === 'logs' ? { showTime: true, wrapLogMessage: true, sortOrder: 'Descending', enableLogDetails: true } : {},
      });
      x += w;
      rowHeight = Math.max(rowHeight, h);
    }
    y += rowHeight;
  }
  return {
    uid,
    title,
    tags: ['svc'],
    editable: false,
    timezone: 'browser',
    refresh: '30s',
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-1h', to: 'now' },
    templating: { list: [] },
    annotations: { list: [] },
    panels,
  };
}

/**
 * svc's dashboard: the app's figures, and the cluster's (pods, nodes) when kube-state-metrics and node-exporter run.
 *
 * @example
 * svcDashboard(spec).title // 'shop — svc'
 */
export function svcDashboard(spec: DeploySpec): Record<string, unknown> {
  const ns = spec.monitoring.metricsNamespace ?? 'svc';
  const sel = '{job="svc"}';
  const m = (name: string): string => `${ns}_${name}`;
  const rate = (name: string, by: string): string => `sum by (${by}) (rate(${m(name)}${sel}[5m]))`;
  const quantile = (q: number, histogram: string, by = ''): string => `histogram_quantile(${q}, sum by (le${by ? `, ${by}` : ''}) (rate(${m(histogram)}_bucket${sel}[5m])))`;
  const rows: Row[] = [
    {
      title: 'HTTP',
      panels: [
        { title: 'Requests per second, by status', unit: 'reqps', queries: [{ expr: rate('http_requests_total', 'status_code'), legend: '{{status_code}}' }] },
        { title: 'Latency', unit: 's', queries: [0.5, 0.95, 0.99].map((q) => ({ expr: quantile(q, 'http_request_duration_seconds'), legend: `p${Math.round(q * 100)}` })) },
        { title: 'Requests in progress, by pod', queries: [{ expr: `sum by (pod) (${m('http_requests_in_progress')}${sel})`, legend: '{{pod}}' }] },
        { title: 'Requests refused (overload), by code', unit: 'reqps', queries: [{ expr: rate('requests_refused_total', 'code'), legend: '{{code}}' }] },
        { title: 'Slowest routes (p99)', unit: 's', queries: [{ expr: `topk(10, ${quantile(0.99, 'http_request_duration_seconds', 'method, path')})`, legend: '{{method}} {{path}}' }] },
        { title: 'Walker runs (p99), by walker', unit: 's', queries: [{ expr: quantile(0.99, 'walker_duration_seconds', 'walker_name'), legend: '{{walker_name}}' }] },
      ],
    },
    {
      title: 'Cluster and actors',
      panels: [
        { title: 'Cluster members', type: 'stat', width: 6, queries: [{ expr: `max(${m('cluster_members')}${sel})`, legend: 'members' }] },
        { title: 'WebSocket connections', type: 'stat', width: 6, queries: [{ expr: `sum(${m('websocket_connections')}${sel})`, legend: 'connections' }] },
        { title: 'Active partitions, by pod', queries: [{ expr: `sum by (pod) (${m('partitions_active')}${sel})`, legend: '{{pod}}' }] },
        { title: 'Mailbox rejections, by actor', unit: 'ops', queries: [{ expr: rate('mailbox_rejections_total', 'actor'), legend: '{{actor}}' }] },
        { title: 'Actor failures, by decision', unit: 'ops', queries: [{ expr: rate('actor_failures_total', 'actor, decision'), legend: '{{actor}} {{decision}}' }] },
      ],
    },
    {
      title: 'Store and threads',
      panels: [
        { title: 'Store commits (p99), by store', unit: 's', queries: [{ expr: quantile(0.99, 'store_commit_duration_seconds', 'store'), legend: '{{store}}' }] },
        {
          title: 'Event-loop delay (p99), by pod and thread',
          unit: 's',
          queries: [{ expr: `max by (pod, thread) (${m('thread_event_loop_delay_seconds')}{job="svc",stat="p99"})`, legend: '{{pod}} {{thread}}' }],
        },
        { title: 'Heap used, by pod', unit: 'bytes', queries: [{ expr: `sum by (pod) (${m('thread_heap_used_bytes')}${sel})`, legend: '{{pod}}' }] },
        { title: 'Events, by outcome', unit: 'ops', queries: [{ expr: rate('events_total', 'outcome'), legend: '{{outcome}}' }] },
      ],
    },
  ];
  if (spec.monitoring.k8sMetrics) {
    const nsSel = `namespace="${spec.namespace}"`;
    rows.push({
      title: 'Kubernetes',
      panels: [
        { title: 'Pods ready', queries: [{ expr: `sum by (pod) (kube_pod_status_ready{${nsSel},condition="true"})`, legend: '{{pod}}' }] },
        { title: 'Container restarts (1h)', queries: [{ expr: `sum by (pod) (increase(kube_pod_container_status_restarts_total{${nsSel}}[1h]))`, legend: '{{pod}}' }] },
        { title: 'App replicas (desired / available)', queries: [
          { expr: `kube_deployment_spec_replicas{${nsSel},deployment="${spec.app}"}`, legend: 'desired' },
          { expr: `kube_deployment_status_replicas_available{${nsSel},deployment="${spec.app}"}`, legend: 'available' },
        ] },
        { title: 'Node CPU busy', unit: 'percentunit', queries: [{ expr: '1 - avg by (node) (rate(node_cpu_seconds_total{job="node-exporter",mode="idle"}[5m]))', legend: '{{node}}' }] },
        { title: 'Node memory available', unit: 'bytes', queries: [{ expr: 'node_memory_MemAvailable_bytes{job="node-exporter"}', legend: '{{node}}' }] },
      ],
    });
  }
  return dashboard('svc-overview', `${spec.app} — svc`, rows, { type: 'prometheus', uid: PROMETHEUS_UID });
}

/**
 * The pod-logs dashboard (log pipeline): log volume by pod, and the lines themselves, of this namespace's pods.
 *
 * @example
 * podLogsDashboard(spec).uid // 'svc-pod-logs'
 */
export function podLogsDashboard(spec: DeploySpec): Record<string, unknown> {
  const sel = `{namespace="${spec.namespace}"}`;
  const rows: Row[] = [
    {
      title: 'Logs',
      panels: [
        { title: 'Log lines per second, by pod', width: 24, queries: [{ expr: `sum by (pod) (rate(${sel}[1m]))`, legend: '{{pod}}' }] },
        { title: 'App logs', type: 'logs', width: 24, height: 14, queries: [{ expr: `{namespace="${spec.namespace}",component="app"}`, legend: '' }] },
        { title: 'All pods', type: 'logs', width: 24, height: 14, queries: [{ expr: sel, legend: '' }] },
      ],
    },
  ];
  return dashboard('svc-pod-logs', `${spec.app} — pod logs`, rows, { type: 'loki', uid: LOKI_UID });
}
