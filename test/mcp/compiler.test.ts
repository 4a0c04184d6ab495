// The compiler tools of the tool server: the generated public spec, validate_svc
// with its svc checks, check_syntax, get_ast and lint_svc (with auto-fix).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { publicSpec, REPO_ROOT, specCacheFile } from '../../mcp/grammar/spec.ts';
import { grammarTokens } from '../../mcp/grammar/vocabulary.ts';
import { AST_NODE_LIMIT, checkSyntax, getAst, languageService, validateSvc, type Problem } from '../../mcp/tools/compiler/index.ts';
import { lintSvc, type Violation } from '../../mcp/tools/lint/index.ts';
import { MAX_INPUT_BYTES } from '../../mcp/types.ts';

interface Validation {
  valid: boolean;
  errors: Problem[];
  warnings: Problem[];
}
interface Lint {
  violations: Violation[];
  fixed_code: string;
  changed: boolean;
}
const validate = async (code: string, filename?: string) => (await validateSvc(filename === undefined ? { code } : { code, filename })) as unknown as Validation;
const lint = async (code: string, auto_fix = false) => (await lintSvc({ code, auto_fix })) as unknown as Lint;
const messages = (list: Problem[]) => list.map((p) => `${p.line}:${p.col} ${p.message}`);
const rules = (l: Lint) => l.violations.map((v) => v.rule);

const IMPORTS = "import { Node, Edge, Walker, Root, entry, exit, fn, restspec, T, HTTPMethod } from 'svc';\n";

/** A module of the whole programming model: a node, walkers with abilities, a function, a rest spec. */
const MODEL_EXAMPLE = `${IMPORTS}
export class Todo extends Node {
  static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });
  declare title: string; declare done: boolean;
}
export class CreateTodo extends Walker {
  static access = 'pub' as const;
  static has = T.Object({ title: T.String() });
  declare title: string;
  @entry(Root) async make(here: Root) {
    this.report(await here.connect(new Todo({ title: this.title })));
  }
}
export class ListTodos extends Walker {
  @entry(Root) async start(here: Root) { this.visit(await here.out(Todo)); }
  @entry(Todo) each(here: Todo) { this.report(here); }
}
export const add = fn({ access: 'pub', params: T.Object({ a: T.Number(), b: T.Number() }) },
                      ({ a, b }) => a + b);
export const spec = restspec({ method: HTTPMethod.GET });
void Edge; void exit;
`;

/** A walker that is fine by every check, to put a single problem into. */
const walker = (body: string, head = '') => `${IMPORTS}${head}
export class Todo extends Node {
  static has = T.Object({ title: T.String() });
  declare title: string;
}
export class Go extends Walker {
  static has = T.Object({ title: T.String() });
  declare title: string;
  @entry(Root) async go(here: Root) {
    ${body}
  }
}
void Edge; void exit; void fn; void restspec; void HTTPMethod;
`;

t.test('publicSpec: one declaration text for module svc, with the real exported names', async (t) => {
  const spec = await publicSpec();
  t.match(spec, /declare module 'svc' \{/);
  for (const name of ['class Walker', 'class Node', 'class Edge', 'class Root', 'function entry', 'function exit', 'function fn', 'function restspec', 'const T:', 'const HTTPMethod', 'const APIProtocol']) {
    t.match(spec, `export ${name}`, `exports ${name}`);
  }
  t.notMatch(spec, /from '\.{1,2}\//, 'no relative imports: no svc source is needed');
  t.notMatch(spec, /^\s*(import|export)\b.*from '[^']*\.ts'/m, 'no source module names');
  t.equal(await publicSpec(), spec, 'cached');
  const cached = JSON.parse(readFileSync(specCacheFile(), 'utf8')) as { sources: [string, number, number][]; spec: string };
  t.equal(cached.spec, spec, 'and kept in its cache file');
  t.ok(cached.sources.some(([path]) => path === join(REPO_ROOT, 'actors/walker/walker.ts')), 'with the sources it was made from');
  t.notOk(cached.sources.some(([path]) => path.includes('/node_modules/') || path.startsWith(join(REPO_ROOT, 'mcp/'))), 'only those');
});

t.test('publicSpec type-checks on its own (its declarations, not only its use)', async (t) => {
  const spec = await publicSpec();
  const dir = join(REPO_ROOT, '.svc-mcp-test');
  const specFile = join(dir, 'svc.d.ts');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'], types: ['node'], strict: true, skipLibCheck: false, noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (f) => f === specFile || fileExists.call(host, f);
  host.readFile = (f) => (f === specFile ? spec : readFile.call(host, f));
  host.getSourceFile = (f, lang, ...rest) => (f === specFile ? ts.createSourceFile(f, spec, lang) : getSourceFile.call(host, f, lang, ...rest));
  const program = ts.createProgram([specFile], options, host);
  const sf = program.getSourceFile(specFile) as ts.SourceFile;
  const diags = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
  t.same(diags.map((d) => `${d.start !== undefined ? sf.getLineAndCharacterOfPosition(d.start).line + 1 : '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`), []);
});

t.test('grammarTokens: the vocabulary, from the real exports', async (t) => {
  const md = grammarTokens();
  for (const token of ['`@entry(...types)`', '`@exit(...types)`', 'static has = T.Object', "static access = 'pub' | 'priv' | 'protect'", 'static spec = restspec', '`visit(nodes, options?)`', '`report(value)`', '`disengage()`', '`skip()`', '`spawn(walker, fields?, at?)`', '`connect(node, edge?)`', '`disconnect(node, type?)`', '`destroy()`', '`out(type?, filter?)`', '`in(type?, filter?)`', '`HTTPMethod.GET`', '`APIProtocol.WEBSOCKET`', '`AccessLevel.WRITE`', '`T.Object`', '`T.Upload`', '`permGrant`', '`kvstore`', '`NodeFilter`']) {
    t.ok(md.includes(token), `mentions ${token}`);
  }
  t.equal(grammarTokens(), md, 'cached');
});

t.test('validateSvc: the programming-model example is valid; a type error is reported at its line', async (t) => {
  const good = await validate(MODEL_EXAMPLE);
  t.same(good, { valid: true, errors: [], warnings: [] });

  const bad = walker('this.report(here.nope);');
  const r = await validate(bad);
  t.equal(r.valid, false);
  const line = bad.split('\n').findIndex((l) => l.includes('here.nope')) + 1;
  t.same(messages(r.errors), [`${line}:22 Property 'nope' does not exist on type 'Root'.`]);
});

t.test('validateSvc: the language service is made once and reused', async (t) => {
  await validate(walker('this.report(here);'));
  const ls = await languageService();
  await validate(walker('this.report(here.id);'));
  t.equal(await languageService(), ls);
  t.equal(ls.getProgram()?.getSourceFile(join(REPO_ROOT, '.svc-mcp', 'svc-spec.d.ts'))?.text, await publicSpec(), 'the spec is the program\'s svc');
});

t.test('validateSvc: filename, imports outside svc, and bad arguments', async (t) => {
  t.same((await validate(walker('this.report(here);'), 'src/app.ts')).errors, []);
  const r = await validate("import { nothing } from 'svc';\nimport { x } from './other.ts';\n");
  t.match(messages(r.errors), [/^1:10 .*has no exported member 'nothing'/]);
  t.equal(r.errors.length, 1);
  // Another module of the app, or a subpath of svc: not checked, said as a warning (a test module, a helper file).
  t.match(messages(r.warnings), [/^2:19 \.\/other\.ts is not checked/]);
  const sub = await validate("import { testApp } from 'svc/testing';\nexport const app = testApp;\n");
  t.equal(sub.valid, true, 'svc/testing: not an error');
  t.match(messages(sub.warnings), [/svc\/testing is not checked/]);
  t.match(r.errors[0], { code: 'TS2305' }, "each problem has its code, as explain_error takes it");
  const internal = await validate("import type { WalkerState } from 'svc';\n");
  t.equal(internal.valid, false, 'helper declarations of the spec are not importable');
  for (const filename of ['../x.ts', '/abs.ts', 'x.js', 'x.d.ts', 'svc-spec.d.ts', '']) {
    await t.rejects(validateSvc({ code: '', filename }), { name: 'ToolInputError' }, `filename ${filename}`);
  }
  await t.rejects(validateSvc({ code: 42 as unknown as string }), { name: 'ToolInputError' });
});

t.test('the compiler tools read nothing of the machine: a path imported is "not checked", whether it exists or not', async (t) => {
  const dir = t.testdir({
    'secret.ts': "export const API_KEY = 'sk-live-0123456789';\nexport const config = { password: 'hunter2-secret' };\n",
    'data.json': '{"privateKeyName": "hunter3"}\n',
  });
  const secret = join(dir, 'secret.ts');
  const leaks = /sk-live|hunter|privateKeyName|password/;
  const probes = [
    `import { API_KEY } from '${secret}';\nconst leak: typeof API_KEY = 0;\nexport {};\n`,
    `import { config } from '${secret}';\nconst leak: number = config;\nexport {};\n`,
    `import j from '${join(dir, 'data.json')}' with { type: 'json' };\nconst leak: number = j;\nexport {};\n`,
    // svc's own sources are not readable either (only its generated public spec).
    `import * as m from '${join(REPO_ROOT, 'mcp/tools/command-policy.ts')}';\nconst leak: number = m;\nexport {};\n`,
  ];
  for (const code of probes) {
    const r = await validate(code);
    t.notMatch(JSON.stringify(r), leaks, `nothing of the file: ${code.split('\n')[0]}`);
    t.equal(r.valid, true, 'the import is outside what is checked, not an error');
    t.match(messages(r.warnings), [/^1:\d+ \/.* is not checked: validate_svc checks one module against 'svc'/]);
    t.notMatch(JSON.stringify(await lint(code)), leaks, 'lint_svc neither');
  }
  // Whether a path exists cannot be told from the answer.
  const there = await validate(`import x from '${secret}';\nexport { x };\n`);
  const missing = await validate(`import x from '${join(dir, 'nope.ts')}';\nexport { x };\n`);
  t.same(JSON.parse(JSON.stringify(missing).replaceAll(join(dir, 'nope.ts'), secret)), there, 'an existing file and a missing one answer alike');
  const ref = await validate(`/// <reference path="${secret}" />\nconst n: number = API_KEY;\nexport {};\n`);
  t.notMatch(JSON.stringify(ref), leaks);
  t.match(messages(ref.errors), [/File '.*secret\.ts' not found/, /Cannot find name 'API_KEY'/], 'a referenced file is not read');
  // What the spec is made of still checks: typebox's types, Node's, TypeScript's lib files.
  const typebox = await validate("import { Type } from 'typebox';\nimport { Value } from 'typebox/value';\nconst s: number = Type.String();\nexport { s, Value };\n");
  t.match(messages(typebox.errors), [/^3:7 Type 'TString' is not assignable to type 'number'/]);
  const node = await validate("import { readFileSync } from 'node:fs';\nconst n: number = readFileSync('x', 'utf8');\nexport { n };\n");
  t.match(messages(node.errors), [/^2:7 Type 'string' is not assignable to type 'number'/]);
  const dom = await validate('/// <reference lib="dom" />\nconst d: number = document;\nexport { d };\n');
  t.match(messages(dom.errors), [/Type 'Document' is not assignable to type 'number'/]);
});

t.test('svc check: a walker without an entry ability (warning)', async (t) => {
  const idle = `${IMPORTS}export class Idle extends Walker {\n  @exit(Root) bye() {}\n}\nvoid Node; void Edge; void entry; void fn; void restspec; void T; void HTTPMethod;\n`;
  const r = await validate(idle);
  t.equal(r.valid, true, 'a warning only');
  t.match(messages(r.warnings), [/^2:14 Idle has no @entry ability/]);

  const inherited = `${IMPORTS}abstract class Base extends Walker {\n  @entry(Root) go() {}\n}\nexport class Child extends Base {}\nvoid Node; void Edge; void exit; void fn; void restspec; void T; void HTTPMethod;\n`;
  t.same((await validate(inherited)).warnings, [], 'an entry of a base class counts; an abstract class is not judged');

  const nodeSide = `${IMPORTS}export class Reader extends Walker {}\nexport class Doc extends Node {\n  @entry(Reader) read(w: Reader) { w.report(this); }\n}\nvoid Edge; void exit; void entry; void fn; void restspec; void T; void HTTPMethod; void Root;\n`;
  t.same((await validate(nodeSide)).warnings, [], 'a node ability for the walker counts');
});

t.test('svc check: unknown and undeclared fields (errors)', async (t) => {
  const unknown = await validate(walker('this.report(this.titel);'));
  t.match(messages(unknown.errors), [/Go has no field or member titel: its static has declares title/]);
  t.equal(unknown.errors.length, 1, "replaces TypeScript's own error there");

  const onNode = await validate(walker('const [todo] = await here.out(Todo); if (todo) todo.done = true;'));
  t.match(messages(onNode.errors), [/Todo has no field or member done/]);

  const undeclared = `${IMPORTS}export class Go extends Walker {\n  static has = T.Object({ title: T.String(), n: T.Integer() });\n  declare n: number;\n  @entry(Root) go() { this.report(this.title); }\n}\nvoid Node; void Edge; void exit; void fn; void restspec; void HTTPMethod;\n`;
  t.match(messages((await validate(undeclared)).errors), ['5:40 Go.title is a field of static has but the class does not declare it: add `declare title: string;`']);

  t.same((await validate(walker('this.report(this.title + this.root.id + this.caller.rootId); this.visit(await here.out(Todo));'))).errors, [], 'fields, and what Walker declares, are fine');
});

t.test('svc check: declared properties outside static has (warning) and initialized fields (error)', async (t) => {
  const code = `${IMPORTS}export class Todo extends Node {\n  static has = T.Object({ title: T.String() });\n  declare title: string;\n  declare note: string;\n}\nexport class Bad extends Node {\n  static has = T.Object({ title: T.String() });\n  title = '';\n}\nvoid Edge; void Walker; void Root; void entry; void exit; void fn; void restspec; void HTTPMethod;\n`;
  const r = await validate(code);
  t.equal(r.valid, false, 'svc refuses such a class at start: an error');
  t.match(messages(r.warnings), [/^5:11 Todo declares note, which is not a field of its static has: svc never stores it/]);
  t.match(messages(r.errors), [/^9:3 Bad\.title has an initializer: the own property hides the stored field/]);
  t.match(r.errors[0], { code: 'svc/field-initializer' });
});

t.test('validate warns of a graph operation used without await', async (t) => {
  const r = await validate(walker('const todo = here.connect(new Todo({ title: "a" })); this.report(todo);'));
  t.match(messages(r.warnings), [/here\.connect\(.*\) is used without await/]);
  t.match(r.warnings.find((w) => /without await/.test(w.message)), { code: 'await-graph-op' });
});

t.test('svc check: ability types (errors)', async (t) => {
  const code = `${IMPORTS}export class Plain {}
export class Other extends Walker { @entry(Root) go() {} }
export class Like extends Edge {}
export class Doc extends Node {
  @entry(Like) self() {}
}
export class W extends Walker {
  @entry(Plain) a() {}
  @entry(Other) b() {}
  @entry(Like) c() {}
  @entry(() => Doc, 'Doc', Root) d() {}
  @exit(() => Later) e() {}
  @entry('Nowhere') f() {}
  @entry(Root) g() {}
}
export class NotSvc {
  @entry(Root) h() {}
}
class Later extends Node {}
void fn; void restspec; void T; void HTTPMethod;
`;
  const r = await validate(code);
  t.match(messages(r.errors), [
    /^6:10 @entry\(Like\) on Doc: Like is an edge class; a node's abilities react to the walker classes/,
    /^9:10 @entry\(Plain\) on W: Plain is not a Node, Edge or Walker class/,
    /^10:10 @entry\(Other\) on W: Other is a walker class; a walker's abilities react to the node classes/,
    /^11:10 @entry\(Like\) on W: Like is an edge class/,
    /^18:3 @entry on NotSvc: abilities run on walker and node classes only/,
  ]);
  t.match(messages(r.warnings), [/^14:10 @entry\('Nowhere'\) on W: no class of this module is named 'Nowhere'/]);
});

t.test('svc check: a public walker or function spawning a private walker (warning)', async (t) => {
  const code = `${IMPORTS}export class Secret extends Walker { @entry(Root) go() { this.report(1); } }
export class Open extends Walker { static access = 'pub' as const; @entry(Root) go() { this.report(2); } }
export class Front extends Walker {
  static access = 'pub' as const;
  @entry(Root) async go() {
    await this.spawn(Open);
    await this.spawn(Secret);
    await this.spawn('Secret');
  }
}
export class _Audit extends Walker { @entry(Root) async go() { await this.spawn(Secret); } }
export class Inside extends Walker { @entry(Root) async go() { await this.spawn(Secret); } }
export const pub = fn({ access: 'pub' }, async (_args, ctx) => ctx.spawn(Secret));
export const priv = fn({}, async (_args, ctx) => ctx.spawn(Secret));
void Node; void Edge; void exit; void restspec; void T; void HTTPMethod;
`;
  const r = await validate(code);
  t.equal(r.valid, true);
  t.match(messages(r.warnings), [
    /^8:22 public walker Front spawns Secret, whose access is 'priv': spawn\(\) does not check access/,
    /^9:22 public walker Front spawns Secret/,
    /^12:81 hook walker _Audit .* spawns Secret/,
    /^14:74 public function pub spawns Secret/,
  ]);
});

t.test('svc check: static access values (error)', async (t) => {
  const code = `${IMPORTS}export class A extends Walker { static access = 'public' as const; @entry(Root) go() {} }
export class B extends Walker { static access = 'protect' as const; @entry(Root) go() {} }
export class C extends Node { static access = 'pub'; }
void Edge; void exit; void fn; void restspec; void T; void HTTPMethod;
`;
  const r = await validate(code);
  t.match(messages(r.errors), ["2:49 static access of A is 'public', not one of 'pub', 'priv', 'protect' (did you mean 'pub'?): svc would treat the walker as private"]);
  t.match(messages(r.warnings), [/^4:47 static access on node class C is never read/]);
});

t.test('checkSyntax: parse only', async (t) => {
  t.same(await checkSyntax({ code: MODEL_EXAMPLE }), { valid: true, errors: [] });
  t.same(await checkSyntax({ code: 'this.report(here.nope)' }), { valid: true, errors: [] }, 'types are not checked');
  t.same(await checkSyntax({ code: 'let a = 1;\nconst x = ;\n' }), { valid: false, errors: [{ line: 2, col: 11, message: 'Expression expected.' }] });
  await t.rejects(checkSyntax({} as { code: string }), { name: 'ToolInputError' });
});

t.test('getAst: an indented tree or bounded JSON', async (t) => {
  const code = "import { Walker } from 'svc';\nexport class A extends Walker {}\n";
  const tree = (await getAst({ code })) as { ast: string; node_count: number; truncated: boolean };
  t.match(tree.ast, /^SourceFile @1:1-3:1\n {2}ImportDeclaration @1:1-1:30\n/);
  t.match(tree.ast, /\n {2}ClassDeclaration A @2:1-2:33\n/);
  t.match(tree.ast, /\n {8}Identifier Walker @2:24-2:30/);
  t.equal(tree.truncated, false);
  t.equal(((await getAst({ code: 'let a = 1;' })) as { ast: string }).ast.split('\n').map((l) => l.trim().split(' ')[0]).join(' '),
    'SourceFile VariableStatement VariableDeclarationList VariableDeclaration Identifier NumericLiteral EndOfFileToken', 'real kind names, not marker aliases');

  const json = (await getAst({ code, format: 'json' })) as { ast: { kind: string; children: { kind: string; name?: string; start: number[] }[] } };
  t.equal(json.ast.kind, 'SourceFile');
  t.match(json.ast.children[1], { kind: 'ClassDeclaration', name: 'A', start: [2, 1] });

  const big = (await getAst({ code: 'let a = [' + '1, '.repeat(6000) + '];', format: 'json' })) as { node_count: number; truncated: boolean };
  t.equal(big.node_count, AST_NODE_LIMIT);
  t.equal(big.truncated, true);

  await t.rejects(getAst({ code, format: 'xml' as 'json' }), { name: 'ToolInputError' });
});

t.test('every tool refuses code over 100 KB', async (t) => {
  const code = `// ${'x'.repeat(MAX_INPUT_BYTES)}\n`;
  await t.rejects(validateSvc({ code }), { name: 'ToolInputError', message: /limit is 102400 bytes/ });
  await t.rejects(checkSyntax({ code }), { name: 'ToolInputError' });
  await t.rejects(getAst({ code }), { name: 'ToolInputError' });
  await t.rejects(lintSvc({ code }), { name: 'ToolInputError' });
  const atLimit = `//${'x'.repeat(MAX_INPUT_BYTES - 2)}`;
  t.same(await checkSyntax({ code: atLimit }), { valid: true, errors: [] }, '100 KB exactly is accepted');
});

t.test('lintSvc: clean code has no violations and nothing to fix', async (t) => {
  const r = await lint(walker('this.report(await here.connect(new Todo({ title: this.title })));'), true);
  t.same(r.violations, []);
  t.equal(r.changed, false);
});

t.test('lintSvc: unused imports, fixed', async (t) => {
  const code = "import { Node, Walker, Root, entry } from 'svc';\nimport { readFileSync } from 'node:fs';\nimport type { RestSpec } from 'svc';\nimport { thing } from 'some-package';\nexport class W extends Walker { @entry(Root) go() {} }\n";
  const r = await lint(code, true);
  t.same(r.violations.map((v) => `${v.line}:${v.col} ${v.rule}`), ['1:10 no-unused-imports', '2:10 no-unused-imports', '3:15 no-unused-imports', '4:10 no-unused-imports']);
  t.equal(r.fixed_code, "import { Walker, Root, entry } from 'svc';\nimport 'some-package';\nexport class W extends Walker { @entry(Root) go() {} }\n");
  t.equal(r.changed, true);
  const off = await lint(code);
  t.equal(off.fixed_code, code, 'no fix without auto_fix');
  t.equal(off.changed, false);
});

t.test('lintSvc: var → let where let means the same', async (t) => {
  const code = [
    'var a = 1;',
    'export function f(x: number) {',
    '  if (x) { var b = 2; }', // used outside its block
    '  for (var i = 0; i < 3; i++) setTimeout(() => i);', // captured per iteration by let
    '  for (var j = 0; j < 3; j++) x += j;',
    '  while (x--) { var k; if (x === 1) k = x; }', // new on each iteration with let
    '  if (x) var n = 1;', // let is not allowed there
    '  var c = a + x + k + n;',
    '  return [b, c];',
    '}',
    '',
  ].join('\n');
  const r = await lint(code, true);
  t.same(r.violations.map((v) => `${v.line}:${v.col} ${v.rule}`), ['1:1 no-var', '3:12 no-var', '4:8 no-var', '5:8 no-var', '6:17 no-var', '7:10 no-var', '8:3 no-var']);
  t.same(r.violations.map((v) => /not fixed/.test(v.message)), [false, true, true, false, true, true, false]);
  t.equal(r.fixed_code, code.replace('var a', 'let a').replace('var j', 'let j').replace('var c', 'let c'));
});

t.test('lintSvc: == and != (not null checks), fixed when both sides are of one kind', async (t) => {
  const code = "export function f(a: number, s: string, u: unknown) {\n  if (a == 1 || s != 'x') return 1;\n  if (a == null || s != undefined) return 2;\n  return u == a;\n}\n";
  const r = await lint(code, true);
  t.same(r.violations.map((v) => `${v.line}:${v.col} ${v.rule}`), ['2:9 eqeqeq', '2:19 eqeqeq', '4:12 eqeqeq']);
  t.match(r.violations[2]?.message, /not fixed/);
  t.equal(r.fixed_code, "export function f(a: number, s: string, u: unknown) {\n  if (a === 1 || s !== 'x') return 1;\n  if (a == null || s != undefined) return 2;\n  return u == a;\n}\n");
});

t.test('lintSvc: graph operations used without await', async (t) => {
  const body = [
    'this.report(here.connect(new Todo({ title: this.title })));',
    'const later = here.out(Todo);',
    'const used = here.out(Todo);',
    'this.report(used.length);',
    'this.report((await later).length);',
    'here.connect(new Todo({ title: "landed at the end of the run" }));',
    'await Promise.all([here.out(Todo)]);',
  ].join('\n    ');
  const r = await lint(walker(body));
  t.same(r.violations.map((v) => `${v.line}:${v.rule}`), ['11:await-graph-op', '13:await-graph-op']);
  t.match(r.violations[0]?.message, /here\.connect\(…\) is used without await: its value is a Promise, not the node/);
  t.same(rules(await lint(walker('const m = new Map<string, number>(); this.report(m.has("x")); await here.out();'))), [], 'only svc node methods');
});

t.test('lintSvc: async abilities that never await, console in abilities and functions', async (t) => {
  const code = `${IMPORTS}export class W extends Walker {
  @entry(Root) async go(here: Root) { console.log('at', here.id); this.report(1); }
  @entry(Root) async ok(here: Root) { this.visit(await here.out()); }
  helper() { console.log('not an ability'); }
}
export const f = fn({}, () => { console.error('x'); return 1; });
void Node; void Edge; void exit; void restspec; void T; void HTTPMethod;
`;
  const r = await lint(code);
  t.same(r.violations.map((v) => `${v.line}:${v.col} ${v.rule}`), ['3:22 async-ability-without-await', '3:39 no-console-in-ability', '7:33 no-console-in-ability']);
  t.match(r.violations[1]?.message, /use this\.log\.info/);
  t.match(r.violations[2]?.message, /use ctx\.log\.error/);
});

t.test('lintSvc: svc checks are rules; syntax errors carry severity and block fixes', async (t) => {
  const r = await lint(`${IMPORTS}export class Idle extends Walker { static access = 'public'; }\nvoid Node; void Edge; void Root; void entry; void exit; void fn; void restspec; void T; void HTTPMethod;\n`);
  t.same(rules(r).sort(), ['svc/access-value', 'svc/walker-without-entry']);
  t.notOk(r.violations.some((v) => 'severity' in v), 'severity only for compiler errors');

  const broken = await lint('var a = 1;\nconst x = ;\n', true);
  t.same(broken.violations.map((v) => `${v.line}:${v.col} ${v.rule} ${v.severity ?? ''}`), ['1:1 no-var ', '2:11 syntax error']);
  t.equal(broken.changed, false, 'nothing is fixed in code that does not parse');
  await t.rejects(lintSvc({ code: '', auto_fix: 'yes' as unknown as boolean }), { name: 'ToolInputError' });
});
