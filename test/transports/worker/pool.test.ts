// The pool's in-place swap (`svc start --dev`): the app bundled apart from svc's runtime, its `svc` imports the very
// modules the runtime runs; every worker takes a new app bundle at once, or none does; replaced threads start on it.
import t from 'tap';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCount, compileWorkerFiles, forgetBuilds, WorkerPool } from '../../../transports/worker/index.ts';
import { Latch } from '../../kit/index.ts';

const fixture = new URL('./fixtures/swap-worker.ts', import.meta.url).href;
const app = (marker: string, extra = '') => `import { Node } from 'svc';\nexport const marker = ${JSON.stringify(marker)};\nexport class Thing extends Node {}\n${extra}`;

t.test('every worker takes a new app bundle in place; a refused or broken one is taken by none', async (t) => {
  const dir = t.testdir({ node_modules: {}, 'app.ts': app('one') });
  const entry = join(dir, 'app.ts');
  const replaced = new Latch();
  const pool = await WorkerPool.start({ size: 2, module: fixture, app: entry, replace: true, onReplaced: (_node, error) => void (error === undefined && replaced.hit()) });
  t.teardown(() => pool.close());
  const probe = (node: string) => pool.system.refFromAddress({ node, path: '/user/probe' }).ask('?');
  t.same(await probe('w1'), { marker: 'one', sameNode: true }, "the app's Node is the runtime's");
  t.same(await probe('w2'), { marker: 'one', sameNode: true });

  writeFileSync(entry, app('two'));
  forgetBuilds();
  const before = buildCount();
  const files = await compileWorkerFiles(fixture, entry);
  t.equal(buildCount() - before, 1, "only the app's bundle was built again (svc's runtime came from the cache)");
  t.equal(await pool.swap(files.app, files.entry), undefined, 'taken in place');
  t.same(await probe('w1'), { marker: 'two', sameNode: true });
  t.same(await probe('w2'), { marker: 'two', sameNode: true });

  writeFileSync(entry, app('three', 'export const refuse = true;\n'));
  forgetBuilds();
  const refused = await compileWorkerFiles(fixture, entry);
  t.equal(await pool.swap(refused.app, refused.entry), 'this app asks for new workers', 'the reason it cannot be taken in place');
  t.same(await probe('w1'), { marker: 'two', sameNode: true }, 'not taken');

  writeFileSync(entry, app('four', "throw new Error('broken at load');\n"));
  forgetBuilds();
  const broken = await compileWorkerFiles(fixture, entry);
  await t.rejects(pool.swap(broken.app, broken.entry), /broken at load/, 'a throw at import fails the swap');
  t.same(await probe('w2'), { marker: 'two', sameNode: true }, 'not taken either');

  // A thread replaced after the swap starts on the version the others run.
  await pool.kill('w1');
  await replaced.wait(1);
  t.same(await probe('w1'), { marker: 'two', sameNode: true }, 'the replacement runs the swapped-in version');
});

t.test('a start finds bundles it built before unchanged and runs no build; a changed input builds again', async (t) => {
  const dir = t.testdir({ node_modules: {}, 'app.ts': app('cached'), 'lib.ts': 'export const lib = 1;\n' });
  const entry = join(dir, 'app.ts');
  writeFileSync(entry, `${app('cached')}export { lib } from './lib.ts';\n`);
  const first = await compileWorkerFiles(fixture, entry);
  // A module instance of its own: a new process, as far as the compiler's memory goes.
  const fresh = (await import(`${new URL('../../../transports/worker/compile.ts', import.meta.url).href}?warm`)) as typeof import('../../../transports/worker/compile.ts');
  const again = await fresh.compileWorkerFiles(fixture, entry);
  t.same(again, first, 'the same files');
  t.equal(fresh.buildCount(), 0, 'esbuild was not run');
  const later = new Date(Date.now() + 5000);
  utimesSync(join(dir, 'lib.ts'), later, later);
  fresh.forgetBuilds();
  await fresh.compileWorkerFiles(fixture, entry);
  t.equal(fresh.buildCount(), 1, 'an input touched since: the app is built again, the runtime is not');
});

t.test('youngGenerationMb bounds each thread’s young generation; without it V8 grows it to its own largest', async (t) => {
  const module = new URL('./fixtures/young-worker.ts', import.meta.url).href;
  const MB = 1024 * 1024;
  const churned = async (youngGenerationMb?: number): Promise<number> => {
    const pool = await WorkerPool.start({ size: 1, module, ...(youngGenerationMb === undefined ? {} : { youngGenerationMb }) });
    try {
      return (await pool.system.refFromAddress({ node: pool.workers[0] as string, path: '/user/churn' }).ask('go', 60_000)) as number;
    } finally {
      await pool.close();
    }
  };
  const bounded = await churned(12);
  const own = await churned();
  // 12 MB: a semi-space of 4 MB, two of them in the new space.
  t.ok(bounded <= 8 * MB, `bounded to 12 MB: its new space grew to ${bounded / MB} MB`);
  t.ok(own > 16 * MB, `V8's own: ${own / MB} MB`);
});
