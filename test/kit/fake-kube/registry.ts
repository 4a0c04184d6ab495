/**
 * The API server's handling of objects, apart from HTTP: create, read, list, replace, patch and delete with the
 * real server's answers (AlreadyExists, NotFound, Conflict on a stale resourceVersion, Invalid with causes,
 * Forbidden in a terminating namespace), its defaults and allocations (a Service's clusterIP and nodePorts, a
 * Secret's `stringData`), generation and resourceVersion bookkeeping, finalizers and propagation policies. The
 * controller writes through `save`, `createInternal` and `remove` (no admission, as a controller's writes pass it).
 */
import { randomUUID } from 'node:crypto';
import { applyDefaults, dropPath, invalid, kindErrors, nameError, valueAt, type FieldError } from './admission.ts';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.ts';
import { builtinOf, Catalog, groupVersion, qualified, type Resource } from './resources.ts';
import { parseFieldSelector, parseLabelSelector } from './selectors.ts';
import type { Store } from './store.ts';
import { clone, isObj, KubeStatusError, randomSuffix, same, timestamp, type Obj } from './types.ts';

/** What the registry needs of deploy/validate. */
export interface RegistryDeps {
  /** The schema problems of one object (deploy's `schemaProblems`). */
  schemaProblems(object: Obj): { path: string; message: string }[];
  /** `apiVersion/kind` pairs the schemas cover (others are stored unchecked). */
  supportedKinds: ReadonlySet<string>;
  parseQuantity(quantity: string): number;
}

/** An answer: its HTTP code and body, and the `Warning` headers to send. */
export interface Answer {
  code: number;
  body: Obj;
  warnings?: string[];
}

/** Query parameters of a request, as a record. */
export type Query = Record<string, string>;

const NAMESPACE = builtinOf('Namespace');
const SERVICE = builtinOf('Service');
const CRD = builtinOf('CustomResourceDefinition');
/** Kinds whose DELETE answers with the object rather than a Success Status. */
const RETURNS_OBJECT = new Set(['Pod', 'Service', 'Namespace', 'CustomResourceDefinition']);
const NODE_PORTS = { min: 30000, max: 32767 };

function notFound(res: Resource, name: string): KubeStatusError {
  return new KubeStatusError(404, 'NotFound', `${qualified(res)} "${name}" not found`, { name, ...(res.group ? { group: res.group } : {}), kind: res.plural });
}

function conflict(res: Resource, name: string): KubeStatusError {
  return new KubeStatusError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(res)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, ...(res.group ? { group: res.group } : {}), kind: res.plural },
  );
}

function badRequest(message: string): KubeStatusError {
  return new KubeStatusError(400, 'BadRequest', message);
}

/** The object minus metadata and status: what a change of bumps `metadata.generation`. */
function specOf(object: Obj): Obj {
  const { metadata: _m, status: _s, ...rest } = object;
  return rest;
}

/** Objects by the API server's rules. */
export class Registry {
  readonly catalog: Catalog;
  /** Set by the controller: whether deleting this pod waits for its runtime to stop (true), or removes it at once. */
  graceful: (pod: Obj) => boolean = () => false;

  constructor(
    readonly store: Store,
    private readonly deps: RegistryDeps,
  ) {
    this.catalog = new Catalog(() => store.peekList(CRD));
  }

  /** The object as served under `version` (a CRD's objects are served under each of its versions). */
  present(res: Resource, version: string, object: Obj): Obj {
    return { ...clone(object), apiVersion: groupVersion(res.group, version) };
  }

  private typeMeta(res: Resource, version: string, object: Obj): void {
    const expected = groupVersion(res.group, version);
    object.apiVersion ??= expected;
    object.kind ??= res.kind;
    if (object.apiVersion !== expected && !(res.crd && res.versions.includes(String(object.apiVersion).split('/')[1] ?? ''))) {
      throw badRequest(`the API version in the data (${object.apiVersion}) does not match the expected API version (${expected})`);
    }
    if (object.kind !== res.kind) throw badRequest(`the kind in the data (${object.kind}) does not match the expected kind (${res.kind})`);
    if (!isObj(object.metadata)) object.metadata = {};
  }

  /** The namespace an object may be created in: 404 when absent, 403 when terminating. */
  private checkNamespace(res: Resource, namespace: string, name: string): void {
    const ns = this.store.peek(NAMESPACE, undefined, namespace);
    if (!ns) throw new KubeStatusError(404, 'NotFound', `namespaces "${namespace}" not found`, { name: namespace, kind: 'namespaces' });
    if (ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') {
      throw new KubeStatusError(403, 'Forbidden', `${qualified(res)} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`, {
        name,
        ...(res.group ? { group: res.group } : {}),
        kind: res.plural,
        causes: [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }],
      });
    }
  }

  /** Schema, names, defaults, kind rules and allocations, in place; throws the first answer that refuses it. */
  private admit(res: Resource, object: Obj, old: Obj | undefined, query: Query, warnings: string[]): void {
    const errors: FieldError[] = [];
    if (this.deps.supportedKinds.has(`${object.apiVersion}/${object.kind}`)) {
      const probe = clone(object);
      delete probe.status;
      const problems = this.deps.schemaProblems(probe);
      const unknown = problems.filter((p) => p.message.startsWith('unknown field'));
      if (unknown.length && query.fieldValidation === 'Strict') throw badRequest(`strict decoding error: ${unknown.map((p) => `unknown field "${p.path}"`).join(', ')}`);
      for (const p of unknown) {
        dropPath(object, p.path);
        if (query.fieldValidation !== 'Ignore') warnings.push(`unknown field "${p.path}"`);
      }
      for (const p of problems) {
        if (unknown.includes(p)) continue;
        errors.push(p.message === 'is required' ? { field: p.path, type: 'Required', detail: '' } : { field: p.path, type: 'Invalid', value: valueAt(object, p.path), detail: p.message });
      }
    }
    const named = nameError(res.kind, String(object.metadata.name));
    if (named) errors.push(named);
    if (errors.length) throw invalid(res, object.metadata.name, errors);
    if (res.kind === 'Secret' && isObj(object.stringData)) {
      object.data = { ...object.data };
      for (const [k, v] of Object.entries(object.stringData)) object.data[k] = Buffer.from(String(v), 'utf8').toString('base64');
      delete object.stringData;
    }
    applyDefaults(res.kind, object);
    errors.push(...kindErrors(res.kind, object, old, this.deps.parseQuantity));
    if (res.kind === 'Service') errors.push(...this.allocateService(object, old));
    if (errors.length) throw invalid(res, object.metadata.name, errors);
  }

  /** A Service's clusterIP and nodePorts: kept from `old`, allocated when absent, refused when taken or out of range. */
  private allocateService(object: Obj, old: Obj | undefined): FieldError[] {
    const errors: FieldError[] = [];
    const spec: Obj = (object.spec = isObj(object.spec) ? object.spec : {});
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    const ports: Obj[] = Array.isArray(spec.ports) ? spec.ports : [];
    for (const p of ports) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
    }
    if (spec.type === 'ExternalName') return errors;
    const others = this.store.peekList(SERVICE).filter((s) => !(s.metadata.namespace === object.metadata.namespace && s.metadata.name === object.metadata.name));
    const oldIp = old?.spec?.clusterIP;
    if (oldIp) {
      if (spec.clusterIP && spec.clusterIP !== oldIp) errors.push({ field: 'spec.clusterIPs[0]', type: 'Invalid', value: [spec.clusterIP], detail: 'may not change once set' });
      spec.clusterIP = oldIp;
    } else if (!spec.clusterIP) {
      const used = new Set(others.map((s) => s.spec?.clusterIP));
      let ip: string;
      do ip = `10.96.${Math.floor(Math.random() * 256)}.${2 + Math.floor(Math.random() * 252)}`;
      while (used.has(ip));
      spec.clusterIP = ip;
    } else if (spec.clusterIP !== 'None' && others.some((s) => s.spec?.clusterIP === spec.clusterIP)) {
      errors.push({ field: 'spec.clusterIPs', type: 'Invalid', value: [spec.clusterIP], detail: `failed to allocate IP ${spec.clusterIP}: provided IP is already allocated` });
    }
    spec.clusterIPs = [spec.clusterIP];
    if (spec.clusterIP !== 'None') {
      spec.ipFamilies ??= ['IPv4'];
      spec.ipFamilyPolicy ??= 'SingleStack';
    }
    spec.internalTrafficPolicy ??= 'Cluster';
    const withNodePorts = spec.type === 'NodePort' || spec.type === 'LoadBalancer';
    if (!withNodePorts) {
      ports.forEach((p, i) => {
        if (p.nodePort !== undefined) errors.push({ field: `spec.ports[${i}].nodePort`, type: 'Forbidden', detail: `may not be used when \`type\` is '${spec.type}'` });
      });
      return errors;
    }
    spec.externalTrafficPolicy ??= 'Cluster';
    const taken = new Set<number>(others.flatMap((s) => ((s.spec?.ports ?? []) as Obj[]).map((p) => p.nodePort).filter((n): n is number => typeof n === 'number')));
    const mine = new Map<string, number>();
    ports.forEach((p, i) => {
      if (p.nodePort === undefined) {
        const kept = ((old?.spec?.ports ?? []) as Obj[]).find((o) => o.port === p.port && (o.protocol ?? 'TCP') === p.protocol)?.nodePort;
        if (typeof kept === 'number' && !taken.has(kept)) p.nodePort = kept;
        else {
          let n: number;
          do n = NODE_PORTS.min + Math.floor(Math.random() * (NODE_PORTS.max - NODE_PORTS.min + 1));
          while (taken.has(n) || [...mine.keys()].some((k) => k.endsWith(`/${n}`)));
          p.nodePort = n;
        }
      } else if (!(Number.isInteger(p.nodePort) && p.nodePort >= NODE_PORTS.min && p.nodePort <= NODE_PORTS.max)) {
        errors.push({
          field: `spec.ports[${i}].nodePort`,
          type: 'Invalid',
          value: p.nodePort,
          detail: `provided port is not in the valid range. The range of valid ports is ${NODE_PORTS.min}-${NODE_PORTS.max}`,
        });
      } else if (taken.has(p.nodePort)) {
        errors.push({ field: `spec.ports[${i}].nodePort`, type: 'Invalid', value: p.nodePort, detail: 'provided port is already allocated' });
      } else if (mine.get(`${p.protocol}/${p.nodePort}`) !== undefined) {
        errors.push({ field: `spec.ports[${i}].nodePort`, type: 'Invalid', value: p.nodePort, detail: 'Duplicate value' });
      }
      mine.set(`${p.protocol}/${p.nodePort}`, i);
    });
    return errors;
  }

  /** The status an object starts with (the registry's; a client's status on create is dropped). */
  private initialStatus(res: Resource, object: Obj): void {
    if (res.subresources.includes('status')) delete object.status;
    if (res.kind === 'Namespace') object.status = { phase: 'Active' };
    if (res.kind === 'Pod') object.status = { phase: 'Pending', qosClass: 'BestEffort' };
    if (res.kind === 'PersistentVolumeClaim') object.status = { phase: 'Pending' };
    if (res.kind === 'Service') object.status = { loadBalancer: {} };
    if (res.kind === 'CustomResourceDefinition') {
      const now = timestamp();
      const storage = ((object.spec?.versions ?? []) as Obj[]).find((v) => v.storage)?.name;
      object.metadata.finalizers = [...new Set([...(object.metadata.finalizers ?? []), 'customresourcecleanup.apiextensions.k8s.io'])];
      object.status = {
        acceptedNames: clone(object.spec?.names ?? {}),
        conditions: [
          { type: 'NamesAccepted', status: 'True', lastTransitionTime: now, reason: 'NoConflicts', message: 'no conflicts found' },
          { type: 'Established', status: 'True', lastTransitionTime: now, reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
        ],
        storedVersions: storage ? [storage] : [],
      };
    }
    if (res.kind === 'Job') {
      const uid = object.metadata.uid;
      const labels = { 'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': object.metadata.name, 'controller-uid': uid, 'job-name': object.metadata.name };
      object.spec.selector ??= { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
      object.spec.manualSelector ??= false;
      object.spec.template.metadata = { ...object.spec.template.metadata, labels: { ...object.spec.template.metadata?.labels, ...labels } };
      object.metadata.labels = { ...labels, ...object.metadata.labels };
    }
  }

  /** POST: create. */
  create(res: Resource, version: string, namespace: string | undefined, body: unknown, query: Query = {}): Answer {
    if (!isObj(body)) throw badRequest('the body of the request was in an unknown format - accepted media types include: application/json, application/yaml');
    const object = clone(body);
    this.typeMeta(res, version, object);
    const meta = object.metadata;
    if (res.namespaced) {
      if (namespace && meta.namespace && meta.namespace !== namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      meta.namespace = namespace ?? meta.namespace;
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) {
      do meta.name = `${meta.generateName}${randomSuffix()}`;
      while (this.store.peek(res, meta.namespace, meta.name));
    }
    if (!meta.name) throw invalid(res, '', [{ field: 'metadata.name', type: 'Required', detail: 'name or generateName is required' }]);
    if (meta.resourceVersion) throw new KubeStatusError(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
    if (res.namespaced) {
      if (!meta.namespace) throw badRequest('the server could not find the requested resource: a namespaced object needs a namespace');
      this.checkNamespace(res, meta.namespace, meta.name);
    }
    if (this.store.peek(res, meta.namespace, meta.name)) {
      throw new KubeStatusError(409, 'AlreadyExists', `${qualified(res)} "${meta.name}" already exists`, { name: meta.name, ...(res.group ? { group: res.group } : {}), kind: res.plural });
    }
    for (const key of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'managedFields', 'selfLink']) delete meta[key];
    meta.uid = randomUUID();
    const warnings: string[] = [];
    this.admit(res, object, undefined, query, warnings);
    meta.creationTimestamp = timestamp();
    meta.generation = 1;
    this.initialStatus(res, object);
    if (query.dryRun === 'All') return { code: 201, body: this.present(res, version, object), warnings };
    return { code: 201, body: this.present(res, version, this.store.write(res, object)), warnings };
  }

  /** The stored object (its copy), or 404. */
  read(res: Resource, namespace: string | undefined, name: string): Obj {
    const object = this.store.get(res, namespace, name);
    if (!object) throw notFound(res, name);
    return object;
  }

  /** GET one. */
  get(res: Resource, version: string, namespace: string | undefined, name: string): Answer {
    return { code: 200, body: this.present(res, version, this.read(res, namespace, name)) };
  }

  /** The objects a list or watch request selects (stored objects themselves). */
  selected(res: Resource, namespace: string | undefined, query: Query): Obj[] {
    const labels = parseLabelSelector(query.labelSelector);
    const fields = parseFieldSelector(query.fieldSelector, res.kind);
    return this.store.peekList(res, namespace).filter((o) => labels(o.metadata.labels ?? {}) && fields(o));
  }

  /** A predicate for a watch: the same selection, on any object. */
  matcher(res: Resource, namespace: string | undefined, query: Query): (object: Obj) => boolean {
    const labels = parseLabelSelector(query.labelSelector);
    const fields = parseFieldSelector(query.fieldSelector, res.kind);
    return (o) => (namespace === undefined || !res.namespaced || o.metadata?.namespace === namespace) && labels(o.metadata?.labels ?? {}) && fields(o);
  }

  /** GET a list (`limit` and `continue` honoured). Items of built-in kinds carry no apiVersion or kind, as on the real server. */
  list(res: Resource, version: string, namespace: string | undefined, query: Query): Answer {
    let items = this.selected(res, namespace, query);
    const start = query.continue ? Number(JSON.parse(Buffer.from(query.continue, 'base64url').toString()).start) : 0;
    const limit = query.limit ? Number(query.limit) : 0;
    const total = items.length;
    items = items.slice(start, limit > 0 ? start + limit : undefined);
    const more = limit > 0 && start + limit < total;
    const metadata: Obj = { resourceVersion: String(this.store.rv) };
    if (more) {
      metadata.continue = Buffer.from(JSON.stringify({ start: start + limit })).toString('base64url');
      metadata.remainingItemCount = total - start - limit;
    }
    const shown = items.map((o) => {
      const copy = this.present(res, version, o);
      if (!res.crd) {
        delete copy.apiVersion;
        delete copy.kind;
      }
      return copy;
    });
    return { code: 200, body: { kind: `${res.kind}List`, apiVersion: groupVersion(res.group, version), metadata, items: shown } };
  }

  /** PUT (the object, or its status). */
  replace(res: Resource, version: string, namespace: string | undefined, name: string, body: unknown, query: Query = {}, subresource?: string): Answer {
    const old = this.read(res, namespace, name);
    if (!isObj(body)) throw badRequest('the body of the request was in an unknown format');
    const object = clone(body);
    this.typeMeta(res, version, object);
    if (object.metadata.name !== undefined && object.metadata.name !== name) throw badRequest(`the name of the object (${object.metadata.name}) does not match the name on the URL (${name})`);
    if (res.namespaced && object.metadata.namespace !== undefined && object.metadata.namespace !== namespace)
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    if (object.metadata.resourceVersion !== undefined && object.metadata.resourceVersion !== old.metadata.resourceVersion) throw conflict(res, name);
    if (subresource === 'status') return this.updateStatus(res, version, old, object.status, query);
    return this.update(res, version, old, object, query);
  }

  private updateStatus(res: Resource, version: string, old: Obj, status: unknown, query: Query): Answer {
    const object = clone(old);
    object.status = clone(status);
    if (query.dryRun === 'All') return { code: 200, body: this.present(res, version, object) };
    return { code: 200, body: this.present(res, version, this.store.write(res, object)) };
  }

  /** The stored object replaced by `object` (server metadata and, for kinds with a status subresource, status kept). */
  private update(res: Resource, version: string, old: Obj, object: Obj, query: Query): Answer {
    const meta = object.metadata;
    meta.name = old.metadata.name;
    if (res.namespaced) meta.namespace = old.metadata.namespace;
    else delete meta.namespace;
    for (const key of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds']) {
      if (old.metadata[key] === undefined) delete meta[key];
      else meta[key] = old.metadata[key];
    }
    delete meta.managedFields;
    if (res.subresources.includes('status')) {
      if (old.status === undefined) delete object.status;
      else object.status = clone(old.status);
    }
    const warnings: string[] = [];
    this.admit(res, object, old, query, warnings);
    meta.generation = same(specOf(object), specOf(old)) ? (old.metadata.generation ?? 1) : (old.metadata.generation ?? 1) + 1;
    if (query.dryRun === 'All') return { code: 200, body: this.present(res, version, object), warnings };
    if (meta.deletionTimestamp && !(meta.finalizers ?? []).length) {
      this.store.write(res, object);
      return { code: 200, body: this.present(res, version, this.store.remove(res, meta.namespace, meta.name) ?? object), warnings };
    }
    return { code: 200, body: this.present(res, version, this.store.write(res, object)), warnings };
  }

  /** PATCH with a merge, strategic merge, JSON or apply patch (the object, or its status). */
  patch(res: Resource, version: string, namespace: string | undefined, name: string, body: unknown, contentType: string, query: Query = {}, subresource?: string): Answer {
    const apply = contentType === 'application/apply-patch+yaml';
    if (apply) {
      if (!query.fieldManager)
        throw new KubeStatusError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
          group: 'meta.k8s.io',
          kind: 'PatchOptions',
          causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
        });
      if (!isObj(body) || !body.apiVersion || !body.kind) throw badRequest(`invalid object type: ${isObj(body) ? `${body.apiVersion ?? ''}, Kind=${body.kind ?? ''}` : '/, Kind='}`);
    }
    const old = this.store.get(res, namespace, name);
    if (!old) {
      if (!apply || subresource) throw notFound(res, name);
      const object = clone(body as Obj);
      object.metadata = { ...object.metadata, name, ...(res.namespaced ? { namespace } : {}) };
      return this.create(res, version, namespace, object, query);
    }
    let merged: unknown;
    switch (contentType) {
      case 'application/merge-patch+json':
      case 'application/apply-patch+yaml':
        merged = mergePatch(old, body);
        break;
      case 'application/strategic-merge-patch+json':
        if (res.crd)
          throw new KubeStatusError(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
          );
        merged = strategicMergePatch(old, body);
        break;
      case 'application/json-patch+json':
        merged = jsonPatch(old, body);
        break;
      default:
        throw new KubeStatusError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml${res.crd ? '' : ', application/strategic-merge-patch+json'}`,
        );
    }
    if (!isObj(merged)) throw badRequest('the patch did not leave an object');
    const wanted = isObj(body) && isObj(body.metadata) ? body.metadata.resourceVersion : merged.metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== null && wanted !== old.metadata.resourceVersion) throw conflict(res, name);
    if (!isObj(merged.metadata)) merged.metadata = {};
    if (merged.metadata.name !== name) throw badRequest(`the name of the object (${merged.metadata.name}) does not match the name on the URL (${name})`);
    if (subresource === 'status') return this.updateStatus(res, version, old, merged.status, query);
    this.typeMeta(res, version, merged);
    return this.update(res, version, old, merged, query);
  }

  /** DELETE (DeleteOptions from the query or the body). */
  delete(res: Resource, version: string, namespace: string | undefined, name: string, query: Query = {}, body?: unknown): Answer {
    const old = this.read(res, namespace, name);
    const options: Obj = isObj(body) ? body : {};
    const pre = options.preconditions ?? {};
    if (pre.uid && pre.uid !== old.metadata.uid)
      throw new KubeStatusError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${qualified(res)} "${name}": Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    if (pre.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw new KubeStatusError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${qualified(res)} "${name}": Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      );
    }
    const policy = String(query.propagationPolicy ?? options.propagationPolicy ?? (query.orphanDependents === 'true' || options.orphanDependents === true ? 'Orphan' : 'Background'));
    const grace = query.gracePeriodSeconds ?? options.gracePeriodSeconds;
    if (query.dryRun === 'All' || (Array.isArray(options.dryRun) && options.dryRun.includes('All'))) return { code: 200, body: this.present(res, version, old) };
    const answer = this.remove(res, old, policy, grace === undefined ? undefined : Number(grace));
    return { code: answer.code, body: answer.body.kind === 'Status' ? answer.body : this.present(res, version, answer.body) };
  }

  /** DELETE on a collection: every selected object; answers the list of them. */
  deleteCollection(res: Resource, version: string, namespace: string | undefined, query: Query = {}): Answer {
    const items = this.selected(res, namespace, query).map((o) => clone(o));
    for (const o of items) this.remove(res, o, String(query.propagationPolicy ?? 'Background'));
    return { code: 200, body: { kind: `${res.kind}List`, apiVersion: groupVersion(res.group, version), metadata: { resourceVersion: String(this.store.rv) }, items } };
  }

  /**
   * Delete an object as the API server does: a Namespace goes Terminating (the controller empties and removes
   * it); an object with finalizers (or Foreground propagation) gets a deletionTimestamp and waits; a pod with a
   * runtime waits for it to stop; anything else is removed now. Orphan removes the dependents' ownerReferences.
   */
  remove(res: Resource, old: Obj, policy = 'Background', grace?: number): Answer {
    const meta = old.metadata;
    const now = timestamp();
    if (policy === 'Orphan') {
      for (const dependent of [...this.store.everything()].filter((o) => (o.metadata.ownerReferences ?? []).some((r: Obj) => r.uid === meta.uid))) {
        const copy = clone(dependent);
        copy.metadata.ownerReferences = copy.metadata.ownerReferences.filter((r: Obj) => r.uid !== meta.uid);
        if (!copy.metadata.ownerReferences.length) delete copy.metadata.ownerReferences;
        const dependentRes = this.catalog.byKind(copy.apiVersion, copy.kind);
        if (dependentRes) this.store.write(dependentRes, copy);
      }
    }
    if (res.kind === 'Namespace') {
      if (meta.deletionTimestamp) {
        throw new KubeStatusError(
          409,
          'Conflict',
          `Operation cannot be fulfilled on namespaces "${meta.name}": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.`,
          { name: meta.name, kind: 'namespaces' },
        );
      }
      const object = clone(old);
      object.metadata.deletionTimestamp = now;
      object.metadata.deletionGracePeriodSeconds = 0;
      object.status = { ...object.status, phase: 'Terminating' };
      return { code: 200, body: this.store.write(res, object) };
    }
    if (meta.deletionTimestamp) return { code: 202, body: clone(old) };
    const finalizers: string[] = [...(meta.finalizers ?? [])];
    if (policy === 'Foreground' && !finalizers.includes('foregroundDeletion')) finalizers.push('foregroundDeletion');
    if (res.kind === 'Pod' && this.graceful(old)) {
      const object = clone(old);
      object.metadata.deletionTimestamp = now;
      object.metadata.deletionGracePeriodSeconds = grace ?? old.spec?.terminationGracePeriodSeconds ?? 30;
      if (finalizers.length) object.metadata.finalizers = finalizers;
      return { code: 200, body: this.store.write(res, object) };
    }
    if (finalizers.length) {
      const object = clone(old);
      object.metadata.deletionTimestamp = now;
      object.metadata.deletionGracePeriodSeconds = 0;
      object.metadata.finalizers = finalizers;
      return { code: 202, body: this.store.write(res, object) };
    }
    const removed = this.store.remove(res, meta.namespace, meta.name) ?? clone(old);
    if (RETURNS_OBJECT.has(res.kind) || res.crd) return { code: 200, body: removed };
    return {
      code: 200,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: meta.name, ...(res.group ? { group: res.group } : {}), kind: res.plural, uid: meta.uid } },
    };
  }

  /** The Scale of a Deployment, ReplicaSet or StatefulSet. */
  scale(res: Resource, namespace: string | undefined, name: string): Obj {
    const o = this.read(res, namespace, name);
    const selector = Object.entries(o.spec?.selector?.matchLabels ?? {})
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(',');
    return {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: { name: o.metadata.name, namespace: o.metadata.namespace, uid: o.metadata.uid, resourceVersion: o.metadata.resourceVersion, creationTimestamp: o.metadata.creationTimestamp },
      spec: { replicas: o.spec?.replicas ?? 1 },
      status: { replicas: o.status?.replicas ?? 0, selector },
    };
  }

  /** PUT or PATCH of a Scale: the replicas set on the object. */
  setScale(res: Resource, version: string, namespace: string | undefined, name: string, body: unknown, contentType: string | undefined, query: Query): Answer {
    const current = this.scale(res, namespace, name);
    let wanted: Obj;
    if (contentType === undefined) wanted = isObj(body) ? body : {};
    else if (contentType === 'application/json-patch+json') wanted = jsonPatch(current, body) as Obj;
    else wanted = mergePatch(current, body) as Obj;
    const rv = wanted.metadata?.resourceVersion;
    if (contentType === undefined && rv !== undefined && rv !== current.metadata.resourceVersion) throw conflict(res, name);
    const replicas = wanted.spec?.replicas;
    if (!Number.isInteger(replicas) || replicas < 0)
      throw invalid({ ...res, kind: 'Scale', group: 'autoscaling' }, name, [{ field: 'spec.replicas', type: 'Invalid', value: replicas, detail: 'must be greater than or equal to 0' }]);
    const object = this.read(res, namespace, name);
    object.spec = { ...object.spec, replicas };
    this.update(res, version, this.read(res, namespace, name), object, query);
    return { code: 200, body: this.scale(res, namespace, name) };
  }

  /** Store a controller's write (no admission; the generation bumped when the spec changed); a copy of what is stored. */
  save(res: Resource, object: Obj): Obj {
    const old = this.store.peek(res, object.metadata.namespace, object.metadata.name);
    if (old && !same(specOf(object), specOf(old))) object.metadata.generation = (old.metadata.generation ?? 1) + 1;
    return this.store.write(res, object);
  }

  /** A controller's create: server metadata, defaults (a Service's allocations too), the initial status; no schema. */
  createInternal(res: Resource, object: Obj): Obj {
    const meta = (object.metadata ??= {});
    meta.uid ??= randomUUID();
    meta.creationTimestamp ??= timestamp();
    meta.generation ??= 1;
    object.apiVersion ??= groupVersion(res.group, res.versions[0] as string);
    object.kind ??= res.kind;
    applyDefaults(res.kind, object);
    if (res.kind === 'Service') {
      const errors = this.allocateService(object, this.store.peek(res, meta.namespace, meta.name));
      if (errors.length) throw invalid(res, meta.name, errors);
    }
    if (object.status === undefined) this.initialStatus(res, object);
    return this.store.write(res, object);
  }

  /** Seed or overwrite an object (a test's `api.put`): its namespace created when missing, server metadata filled in, no schema. */
  seed(object: Obj): Obj {
    const res = this.catalog.byKind(String(object.apiVersion), String(object.kind));
    if (!res) throw new Error(`the fake serves no ${object.apiVersion} ${object.kind} (a custom resource needs its CRD first)`);
    const copy = clone(object);
    const meta = (copy.metadata ??= {});
    if (res.namespaced) {
      meta.namespace ??= 'default';
      if (!this.store.peek(NAMESPACE, undefined, meta.namespace)) this.createInternal(NAMESPACE, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: meta.namespace } });
    } else delete meta.namespace;
    const old = this.store.peek(res, meta.namespace, meta.name);
    if (res.kind === 'Secret' && isObj(copy.stringData)) {
      copy.data = { ...copy.data };
      for (const [k, v] of Object.entries(copy.stringData)) copy.data[k] = Buffer.from(String(v), 'utf8').toString('base64');
      delete copy.stringData;
    }
    if (!old) return this.createInternal(res, copy);
    meta.uid = old.metadata.uid;
    meta.creationTimestamp = old.metadata.creationTimestamp;
    delete meta.resourceVersion;
    applyDefaults(res.kind, copy);
    if (res.kind === 'Service') {
      const errors = this.allocateService(copy, old);
      if (errors.length) throw invalid(res, meta.name, errors);
    }
    meta.generation = same(specOf(copy), specOf(old)) ? old.metadata.generation : (old.metadata.generation ?? 1) + 1;
    if (copy.status === undefined && old.status !== undefined) copy.status = clone(old.status);
    return this.store.write(res, copy);
  }
}
