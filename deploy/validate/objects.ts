/**
 * Checks inside one object that the schemas do not make: its names (DNS-1123
 * by kind, namespace, labels, annotation keys), a workload's selector against
 * its own pod template, Service port names, ConfigMap and Secret keys, claim
 * sizes, an autoscaler's bounds, a CRD's name.
 */
import { at, arr, obj, str } from './path.ts';
import { configKeyProblem, dnsLabelProblem, dnsSubdomainProblem, labelKeyProblem, pathSegmentProblem, portNameProblem } from './names.ts';
import { checkLabelMap, checkPod, checkResources, checkSelector, isEmptySelector, podTemplateOf, renderLabels, selects, type Entry, type Report } from './pods.ts';
import { isClusterScoped } from './schema.ts';

/** Kinds whose names Kubernetes requires to be DNS-1123 labels (they become DNS names or label values). */
const LABEL_NAMED = new Set(['Namespace', 'Service']);
/** Kinds whose names are only path segments (RBAC: `system:metrics-reader` is a valid ClusterRole name). */
const SEGMENT_NAMED = new Set(['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding']);
/** Workloads whose selector must select their own pod template (a Job's is generated). */
const SELECTING = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']);

function checkMetadata(entry: Entry, report: Report): void {
  const metadata = obj(entry.object.metadata);
  const name = metadata?.name;
  if (name === undefined || name === '') {
    if (!entry.schemaPaths.has('metadata.name')) report(entry, 'metadata.name', 'is required');
  } else {
    const problem = LABEL_NAMED.has(entry.kind) ? dnsLabelProblem(name) : SEGMENT_NAMED.has(entry.kind) ? pathSegmentProblem(name) : dnsSubdomainProblem(name);
    if (problem) report(entry, 'metadata.name', `${problem}${LABEL_NAMED.has(entry.kind) ? ` (a ${entry.kind}'s name is a DNS-1123 label)` : ''}`);
  }
  const namespace = metadata?.namespace;
  if (isClusterScoped(entry.apiVersion, entry.kind)) {
    if (namespace !== undefined) report(entry, 'metadata.namespace', `a ${entry.kind} is cluster-scoped: it has no namespace`);
  } else if (namespace === undefined || namespace === '') {
    report(entry, 'metadata.namespace', `is required: without it the object lands in whatever namespace the client defaults to`);
  } else {
    const problem = dnsLabelProblem(namespace);
    if (problem) report(entry, 'metadata.namespace', problem);
  }
  checkLabelMap(entry, 'metadata.labels', metadata?.labels, report);
  for (const key of Object.keys(obj(metadata?.annotations) ?? {})) {
    const problem = labelKeyProblem(key);
    if (problem) report(entry, at('metadata.annotations', key), problem);
  }
}

function checkWorkloadSelector(entry: Entry, report: Report): void {
  const template = podTemplateOf(entry);
  const selector = obj(obj(entry.object.spec)?.selector);
  if (!template || !selector) return;
  checkSelector(entry, 'spec.selector', selector, report);
  if (isEmptySelector(selector)) {
    report(entry, 'spec.selector', `an empty selector: a ${entry.kind} must select its pods by label`);
    return;
  }
  const labelsPath = at(at(template.path, 'metadata'), 'labels');
  for (const [key, value] of Object.entries(obj(selector.matchLabels) ?? {})) {
    if (template.labels[key] !== value) report(entry, at('spec.selector.matchLabels', key), `${key}=${String(value)} is not a label of the pod template (${labelsPath}: ${renderLabels(template.labels)})`);
  }
  arr(selector.matchExpressions).forEach((raw, i) => {
    if (selects({ matchExpressions: [raw] }, template.labels)) return;
    report(entry, at('spec.selector.matchExpressions', i), `does not hold for the pod template's labels (${labelsPath}: ${renderLabels(template.labels)})`);
  });
}

function checkServicePorts(entry: Entry, report: Report): void {
  const spec = obj(entry.object.spec) ?? {};
  const ports = arr(spec.ports);
  const seen = new Map<string, number>();
  ports.forEach((raw, i) => {
    const port = obj(raw) ?? {};
    const p = at('spec.ports', i);
    // A named target port is a container port's name.
    const target = typeof port.targetPort === 'string' ? portNameProblem(port.targetPort) : undefined;
    if (target) report(entry, at(p, 'targetPort'), `a named target port is a container port name: ${target}`);
    if (port.name === undefined || port.name === '') {
      if (ports.length > 1) report(entry, at(p, 'name'), 'a Service with more than one port names each of them');
      return;
    }
    const problem = dnsLabelProblem(port.name);
    if (problem) report(entry, at(p, 'name'), problem);
    if (seen.has(String(port.name))) report(entry, at(p, 'name'), `a second port named ${JSON.stringify(port.name)} (first at spec.ports[${seen.get(String(port.name))}])`);
    else seen.set(String(port.name), i);
  });
  if (spec.selector !== undefined) checkLabelMap(entry, 'spec.selector', spec.selector, report);
}

function checkConfigKeys(entry: Entry, report: Report): void {
  const seen = new Map<string, string>();
  for (const field of entry.kind === 'Secret' ? ['data', 'stringData'] : ['data', 'binaryData']) {
    for (const key of Object.keys(obj(entry.object[field]) ?? {})) {
      const problem = configKeyProblem(key);
      if (problem) report(entry, at(field, key), problem);
      // A Secret's stringData overrides data by design; a ConfigMap's key lives in one of data, binaryData.
      if (entry.kind === 'ConfigMap' && seen.has(key)) report(entry, at(field, key), `${JSON.stringify(key)} is also in ${seen.get(key)}`);
      seen.set(key, field);
    }
  }
}

/**
 * The checks of one object that need no other object. `entry.kind` is one
 * svc validates; the schema layer has run (its paths are in `entry.schemaPaths`).
 */
export function checkObject(entry: Entry, report: Report): void {
  checkMetadata(entry, report);
  const spec = obj(entry.object.spec);
  const template = podTemplateOf(entry);
  if (template) checkPod(template, report);
  if (SELECTING.has(entry.kind)) checkWorkloadSelector(entry, report);
  switch (entry.kind) {
    case 'Service':
      checkServicePorts(entry, report);
      break;
    case 'ConfigMap':
    case 'Secret':
      checkConfigKeys(entry, report);
      break;
    case 'PersistentVolumeClaim':
      checkResources(entry, 'spec.resources', obj(spec?.resources), report);
      break;
    case 'StatefulSet':
      arr(spec?.volumeClaimTemplates).forEach((raw, i) => {
        const claim = obj(raw) ?? {};
        const p = at('spec.volumeClaimTemplates', i);
        const name = obj(claim.metadata)?.name;
        const problem = name === undefined ? 'is required' : dnsLabelProblem(name);
        if (problem) report(entry, at(p, 'metadata.name'), problem);
        checkResources(entry, at(p, 'spec.resources'), obj(obj(claim.spec)?.resources), report);
      });
      break;
    case 'HorizontalPodAutoscaler': {
      const min = typeof spec?.minReplicas === 'number' ? spec.minReplicas : 1;
      if (typeof spec?.maxReplicas === 'number' && min > spec.maxReplicas) report(entry, 'spec.minReplicas', `minReplicas ${min} is above maxReplicas ${spec.maxReplicas}`);
      break;
    }
    case 'PodDisruptionBudget':
      checkSelector(entry, 'spec.selector', obj(spec?.selector), report);
      if (spec?.minAvailable !== undefined && spec.maxUnavailable !== undefined) report(entry, 'spec.maxUnavailable', 'minAvailable and maxUnavailable exclude each other');
      break;
    case 'NetworkPolicy':
      checkSelector(entry, 'spec.podSelector', obj(spec?.podSelector), report);
      break;
    case 'CustomResourceDefinition': {
      const plural = str(obj(spec?.names)?.plural);
      const group = str(spec?.group);
      if (plural && group && entry.name && entry.name !== `${plural}.${group}`) report(entry, 'metadata.name', `a CustomResourceDefinition is named <plural>.<group>: ${plural}.${group}`);
      break;
    }
  }
}
