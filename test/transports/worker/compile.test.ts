import t from 'tap';
import { build } from 'esbuild';
import { cheapNames } from '../../../transports/worker/index.ts';

// Two modules each declaring a top-level `Counter`: bundled together, esbuild renames one (`Counter2`).
const files: Record<string, string> = {
  'entry.ts': `import { Counter as Other } from './lib.ts';\nexport class Counter { n = 0 }\nexport function named() {}\nexport const arrow = (x: number) => x + 1;\nexport const closure = () => { const finish = () => 1; return finish; };\nexport { Other };`,
  'lib.ts': `export class Counter { m = 1 }`,
};

async function bundleNamed(): Promise<string> {
  const result = await build({
    stdin: { contents: `export * from './entry.ts';`, resolveDir: '/virtual', loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    keepNames: true,
    write: false,
    plugins: [
      {
        name: 'virtual',
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) => ({ path: args.path.replace('./', ''), namespace: 'v' }));
          b.onLoad({ filter: /.*/, namespace: 'v' }, (args) => ({ contents: files[args.path] ?? '', loader: 'ts' }));
        },
      },
    ],
  });
  return result.outputFiles[0]?.text ?? '';
}

t.test('the keepNames helper is found and made cheap for arrow functions', async (t) => {
  const code = await bundleNamed();
  t.match(code, /var __name = \(\w+, value\) => __defProp/, "esbuild still emits the helper this module rewrites (if this fails, esbuild changed it: update NAME_HELPER)");
  const cheap = cheapNames(code);
  t.not(cheap, code, 'the helper was rewritten');
  t.match(cheap, /\.prototype === undefined \?/);
  const mod = (await import(`data:text/javascript;base64,${Buffer.from(cheap).toString('base64')}`)) as Record<string, { name: string } & (() => () => unknown)>;
  t.equal(mod.Counter?.name, 'Counter', "a class renamed by the bundle keeps its source name");
  t.equal(mod.Other?.name, 'Counter', 'so does the other one');
  t.equal(mod.named?.name, 'named', 'a plain function keeps its name');
  t.equal(typeof mod.closure?.(), 'function', 'closures still work');
});

t.test('code without the helper is left as it is', async (t) => {
  t.equal(cheapNames('const a = 1;\n'), 'const a = 1;\n');
});
