// The young generation held at its smallest while `svc start` starts: this thread, and each worker thread started
// meanwhile (a thread's start sets V8's growth factor back, so each holds it again) — but not a thread or process the
// app starts; once released it grows again as load asks. A compacting collection gives pages back.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { compactHeap, holdYoungGeneration, releaseYoungGeneration, youngGenerationHold } from '../../../transports/worker/index.ts';

const MB = 1024 * 1024;

// Keeps 200,000 small objects alive at a time while making 2 million: enough survivors to grow an unheld young generation to its largest.
const CHURN = `
import { parentPort } from 'node:worker_threads';
import v8 from 'node:v8';
let keep = [];
for (let i = 0; i < 2e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 200000) keep = []; }
parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
`;

let file = '';
t.before(() => {
  file = join(t.testdir({ 'churn.mjs': CHURN }), 'churn.mjs');
});

function churnInWorker(execArgv: string[], workerData: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker(file, { execArgv, workerData });
    w.once('message', (size: number) => void w.terminate().then(() => resolve(size)));
    w.once('error', reject);
  });
}

t.test('held: a worker thread started with the hold keeps a young generation of a few MB; one without its cell (the app’s own) does not', async (t) => {
  t.teardown(releaseYoungGeneration);
  holdYoungGeneration();
  const hold = youngGenerationHold();
  if (!hold) throw new Error('not held');
  t.same(hold.execArgv[0], '--import', 'a thread started while held preloads the hold');
  const held = await churnInWorker(hold.execArgv, { hold: hold.cell });
  t.ok(held <= 4 * MB, `held: the young generation stayed at ${held / MB} MB`);
  const inherited = await churnInWorker(hold.execArgv, { app: 'its own data' });
  t.ok(inherited > 4 * MB, `a thread with the preload but not the cell grew to ${inherited / MB} MB`);
  const cell = hold.cell;
  releaseYoungGeneration();
  t.equal(youngGenerationHold(), undefined, 'released: threads start as V8 makes them');
  const after = await churnInWorker(hold.execArgv, { hold: cell });
  t.ok(after > 4 * MB, `released, the same preload and cell hold nothing: it grew to ${after / MB} MB`);
});

t.test('this thread, alone in a process: held it stays small under the churn, released it grows', async (t) => {
  const fixture = fileURLToPath(new URL('./fixtures/hold-main.ts', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', fixture], { encoding: 'utf8', timeout: 60_000 });
  t.equal(run.status, 0, run.stderr);
  const { before, held, released } = JSON.parse(run.stdout) as { before: number; held: number; released: number };
  // What loading tsx grew it to before the hold is kept; it grows no further.
  t.ok(held <= Math.max(before, 4 * MB), `held: ${held / MB} MB (${before / MB} MB before)`);
  t.ok(released > Math.max(before, 4 * MB), `released: ${released / MB} MB`);
});

t.test('compactHeap gives back the pages a plain collection leaves sparsely used', async (t) => {
  const total = (): number => v8.getHeapStatistics().total_heap_size;
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let kept: { j: number }[][] | undefined = [];
  for (let i = 0; i < 400; i++) kept.push(Array.from({ length: 10_000 }, (_, j) => ({ j })));
  gc();
  // One object in twenty kept: every page still in use, mostly empty.
  const sparse = kept.map((a) => a.filter((_, j) => j % 20 === 0));
  kept = undefined;
  gc();
  const plain = total();
  compactHeap();
  const compacted = total();
  t.ok(compacted < plain - 40 * MB, `a plain collection left ${Math.round(plain / MB)} MB, compactHeap ${Math.round(compacted / MB)} MB`);
  t.equal(sparse.length, 400, 'what was kept is still there');
});

t.test("a semi-space flag of the user's (NODE_OPTIONS here) is left alone: nothing is held", async (t) => {
  const saved = process.env.NODE_OPTIONS;
  t.teardown(() => {
    if (saved === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = saved;
    releaseYoungGeneration();
  });
  process.env.NODE_OPTIONS = `${saved ?? ''} --max-semi-space-size=8`;
  holdYoungGeneration();
  t.equal(youngGenerationHold(), undefined, 'threads start as the user set them');
});
