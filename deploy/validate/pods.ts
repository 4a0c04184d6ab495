/**
 * Pods as the manifests hold them: the pod template of each workload kind,
 * label selectors, and the checks inside one pod spec (container and port
 * names, volume mounts, resource quantities and requests ≤ limits).
 */
import { at, arr, obj, str, type Json } from './path.ts';
import { dnsLabelProblem, labelKeyProblem, labelValueProblem, portNameProblem } from './names.ts';
import { parseQuantity, quantityProblem } from './quantity.ts';

/** One object of the manifest set, as the checks see it. */
export interface Entry {
  object: Json;
  /** `Kind/namespace/name` (`Kind/name` when cluster-scoped). */
  id: string;
  apiVersion: string;
  kind: string;
  name: string;
  /** The namespace it lives in ('' when cluster-scoped or unset). */
  namespace: string;
  /** Paths the schema layer already refused (no second problem for the same path). */
  schemaPaths: Set<string>;
}

/** Records a problem of `entry` at `path`. */
export type Report = (entry: Entry, path: string, message: string) => void;

/** The pod template of a workload, where it is, and its labels. */
export interface PodTemplate {
  entry: Entry;
  /** The path of the template (`spec.template`; '' for a Pod: its own metadata and spec). */
  path: string;
  labels: Record<string, string>;
  /** The template's (or the Pod's) metadata. */
  metadata: Json | undefined;
  spec: Json;
}

/** Kinds whose pods a Service, a PodDisruptionBudget or a NetworkPolicy may select (they own a pod template). */
export const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob', 'Pod']);

/** The pod template of a workload object, or undefined for another kind (or a template too broken to read). */
export function podTemplateOf(entry: Entry): PodTemplate | undefined {
  if (!WORKLOAD_KINDS.has(entry.kind)) return undefined;
  const path = entry.kind === 'Pod' ? '' : entry.kind === 'CronJob' ? 'spec.jobTemplate.spec.template' : 'spec.template';
  let template: Json | undefined = entry.object;
  if (path) for (const key of path.split('.')) template = obj(template?.[key]);
  const spec = obj(template?.spec);
  if (!template || !spec) return undefined;
  const metadata = obj(template.metadata);
  return { entry, path, labels: stringMap(metadata?.labels), metadata, spec };
}

/** The string entries of a map (labels, a Service's selector). */
export function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj(value) ?? {})) if (typeof v === 'string') out[k] = v;
  return out;
}

/** Whether a LabelSelector (`matchLabels`, `matchExpressions`) selects nothing in particular: it then matches every pod. */
export function isEmptySelector(selector: Json | undefined): boolean {
  return Object.keys(obj(selector?.matchLabels) ?? {}).length === 0 && arr(selector?.matchExpressions).length === 0;
}

/** Why one requirement of a LabelSelector does not hold for `labels`, or undefined when it holds. */
function unmet(expression: Json, labels: Record<string, string>): string | undefined {
  const key = String(expression.key);
  const values = arr(expression.values).map(String);
  const has = Object.hasOwn(labels, key);
  switch (expression.operator) {
    case 'In': return has && values.includes(labels[key] as string) ? undefined : `${key} in (${values.join(', ')})`;
    case 'NotIn': return has && values.includes(labels[key] as string) ? `${key} notin (${values.join(', ')})` : undefined;
    case 'Exists': return has ? undefined : `${key} exists`;
    case 'DoesNotExist': return has ? `!${key}` : undefined;
    default: return `${key} ${String(expression.operator)} (an unknown operator)`;
  }
}

/** Whether a LabelSelector selects pods with `labels`. */
export function selects(selector: Json | undefined, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(obj(selector?.matchLabels) ?? {})) if (labels[k] !== v) return false;
  return arr(selector?.matchExpressions).every((e) => unmet(obj(e) ?? {}, labels) === undefined);
}

/** Whether a plain map selector (a Service's `spec.selector`) selects pods with `labels`. */
export function mapSelects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Renders labels for a message: `app=web, tier=api`. */
export function renderLabels(labels: Record<string, string>): string {
  const text = Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(', ');
  return text || '(none)';
}

/** Label keys and values of a map (metadata.labels, matchLabels, a Service's selector). */
export function checkLabelMap(entry: Entry, path: string, map: unknown, report: Report): void {
  for (const [key, value] of Object.entries(obj(map) ?? {})) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) report(entry, at(path, key), keyProblem);
    const valueProblem = labelValueProblem(value);
    if (valueProblem && !entry.schemaPaths.has(at(path, key))) report(entry, at(path, key), valueProblem);
  }
}

/** A LabelSelector's keys and values. */
export function checkSelector(entry: Entry, path: string, selector: Json | undefined, report: Report): void {
  if (!selector) return;
  checkLabelMap(entry, at(path, 'matchLabels'), selector.matchLabels, report);
  arr(selector.matchExpressions).forEach((raw, i) => {
    const e = obj(raw) ?? {};
    const p = at(at(path, 'matchExpressions'), i);
    const keyProblem = typeof e.key === 'string' ? labelKeyProblem(e.key) : undefined;
    if (keyProblem) report(entry, at(p, 'key'), keyProblem);
    const values = arr(e.values);
    if ((e.operator === 'In' || e.operator === 'NotIn') && values.length === 0) report(entry, at(p, 'values'), `${String(e.operator)} needs at least one value`);
    if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && values.length > 0) report(entry, at(p, 'values'), `${String(e.operator)} takes no values`);
    values.forEach((v, j) => {
      const problem = labelValueProblem(v);
      if (problem) report(entry, at(at(p, 'values'), j), problem);
    });
  });
}

/** The containers of a pod spec with their paths: app containers, init containers, ephemeral containers. */
export function containersOf(spec: Json, specPath: string): Array<{ container: Json; path: string; init: boolean }> {
  const out: Array<{ container: Json; path: string; init: boolean }> = [];
  for (const field of ['containers', 'initContainers', 'ephemeralContainers']) {
    arr(spec[field]).forEach((c, i) => {
      const container = obj(c);
      if (container) out.push({ container, path: at(at(specPath, field), i), init: field !== 'containers' });
    });
  }
  return out;
}

/** Containers that can serve traffic: app containers, and sidecars (init containers that keep running). */
export function servingContainers(spec: Json): Json[] {
  const sidecars = arr(spec.initContainers).map(obj).filter((c): c is Json => c?.restartPolicy === 'Always');
  return [...arr(spec.containers).map(obj).filter((c): c is Json => c !== undefined), ...sidecars];
}

/**
 * Quantities of a `requests`/`limits` pair (a container's resources, a claim's
 * storage): each parses, none is negative, each request ≤ its limit.
 */
export function checkResources(entry: Entry, path: string, resources: Json | undefined, report: Report): void {
  if (!resources) return;
  const parsed: Record<'requests' | 'limits', Record<string, number>> = { requests: {}, limits: {} };
  for (const side of ['requests', 'limits'] as const) {
    for (const [name, value] of Object.entries(obj(resources[side]) ?? {})) {
      const p = at(at(path, side), name);
      const problem = quantityProblem(value);
      if (problem) {
        if (!entry.schemaPaths.has(p)) report(entry, p, problem);
        continue;
      }
      const n = parseQuantity(value as string | number);
      if (n < 0) report(entry, p, `${JSON.stringify(value)} is negative`);
      else parsed[side][name] = n;
    }
  }
  for (const [name, request] of Object.entries(parsed.requests)) {
    const limit = parsed.limits[name];
    if (limit !== undefined && request > limit) {
      const shown = (side: 'requests' | 'limits') => JSON.stringify((obj(resources[side]) as Json)[name]);
      report(entry, at(at(path, 'requests'), name), `the ${name} request ${shown('requests')} is above its limit ${shown('limits')}`);
    }
  }
}

/** Checks inside one pod template: its labels, container and port names, volumes and mounts, resources. */
export function checkPod(template: PodTemplate, report: Report): void {
  const { entry, spec } = template;
  const specPath = at(template.path, 'spec');
  // A Pod's own labels are checked with every object's metadata.
  if (template.path) checkLabelMap(entry, at(at(template.path, 'metadata'), 'labels'), template.metadata?.labels, report);
  const names = new Map<string, string>();
  const portNames = new Map<string, string>();
  const volumes = new Set<string>();
  arr(spec.volumes).forEach((v, i) => {
    const volume = obj(v) ?? {};
    const p = at(at(specPath, 'volumes'), i);
    const name = str(volume.name);
    if (name === undefined) return;
    const problem = dnsLabelProblem(name);
    if (problem) report(entry, at(p, 'name'), problem);
    if (volumes.has(name)) report(entry, at(p, 'name'), `a second volume named ${JSON.stringify(name)}`);
    volumes.add(name);
    const sizeLimit = obj(volume.emptyDir)?.sizeLimit;
    if (sizeLimit !== undefined && !entry.schemaPaths.has(at(at(p, 'emptyDir'), 'sizeLimit'))) {
      const q = quantityProblem(sizeLimit);
      if (q) report(entry, at(at(p, 'emptyDir'), 'sizeLimit'), q);
    }
  });
  // A StatefulSet's claim templates are mounted by name like volumes.
  const claims = new Set(arr(obj(entry.object.spec)?.volumeClaimTemplates).map((c) => str(obj(obj(c)?.metadata)?.name)).filter((n): n is string => n !== undefined));
  for (const { container, path } of containersOf(spec, specPath)) {
    // The schema leaves it optional (a pod template may be completed by a controller); the API server does not.
    if ((container.image === undefined || container.image === '') && !entry.schemaPaths.has(at(path, 'image'))) report(entry, at(path, 'image'), 'is required');
    const name = str(container.name);
    if (name !== undefined) {
      const problem = dnsLabelProblem(name);
      if (problem) report(entry, at(path, 'name'), problem);
      const earlier = names.get(name);
      if (earlier) report(entry, at(path, 'name'), `a second container named ${JSON.stringify(name)} (first at ${earlier})`);
      else names.set(name, path);
    }
    arr(container.ports).forEach((raw, i) => {
      const port = obj(raw) ?? {};
      const p = at(at(path, 'ports'), i);
      if (typeof port.containerPort === 'number' && (port.containerPort < 1 || port.containerPort > 65535)) report(entry, at(p, 'containerPort'), `${port.containerPort} is not a port number (1-65535)`);
      if (port.name === undefined) return;
      const problem = portNameProblem(port.name);
      if (problem) report(entry, at(p, 'name'), problem);
      const earlier = portNames.get(String(port.name));
      if (earlier) report(entry, at(p, 'name'), `a second port named ${JSON.stringify(port.name)} in the pod (first at ${earlier})`);
      else portNames.set(String(port.name), p);
    });
    // A probe's named port is looked up among the container's own ports: a missing one fails every probe.
    const own = new Set(arr(container.ports).map((raw) => str(obj(raw)?.name)).filter((n): n is string => n !== undefined));
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
      for (const handler of ['httpGet', 'tcpSocket', 'grpc']) {
        const port = obj(obj(container[probe])?.[handler])?.port;
        if (typeof port !== 'string' || own.has(port)) continue;
        report(entry, at(at(at(path, probe), handler), 'port'), `names port "${port}", which is not a port of this container (its named ports: ${[...own].join(', ') || 'none'})`);
      }
    }
    arr(container.volumeMounts).forEach((raw, i) => {
      const mount = str(obj(raw)?.name);
      if (mount === undefined || volumes.has(mount) || claims.has(mount)) return;
      report(entry, at(at(at(path, 'volumeMounts'), i), 'name'), `mounts ${JSON.stringify(mount)}, which is not a volume of the pod${claims.size ? ' nor a volumeClaimTemplate' : ''}`);
    });
    checkResources(entry, at(path, 'resources'), obj(container.resources), report);
  }
}
