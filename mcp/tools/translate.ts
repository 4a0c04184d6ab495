/**
 * `svc_to_js`, `py_to_svc` and `svc_to_py`: transpiling an svc module, and a
 * documented best-effort translation of *declarations* between Python and
 * svc. Nothing here runs the code it reads, and Python is never needed.
 *
 * `svc_to_js` is exact: esbuild's TypeScript transform, as `svc start` loads
 * an entry (ESM, node20, TC39 decorators lowered, class names kept).
 *
 * What `py_to_svc` translates (a line parser of its own, indentation-based;
 * brace blocks of the jac style too):
 * - `class X(Node|Edge|Walker|GenericEdge)` (or a subclass declared earlier in
 *   the same input), `@dataclass` classes and plain classes, and jac-style
 *   `node X { has a: int = 0; }` / `edge` / `walker :pub X` / `obj` blocks;
 * - typed fields (`title: str`, `done: bool = False`, `has x: int = 0;`) into
 *   `static has = T.Object({...})` plus `declare` lines (plain classes: fields
 *   and a constructor taking them); `str` `int` `float` `bool` `bytes` `None`
 *   `Any` `object` `list[X]` `set[X]` `tuple[...]` `dict[K, V]` `Optional[X]`
 *   `X | None` `Union[...]` `Literal[...]` `datetime`/`date`; literal defaults
 *   (also `field(default=…)`, `field(default_factory=list|dict)`);
 * - a walker's `access = 'pub'` (or `:pub`) into `static access`;
 *   other literal class attributes into statics, module constants into
 *   `export const`;
 * - module-level `def` into `export const name = fn({ params: T.Object(…) }, …)`;
 *   methods into methods, `@on_entry`/`@entry(X)`/jac `can x with X entry`
 *   into `@entry(X)` abilities, `@staticmethod`, `@property`.
 * Not translated: every function and method body (each becomes a stub that
 * throws, marked `TODO(py_to_svc)`, with the Python in a comment, and listed in
 * `warnings` with its name and line), imports, `__init__` and other dunder
 * methods, top-level statements, decorators other than the above, types with
 * no JSON schema (another class as a field type becomes `T.Unknown()`), and
 * defaults that are not literals. Each of those is a warning too.
 *
 * What `svc_to_py` translates (the TypeScript compiler API's syntax tree):
 * Node/Edge/Walker subclasses (or subclasses of those declared in the input)
 * into Python classes with typed fields from `static has` (`T.String()` → str,
 * `T.Integer()` → int, `T.Number()` → float, `T.Array(X)` → list[X], …;
 * `default` values, `T.Optional` → `= None`, other schema options as a
 * comment) and from `declare` lines; other classes into
 * `@dataclass(kw_only=True)` classes; `static` literals into class
 * attributes; `@entry(X)`/`@exit(X)` methods, methods, getters and
 * `function`s into `def` stubs; `fn(...)` exports into `@fn(...)` functions
 * whose keyword-only parameters come from `params`; literal constants.
 * Bodies become `# TODO(svc_to_py): body not translated` (the TypeScript in a
 * comment) and `raise NotImplementedError`, each listed in `warnings`; so are
 * `static spec = restspec(...)` (kept as a comment), interfaces, type aliases,
 * enums and other statements. The Python imports svc's names (`Node`,
 * `Walker`, `entry`, `fn`, …) from a module `svc`, which a Python counterpart
 * must provide; annotations are lazy (`from __future__ import annotations`).
 * Input that does not parse gives `python_code: ''` and its errors in
 * `warnings`.
 */
import { transform } from 'esbuild';
import { format } from 'prettier';
import ts from 'typescript';
import { checkSize, type ToolResult } from '../types.ts';
import { SVC_PRETTIER_OPTIONS } from './format.ts';

/**
 * What `svc_to_js` answers: the JavaScript, or `''` and the errors in `warnings`.
 * @example { js_code: '', warnings: ['1:7: error: Expected identifier but found "="'] }
 */
export type JsResult = ToolResult & { js_code: string; warnings: string[] };
/**
 * What `py_to_svc` answers.
 * @example { svc_code: "import { fn, T } from 'svc';\n…", warnings: ['line 3: add: function body not translated (stub)'] }
 */
export type SvcResult = ToolResult & { svc_code: string; warnings: string[] };
/**
 * What `svc_to_py` answers; errors are in `warnings` (then `python_code` is `''`).
 * @example { python_code: 'class Todo(Node):\n    title: str\n…', warnings: ['line 26: AddTodo.add: body not translated (stub)'] }
 */
export type PyResult = ToolResult & { python_code: string; warnings: string[] };

/**
 * Field names svc refuses on each kind (members of its base classes, plus
 * `constructor`, `toJSON`, `source`, `target`): a class declaring one fails to
 * load. A test compares these lists with the classes themselves.
 *
 * @example
 * SVC_RESERVED_FIELDS.walker.includes('report') // true
 */
export const SVC_RESERVED_FIELDS = {
  node: ['constructor', 'toJSON', 'source', 'target', 'connect', 'connectFrom', 'link', 'out', 'in', 'outEdges', 'inEdges', 'disconnect', 'walk', 'id', 'destroy'],
  edge: ['constructor', 'toJSON', 'source', 'target', 'sourceId', 'targetId', 'id', 'destroy'],
  walker: ['constructor', 'toJSON', 'source', 'target', 'state', 'report', 'visit', 'disengage', 'skip', 'spawn', 'root', 'caller', 'reports', 'traceId', 'log'],
} as const;

// ─── svc → JavaScript ────────────────────────────────────────────────────────

/**
 * Transpile an svc module to JavaScript with esbuild, as `svc start` loads an
 * entry: ESM for node20, standard (TC39) decorators lowered, class names kept
 * (a class's name is its stored type and its endpoint). Types are erased,
 * not checked. Errors: `js_code` is `''` and each error is in `warnings` as
 * `line:col: error: message`.
 *
 * @example
 * await svcToJs({ code: 'export const n: number = 1;' }); // { js_code: 'export const n = 1;\n', warnings: [] }
 * await svcToJs({ code: 'const = 1' }); // { js_code: '', warnings: ['1:7: error: Expected identifier but found "="'] }
 */
export async function svcToJs({ code }: { code: string }): Promise<JsResult> {
  checkSize(code, 'code');
  try {
    const result = await transform(code, {
      loader: 'ts',
      format: 'esm',
      target: 'node20',
      keepNames: true,
      sourcefile: 'input.ts',
      logLevel: 'silent',
      tsconfigRaw: { compilerOptions: { experimentalDecorators: false } },
    });
    return { js_code: result.code, warnings: result.warnings.map((m) => esbuildMessage(m, 'warning')) };
  } catch (error) {
    const errors = (error as { errors?: EsbuildMessage[] }).errors;
    const warnings = Array.isArray(errors) && errors.length > 0 ? errors.map((m) => esbuildMessage(m, 'error')) : [`error: ${(error as Error).message}`];
    return { js_code: '', warnings };
  }
}

type EsbuildMessage = { text: string; location?: { line: number; column: number } | null };

function esbuildMessage(m: EsbuildMessage, kind: 'error' | 'warning'): string {
  // esbuild's columns count from 0; editors (and prettier, and these tools) from 1.
  return m.location ? `${m.location.line}:${m.location.column + 1}: ${kind}: ${m.text}` : `${kind}: ${m.text}`;
}

// ─── Python → svc ────────────────────────────────────────────────────────────

/**
 * Translate the declarations of a Python (or jac-style) module into an svc
 * module (see this file's comment for what is and is not translated). Bodies
 * become marked stubs, each listed in `warnings` with its name and line. The
 * result is formatted like `format_svc` and transpiles.
 *
 * @example
 * const { svc_code, warnings } = await pyToSvc({ python_code: 'class Todo(Node):\n    title: str\n    done: bool = False\n' });
 * // svc_code:
 * // import { Node, T } from 'svc';
 * // export class Todo extends Node {
 * //   static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });
 * //   declare title: string;
 * //   declare done: boolean;
 * // }
 */
export async function pyToSvc({ python_code }: { python_code: string }): Promise<SvcResult> {
  checkSize(python_code, 'python_code');
  const tr = new PyTranslator(python_code);
  const code = tr.run();
  try {
    return { svc_code: await format(code, { ...SVC_PRETTIER_OPTIONS }), warnings: tr.warnings };
  } catch (error) {
    // A translation prettier cannot read is a bug here; the user still gets the text, and says so.
    return { svc_code: code, warnings: [...tr.warnings, `the translation did not format: ${(error as Error).message.split('\n')[0]}`] };
  }
}

/** One logical line of Python: brackets and `\` continuations joined (newlines kept), comments dropped. */
interface PyStmt {
  text: string;
  indent: number;
  line: number;
  end: number;
  body: PyStmt[];
}

type Kind = 'node' | 'edge' | 'walker' | 'plain';

const SVC_BASES: Record<string, Kind> = { Node: 'node', Root: 'node', Edge: 'edge', GenericEdge: 'edge', Walker: 'walker' };
const SVC_TYPE_NAMES = new Set(['Root', 'Node', 'Edge', 'GenericEdge', 'Walker']);

/** A schema call: `T.String`, its positional arguments and its options (rendered as `{ k: v }`). */
interface Schema {
  call: string;
  args: string[];
  opts: [string, string][];
}

/** A Python type as svc reads it; `unmapped` names what has no JSON schema. */
interface Ty {
  schema: Schema;
  ts: string;
  unmapped?: string;
}

interface PyParam {
  name: string;
  type?: string;
  default?: string;
  star: 0 | 1 | 2;
}

const JS_RESERVED = new Set(
  'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await'.split(' '),
);

class PyTranslator {
  readonly warnings: string[] = [];
  private readonly lines: string[];
  private readonly kinds = new Map<string, Kind>();
  private readonly declared = new Set<string>();
  /** Classes of this input with a `static has` of their own or inherited. */
  private readonly withHas = new Set<string>();
  private readonly classNames: Set<string>;
  private readonly imports = new Set<string>();

  constructor(private readonly src: string) {
    this.lines = src.split(/\r?\n/);
    this.classNames = new Set([...src.matchAll(/^\s*(?:class|node|edge|walker|obj)\s+(?::\s*\w+\s+)?([A-Za-z_]\w*)/gm)].map((m) => m[1] as string));
  }

  run(): string {
    const out: string[] = [];
    const importLines: number[] = [];
    let decorators: PyStmt[] = [];
    const statements = tree(logicalLines(this.src, (line, message) => this.warn(line, message)));
    for (const [i, s] of statements.entries()) {
      const text = s.text;
      if (/^(from|import)\s/.test(text)) {
        importLines.push(s.line);
        continue;
      }
      if (text.startsWith('@')) {
        decorators.push(s);
        continue;
      }
      const taken = decorators;
      decorators = [];
      if (i === 0 && isString(text)) {
        out.push(docComment(pyString(text) ?? ''));
      } else if (/^(async\s+)?def\b/.test(text)) {
        out.push(this.fnStub(s, taken));
      } else if (/^class\s/.test(text)) {
        out.push(this.pyClass(s, taken));
      } else if (/^(node|edge|walker|obj)\b/.test(text) && text.includes('{')) {
        out.push(this.jacClass(s));
      } else if (text === 'pass' || text === '...') {
        continue;
      } else if (/^[A-Za-z_]\w*\s*(:[^=]+)?=[^=]/.test(text) && s.body.length === 0) {
        out.push(this.constant(s));
      } else {
        out.push(this.untranslated(s, 'statement'));
      }
      // Classes and functions say which of their decorators they did not translate.
      if (!/^(async\s+def|def|class)\b/.test(text)) for (const d of taken) this.warn(d.line, `decorator ${d.text.split('(')[0]} not translated`);
    }
    if (importLines.length > 0) this.warnings.unshift(`line ${importLines.join(', ')}: imports not translated (an svc module imports what it uses from 'svc')`);
    const names = [...this.imports].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
    const head = [`// Translated from Python by py_to_svc: declarations only; bodies are stubs marked TODO(py_to_svc).`];
    if (names.length > 0) head.push(`import { ${names.join(', ')} } from 'svc';`);
    return `${head.join('\n')}\n\n${out.join('\n\n')}\n`;
  }

  private warn(line: number, message: string): void {
    this.warnings.push(`line ${line}: ${message}`);
  }

  private untranslated(s: PyStmt, what: string): string {
    const first = s.text.split('\n')[0] ?? '';
    this.warn(s.line, `${what} not translated: ${first.length > 60 ? `${first.slice(0, 57)}...` : first}`);
    return `// TODO(py_to_svc): not translated (line ${s.line}):\n${this.quoted(s)}`;
  }

  /** The Python of a statement (and its block) as `//` comment lines. */
  private quoted(s: PyStmt, prefix = ''): string {
    const lines = this.lines.slice(s.line - 1, s.end);
    const shown = lines.slice(0, 60).map((l) => `${prefix}//   ${l.slice(Math.min(s.indent, l.length - l.trimStart().length))}`.trimEnd());
    if (lines.length > 60) shown.push(`${prefix}//   … ${lines.length - 60} more lines`);
    return shown.join('\n');
  }

  private constant(s: PyStmt): string {
    const p = param(s.text);
    const value = p.default === undefined ? undefined : jsLiteral(p.default);
    if (value === undefined) return this.untranslated(s, 'statement');
    const type = p.type ? `: ${this.type(p.type).ts}` : '';
    return `export const ${this.safe(p.name, s.line)}${type} = ${value};`;
  }

  private safe(name: string, line: number): string {
    if (!JS_RESERVED.has(name)) return name;
    this.warn(line, `${name} is a reserved word in TypeScript: renamed ${name}_`);
    return `${name}_`;
  }

  /** A Python type (annotation text) as a TypeBox schema and a TypeScript type. */
  private type(text: string): Ty {
    return pyType(text, (name) => {
      if (SVC_TYPE_NAMES.has(name)) {
        this.imports.add(name);
        return name;
      }
      return this.classNames.has(name) ? name : undefined;
    });
  }

  /** `T.Object({...})` and `declare` lines of fields; fields svc would refuse are left out, with a warning. */
  private fields(fields: { p: PyParam; line: number }[], kind: Kind, className: string, parent?: string): { has?: string; lines: string[] } {
    const props: string[] = [];
    const lines: string[] = [];
    for (const { p, line } of fields) {
      if (!/^[A-Za-z_]\w*$/.test(p.name) || p.star !== 0) {
        this.warn(line, `${className}: field ${p.name} not translated (not a name)`);
        continue;
      }
      const ty = this.type(p.type ?? 'object');
      if (!p.type) this.warn(line, `${className}.${p.name}: no type: T.Unknown()`);
      if (ty.unmapped) this.warn(line, `${className}.${p.name}: type ${ty.unmapped} has no JSON schema here: T.Unknown()`);
      let value: string | undefined;
      if (p.default !== undefined) {
        value = jsLiteral(p.default);
        if (value === undefined) this.warn(line, `${className}.${p.name}: default ${p.default} not translated (not a literal)`);
      }
      if (kind === 'plain') {
        lines.push(value === undefined ? `declare ${p.name}: ${ty.ts};` : `${p.name}: ${ty.ts} = ${value};`);
        continue;
      }
      const reserved = (SVC_RESERVED_FIELDS[kind] as readonly string[]).includes(p.name);
      if (reserved || p.name.startsWith('_')) {
        this.warn(line, `${className}.${p.name}: left out: svc reserves ${reserved ? 'this name' : 'names starting with _'} on a ${kind}`);
        lines.push(`// TODO(py_to_svc): field ${p.name} left out (svc reserves the name): rename it`);
        continue;
      }
      const schema = value === undefined ? ty.schema : { ...ty.schema, opts: [...ty.schema.opts, ['default', value] as [string, string]] };
      props.push(`${propertyKey(p.name)}: ${renderSchema(schema)}`);
      lines.push(`declare ${p.name}: ${ty.ts};`);
    }
    if (props.length === 0) return { lines };
    this.imports.add('T');
    // svc merges a class's `has` with its ancestors'; TypeScript wants the static side to extend the parent's, so the
    // parent's fields are spread in (they are the same schemas: nothing changes at run time).
    if (parent && this.withHas.has(parent)) return { has: `static override has = T.Object({ ...${parent}.has.properties, ${props.join(', ')} });`, lines };
    return { has: `static has = T.Object({ ${props.join(', ')} });`, lines };
  }

  /** The class a Python `class` header extends, and what kind of svc class that makes it. */
  private base(bases: string[], line: number, name: string): { kind: Kind; extend?: string } {
    for (const b of bases) {
      const simple = b.split('.').pop() ?? b;
      const local = this.kinds.get(simple);
      if (local) return { kind: local, extend: simple };
      const svcKind = SVC_BASES[simple];
      if (svcKind) {
        const extend = simple === 'Root' ? 'Node' : simple;
        if (simple === 'Root') this.warn(line, `${name}: extends Root; translated as a Node`);
        this.imports.add(extend);
        return { kind: svcKind, extend };
      }
    }
    const others = bases.filter((b) => !['object', 'Obj', 'ABC'].includes(b) && !b.includes('='));
    if (others.length > 0) this.warn(line, `${name}: base ${others.join(', ')} not known here: a plain class`);
    return { kind: 'plain' };
  }

  private pyClass(s: PyStmt, decorators: PyStmt[]): string {
    const { head, inline } = splitHeader(s.text);
    const m = /^class\s+([A-Za-z_]\w*)\s*(?:\(([\s\S]*)\))?\s*$/.exec(head);
    if (!m) return this.untranslated(s, 'class');
    const name = m[1] as string;
    const { kind, extend } = this.base(splitTop(m[2] ?? '', ','), s.line, name);
    this.kinds.set(name, kind);
    const body = inline ? [{ text: inline, indent: s.indent + 1, line: s.line, end: s.line, body: [] }] : s.body;
    const fields: { p: PyParam; line: number }[] = [];
    const members: string[] = [];
    let doc = '';
    let memberDecorators: PyStmt[] = [];
    let access: string | undefined;
    for (const [i, b] of body.entries()) {
      const text = b.text;
      if (text.startsWith('@')) {
        memberDecorators.push(b);
        continue;
      }
      const taken = memberDecorators;
      memberDecorators = [];
      if (i === 0 && isString(text)) doc = pyString(text) ?? '';
      else if (text === 'pass' || text === '...') continue;
      else if (/^(async\s+)?def\b/.test(text)) members.push(this.method(b, taken, name, kind));
      else if (/^(static\s+)?has\s/.test(text)) for (const f of splitTop(text.replace(/^(static\s+)?has\s+/, '').replace(/;\s*$/, ''), ',')) fields.push({ p: param(f), line: b.line });
      else if (/^[A-Za-z_]\w*\s*:/.test(text)) {
        const p = param(text);
        const classVar = /^ClassVar\b/.exec(p.type ?? '');
        if (classVar) members.push(this.staticMember(b, { ...p, type: p.type?.replace(/^ClassVar\s*\[([\s\S]*)\]$/, '$1') }, name, kind));
        else fields.push({ p, line: b.line });
      } else if (/^[A-Za-z_]\w*\s*=[^=]/.test(text)) {
        const p = param(text);
        if (p.name === 'access' && kind === 'walker') access = p.default ? pyString(p.default) : undefined;
        else members.push(this.staticMember(b, p, name, kind));
      } else members.push(this.untranslated(b, `${name}: class statement`));
    }
    for (const d of decorators) if (!/^@dataclass\b/.test(d.text)) this.warn(d.line, `${name}: decorator ${d.text.split('(')[0]} not translated`);
    this.declared.add(name);
    return this.emitClass({ name, kind, extend, doc, fields, members, access, line: s.line });
  }

  private emitClass(c: { name: string; kind: Kind; extend?: string; doc: string; fields: { p: PyParam; line: number }[]; members: string[]; access?: string; line: number }): string {
    const { has, lines } = this.fields(c.fields, c.kind, c.name, c.extend);
    if (has || (c.extend && this.withHas.has(c.extend))) this.withHas.add(c.name);
    const out: string[] = [];
    if (c.doc) out.push(docComment(c.doc));
    out.push(`export class ${c.name}${c.extend ? ` extends ${c.extend}` : ''} {`);
    if (c.access !== undefined) {
      if (['pub', 'priv', 'protect'].includes(c.access)) out.push(`static access = ${JSON.stringify(c.access)} as const;`);
      else this.warn(c.line, `${c.name}: access ${c.access} is not pub, priv or protect: left out`);
    }
    if (has) out.push(has);
    out.push(...lines);
    if (c.kind === 'plain' && c.fields.length > 0) {
      out.push(`constructor(init: Partial<${c.name}> = {}) {`, ...(c.extend ? ['super(init);'] : []), 'Object.assign(this, init);', '}');
    }
    out.push(...c.members, '}');
    return out.join('\n');
  }

  private staticMember(s: PyStmt, p: PyParam, className: string, kind: Kind): string {
    const value = p.default === undefined ? undefined : jsLiteral(p.default);
    if (value === undefined) return this.untranslated(s, `${className}: class attribute ${p.name}`);
    if (kind !== 'plain' && p.name === 'has') return this.untranslated(s, `${className}: class attribute has`);
    const type = p.type ? `: ${this.type(p.type).ts}` : '';
    return `static ${propertyKey(p.name)}${type} = ${value};`;
  }

  /** An entry/exit decorator (`@on_entry`, `@entry(Root)`, `@on.exit(Todo | Root)`), or undefined. */
  private ability(decorators: PyStmt[]): { kind: 'entry' | 'exit'; types: string[]; bare: boolean } | undefined {
    for (const d of decorators) {
      const m = /^@(?:on[._]?)?(entry|exit)\b\s*(?:\(([\s\S]*)\))?\s*$/.exec(d.text);
      if (m) {
        const types = (m[2] ?? '').split(/[,|]/).map((t) => t.trim()).filter(Boolean);
        return { kind: m[1] as 'entry' | 'exit', types, bare: types.length === 0 };
      }
    }
    return undefined;
  }

  /** A class in an ability decorator: svc's, one declared above, else a thunk or its name (declared below or elsewhere). */
  private abilityType(name: string): string {
    const simple = name.replace(/^['"]|['"]$/g, '').split('.').pop() ?? name;
    if (SVC_TYPE_NAMES.has(simple)) {
      this.imports.add(simple);
      return simple;
    }
    if (this.declared.has(simple)) return simple;
    if (this.classNames.has(simple)) return `() => ${simple}`;
    return JSON.stringify(simple);
  }

  private method(s: PyStmt, decorators: PyStmt[], className: string, kind: Kind): string {
    const sig = defSignature(s.text);
    if (!sig) return this.untranslated(s, `${className}: method`);
    if (/^__\w+__$/.test(sig.name)) {
      this.warn(s.line, `${className}.${sig.name}: not translated (svc builds instances from their fields)`);
      return `// TODO(py_to_svc): ${className}.${sig.name} not translated (line ${s.line}):\n${this.quoted(s)}`;
    }
    const isStatic = decorators.some((d) => /^@(staticmethod|classmethod)\b/.test(d.text));
    const getter = decorators.some((d) => /^@property\b/.test(d.text));
    const params = sig.params.filter((p, i) => !(i === 0 && (p.name === 'self' || p.name === 'cls') && p.star === 0));
    let prefix = '';
    const ability = this.ability(decorators);
    if (ability) {
      const types = ability.bare && params[0]?.type ? splitTop(params[0].type, '|') : ability.types;
      this.imports.add(ability.kind);
      prefix = `@${ability.kind}(${types.map((t) => this.abilityType(t.trim())).join(', ')}) `;
      if (kind === 'plain') this.warn(s.line, `${className}.${sig.name}: an ability on a class that is not a node, edge or walker`);
    }
    for (const d of decorators) {
      if (!/^@(staticmethod|classmethod|property|(on[._]?)?(entry|exit))\b/.test(d.text)) this.warn(d.line, `${className}.${sig.name}: decorator ${d.text.split('(')[0]} not translated`);
    }
    const list = params.map((p) => this.tsParam(p, s.line, `${className}.${sig.name}`)).join(', ');
    const ret = this.returnType(sig.returns, sig.async);
    this.warn(s.line, `${className}.${sig.name}: body not translated (stub)`);
    const head = `${prefix}${isStatic ? 'static ' : ''}${getter ? 'get ' : ''}${sig.async ? 'async ' : ''}${sig.name}(${getter ? '' : list})${ret}`;
    return `${head} {\n${this.stubBody(s, `${className}.${sig.name}`)}\n}`;
  }

  private tsParam(p: PyParam, line: number, owner: string): string {
    const name = this.safe(p.name, line);
    const ts = p.type ? this.type(p.type).ts : 'unknown';
    if (p.star === 1) return `...${name}: ${ts}[]`;
    if (p.star === 2) return `${name}: Record<string, ${ts}> = {}`;
    if (p.default === undefined) return `${name}: ${ts}`;
    const value = jsLiteral(p.default);
    if (value !== undefined) return `${name}: ${ts} = ${value}`;
    this.warn(line, `${owner}: default of ${p.name} (${p.default}) not translated: the parameter is optional`);
    return `${name}?: ${ts}`;
  }

  private returnType(returns: string | undefined, isAsync: boolean): string {
    if (returns === undefined) return '';
    const ts = returns.trim() === 'None' ? 'void' : this.type(returns).ts;
    return `: ${isAsync ? `Promise<${ts}>` : ts}`;
  }

  private stubBody(s: PyStmt, name: string): string {
    const range = s.end > s.line ? `lines ${s.line}–${s.end}` : `line ${s.line}`;
    return `// TODO(py_to_svc): body not translated. The Python (${range}):\n${this.quoted(s)}\nthrow new Error(${JSON.stringify(`${name}: not translated from Python`)});`;
  }

  /** A module-level `def`: an svc function endpoint whose handler is a stub. */
  private fnStub(s: PyStmt, decorators: PyStmt[]): string {
    const sig = defSignature(s.text);
    if (!sig) return this.untranslated(s, 'function');
    const name = this.safe(sig.name, s.line);
    const props: string[] = [];
    const names: string[] = [];
    for (const p of sig.params) {
      if (p.star !== 0) {
        this.warn(s.line, `${sig.name}: ${p.star === 1 ? '*' : '**'}${p.name} not translated (an svc function takes named fields)`);
        continue;
      }
      const ty = this.type(p.type ?? 'object');
      if (!p.type) this.warn(s.line, `${sig.name}: parameter ${p.name} has no type: T.Unknown()`);
      if (ty.unmapped) this.warn(s.line, `${sig.name}: parameter ${p.name}: type ${ty.unmapped} has no JSON schema here: T.Unknown()`);
      let schema = ty.schema;
      if (p.default !== undefined) {
        const value = jsLiteral(p.default);
        if (value === undefined) {
          this.warn(s.line, `${sig.name}: default of ${p.name} (${p.default}) not translated: the field is optional`);
          schema = { call: 'T.Optional', args: [renderSchema(schema)], opts: [] };
        } else schema = { ...schema, opts: [...schema.opts, ['default', value]] };
      }
      props.push(`${propertyKey(p.name)}: ${renderSchema(schema)}`);
      names.push(JS_RESERVED.has(p.name) || !/^[A-Za-z_$][\w$]*$/.test(p.name) ? `${propertyKey(p.name)}: ${p.name.replace(/\W/g, '_')}_` : p.name);
    }
    const options: string[] = [];
    if (sig.access) options.push(`access: ${JSON.stringify(sig.access)}`);
    for (const d of decorators) {
      // `@fn(access="pub", method="GET")` (what svc_to_py writes): the function's options.
      const fnOptions = /^@fn\s*\(([\s\S]*)\)\s*$/.exec(d.text);
      if (!fnOptions) {
        this.warn(d.line, `${sig.name}: decorator ${d.text.split('(')[0]} not translated`);
        continue;
      }
      for (const kw of splitTop(fnOptions[1] as string, ',')) {
        const eq = topIndex(kw, '=');
        const key = kw.slice(0, eq).trim();
        const value = eq === -1 ? undefined : jsLiteral(kw.slice(eq + 1));
        if (value === undefined || !/^[A-Za-z_]\w*$/.test(key) || key === 'params') this.warn(d.line, `${sig.name}: fn option ${kw} not translated`);
        else if (!(key === 'access' && sig.access)) options.push(`${key}: ${value}`);
      }
    }
    this.imports.add('fn');
    if (props.length > 0) {
      this.imports.add('T');
      options.push(`params: T.Object({ ${props.join(', ')} })`);
    }
    const args = names.length > 0 ? `{ ${names.join(', ')} }` : '';
    this.warn(s.line, `${sig.name}: function body not translated (stub)`);
    const handler = `${sig.async ? 'async ' : ''}(${args})${this.returnType(sig.returns, sig.async)} => {\n${this.stubBody(s, sig.name)}\n}`;
    return `export const ${name} = fn({ ${options.join(', ')} }, ${handler});`;
  }

  /** A jac-style block: `node Todo { has title: str, done: bool = False; can add with Root entry { … } }`. */
  private jacClass(s: PyStmt): string {
    const open = topIndex(s.text, '{');
    const close = s.text.lastIndexOf('}');
    let head = s.text.slice(0, open).trim();
    let access: string | undefined;
    head = head.replace(/\s*:\s*(pub|priv|protect)\b/, (_all, a: string) => {
      access = a;
      return '';
    });
    const m = /^(node|edge|walker|obj)\s+([A-Za-z_]\w*)\s*(?:\(([\s\S]*)\))?\s*$/.exec(head);
    if (!m || open === -1 || close < open) return this.untranslated(s, 'block');
    const keyword = m[1] as string;
    const name = m[2] as string;
    const bases = splitTop(m[3] ?? '', ',');
    const own: Kind = keyword === 'obj' ? 'plain' : (keyword as Kind);
    let { kind, extend } = this.base(bases, s.line, name);
    if (kind === 'plain' && own !== 'plain') {
      kind = own;
      extend = own === 'node' ? 'Node' : own === 'edge' ? 'Edge' : 'Walker';
      this.imports.add(extend);
    }
    this.kinds.set(name, kind);
    const fields: { p: PyParam; line: number }[] = [];
    const members: string[] = [];
    const inner = s.text.slice(open + 1, close);
    const lineAt = (offset: number): number => s.line + (s.text.slice(0, open + 1 + offset).match(/\n/g)?.length ?? 0);
    for (const item of jacItems(inner)) {
      const line = lineAt(item.offset);
      const text = item.text;
      if (/^(static\s+)?has\s/.test(text)) {
        for (const f of splitTop(text.replace(/^(static\s+)?has\s+/, ''), ',')) fields.push({ p: param(f), line });
      } else if (/^(can|def)\s/.test(text)) {
        members.push(this.jacAbility(item.text, line, name, kind));
      } else {
        this.warn(line, `${name}: not translated: ${text.split('\n')[0]?.slice(0, 60)}`);
        members.push(`// TODO(py_to_svc): not translated (line ${line}): ${text.split('\n')[0]}`);
      }
    }
    if (access !== undefined && kind !== 'walker') this.warn(s.line, `${name}: access :${access} applies to walkers only: left out`);
    this.declared.add(name);
    return this.emitClass({ name, kind, extend, doc: '', fields, members, access: kind === 'walker' ? access : undefined, line: s.line });
  }

  /** `can name with Root entry { … }`, `can name(x: int) -> int { … }`, `def name(…) { … }`: a stub. */
  private jacAbility(text: string, line: number, className: string, kind: Kind): string {
    const headEnd = topIndex(text, '{');
    const head = (headEnd === -1 ? text : text.slice(0, headEnd)).replace(/\s+/g, ' ').trim();
    const end = line + (text.match(/\n/g)?.length ?? 0);
    const stmt: PyStmt = { text, indent: (this.lines[line - 1] ?? '').search(/\S|$/), line, end, body: [] };
    const ability = /^can ([A-Za-z_]\w*)(?: with ([\w\s|.,]*?))? (entry|exit)$/.exec(head);
    if (ability) {
      const name = ability[1] as string;
      const kindWord = ability[3] as 'entry' | 'exit';
      const types = (ability[2] ?? '').split(/[|,]/).map((t) => t.trim()).filter(Boolean);
      this.imports.add(kindWord);
      const argName = kind === 'node' ? 'visitor' : 'here';
      const argTypes = types.length > 0 ? types.map((t) => this.type(t).ts).join(' | ') : kind === 'walker' ? (this.imports.add('Node'), 'Node') : 'Walker';
      if (kind !== 'walker' && types.length === 0) this.imports.add('Walker');
      this.warn(line, `${className}.${name}: body not translated (stub)`);
      return `@${kindWord}(${types.map((t) => this.abilityType(t)).join(', ')}) ${name}(${argName}: ${argTypes}) {\n${this.stubBody(stmt, `${className}.${name}`)}\n}`;
    }
    const sig = defSignature(`${head.replace(/^can /, 'def ')}:`);
    if (!sig) {
      this.warn(line, `${className}: not translated: ${head.slice(0, 60)}`);
      return `// TODO(py_to_svc): not translated (line ${line}): ${head}`;
    }
    const params = sig.params.filter((p) => p.name !== 'self');
    this.warn(line, `${className}.${sig.name}: body not translated (stub)`);
    const list = params.map((p) => this.tsParam(p, line, `${className}.${sig.name}`)).join(', ');
    return `${sig.async ? 'async ' : ''}${sig.name}(${list})${this.returnType(sig.returns, sig.async)} {\n${this.stubBody(stmt, `${className}.${sig.name}`)}\n}`;
  }
}

/** Python's logical lines: comments dropped, bracketed and `\`-continued lines joined (their newlines kept). */
function logicalLines(src: string, warn: (line: number, message: string) => void): PyStmt[] {
  const out: PyStmt[] = [];
  let text = '';
  let depth = 0;
  let opened = 0;
  let line = 1;
  let start = 1;
  let indent = 0;
  let atLineStart = true;
  const flush = (): void => {
    if (text.trim() !== '') out.push({ text: text.trim(), indent, line: start, end: line, body: [] });
    text = '';
  };
  for (let i = 0; i < src.length; ) {
    if (atLineStart) {
      let width = 0;
      while (src[i] === ' ' || src[i] === '\t') width += src[i++] === '\t' ? 8 - (width % 8) : 1;
      indent = width;
      start = line;
      atLineStart = false;
      continue;
    }
    const c = src[i] as string;
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '"' || c === "'") {
      const end = stringEnd(src, i);
      const s = src.slice(i, end);
      text += s;
      line += s.match(/\n/g)?.length ?? 0;
      i = end;
    } else if (c === '\\' && (src[i + 1] === '\n' || (src[i + 1] === '\r' && src[i + 2] === '\n'))) {
      text += '\n';
      line++;
      i += src[i + 1] === '\r' ? 3 : 2;
    } else if (c === '\n') {
      i++;
      if (depth > 0) {
        text += '\n';
        line++;
        continue;
      }
      flush();
      line++;
      atLineStart = true;
    } else {
      if (c === '(' || c === '[' || c === '{') {
        if (depth === 0) opened = line;
        depth++;
      } else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
      if (c !== '\r') text += c;
      i++;
    }
  }
  if (depth > 0) warn(opened, 'a bracket opened here is never closed: the rest of the input was read as one statement');
  flush();
  return out;
}

/** Where the string literal starting at `i` ends (past its closing quote, or at the line's end when unterminated). */
function stringEnd(src: string, i: number): number {
  const q = src[i] as string;
  const triple = src.startsWith(q.repeat(3), i);
  const close = triple ? q.repeat(3) : q;
  let j = i + close.length;
  while (j < src.length) {
    if (src[j] === '\\') j += 2;
    else if (src.startsWith(close, j)) return j + close.length;
    else if (!triple && src[j] === '\n') return j;
    else j++;
  }
  return src.length;
}

/** Nest logical lines by indentation: each line's block is the more-indented lines after it. */
function tree(lines: PyStmt[]): PyStmt[] {
  const root: PyStmt = { text: '', indent: -1, line: 0, end: 0, body: [] };
  const stack = [root];
  for (const l of lines) {
    while (stack.length > 1 && l.indent <= (stack.at(-1) as PyStmt).indent) stack.pop();
    for (const open of stack) open.end = Math.max(open.end, l.end);
    (stack.at(-1) as PyStmt).body.push(l);
    stack.push(l);
  }
  return root.body;
}

/** Scan `text` at bracket depth 0, outside strings: `visit(i)` for each such index. */
function scanTop(text: string, visit: (i: number, c: string) => boolean | void): void {
  let depth = 0;
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    if (c === '"' || c === "'") {
      i = stringEnd(text, i);
      continue;
    }
    if (depth === 0 && visit(i, c) === true) return;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
    i++;
  }
}

function topIndex(text: string, ch: string): number {
  let at = -1;
  scanTop(text, (i, c) => {
    if (c === ch) {
      at = i;
      return true;
    }
    return false;
  });
  return at;
}

/** Split at top-level `sep` (outside brackets and strings); empty parts dropped. */
function splitTop(text: string, sep: string): string[] {
  const parts: string[] = [];
  let from = 0;
  scanTop(text, (i, c) => {
    if (c === sep) {
      parts.push(text.slice(from, i));
      from = i + 1;
    }
  });
  parts.push(text.slice(from));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** A compound statement's header and what follows its colon on the same line (a one-line body). */
function splitHeader(text: string): { head: string; inline: string } {
  const colon = topIndex(text, ':');
  if (colon === -1) return { head: text.trim(), inline: '' };
  return { head: text.slice(0, colon).trim(), inline: text.slice(colon + 1).trim() };
}

/** `def name(params) -> ret:` (also `async def`, `def:pub name`, a jac `{ … }` body). */
function defSignature(text: string): { name: string; params: PyParam[]; returns?: string; async: boolean; access?: string } | undefined {
  const m = /^(async\s+)?def\s*(?::\s*(pub|priv|protect)\s+)?([A-Za-z_]\w*)\s*\(/.exec(text);
  if (!m) return undefined;
  const open = m[0].length - 1;
  let close = -1;
  scanTop(text.slice(open + 1), (i, c) => {
    if (c === ')') {
      close = open + 1 + i;
      return true;
    }
    return false;
  });
  if (close === -1) return undefined;
  const rest = text.slice(close + 1);
  const ret = /^\s*->\s*([\s\S]*?)\s*(:|\{)/.exec(rest);
  return {
    name: m[3] as string,
    params: splitTop(text.slice(open + 1, close), ',').filter((p) => p !== '/' && p !== '*').map(param),
    returns: ret?.[1] ? ret[1].replace(/\s+/g, ' ') : undefined,
    async: m[1] !== undefined,
    access: m[2],
  };
}

/** `name: type = default` (also `*args: T`, `**kw: T`, `name = default`). */
function param(text: string): PyParam {
  let t = text.trim().replace(/;\s*$/, '');
  let star: 0 | 1 | 2 = 0;
  if (t.startsWith('**')) star = 2;
  else if (t.startsWith('*')) star = 1;
  t = t.slice(star);
  let def: string | undefined;
  const eq = topIndex(t, '=');
  if (eq !== -1) {
    def = t.slice(eq + 1).trim();
    t = t.slice(0, eq);
  }
  const colon = topIndex(t, ':');
  const name = (colon === -1 ? t : t.slice(0, colon)).trim();
  const type = colon === -1 ? undefined : t.slice(colon + 1).trim().replace(/\s+/g, ' ');
  return { name, type: type || undefined, default: def, star };
}

const S = (call: string, ...args: string[]): Schema => ({ call: `T.${call}`, args, opts: [] });
const UNKNOWN: Ty = { schema: S('Unknown'), ts: 'unknown' };

/**
 * A Python annotation as a TypeBox schema and a TypeScript type. `known`
 * says which other names are classes (their TS type is themselves; their
 * schema `T.Unknown()`, marked unmapped).
 */
function pyType(text: string, known: (name: string) => string | undefined): Ty {
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

function renderSchema(s: Schema): string {
  const args = [...s.args];
  if (s.opts.length > 0) args.push(`{ ${s.opts.map(([k, v]) => `${k}: ${v}`).join(', ')} }`);
  return `${s.call}(${args.join(', ')})`;
}

function propertyKey(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

function docComment(text: string): string {
  const lines = dedent(text).trim().split('\n');
  return `/**\n${lines.map((l) => ` * ${l.replaceAll('*/', '*\\/')}`.trimEnd()).join('\n')}\n */`;
}

function dedent(text: string): string {
  const lines = text.split('\n');
  const widths = lines.slice(1).filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length);
  const cut = widths.length > 0 ? Math.min(...widths) : 0;
  return [lines[0] ?? '', ...lines.slice(1).map((l) => l.slice(cut))].join('\n');
}

/** The items of a jac brace body: `has …;` statements and `can`/`def` blocks, with their offsets. */
function jacItems(body: string): { text: string; offset: number }[] {
  const items: { text: string; offset: number }[] = [];
  let from = 0;
  let depth = 0;
  for (let i = 0; i < body.length; ) {
    const c = body[i] as string;
    if (c === '"' || c === "'") {
      i = stringEnd(body, i);
      continue;
    }
    if (c === '{' || c === '(' || c === '[') depth++;
    else if (c === '}' || c === ')' || c === ']') {
      depth = Math.max(0, depth - 1);
      if (depth === 0 && c === '}') {
        push(from, i + 1);
        from = i + 1;
      }
    } else if (c === ';' && depth === 0) {
      push(from, i);
      from = i + 1;
    }
    i++;
  }
  push(from, body.length);
  return items;

  function push(a: number, b: number): void {
    const raw = body.slice(a, b);
    const lead = raw.length - raw.trimStart().length;
    const text = raw.trim();
    if (text !== '' && text !== ';') items.push({ text, offset: a + lead });
  }
}

function isString(text: string): boolean {
  return /^[rRuU]?("""|'''|"|')/.test(text) && stringEnd(text, text.search(/["']/)) === text.length;
}

/** The value of a Python string literal (adjacent literals joined), or undefined for f- and b-strings. */
function pyString(text: string): string | undefined {
  let value = '';
  let i = 0;
  const t = text.trim();
  while (i < t.length) {
    const prefix = /^[A-Za-z]{0,2}/.exec(t.slice(i))?.[0] ?? '';
    if (/[fFbB]/.test(prefix)) return undefined;
    const start = i + prefix.length;
    if (t[start] !== '"' && t[start] !== "'") return undefined;
    const end = stringEnd(t, start);
    const q = t.startsWith((t[start] as string).repeat(3), start) ? 3 : 1;
    const inner = t.slice(start + q, end - q);
    value += /[rR]/.test(prefix) ? inner : unescapePy(inner);
    i = end;
    while (t[i] === ' ' || t[i] === '\n' || t[i] === '\t') i++;
  }
  return value;
}

function unescapePy(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|\n|.)/g, (all, e: string) => {
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v', '\n': '' };
    if (e in simple) return simple[e] as string;
    if (/^[xuU]/.test(e)) return String.fromCodePoint(parseInt(e.slice(1), 16));
    if (/^[0-7]+$/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return all;
  });
}

/**
 * A Python literal as a JavaScript expression, or undefined when it is not one
 * (names, calls other than `field(default=…)`, `list()`, `dict()`; f-strings).
 */
function jsLiteral(text: string): string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  if (/^(True|False|None)$/.test(t)) return t === 'True' ? 'true' : t === 'False' ? 'false' : 'null';
  const num = /^([+-]?)\s*(0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)$/.exec(t);
  if (num) {
    const n = Number((num[2] as string).replaceAll('_', ''));
    return Number.isFinite(n) ? `${num[1] === '-' ? '-' : ''}${n}` : undefined;
  }
  if (/^[A-Za-z]{0,2}["']/.test(t) && stringEnd(t, t.search(/["']/)) <= t.length) {
    const s = isStringSequence(t) ? pyString(t) : undefined;
    return s === undefined ? undefined : JSON.stringify(s);
  }
  const call = /^(?:dataclasses\.)?(field|list|dict|set|tuple)\s*\(([\s\S]*)\)$/.exec(t);
  if (call) {
    const inner = (call[2] as string).trim();
    if (call[1] !== 'field') return inner === '' ? (call[1] === 'dict' ? '{}' : '[]') : undefined;
    for (const kw of splitTop(inner, ',')) {
      const [k, v = ''] = [kw.slice(0, kw.indexOf('=')).trim(), kw.slice(kw.indexOf('=') + 1).trim()];
      if (k === 'default') return jsLiteral(v);
      if (k === 'default_factory') {
        if (/^(list|set|tuple)$/.test(v)) return '[]';
        if (v === 'dict') return '{}';
        const lambda = /^lambda\s*:\s*([\s\S]*)$/.exec(v);
        if (lambda) return jsLiteral(lambda[1] as string);
      }
    }
    return undefined;
  }
  const open = t[0];
  const closeFor: Record<string, string> = { '[': ']', '(': ')', '{': '}' };
  if (open && closeFor[open] && t.endsWith(closeFor[open] as string) && topIndex(t, open) === 0) {
    const inner = t.slice(1, -1);
    const items = splitTop(inner, ',');
    if (open === '{' && items.length > 0 && items.every((i) => topIndex(i, ':') !== -1)) {
      const entries: string[] = [];
      for (const item of items) {
        const at = topIndex(item, ':');
        const key = jsLiteral(item.slice(0, at));
        const value = jsLiteral(item.slice(at + 1));
        if (key === undefined || value === undefined || !/^["\d-]/.test(key)) return undefined;
        entries.push(`${key.startsWith('"') ? key : JSON.stringify(key)}: ${value}`);
      }
      return `{ ${entries.join(', ')} }`;
    }
    if (open === '(' && items.length === 1 && !inner.trim().endsWith(',')) return jsLiteral(inner);
    const values = items.map(jsLiteral);
    if (values.some((v) => v === undefined)) return undefined;
    return open === '{' && items.length === 0 ? '{}' : `[${values.join(', ')}]`;
  }
  return undefined;
}

/** Whether `t` is nothing but string literals side by side. */
function isStringSequence(t: string): boolean {
  let i = 0;
  while (i < t.length) {
    const prefix = /^[A-Za-z]{0,2}/.exec(t.slice(i))?.[0] ?? '';
    const start = i + prefix.length;
    if (t[start] !== '"' && t[start] !== "'") return false;
    i = stringEnd(t, start);
    while (t[i] === ' ' || t[i] === '\n' || t[i] === '\t') i++;
  }
  return true;
}

// ─── svc → Python ────────────────────────────────────────────────────────────

/**
 * Translate the declarations of an svc module into Python (see this file's
 * comment for what is and is not translated). Bodies become
 * `# TODO(svc_to_py)` stubs raising `NotImplementedError`, each listed in
 * `warnings`. Input that does not parse: `python_code` is `''` and the errors
 * (`line:col: error: message`) are the warnings.
 *
 * @example
 * const { python_code } = await svcToPy({ code: "export class Todo extends Node {\n  static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });\n}" });
 * // class Todo(Node):
 * //     title: str
 * //     done: bool = False
 */
export async function svcToPy({ code }: { code: string }): Promise<PyResult> {
  checkSize(code, 'code');
  const syntax = ts.transpileModule(code, { reportDiagnostics: true, fileName: 'input.ts', compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } });
  const errors = (syntax.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    return {
      python_code: '',
      warnings: errors.map((d) => {
        const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
        if (!d.file || d.start === undefined) return `error: ${message}`;
        const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
        return `${line + 1}:${character + 1}: error: ${message}`;
      }),
    };
  }
  const source = ts.createSourceFile('input.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const tr = new SvcTranslator(source);
  return { python_code: tr.run(), warnings: tr.warnings };
}

const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(' '),
);

const INDENT = '    ';

/** A field of a Python class: its type, default and a note (other schema options), and where it was declared. */
interface PyField {
  type: string;
  default?: string;
  note?: string;
  at?: ts.Node;
}

class SvcTranslator {
  readonly warnings: string[] = [];
  private readonly svcNames = new Set<string>();
  private readonly typing = new Set<string>();
  private dataclass = false;
  private readonly kinds = new Map<string, Kind>();

  constructor(private readonly source: ts.SourceFile) {}

  run(): string {
    const blocks: string[] = [];
    for (const statement of this.source.statements) {
      const block = this.statement(statement);
      if (block !== undefined) blocks.push(block);
    }
    const head = ['"""Translated from svc (TypeScript) by svc_to_py: declarations only; bodies are stubs marked TODO(svc_to_py)."""', 'from __future__ import annotations', ''];
    if (this.dataclass) head.push('from dataclasses import dataclass, field');
    if (this.typing.size > 0) head.push(`from typing import ${[...this.typing].sort().join(', ')}`);
    if (this.svcNames.size > 0) head.push(`from svc import ${[...this.svcNames].sort().join(', ')}  # svc's names; a Python counterpart provides them`);
    return `${head.join('\n').trimEnd()}\n\n\n${blocks.join('\n\n\n')}\n`;
  }

  private line(node: ts.Node): number {
    return this.source.getLineAndCharacterOfPosition(node.getStart(this.source)).line + 1;
  }

  private warn(node: ts.Node, message: string): void {
    this.warnings.push(`line ${this.line(node)}: ${message}`);
  }

  private name(text: string, node: ts.Node): string {
    if (!PY_KEYWORDS.has(text)) return text;
    this.warn(node, `${text} is a Python keyword: renamed ${text}_`);
    return `${text}_`;
  }

  /** The TypeScript of a node as `#` comment lines (at most 40). */
  private quoted(node: ts.Node, indent: string): string {
    const text = node.getText(this.source).split('\n');
    const shown = text.slice(0, 40).map((l) => `${indent}#   ${l}`.trimEnd());
    if (text.length > 40) shown.push(`${indent}#   … ${text.length - 40} more lines`);
    return shown.join('\n');
  }

  private untranslated(node: ts.Node, what: string): string {
    this.warn(node, `${what} not translated`);
    return `# TODO(svc_to_py): ${what} not translated (line ${this.line(node)}):\n${this.quoted(node, '')}`;
  }

  private statement(s: ts.Statement): string | undefined {
    if (ts.isImportDeclaration(s)) {
      const from = (s.moduleSpecifier as ts.StringLiteral).text;
      if (from !== 'svc') this.warn(s, `import from ${from} not translated`);
      return undefined;
    }
    if (ts.isClassDeclaration(s)) return this.classDecl(s);
    if (ts.isVariableStatement(s)) {
      const out = s.declarationList.declarations.map((d) => this.variable(d, s));
      return out.join('\n\n\n');
    }
    if (ts.isFunctionDeclaration(s) && s.name) {
      return this.def(s, s.name.text, '', false);
    }
    if (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) {
      this.warn(s, `type ${s.name.text} not translated`);
      return `# TODO(svc_to_py): type ${s.name.text} not translated (line ${this.line(s)})`;
    }
    if (ts.isEmptyStatement(s)) return undefined;
    return this.untranslated(s, 'statement');
  }

  private classDecl(c: ts.ClassDeclaration): string {
    const name = c.name ? this.name(c.name.text, c) : 'Anonymous';
    const heritage = c.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
    const baseName = heritage && ts.isIdentifier(heritage) ? heritage.text : undefined;
    let kind: Kind = 'plain';
    if (baseName && this.kinds.has(baseName)) kind = this.kinds.get(baseName) as Kind;
    else if (baseName && SVC_BASES[baseName]) {
      kind = SVC_BASES[baseName] as Kind;
      this.svcNames.add(baseName);
    } else if (heritage) this.warn(c, `${name}: base ${heritage.getText(this.source)} not known here: kept as the base's name`);
    this.kinds.set(name, kind);
    const fields = new Map<string, PyField>();
    const statics: string[] = [];
    const members: string[] = [];
    for (const m of c.members) {
      const isStatic = hasModifier(m, ts.SyntaxKind.StaticKeyword);
      if (ts.isPropertyDeclaration(m) && ts.isIdentifier(m.name)) {
        const prop = m.name.text;
        if (isStatic && prop === 'has' && m.initializer) {
          for (const [field, f] of this.hasFields(m.initializer, name)) fields.set(field, f);
        } else if (isStatic && prop === 'spec') {
          this.warn(m, `${name}.spec not translated (kept as a comment)`);
          statics.push(`${INDENT}# spec: ${m.initializer?.getText(this.source).replace(/\s+/g, ' ') ?? ''}`);
        } else if (isStatic) {
          const value = m.initializer ? this.pyLiteral(m.initializer) : undefined;
          if (value === undefined) statics.push(this.untranslated(m, `${name}.${prop}`).replace(/^/gm, INDENT));
          else statics.push(`${INDENT}${this.name(prop, m)} = ${value}`);
        } else if (!fields.has(prop) && !hasModifier(m, ts.SyntaxKind.DeclareKeyword)) {
          const value = m.initializer ? this.pyLiteral(m.initializer) : undefined;
          const type = this.pyTypeOf(m.type) ?? literalType(value) ?? (this.typing.add('Any'), 'Any');
          if (m.initializer && value === undefined) this.warn(m, `${name}.${prop}: initial value not translated`);
          fields.set(prop, {
            type: m.questionToken ? `${type} | None` : type,
            default: value ?? (m.questionToken ? 'None' : undefined),
            note: kind === 'plain' ? undefined : 'not a has field in svc',
            at: m,
          });
        }
        continue;
      }
      if (ts.isMethodDeclaration(m) && (ts.isIdentifier(m.name) || ts.isPrivateIdentifier(m.name))) {
        members.push(this.def(m, m.name.text.replace(/^#/, '_'), INDENT, true, name, isStatic));
        continue;
      }
      if (ts.isGetAccessorDeclaration(m) && ts.isIdentifier(m.name)) {
        members.push(`${INDENT}@property\n${this.def(m, m.name.text, INDENT, true, name, false)}`);
        continue;
      }
      if (ts.isConstructorDeclaration(m)) {
        this.warn(m, `${name}: constructor not translated`);
        members.push(`${INDENT}# TODO(svc_to_py): constructor not translated (line ${this.line(m)})`);
        continue;
      }
      if (ts.isSemicolonClassElement(m)) continue;
      members.push(this.untranslated(m, `${name}: member`).replace(/^/gm, INDENT));
    }
    // `declare` lines of fields `has` does not list: their TypeScript types.
    for (const m of c.members) {
      if (!ts.isPropertyDeclaration(m) || !ts.isIdentifier(m.name) || fields.has(m.name.text)) continue;
      if (hasModifier(m, ts.SyntaxKind.DeclareKeyword)) fields.set(m.name.text, { type: this.pyTypeOf(m.type) ?? (this.typing.add('Any'), 'Any'), at: m });
    }
    const out: string[] = [];
    if (kind === 'plain' && fields.size > 0) {
      this.dataclass = true;
      out.push('@dataclass(kw_only=True)');
    }
    const base = baseName ?? (heritage ? heritage.getText(this.source) : undefined);
    out.push(`class ${name}${base ? `(${base})` : ''}:`);
    const doc = this.doc(c);
    if (doc) out.push(`${INDENT}${doc}`, '');
    if (statics.length > 0) out.push(...statics, '');
    for (const [field, f] of fields) {
      let value = f.default;
      // A dataclass refuses a mutable default: a factory makes a new one for each instance.
      if (value !== undefined && kind === 'plain' && /^[[{]/.test(value)) value = `field(default_factory=${value === '[]' ? 'list' : value === '{}' ? 'dict' : `lambda: ${value}`})`;
      out.push(`${INDENT}${this.name(field, f.at ?? c)}: ${f.type}${value !== undefined ? ` = ${value}` : ''}${f.note ? `  # ${f.note}` : ''}`);
    }
    if (fields.size > 0 && members.length > 0) out.push('');
    if (members.length > 0) out.push(members.join('\n\n'));
    if (fields.size === 0 && members.length === 0 && statics.length === 0 && !doc) out.push(`${INDENT}pass`);
    return out.filter((l, i, all) => !(l === '' && all[i - 1] === '')).join('\n').trimEnd();
  }

  /** A docstring from a node's TSDoc comment, or ''. */
  private doc(node: ts.Node): string {
    const ranges = ts.getLeadingCommentRanges(this.source.text, node.getFullStart()) ?? [];
    const last = ranges.at(-1);
    if (!last) return '';
    const text = this.source.text.slice(last.pos, last.end);
    if (!text.startsWith('/**')) return '';
    const body = text
      .replace(/^\/\*\*\s?/, '')
      .replace(/\s*\*\/$/, '')
      .split('\n')
      .map((l) => l.replace(/^\s*\* ?/, ''))
      .join('\n')
      .trim();
    return body === '' ? '' : `"""${body.replaceAll('\\', '\\\\').replaceAll('"""', '\\"\\"\\"')}"""`;
  }

  /** The fields of `T.Object({ … })`: Python type, default and a note of the other schema options. */
  private hasFields(init: ts.Expression, owner: string): Map<string, PyField> {
    const fields = new Map<string, PyField>();
    const call = unwrap(init);
    const object = ts.isCallExpression(call) && schemaName(call) === 'Object' ? call.arguments[0] : undefined;
    if (!object || !ts.isObjectLiteralExpression(object)) {
      this.warn(init, `${owner}.has is not T.Object({ … }): fields not translated`);
      return fields;
    }
    for (const p of object.properties) {
      if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) {
        this.warn(p, `${owner}.has: a member not translated`);
        continue;
      }
      const f = this.schema(p.initializer, `${owner}.${p.name.text}`);
      fields.set(p.name.text, { type: f.type, default: f.default ?? (f.optional ? 'None' : undefined), note: f.note, at: p });
    }
    return fields;
  }

  /** A TypeBox schema expression as a Python type, its default and a note of its other options. */
  private schema(expr: ts.Expression, owner: string): { type: string; default?: string; optional: boolean; note?: string } {
    const call = unwrap(expr);
    const kind = ts.isCallExpression(call) ? schemaName(call) : undefined;
    if (!kind || !ts.isCallExpression(call)) {
      this.warn(expr, `${owner}: schema ${expr.getText(this.source).slice(0, 40)} not translated: Any`);
      this.typing.add('Any');
      return { type: 'Any', optional: false };
    }
    const args = call.arguments;
    const optionsArg = args.at(-1) && ts.isObjectLiteralExpression(args.at(-1) as ts.Expression) ? (args.at(-1) as ts.ObjectLiteralExpression) : undefined;
    let def: string | undefined;
    const notes: string[] = [];
    for (const p of optionsArg?.properties ?? []) {
      if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) continue;
      const value = this.pyLiteral(p.initializer);
      if (p.name.text === 'default') {
        if (value === undefined) this.warn(p, `${owner}: default not translated (not a literal)`);
        def = value;
      } else notes.push(`${p.name.text}=${value ?? p.initializer.getText(this.source)}`);
    }
    const inner = (i: number): string => {
      const a = args[i];
      return a ? this.schema(a, owner).type : (this.typing.add('Any'), 'Any');
    };
    const elements = (i: number): string[] => {
      const a = args[i];
      return a && ts.isArrayLiteralExpression(a) ? a.elements.map((e) => this.schema(e, owner).type) : [];
    };
    let type: string;
    let optional = false;
    switch (kind) {
      case 'String':
        type = 'str';
        break;
      case 'Number':
        type = 'float';
        break;
      case 'Integer':
        type = 'int';
        break;
      case 'Boolean':
        type = 'bool';
        break;
      case 'Null':
        type = 'None';
        break;
      case 'Array':
        type = `list[${inner(0)}]`;
        break;
      case 'Record':
        type = `dict[str, ${inner(1)}]`;
        break;
      case 'Tuple':
        type = `tuple[${elements(0).join(', ')}]`;
        break;
      case 'Union':
        type = elements(0).join(' | ') || 'Any';
        break;
      case 'Literal': {
        const value = args[0] ? this.pyLiteral(args[0]) : undefined;
        this.typing.add(value === undefined ? 'Any' : 'Literal');
        type = value === undefined ? 'Any' : `Literal[${value}]`;
        break;
      }
      case 'Optional': {
        const wrapped = args[0] ? this.schema(args[0], owner) : { type: 'Any', default: undefined, note: undefined };
        return { type: `${wrapped.type} | None`, default: wrapped.default, optional: true, note: wrapped.note };
      }
      case 'Object':
        this.typing.add('Any');
        type = 'dict[str, Any]';
        break;
      case 'Upload':
        this.warn(expr, `${owner}: T.Upload() (a multipart file) has no Python type here: Any`);
        this.typing.add('Any');
        type = 'Any';
        break;
      default:
        if (kind !== 'Any' && kind !== 'Unknown') this.warn(expr, `${owner}: T.${kind}() not translated: Any`);
        this.typing.add('Any');
        type = 'Any';
    }
    if (optional) type = `${type} | None`;
    return { type, default: def, optional, note: notes.length > 0 ? notes.join(', ') : undefined };
  }

  /** A TypeScript type annotation as a Python one (undefined when there is none). */
  private pyTypeOf(node: ts.TypeNode | undefined): string | undefined {
    if (!node) return undefined;
    switch (node.kind) {
      case ts.SyntaxKind.StringKeyword:
        return 'str';
      case ts.SyntaxKind.NumberKeyword:
        return 'float';
      case ts.SyntaxKind.BooleanKeyword:
        return 'bool';
      case ts.SyntaxKind.VoidKeyword:
      case ts.SyntaxKind.UndefinedKeyword:
      case ts.SyntaxKind.NeverKeyword:
        return 'None';
      case ts.SyntaxKind.AnyKeyword:
      case ts.SyntaxKind.UnknownKeyword:
      case ts.SyntaxKind.ObjectKeyword:
        this.typing.add('Any');
        return 'Any';
    }
    if (ts.isParenthesizedTypeNode(node)) return this.pyTypeOf(node.type);
    if (ts.isArrayTypeNode(node)) return `list[${this.pyTypeOf(node.elementType)}]`;
    if (ts.isTupleTypeNode(node)) return `tuple[${node.elements.map((e) => this.pyTypeOf(ts.isNamedTupleMember(e) ? e.type : e)).join(', ')}]`;
    if (ts.isUnionTypeNode(node)) return node.types.map((t) => this.pyTypeOf(t)).join(' | ');
    if (ts.isLiteralTypeNode(node)) {
      if (node.literal.kind === ts.SyntaxKind.NullKeyword) return 'None';
      if (node.literal.kind === ts.SyntaxKind.TrueKeyword || node.literal.kind === ts.SyntaxKind.FalseKeyword) return 'bool';
      const value = this.pyLiteral(node.literal as ts.Expression);
      if (value !== undefined) {
        this.typing.add('Literal');
        return `Literal[${value}]`;
      }
    }
    if (ts.isTypeReferenceNode(node) && ts.isIdentifier(node.typeName)) {
      const args = node.typeArguments ?? [];
      const arg = (i: number): string => this.pyTypeOf(args[i]) ?? (this.typing.add('Any'), 'Any');
      switch (node.typeName.text) {
        case 'Array':
        case 'ReadonlyArray':
          return `list[${arg(0)}]`;
        case 'Set':
          return `set[${arg(0)}]`;
        case 'Record':
        case 'Map':
          return `dict[${args.length > 1 ? this.pyTypeOf(args[0]) : 'str'}, ${arg(1)}]`;
        case 'Promise':
          return arg(0);
        case 'Date':
          return 'str';
        default:
          if (args.length === 0) return node.typeName.text;
      }
    }
    this.typing.add('Any');
    return 'Any';
  }

  /** A literal expression as Python, or undefined. */
  private pyLiteral(e: ts.Expression): string | undefined {
    e = unwrap(e);
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return JSON.stringify(e.text);
    if (ts.isNumericLiteral(e)) return String(Number(e.text));
    if (ts.isPrefixUnaryExpression(e) && e.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(e.operand)) return `-${Number(e.operand.text)}`;
    if (e.kind === ts.SyntaxKind.TrueKeyword) return 'True';
    if (e.kind === ts.SyntaxKind.FalseKeyword) return 'False';
    if (e.kind === ts.SyntaxKind.NullKeyword || (ts.isIdentifier(e) && e.text === 'undefined')) return 'None';
    if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && (e.expression.text === 'HTTPMethod' || e.expression.text === 'APIProtocol')) {
      return JSON.stringify(e.name.text);
    }
    if (ts.isArrayLiteralExpression(e)) {
      const items = e.elements.map((x) => this.pyLiteral(x));
      return items.some((x) => x === undefined) ? undefined : `[${items.join(', ')}]`;
    }
    if (ts.isObjectLiteralExpression(e)) {
      const entries: string[] = [];
      for (const p of e.properties) {
        if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name) || ts.isNumericLiteral(p.name))) return undefined;
        const value = this.pyLiteral(p.initializer);
        if (value === undefined) return undefined;
        entries.push(`${JSON.stringify(p.name.text)}: ${value}`);
      }
      return `{${entries.join(', ')}}`;
    }
    return undefined;
  }

  private variable(d: ts.VariableDeclaration, statement: ts.VariableStatement): string {
    if (!ts.isIdentifier(d.name) || !d.initializer) return this.untranslated(statement, 'declaration');
    const name = this.name(d.name.text, d);
    const init = unwrap(d.initializer);
    if (ts.isCallExpression(init) && ts.isIdentifier(init.expression) && init.expression.text === 'fn') return this.fnDef(init, name);
    const value = this.pyLiteral(init);
    if (value === undefined) return this.untranslated(statement, `${d.name.text}`);
    const type = this.pyTypeOf(d.type);
    return `${name}${type ? `: ${type}` : ''} = ${value}`;
  }

  /** `export const add = fn({ access, params: T.Object({...}), ...spec }, handler)` as an `@fn(...)` def stub. */
  private fnDef(call: ts.CallExpression, name: string): string {
    const [options, handler] = call.arguments;
    const kwargs: string[] = [];
    const params: string[] = [];
    if (options && ts.isObjectLiteralExpression(options)) {
      for (const p of options.properties) {
        if (!ts.isPropertyAssignment(p) || !ts.isIdentifier(p.name)) {
          this.warn(p, `${name}: an option not translated`);
          continue;
        }
        if (p.name.text === 'params') {
          for (const [field, f] of this.hasFields(p.initializer, name)) {
            params.push(`${this.name(field, f.at ?? p)}: ${f.type}${f.default !== undefined ? ` = ${f.default}` : ''}`);
          }
          continue;
        }
        const value = this.pyLiteral(p.initializer);
        if (value === undefined) this.warn(p, `${name}: option ${p.name.text} not translated`);
        else kwargs.push(`${p.name.text}=${value}`);
      }
    } else if (options) this.warn(options, `${name}: fn options not translated`);
    this.svcNames.add('fn');
    const fnNode = handler && (ts.isArrowFunction(handler) || ts.isFunctionExpression(handler)) ? handler : undefined;
    const isAsync = fnNode?.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword) ?? false;
    const returns = fnNode?.type ? this.pyTypeOf(fnNode.type) : undefined;
    this.warnings.push(`line ${this.line(call)}: ${name}: function body not translated (stub)`);
    const signature = params.length > 0 ? `*, ${params.join(', ')}` : '';
    return [
      `@fn(${kwargs.join(', ')})`,
      `${isAsync ? 'async ' : ''}def ${name}(${signature})${returns ? ` -> ${returns}` : ''}:`,
      this.stub(fnNode ?? call, INDENT),
    ].join('\n');
  }

  /** A method, getter or function as a `def` stub (with its ability decorator). */
  private def(m: ts.MethodDeclaration | ts.GetAccessorDeclaration | ts.FunctionDeclaration, rawName: string, indent: string, method: boolean, owner?: string, isStatic = false): string {
    const name = this.name(rawName, m);
    const lines: string[] = [];
    for (const d of ts.canHaveDecorators(m) ? (ts.getDecorators(m) ?? []) : []) {
      const e = d.expression;
      const callee = ts.isCallExpression(e) ? e.expression : e;
      const decorator = ts.isIdentifier(callee) ? callee.text : undefined;
      if ((decorator === 'entry' || decorator === 'exit') && ts.isCallExpression(e)) {
        this.svcNames.add(decorator);
        const types = e.arguments.map((a) => {
          if (ts.isIdentifier(a)) {
            if (SVC_BASES[a.text] !== undefined) this.svcNames.add(a.text);
            return a.text;
          }
          if (ts.isArrowFunction(a) && ts.isIdentifier(a.body)) return JSON.stringify(a.body.text);
          if (ts.isStringLiteral(a)) return JSON.stringify(a.text);
          return JSON.stringify(a.getText(this.source));
        });
        lines.push(`${indent}@${decorator}(${types.join(', ')})`);
      } else this.warn(d, `${owner ? `${owner}.` : ''}${rawName}: decorator ${d.expression.getText(this.source)} not translated`);
    }
    if (isStatic) lines.push(`${indent}@staticmethod`);
    const isAsync = m.modifiers?.some((x) => x.kind === ts.SyntaxKind.AsyncKeyword) ?? false;
    const params = this.params(m.parameters, `${owner ? `${owner}.` : ''}${rawName}`);
    if (method && !isStatic) params.unshift('self');
    const returns = this.pyTypeOf(m.type);
    for (const p of m.parameters) {
      const t = p.type && ts.isTypeReferenceNode(p.type) && ts.isIdentifier(p.type.typeName) ? p.type.typeName.text : undefined;
      if (t && SVC_BASES[t] !== undefined) this.svcNames.add(t);
    }
    lines.push(`${indent}${isAsync ? 'async ' : ''}def ${name}(${params.join(', ')})${returns ? ` -> ${returns}` : ''}:`);
    this.warnings.push(`line ${this.line(m)}: ${owner ? `${owner}.` : ''}${rawName}: body not translated (stub)`);
    lines.push(this.stub(m, indent + INDENT));
    return lines.join('\n');
  }

  /** Parameters in Python order: a required one after a default makes the rest keyword-only (`*`). */
  private params(list: ts.NodeArray<ts.ParameterDeclaration>, owner: string): string[] {
    const out: string[] = [];
    let defaulted = false;
    let keywordOnly = false;
    for (const p of list) {
      const raw = ts.isIdentifier(p.name) ? p.name.text : 'args';
      if (!ts.isIdentifier(p.name)) this.warn(p, `${owner}: a destructured parameter became ${raw}`);
      const name = this.name(raw, p);
      let type = this.pyTypeOf(p.type);
      if (p.dotDotDotToken) {
        if (type?.startsWith('list[')) type = type.slice(5, -1);
        out.push(`*${name}${type ? `: ${type}` : ''}`);
        keywordOnly = true;
        continue;
      }
      let value = p.initializer ? this.pyLiteral(p.initializer) : undefined;
      if (p.initializer && value === undefined) {
        this.warn(p, `${owner}: default of ${raw} not translated: None`);
        value = 'None';
      }
      if (p.questionToken && value === undefined) {
        value = 'None';
        if (type) type = `${type} | None`;
      }
      if (value === undefined && defaulted && !keywordOnly) {
        out.push('*');
        keywordOnly = true;
      }
      if (value !== undefined) defaulted = true;
      out.push(type ? `${name}: ${type}${value !== undefined ? ` = ${value}` : ''}` : `${name}${value !== undefined ? `=${value}` : ''}`);
    }
    return out;
  }

  /** A stub body: the TODO, the TypeScript (its statements, dedented) as comments, `raise NotImplementedError`. */
  private stub(node: ts.Node, indent: string): string {
    const body = (node as { body?: ts.Node }).body ?? node;
    const inner = ts.isBlock(body) && body.statements.length > 0 ? body.statements : undefined;
    const from = inner ? (inner[0] as ts.Node).getStart(this.source) : body.getStart(this.source);
    const to = inner ? (inner.at(-1) as ts.Node).getEnd() : body.getEnd();
    const first = this.source.getLineAndCharacterOfPosition(from).line;
    const last = this.source.getLineAndCharacterOfPosition(to).line;
    const lines = this.source.text.split(/\r?\n/).slice(first, last + 1);
    const cut = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length));
    const shown = lines.slice(0, 40).map((l) => `${indent}#   ${l.slice(Math.min(cut, l.length - l.trimStart().length))}`.trimEnd());
    if (lines.length > 40) shown.push(`${indent}#   … ${lines.length - 40} more lines`);
    const where = first === last ? `line ${first + 1}` : `lines ${first + 1}–${last + 1}`;
    return [`${indent}# TODO(svc_to_py): body not translated. The TypeScript (${where}):`, ...shown, `${indent}raise NotImplementedError`].join('\n');
  }
}

/** The Python type of a Python literal's text (`0` → float, `"a"` → str), or undefined. */
function literalType(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value === 'True' || value === 'False') return 'bool';
  if (value.startsWith('"')) return 'str';
  if (/^-?\d/.test(value)) return 'float';
  return undefined;
}

/** `x as const`, `(x)`, `x satisfies T`, `x!`: the expression inside. */
function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isAsExpression(e) || ts.isParenthesizedExpression(e) || ts.isSatisfiesExpression(e) || ts.isNonNullExpression(e) || ts.isTypeAssertionExpression(e)) e = e.expression;
  return e;
}

/** `String` of `T.String(...)` / `Type.String(...)`, else undefined. */
function schemaName(call: ts.CallExpression): string | undefined {
  const callee = call.expression;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && (callee.expression.text === 'T' || callee.expression.text === 'Type')) return callee.name.text;
  return undefined;
}

function hasModifier(node: ts.Node, kind: ts.SyntaxKind): boolean {
  return (ts.canHaveModifiers(node) ? ts.getModifiers(node) : undefined)?.some((m) => m.kind === kind) ?? false;
}
