// svc's runtime chunks get their comment lines made ASCII without esbuild checking each rewrite
// (transports/worker/ascii-comments.mjs, asciiCommentLines): safe while the only non-ASCII characters of svc's
// code outside comments are in strings and untagged templates, which esbuild prints escaped. A tagged template
// (`String.raw`) or a regular expression keeps its characters as written, and a line of one could look like a
// comment: none of svc's may hold one. Read with the TypeScript parser.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { asciiCommentLines } from '../../transports/worker/ascii-comments.mjs';

const root = new URL('../..', import.meta.url).pathname;
/** Folders that are not bundled into the runtime a worker loads. */
const NOT_PRODUCT = new Set(['test', 'bench', 'examples', 'bin', 'docs', 'node_modules', 'dist', 'deploy']);

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || (dir === root && NOT_PRODUCT.has(name))) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts') && !name.endsWith('.d.mts')) out.push(path);
  }
  return out;
}

/** Tagged templates and regular expressions in `file` that hold a non-ASCII character: `file:line kind`. */
function offenders(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.mjs') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const kind = ts.isTaggedTemplateExpression(node) ? 'tagged template' : node.kind === ts.SyntaxKind.RegularExpressionLiteral ? 'regular expression' : undefined;
    if (kind && /[^\x00-\x7f]/.test(node.getText(source))) found.push(`${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1} ${kind}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

t.test("no tagged template or regular expression of svc's holds a non-ASCII character", async (t) => {
  const files = sources(root);
  t.ok(files.length > 300, `${files.length} files read`);
  const found = files.flatMap((f) => offenders(f, readFileSync(f, 'utf8')));
  t.same(found, [], 'write the character as an escape (\\u2014) instead');
});

t.test('the check finds what it looks for', async (t) => {
  t.same(offenders(join(root, 'x.ts'), "const a = String.raw`caf\u00e9`;\nconst b = /\u00e9/;\nconst c = 'caf\u00e9';\n"), ['x.ts:1 tagged template', 'x.ts:2 regular expression']);
  t.equal(asciiCommentLines('  // caf\u00e9\nconst c = "\\xE9";\n'), '  // caf?\nconst c = "\\xE9";\n');
});
