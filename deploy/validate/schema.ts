/**
 * The schema layer: each object checked by the model packages
 * (`kubernetes-models` for Kubernetes' own kinds, `@kubernetes-models/traefik`
 * for Traefik's CRDs), and the first rule of the strict layer — a field the
 * schema does not declare is refused.
 *
 * The packages carry their schemas compiled (ajv standalone code), not as
 * JSON, so the declared fields are read off the compiled validator itself: it
 * runs once over a recording view of the object, and a compiled validator
 * reads every property its schema declares (`data.replicas`, present or not)
 * and enumerates an object only where the schema is a map (labels,
 * `additionalProperties`). After the run, per object of the manifest:
 * - some properties read: the schema declares exactly those; any other key is unknown;
 * - enumerated: a map, any key goes (its values are still checked);
 * - nothing read: a free-form object (`x-kubernetes-preserve-unknown-fields`,
 *   Traefik's `plugin` settings, a CRD's `default`), anything goes.
 *
 * The models are loaded lazily and synchronously (their CommonJS builds), one
 * kind at a time: importing this file costs nothing, a plan pays for the
 * kinds it holds.
 */
import { createRequire } from 'node:module';
import type { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import type { Middleware } from '@kubernetes-models/traefik/traefik.io/v1alpha1/Middleware';
import { at, obj, show, type Json } from './path.ts';
import { quantityProblem } from './quantity.ts';

/** A model class of the packages: what validation needs of it. */
type ModelClass = typeof Deployment | typeof Middleware;

/** Where a kind's model lives, and whether its objects live outside namespaces. */
interface KindEntry {
  module: string;
  cluster?: boolean;
}

const K = 'kubernetes-models';
const TRAEFIK = '@kubernetes-models/traefik/traefik.io/v1alpha1';

/**
 * The kinds svc validates, by `apiVersion/kind`. Any other is refused: a kind
 * nothing checks does not leave the machine.
 */
export const KINDS: Readonly<Record<string, KindEntry>> = {
  'v1/Namespace': { module: `${K}/v1/Namespace`, cluster: true },
  'v1/Secret': { module: `${K}/v1/Secret` },
  'v1/ConfigMap': { module: `${K}/v1/ConfigMap` },
  'v1/Service': { module: `${K}/v1/Service` },
  'v1/ServiceAccount': { module: `${K}/v1/ServiceAccount` },
  'v1/PersistentVolumeClaim': { module: `${K}/v1/PersistentVolumeClaim` },
  'v1/Pod': { module: `${K}/v1/Pod` },
  'apps/v1/Deployment': { module: `${K}/apps/v1/Deployment` },
  'apps/v1/StatefulSet': { module: `${K}/apps/v1/StatefulSet` },
  'apps/v1/DaemonSet': { module: `${K}/apps/v1/DaemonSet` },
  'batch/v1/Job': { module: `${K}/batch/v1/Job` },
  'batch/v1/CronJob': { module: `${K}/batch/v1/CronJob` },
  'autoscaling/v2/HorizontalPodAutoscaler': { module: `${K}/autoscaling/v2/HorizontalPodAutoscaler` },
  'policy/v1/PodDisruptionBudget': { module: `${K}/policy/v1/PodDisruptionBudget` },
  'networking.k8s.io/v1/NetworkPolicy': { module: `${K}/networking.k8s.io/v1/NetworkPolicy` },
  'networking.k8s.io/v1/Ingress': { module: `${K}/networking.k8s.io/v1/Ingress` },
  'networking.k8s.io/v1/IngressClass': { module: `${K}/networking.k8s.io/v1/IngressClass`, cluster: true },
  'rbac.authorization.k8s.io/v1/Role': { module: `${K}/rbac.authorization.k8s.io/v1/Role` },
  'rbac.authorization.k8s.io/v1/RoleBinding': { module: `${K}/rbac.authorization.k8s.io/v1/RoleBinding` },
  'rbac.authorization.k8s.io/v1/ClusterRole': { module: `${K}/rbac.authorization.k8s.io/v1/ClusterRole`, cluster: true },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': { module: `${K}/rbac.authorization.k8s.io/v1/ClusterRoleBinding`, cluster: true },
  'apiextensions.k8s.io/v1/CustomResourceDefinition': { module: `${K}/apiextensions.k8s.io/v1/CustomResourceDefinition`, cluster: true },
  'traefik.io/v1alpha1/Middleware': { module: `${TRAEFIK}/Middleware` },
  'traefik.io/v1alpha1/MiddlewareTCP': { module: `${TRAEFIK}/MiddlewareTCP` },
  'traefik.io/v1alpha1/IngressRoute': { module: `${TRAEFIK}/IngressRoute` },
  'traefik.io/v1alpha1/IngressRouteTCP': { module: `${TRAEFIK}/IngressRouteTCP` },
  'traefik.io/v1alpha1/IngressRouteUDP': { module: `${TRAEFIK}/IngressRouteUDP` },
  'traefik.io/v1alpha1/TraefikService': { module: `${TRAEFIK}/TraefikService` },
  'traefik.io/v1alpha1/ServersTransport': { module: `${TRAEFIK}/ServersTransport` },
  'traefik.io/v1alpha1/TLSOption': { module: `${TRAEFIK}/TLSOption` },
  'traefik.io/v1alpha1/TLSStore': { module: `${TRAEFIK}/TLSStore` },
};

/**
 * A field's shape in {@link TRAEFIK_V3_ADDITIONS}: a scalar type, an array of strings, any array, or an object of fields.
 *
 * @example
 * const ipStrategy: FieldShape = { depth: 'integer', excludedIPs: 'string[]', ipv6Subnet: 'integer' };
 */
export type FieldShape = 'string' | 'integer' | 'boolean' | 'string[]' | 'array' | { readonly [field: string]: FieldShape };

/**
 * Traefik v3 fields the packaged Traefik CRD schemas (v2.10) lack, accepted
 * with the shape Traefik v3's CRDs give them. Keyed by kind, then by the
 * path of the object holding the field (array indexes as `[]`). Only these:
 * another v3 field is refused like any unknown field until it is added here.
 *
 * @example
 * TRAEFIK_V3_ADDITIONS.IngressRoute?.['spec.routes[].services[].sticky.cookie']; // { maxAge: 'integer', path: 'string', domain: 'string' }
 */
export const TRAEFIK_V3_ADDITIONS: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, FieldShape>>>>>> = {
  IngressRoute: {
    spec: { ingressClassName: 'string' },
    'spec.routes[]': { syntax: 'string', observability: { accessLogs: 'boolean', metrics: 'boolean', tracing: 'boolean', traceVerbosity: 'string' } },
    'spec.routes[].services[]': { nodePortLB: 'boolean' },
    'spec.routes[].services[].sticky.cookie': { maxAge: 'integer', path: 'string', domain: 'string' },
  },
  Middleware: {
    spec: { ipAllowList: { sourceRange: 'string[]', ipStrategy: { depth: 'integer', excludedIPs: 'string[]', ipv6Subnet: 'integer' }, rejectStatusCode: 'integer' } },
    'spec.rateLimit.sourceCriterion.ipStrategy': { ipv6Subnet: 'integer' },
    'spec.inFlightReq.sourceCriterion.ipStrategy': { ipv6Subnet: 'integer' },
    'spec.compress': { encodings: 'string[]', defaultEncoding: 'string' },
  },
};

/**
 * Fields the packages' compiled validators lost: their generator strips the
 * `description` and `x-kubernetes-*` keywords from every schema, and with them
 * the *properties* of those names, which only a CRD's own schema
 * (JSONSchemaProps, its printer columns, external docs) has among the kinds
 * svc validates. Keyed by kind, then by the path prefix (array indexes as
 * `[]`) under which every object accepts them, with the shapes the
 * `apiextensions.k8s.io/v1` types declare.
 */
const GENERATOR_GAPS: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, FieldShape>>>>>> = {
  CustomResourceDefinition: {
    'spec.versions[].schema.openAPIV3Schema': {
      description: 'string',
      'x-kubernetes-embedded-resource': 'boolean',
      'x-kubernetes-int-or-string': 'boolean',
      'x-kubernetes-list-map-keys': 'string[]',
      'x-kubernetes-list-type': 'string',
      'x-kubernetes-map-type': 'string',
      'x-kubernetes-preserve-unknown-fields': 'boolean',
      'x-kubernetes-validations': 'array',
    },
    'spec.versions[].additionalPrinterColumns[]': { description: 'string' },
  },
};

/** A problem inside one object: where, and what. */
export interface LocalProblem {
  path: string;
  message: string;
}

const load = createRequire(import.meta.url);
const models = new Map<string, ModelClass>();

/** The model class of `apiVersion/kind`, loaded on first use; undefined for a kind svc does not validate. */
export function modelOf(apiVersion: string, kind: string): ModelClass | undefined {
  const key = `${apiVersion}/${kind}`;
  const entry = KINDS[key];
  if (!entry) return undefined;
  let model = models.get(key);
  if (!model) {
    model = (load(entry.module) as Record<string, ModelClass>)[kind] as ModelClass;
    models.set(key, model);
  }
  return model;
}

/** Whether objects of this kind live outside namespaces. */
export function isClusterScoped(apiVersion: string, kind: string): boolean {
  return KINDS[`${apiVersion}/${kind}`]?.cluster === true;
}

/** What the compiled validator did to one object of the manifest. */
interface Seen {
  read: Set<string>;
  enumerated: boolean;
}

/**
 * A recording view of `root`: every object reached through it is a proxy (of
 * a shallow copy, so frozen manifests are fine) noting, by path, the keys read
 * and whether its keys were enumerated.
 */
function recording(root: Json): { view: Json; seen: Map<string, Seen> } {
  const seen = new Map<string, Seen>();
  const views = new Map<string, object>();
  const wrap = (value: unknown, path: string): unknown => {
    if (value === null || typeof value !== 'object') return value;
    const known = views.get(path);
    if (known) return known;
    const note: Seen = { read: new Set(), enumerated: false };
    seen.set(path, note);
    const list = Array.isArray(value);
    const copy: object = list ? [...(value as unknown[])] : { ...(value as Json) };
    const view = new Proxy(copy, {
      get(target, key, receiver) {
        if (typeof key === 'symbol') return Reflect.get(target, key, receiver);
        note.read.add(key);
        const child = Reflect.get(target, key, receiver);
        if (list) return /^\d+$/.test(key) ? wrap(child, at(path, Number(key))) : child;
        return Object.hasOwn(target, key) ? wrap(child, at(path, key)) : child;
      },
      has(target, key) {
        if (typeof key === 'string') note.read.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        note.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
    views.set(path, view);
    return view;
  };
  return { view: wrap(root, '') as Json, seen };
}

/** An ajv error as the packages' ValidationError carries it. */
interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** The value and the problem path of an ajv instance path (`/spec/template/spec/containers/0` → `spec.template.spec.containers[0]`). */
function locate(root: unknown, pointer: string): { path: string; value: unknown } {
  let path = '';
  let value = root;
  if (!pointer) return { path, value };
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(value)) {
      path = at(path, Number(key));
      value = value[Number(key)];
    } else {
      path = at(path, key);
      value = obj(value)?.[key];
    }
  }
  return { path, value };
}

/** The ajv errors made into problems: one per path, the branch errors of a `oneOf`/`anyOf` folded into one message. */
function schemaProblems(object: Json, errors: AjvError[]): LocalProblem[] {
  const byPath = new Map<string, { value: unknown; errors: AjvError[] }>();
  for (const error of errors) {
    const { path, value } = locate(object, error.instancePath);
    if (error.keyword === 'required') {
      const missing = at(path, String(error.params.missingProperty));
      byPath.set(missing, { value: undefined, errors: [error] });
      continue;
    }
    const entry = byPath.get(path) ?? { value, errors: [] };
    entry.errors.push(error);
    byPath.set(path, entry);
  }
  const out: LocalProblem[] = [];
  for (const [path, { value, errors: list }] of byPath) {
    const format = list.find((e) => e.keyword === 'format');
    let message: string;
    if (list[0]?.keyword === 'required') message = 'is required';
    else if (format && format.params.format === 'quantity') message = quantityProblem(value) ?? (format.message as string);
    else if (format) message = `${format.message} (got ${show(value)})`;
    else {
      const types = list.filter((e) => e.keyword === 'type').map((e) => String(e.params.type));
      const rest = list.filter((e) => e.keyword !== 'type' && e.keyword !== 'oneOf' && e.keyword !== 'anyOf');
      const described = (e: AjvError) => (e.keyword === 'enum' ? `${e.message}: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` : (e.message ?? e.keyword));
      const parts = [...(types.length ? [`must be ${[...new Set(types)].join(' or ')}`] : []), ...rest.map(described)];
      message = `${(parts.length ? parts : list.map((e) => e.message ?? e.keyword)).join('; ')} (got ${show(value)})`;
    }
    out.push({ path, message });
  }
  return out;
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const kept = row[j] as number;
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = kept;
    }
  }
  return row[b.length] as number;
}

function suggestion(key: string, known: Iterable<string>): string {
  let best: string | undefined;
  let score = Math.max(2, Math.floor(key.length / 4)) + 1;
  const lower = key.toLowerCase();
  for (const candidate of known) {
    if (/^\d+$/.test(candidate)) continue;
    const other = candidate.toLowerCase();
    // A cut-off or extended name (`rejectStatus` for `rejectStatusCode`) costs half its missing letters.
    const cut = Math.min(lower.length, other.length) >= 4 && (other.startsWith(lower) || lower.startsWith(other)) ? Math.ceil(Math.abs(lower.length - other.length) / 2) : Number.POSITIVE_INFINITY;
    const d = Math.min(distance(lower, other), cut);
    if (d < score) [best, score] = [candidate, d];
  }
  return best ? ` (did you mean "${best}"?)` : '';
}

/** A value checked against a {@link FieldShape}. */
function checkShape(value: unknown, shape: FieldShape, path: string, out: LocalProblem[]): void {
  if (typeof shape === 'object') {
    const o = obj(value);
    if (!o) {
      out.push({ path, message: `must be object (got ${show(value)})` });
      return;
    }
    for (const [key, child] of Object.entries(o)) {
      if (child === undefined) continue;
      const inner = shape[key];
      if (inner === undefined) out.push({ path: at(path, key), message: `unknown field "${key}"${suggestion(key, Object.keys(shape))}` });
      else checkShape(child, inner, at(path, key), out);
    }
    return;
  }
  const ok =
    shape === 'string' ? typeof value === 'string'
    : shape === 'integer' ? Number.isInteger(value)
    : shape === 'boolean' ? typeof value === 'boolean'
    : shape === 'array' ? Array.isArray(value)
    : Array.isArray(value) && value.every((v) => typeof v === 'string');
  if (!ok) out.push({ path, message: `must be ${shape === 'string[]' ? 'an array of strings' : shape === 'array' ? 'an array' : shape} (got ${show(value)})` });
}

/** Fields accepted beyond what the compiled validator reads, by path pattern: exact paths, and path prefixes. */
interface Extras {
  exact?: Readonly<Record<string, Readonly<Record<string, FieldShape>>>>;
  under?: Readonly<Record<string, Readonly<Record<string, FieldShape>>>>;
}

/** The shape of an extra field `key` of the object at `pattern`, if it is one. */
function extraField(extras: Extras, pattern: string, key: string): FieldShape | undefined {
  const exact = extras.exact?.[pattern]?.[key];
  if (exact !== undefined) return exact;
  for (const [prefix, fields] of Object.entries(extras.under ?? {})) {
    const inside = pattern === prefix || pattern.startsWith(`${prefix}.`) || pattern.startsWith(`${prefix}[`);
    if (inside && fields[key] !== undefined) return fields[key];
  }
  return undefined;
}

/** Fields of `value` (at `path`) the compiled validator did not read: unknown, unless an accepted extra. */
function unknownFields(value: unknown, path: string, seen: Map<string, Seen>, extras: Extras, out: LocalProblem[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => unknownFields(item, at(path, i), seen, extras, out));
    return;
  }
  const o = obj(value);
  if (!o) return;
  const note = seen.get(path);
  // Not reached (a type error above it, already a problem), or free-form: nothing to say.
  if (!note || (!note.enumerated && note.read.size === 0)) return;
  const pattern = path.replace(/\[\d+\]/g, '[]');
  for (const [key, child] of Object.entries(o)) {
    if (child === undefined) continue;
    if (note.enumerated || note.read.has(key)) {
      unknownFields(child, at(path, key), seen, extras, out);
      continue;
    }
    const shape = extraField(extras, pattern, key);
    if (shape !== undefined) checkShape(child, shape, at(path, key), out);
    else out.push({ path: at(path, key), message: `unknown field "${key}"${suggestion(key, [...note.read, ...Object.keys(extras.exact?.[pattern] ?? {})])}` });
  }
}

/**
 * One object against its kind's schema, unknown fields included. The object's
 * apiVersion and kind are known to be in {@link KINDS}.
 *
 * @example
 * checkSchema({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, dta: {} }); // [{ path: 'dta', message: 'unknown field "dta" (did you mean "data"?)' }]
 */
export function checkSchema(object: Json): LocalProblem[] {
  const model = modelOf(String(object.apiVersion), String(object.kind));
  if (!model) return [{ path: 'kind', message: `no schema for ${show(object.apiVersion)} ${show(object.kind)}` }];
  const { view, seen } = recording(object);
  const out: LocalProblem[] = [];
  try {
    (model.prototype.validate as (this: unknown) => void).call(view);
  } catch (error) {
    const errors = (error as { errors?: AjvError[] }).errors;
    if (!Array.isArray(errors)) return [{ path: '', message: `the schema check failed: ${(error as Error).message}` }];
    out.push(...schemaProblems(object, errors));
  }
  const kind = String(object.kind);
  unknownFields(object, '', seen, { exact: String(object.apiVersion).startsWith('traefik.io/') ? TRAEFIK_V3_ADDITIONS[kind] : undefined, under: GENERATOR_GAPS[kind] }, out);
  return out;
}
