/**
 * `svc_to_py`: a documented best-effort translation of the *declarations* of
 * an svc module into Python. Nothing here runs the code it reads.
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
import ts from 'typescript';
import { checkSize, type ToolResult } from '../../types.ts';
import { type Kind, SVC_BASES } from './svc-classes.ts';

/**
 * What `svc_to_py` answers; errors are in `warnings` (then `python_code` is `''`).
 * @example { python_code: 'class Todo(Node):\n    title: str\n…', warnings: ['line 26: AddTodo.add: body not translated (stub)'] }
 */
export type PyResult = ToolResult & { python_code: string; warnings: string[] };

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