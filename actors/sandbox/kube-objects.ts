/**
 * The Kubernetes objects of sandboxes on a cluster, as plain JSON (pure: the
 * orchestrator provider sends them, tests validate them): the namespace and
 * the Role svc manages them with, a sandbox's code ConfigMap, its pod (cold,
 * from the ConfigMap; or warm, waiting for its code), its NetworkPolicy, and
 * unless previews go through the proxy, its Service and Ingress.
 *
 * Decisions:
 * - A pod's containers restart (`restartPolicy: Always`): a dev server that
 *   exits on a config change or a crash comes back, and the pod with it.
 * - A warm pod has no deadline while idle: the claim sets one (pod time so far
 *   plus `ttl_seconds`), so a sandbox's life counts from its claim.
 * - The code ConfigMap's keys are the files' paths escaped (`/` and every
 *   character a key cannot hold as `_xx`, `_` as `_5f`), and its volume's
 *   `items` put each key back at its path: nested folders need no archive.
 * - Sandbox pods reach nothing (egress denied unless `allow_egress`) and only
 *   the proxy's pods (or, without the proxy, any namespace but the sandboxes'
 *   own: the ingress controller's) reach their port.
 */
import { createHash } from 'node:crypto';
import type { SandboxSettings } from './types.ts';

/** Kubernetes JSON. */
export type KubeObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; resourceVersion?: string; [k: string]: unknown }; [k: string]: unknown };

/** The port a sandbox's dev server listens on in its pod (the proxy's `INTERNAL_PORT`). */
export const INTERNAL_PORT = 8000;
/** A ConfigMap holds at most this much (the API server refuses more). */
export const CONFIGMAP_LIMIT = 1024 * 1024;
/** The Role svc's service account is bound to in the sandboxes' namespace. */
export const ROLE_NAME = 'svc-sandbox-manager';
/** The file a warm pod waits for before it runs the dev server. */
export const START_FILE = '/app/.svc-start';
/** What a claim tells a warm pod (the sandbox's identity, as shell exports). */
export const ENV_FILE = '/tmp/.svc-env';
/** The label the proxy's pods carry (the deployment plan sets it): the only pods a sandbox's port admits in proxy mode. */
export const PROXY_COMPONENT = 'sandbox-proxy';

export const LABELS = {
  sandbox: 'svc-sandbox',
  id: 'svc-sandbox-id',
  user: 'svc-sandbox-user',
  project: 'svc-sandbox-project',
  pool: 'svc-sandbox-pool',
} as const;

/** Annotations keep what labels cannot hold: the names as given, and when a warm pod was claimed. */
export const ANNOTATIONS = {
  user: 'svc.dev/sandbox-user',
  project: 'svc.dev/sandbox-project',
  claimed: 'svc.dev/sandbox-claimed-at',
  /** On a code ConfigMap: `{ key: [path, mode?] }` for keys that are not the path escaped (too long, or hashed) or files that are executable. */
  files: 'svc.dev/sandbox-files',
} as const;

/** A project's file as svc ships it: its bytes, and its mode (0o755 when it is executable). */
export interface ProjectFile {
  content: Uint8Array;
  mode: number;
}

/** A ConfigMap key is at most 253 characters of `[-._a-zA-Z0-9]`, and not `.`/`..`-led as the volume's own entries are. */
const MAX_KEY = 253;

const MANAGED = { 'app.kubernetes.io/managed-by': 'svc' };

/** A DNS-label-safe slug of a name: lowercase letters, digits and dashes, at most `max` characters, never empty. */
export function slug(name: string, max: number): string {
  const s = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, max)
    .replace(/-+$/, '');
  return s === '' ? 'x' : s;
}

/** `svc-sbx-{user}-{project}-{uuid}`: lowercase, DNS-safe, at most 63 characters whatever the names. */
export function podName(user: string, project: string, uuid: string): string {
  // 63 - 'svc-sbx-' - two dashes - the 8-character uuid = 45 for the names: the project 22 at most, the user the rest.
  const p = slug(project, 22);
  return `svc-sbx-${slug(user, 44 - p.length)}-${p}-${slug(uuid, 8)}`;
}

/** A label value for a name: DNS-safe and at most 63 characters (the name itself is in an annotation). */
export function labelValue(name: string): string {
  return slug(name, 63);
}

/** The ConfigMap key of a file's path: the path escaped (reversible: {@link pathOfKey}), or for a path whose escape would not be a key, a hash of it. */
export function keyOfPath(path: string): string {
  const escaped = escapePath(path);
  if (escaped.length <= MAX_KEY && !escaped.startsWith('..')) return escaped;
  return `h-${createHash('sha256').update(path).digest('hex').slice(0, 40)}`;
}

function escapePath(path: string): string {
  return Array.from(Buffer.from(path, 'utf8'))
    .map((b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9.-]/.test(c) ? c : `_${b.toString(16).padStart(2, '0')}`;
    })
    .join('');
}

export function pathOfKey(key: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < key.length; i++) {
    if (key[i] === '_') {
      bytes.push(parseInt(key.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(key.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Text goes to `data`, anything that is not valid UTF-8 (or holds a NUL) to `binaryData` as base64. */
function isText(content: Uint8Array): boolean {
  if (content.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(content);
    return true;
  } catch {
    return false;
  }
}

/** The names of a sandbox's objects. */
export function objectNames(id: string): { code: string; service: string; ingress: string; policy: string; tls: string } {
  return { code: `${id}-code`, service: `${id}-svc`, ingress: `${id}-ingress`, policy: `${id}-netpol`, tls: `${id}-tls` };
}

/** The preview host of a sandbox (`domain_template` with its id), or undefined without a template. */
export function previewHost(settings: SandboxSettings, id: string): string | undefined {
  return settings.domain_template ? settings.domain_template.replaceAll('{sandbox_id}', id) : undefined;
}

/** The sandbox's preview URL. */
export function previewUrl(settings: SandboxSettings, id: string): string {
  const host = previewHost(settings, id);
  if (host) return `${settings.tls_enabled ? 'https' : 'http'}://${host}`;
  return `http://${objectNames(id).service}.${settings.namespace}.svc.cluster.local`;
}

export function namespaceObject(settings: SandboxSettings): KubeObject {
  // Sandbox pods run users' code: the baseline policy at least (restricted when they run as a non-root user).
  const level = settings.security_context ? 'restricted' : 'baseline';
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: settings.namespace, labels: { ...MANAGED, 'pod-security.kubernetes.io/enforce': level, 'pod-security.kubernetes.io/warn': level } },
  };
}

/** What svc does in the sandboxes' namespace. */
export function roleObject(settings: SandboxSettings): KubeObject {
  const all = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: ROLE_NAME, namespace: settings.namespace, labels: MANAGED },
    rules: [
      { apiGroups: [''], resources: ['pods', 'services', 'configmaps'], verbs: all },
      { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
      { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      { apiGroups: ['networking.k8s.io'], resources: ['ingresses', 'networkpolicies'], verbs: all },
    ],
  };
}

/** The Role bound to svc's own service account (`POD_SERVICE_ACCOUNT` in `POD_NAMESPACE`). */
export function roleBindingObject(settings: SandboxSettings, serviceAccount: string, namespace: string): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `${ROLE_NAME}-${slug(namespace, 20)}-${slug(serviceAccount, 20)}`, namespace: settings.namespace, labels: MANAGED },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: ROLE_NAME },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
  };
}

export interface SandboxIdentity {
  sandbox_id: string;
  user: string;
  project: string;
}

function sandboxLabels(s: SandboxIdentity): Record<string, string> {
  return { [LABELS.sandbox]: 'true', [LABELS.id]: s.sandbox_id, [LABELS.user]: labelValue(s.user), [LABELS.project]: labelValue(s.project) };
}

function sandboxAnnotations(s: SandboxIdentity): Record<string, string> {
  return { [ANNOTATIONS.user]: s.user, [ANNOTATIONS.project]: s.project };
}

/** The volume items of a project's files: each key back at its path (executables with their mode). */
export type CodeItem = { key: string; path: string; mode?: number };

/**
 * The project as a ConfigMap: text in `data`, the rest in `binaryData`; its size as the 1 MB limit counts it (the
 * bytes of the files, not their base64), and the volume items that put it back.
 */
export function codeConfigMap(settings: SandboxSettings, s: SandboxIdentity, files: ReadonlyMap<string, ProjectFile | Uint8Array>): { object: KubeObject; bytes: number; items: CodeItem[] } {
  const data: Record<string, string> = {};
  const binaryData: Record<string, string> = {};
  const unusual: Record<string, [string, number?]> = {};
  const items: CodeItem[] = [];
  let bytes = 0;
  for (const [path, file] of files) {
    const { content, mode } = file instanceof Uint8Array ? { content: file, mode: 0o644 } : file;
    const key = keyOfPath(path);
    if (isText(content)) data[key] = Buffer.from(content).toString('utf8');
    else binaryData[key] = Buffer.from(content).toString('base64');
    bytes += key.length + content.length;
    const executable = (mode & 0o111) !== 0;
    items.push({ key, path, ...(executable ? { mode: 0o755 } : {}) });
    if (key !== escapePath(path) || executable) unusual[key] = executable ? [path, 0o755] : [path];
  }
  const annotations = { ...sandboxAnnotations(s), ...(Object.keys(unusual).length ? { [ANNOTATIONS.files]: JSON.stringify(unusual) } : {}) };
  const object: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: objectNames(s.sandbox_id).code, namespace: settings.namespace, labels: { ...MANAGED, ...sandboxLabels(s) }, annotations },
    ...(Object.keys(data).length ? { data } : {}),
    ...(Object.keys(binaryData).length ? { binaryData } : {}),
  };
  return { object, bytes: bytes + (annotations[ANNOTATIONS.files]?.length ?? 0), items };
}

/** Copies the mounted ConfigMap's files (links followed, its `..data` internals skipped) into /app, with Node (the image runs the dev server with it). */
const UNPACK = `const fs=require('fs'),p=require('path');
function copy(f,t,top){for(const n of fs.readdirSync(f)){if(top&&(n==='..data'||/^\\.\\.\\d{4}_/.test(n)))continue;const a=p.join(f,n),b=p.join(t,n);const s=fs.statSync(a);if(s.isDirectory()){fs.mkdirSync(b,{recursive:true});copy(a,b,false)}else{fs.copyFileSync(a,b);fs.chmodSync(b,s.mode&0o111?0o755:0o644)}}}
copy('/code','/app',true);`;

/** Runs the project's dev script as `npm run dev` would (its own bin folder first), once a warm pod was given its code. */
function devCommand(waitForCode: boolean): string {
  // A warm pod learns whose it is from the file its claim wrote (a running pod's environment cannot change).
  const wait = waitForCode ? `while [ ! -f ${START_FILE} ]; do sleep 0.2; done; [ -f ${ENV_FILE} ] && . ${ENV_FILE}; ` : '';
  return `${wait}cd /app && script=$(node -e "const s=(JSON.parse(require('fs').readFileSync('package.json','utf8')).scripts||{});process.stdout.write(s.dev||s.start||'')") && [ -n "$script" ] || { echo 'the project has no "dev" script (nor "start") in package.json' >&2; exit 78; }; exec sh -c "$script"`;
}

function podEnv(s: SandboxIdentity | undefined): { name: string; value: string }[] {
  const env = [
    { name: 'PORT', value: String(INTERNAL_PORT) },
    { name: 'HOST', value: '0.0.0.0' },
    { name: 'HOME', value: '/tmp' },
    { name: 'NODE_ENV', value: 'development' },
    { name: 'PATH', value: '/app/node_modules/.bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
    { name: 'CHOKIDAR_USEPOLLING', value: '1' },
    { name: 'WATCHPACK_POLLING', value: 'true' },
    { name: 'npm_lifecycle_event', value: 'dev' },
  ];
  if (s) env.unshift({ name: 'SVC_SANDBOX_ID', value: s.sandbox_id }, { name: 'SVC_SANDBOX_USER', value: s.user }, { name: 'SVC_SANDBOX_PROJECT', value: s.project });
  return env;
}

function containerSecurity(settings: SandboxSettings): Record<string, unknown> {
  return settings.security_context ? { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } } : {};
}

/**
 * A sandbox's pod. `s` undefined: a warm pod (no identity yet, waits for its code); `items`: the cold pod's code (its
 * ConfigMap's keys and their paths).
 *
 * @example
 * const pod = sandboxPod(settings, 'svc-sbx-ada-blog-1a2b3c4d', { sandbox_id, user: 'ada', project: 'blog' }, [{ key: 'package.json', path: 'package.json' }]);
 */
export function sandboxPod(settings: SandboxSettings, name: string, s: SandboxIdentity | undefined, items?: readonly CodeItem[]): KubeObject {
  const warm = s === undefined;
  const labels = warm ? { [LABELS.sandbox]: 'true', [LABELS.pool]: 'warm' } : sandboxLabels(s);
  const volumes: Record<string, unknown>[] = [
    { name: 'app', emptyDir: {} },
    { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: settings.storage_limit } },
  ];
  const mounts = [
    { name: 'app', mountPath: '/app' },
    { name: 'tmp', mountPath: '/tmp' },
  ];
  const initContainers: Record<string, unknown>[] = [];
  if (!warm) {
    volumes.push({ name: 'code', configMap: { name: objectNames(s.sandbox_id).code, items: [...(items ?? [])] } });
    initContainers.push({
      name: 'unpack',
      image: settings.base_image,
      command: ['node', '-e', UNPACK],
      volumeMounts: [{ name: 'code', mountPath: '/code', readOnly: true }, { name: 'app', mountPath: '/app' }],
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: settings.cpu_limit, memory: settings.memory_limit } },
      securityContext: containerSecurity(settings),
    });
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: settings.namespace, labels: { ...MANAGED, ...labels }, ...(warm ? {} : { annotations: sandboxAnnotations(s) }) },
    spec: {
      restartPolicy: 'Always',
      ...(warm ? {} : { activeDeadlineSeconds: settings.ttl_seconds }),
      terminationGracePeriodSeconds: 10,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      ...(settings.security_context ? { securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } } } : {}),
      ...(initContainers.length ? { initContainers } : {}),
      containers: [
        {
          name: 'dev',
          image: settings.base_image,
          workingDir: '/app',
          command: ['sh', '-c', devCommand(warm)],
          ports: [{ name: 'http', containerPort: INTERNAL_PORT }],
          env: podEnv(s),
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: settings.cpu_limit, memory: settings.memory_limit } },
          // "Answers": the port accepts connections (a dev server's / may well be a 404).
          readinessProbe: { tcpSocket: { port: INTERNAL_PORT }, periodSeconds: 1, failureThreshold: 3 },
          volumeMounts: mounts,
          securityContext: containerSecurity(settings),
        },
      ],
      volumes,
    },
  };
}

/** The labels and annotations a claimed warm pod takes (its pool label becomes `active`). */
export function claimedMetadata(s: SandboxIdentity, claimedAt: string): { labels: Record<string, string>; annotations: Record<string, string> } {
  return { labels: { ...sandboxLabels(s), [LABELS.pool]: 'active' }, annotations: { ...sandboxAnnotations(s), [ANNOTATIONS.claimed]: claimedAt } };
}

/**
 * Who may reach a sandbox's port: the proxy's pods in proxy mode (in svc's own namespace when it is known: the proxy is
 * deployed beside the app), else any namespace but the sandboxes' (the ingress controller's, wherever it runs).
 */
function admitted(settings: SandboxSettings, proxyNamespace?: string): Record<string, unknown>[] {
  if (settings.proxy_mode) {
    const namespaceSelector = proxyNamespace ? { matchLabels: { 'kubernetes.io/metadata.name': proxyNamespace } } : {};
    return [{ namespaceSelector, podSelector: { matchLabels: { 'app.kubernetes.io/component': PROXY_COMPONENT } } }];
  }
  return [{ namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [settings.namespace] }] } }];
}

/** What a sandbox pod may reach: nothing, or (with `allow_egress`) DNS and the internet but not the cluster's private ranges. */
function egress(settings: SandboxSettings): Record<string, unknown>[] {
  if (!settings.allow_egress) return [];
  return [
    { to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }] },
    { to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'] } }] },
  ];
}

/** One sandbox's NetworkPolicy (`proxyNamespace`: where the proxy runs, when known). */
export function sandboxPolicy(settings: SandboxSettings, s: SandboxIdentity, proxyNamespace?: string): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: objectNames(s.sandbox_id).policy, namespace: settings.namespace, labels: { ...MANAGED, ...sandboxLabels(s) } },
    spec: {
      podSelector: { matchLabels: { [LABELS.id]: s.sandbox_id } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: admitted(settings, proxyNamespace), ports: [{ protocol: 'TCP', port: INTERNAL_PORT }] }],
      egress: egress(settings),
    },
  };
}

/** Every sandbox pod of the namespace, warm ones included, under the same rules (what a per-sandbox policy adds to). */
export function defaultPolicy(settings: SandboxSettings, proxyNamespace?: string): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'svc-sandbox-default', namespace: settings.namespace, labels: { ...MANAGED, [LABELS.sandbox]: 'true' } },
    spec: {
      podSelector: { matchLabels: { [LABELS.sandbox]: 'true' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: admitted(settings, proxyNamespace), ports: [{ protocol: 'TCP', port: INTERNAL_PORT }] }],
      egress: egress(settings),
    },
  };
}

export function sandboxService(settings: SandboxSettings, s: SandboxIdentity): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: objectNames(s.sandbox_id).service, namespace: settings.namespace, labels: { ...MANAGED, ...sandboxLabels(s) } },
    spec: { type: 'ClusterIP', selector: { [LABELS.id]: s.sandbox_id }, ports: [{ name: 'http', port: 80, targetPort: INTERNAL_PORT, protocol: 'TCP' }] },
  };
}

export function sandboxIngress(settings: SandboxSettings, s: SandboxIdentity): KubeObject {
  const names = objectNames(s.sandbox_id);
  const host = previewHost(settings, s.sandbox_id) as string;
  const annotations: Record<string, string> = { ...settings.ingress_annotations };
  if (settings.tls_enabled) annotations['cert-manager.io/cluster-issuer'] = settings.tls_issuer;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: names.ingress, namespace: settings.namespace, labels: { ...MANAGED, ...sandboxLabels(s) }, ...(Object.keys(annotations).length ? { annotations } : {}) },
    spec: {
      ...(settings.ingress_class ? { ingressClassName: settings.ingress_class } : {}),
      ...(settings.tls_enabled ? { tls: [{ hosts: [host], secretName: names.tls }] } : {}),
      rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: names.service, port: { number: 80 } } } }] } }],
    },
  };
}
