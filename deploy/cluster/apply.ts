/**
 * Applying a plan: every object in dependency order (namespace → Secrets and
 * ConfigMaps → storage and StatefulSets → Services → workloads → autoscaler and
 * disruption budget → ingress), created when missing and updated otherwise, so a
 * second run converges and an interrupted run is finished by the next one.
 *
 * The databases are provisioned on the first deploy only: once they exist, their
 * StatefulSet, Deployment, claims, Services and credential Secrets are never
 * written again, and the credentials the plan generated are replaced by those the
 * cluster holds (read back, never regenerated: a new password would lock every
 * running pod out of its database).
 */
import { componentOf, type DeploySpec, type K8sObject } from '../spec.ts';
import { ClusterError, KubeApiError, type Kube } from './kube.ts';

/** The order objects are applied in, by kind (lower first); the kinds not named go with the workloads. */
const KIND_ORDER: Record<string, number> = {
  Namespace: 0,
  CustomResourceDefinition: 1,
  ServiceAccount: 2,
  Role: 2,
  ClusterRole: 2,
  RoleBinding: 2,
  ClusterRoleBinding: 2,
  Secret: 3,
  ConfigMap: 3,
  PersistentVolumeClaim: 4,
  StatefulSet: 5,
  Service: 6,
  Deployment: 7,
  DaemonSet: 7,
  HorizontalPodAutoscaler: 8,
  PodDisruptionBudget: 8,
  NetworkPolicy: 9,
  Middleware: 10,
  IngressRoute: 10,
  Ingress: 10,
};

/** The annotation of objects applied only when missing (shared ones such as CRDs: another app's Traefik may use them). */
export const CREATE_ONLY_ANNOTATION = 'svc.dev/apply';

/**
 * The annotation a namespace svc creates carries: the app it was made for. Only such a namespace is ever changed by a
 * later deploy (its Pod Security labels) or deleted whole by destroy; a namespace that existed before is left as it is.
 */
export const CREATED_FOR_ANNOTATION = 'svc.dev/created-for';

/** The kinds of the databases' components that are provisioned once and then left alone. */
const PROVISIONED_ONCE = new Set(['StatefulSet', 'Deployment', 'PersistentVolumeClaim', 'Secret', 'Service', 'ConfigMap']);

/**
 * The components svc provisions once: the document database and Redis, when svc runs them (an external database's
 * Secret holds only its URI, and follows the configuration).
 *
 * @example
 * provisionedOnce(spec) // Set { 'docdb', 'kv' }
 */
export function provisionedOnce(spec: DeploySpec): Set<string> {
  const out = new Set<string>();
  if (spec.docdb.provision) out.add('docdb');
  if (spec.kv.provision) out.add('kv');
  return out;
}

/** `Kind/namespace/name` (`Kind/name` for a cluster-scoped object). */
export function objectId(o: { kind: string; metadata: { name: string; namespace?: string } }): string {
  return o.metadata.namespace ? `${o.kind}/${o.metadata.namespace}/${o.metadata.name}` : `${o.kind}/${o.metadata.name}`;
}

function appOf(o: K8sObject): string {
  return o.metadata.labels?.['app.kubernetes.io/name'] ?? '';
}

/**
 * The objects in the order they are applied (stable within a rank).
 *
 * @example
 * applyOrder(objects)[0].kind // 'Namespace'
 */
export function applyOrder(objects: K8sObject[]): K8sObject[] {
  return objects
    .map((o, i) => ({ o, i, rank: KIND_ORDER[o.kind] ?? 7 }))
    .sort((a, b) => a.rank - b.rank || a.i - b.i)
    .map((x) => x.o);
}

function decode(data: Record<string, string> | undefined, key: string): string | undefined {
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

/**
 * Replace the plan's credentials with those the cluster already holds, so a later deploy reuses them: the
 * databases' always (they were initialised with them), the others when svc generated them (a configured value
 * wins, and updates its Secret). Returns what was read back, for the log.
 *
 * @example
 * const kept = await adoptCredentials(kube, spec); // ['shop-docdb-secret', 'shop-jwt-secret', …]
 */
export async function adoptCredentials(kube: Kube, spec: DeploySpec): Promise<{ adopted: string[]; warnings: string[] }> {
  const adopted: string[] = [];
  const warnings: string[] = [];
  const name = (suffix: string) => `${spec.app}-${suffix}`;
  const read = async (suffix: string) => {
    const s = await kube.read('v1', 'Secret', spec.namespace, name(suffix));
    if (s) adopted.push(name(suffix));
    return s?.data as Record<string, string> | undefined;
  };
  if (spec.docdb.provision) {
    const data = await read('docdb-secret');
    const password = decode(data, 'password');
    if (password !== undefined) {
      if (!spec.docdb.password.generated && password !== spec.docdb.password.value) {
        warnings.push(`${name('docdb-secret')}: the document database keeps the password it was provisioned with; the configured one is not applied (change it in the database first, then in the Secret)`);
      }
      spec.docdb.password = { value: password, generated: spec.docdb.password.generated };
      spec.docdb.username = decode(data, 'username') ?? spec.docdb.username;
    }
  }
  if (spec.kv.provision) {
    const data = await read('kv-secret');
    const password = decode(data, 'password');
    if (password !== undefined) {
      if (!spec.kv.password.generated && password !== spec.kv.password.value) warnings.push(`${name('kv-secret')}: Redis keeps the password it was provisioned with; the configured one is not applied`);
      spec.kv.password = { value: password, generated: spec.kv.password.generated };
      spec.kv.username = decode(data, 'username') ?? spec.kv.username;
    }
  }
  const generated: { suffix: string; key: string; get: () => { value: string; generated: boolean }; set: (v: string) => void }[] = [
    { suffix: 'jwt-secret', key: 'JWT_SECRET', get: () => spec.jwtSecret, set: (v) => (spec.jwtSecret = { value: v, generated: true }) },
    { suffix: 'admin-secret', key: 'password', get: () => spec.adminPassword, set: (v) => (spec.adminPassword = { value: v, generated: true }) },
    { suffix: 'metrics-scrape-secret', key: 'token', get: () => spec.monitoring.scrapeToken, set: (v) => (spec.monitoring.scrapeToken = { value: v, generated: true }) },
    { suffix: 'grafana-secret', key: 'admin-password', get: () => spec.monitoring.adminPassword, set: (v) => (spec.monitoring.adminPassword = { value: v, generated: true }) },
    { suffix: 'kv-dashboard-secret', key: 'password', get: () => spec.kv.dashboard.password, set: (v) => (spec.kv.dashboard.password = { value: v, generated: true }) },
    { suffix: 'docdb-dashboard-secret', key: 'password', get: () => spec.docdb.dashboard.password, set: (v) => (spec.docdb.dashboard.password = { value: v, generated: true }) },
  ];
  for (const g of generated) {
    if (!g.get().generated) continue;
    const value = decode(await read(g.suffix), g.key);
    if (value !== undefined && value !== '') g.set(value);
  }
  return { adopted, warnings };
}

/** What an apply did, object by object (`Kind/namespace/name`). */
export interface ApplyReport {
  created: string[];
  updated: string[];
  /** Left as they were: the provisioned databases, create-only objects, Secrets already holding the same values. */
  kept: string[];
  failed: { object: string; error: string }[];
}

function sameData(existing: K8sObject, desired: K8sObject): boolean {
  const want: Record<string, string> = {};
  for (const [k, v] of Object.entries((desired.stringData as Record<string, string>) ?? {})) want[k] = Buffer.from(v, 'utf8').toString('base64');
  for (const [k, v] of Object.entries((desired.data as Record<string, string>) ?? {})) want[k] = v;
  const have = (existing.data as Record<string, string>) ?? {};
  const keys = new Set([...Object.keys(want), ...Object.keys(have)]);
  for (const k of keys) if (want[k] !== have[k]) return false;
  return (existing.type ?? 'Opaque') === (desired.type ?? 'Opaque');
}

/** Create, retrying while a just-created CustomResourceDefinition is not yet served (404 for its kind). */
async function createServed(kube: Kube, o: K8sObject, deadline: number): Promise<K8sObject> {
  for (;;) {
    try {
      return await kube.create(o);
    } catch (error) {
      const notServed = error instanceof KubeApiError && error.status === 404 && /serves no/.test(error.message);
      if (!notServed || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * Apply the objects. An object the server refuses is reported and the others are still applied (a later object
 * that needs it fails on its own), so the report names exactly what is missing; the next run converges.
 *
 * @example
 * const report = await applyObjects(kube, objects, (line) => console.error(line), provisionedOnce(spec));
 * if (report.failed.length > 0) process.exit(1);
 */
export async function applyObjects(kube: Kube, objects: K8sObject[], log: (line: string) => void, once: Set<string> = new Set()): Promise<ApplyReport> {
  const report: ApplyReport = { created: [], updated: [], kept: [], failed: [] };
  const started = Date.now();
  for (const o of applyOrder(objects)) {
    const id = objectId(o);
    try {
      let existing: K8sObject | undefined;
      try {
        existing = await kube.read(o.apiVersion, o.kind, o.metadata.namespace, o.metadata.name);
      } catch (error) {
        // A user whose rights end at the namespace may not read cluster-scoped objects: the namespace and the CRDs
        // are then taken as there (an administrator made them); anything else is a failure.
        if (error instanceof KubeApiError && error.status === 403 && (o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition')) {
          log(`warning: ${id} cannot be read (403): taken as made by an administrator, left as it is`);
          report.kept.push(id);
          continue;
        }
        throw error;
      }
      if (!existing) {
        const created = o.kind === 'Namespace' ? { ...o, metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, [CREATED_FOR_ANNOTATION]: appOf(o) } } } : o;
        await createServed(kube, created, started + 60_000);
        report.created.push(id);
        continue;
      }
      if (o.kind === 'Namespace' && (existing.status as { phase?: string } | undefined)?.phase === 'Terminating') {
        throw new ClusterError('SVC_ERR_APPLY', `namespace ${o.metadata.name} is being deleted (a destroy is still finishing): run the deploy again once it is gone`);
      }
      if (o.kind === 'Namespace' && existing.metadata.annotations?.[CREATED_FOR_ANNOTATION] !== appOf(o)) {
        // Not made by svc for this app: its labels (Pod Security) are its owner's. Said when they differ from the plan's.
        const want = Object.entries(o.metadata.labels ?? {}).filter(([k, v]) => k.startsWith('pod-security.kubernetes.io/') && existing.metadata.labels?.[k] !== v);
        if (want.length > 0) {
          log(
            `warning: namespace ${o.metadata.name} existed before svc (no ${CREATED_FOR_ANNOTATION} annotation): its Pod Security labels are left as they are; the plan's are ` +
              `kubectl label --overwrite ns ${o.metadata.name} ${want.map(([k, v]) => `${k}=${v}`).join(' ')} (or adopt it for ${appOf(o)}: kubectl annotate ns ${o.metadata.name} ${CREATED_FOR_ANNOTATION}=${appOf(o)})`,
          );
        }
        report.kept.push(id);
        continue;
      }
      const createOnly = o.metadata.annotations?.[CREATE_ONLY_ANNOTATION] === 'create-only';
      if (createOnly || (once.has(componentOf(o)) && PROVISIONED_ONCE.has(o.kind))) {
        report.kept.push(id);
        continue;
      }
      if (o.kind === 'Secret' || o.kind === 'ConfigMap') {
        if (o.kind === 'Secret' && sameData(existing, o)) {
          report.kept.push(id);
          continue;
        }
        // A replace, so a key taken out of the configuration leaves the Secret too.
        await kube.replace({ ...o, metadata: { ...o.metadata, resourceVersion: (existing.metadata as { resourceVersion?: string }).resourceVersion } });
        report.updated.push(id);
        continue;
      }
      await kube.mergePatch(o);
      report.updated.push(id);
    } catch (error) {
      if (error instanceof ClusterError) throw error;
      report.failed.push({ object: id, error: (error as Error).message });
      if (o.kind === 'Namespace') break;
    }
  }
  const by = (ids: string[]) => ids.length;
  log(`applied ${objects.length} objects in ${Date.now() - started} ms: ${by(report.created)} created, ${by(report.updated)} updated, ${by(report.kept)} kept as they were${report.failed.length ? `, ${report.failed.length} failed` : ''}`);
  return report;
}
