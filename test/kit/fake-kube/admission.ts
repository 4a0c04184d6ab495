/**
 * What the API server does to an object before storing it, beyond the schema: the defaults it fills in (the
 * ones a client comparing what it sent with what it reads back meets), the field errors of its validation
 * (names, a workload's selector against its template, immutable fields), rendered as the real `Invalid` Status.
 */
import { qualifiedKind, type Resource } from './resources.ts';
import { selects } from './selectors.ts';
import { isObj, KubeStatusError, same, type Obj } from './types.ts';

/** A field error, as the API server's validation reports one. */
export interface FieldError {
  field: string;
  type: 'Invalid' | 'Required' | 'Forbidden' | 'NotSupported';
  value?: unknown;
  detail: string;
}

/** A value as Go's field errors print it. */
function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

function fieldMessage(e: FieldError): string {
  switch (e.type) {
    case 'Required':
      return `Required value${e.detail ? `: ${e.detail}` : ''}`;
    case 'Forbidden':
      return `Forbidden: ${e.detail}`;
    case 'NotSupported':
      return `Unsupported value: ${show(e.value)}${e.detail ? `: ${e.detail}` : ''}`;
    default:
      return `Invalid value: ${show(e.value)}: ${e.detail}`;
  }
}

/**
 * The 422 `Invalid` error of an object: `Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 30080: …`
 * (several errors in brackets), with one cause per field error.
 */
export function invalid(res: Resource, name: string, errors: FieldError[]): KubeStatusError {
  const parts = errors.map((e) => `${e.field}: ${fieldMessage(e)}`);
  const message = `${qualifiedKind(res)} "${name}" is invalid: ${parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`}`;
  const causes = errors.map((e) => ({ reason: `FieldValue${e.type === 'NotSupported' ? 'NotSupported' : e.type}`, message: fieldMessage(e), field: e.field }));
  return new KubeStatusError(422, 'Invalid', message, { name, ...(res.group ? { group: res.group } : {}), kind: res.kind, causes });
}

/** The keys of a problem path (`spec.containers[0].env["A.B"]` → ['spec', 'containers', 0, 'env', 'A.B']). */
export function pathParts(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  const re = /(?:^|\.)([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g;
  for (const m of path.matchAll(re))
    out.push(
      m[1] !== undefined ? m[1]
      : m[2] !== undefined ? Number(m[2])
      : (JSON.parse(m[3] as string) as string),
    );
  return out;
}

/** The value at a problem path. */
export function valueAt(object: unknown, path: string): unknown {
  let value = object;
  for (const key of pathParts(path)) value = value !== null && typeof value === 'object' ? (value as Obj)[key as string] : undefined;
  return value;
}

/** Remove the field at a problem path (an unknown field the server drops). */
export function dropPath(object: Obj, path: string): void {
  const parts = pathParts(path);
  const last = parts.pop();
  let parent: unknown = object;
  for (const key of parts) parent = parent !== null && typeof parent === 'object' ? (parent as Obj)[key as string] : undefined;
  if (parent !== null && typeof parent === 'object' && last !== undefined) delete (parent as Obj)[last as string];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** What is wrong with an object's name for its kind (undefined when nothing). */
export function nameError(kind: string, name: string): FieldError | undefined {
  const subdomain = name.length <= 253 && name.split('.').every((l) => DNS_LABEL.test(l));
  if (kind === 'Namespace' && !(name.length <= 63 && DNS_LABEL.test(name))) {
    return {
      field: 'metadata.name',
      type: 'Invalid',
      value: name,
      detail:
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    };
  }
  if (kind === 'Service' && !(name.length <= 63 && DNS_1035.test(name))) {
    return {
      field: 'metadata.name',
      type: 'Invalid',
      value: name,
      detail:
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    };
  }
  const rbac = ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(kind);
  if (rbac ? !name || name === '.' || name === '..' || /[/%]/.test(name) : !subdomain) {
    return {
      field: 'metadata.name',
      type: 'Invalid',
      value: name,
      detail:
        rbac ? 'may not contain "/" or "%"' : (
          "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ),
    };
  }
  return undefined;
}

function imagePullPolicy(image: unknown): string {
  const ref = String(image ?? '');
  if (ref.includes('@')) return 'IfNotPresent';
  const tag = /:([^/:]+)$/.exec(ref)?.[1];
  return !tag || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** The defaults of a pod spec (a pod's, or a template's). */
function podSpecDefaults(spec: Obj | undefined, job = false): void {
  if (!isObj(spec)) return;
  if (!job) spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])] as Obj[]) {
    if (!isObj(c)) continue;
    c.imagePullPolicy ??= imagePullPolicy(c.image);
    c.terminationMessagePath ??= '/dev/termination-log';
    c.terminationMessagePolicy ??= 'File';
    c.resources ??= {};
    for (const p of (c.ports ?? []) as Obj[]) if (isObj(p)) p.protocol ??= 'TCP';
  }
}

function template(object: Obj): Obj | undefined {
  return isObj(object.spec?.template) ? object.spec.template : undefined;
}

/**
 * Fill in the defaults the API server fills in (in place). Services' IPs and ports, a Secret's `stringData` and
 * server-owned metadata are the registry's (they need the cluster's state).
 */
export function applyDefaults(kind: string, object: Obj): void {
  const spec = isObj(object.spec) ? object.spec : undefined;
  switch (kind) {
    case 'Pod':
      podSpecDefaults(spec);
      if (spec) {
        spec.serviceAccountName ??= 'default';
        spec.serviceAccount ??= spec.serviceAccountName;
        spec.enableServiceLinks ??= true;
        spec.priority ??= 0;
      }
      break;
    case 'Deployment':
      if (!spec) break;
      spec.replicas ??= 1;
      spec.strategy ??= {};
      spec.strategy.type ??= 'RollingUpdate';
      if (spec.strategy.type === 'RollingUpdate') {
        spec.strategy.rollingUpdate ??= {};
        spec.strategy.rollingUpdate.maxSurge ??= '25%';
        spec.strategy.rollingUpdate.maxUnavailable ??= '25%';
      }
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      podSpecDefaults(template(object)?.spec);
      break;
    case 'ReplicaSet':
      if (spec) spec.replicas ??= 1;
      podSpecDefaults(template(object)?.spec);
      break;
    case 'StatefulSet':
      if (!spec) break;
      spec.replicas ??= 1;
      spec.podManagementPolicy ??= 'OrderedReady';
      spec.updateStrategy ??= {};
      spec.updateStrategy.type ??= 'RollingUpdate';
      if (spec.updateStrategy.type === 'RollingUpdate') {
        spec.updateStrategy.rollingUpdate ??= {};
        spec.updateStrategy.rollingUpdate.partition ??= 0;
      }
      spec.revisionHistoryLimit ??= 10;
      spec.persistentVolumeClaimRetentionPolicy ??= { whenDeleted: 'Retain', whenScaled: 'Retain' };
      for (const claim of (spec.volumeClaimTemplates ?? []) as Obj[]) if (isObj(claim?.spec)) claim.spec.volumeMode ??= 'Filesystem';
      podSpecDefaults(template(object)?.spec);
      break;
    case 'DaemonSet':
      if (!spec) break;
      spec.updateStrategy ??= {};
      spec.updateStrategy.type ??= 'RollingUpdate';
      if (spec.updateStrategy.type === 'RollingUpdate') {
        spec.updateStrategy.rollingUpdate ??= {};
        spec.updateStrategy.rollingUpdate.maxUnavailable ??= 1;
        spec.updateStrategy.rollingUpdate.maxSurge ??= 0;
      }
      spec.revisionHistoryLimit ??= 10;
      podSpecDefaults(template(object)?.spec);
      break;
    case 'Job':
      if (!spec) break;
      spec.backoffLimit ??= 6;
      spec.completions ??= 1;
      spec.parallelism ??= 1;
      spec.completionMode ??= 'NonIndexed';
      spec.suspend ??= false;
      podSpecDefaults(template(object)?.spec, true);
      break;
    case 'Secret':
      object.type ??= 'Opaque';
      break;
    case 'PersistentVolumeClaim':
      if (!spec) break;
      spec.volumeMode ??= 'Filesystem';
      spec.storageClassName ??= 'standard';
      break;
    case 'Namespace':
      object.metadata.labels = { ...object.metadata.labels, 'kubernetes.io/metadata.name': object.metadata.name };
      object.spec = { ...spec, finalizers: spec?.finalizers ?? ['kubernetes'] };
      break;
  }
}

const SELECTING = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet']);
const STATEFULSET_MUTABLE = ['replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'];

function without(o: Obj | undefined, keys: string[]): Obj {
  const out: Obj = { ...o };
  for (const k of keys) delete out[k];
  return out;
}

/**
 * The field errors of an object of `kind` (defaulted) the schema does not catch: a workload's selector against
 * its template, immutable fields against the stored object (`old`), a Job's restart policy, a CRD's name.
 */
export function kindErrors(kind: string, object: Obj, old: Obj | undefined, parseQuantity: (q: string) => number): FieldError[] {
  const errors: FieldError[] = [];
  const spec: Obj = isObj(object.spec) ? object.spec : {};
  if (SELECTING.has(kind)) {
    const selector = spec.selector;
    const labels: Record<string, string> = spec.template?.metadata?.labels ?? {};
    if (!isObj(selector) || (!Object.keys(selector.matchLabels ?? {}).length && !(selector.matchExpressions ?? []).length)) {
      errors.push({ field: 'spec.selector', type: 'Invalid', value: selector ?? null, detail: `empty selector is invalid for ${kind.toLowerCase()}` });
    } else if (!selects(selector, labels)) {
      errors.push({ field: 'spec.template.metadata.labels', type: 'Invalid', value: labels, detail: '`selector` does not match template `labels`' });
    }
    if (old && !same(old.spec?.selector, selector)) errors.push({ field: 'spec.selector', type: 'Invalid', value: selector, detail: 'field is immutable' });
  }
  if (kind === 'Deployment' && spec.strategy?.type === 'Recreate' && spec.strategy.rollingUpdate !== undefined) {
    errors.push({ field: 'spec.strategy.rollingUpdate', type: 'Forbidden', detail: "may not be specified when strategy `type` is 'Recreate'" });
  }
  if (kind === 'StatefulSet' && old && !same(without(old.spec, STATEFULSET_MUTABLE), without(spec, STATEFULSET_MUTABLE))) {
    errors.push({
      field: 'spec',
      type: 'Forbidden',
      detail: `updates to statefulset spec for fields other than ${STATEFULSET_MUTABLE.slice(0, -1)
        .map((f) => `'${f}'`)
        .join(', ')} and 'minReadySeconds' are forbidden`,
    });
  }
  if (kind === 'Job') {
    const policy = spec.template?.spec?.restartPolicy;
    if (policy !== 'Never' && policy !== 'OnFailure')
      errors.push({ field: 'spec.template.spec.restartPolicy', type: policy === undefined ? 'Required' : 'NotSupported', value: policy, detail: 'supported values: "OnFailure", "Never"' });
    if (old && !old.spec?.suspend && !same(old.spec?.template, spec.template)) errors.push({ field: 'spec.template', type: 'Invalid', value: spec.template, detail: 'field is immutable' });
    if (old && !same(old.spec?.completions, spec.completions)) errors.push({ field: 'spec.completions', type: 'Invalid', value: spec.completions, detail: 'field is immutable' });
  }
  if (kind === 'PersistentVolumeClaim' && old) {
    const strip = (s: Obj | undefined): Obj => without(s, ['resources', 'volumeName', 'volumeAttributesClassName']);
    if (!same(strip(old.spec), strip(spec)))
      errors.push({ field: 'spec', type: 'Forbidden', detail: 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims' });
    const before = old.spec?.resources?.requests?.storage;
    const after = spec.resources?.requests?.storage;
    if (before !== undefined && after !== undefined && parseQuantity(String(after)) < parseQuantity(String(before))) {
      errors.push({ field: 'spec.resources.requests.storage', type: 'Forbidden', detail: 'field can not be less than status.capacity' });
    }
  }
  if ((kind === 'Secret' || kind === 'ConfigMap') && old?.immutable === true) {
    if (object.immutable !== true) errors.push({ field: 'immutable', type: 'Forbidden', detail: 'field is immutable when `immutable` is set' });
    if (!same(old.data, object.data)) errors.push({ field: 'data', type: 'Forbidden', detail: 'field is immutable when `immutable` is set' });
    if (!same(old.binaryData, object.binaryData) && kind === 'ConfigMap') errors.push({ field: 'binaryData', type: 'Forbidden', detail: 'field is immutable when `immutable` is set' });
  }
  if (kind === 'Pod' && old) {
    const strip = (s: Obj | undefined): Obj => {
      const out = without(s, ['nodeName', 'activeDeadlineSeconds', 'tolerations']);
      for (const key of ['containers', 'initContainers']) if (Array.isArray(out[key])) out[key] = out[key].map((c: Obj) => without(c, ['image']));
      return out;
    };
    // activeDeadlineSeconds may be set, or lowered, never raised or removed; tolerations may only be added.
    const oldDeadline = old.spec?.activeDeadlineSeconds;
    const deadline = spec?.activeDeadlineSeconds;
    if (deadline !== undefined && deadline !== null) {
      if (!Number.isInteger(deadline) || deadline < 0 || deadline > 2147483647)
        errors.push({ field: 'spec.activeDeadlineSeconds', type: 'Invalid', value: deadline, detail: 'must be between 0 and 2147483647, inclusive' });
      else if (typeof oldDeadline === 'number' && oldDeadline < deadline)
        errors.push({ field: 'spec.activeDeadlineSeconds', type: 'Invalid', value: deadline, detail: 'must be less than or equal to previous value' });
    } else if (typeof oldDeadline === 'number') {
      errors.push({ field: 'spec.activeDeadlineSeconds', type: 'Invalid', value: null, detail: 'must not update from a positive integer to nil value' });
    }
    const kept = (a: Obj, b: Obj): boolean => ['key', 'operator', 'value', 'effect'].every((k) => (a[k] ?? '') === (b[k] ?? ''));
    const tolerations: Obj[] = Array.isArray(spec?.tolerations) ? spec.tolerations : [];
    for (const t of (old.spec?.tolerations ?? []) as Obj[]) {
      if (!tolerations.some((n) => kept(t, n))) {
        errors.push({ field: 'spec.tolerations', type: 'Forbidden', detail: 'existing toleration can not be modified except its tolerationSeconds' });
        break;
      }
    }
    if (!same(strip(old.spec), strip(spec)))
      errors.push({
        field: 'spec',
        type: 'Forbidden',
        detail:
          'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
      });
  }
  if (kind === 'CustomResourceDefinition') {
    const expected = `${spec.names?.plural}.${spec.group}`;
    if (object.metadata.name !== expected) errors.push({ field: 'metadata.name', type: 'Invalid', value: object.metadata.name, detail: 'must be spec.names.plural+"."+spec.group' });
    const storage = ((spec.versions ?? []) as Obj[]).filter((v) => v.storage === true).length;
    if (storage !== 1) errors.push({ field: 'spec.versions', type: 'Invalid', value: spec.versions, detail: 'must have exactly one version marked as storage version' });
  }
  return errors;
}
