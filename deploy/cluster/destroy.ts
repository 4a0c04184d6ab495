/**
 * `svc scale destroy <entry>`: what a deployment left in the cluster, listed in
 * full (the claims and the data in them included) before anything is deleted,
 * then deleted and waited for. The namespace goes as a whole only when it is the
 * app's own (made by svc for it, holding nothing of anyone else); in `default` or
 * a namespace shared with other apps only the objects carrying this app's labels
 * are deleted. The Traefik CRDs stay: they are shared by every app of the cluster.
 * A sandbox namespace (sandboxes as pods) goes the same way: whole when svc made it
 * for this app and it holds only this deployment's objects and sandboxes, else only
 * this deployment's objects in it (the Role `svc-sandbox-manager` too once no other
 * binding uses it).
 */
import { buildManifests, SANDBOX_MANAGER_ROLE, sandboxNames } from '../manifests/index.ts';
import type { DeploySpec, Json, K8sObject } from '../spec.ts';
import { CREATED_FOR_ANNOTATION, objectId } from './apply.ts';
import { ClusterError, KubeApiError, type Kube } from './kube.ts';
import { tlsNames } from './tls.ts';

/** The kinds a deployment makes, namespaced then cluster-scoped. */
const NAMESPACED: [string, string][] = [
  ['traefik.io/v1alpha1', 'IngressRoute'],
  ['traefik.io/v1alpha1', 'Middleware'],
  ['networking.k8s.io/v1', 'Ingress'],
  ['cert-manager.io/v1', 'Certificate'],
  ['cert-manager.io/v1', 'Issuer'],
  ['autoscaling/v2', 'HorizontalPodAutoscaler'],
  ['policy/v1', 'PodDisruptionBudget'],
  ['apps/v1', 'Deployment'],
  ['apps/v1', 'DaemonSet'],
  ['apps/v1', 'StatefulSet'],
  ['v1', 'Service'],
  ['networking.k8s.io/v1', 'NetworkPolicy'],
  ['v1', 'ConfigMap'],
  ['v1', 'Secret'],
  ['v1', 'PersistentVolumeClaim'],
  ['rbac.authorization.k8s.io/v1', 'RoleBinding'],
  ['rbac.authorization.k8s.io/v1', 'Role'],
  ['v1', 'ServiceAccount'],
];
/** Kinds made by Kubernetes from others (events, endpoints, leases): never a sign that someone else uses a namespace. */
const DERIVED_KINDS = new Set(['Event', 'Endpoints', 'EndpointSlice', 'Lease', 'PodMetrics', 'ControllerRevision', 'LocalSubjectAccessReview']);

export interface DestroyItem {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  /** What is lost with it (a claim's data). */
  note?: string;
}

export interface DestroyPlan {
  app: string;
  namespace: string;
  /** The namespace itself is deleted (it is the app's own). */
  deleteNamespace: boolean;
  /** Why the namespace is kept, when it is. */
  namespaceNote?: string;
  items: DestroyItem[];
  /** Kept by `--keep-data`. */
  kept: DestroyItem[];
  /** The namespaces of the app's sandboxes (made by svc, labelled for the app), each deleted whole or only emptied of this deployment's objects. */
  sandboxNamespaces?: { name: string; delete: boolean; note?: string }[];
}

const selectorOf = (app: string) => `app.kubernetes.io/name=${app},managed=svc-scale`;

function isOurs(o: K8sObject, app: string): boolean {
  return o.metadata.labels?.['app.kubernetes.io/name'] === app && o.metadata.labels?.managed === 'svc-scale';
}

/** Objects every namespace holds whatever runs in it (made by Kubernetes itself), and cert-manager's ACME key of ours. */
function isSystem(o: K8sObject, app: string): boolean {
  if (o.kind === 'ConfigMap' && o.metadata.name === 'kube-root-ca.crt') return true;
  if (o.kind === 'ServiceAccount' && o.metadata.name === 'default') return true;
  return o.kind === 'Secret' && (o.type === 'kubernetes.io/service-account-token' || o.metadata.name === tlsNames(app).accountKey);
}

/**
 * The first object of the namespace that is neither this app's (its labels, or owned — at any depth — by an object of
 * its) nor made by Kubernetes itself, over every kind the server lists: `foreign`; or, when a kind cannot be listed
 * (403, an API group down), `unknown` naming it — the namespace is then not known to be the app's alone.
 */
async function foreignObject(kube: Kube, namespace: string, app: string, classify?: (o: K8sObject) => boolean | undefined): Promise<{ foreign?: K8sObject; unknown?: string }> {
  let kinds: { apiVersion: string; kind: string }[];
  try {
    kinds = await kube.namespacedKinds();
  } catch (error) {
    return { unknown: `the cluster's kinds (${(error as Error).message})` };
  }
  const uid = (o: K8sObject) => (o.metadata as { uid?: string }).uid;
  const ours = new Set<string | undefined>();
  const owned: K8sObject[] = [];
  for (const { apiVersion, kind } of kinds) {
    if (DERIVED_KINDS.has(kind)) continue;
    let objects: K8sObject[];
    try {
      objects = await kube.list(apiVersion, kind, namespace);
    } catch (error) {
      return { unknown: `${kind} of ${apiVersion} (${(error as Error).message})` };
    }
    for (const o of objects) {
      // `classify` decides first where it knows (true: ours, false: foreign); else the labels do.
      const verdict = classify?.(o);
      if (verdict === false) return { foreign: o };
      if (verdict === true || isOurs(o, app)) ours.add(uid(o));
      else if (((o.metadata.ownerReferences as unknown[] | undefined) ?? []).length > 0) owned.push(o);
      else if (!isSystem(o, app)) return { foreign: o };
    }
  }
  // Owned by ours, at any depth (cert-manager's solver pods sit four owners below a Certificate).
  for (let changed = true; changed; ) {
    changed = false;
    for (const o of owned) {
      if (ours.has(uid(o))) continue;
      const owners = (o.metadata.ownerReferences as { uid?: string }[] | undefined) ?? [];
      if (owners.every((r) => ours.has(r.uid))) {
        ours.add(uid(o));
        changed = true;
      }
    }
  }
  return { foreign: owned.find((o) => !ours.has(uid(o)) && !isSystem(o, app)) };
}

const item = (o: K8sObject): DestroyItem => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, namespace: o.metadata.namespace });

/**
 * What a destroy would delete, read from the cluster (nothing is changed).
 *
 * @example
 * const plan = await destroyPlan(kube, spec, { keepData: false });
 * process.stdout.write(destroyText(plan));
 */
export async function destroyPlan(kube: Kube, spec: DeploySpec, options: { keepData: boolean }): Promise<DestroyPlan> {
  const { app, namespace } = spec;
  // A user whose rights end at the namespace cannot read it: it is then taken as there, and never deleted whole.
  let readable = true;
  const ns = await kube.read('v1', 'Namespace', undefined, namespace).catch((error: unknown) => {
    if (error instanceof KubeApiError && error.status === 403) {
      readable = false;
      return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } } as K8sObject;
    }
    throw error;
  });
  const items: DestroyItem[] = [];
  const kept: DestroyItem[] = [];
  const keepSecrets = new Set([`${app}-docdb-secret`, `${app}-kv-secret`]);
  if (ns) {
    for (const [apiVersion, kind] of NAMESPACED) {
      for (const o of await kube.list(apiVersion, kind, namespace, selectorOf(app))) {
        const it = item(o);
        if (kind === 'PersistentVolumeClaim') {
          const size = ((((o.spec as Json)?.resources as Json)?.requests as Json)?.storage as string | undefined) ?? '';
          it.note = `${size ? `${size}, ` : ''}the data in it is deleted with it`;
        }
        if (options.keepData && (kind === 'PersistentVolumeClaim' || (kind === 'Secret' && keepSecrets.has(o.metadata.name)))) kept.push(it);
        else items.push(it);
      }
    }
    // The ACME account key cert-manager made for the Issuer (it carries no label of ours).
    const account = await kube.read('v1', 'Secret', namespace, tlsNames(app).accountKey);
    if (account) items.push(item({ ...account, apiVersion: 'v1', kind: 'Secret' }));
  }
  // The cluster-scoped objects of this deployment: those of its plan, by name (the same app in another namespace has its own).
  for (const o of buildManifests(spec).filter((x) => !x.metadata.namespace && x.kind !== 'Namespace' && x.kind !== 'CustomResourceDefinition')) {
    const live = await kube.read(o.apiVersion, o.kind, undefined, o.metadata.name).catch((error: unknown) => {
      if (error instanceof KubeApiError && error.status === 403) return undefined;
      throw error;
    });
    if (live && isOurs(live, app)) items.push(item({ ...live, apiVersion: o.apiVersion, kind: o.kind }));
  }
  // And those an earlier plan made (monitoring turned off since): labelled, and named for this app and namespace exactly.
  const clusterNames = new Set([`${app}-${namespace}-kube-state-metrics`]);
  for (const [apiVersion, kind] of [['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'], ['rbac.authorization.k8s.io/v1', 'ClusterRole']] as const) {
    const listed = await kube.list(apiVersion, kind, undefined, selectorOf(app)).catch(() => [] as K8sObject[]);
    for (const o of listed) {
      if (clusterNames.has(o.metadata.name) && !items.some((i) => i.kind === kind && i.name === o.metadata.name)) items.push(item(o));
    }
  }
  let deleteNamespace = false;
  let namespaceNote: string | undefined;
  if (ns) {
    const system = namespace === 'default' || namespace.startsWith('kube-');
    const madeForApp = ns.metadata.annotations?.[CREATED_FOR_ANNOTATION] === app;
    const { foreign, unknown } = system || !madeForApp ? {} : await foreignObject(kube, namespace, app);
    if (!readable) namespaceNote = `namespace ${namespace} cannot be read with these credentials: only ${app}'s objects are deleted`;
    else if (system) namespaceNote = `namespace ${namespace} is a system namespace: only ${app}'s objects are deleted`;
    else if (!madeForApp) namespaceNote = `namespace ${namespace} was not made by svc for ${app} (no ${CREATED_FOR_ANNOTATION}=${app} annotation): only ${app}'s objects are deleted`;
    else if (unknown) namespaceNote = `namespace ${namespace} may hold objects of others: ${unknown} cannot be listed; only ${app}'s objects are deleted`;
    else if (foreign) namespaceNote = `namespace ${namespace} also holds ${objectId(foreign)}, not ${app}'s: only ${app}'s objects are deleted`;
    else if (kept.length > 0) namespaceNote = `--keep-data: namespace ${namespace} stays, with the claims and the database credentials`;
    else deleteNamespace = true;
  }
  const sandboxNamespaces = [];
  for (const name of await sandboxNamespacesOf(kube, spec)) sandboxNamespaces.push(await sandboxNamespacePlan(kube, spec, name, items));
  return { app, namespace, deleteNamespace, namespaceNote, items, kept, ...(sandboxNamespaces.length > 0 ? { sandboxNamespaces } : {}) };
}

/** The sandbox namespaces of the app: the configured one, and any svc made for it (a deploy with sandboxes turned off since). */
async function sandboxNamespacesOf(kube: Kube, spec: DeploySpec): Promise<string[]> {
  const names = new Set<string>();
  if (spec.sandbox) names.add(spec.sandbox.namespace);
  const listed = await kube.list('v1', 'Namespace', undefined, `${selectorOf(spec.app)},app.kubernetes.io/component=sandbox`).catch(() => [] as K8sObject[]);
  for (const o of listed) names.add(o.metadata.name);
  names.delete(spec.namespace);
  return [...names].sort();
}

/**
 * A sandbox namespace's part of the destroy: this deployment's objects in it (named `{app}-{namespace}-…`) join
 * `items`, the shared Role when no other binding uses it; the namespace is deleted whole when svc made it for this app
 * and it holds nothing but this deployment's objects and sandboxes (objects labelled `svc-sandbox`).
 */
async function sandboxNamespacePlan(kube: Kube, spec: DeploySpec, name: string, items: DestroyItem[]): Promise<{ name: string; delete: boolean; note?: string }> {
  const { app, namespace } = spec;
  const names = sandboxNames(spec);
  // By exact name: a prefix would take `shop-shop-staging-…` (the same app in namespace shop-staging) for shop's in shop.
  const own = new Set(names.scoped);
  let readable = true;
  const ns = await kube.read('v1', 'Namespace', undefined, name).catch((error: unknown) => {
    if (error instanceof KubeApiError && error.status === 403) {
      readable = false;
      return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as K8sObject;
    }
    throw error;
  });
  if (!ns) return { name, delete: false, note: `namespace ${name} is not in the cluster` };
  // A binding to an account of another namespace is another deployment's (the same app elsewhere, or another app).
  const bindsElsewhere = (o: K8sObject): boolean => ((o.subjects as { kind?: string; namespace?: string }[] | undefined) ?? []).some((s) => s.kind === 'ServiceAccount' && s.namespace !== namespace);
  const mine = (o: K8sObject): boolean => isOurs(o, app) && own.has(o.metadata.name);
  // A binding (the app may make its own) of this deployment's accounts only: the app's and its proxy's.
  const toOurAccounts = (o: K8sObject): boolean => {
    const subjects = (o.subjects as { kind?: string; name?: string; namespace?: string }[] | undefined) ?? [];
    return subjects.length > 0 && subjects.every((s) => s.kind === 'ServiceAccount' && s.namespace === namespace && (s.name === names.appAccount || s.name === names.proxy));
  };
  const bindings = await kube.list('rbac.authorization.k8s.io/v1', 'RoleBinding', name).catch(() => undefined);
  const roleShared = bindings === undefined || bindings.some((b) => (b.roleRef as { name?: string } | undefined)?.name === SANDBOX_MANAGER_ROLE && !toOurAccounts(b));
  for (const [apiVersion, kind] of NAMESPACED) {
    for (const o of await kube.list(apiVersion, kind, name, selectorOf(app)).catch(() => [] as K8sObject[])) {
      if (mine(o) || (kind === 'Role' && o.metadata.name === SANDBOX_MANAGER_ROLE && !roleShared)) items.push(item({ ...o, apiVersion, kind }));
    }
  }
  const classify = (o: K8sObject): boolean | undefined => {
    if (o.kind === 'RoleBinding') return toOurAccounts(o) ? true : bindsElsewhere(o) ? false : undefined;
    if (o.kind === 'Role' && o.metadata.name === SANDBOX_MANAGER_ROLE) return true;
    if (o.metadata.labels?.['svc-sandbox'] !== undefined) return true;
    if (isOurs(o, app)) return mine(o);
    return undefined;
  };
  const madeForApp = ns.metadata.annotations?.[CREATED_FOR_ANNOTATION] === app;
  if (!readable) return { name, delete: false, note: `namespace ${name} cannot be read with these credentials: only ${app}'s objects in it are deleted` };
  if (!madeForApp) return { name, delete: false, note: `namespace ${name} was not made by svc for ${app} (no ${CREATED_FOR_ANNOTATION}=${app} annotation): only ${app}'s objects in it are deleted` };
  const { foreign, unknown } = await foreignObject(kube, name, app, classify);
  if (unknown) return { name, delete: false, note: `namespace ${name} may hold objects of others: ${unknown} cannot be listed; only ${app}'s objects in it are deleted` };
  if (foreign) return { name, delete: false, note: `namespace ${name} also holds ${objectId(foreign)}, not this deployment's: only ${app}'s objects in it are deleted` };
  return { name, delete: true };
}

/**
 * The listing a destroy asks confirmation for.
 *
 * @example
 * destroyText(plan) // 'svc scale destroy shop: this deletes …'
 */
export function destroyText(plan: DestroyPlan): string {
  const lines: string[] = [];
  if (plan.items.length === 0 && !plan.deleteNamespace && !(plan.sandboxNamespaces ?? []).some((n) => n.delete)) return `Nothing of ${plan.app} is in the cluster (namespace ${plan.namespace}): nothing to delete.\n`;
  lines.push(`svc scale destroy ${plan.app}: this deletes`);
  if (plan.deleteNamespace) lines.push(`  Namespace ${plan.namespace}, and everything in it:`);
  else if (plan.namespaceNote) lines.push(`  (${plan.namespaceNote})`);
  for (const i of plan.items) lines.push(`  ${i.kind} ${i.namespace ? `${i.namespace}/` : ''}${i.name}${i.note ? `  — ${i.note}` : ''}`);
  for (const sandbox of plan.sandboxNamespaces ?? []) {
    lines.push(sandbox.delete ? `  Namespace ${sandbox.name} (the sandboxes), and every sandbox in it` : `  (${sandbox.note ?? `namespace ${sandbox.name} stays`})`);
  }
  const claims = plan.items.filter((i) => i.kind === 'PersistentVolumeClaim');
  if (claims.length > 0) lines.push(`The ${claims.length === 1 ? 'claim' : `${claims.length} claims`} above hold the databases' data: it cannot be recovered (--keep-data keeps them).`);
  if (plan.kept.length > 0) lines.push(`Kept (--keep-data): ${plan.kept.map((i) => `${i.kind} ${i.name}`).join(', ')}`);
  lines.push('Kept: the Traefik CustomResourceDefinitions (shared by every app of the cluster).');
  return `${lines.join('\n')}\n`;
}

/**
 * Delete what the plan lists, and wait until every object (and the namespace) is gone.
 *
 * @example
 * await destroyApply(kube, plan, { log: (l) => console.error(l) });
 */
export async function destroyApply(kube: Kube, plan: DestroyPlan, options: { log: (line: string) => void; timeoutMs?: number }): Promise<void> {
  const started = Date.now();
  for (const i of plan.items) await kube.delete({ apiVersion: i.apiVersion, kind: i.kind, metadata: { name: i.name, namespace: i.namespace } });
  if (plan.deleteNamespace) await kube.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: plan.namespace } });
  const sandboxes = (plan.sandboxNamespaces ?? []).filter((n) => n.delete).map((n) => n.name);
  for (const name of sandboxes) await kube.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const until = started + (options.timeoutMs ?? 300_000);
  let lastCount = -1;
  for (;;) {
    const left: string[] = [];
    for (const i of plan.items) if (await kube.read(i.apiVersion, i.kind, i.namespace, i.name)) left.push(`${i.kind} ${i.name}`);
    if (plan.deleteNamespace && (await kube.read('v1', 'Namespace', undefined, plan.namespace))) left.push(`Namespace ${plan.namespace}`);
    for (const name of sandboxes) if (await kube.read('v1', 'Namespace', undefined, name)) left.push(`Namespace ${name}`);
    if (left.length === 0) break;
    if (left.length !== lastCount) options.log(`waiting for ${left.length} object${left.length === 1 ? '' : 's'} to be gone: ${left.slice(0, 5).join(', ')}${left.length > 5 ? ', …' : ''}`);
    lastCount = left.length;
    if (Date.now() > until) throw new ClusterError('SVC_ERR_DESTROY', `still there after ${Math.round((Date.now() - started) / 1000)} s: ${left.join(', ')} (a finalizer may hold them: kubectl get … -o yaml)`);
    await new Promise((r) => setTimeout(r, 250));
  }
  options.log(`deleted in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
