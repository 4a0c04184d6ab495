/**
 * Label and field selectors as list and watch requests give them (`labelSelector=app=web,tier in (a,b),!canary`,
 * `fieldSelector=status.phase=Running`), and the `matchLabels`/`matchExpressions` of a workload's selector.
 */
import { KubeStatusError, type Obj } from './types.ts';

/** One requirement of a selector. */
interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!exists' | '=' | '!=';
  values: string[];
}

/** A parsed selector: every requirement must hold. */
export type Selector = (labels: Record<string, string>) => boolean;

/** Split at commas outside parentheses. */
function terms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(current);
      current = '';
    } else current += ch;
  }
  out.push(current);
  return out.map((s) => s.trim()).filter(Boolean);
}

function requirement(term: string): Requirement {
  let m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (m) return { key: m[1] as string, op: m[2] as 'in' | 'notin', values: (m[3] as string).split(',').map((v) => v.trim()) };
  m = /^(\S+?)\s*(==|!=|=)\s*(\S*)$/.exec(term);
  if (m) return { key: m[1] as string, op: m[2] === '!=' ? '!=' : '=', values: [m[3] as string] };
  m = /^!\s*(\S+)$/.exec(term);
  if (m) return { key: m[1] as string, op: '!exists', values: [] };
  if (/^[A-Za-z0-9._/-]+$/.test(term)) return { key: term, op: 'exists', values: [] };
  throw new KubeStatusError(400, 'BadRequest', `unable to parse requirement: found '${term}', expected: identifier`);
}

function holds(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.op) {
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case '=':
    case 'in':
      return has && r.values.includes(value as string);
    case '!=':
    case 'notin':
      return !has || !r.values.includes(value as string);
  }
}

/**
 * A label selector from its query-string form; everything matches the empty one.
 *
 * @example
 * parseLabelSelector('app=web,tier in (a,b),!canary')({ app: 'web', tier: 'a' }); // true
 */
export function parseLabelSelector(text: string | undefined): Selector {
  const requirements = terms(text ?? '').map(requirement);
  return (labels) => requirements.every((r) => holds(r, labels));
}

/** Fields a field selector may name (beyond `metadata.name` and `metadata.namespace`), by kind, as the real server allows them. */
const FIELDS: Record<string, string[]> = {
  Pod: ['status.phase', 'spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'status.podIP', 'status.nominatedNodeName'],
  Event: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  Secret: ['type'],
  Namespace: ['status.phase'],
  Node: ['spec.unschedulable'],
  ReplicaSet: ['status.replicas'],
  Job: ['status.successful'],
};

function fieldValue(object: Obj, path: string): string {
  let value: unknown = object;
  for (const part of path.split('.')) value = value !== null && typeof value === 'object' ? (value as Obj)[part] : undefined;
  if (path === 'source' && object.kind === 'Event') value = object.source?.component;
  return value === undefined || value === null ? '' : String(value);
}

/**
 * A field selector (`a=b,c!=d`) for objects of `kind`; 400 for a field the real server does not index.
 *
 * @example
 * parseFieldSelector('status.phase=Running', 'Pod')(pod); // true for a running pod
 */
export function parseFieldSelector(text: string | undefined, kind: string): (object: Obj) => boolean {
  const requirements = terms(text ?? '').map((term) => {
    const m = /^([^=!]+?)\s*(==|!=|=)\s*(.*)$/.exec(term);
    if (!m) throw new KubeStatusError(400, 'BadRequest', `invalid selector: '${term}'; can't understand '${term}'`);
    const field = m[1] as string;
    if (field !== 'metadata.name' && field !== 'metadata.namespace' && !(FIELDS[kind] ?? []).includes(field)) {
      throw new KubeStatusError(400, 'BadRequest', `field label not supported: ${field}`);
    }
    return { field, negate: m[2] === '!=', value: m[3] as string };
  });
  return (object) => requirements.every((r) => (fieldValue(object, r.field) === r.value) !== r.negate);
}

/**
 * Whether a workload's selector (`matchLabels` and `matchExpressions`) selects `labels`. An absent selector selects nothing; an empty one everything.
 *
 * @example
 * selects({ matchLabels: { app: 'web' } }, { app: 'web', 'pod-template-hash': 'abc' }); // true
 */
export function selects(selector: Obj | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const e of (selector.matchExpressions ?? []) as Obj[]) {
    const op = String(e.operator);
    const r: Requirement = {
      key: String(e.key),
      op:
        op === 'In' ? 'in'
        : op === 'NotIn' ? 'notin'
        : op === 'Exists' ? 'exists'
        : '!exists',
      values: (e.values ?? []).map(String),
    };
    if (!holds(r, labels)) return false;
  }
  return true;
}

/**
 * Whether a Service's `spec.selector` (a plain map) selects `labels`; an empty or absent one selects no pod.
 *
 * @example
 * mapSelects({ app: 'web' }, { app: 'web', tier: 'front' }); // true
 */
export function mapSelects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  const entries = Object.entries(selector ?? {});
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}
