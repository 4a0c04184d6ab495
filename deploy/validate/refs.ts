/**
 * Checks across objects: every name an object gives of another must be an
 * object of the set, in the namespace it is looked up in — Secrets and
 * ConfigMaps (with their keys) of env, envFrom and volumes, claims, service
 * accounts, a Service's pods and their ports, an autoscaler's target, the
 * pods of disruption budgets and network policies, the Services (and ports)
 * of ingress routes, Traefik middlewares, RBAC roles.
 */
import { at, arr, obj, str, type Json } from './path.ts';
import { containersOf, isEmptySelector, mapSelects, podTemplateOf, renderLabels, selects, servingContainers, stringMap, type Entry, type PodTemplate, type Report } from './pods.ts';

/** Built-in ClusterRoles a binding may name without the set holding them. */
const BUILTIN_CLUSTER_ROLES = new Set(['cluster-admin', 'admin', 'edit', 'view']);

/** The objects of a set by kind, namespace and name, and the pod templates of its workloads. */
export class ManifestIndex {
  readonly pods: PodTemplate[] = [];
  /** Namespaces the set places objects in. */
  readonly namespaces = new Set<string>();
  private readonly objects = new Map<string, Entry>();

  /** Adds an entry; answers the entry already there under the same kind, namespace and name, if any. */
  add(entry: Entry): Entry | undefined {
    const key = `${entry.kind}|${entry.namespace}|${entry.name}`;
    const earlier = this.objects.get(key);
    if (earlier) return earlier;
    this.objects.set(key, entry);
    if (entry.namespace) this.namespaces.add(entry.namespace);
    const template = podTemplateOf(entry);
    if (template) this.pods.push(template);
    return undefined;
  }

  get(kind: string, namespace: string, name: string): Entry | undefined {
    return this.objects.get(`${kind}|${namespace}|${name}`);
  }

  /** The pod templates of `namespace`. */
  podsIn(namespace: string): PodTemplate[] {
    return this.pods.filter((p) => p.entry.namespace === namespace);
  }
}

/** The message for a reference to an object the set does not hold. */
function missing(kind: string, name: string, namespace: string): string {
  return `names ${kind} "${name}", which is not in the set (namespace ${namespace || '(none)'})`;
}

/** The keys a Secret (data, stringData) or a ConfigMap (data, binaryData) holds. */
function keysOf(entry: Entry): string[] {
  const fields = entry.kind === 'Secret' ? ['data', 'stringData'] : ['data', 'binaryData'];
  return fields.flatMap((f) => Object.keys(obj(entry.object[f]) ?? {}));
}

interface Checker {
  index: ManifestIndex;
  report: Report;
}

/** A reference to a Secret or ConfigMap of `entry`'s namespace, and optionally to one of its keys; none when optional. */
function configRef(c: Checker, entry: Entry, kind: 'Secret' | 'ConfigMap', name: unknown, namePath: string, key?: { value: unknown; path: string }, optional?: unknown): void {
  if (optional === true || typeof name !== 'string') return;
  const target = c.index.get(kind, entry.namespace, name);
  if (!target) {
    c.report(entry, namePath, missing(kind, name, entry.namespace));
    return;
  }
  if (key && typeof key.value === 'string') {
    const keys = keysOf(target);
    if (!keys.includes(key.value)) c.report(entry, key.path, `key "${key.value}" is not in ${target.id} (its keys: ${keys.join(', ') || 'none'})`);
  }
}

/** The references of a pod template: env, envFrom, volumes, the service account. */
function podRefs(c: Checker, template: PodTemplate): void {
  const { entry, spec } = template;
  const specPath = at(template.path, 'spec');
  for (const { container, path } of containersOf(spec, specPath)) {
    arr(container.env).forEach((raw, i) => {
      const from = obj(obj(raw)?.valueFrom);
      const p = at(at(at(path, 'env'), i), 'valueFrom');
      for (const [field, kind] of [['secretKeyRef', 'Secret'], ['configMapKeyRef', 'ConfigMap']] as const) {
        const ref = obj(from?.[field]);
        if (ref) configRef(c, entry, kind, ref.name, at(at(p, field), 'name'), { value: ref.key, path: at(at(p, field), 'key') }, ref.optional);
      }
    });
    arr(container.envFrom).forEach((raw, i) => {
      const source = obj(raw) ?? {};
      const p = at(at(path, 'envFrom'), i);
      for (const [field, kind] of [['secretRef', 'Secret'], ['configMapRef', 'ConfigMap']] as const) {
        const ref = obj(source[field]);
        if (ref) configRef(c, entry, kind, ref.name, at(at(p, field), 'name'), undefined, ref.optional);
      }
    });
  }
  arr(spec.volumes).forEach((raw, i) => {
    const volume = obj(raw) ?? {};
    const p = at(at(specPath, 'volumes'), i);
    const items = (source: Json, kind: 'Secret' | 'ConfigMap', name: unknown, namePath: string, sourcePath: string) => {
      configRef(c, entry, kind, name, namePath, undefined, source.optional);
      if (source.optional === true || typeof name !== 'string' || !c.index.get(kind, entry.namespace, name)) return;
      arr(source.items).forEach((item, k) => configRef(c, entry, kind, name, namePath, { value: obj(item)?.key, path: at(at(at(sourcePath, 'items'), k), 'key') }));
    };
    const secret = obj(volume.secret);
    if (secret) items(secret, 'Secret', secret.secretName, at(at(p, 'secret'), 'secretName'), at(p, 'secret'));
    const configMap = obj(volume.configMap);
    if (configMap) items(configMap, 'ConfigMap', configMap.name, at(at(p, 'configMap'), 'name'), at(p, 'configMap'));
    arr(obj(volume.projected)?.sources).forEach((rawSource, k) => {
      const source = obj(rawSource) ?? {};
      const sp = at(at(at(p, 'projected'), 'sources'), k);
      const s = obj(source.secret);
      if (s) items(s, 'Secret', s.name, at(at(sp, 'secret'), 'name'), at(sp, 'secret'));
      const m = obj(source.configMap);
      if (m) items(m, 'ConfigMap', m.name, at(at(sp, 'configMap'), 'name'), at(sp, 'configMap'));
    });
    const claim = str(obj(volume.persistentVolumeClaim)?.claimName);
    if (claim !== undefined && !c.index.get('PersistentVolumeClaim', entry.namespace, claim)) c.report(entry, at(at(p, 'persistentVolumeClaim'), 'claimName'), missing('PersistentVolumeClaim', claim, entry.namespace));
  });
  const account = str(spec.serviceAccountName) ?? str(spec.serviceAccount);
  if (account !== undefined && account !== 'default' && !c.index.get('ServiceAccount', entry.namespace, account)) {
    c.report(entry, at(specPath, spec.serviceAccountName !== undefined ? 'serviceAccountName' : 'serviceAccount'), missing('ServiceAccount', account, entry.namespace));
  }
}

/** The container ports of a pod template, rendered for a message. */
function renderPorts(spec: Json): string {
  const ports = servingContainers(spec).flatMap((container) => arr(container.ports).map((p) => obj(p) ?? {}));
  return ports.map((p) => `${p.name ? `${String(p.name)}=` : ''}${String(p.containerPort)}/${String(p.protocol ?? 'TCP')}`).join(', ') || 'none declared';
}

/** Whether a pod template's serving containers have the port a Service targets (a number, or a port name). */
function hasTargetPort(spec: Json, target: unknown, protocol: string): boolean {
  return servingContainers(spec).some((container) =>
    arr(container.ports).some((raw) => {
      const port = obj(raw) ?? {};
      if ((port.protocol ?? 'TCP') !== protocol) return false;
      return typeof target === 'number' ? port.containerPort === target : port.name === target;
    }),
  );
}

function serviceRefs(c: Checker, entry: Entry): void {
  const spec = obj(entry.object.spec) ?? {};
  if (spec.type === 'ExternalName') return;
  const selector = stringMap(spec.selector);
  // No selector: the Service's endpoints are managed by hand; nothing to match.
  if (Object.keys(selector).length === 0) return;
  const here = c.index.podsIn(entry.namespace);
  const selected = here.filter((p) => mapSelects(selector, p.labels));
  if (selected.length === 0) {
    const known = here.map((p) => `${p.entry.id} (${renderLabels(p.labels)})`).join('; ') || 'none';
    c.report(entry, 'spec.selector', `selects no pods: no workload of the set in namespace ${entry.namespace} has the labels ${renderLabels(selector)} (its workloads: ${known})`);
    return;
  }
  arr(spec.ports).forEach((raw, i) => {
    const port = obj(raw) ?? {};
    const target = port.targetPort ?? port.port;
    if (typeof target !== 'number' && typeof target !== 'string') return;
    const protocol = String(port.protocol ?? 'TCP');
    for (const pod of selected) {
      if (hasTargetPort(pod.spec, target, protocol)) continue;
      const what = typeof target === 'number' ? `port ${target}/${protocol}` : `a port named "${target}" (${protocol})`;
      const defaulted = port.targetPort === undefined ? ' (targetPort defaults to port)' : '';
      c.report(entry, at(at('spec.ports', i), 'targetPort'), `${what}${defaulted} is not a container port of ${pod.entry.id} (its ports: ${renderPorts(pod.spec)})`);
    }
  });
}

/** A backend naming a Service of the set and one of its ports (by number or name). */
function serviceBackend(c: Checker, entry: Entry, namespace: string, name: unknown, namePath: string, port: unknown, portPath: string): void {
  if (typeof name !== 'string') return;
  const service = c.index.get('Service', namespace, name);
  if (!service) {
    c.report(entry, namePath, missing('Service', name, namespace));
    return;
  }
  if (typeof port !== 'number' && typeof port !== 'string') return;
  const ports = arr(obj(service.object.spec)?.ports).map((p) => obj(p) ?? {});
  if (ports.some((p) => (typeof port === 'number' ? p.port === port : p.name === port))) return;
  const listed = ports.map((p) => `${p.name ? `${String(p.name)}=` : ''}${String(p.port)}`).join(', ') || 'none';
  c.report(entry, portPath, `${service.id} has no port ${typeof port === 'number' ? port : `named "${port}"`} (its ports: ${listed})`);
}

function ingressRefs(c: Checker, entry: Entry): void {
  const spec = obj(entry.object.spec) ?? {};
  const backend = (raw: unknown, path: string) => {
    const service = obj(obj(raw)?.service);
    if (!service) return;
    const port = obj(service.port) ?? {};
    const sp = at(path, 'service');
    serviceBackend(c, entry, entry.namespace, service.name, at(sp, 'name'), port.number ?? port.name, at(at(sp, 'port'), port.number !== undefined ? 'number' : 'name'));
  };
  backend(spec.defaultBackend, 'spec.defaultBackend');
  arr(spec.rules).forEach((rule, i) => {
    arr(obj(obj(rule)?.http)?.paths).forEach((p, j) => backend(obj(p)?.backend, at(at(at(at('spec.rules', i), 'http'), 'paths'), j) + '.backend'));
  });
}

/** A Traefik middleware reference (`name`, `namespace`); `name@provider` references live outside Kubernetes and are not checked. */
function middlewareRef(c: Checker, entry: Entry, kind: 'Middleware' | 'MiddlewareTCP', raw: unknown, path: string): void {
  const ref = obj(raw) ?? {};
  const name = str(ref.name);
  if (name === undefined || name.includes('@')) return;
  const namespace = str(ref.namespace) ?? entry.namespace;
  if (!c.index.get(kind, namespace, name)) c.report(entry, at(path, 'name'), missing(kind, name, namespace));
}

function traefikRefs(c: Checker, entry: Entry): void {
  const spec = obj(entry.object.spec) ?? {};
  if (entry.kind === 'Middleware') {
    arr(obj(spec.chain)?.middlewares).forEach((m, i) => middlewareRef(c, entry, 'Middleware', m, at('spec.chain.middlewares', i)));
    // Credentials a middleware reads: a Secret of its namespace (basic and digest auth, forward auth's TLS).
    for (const auth of ['basicAuth', 'digestAuth'] as const) {
      const secret = obj(spec[auth])?.secret;
      if (secret !== undefined) configRef(c, entry, 'Secret', secret, `spec.${auth}.secret`);
    }
    const service = obj(obj(spec.errors)?.service);
    if (service && (service.kind ?? 'Service') === 'Service') {
      serviceBackend(c, entry, str(service.namespace) ?? entry.namespace, service.name, 'spec.errors.service.name', service.port, 'spec.errors.service.port');
    }
    return;
  }
  const tcp = entry.kind === 'IngressRouteTCP';
  arr(spec.routes).forEach((rawRoute, i) => {
    const route = obj(rawRoute) ?? {};
    const rp = at('spec.routes', i);
    arr(route.middlewares).forEach((m, j) => middlewareRef(c, entry, tcp ? 'MiddlewareTCP' : 'Middleware', m, at(at(rp, 'middlewares'), j)));
    arr(route.services).forEach((rawService, j) => {
      const service = obj(rawService) ?? {};
      const sp = at(at(rp, 'services'), j);
      const namespace = str(service.namespace) ?? entry.namespace;
      if ((service.kind ?? 'Service') === 'Service') serviceBackend(c, entry, namespace, service.name, at(sp, 'name'), service.port, at(sp, 'port'));
      else if (service.kind === 'TraefikService' && typeof service.name === 'string' && !service.name.includes('@') && !c.index.get('TraefikService', namespace, service.name)) {
        c.report(entry, at(sp, 'name'), missing('TraefikService', service.name, namespace));
      }
    });
  });
}

/** A LabelSelector that must select some pod of the set in `namespace`. */
function selectsSomePod(c: Checker, entry: Entry, namespace: string, selector: Json | undefined, path: string, what: string): void {
  if (!selector || isEmptySelector(selector)) return;
  if (c.index.podsIn(namespace).some((p) => selects(selector, p.labels))) return;
  const known = c.index.podsIn(namespace).map((p) => `${p.entry.id} (${renderLabels(p.labels)})`).join('; ') || 'none';
  c.report(entry, path, `${what} selects no pod of the set in namespace ${namespace} (its workloads: ${known})`);
}

function autoscalerRefs(c: Checker, entry: Entry): void {
  const spec = obj(entry.object.spec) ?? {};
  const ref = obj(spec.scaleTargetRef) ?? {};
  if (typeof ref.kind !== 'string' || typeof ref.name !== 'string') return;
  const target = c.index.get(ref.kind, entry.namespace, ref.name);
  if (!target || (typeof ref.apiVersion === 'string' && ref.apiVersion !== target.apiVersion)) {
    c.report(entry, 'spec.scaleTargetRef.name', missing(`${typeof ref.apiVersion === 'string' ? `${ref.apiVersion} ` : ''}${ref.kind}`, ref.name, entry.namespace));
    return;
  }
  const template = podTemplateOf(target);
  if (!template) return;
  // A utilization target is a share of the request: every container must request that resource, or the autoscaler cannot compute it.
  arr(spec.metrics).forEach((raw, i) => {
    const metric = obj(raw) ?? {};
    const resource = obj(metric.resource);
    if (metric.type !== 'Resource' || !resource || obj(resource.target)?.type !== 'Utilization' || typeof resource.name !== 'string') return;
    const name = resource.name as string;
    arr(template.spec.containers).forEach((rawContainer) => {
      const container = obj(rawContainer) ?? {};
      if (obj(obj(container.resources)?.requests)?.[name] !== undefined) return;
      c.report(entry, at(at(at('spec.metrics', i), 'resource'), 'name'), `a ${name} utilization target needs a ${name} request on every container of ${target.id}; container "${String(container.name)}" has none`);
    });
  });
}

function bindingRefs(c: Checker, entry: Entry): void {
  const roleRef = obj(entry.object.roleRef) ?? {};
  const name = str(roleRef.name);
  if (name !== undefined) {
    if (roleRef.kind === 'Role' && !c.index.get('Role', entry.namespace, name)) c.report(entry, 'roleRef.name', missing('Role', name, entry.namespace));
    const builtIn = BUILTIN_CLUSTER_ROLES.has(name) || name.startsWith('system:');
    if (roleRef.kind === 'ClusterRole' && !c.index.get('ClusterRole', '', name) && !builtIn) c.report(entry, 'roleRef.name', `names ClusterRole "${name}", which is neither in the set nor built in`);
  }
  arr(entry.object.subjects).forEach((raw, i) => {
    const subject = obj(raw) ?? {};
    if (subject.kind !== 'ServiceAccount' || typeof subject.name !== 'string') return;
    const namespace = str(subject.namespace) ?? entry.namespace;
    // Only the namespaces the set deploys to are known; an account elsewhere is the cluster's.
    if (c.index.namespaces.has(namespace) && !c.index.get('ServiceAccount', namespace, subject.name)) c.report(entry, at(at('subjects', i), 'name'), missing('ServiceAccount', subject.name, namespace));
  });
}

/** Every cross-object check of one entry against the index of the set. */
export function checkReferences(entry: Entry, index: ManifestIndex, report: Report): void {
  const c: Checker = { index, report };
  const template = podTemplateOf(entry);
  if (template) podRefs(c, template);
  const spec = obj(entry.object.spec) ?? {};
  switch (entry.kind) {
    case 'Service':
      serviceRefs(c, entry);
      break;
    case 'StatefulSet':
      // The governing Service gives the pods their DNS names.
      if (typeof spec.serviceName === 'string' && spec.serviceName !== '' && !index.get('Service', entry.namespace, spec.serviceName)) {
        report(entry, 'spec.serviceName', missing('Service', spec.serviceName, entry.namespace));
      }
      break;
    case 'HorizontalPodAutoscaler':
      autoscalerRefs(c, entry);
      break;
    case 'PodDisruptionBudget':
      selectsSomePod(c, entry, entry.namespace, obj(spec.selector), 'spec.selector', 'the budget');
      break;
    case 'NetworkPolicy': {
      selectsSomePod(c, entry, entry.namespace, obj(spec.podSelector), 'spec.podSelector', 'the policy');
      for (const [field, peers] of [['ingress', 'from'], ['egress', 'to']] as const) {
        arr(spec[field]).forEach((rule, i) => {
          arr(obj(rule)?.[peers]).forEach((rawPeer, j) => {
            const peer = obj(rawPeer) ?? {};
            // With a namespaceSelector the peer's pods live in other namespaces: not the set's to know.
            if (peer.namespaceSelector !== undefined) return;
            selectsSomePod(c, entry, entry.namespace, obj(peer.podSelector), at(at(at(at('spec', field), i), peers), j) + '.podSelector', 'the peer');
          });
        });
      }
      break;
    }
    case 'Ingress':
      ingressRefs(c, entry);
      break;
    case 'IngressRoute':
    case 'IngressRouteTCP':
    case 'Middleware':
      traefikRefs(c, entry);
      break;
    case 'RoleBinding':
    case 'ClusterRoleBinding':
      bindingRefs(c, entry);
      break;
  }
}
