/**
 * The deployment's configuration, checked: `[scale.orchestrator]`,
 * `[scale.monitoring]`, `[scale.database]`, `[scale.secrets]` and — when
 * sandboxes run as pods — `[scale.sandbox]` read from the loaded configuration, every problem collected (an unknown key, a bad
 * quantity, a limit below its request, min above max replicas, an unresolved
 * `${VAR}`, a name Kubernetes refuses), then made into the {@link DeploySpec}
 * the manifests are built from. Nothing here contacts anything.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SvcConfig } from '../runtime/index.ts';
import type { Credential, DeploySpec, SandboxDeploy } from './spec.ts';
import { isDnsLabel, isDnsSubdomain, parseQuantity } from './validate/index.ts';

/** The deployment cannot be planned: every problem found, one line each (the CLI exits 2). */
export class DeployConfigError extends Error {
  readonly code = 'SVC_ERR_DEPLOY_CONFIG';
  constructor(readonly problems: string[]) {
    super(`the deployment's configuration has ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Sections whose unknown keys stop a deploy (elsewhere an unknown key is a warning). */
const DEPLOY_SECTIONS = ['scale.orchestrator', 'scale.monitoring', 'scale.database'];

/** The longest suffix svc adds to the app's name (`-kv-dashboard-auth`): names stay within 63 characters. */
export const MAX_APP_NAME = 40;

/** A Service's name (DNS-1035): a DNS-1123 label that starts with a letter. */
const isServiceName = (name: string): boolean => isDnsLabel(name) && /^[a-z]/.test(name);
/** Namespaces of the cluster's own: never deployed into. */
const SYSTEM_NAMESPACES = new Set(['kube-system', 'kube-public', 'kube-node-lease']);
/** Environment variables the app's Deployment sets itself: a secret of that name would be shadowed by it. */
const SET_BY_DEPLOYMENT = ['NODE_ENV', 'SVC_HOST', 'SVC_PORT', 'SVC_PROFILE', 'SVC_WORKERS', 'SVC_CLUSTER_NAME', 'SVC_ADVERTISE_HOST', 'SVC_SHUTDOWN_TIMEOUT_MS', 'SVC_TRUSTED_PROXIES', 'DOCDB_URI', 'KV_URL', 'SVC_METRICS_ENABLED', 'SVC_METRICS_SCRAPE_TOKEN', 'ADMIN_DEFAULT_PASSWORD'];
/** A username databases take. */
const USERNAME = /^[A-Za-z0-9._-]{1,63}$/;
const CPU = /^(\d+(\.\d+)?|\.\d+)m?$/;
const MEMORY = /^(\d+(\.\d+)?|\.\d+)(Ki|Mi|Gi|Ti|K|k|M|G|T)?$/;
const IMAGE = /^[a-z0-9][a-z0-9._\-/:@]*$/i;

/** A quantity as svc.toml takes it (an upper-case `K` too) in base units (cores, bytes); NaN when it does not parse. */
function amount(value: string): number {
  return parseQuantity(normaliseQuantity(value));
}

/** The memory suffixes svc.toml takes (Ki Mi Gi K M G) as Kubernetes spells them (`K` is decimal kilo, which Kubernetes writes `k`). */
function normaliseQuantity(value: string): string {
  return value.replace(/K$/, 'k');
}

export interface DeployInput {
  config: SvcConfig;
  /** The configuration files read (their bytes go into the config checksum). */
  files: string[];
  /** loadConfig's warnings: unknown keys of the deploy sections become problems. */
  warnings: string[];
  /** Where `${VAR}` of `[scale.secrets]` is resolved. */
  env: NodeJS.ProcessEnv;
  /** The app's image reference (deploy/image decides it). */
  image: string;
  /** Random credentials (a test makes them predictable). */
  random?: () => string;
  /** `--experimental`: svc from `svc_repo_url` in the image. */
  experimental?: boolean;
  /** `--profile`: the pods layer the same `svc.<profile>.toml`. */
  profile?: string | undefined;
  /** Commands that only read or delete (status, destroy, rollback): an unresolved `${VAR}` of `[scale.secrets]` is no problem. */
  lenientSecrets?: boolean;
}

/**
 * Check the deploy sections and make the spec; throws {@link DeployConfigError}
 * with every problem found.
 *
 * @example
 * const { config, files, warnings } = loadConfig({ dir, env: process.env });
 * const { spec, warnings: notes } = deploySpec({ config, files, warnings, env: process.env, image: 'ghcr.io/me/shop:3f9a01c2e4b7' });
 */
export function deploySpec(input: DeployInput): { spec: DeploySpec; warnings: string[] } {
  const { config, env } = input;
  const o = config['scale.orchestrator'];
  const m = config['scale.monitoring'];
  const db = config['scale.database'];
  const problems: string[] = [];
  const warnings: string[] = [];
  const random = input.random ?? (() => randomBytes(24).toString('base64url'));

  for (const w of input.warnings) {
    const hit = /^(.*): unknown key ((scale\.(?:orchestrator|monitoring|database))\.(.+)) \(ignored\)$/.exec(w);
    if (hit && DEPLOY_SECTIONS.includes(hit[3] as string)) problems.push(`${hit[1]}: [${hit[3]}] ${hit[4]}: unknown key`);
  }

  if (!isServiceName(o.app_name) || o.app_name.length > MAX_APP_NAME) {
    const suggestion = o.app_name.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^[^a-z]+/, '').slice(0, MAX_APP_NAME).replace(/-+$/, '') || 'app';
    problems.push(`[scale.orchestrator] app_name ${JSON.stringify(o.app_name)}: names in Kubernetes are lower-case letters, digits and '-', at most ${MAX_APP_NAME} characters here, starting with a letter and ending with a letter or digit (e.g. ${JSON.stringify(suggestion)})`);
  }
  if (!isDnsLabel(o.namespace)) problems.push(`[scale.orchestrator] namespace ${JSON.stringify(o.namespace)}: a namespace is lower-case letters, digits and '-', at most 63 characters`);
  else if (SYSTEM_NAMESPACES.has(o.namespace)) problems.push(`[scale.orchestrator] namespace ${JSON.stringify(o.namespace)} is the cluster's own: deploy into a namespace of the app's`);
  if (o.storage_class !== '' && !isDnsSubdomain(o.storage_class)) problems.push(`[scale.orchestrator] storage_class ${JSON.stringify(o.storage_class)}: a storage class name (lower-case letters, digits, '-' and '.')`);
  for (const key of ['docdb_root_username', 'kv_username', 'kv_dashboard_username', 'docdb_dashboard_username'] as const) {
    if (!USERNAME.test(o[key])) problems.push(`[scale.orchestrator] ${key} ${JSON.stringify(o[key])}: letters, digits, '.', '_' and '-' (the databases and dashboards take no other)`);
  }
  for (const key of ['docdb_root_password', 'kv_password', 'kv_dashboard_password', 'docdb_dashboard_password'] as const) {
    if (/[\u0000-\u001f\u007f]/.test(o[key])) problems.push(`[scale.orchestrator] ${key}: a password with a line break or another control character is cut or refused by the databases`);
  }
  if (/[\u0000-\u001f\u007f]/.test(m.prometheus_admin_password)) problems.push('[scale.monitoring] prometheus_admin_password: a password with a line break or another control character');
  if (o.registry !== '' && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?(\/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$/.test(o.registry)) {
    problems.push(`[scale.orchestrator] registry ${JSON.stringify(o.registry)}: a registry host and path in lower case, without a scheme (registry.example.com/team, ghcr.io/me)`);
  }
  if (o.container_port > 65535) problems.push(`[scale.orchestrator] container_port ${o.container_port}: a port is 1–65535`);
  if (o.ingress_node_port < 30000 || o.ingress_node_port > 32767) problems.push(`[scale.orchestrator] ingress_node_port ${o.ingress_node_port}: a node port is in Kubernetes' range 30000–32767`);

  const resources: DeploySpec['resources'] = { requests: {}, limits: {} };
  const quantity = (key: 'cpu_request' | 'cpu_limit' | 'memory_request' | 'memory_limit'): string | undefined => {
    const v = o[key].trim();
    if (v === '') return undefined;
    const ok = key.startsWith('cpu') ? CPU.test(v) : MEMORY.test(v);
    if (!ok || amount(v) <= 0 || (key.startsWith('memory') && amount(v) < 4 * 2 ** 20)) {
      problems.push(`[scale.orchestrator] ${key} ${JSON.stringify(o[key])}: ${key.startsWith('cpu') ? 'a CPU quantity such as 250m, 0.5 or 2' : 'a memory quantity of at least 4Mi such as 256Mi, 1Gi, 512M or 1G (suffixes Ki Mi Gi K M G; without one it counts bytes)'}`);
      return undefined;
    }
    return normaliseQuantity(v);
  };
  for (const r of ['cpu', 'memory'] as const) {
    const request = quantity(`${r}_request`);
    const limit = quantity(`${r}_limit`);
    if (request) resources.requests[r] = request;
    if (limit) resources.limits[r] = limit;
    if (request && limit && amount(limit) < amount(request)) problems.push(`[scale.orchestrator] ${r}_limit ${limit} is below ${r}_request ${request}: a limit must be at least its request`);
  }
  if (!MEMORY.test(o.pvc_size) || amount(o.pvc_size) <= 0) problems.push(`[scale.orchestrator] pvc_size ${JSON.stringify(o.pvc_size)}: a storage quantity such as 5Gi`);
  if (o.min_replicas > o.max_replicas) problems.push(`[scale.orchestrator] min_replicas ${o.min_replicas} is above max_replicas ${o.max_replicas}`);
  if (o.max_replicas > 1 && !resources.requests.cpu) warnings.push(`no autoscaler: scaling on CPU needs [scale.orchestrator] cpu_request (SVC_SCALE_CPU_REQUEST); the app runs ${o.min_replicas} replica${o.min_replicas === 1 ? '' : 's'}`);

  let readinessPath = '/healthz/ready';
  let livenessPath = '/healthz/live';
  if (o.health_check_path !== '' && o.health_check_path !== '/health') {
    if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%\/-]*$/.test(o.health_check_path)) problems.push(`[scale.orchestrator] health_check_path ${JSON.stringify(o.health_check_path)}: a path starting with /`);
    readinessPath = livenessPath = o.health_check_path;
  }

  if (o.domain !== '' && !isDnsSubdomain(o.domain)) problems.push(`[scale.orchestrator] domain ${JSON.stringify(o.domain)}: a host name in lower case such as api.example.com`);
  if (o.domain !== '') warnings.push(`plain HTTP until \`svc start <entry> --scale --enable-tls\`: the app, the dashboards' logins and the sticky cookie travel unencrypted (${o.domain} and the node's address both reach it)`);
  if (!/^https:\/\/[^\s/]+/.test(o.acme_server)) problems.push(`[scale.orchestrator] acme_server ${JSON.stringify(o.acme_server)}: an https:// URL of an ACME directory`);
  if (o.cert_manager_email !== '' && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(o.cert_manager_email)) problems.push(`[scale.orchestrator] cert_manager_email ${JSON.stringify(o.cert_manager_email)}: an e-mail address`);
  if (o.ingress_class !== '' && !isDnsLabel(o.ingress_class)) problems.push(`[scale.orchestrator] ingress_class ${JSON.stringify(o.ingress_class)}: an ingress class name`);
  if (o.ingress_class !== '' && o.ingress_class !== 'traefik') {
    warnings.push(`ingress_class ${o.ingress_class}: a plain Ingress of that class — the per-client limits (${o.ingress_limit_rps} rps, ${o.ingress_limit_connections} connections) and sticky sessions are the controller's to configure`);
  }
  for (const key of ['busybox_image', 'image', 'base_image', 'python_image'] as const) {
    if (o[key] !== '' && !IMAGE.test(o[key])) problems.push(`[scale.orchestrator] ${key} ${JSON.stringify(o[key])}: an image reference such as registry.example.com/team/app:1.2`);
  }
  if (o.python_image !== '' && /python/i.test(o.python_image)) problems.push(`[scale.orchestrator] python_image ${JSON.stringify(o.python_image)}: svc runs on Node — name a Node image (base_image, e.g. node:20-bookworm-slim)`);

  if (o.svc_repo_url !== '' && !/^(https:\/\/|ssh:\/\/|git:\/\/|git@)[^\s'"\\]+$/.test(o.svc_repo_url)) problems.push(`[scale.orchestrator] svc_repo_url ${JSON.stringify(o.svc_repo_url)}: a git URL (https://, ssh://, git://, git@host:path)`);
  if (!/^[A-Za-z0-9._/-]+$/.test(o.svc_branch)) problems.push(`[scale.orchestrator] svc_branch ${JSON.stringify(o.svc_branch)}: a branch name`);
  if (o.svc_commit !== '' && !/^[0-9a-f]{7,40}$/.test(o.svc_commit)) problems.push(`[scale.orchestrator] svc_commit ${JSON.stringify(o.svc_commit)}: a commit id (7–40 hex digits)`);
  if (input.experimental && o.svc_repo_url === '') problems.push('--experimental installs svc from a git repository: set [scale.orchestrator] svc_repo_url (SVC_SCALE_SVC_REPO_URL)');
  if (!input.experimental && o.svc_repo_url !== '') warnings.push('[scale.orchestrator] svc_repo_url is used with --experimental only: the image carries the svc this command runs from');

  const externalUri = (key: 'docdb_uri' | 'kv_url', value: string): void => {
    if (value === '') return;
    let host = '';
    try {
      host = new URL(value).hostname;
    } catch {
      problems.push(`[scale.database] ${key}: not a URI`);
      return;
    }
    const scheme = value.slice(0, value.indexOf(':')).toLowerCase();
    const schemes = key === 'docdb_uri' ? ['postgres', 'postgresql', 'mongodb', 'mongodb+srv'] : ['redis', 'rediss'];
    if (!schemes.includes(scheme)) problems.push(`[scale.database] ${key}: a ${schemes.map((x) => `${x}://`).join(', ')} URI the pods reach (${scheme}: is not one)`);
    else if (/^(localhost|127\.|\[?::1\]?$|0\.0\.0\.0)/.test(host)) problems.push(`[scale.database] ${key} points at this machine (${host}): the pods cannot reach it — unset it (${key === 'docdb_uri' ? 'DOCDB_URI' : 'KV_URL'}) to provision the database in the cluster, or name a host the pods reach`);
  };
  externalUri('docdb_uri', db.docdb_uri);
  externalUri('kv_url', db.kv_url);
  const docdbProvision = db.docdb_uri === '' && o.docdb_enabled;
  const kvProvision = db.kv_url === '' && o.kv_enabled;
  if (!docdbProvision && db.docdb_uri === '' && o.max_replicas > 1) problems.push('docdb_enabled = false and no [scale.database] docdb_uri: replicas would each keep their own SQLite data — set max_replicas = 1, or give docdb_uri');
  else if (!docdbProvision && db.docdb_uri === '') warnings.push('no document database (docdb_enabled = false, no docdb_uri): each pod keeps its data in SQLite on an emptyDir — lost when the pod goes, and not shared between replicas');
  if (!kvProvision && db.kv_url === '') {
    if (o.max_replicas > 1) problems.push('kv_enabled = false and no [scale.database] kv_url: replicas cannot form one svc cluster without Redis — set max_replicas = 1, or give kv_url');
    else warnings.push('no Redis (kv_enabled = false, no kv_url): one pod, no cluster');
  }

  const appSecrets: Record<string, string> = {};
  for (const [name, raw] of Object.entries(config['scale.secrets'])) {
    const { value, missing } = resolveEnv(raw, env);
    if (!input.lenientSecrets) for (const v of missing) problems.push(`[scale.secrets] ${name}: \${${v}} is not set in the environment, or empty (it is resolved when you deploy, never written as is; $\${…} writes a literal \${…})`);
    if (SET_BY_DEPLOYMENT.includes(name)) problems.push(`[scale.secrets] ${name}: svc's Deployment sets ${name} itself, so this value would never reach the pods${name === 'DOCDB_URI' || name === 'KV_URL' ? ` — give an external database as [scale.database] ${name === 'DOCDB_URI' ? 'docdb_uri' : 'kv_url'}` : ''}`);
    appSecrets[name] = value;
  }

  const sandbox = sandboxDeploy(config, { appNamespace: o.namespace, appIngressClass: o.ingress_class, env, lenient: input.lenientSecrets === true, problems, warnings });
  if (sandbox) {
    for (const name of ['POD_SERVICE_ACCOUNT', 'POD_NAMESPACE']) if (name in appSecrets) problems.push(`[scale.secrets] ${name}: with sandboxes as pods svc's Deployment sets ${name} itself (the app binds the sandbox Role with it), so this value would never reach the pods`);
  }

  if (problems.length > 0) throw new DeployConfigError(problems);

  const cred = (configured: string): Credential => (configured !== '' ? { value: configured, generated: false } : { value: random(), generated: true });
  const jwtConfigured = appSecrets.JWT_SECRET || config['scale.jwt'].secret;
  const spec: DeploySpec = {
    app: o.app_name,
    namespace: o.namespace,
    port: o.container_port,
    nodePort: o.ingress_node_port,
    docdb: {
      provision: docdbProvision,
      uri: db.docdb_uri,
      engine: o.docdb_engine as 'postgres' | 'mongo',
      username: o.docdb_root_username,
      password: cred(o.docdb_root_password),
      database: 'svc_db',
      pvcSize: normaliseQuantity(o.pvc_size),
      storageClass: o.storage_class,
      dashboard: { enabled: o.docdb_dashboard, username: o.docdb_dashboard_username, password: cred(o.docdb_dashboard_password) },
    },
    kv: {
      provision: kvProvision,
      url: db.kv_url,
      username: o.kv_username,
      password: cred(o.kv_password),
      pvcSize: normaliseQuantity(o.pvc_size),
      storageClass: o.storage_class,
      dashboard: { enabled: o.kv_dashboard, username: o.kv_dashboard_username, password: cred(o.kv_dashboard_password) },
    },
    resources,
    probes: {
      readinessPath,
      livenessPath,
      readinessInitialDelay: o.readiness_initial_delay,
      readinessPeriod: o.readiness_period,
      livenessInitialDelay: o.liveness_initial_delay,
      livenessPeriod: o.liveness_period,
      livenessFailureThreshold: o.liveness_failure_threshold,
    },
    replicas: { min: o.min_replicas, max: o.max_replicas, cpuTarget: o.cpu_utilization_target },
    rollout: { progressDeadlineSeconds: o.progress_deadline_seconds, revisionHistoryLimit: o.revision_history_limit },
    ingress: {
      className: o.ingress_class,
      rps: o.ingress_limit_rps,
      burst: o.ingress_limit_rps * o.ingress_limit_burst_multiplier,
      connections: o.ingress_limit_connections,
      sticky: o.sticky_sessions,
      domain: o.domain,
      certManagerEmail: o.cert_manager_email,
      acmeServer: o.acme_server,
      certManagerManifest: o.cert_manager_manifest,
    },
    monitoring: {
      enabled: m.enabled,
      k8sMetrics: m.k8s_metrics_enabled,
      logPipeline: o.log_pipeline_enabled && m.enabled,
      adminPassword: cred(m.prometheus_admin_password),
      scrapeToken: cred(config['scale.metrics'].scrape_token),
      metricsPath: config['scale.metrics'].endpoint,
      metricsNamespace: config['scale.metrics'].namespace,
    },
    images: { app: input.image, busybox: o.busybox_image },
    appSecrets,
    jwtSecret: jwtConfigured !== undefined && jwtConfigured !== '' ? { value: jwtConfigured, generated: false } : cred(''),
    shutdownTimeoutMs: config['scale.server'].shutdown_timeout_ms,
    clusterName: config['scale.cluster'].name || o.app_name,
    profile: input.profile ?? '',
    workers: Math.max(1, Math.ceil(amount(resources.limits.cpu ?? resources.requests.cpu ?? '1'))),
    adminPassword: cred(config['scale.admin'].default_password),
    configChecksum: configChecksum(input.files, appSecrets),
    ...(sandbox ? { sandbox } : {}),
  };
  if (input.experimental && o.svc_commit === '') warnings.push(`--experimental with svc_branch ${o.svc_branch}: the image's tag does not follow the branch as it moves — pin [scale.orchestrator] svc_commit`);
  if (o.log_pipeline_enabled && !m.enabled) warnings.push('log_pipeline_enabled needs [scale.monitoring] enabled (its dashboard lives in the metrics UI): no log pipeline');
  return { spec, warnings };
}

/** `${VAR}` of the local environment in a value (`$${…}` is a literal `${…}`), and the names that are unset or empty. */
function resolveEnv(raw: string, env: NodeJS.ProcessEnv): { value: string; missing: string[] } {
  const missing: string[] = [];
  const value = raw.replace(/\$\$\{|\$\{([^}]*)\}/g, (_whole, v: string | undefined) => {
    if (v === undefined) return '${';
    const resolved = /^[A-Za-z_][A-Za-z0-9_]*$/.test(v) ? env[v] : undefined;
    if (resolved === undefined || resolved === '') missing.push(v);
    return resolved ?? '';
  });
  return { value, missing };
}

/**
 * `[scale.sandbox]` as the deployment needs it: only with `enabled` and `type = "orchestrator"` (the app makes sandbox
 * pods, so the plan gives it the namespace, the rights and — with `proxy_mode` — the routing proxy); undefined
 * otherwise. Keys are read defensively (a key the loaded configuration does not know yet takes its default).
 */
function sandboxDeploy(
  config: SvcConfig,
  ctx: { appNamespace: string; appIngressClass: string; env: NodeJS.ProcessEnv; lenient: boolean; problems: string[]; warnings: string[] },
): SandboxDeploy | undefined {
  const section = (config['scale.sandbox'] ?? {}) as Record<string, unknown>;
  const str = (key: string, fallback: string): string => (typeof section[key] === 'string' ? (section[key] as string) : fallback);
  const bool = (key: string, fallback: boolean): boolean => (typeof section[key] === 'boolean' ? (section[key] as boolean) : fallback);
  if (!bool('enabled', true) || section.type !== 'orchestrator') return undefined;
  const { problems, warnings } = ctx;
  const namespace = str('namespace', 'svc-sandboxes');
  if (!isDnsLabel(namespace)) problems.push(`[scale.sandbox] namespace ${JSON.stringify(namespace)}: a namespace is lower-case letters, digits and '-', at most 63 characters`);
  else if (namespace === ctx.appNamespace) problems.push(`[scale.sandbox] namespace ${JSON.stringify(namespace)} is the app's own ([scale.orchestrator] namespace): sandboxes run users' code, in a namespace of their own (default svc-sandboxes)`);
  else if (SYSTEM_NAMESPACES.has(namespace) || namespace === 'default') problems.push(`[scale.sandbox] namespace ${JSON.stringify(namespace)} is shared with the cluster's own workloads: name a namespace for the sandboxes alone (default svc-sandboxes)`);
  const out: SandboxDeploy = { namespace, securityContext: bool('security_context', true), allowEgress: bool('allow_egress', false) };
  if (!bool('proxy_mode', false)) {
    if (str('ingress_class', '') === '' && ctx.appIngressClass === '') {
      warnings.push(`without proxy_mode each sandbox gets an Ingress of its own in namespace ${namespace}, which svc's own Traefik does not read (it serves the app's namespace only): set [scale.sandbox] ingress_class to a controller the cluster runs, or proxy_mode = true`);
    }
    return out;
  }

  const template = str('domain_template', '');
  const rest = template.startsWith('{sandbox_id}.') ? template.slice('{sandbox_id}.'.length) : undefined;
  if (!template.includes('{sandbox_id}')) problems.push(`[scale.sandbox] proxy_mode needs domain_template with {sandbox_id} in it (e.g. "{sandbox_id}.preview.example.com"): the proxy finds a preview's sandbox by its host${template === '' ? '' : ` (got ${JSON.stringify(template)})`}`);
  else if (rest === undefined || !isDnsSubdomain(rest) || !rest.includes('.')) problems.push(`[scale.sandbox] domain_template ${JSON.stringify(template)}: with proxy_mode, {sandbox_id} is the first label of a host name in lower case ("{sandbox_id}.preview.example.com"), so one wildcard host (*.preview.example.com) covers every preview`);
  const ingressClass = str('ingress_class', '') || ctx.appIngressClass;
  if (ingressClass !== '' && !isDnsLabel(ingressClass)) problems.push(`[scale.sandbox] ingress_class ${JSON.stringify(ingressClass)}: an ingress class name`);
  const annotations: Record<string, string> = {};
  const rawAnnotations = section.ingress_annotations;
  if (rawAnnotations !== undefined && (rawAnnotations === null || typeof rawAnnotations !== 'object' || Array.isArray(rawAnnotations))) problems.push('[scale.sandbox] ingress_annotations: a table of annotation names to strings');
  else {
    for (const [key, value] of Object.entries((rawAnnotations ?? {}) as Record<string, unknown>)) {
      if (typeof value === 'string') annotations[key] = value;
      // An annotation is a string; a number written unquoted (`proxy-read-timeout = 3600`) is meant as its digits.
      else if (typeof value === 'number' && Number.isFinite(value)) annotations[key] = String(value);
      else problems.push(`[scale.sandbox] ingress_annotations.${key}: an annotation's value is a string (got ${JSON.stringify(value)}); quote it`);
    }
  }
  const tlsIssuer = str('tls_issuer', '');
  const tls = bool('tls_enabled', false);
  if (tls && tlsIssuer === '') problems.push('[scale.sandbox] tls_enabled needs tls_issuer: the name of the cert-manager ClusterIssuer that issues the previews\' wildcard certificate');
  else if (tls && !isDnsSubdomain(tlsIssuer)) problems.push(`[scale.sandbox] tls_issuer ${JSON.stringify(tlsIssuer)}: a ClusterIssuer's name`);
  if (tls && rest !== undefined) warnings.push(`the previews' certificate is a wildcard (*.${rest}): ACME issues wildcards through a DNS-01 solver only — the ClusterIssuer ${tlsIssuer || '(tls_issuer)'} must have one`);
  const secret = resolveEnv(str('preview_secret', ''), ctx.env);
  if (!ctx.lenient) for (const v of secret.missing) problems.push(`[scale.sandbox] preview_secret: \${${v}} is not set in the environment, or empty`);
  out.proxy = {
    wildcardHost: rest === undefined ? '' : `*.${rest}`,
    ingressClass,
    annotations,
    ...(tls ? { tlsIssuer } : {}),
    ...(secret.value !== '' ? { previewSecret: secret.value } : {}),
  };
  return out;
}

/** sha256 over the configuration files' bytes and the secrets (names, and a hash of each value: no value is readable from it). */
function configChecksum(files: string[], secrets: Record<string, string>): string {
  const h = createHash('sha256');
  for (const file of files) h.update(`file\0${file.split('/').pop()}\0`).update(readFileSync(file));
  for (const name of Object.keys(secrets).sort()) h.update(`secret\0${name}\0${createHash('sha256').update(secrets[name] as string).digest('hex')}\0`);
  return h.digest('hex');
}
