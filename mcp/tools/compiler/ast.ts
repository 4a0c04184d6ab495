/**
 * `get_ast`: the TypeScript syntax tree of a module (parsed only), as an
 * indented text or bounded JSON.
 */
import ts from 'typescript';
import { checkSize, ToolInputError, type ToolResult } from '../../types.ts';
import { at } from './problem.ts';

/**
 * The most AST nodes `getAst` returns; larger trees are cut (`truncated: true`).
 *
 * @example
 * (await getAst({ code: hugeCode })).node_count <= AST_NODE_LIMIT // true
 */
export const AST_NODE_LIMIT = 5000;
const AST_DEPTH_LIMIT = 64;

/**
 * Kind names by number. `ts.SyntaxKind[kind]` would give marker aliases for
 * some (`FirstStatement` for `VariableStatement`, `FirstLiteralToken` for
 * `NumericLiteral`): the real names are preferred.
 */
const KIND_NAMES = (() => {
  const names = new Map<number, string>();
  for (const [name, value] of Object.entries(ts.SyntaxKind)) {
    if (typeof value !== 'number') continue;
    const marker = /^(First|Last)[A-Z]/.test(name) || name === 'Count';
    const known = names.get(value);
    if (known === undefined || (!marker && /^(First|Last)[A-Z]/.test(known))) names.set(value, name);
  }
  return names;
})();

interface AstNode {
  kind: string;
  name?: string;
  start: [number, number];
  end: [number, number];
  children?: AstNode[];
}

/** What a node is called, for reading: an identifier's or literal's text, a declaration's name. */
function label(n: ts.Node, sf: ts.SourceFile): string | undefined {
  if (ts.isIdentifier(n) || ts.isPrivateIdentifier(n)) return n.text;
  if (ts.isStringLiteralLike(n) || ts.isNumericLiteral(n) || ts.isBigIntLiteral(n)) {
    const t = n.getText(sf);
    return t.length > 40 ? `${t.slice(0, 39)}…` : t;
  }
  const name = (n as { name?: ts.Node }).name;
  return name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) ? name.text : undefined;
}

/**
 * The syntax tree of `code` (parsed only): `format: 'tree'` (default) an
 * indented text, one node a line — `Kind name @line:col-line:col`; `'json'`
 * nested `{kind, name?, start: [line, col], end: [line, col], children?}`.
 * At most {@link AST_NODE_LIMIT} nodes and 64 levels (`truncated` says when
 * cut). Throws `ToolInputError` for another format or code over 100 KB.
 *
 * @example
 * await getAst({ code: 'let a = 1;' });
 * // { ast: 'SourceFile @1:1-1:11\n  VariableStatement @1:1-1:11\n    VariableDeclarationList @1:1-1:10\n'
 * //      + '      VariableDeclaration a @1:5-1:10\n        Identifier a @1:5-1:6\n        NumericLiteral 1 @1:9-1:10\n'
 * //      + '  EndOfFileToken @1:11-1:11', node_count: 7, truncated: false }
 */
export async function getAst(args: { code: string; format?: 'tree' | 'json' }): Promise<ToolResult> {
  const { code, format = 'tree' } = args ?? {};
  if (typeof code !== 'string') throw new ToolInputError('code must be a string');
  checkSize(code);
  if (format !== 'tree' && format !== 'json') throw new ToolInputError(`format must be 'tree' or 'json', not ${JSON.stringify(format)}`);
  const sf = ts.createSourceFile('snippet.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  let count = 0;
  let truncated = false;
  const pos = (p: number): [number, number] => {
    const { line, col } = at(sf, p);
    return [line, col];
  };
  const build = (n: ts.Node, depth: number): AstNode => {
    count++;
    const node: AstNode = { kind: KIND_NAMES.get(n.kind) ?? String(n.kind), start: pos(n.getStart(sf)), end: pos(n.end) };
    const name = label(n, sf);
    if (name !== undefined) node.name = name;
    const children: AstNode[] = [];
    ts.forEachChild(n, (c) => {
      if (count >= AST_NODE_LIMIT || depth >= AST_DEPTH_LIMIT) {
        truncated = true;
        return true;
      }
      children.push(build(c, depth + 1));
      return undefined;
    });
    if (children.length > 0) node.children = children;
    return node;
  };
  const tree = build(sf, 0);
  if (format === 'json') return { ast: tree, node_count: count, truncated };
  const lines: string[] = [];
  const print = (n: AstNode, indent: string): void => {
    lines.push(`${indent}${n.kind}${n.name !== undefined ? ` ${n.name}` : ''} @${n.start[0]}:${n.start[1]}-${n.end[0]}:${n.end[1]}`);
    for (const c of n.children ?? []) print(c, `${indent}  `);
  };
  print(tree, '');
  return { ast: lines.join('\n'), node_count: count, truncated };
}
