/**
 * The resource types the fake serves, as discovery (`/api`, `/apis`, `/apis/{group}/{version}`) lists them:
 * the built-in kinds, and a custom resource's only while a CustomResourceDefinition for it exists.
 */
import type { Obj } from './types.ts';

/** A resource type: where it is served and what it is called. */
export interface Resource {
  group: string;
  /** The served versions (the first is the preferred one; a CRD's storage version first). */
  versions: string[];
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  /** Subresources (`status`, `scale`, `log`, `exec`…), as `{plural}/{name}` in discovery. */
  subresources: string[];
  /** The CRD's name when a custom resource. */
  crd?: string;
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** `group/version`, or `version` for the core group. */
export function groupVersion(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

/** `deployments.apps`, `pods`: a resource as the API server's messages name it. */
export function qualified(res: Resource): string {
  return res.group ? `${res.plural}.${res.group}` : res.plural;
}

/** `Deployment.apps`, `Service`: a kind as Invalid messages name it. */
export function qualifiedKind(res: Resource): string {
  return res.group ? `${res.kind}.${res.group}` : res.kind;
}

/** Key of a resource type in the store (the version does not matter: every served version shows the same objects). */
export function typeKey(res: Resource): string {
  return `${res.group}|${res.plural}`;
}

function builtin(group: string, version: string, kind: string, plural: string, namespaced: boolean, subresources: string[] = [], shortNames?: string[]): Resource {
  return { group, versions: [version], kind, plural, singular: kind.toLowerCase(), namespaced, subresources, ...(shortNames ? { shortNames } : {}) };
}

/** The built-in kinds. */
export const BUILTIN: readonly Resource[] = [
  builtin('', 'v1', 'Namespace', 'namespaces', false, ['status', 'finalize'], ['ns']),
  builtin('', 'v1', 'Node', 'nodes', false, ['status'], ['no']),
  builtin('', 'v1', 'Pod', 'pods', true, ['status', 'log', 'exec', 'attach', 'portforward', 'eviction', 'binding'], ['po']),
  builtin('', 'v1', 'Service', 'services', true, ['status', 'proxy'], ['svc']),
  builtin('', 'v1', 'ConfigMap', 'configmaps', true, [], ['cm']),
  builtin('', 'v1', 'Secret', 'secrets', true),
  builtin('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true, ['status'], ['pvc']),
  builtin('', 'v1', 'PersistentVolume', 'persistentvolumes', false, ['status'], ['pv']),
  builtin('', 'v1', 'ServiceAccount', 'serviceaccounts', true, ['token'], ['sa']),
  builtin('', 'v1', 'Endpoints', 'endpoints', true, [], ['ep']),
  builtin('', 'v1', 'Event', 'events', true, [], ['ev']),
  builtin('apps', 'v1', 'Deployment', 'deployments', true, ['status', 'scale'], ['deploy']),
  builtin('apps', 'v1', 'ReplicaSet', 'replicasets', true, ['status', 'scale'], ['rs']),
  builtin('apps', 'v1', 'StatefulSet', 'statefulsets', true, ['status', 'scale'], ['sts']),
  builtin('apps', 'v1', 'DaemonSet', 'daemonsets', true, ['status'], ['ds']),
  builtin('apps', 'v1', 'ControllerRevision', 'controllerrevisions', true),
  builtin('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true, ['status'], ['hpa']),
  builtin('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, ['status'], ['pdb']),
  builtin('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies', true, [], ['netpol']),
  builtin('networking.k8s.io', 'v1', 'Ingress', 'ingresses', true, ['status'], ['ing']),
  builtin('networking.k8s.io', 'v1', 'IngressClass', 'ingressclasses', false),
  builtin('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
  builtin('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  builtin('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
  builtin('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
  builtin('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition', 'customresourcedefinitions', false, ['status'], ['crd', 'crds']),
  builtin('batch', 'v1', 'Job', 'jobs', true, ['status']),
];

/** The resource type a CRD defines (its served versions, storage version first); undefined when it serves none. */
export function crdResource(crd: Obj): Resource | undefined {
  const spec = crd.spec ?? {};
  const names = spec.names ?? {};
  const versions: Obj[] = (spec.versions ?? []).filter((v: Obj) => v.served !== false);
  if (!spec.group || !names.plural || !names.kind || versions.length === 0) return undefined;
  versions.sort((a, b) => Number(b.storage === true) - Number(a.storage === true));
  const subresources = versions.some((v) => v.subresources?.status) ? ['status'] : [];
  if (versions.some((v) => v.subresources?.scale)) subresources.push('scale');
  return {
    group: spec.group,
    versions: versions.map((v) => String(v.name)),
    kind: names.kind,
    plural: names.plural,
    singular: names.singular ?? String(names.kind).toLowerCase(),
    namespaced: spec.scope !== 'Cluster',
    ...(names.shortNames ? { shortNames: names.shortNames } : {}),
    subresources,
    crd: crd.metadata?.name,
  };
}

/** The kinds served now: the built-ins and those of the CRDs that exist (read anew on every lookup). */
export class Catalog {
  constructor(private readonly crds: () => Obj[]) {}

  all(): Resource[] {
    return [...BUILTIN, ...this.crds().flatMap((crd) => crdResource(crd) ?? [])];
  }

  /** The resource served at `group/version/plural`. */
  byPlural(group: string, version: string, plural: string): Resource | undefined {
    return this.all().find((r) => r.group === group && r.plural === plural && r.versions.includes(version));
  }

  /** The resource of `apiVersion` + `kind`. */
  byKind(apiVersion: string, kind: string): Resource | undefined {
    const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/') as [string, string]) : ['', apiVersion];
    return this.all().find((r) => r.group === group && r.kind === kind && r.versions.includes(version));
  }

  /** Whether `group/version` is served at all. */
  serves(group: string, version: string): boolean {
    return this.all().some((r) => r.group === group && r.versions.includes(version));
  }

  /** `GET /api`. */
  coreVersions(serverAddress: string): Obj {
    return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
  }

  /** `GET /apis`: every group but the core one, with its versions. */
  groups(): Obj {
    const groups = new Map<string, string[]>();
    for (const r of this.all()) {
      if (!r.group) continue;
      const versions = groups.get(r.group) ?? [];
      for (const v of r.versions) if (!versions.includes(v)) versions.push(v);
      groups.set(r.group, versions);
    }
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups].map(([name, versions]) => this.groupOf(name, versions)) };
  }

  /** `GET /apis/{group}`, or undefined when the group is not served. */
  group(name: string): Obj | undefined {
    const versions = [
      ...new Set(
        this.all()
          .filter((r) => r.group === name)
          .flatMap((r) => r.versions),
      ),
    ];
    return versions.length ? { kind: 'APIGroup', apiVersion: 'v1', ...this.groupOf(name, versions) } : undefined;
  }

  private groupOf(name: string, versions: string[]): Obj {
    const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
    return { name, versions: list, preferredVersion: list[0] };
  }

  /** `GET /api/v1` or `/apis/{group}/{version}`: the resources and their subresources (a resource before its subresources, as the real listing is sorted). */
  resourceList(group: string, version: string): Obj | undefined {
    const served = this.all().filter((r) => r.group === group && r.versions.includes(version));
    if (!served.length) return undefined;
    const resources: Obj[] = [];
    for (const r of served.sort((a, b) => a.plural.localeCompare(b.plural))) {
      resources.push({ name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: VERBS, ...(r.shortNames ? { shortNames: r.shortNames } : {}) });
      for (const sub of r.subresources) resources.push(subresource(r, sub));
    }
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersion(group, version), resources };
  }
}

function subresource(r: Resource, sub: string): Obj {
  const base = { name: `${r.plural}/${sub}`, singularName: '', namespaced: r.namespaced };
  switch (sub) {
    case 'scale':
      return { ...base, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] };
    case 'status':
      return { ...base, kind: r.kind, verbs: ['get', 'patch', 'update'] };
    case 'log':
      return { ...base, kind: 'Pod', verbs: ['get'] };
    case 'exec':
    case 'attach':
    case 'portforward':
      return {
        ...base,
        kind:
          sub === 'exec' ? 'PodExecOptions'
          : sub === 'attach' ? 'PodAttachOptions'
          : 'PodPortForwardOptions',
        verbs: ['create', 'get'],
      };
    case 'eviction':
      return { ...base, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] };
    case 'binding':
      return { ...base, kind: 'Binding', verbs: ['create'] };
    case 'proxy':
      return { ...base, kind: 'ServiceProxyOptions', verbs: ['create', 'delete', 'get', 'patch', 'update'] };
    case 'token':
      return { ...base, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] };
    case 'finalize':
      return { ...base, kind: r.kind, verbs: ['update'] };
    default:
      return { ...base, kind: r.kind, verbs: ['get'] };
  }
}

/** A built-in kind's resource type. */
export function builtinOf(kind: string): Resource {
  const res = BUILTIN.find((r) => r.kind === kind);
  if (!res) throw new Error(`no built-in kind ${kind}`);
  return res;
}
