// bin/cli-bundle.mjs: `svc start` runs on svc's sources built once to JavaScript (no tsx on the main thread's path),
// kept while every input is unchanged; paths svc finds beside its sources (`import.meta.url`) stay the sources' own.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
// @ts-expect-error: plain JavaScript, no declarations
import { cliBundle, useBundle } from '../../bin/cli-bundle.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const built = cliBundle as () => Promise<string>;
const uses = useBundle as (argv: string[], env: Record<string, string | undefined>) => boolean;

t.test('svc start runs on the build; other commands, --scale and SVC_CLI_BUNDLE=0 run the sources', async (t) => {
  const argv = (...args: string[]) => ['node', 'svc.mjs', ...args];
  t.equal(uses(argv('start', 'app.ts'), {}), true);
  t.equal(uses(argv('start', 'app.ts', '--workers', '2'), {}), true);
  t.equal(uses(argv('start', 'app.ts', '--scale'), {}), false, '--scale (deploy) runs the sources');
  t.equal(uses(argv('start', 'app.ts'), { SVC_CLI_BUNDLE: '0' }), false);
  t.equal(uses(argv('mcp'), {}), false);
  t.equal(uses(argv('init', '.'), {}), false);
});

t.test('the build is kept while its inputs are unchanged, and names each source by its own URL', async (t) => {
  const first = await built();
  const again = await built();
  t.equal(again, first, 'a second start reuses the build');
  const dir = dirname(fileURLToPath(first));
  t.ok(existsSync(fileURLToPath(first)));
  const manifest = JSON.parse(readFileSync(join(dir, '..', 'manifest.json'), 'utf8')) as { inputs: [string, number, number][] };
  const inputs = manifest.inputs.map(([file]) => file);
  t.ok(inputs.includes('cli/index.ts') && inputs.includes('runtime/main/options.ts'), 'its inputs are svc files, by path from svc');
  t.notOk(inputs.some((f) => f.includes('node_modules')), 'packages are not built in (they load as from the sources)');
  const files = readdirSync(dir).filter((f) => f.endsWith('.js'));
  const code = files.map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
  // The worker's module is found beside options.ts, as from the sources (not beside the build).
  t.ok(code.includes(JSON.stringify(new URL('runtime/main/options.ts', `file://${ROOT}`).href)), "options.ts' import.meta.url is its own URL");
  // An `import.meta.url` expression left would be the build's URL (one written in a string, as generated code, stays).
  const left: string[] = [];
  for (const f of files) {
    const source = ts.createSourceFile(f, readFileSync(join(dir, f), 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node) && ts.isMetaProperty(node.expression) && node.name.text === 'url') left.push(`${f}:${node.getStart(source)}`);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  t.same(left, [], 'no import.meta.url expression of the build is left');
});
