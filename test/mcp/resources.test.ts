// The svc:// resources: every listed topic is a page or absent with a reason, pages exist and
// are not empty, absent topics are not listed, URIs that try to leave the table are refused, the
// expose flags remove their groups, and the docs' TypeScript blocks transpile — and type-check
// against svc — as written.
import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';
import ts from 'typescript';
import { DOCS, fileOf, GUIDES, isAbsent, presentPages } from '../../mcp/catalog.ts';
import { canonicalUri, createResources, linkToResources, type Resources } from '../../mcp/resources.ts';
import { exampleCategories } from '../../mcp/tools/examples.ts';
import { ToolInputError } from '../../mcp/types.ts';

const grammar = { spec: async () => "declare module 'svc' { export class Node {} }", tokens: () => '# svc vocabulary\n- `Node`' };
const all = (): Resources => createResources({ grammar });

/** The topics a client may ask for as svc://docs/<topic> (tutorials under tutorial-<name>): the manifest answers each. */
const DOC_TOPICS = [
  'welcome', 'install', 'core-concepts', 'first-app', 'cheatsheet', 'faq',
  'foundation', 'primitives', 'functions-objects', 'osp', 'concurrency', 'advanced',
  ...['coding-primer', 'basics', 'osp', 'ai-quickstart', 'ai-structured', 'ai-agentic', 'ai-multimodal', 'fullstack-setup', 'fullstack-components', 'fullstack-state', 'fullstack-backend', 'fullstack-auth', 'fullstack-routing', 'production-local', 'production-k8s'].map((n) => `tutorial-${n}`),
  'client', 'scale', 'cli', 'config', 'code-organization', 'mcp', 'testing', 'debugging', 'python-integration', 'library-mode', 'walker-responses', 'appendices',
];

t.test('every listed topic is in the manifest: a page or absent with a reason', async (t) => {
  for (const topic of DOC_TOPICS) {
    const entry = DOCS[topic];
    t.ok(entry, `${topic} is in the manifest`);
    if (!entry) continue;
    if (isAbsent(entry)) t.ok(entry.absent.length > 20, `${topic}: absent, with a reason`);
    else {
      t.equal(entry.uri, `svc://docs/${topic}`);
      t.ok(entry.title.length > 3 && entry.description.length > 20, `${topic}: a title and a description`);
    }
  }
  t.same(Object.keys(GUIDES).sort(), ['patterns', 'pitfalls']);
});

t.test('every page of the manifest exists, is not empty, and is what read() answers', async (t) => {
  const resources = all();
  for (const page of presentPages()) {
    const path = fileOf(page);
    t.ok(statSync(path).size > 500, `${page.uri}: ${page.file} holds a page`);
    const got = await resources.read(page.uri);
    t.equal(got.uri, page.uri);
    t.equal(got.mimeType, 'text/markdown');
    t.equal(got.text, linkToResources(readFileSync(path, 'utf8'), page.file), `${page.uri} answers its file (links to other pages as svc:// URIs)`);
    t.match(got.text, /^# \S/, `${page.uri} starts with a heading`);
  }
});

t.test('the list: grammar, docs, guides and examples; unique URIs and names; absent topics are not listed', async (t) => {
  const list = all().list();
  const uris = list.map((r) => r.uri);
  t.equal(new Set(uris).size, uris.length, 'URIs are unique');
  t.equal(new Set(list.map((r) => r.name)).size, list.length, 'names are unique');
  t.same(uris.slice(0, 2), ['svc://grammar/spec', 'svc://grammar/tokens']);
  for (const page of presentPages()) t.ok(uris.includes(page.uri), `${page.uri} is listed`);
  for (const [topic, entry] of Object.entries(DOCS)) {
    if (!isAbsent(entry)) continue;
    t.notOk(uris.includes(`svc://docs/${topic}`), `absent ${topic} is not listed`);
    await t.rejects(all().read(`svc://docs/${topic}`), { name: 'ToolInputError', message: /has no page in svc/ }, `reading absent ${topic} says why`);
  }
  for (const example of exampleCategories()) t.ok(uris.includes(`svc://examples/${example.name}`), `example ${example.name} is listed`);
  for (const r of list) {
    t.ok(r.title && r.description && r.mimeType, `${r.uri} has a title, description and MIME type`);
    t.ok(r.uri.startsWith('svc://'));
  }
});

t.test('the grammar comes from the injected provider', async (t) => {
  const resources = all();
  t.equal((await resources.read('svc://grammar/spec')).text, await grammar.spec());
  t.equal((await resources.read('svc://grammar/tokens')).text, grammar.tokens());
  t.equal((await resources.read('svc://grammar/tokens')).mimeType, 'text/markdown');
});

t.test('examples are their files, each in a fence its content cannot close', async (t) => {
  const resources = all();
  const todo = await resources.read('svc://examples/todo');
  t.match(todo.text, /^# Example: todo/);
  t.ok(todo.text.includes(readFileSync(new URL('../../examples/todo/app.ts', import.meta.url), 'utf8').trimEnd()), 'the whole app.ts');
  for (const example of exampleCategories()) {
    const { text } = await resources.read(`svc://examples/${example.name}`);
    for (const path of example.files) {
      const content = readFileSync(join(fileURLToPath(new URL(`../../${example.source}/`, import.meta.url)), path), 'utf8').replace(/\n$/, '');
      const at = text.indexOf(`## ${path}\n\n`);
      t.ok(at >= 0, `${example.name}: ${path} has a section`);
      const fence = /^(`{3,})/.exec(text.slice(at + path.length + 5))?.[1] ?? '';
      const longest = Math.max(0, ...[...content.matchAll(/`+/g)].map((m) => m[0].length));
      t.ok(fence.length > longest, `${example.name}: ${path} is fenced with ${fence.length} backticks, more than its ${longest}`);
      t.ok(text.includes(`\n${content}\n${fence}\n`), `${example.name}: ${path} whole, then the closing fence`);
    }
  }
});

t.test('URIs that try to leave the table are refused with a ToolInputError', async (t) => {
  const resources = all();
  const hostile = [
    'svc://docs/../../etc/passwd',
    'svc://docs/..%2F..%2Fetc%2Fpasswd',
    'svc://docs/%2e%2e/%2e%2e/etc/passwd',
    'svc://docs/%252e%252e%252fetc%252fpasswd',
    'svc://docs/welcome%00.md',
    'svc://docs/welcome/../../../package.json',
    'svc://docs/..\\..\\package.json',
    'svc://examples/../../package.json',
    'svc://examples/todo%2F..%2F..%2Fpackage.json',
    'svc://examples/.svc',
    'svc://guide/../docs/welcome',
    'svc:///etc/passwd',
    'file:///etc/passwd',
    'svc://docs/%E0%A4%A',
    'svc://docs/welcome.md',
    'svc://docs/',
    '',
  ];
  for (const uri of hostile) {
    const error = await resources.read(uri).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(error instanceof ToolInputError, `${JSON.stringify(uri)} refused`);
  }
  await t.rejects(resources.read(42 as unknown as string), ToolInputError, 'a non-string');
  await t.rejects(resources.read('svc://docs/nonsense'), { message: /unknown resource/ });
  t.equal(canonicalUri('svc://docs/%6Fsp'), 'svc://docs/osp', 'an escaped plain name is fine');
  t.equal((await resources.read('svc://docs/%6Fsp')).uri, 'svc://docs/osp');
  // A URI's scheme and authority are case-insensitive (RFC 3986); its path is not.
  for (const uri of ['SVC://DOCS/osp', 'Svc://Docs/osp', 'svc://DOCS/osp']) {
    t.equal(canonicalUri(uri), 'svc://docs/osp', `${uri}: the same resource`);
    t.equal((await resources.read(uri)).uri, 'svc://docs/osp');
  }
  await t.rejects(resources.read('svc://docs/OSP'), { message: /unknown resource svc:\/\/docs\/OSP/ }, 'the name keeps its case');
});

t.test('expose flags remove their group, and reading one of its URIs is refused', async (t) => {
  const groups = { grammar: 'svc://grammar/', docs: 'svc://docs/', examples: 'svc://examples/', pitfalls: 'svc://guide/' } as const;
  for (const [flag, prefix] of Object.entries(groups)) {
    const resources = createResources({ grammar, expose: { [flag]: false } });
    const uris = resources.list().map((r) => r.uri);
    t.notOk(uris.some((u) => u.startsWith(prefix)), `expose.${flag} = false lists no ${prefix}*`);
    for (const [other, otherPrefix] of Object.entries(groups)) if (other !== flag) t.ok(uris.some((u) => u.startsWith(otherPrefix)), `expose.${flag} = false keeps ${otherPrefix}*`);
    const sample = all().list().find((r) => r.uri.startsWith(prefix))?.uri as string;
    await t.rejects(resources.read(sample), { name: 'ToolInputError', message: /not offered/ }, `${sample} refused`);
  }
  const none = createResources({ grammar, expose: { grammar: false, docs: false, examples: false, pitfalls: false } });
  t.same(none.list(), []);
  t.equal(createResources({ grammar, expose: { docs: undefined } }).list().length, all().list().length, 'undefined keeps the default');
});

t.test('every svc:// URI the pages mention is a resource or an absent topic', async (t) => {
  const uris = new Set(all().list().map((r) => r.uri));
  const absent = new Set(Object.entries(DOCS).filter(([, e]) => isAbsent(e)).map(([topic]) => `svc://docs/${topic}`));
  for (const page of presentPages()) {
    const text = readFileSync(fileOf(page), 'utf8');
    for (const [uri] of text.matchAll(/svc:\/\/[a-z]+\/[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]/g)) {
      t.ok(uris.has(uri) || absent.has(uri), `${page.uri} links ${uri}`);
    }
  }
  for (const [topic, entry] of Object.entries(DOCS)) {
    if (!isAbsent(entry)) continue;
    for (const [uri] of entry.absent.matchAll(/svc:\/\/[a-z]+\/[A-Za-z0-9._-]*[A-Za-z0-9]/g)) t.ok(uris.has(uri), `the reason of ${topic} links ${uri}`);
  }
});

// ---------------------------------------------------------------- code blocks of the docs

type Block = { page: string; index: number; code: string; wrong: boolean; file: string };

/**
 * The ```ts blocks of every page. A block starting `// file: name.ts` is that file of the page's
 * folder (other blocks of the page may import it); ```ts wrong marks a mistake shown on purpose.
 */
function codeBlocks(): Block[] {
  const out: Block[] = [];
  for (const page of presentPages()) {
    const text = readFileSync(fileOf(page), 'utf8');
    const dir = join(dirname(fileOf(page)), '.snippets', page.uri.replace(/^svc:\/\//, '').replace(/\//g, '-'));
    let index = 0;
    for (const m of text.matchAll(/^```(ts|typescript)([^\n]*)\n([\s\S]*?)^```/gm)) {
      const code = m[3] as string;
      // The info string's marks, as test/docs/code-blocks.test.ts reads them: a fragment is not a module of its own.
      const marks = (m[2] as string).trim().split(/\s+/);
      const named = /^\/\/ file: (\S+)/.exec(code)?.[1] ?? marks.find((x) => x.startsWith('file='))?.slice('file='.length);
      const wrong = marks.some((x) => x === 'wrong' || x === 'fragment' || x === 'no-check');
      out.push({ page: page.uri, index, code, wrong, file: join(dir, named ?? `block-${index}.ts`) });
      index++;
    }
  }
  return out;
}

t.test('every ts block of the docs transpiles with esbuild', async (t) => {
  const blocks = codeBlocks();
  t.ok(blocks.length > 60, `${blocks.length} blocks found`);
  t.ok(blocks.filter((b) => /from '(svc|svc\/[a-z/]+)'/.test(b.code)).length > 50, 'most of them import svc');
  for (const b of blocks) {
    t.doesNotThrow(() => transformSync(b.code, { loader: 'ts', format: 'esm', target: 'es2022' }), `${b.page} block ${b.index}`);
  }
});

t.test('every ts block of the docs (but the wrong ones) type-checks against svc, with the tsconfig svc init writes', async (t) => {
  const blocks = codeBlocks().filter((b) => !b.wrong);
  const files = new Map(blocks.map((b) => [b.file, b.code]));
  t.equal(files.size, blocks.length, 'no two blocks claim one file');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    moduleDetection: ts.ModuleDetectionKind.Force,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    strict: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    skipLibCheck: true,
    noEmit: true,
  };
  // The blocks are files of folders that do not exist, inside the package: `svc` resolves to the package itself.
  const host = ts.createCompilerHost(options);
  const folders = new Set([...files.keys()].flatMap((f) => [dirname(f), dirname(dirname(f))]));
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  host.fileExists = (f) => files.has(f) || fileExists.call(host, f);
  host.readFile = (f) => files.get(f) ?? readFile.call(host, f);
  host.directoryExists = (d) => folders.has(d) || (directoryExists ? directoryExists.call(host, d) : true);
  host.getSourceFile = (f, language, onError, create) => {
    const code = files.get(f);
    return code === undefined ? getSourceFile.call(host, f, language, onError, create) : ts.createSourceFile(f, code, language);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const root = fileURLToPath(new URL('../../', import.meta.url));
  for (const b of blocks) {
    const source = program.getSourceFile(b.file);
    if (!source) {
      t.fail(`${b.page} block ${b.index} was not compiled`);
      continue;
    }
    const problems = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
      const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line + 1;
      return `line ${line}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    });
    t.same(problems, [], `${b.page} block ${b.index} (${b.file.slice(root.length)})`);
  }
});

t.test('every page of the documentation site is also a resource of the tool server (one source)', async (t) => {
  const { readdirSync } = await import('node:fs');
  const { join, relative } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const files = new Set(presentPages().map((p) => p.file));
  const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.name.startsWith('.') ? [] : e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : []));
  // The site's home page and the dependency list are about the site and the package, not svc's use.
  const pages = walk(join(root, 'docs')).map((f) => relative(root, f)).filter((f) => f !== 'docs/index.md' && f !== 'docs/dependencies.md');
  t.ok(pages.length > 50, `${pages.length} pages`);
  for (const page of pages) t.ok(files.has(page), `${page} is served as an svc:// resource`);
});
