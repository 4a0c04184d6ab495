/**
 * Python type annotations as svc reads them, for `py_to_svc`: a TypeBox
 * schema call (`T.String()`, `T.Array(…)`, …) and a TypeScript type, with
 * what has no JSON schema named as `unmapped`.
 */
import { isString, jsLiteral, pyString, splitTop } from './python-source.ts';

/** A schema call: `T.String`, its positional arguments and its options (rendered as `{ k: v }`). */
export interface Schema {
  call: string;
  args: string[];
  opts: [string, string][];
}

/** A Python type as svc reads it; `unmapped` names what has no JSON schema. */
export interface Ty {
  schema: Schema;
  ts: string;
  unmapped?: string;
}

const S = (call: string, ...args: string[]): Schema => ({ call: `T.${call}`, args, opts: [] });
const UNKNOWN: Ty = { schema: S('Unknown'), ts: 'unknown' };

/**
 * A Python annotation as a TypeBox schema and a TypeScript type. `known`
 * says which other names are classes (their TS type is themselves; their
 * schema `T.Unknown()`, marked unmapped).
 */
export function pyType(text: string, known: (name: string) => string | undefined): Ty {
  let t = text.trim();
  if (isString(t)) t = pyString(t) ?? t;
  const parts = splitTop(t, '|');
  if (parts.length > 1) return union(parts.map((p) => pyType(p, known)));
  const m = /^([A-Za-z_][\w.]*)\s*(?:\[([\s\S]*)\])?$/.exec(t);
  if (!m) return { ...UNKNOWN, unmapped: t };
  const name = (m[1] as string).split('.').pop() as string;
  const args = m[2] === undefined ? [] : splitTop(m[2], ',').map((a) => a.trim());
  const arg = (i: number): Ty => (args[i] === undefined ? { schema: S('Unknown'), ts: 'unknown' } : pyType(args[i] as string, known));
  const first = (): Ty => arg(0);
  switch (name) {
    case 'str':
      return { schema: S('String'), ts: 'string' };
    case 'int':
      return { schema: S('Integer'), ts: 'number' };
    case 'float':
      return { schema: S('Number'), ts: 'number' };
    case 'bool':
      return { schema: S('Boolean'), ts: 'boolean' };
    case 'bytes':
      return { schema: { ...S('String'), opts: [['contentEncoding', "'base64'"]] }, ts: 'string' };
    case 'None':
    case 'NoneType':
      return { schema: S('Null'), ts: 'null' };
    case 'Any':
      return { schema: S('Any'), ts: 'any' };
    case 'object':
      return { schema: S('Unknown'), ts: 'unknown' };
    case 'datetime':
      return { schema: { ...S('String'), opts: [['format', "'date-time'"]] }, ts: 'string' };
    case 'date':
      return { schema: { ...S('String'), opts: [['format', "'date'"]] }, ts: 'string' };
    case 'list':
    case 'List':
    case 'Sequence':
    case 'Iterable':
    case 'set':
    case 'Set':
    case 'frozenset':
    case 'FrozenSet': {
      const item = first();
      const set = /set/i.test(name);
      return {
        schema: { call: 'T.Array', args: [renderSchema(item.schema)], opts: set ? [['uniqueItems', 'true']] : [] },
        ts: `${wrap(item.ts)}[]`,
        unmapped: item.unmapped,
      };
    }
    case 'tuple':
    case 'Tuple': {
      if (args.length === 0 || (args.length === 2 && args[1] === '...')) {
        const item = first();
        return { schema: { call: 'T.Array', args: [renderSchema(item.schema)], opts: [] }, ts: `${wrap(item.ts)}[]`, unmapped: item.unmapped };
      }
      const items = args.map((_, i) => arg(i));
      return {
        schema: { call: 'T.Tuple', args: [`[${items.map((i) => renderSchema(i.schema)).join(', ')}]`], opts: [] },
        ts: `[${items.map((i) => i.ts).join(', ')}]`,
        unmapped: items.find((i) => i.unmapped)?.unmapped,
      };
    }
    case 'dict':
    case 'Dict':
    case 'Mapping':
    case 'MutableMapping': {
      const value = args.length >= 2 ? arg(1) : { schema: S('Unknown'), ts: 'unknown' };
      return { schema: { call: 'T.Record', args: ['T.String()', renderSchema(value.schema)], opts: [] }, ts: `Record<string, ${value.ts}>`, unmapped: value.unmapped };
    }
    case 'Optional':
      return union([first(), { schema: S('Null'), ts: 'null' }]);
    case 'Union':
      return union(args.map((_, i) => arg(i)));
    case 'Literal': {
      const values = args.map((a) => jsLiteral(a)).filter((v): v is string => v !== undefined);
      if (values.length === 0) return { ...UNKNOWN, unmapped: t };
      return union(values.map((v) => ({ schema: S('Literal', v), ts: v })));
    }
    case 'Annotated':
      return first();
    default: {
      const own = known(name);
      return own ? { schema: S('Unknown'), ts: own, unmapped: name } : { ...UNKNOWN, unmapped: name };
    }
  }
}

function union(members: Ty[]): Ty {
  const flat = members.flatMap((m) => (m.schema.call === 'T.Union' && m.schema.opts.length === 0 ? (m as Ty & { parts?: Ty[] }).parts ?? [m] : [m]));
  if (flat.length === 1) return flat[0] as Ty;
  const ty: Ty & { parts: Ty[] } = {
    schema: { call: 'T.Union', args: [`[${flat.map((m) => renderSchema(m.schema)).join(', ')}]`], opts: [] },
    ts: flat.map((m) => m.ts).join(' | '),
    unmapped: flat.find((m) => m.unmapped)?.unmapped,
    parts: flat,
  };
  return ty;
}

function wrap(ts: string): string {
  return /[|&\s]/.test(ts) ? `(${ts})` : ts;
}

export function renderSchema(s: Schema): string {
  const args = [...s.args];
  if (s.opts.length > 0) args.push(`{ ${s.opts.map(([k, v]) => `${k}: ${v}`).join(', ')} }`);
  return `${s.call}(${args.join(', ')})`;
}
