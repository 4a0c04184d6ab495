/**
 * Validation of a deployment's Kubernetes manifests before anything leaves
 * the machine: every object against its kind's schema (`kubernetes-models`,
 * `@kubernetes-models/traefik`), then a strict layer those packages lack —
 * unknown fields, names Kubernetes refuses, selectors that select nothing,
 * references to objects or keys the set does not hold, Service target ports
 * no container has, unparsable quantities and requests above limits,
 * duplicate objects, kinds nothing validates.
 */
import type { K8sObject } from '../spec.ts';
import { obj, str } from './path.ts';
import { checkObject } from './objects.ts';
import type { Entry } from './pods.ts';
import { checkReferences, ManifestIndex } from './refs.ts';
import { checkSchema, isClusterScoped, KINDS } from './schema.ts';

export { parseQuantity } from './quantity.ts';
export { isDnsLabel, isDnsSubdomain } from './names.ts';
export { TRAEFIK_V3_ADDITIONS, type FieldShape } from './schema.ts';

/**
 * One reason a manifest set would be refused.
 *
 * @example
 * const problem: ManifestProblem = { object: 'Deployment/shop/web', path: 'spec.replicas', message: 'must be integer (got "three")' };
 */
export interface ManifestProblem {
  /** The object: `Kind/namespace/name` (`Kind/name` for a cluster-scoped kind; `#i` for the i-th object when it has no name). */
  object: string;
  /** Where in the object, as a JSON path: `spec.template.spec.containers[0].ports` ('' for the whole object). */
  path: string;
  message: string;
}

/**
 * The `apiVersion/kind` pairs svc validates (and so may send): any other
 * kind is a problem.
 *
 * @example
 * SUPPORTED_KINDS.includes('apps/v1/Deployment'); // true
 */
export const SUPPORTED_KINDS: readonly string[] = Object.keys(KINDS);

/**
 * A manifest set svc refuses to send, with every problem found.
 *
 * @example
 * try { assertValid(objects); } catch (e) { if (e instanceof ManifestError) console.error(e.problems.length); }
 */
export class ManifestError extends Error {
  readonly code = 'SVC_ERR_INVALID_MANIFEST';
  constructor(readonly problems: ManifestProblem[]) {
    super(`the manifests have ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}:\n${problems.map((p) => `  - ${p.object}${p.path ? ` ${p.path}` : ''}: ${p.message}`).join('\n')}`);
    this.name = 'ManifestError';
  }
}

/** The identifier problems name an object by. */
function identify(kind: string, namespace: string, name: string, position: number, cluster: boolean): string {
  const shown = name || `#${position}`;
  return cluster || !namespace ? `${kind || '?'}/${shown}` : `${kind}/${namespace}/${shown}`;
}

/** Why an apiVersion/kind pair is refused: a kind served under another version, or a kind nothing validates. */
function unknownKind(apiVersion: string, kind: string): { path: string; message: string } {
  const versions = SUPPORTED_KINDS.filter((k) => k.endsWith(`/${kind}`)).map((k) => k.slice(0, -kind.length - 1));
  if (!kind) return { path: 'kind', message: 'is required' };
  if (!apiVersion) return { path: 'apiVersion', message: 'is required' };
  if (versions.length) return { path: 'apiVersion', message: `svc validates ${kind} as ${versions.join(' or ')}, not ${JSON.stringify(apiVersion)}` };
  const names = [...new Set(SUPPORTED_KINDS.map((k) => k.slice(k.lastIndexOf('/') + 1)))];
  return { path: 'kind', message: `svc does not validate ${JSON.stringify(`${apiVersion}/${kind}`)}, so it does not send it (it validates ${names.join(', ')})` };
}

/**
 * Every problem of a manifest set (an empty array when all is well). The set
 * is read as a whole: references (Secrets and their keys, Services and their
 * ports, the pods a selector selects, an autoscaler's target) must resolve to
 * objects of the same set, in the same namespace. Nothing is sent or loaded
 * but the schema models of the kinds present (synchronously, on first use).
 *
 * @example
 * const problems = validateManifests([
 *   { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
 *   { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'My_Config', namespace: 'shop' }, data: { a: '1' } },
 * ]);
 * // [{ object: 'ConfigMap/shop/My_Config', path: 'metadata.name', message: '"My_Config" is not a DNS-1123 subdomain (…)' }]
 */
export function validateManifests(objects: K8sObject[]): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const seen = new Set<string>();
  const report = (entry: Pick<Entry, 'id'>, path: string, message: string): void => {
    const key = `${entry.id}\n${path}\n${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    problems.push({ object: entry.id, path, message });
  };
  const index = new ManifestIndex();
  const entries: Entry[] = [];
  const positions = new Map<Entry, number>();
  (objects as unknown[]).forEach((raw, position) => {
    const object = obj(raw);
    if (!object) {
      report({ id: `#${position}` }, '', `is not an object (got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw})`);
      return;
    }
    const apiVersion = str(object.apiVersion) ?? '';
    const kind = str(object.kind) ?? '';
    const metadata = obj(object.metadata);
    const name = str(metadata?.name) ?? '';
    const namespace = str(metadata?.namespace) ?? '';
    const known = KINDS[`${apiVersion}/${kind}`] !== undefined;
    const cluster = isClusterScoped(apiVersion, kind);
    const id = identify(kind, cluster ? '' : namespace, name, position, cluster);
    if (!known) {
      const { path, message } = unknownKind(apiVersion, kind);
      report({ id }, path, message);
      return;
    }
    const schema = checkSchema(object);
    const entry: Entry = { object, id, apiVersion, kind, name, namespace: cluster ? '' : namespace, schemaPaths: new Set(schema.map((p) => p.path)) };
    for (const p of schema) report(entry, p.path, p.message);
    checkObject(entry, report);
    positions.set(entry, position);
    const first = name ? index.add(entry) : undefined;
    if (first) report(entry, 'metadata.name', `a second ${kind} named "${name}"${entry.namespace ? ` in namespace ${entry.namespace}` : ''} (objects #${positions.get(first)} and #${position})`);
    entries.push(entry);
  });
  for (const entry of entries) checkReferences(entry, index, report);
  return problems;
}

/**
 * The problems of one object against its kind's schema alone (the packages'
 * schema and the unknown-field rule, nothing of the strict layer: no name,
 * selector or reference checks), as {@link validateManifests} reports them. A
 * kind svc does not validate is one problem at `kind` (or `apiVersion`): check
 * {@link SUPPORTED_KINDS} first to let such kinds through.
 *
 * @example
 * schemaProblems({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'shop' }, dta: {} });
 * // [{ object: 'ConfigMap/shop/a', path: 'dta', message: 'unknown field "dta" (did you mean "data"?)' }]
 */
export function schemaProblems(object: K8sObject): ManifestProblem[] {
  const raw = obj(object);
  if (!raw) return [{ object: '#0', path: '', message: `is not an object (got ${object === null ? 'null' : Array.isArray(object) ? 'an array' : typeof object})` }];
  const apiVersion = str(raw.apiVersion) ?? '';
  const kind = str(raw.kind) ?? '';
  const metadata = obj(raw.metadata);
  const cluster = isClusterScoped(apiVersion, kind);
  const id = identify(kind, cluster ? '' : (str(metadata?.namespace) ?? ''), str(metadata?.name) ?? '', 0, cluster);
  if (KINDS[`${apiVersion}/${kind}`] === undefined) return [{ object: id, ...unknownKind(apiVersion, kind) }];
  return checkSchema(raw).map((p) => ({ object: id, path: p.path, message: p.message }));
}

/**
 * Throws a {@link ManifestError} listing every problem of the set, or
 * returns when there is none.
 *
 * @example
 * assertValid(plan.objects); // throws ManifestError (code SVC_ERR_INVALID_MANIFEST) on the first bad set
 */
export function assertValid(objects: K8sObject[]): void {
  const problems = validateManifests(objects);
  if (problems.length) throw new ManifestError(problems);
}
