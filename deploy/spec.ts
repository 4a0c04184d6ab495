/**
 * The deployment as the manifests see it: every `[scale.orchestrator]`,
 * `[scale.monitoring]`, `[scale.database]` and `[scale.secrets]` value
 * checked, defaulted and normalised (deploy/config.ts makes it), plus the
 * credentials the plan generates. The manifest builders read nothing else.
 */

import type { K8sObject } from '../kube/index.ts';

/** A Kubernetes object as sent to the API server (plain JSON): the kube room's. */
export type { K8sObject };

/** A JSON object of unknown shape, as the API server answers it. */
export type Json = Record<string, unknown>;

/** The condition of `type` in an object's `status.conditions` (a Deployment's `Available`, a pod's `Ready`, a Certificate's `Ready`). */
export function conditionOf(o: Json | undefined, type: string): Json | undefined {
  const conditions = (o?.status as Json | undefined)?.conditions;
  return Array.isArray(conditions) ? (conditions as Json[]).find((c) => c !== null && typeof c === 'object' && c.type === type) : undefined;
}

/** The component an object belongs to: its `app.kubernetes.io/component` label, `cluster` for cluster-wide kinds, else `app`. */
export function componentOf(o: K8sObject): string {
  const label = o.metadata.labels?.['app.kubernetes.io/component'];
  if (label) return label;
  if (o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition') return 'cluster';
  return 'app';
}

/** A credential: its value, and whether svc generated it (random, once) or the user configured it. */
export interface Credential {
  value: string;
  generated: boolean;
}

export interface DeploySpec {
  /** `[scale.orchestrator] app_name`, a DNS-1123 label (the prefix of every name). */
  app: string;
  namespace: string;
  /** The app's port in the pod (`container_port`; the pods run `svc start` on it). */
  port: number;
  /** The ingress proxy's node port. */
  nodePort: number;
  docdb: {
    /** False: `[scale.database] docdb_uri` is set (uri holds it) or `docdb_enabled = false`. */
    provision: boolean;
    /** The external database's URI when not provisioned ('' when none: the pods keep SQLite in their own folder, a warning). */
    uri: string;
    engine: 'postgres' | 'mongo';
    username: string;
    password: Credential;
    /** The database svc uses (`svc_db`). */
    database: string;
    pvcSize: string;
    storageClass: string;
    dashboard: { enabled: boolean; username: string; password: Credential };
  };
  kv: {
    provision: boolean;
    /** The external Redis URL when not provisioned ('' when none: one pod, no cluster — a warning). */
    url: string;
    username: string;
    password: Credential;
    pvcSize: string;
    storageClass: string;
    dashboard: { enabled: boolean; username: string; password: Credential };
  };
  /** Container resources: only the keys set (Kubernetes quantities, normalised: `K` → `k`). */
  resources: { requests: { cpu?: string; memory?: string }; limits: { cpu?: string; memory?: string } };
  probes: {
    readinessPath: string;
    livenessPath: string;
    readinessInitialDelay: number;
    readinessPeriod: number;
    livenessInitialDelay: number;
    livenessPeriod: number;
    livenessFailureThreshold: number;
  };
  replicas: { min: number; max: number; cpuTarget: number };
  /** The app's rollouts: the deadline one may go without progress, and the old revisions kept for rollback. */
  rollout: { progressDeadlineSeconds: number; revisionHistoryLimit: number };
  ingress: {
    /** '' : svc's own Traefik proxy; 'traefik': the cluster's Traefik (CRDs); another: a plain networking.k8s.io Ingress of that class. */
    className: string;
    rps: number;
    burst: number;
    connections: number;
    sticky: boolean;
    domain: string;
    certManagerEmail: string;
    /** The ACME directory of `--enable-tls`. */
    acmeServer: string;
    /** Where `--enable-tls` installs cert-manager from when the cluster has none (a URL or a file). */
    certManagerManifest: string;
  };
  monitoring: {
    enabled: boolean;
    k8sMetrics: boolean;
    logPipeline: boolean;
    /** The metrics UI's `admin` password. */
    adminPassword: Credential;
    /** The bearer token Prometheus scrapes the app's metrics endpoint with (`SVC_METRICS_SCRAPE_TOKEN` in the pods). */
    scrapeToken: Credential;
    /** The app's metrics endpoint (`[scale.metrics] endpoint`). */
    metricsPath: string;
    /** The prefix of svc's metric names (`[scale.metrics] namespace`; absent: `svc`), for the metrics UI's dashboards. */
    metricsNamespace?: string;
  };
  images: {
    /** The app's image, `{registry}/{app}:{tag}` or `[scale.orchestrator] image`. */
    app: string;
    busybox: string;
  };
  /** The app's `[scale.secrets]`, `${ENV}` resolved. */
  appSecrets: Record<string, string>;
  /** The JWT secret every pod shares (configured in `[scale.secrets] JWT_SECRET`, else generated). */
  jwtSecret: Credential;
  /** svc's drain deadline in the pods (`[scale.server] shutdown_timeout_ms`). */
  shutdownTimeoutMs: number;
  /** The cluster name the pods join (`SVC_CLUSTER_NAME`). */
  clusterName: string;
  /** `--profile` of the deploy: the pods layer the same `svc.<profile>.toml` (`SVC_PROFILE`; '' none). */
  profile: string;
  /** Worker threads per pod (`SVC_WORKERS`): the CPU limit (else request, else 1), rounded up — not the node's cores. */
  workers: number;
  /** The admin account's first password (`ADMIN_DEFAULT_PASSWORD`; generated, so it is never only in a pod's log). */
  adminPassword: Credential;
  /** sha256 (hex) of the app's configuration (svc.toml files, the secrets' names and a hash of their values). */
  configChecksum: string;
  /** Sandboxes as Kubernetes pods (`[scale.sandbox] enabled` with `type = "orchestrator"`); absent otherwise: nothing of them is planned. */
  sandbox?: SandboxDeploy;
}

/** What the deployment provides for sandboxes run as pods (`[scale.sandbox]`, checked by deploy/config.ts). */
export interface SandboxDeploy {
  /** The namespace the app makes sandbox pods in (`namespace`, `svc-sandboxes`): never the app's own. */
  namespace: string;
  /** `security_context`: the sandbox pods run restricted (non-root 1000, no capabilities, seccomp), so the namespace enforces `restricted`; else `baseline`. */
  securityContext: boolean;
  /** `allow_egress`: sandbox pods may open connections out (else the namespace denies their egress). */
  allowEgress: boolean;
  /** The routing proxy (`proxy_mode`), absent without it. */
  proxy?: {
    /** The Ingress host of every preview: `domain_template` with `{sandbox_id}` as `*` (`*.preview.example.com`). */
    wildcardHost: string;
    /** The class of the previews' Ingress (`[scale.sandbox] ingress_class`, else `[scale.orchestrator] ingress_class`; '' svc's own Traefik). */
    ingressClass: string;
    /** `ingress_annotations`, on the previews' Ingress (they win over svc's own). */
    annotations: Record<string, string>;
    /** The ClusterIssuer of the wildcard certificate (`tls_issuer`), when `tls_enabled`. */
    tlsIssuer?: string;
    /** `preview_secret` (`${VAR}` resolved): the key preview tokens are checked with; absent: previews are public. */
    previewSecret?: string;
  };
}

/** The label every object carries. */
export const MANAGED_LABEL = { managed: 'svc-scale' } as const;
