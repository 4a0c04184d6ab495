/**
 * The vocabulary of an svc module as markdown (`svc://grammar/tokens`): the
 * classes, decorators, static members, methods, `T` schema builders and
 * enums, with one-line descriptions read from svc's sources so they follow
 * the code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import Type from 'typebox';
import { REPO_ROOT, Unsupported } from './spec.ts';

let tokens: string | undefined;

/**
 * The vocabulary of an svc module, as markdown: the classes, decorators,
 * static members, walker and node methods, `T` schema builders, enums and
 * everything else `svc` exports. Names and one-line descriptions are read
 * from the sources (`index.ts` and the walker model), so they follow the code.
 *
 * @example
 * grammarTokens().includes('`@entry(...types)`'); // true
 */
export function grammarTokens(): string {
  tokens ??= buildTokens();
  return tokens;
}

function parse(rel: string): ts.SourceFile {
  const file = join(REPO_ROOT, rel);
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
}

/** The first sentence of a node's doc comment. */
function summary(node: ts.Node): string {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const text = docs.length > 0 ? (ts.getTextOfJSDocComment(docs[docs.length - 1]?.comment) ?? '') : '';
  const flat = text.replace(/\{@link\s+([^}\s|]+)[^}]*\}/g, '`$1`').replace(/\s+/g, ' ').trim();
  const end = flat.search(/\.(\s|$)/);
  return end === -1 ? flat : flat.slice(0, end + 1);
}

function findClass(sf: ts.SourceFile, name: string): ts.ClassDeclaration {
  const found = sf.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === name);
  if (!found) throw new Unsupported(`${sf.fileName}: no class ${name}`);
  return found;
}

/** Public instance methods and getters of a class: `name(params)` with a summary. */
function members(sf: ts.SourceFile, cls: ts.ClassDeclaration): { sig: string; doc: string }[] {
  const out: { sig: string; doc: string }[] = [];
  const seen = new Set<string>();
  for (const m of cls.members) {
    if (!(ts.isMethodDeclaration(m) || ts.isGetAccessorDeclaration(m)) || !m.name || !ts.isIdentifier(m.name)) continue;
    const mods = ts.getModifiers(m) ?? [];
    if (mods.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword || x.kind === ts.SyntaxKind.StaticKeyword)) continue;
    if (seen.has(m.name.text) || m.name.text === 'toJSON') continue;
    seen.add(m.name.text);
    const params = ts.isMethodDeclaration(m) ? `(${m.parameters.map((p) => `${p.name.getText(sf)}${p.questionToken || p.initializer ? '?' : ''}`).join(', ')})` : '';
    const doc = summary(m) || summary(cls.members.find((x) => x.name?.getText(sf) === m.name.getText(sf) && x !== m) ?? m);
    out.push({ sig: `${m.name.text}${params}`, doc });
  }
  return out;
}

/** The keys of an exported `const X = { … } as const` object. */
function constKeys(sf: ts.SourceFile, name: string): string[] {
  for (const s of sf.statements) {
    if (!ts.isVariableStatement(s)) continue;
    for (const d of s.declarationList.declarations) {
      if (!ts.isIdentifier(d.name) || d.name.text !== name || !d.initializer) continue;
      let init: ts.Expression = d.initializer;
      while (ts.isAsExpression(init) || ts.isParenthesizedExpression(init) || ts.isSatisfiesExpression(init)) init = init.expression;
      if (ts.isObjectLiteralExpression(init)) return init.properties.map((p) => p.name?.getText(sf) ?? '').filter(Boolean);
    }
  }
  throw new Unsupported(`${sf.fileName}: no const ${name}`);
}

/** The string literals of `type X = 'a' | 'b'`. */
function literalUnion(sf: ts.SourceFile, name: string): string[] {
  const alias = sf.statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name);
  if (!alias || !ts.isUnionTypeNode(alias.type)) throw new Unsupported(`${sf.fileName}: no union type ${name}`);
  return alias.type.types.flatMap((t) => (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? [t.literal.text] : []));
}

/** The exported names of index.ts: values and types. */
function indexExports(sf: ts.SourceFile): { values: string[]; types: string[] } {
  const values: string[] = [];
  const types: string[] = [];
  for (const s of sf.statements) {
    if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) {
      for (const el of s.exportClause.elements) (s.isTypeOnly || el.isTypeOnly ? types : values).push(el.name.text);
    } else if ((ts.getModifiers(s as ts.HasModifiers) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) {
      if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) values.push(d.name.getText(sf));
      else if (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) types.push(s.name.text);
      else if ((ts.isClassDeclaration(s) || ts.isFunctionDeclaration(s)) && s.name) values.push(s.name.text);
    }
  }
  return { values, types };
}

function buildTokens(): string {
  const index = parse('index.ts');
  const walkerFile = parse('actors/walker/walker.ts');
  const archetype = parse('actors/walker/archetype.ts');
  const fnFile = parse('actors/walker/fn.ts');
  const access = parse('actors/walker/access.ts');
  const abilities = parse('actors/walker/abilities.ts');
  const { values, types } = indexExports(index);
  const list = (items: { sig: string; doc: string }[]) => items.map((i) => `- \`${i.sig}\`${i.doc ? ` — ${i.doc}` : ''}`).join('\n');
  const fnDecl = (sf: ts.SourceFile, name: string) => sf.statements.find((s): s is ts.FunctionDeclaration => ts.isFunctionDeclaration(s) && s.name?.text === name);
  const decorator = (name: string) => {
    const d = fnDecl(abilities, name);
    return { sig: `@${name}(...types)`, doc: d ? summary(d) : '' };
  };
  const restSpec = fnFile.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'RestSpec');
  const specFields = (restSpec?.members ?? []).flatMap((m) => (m.name ? [{ sig: `${m.name.getText(fnFile)}${m.questionToken ? '?' : ''}`, doc: summary(m) }] : []));
  // Builders, not the `Is…` guards TypeBox's Type also carries.
  const builders = Object.keys(Type).filter((k) => /^[A-Z]/.test(k) && !/^Is[A-Z]/.test(k) && typeof (Type as unknown as Record<string, unknown>)[k] === 'function').sort();
  const accessValues = literalUnion(fnFile, 'Access');
  const named = new Set(['Node', 'Edge', 'GenericEdge', 'Root', 'Walker', 'entry', 'exit', 'fn', 'restspec', 'T', 'HTTPMethod', 'APIProtocol', 'AccessLevel']);
  return [
    '# svc module vocabulary',
    '',
    "An svc module is a TypeScript ES module that imports from `'svc'` and exports node, edge and walker classes and `fn(...)` functions; every exported walker and function becomes an endpoint (named after its export).",
    '',
    '```ts',
    "import { Node, Edge, Walker, Root, entry, exit, fn, restspec, T, HTTPMethod } from 'svc';",
    '```',
    '',
    '## Classes',
    `- \`class X extends Node\` — ${summary(findClass(archetype, 'Node'))}`,
    `- \`class X extends Edge\` — ${summary(findClass(archetype, 'Edge'))}`,
    `- \`GenericEdge\` — ${summary(findClass(archetype, 'GenericEdge'))}`,
    `- \`Root\` — ${summary(findClass(archetype, 'Root'))}`,
    '- `class X extends Walker` — travels the graph: spawned at the caller\'s root (or a node id), runs its abilities at each node it visits.',
    '',
    '## Static members (on your classes)',
    '- `static has = T.Object({ ... })` — the fields: on a node or edge, what is stored; on a walker, what the request body carries (validated, defaults applied). Declare each one as `declare name: Type` (no initializer).',
    `- \`static access = '${accessValues.join("' | '")}'\` — walkers only; default \`'priv'\` (needs a token), \`'pub'\` callable without one.`,
    '- `static spec = restspec({ ... })` — how a walker is exposed (method, path, protocol, …).',
    '',
    '## Decorators (abilities)',
    list([decorator('entry'), decorator('exit')]),
    '- On a walker class the types are node classes (none: any node); on a node class, walker classes (none: any walker). A class declared further down is given as a thunk (`() => Later`) or by name (`\'Later\'`).',
    '',
    '## Walker methods and properties (`this.` inside a walker)',
    list(members(walkerFile, findClass(walkerFile, 'Walker'))),
    '',
    '## Node and edge methods and properties',
    list([...members(archetype, findClass(archetype, 'Archetype')), ...members(archetype, findClass(archetype, 'Node')), ...members(archetype, findClass(archetype, 'Edge'))]),
    '',
    '## Functions',
    `- \`fn({ access?, params?, ...restspec }, (args, ctx) => result)\` — ${summary(fnDecl(fnFile, 'fn') ?? fnFile)} \`ctx\`: \`root\`, \`caller\`, \`spawn\`, \`traceId\`, \`log\`.`,
    `- \`restspec({ ... })\` fields:`,
    list(specFields).replace(/^- /gm, '  - '),
    '',
    '## Enums',
    `- \`HTTPMethod\`: ${constKeys(fnFile, 'HTTPMethod').map((k) => `\`HTTPMethod.${k}\``).join(', ')}`,
    `- \`APIProtocol\`: ${constKeys(fnFile, 'APIProtocol').map((k) => `\`APIProtocol.${k}\``).join(', ')}`,
    `- \`AccessLevel\` (grants with \`permGrant\`): ${constKeys(access, 'AccessLevel').map((k) => `\`AccessLevel.${k}\``).join(', ')}`,
    '',
    '## Schema builders: `T`',
    "TypeBox's `Type` plus `T.Upload()` (a multipart file field):",
    [...builders, 'Upload'].map((b) => `\`T.${b}\``).join(', '),
    '',
    '## Everything else `svc` exports',
    `- values: ${values.filter((v) => !named.has(v)).map((v) => `\`${v}\``).join(', ')}`,
    `- types: ${types.map((v) => `\`${v}\``).join(', ')}`,
    '',
    'The full declarations: resource `svc://grammar/spec`.',
    '',
  ].join('\n');
}