// Every ```ts / ```typescript block of the documentation (docs/**/*.md and README.md) type-checks against svc,
// as a user's module would: each block is written as a file of a temporary project whose node_modules/svc is this
// checkout (a symlink), and all of them are checked in ONE TypeScript program with the repository's compiler options.
// Conventions of the pages:
// - a block is `block-N.ts` of its page's folder, or the file it names (`// file: app.ts` as its first line, or the
//   info string ```ts file=app.ts); blocks of one page may import each other (`./model.ts`); when a page shows a
//   file again (a tutorial's growing app.ts), the later block is checked in a folder of its own beside the others;
// - a block that is deliberately a fragment or deliberately wrong opts out: ```ts fragment, ```ts no-check, ```ts wrong.
// Failures are reported as `docs/page.md:LINE: TS1234 message` (the line of the markdown file).
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { DOCS_DIR, scanPages } from '../../docs/.vitepress/pages.ts';

// ~10 s on a quiet machine; a minute under heavy load.
t.setTimeout(200_000);

const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
/** Info-string words that take a block out of the check. */
const OPT_OUT = new Set(['fragment', 'no-check', 'wrong']);

type Block = { source: string; line: number; code: string; name: string | undefined; optOut: string | undefined };

/**
 * The ts blocks of a markdown text, each with the line of its first code line. Fences are matched as CommonMark does
 * (same character, at least as long), so a ```ts inside a longer fence is not a block.
 */
function blocksOf(source: string, text: string): Block[] {
  const out: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)(.*)$/.exec(lines[i] as string);
    if (!open) continue;
    const fence = open[2] as string;
    const lang = (open[3] as string).toLowerCase();
    const words = (open[4] as string).trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[j] as string);
      if (close && (close[1] as string)[0] === fence[0] && (close[1] as string).length >= fence.length) break;
      body.push(lines[j] as string);
    }
    if (lang === 'ts' || lang === 'typescript') {
      const code = body.join('\n');
      const named = words.find((w) => w.startsWith('file='))?.slice('file='.length) ?? /^\/\/ file: (\S+)/.exec(code)?.[1];
      out.push({ source, line: i + 2, code, name: named, optOut: words.find((w) => OPT_OUT.has(w)) });
    }
    i = j;
  }
  return out;
}

function allBlocks(): Block[] {
  const pages = scanPages().map((p) => ({ source: `docs/${p.file}`, path: join(DOCS_DIR, p.file) }));
  return [...pages, { source: 'README.md', path: join(REPO, 'README.md') }].flatMap((p) => blocksOf(p.source, readFileSync(p.path, 'utf8')));
}

/**
 * The repository's compiler options (tsconfig.json: strict, noUncheckedIndexedAccess, …), for a program that only
 * checks. Unused names are allowed: a block shows a declaration, or an import list, to the reader on its own.
 */
function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(REPO, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, REPO);
  return { ...parsed.options, noEmit: true, skipLibCheck: true, noUnusedLocals: false, noUnusedParameters: false, moduleDetection: ts.ModuleDetectionKind.Force };
}

t.test('blocksOf reads fences, names and opt-outs as the pages write them', async (t) => {
  const md = ['# Page', '```ts', "import { Node } from 'svc';", '```', '````md', '```ts', 'not a block', '```', '````', '```ts file=app.ts', 'export {};', '```', '```ts fragment', 'x', '```'].join('\n');
  const blocks = blocksOf('p.md', md);
  t.same(blocks.map((b) => [b.line, b.name, b.optOut]), [[3, undefined, undefined], [11, 'app.ts', undefined], [14, undefined, 'fragment']]);
});

t.test('every ts block of the docs and the README type-checks against svc', async (t) => {
  const blocks = allBlocks();
  const checked = blocks.filter((b) => !b.optOut);
  const optedOut = blocks.filter((b) => b.optOut);
  t.comment(`${blocks.length} ts blocks: ${checked.length} checked, ${optedOut.length} opted out (${[...new Set(optedOut.map((b) => b.optOut))].map((w) => `${w}: ${optedOut.filter((b) => b.optOut === w).length}`).join(', ')})`);
  t.ok(checked.length > 60, `${checked.length} blocks to check`);
  t.ok(optedOut.length <= Math.ceil(blocks.length * 0.2), `opt-outs stay rare (${optedOut.length} of ${blocks.length})`);

  const dir = mkdtempSync(join(tmpdir(), 'svc-doc-blocks-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(REPO, join(dir, 'node_modules', 'svc'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'doc-blocks', private: true, type: 'module' }));

  // One folder per page; a file a page shows twice goes to a folder of its own (a copy of the page's folder there).
  const files = new Map<string, Block>();
  const counters = new Map<string, number>();
  for (const block of checked) {
    const folder = join(dir, block.source.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '-'));
    const n = counters.get(block.source) ?? 0;
    counters.set(block.source, n + 1);
    let path = join(folder, block.name ?? `block-${n}.ts`);
    for (let v = 2; files.has(path); v++) path = join(folder, `v${v}`, block.name ?? `block-${n}.ts`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, block.code);
    files.set(path, block);
  }
  // A later version of a file sits in vN/: give it the page's other files (the latest of each) to import.
  for (const [path, block] of files) {
    const folder = dirname(path);
    if (!/\/v\d+$/.test(folder)) continue;
    for (const [other, otherBlock] of files) {
      if (otherBlock.source !== block.source || dirname(other) === folder) continue;
      const target = join(folder, relative(dirname(other).replace(/\/v\d+$/, ''), other));
      if (!files.has(target) && !other.includes('/v')) {
        try {
          writeFileSync(target, otherBlock.code, { flag: 'wx' });
        } catch {
          // already there
        }
      }
    }
  }

  // A block that must fail, checked in the same program: the check sees svc's real exports and real type errors.
  const canary = join(dir, 'canary', 'wrong.ts');
  mkdirSync(dirname(canary));
  writeFileSync(canary, "import { Walker, NoSuchExport } from 'svc';\nexport class W extends Walker {}\nexport const n: number = 'one';\n");

  const started = performance.now();
  const program = ts.createProgram([...files.keys(), canary], compilerOptions());
  const canarySource = program.getSourceFile(canary);
  const canaryCodes = canarySource ? program.getSemanticDiagnostics(canarySource).map((d) => d.code) : [];
  t.same(canaryCodes.sort(), [2305, 2322], 'a deliberately wrong block fails: an unknown export of svc (TS2305), a type error (TS2322)');
  const failures: string[] = [];
  for (const [path, block] of files) {
    const source = program.getSourceFile(path);
    if (!source) {
      failures.push(`${block.source}:${block.line}: not compiled`);
      continue;
    }
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
      failures.push(`${block.source}:${block.line + line}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
    }
  }
  t.comment(`one program, ${files.size} files, checked in ${Math.round(performance.now() - started)} ms`);
  const inDocs = failures.filter((f) => f.startsWith('docs/'));
  const inReadme = failures.filter((f) => !f.startsWith('docs/'));
  if (inDocs.length) t.comment(`type errors in docs/:\n${inDocs.join('\n')}`);
  t.same(inDocs, [], 'the code blocks of docs/ type-check');
  // TODO: the README's blocks (kept in the check) become a plain assertion once the README is shortened to its tour;
  // until then its older snippets (written as fragments without imports) are listed here as work to do.
  if (inReadme.length) t.comment(`type errors in README.md:\n${inReadme.join('\n')}`);
  t.same(inReadme, [], 'the code blocks of README.md type-check', { todo: inReadme.length ? `${inReadme.length} errors while the README is rewritten` : false });
});
