/**
 * `py_to_svc`: a documented best-effort translation of the *declarations* of
 * a Python module into an svc module. Nothing here runs the code it reads,
 * and Python is never needed.
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
 */
import { format } from 'prettier';
import { checkSize, type ToolResult } from '../../types.ts';
import { SVC_PRETTIER_OPTIONS } from '../format.ts';
import { defSignature, isString, jacItems, jsLiteral, logicalLines, param, pyString, type PyParam, type PyStmt, splitHeader, splitTop, topIndex, tree } from './python-source.ts';
import { pyType, renderSchema, type Ty } from './python-types.ts';
import { type Kind, SVC_BASES, SVC_RESERVED_FIELDS } from './svc-classes.ts';

/**
 * What `py_to_svc` answers.
 * @example { svc_code: "import { fn, T } from 'svc';\n…", warnings: ['line 3: add: function body not translated (stub)'] }
 */
export type SvcResult = ToolResult & { svc_code: string; warnings: string[] };

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

const SVC_TYPE_NAMES = new Set(['Root', 'Node', 'Edge', 'GenericEdge', 'Walker']);

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
