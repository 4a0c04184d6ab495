// The young generation held at its smallest while `svc start` starts: each worker thread started meanwhile holds it
// too (a thread's start resets V8's flags), and once released it grows again as load asks; a compacting collection.
import t from 'tap';
import v8 from 'node:v8';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { compactHeap, holdYoungGeneration, releaseYoungGeneration, youngGenerationArgs } from '../../../transports/worker/index.ts';

// Keeps 200,000 small objects alive at a time while making 2 million: enough survivors to grow an unheld young generation to its largest.
const CHURN = `
import { parentPort } from 'node:worker_threads';
import v8 from 'node:v8';
let keep = [];
for (let i = 0; i < 2e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 200000) keep = []; }
parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
`;

let file = '';

function churnInWorker(execArgv: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker(file, { execArgv });
    w.once('message', (size: number) => void w.terminate().then(() => resolve(size)));
    w.once('error', reject);
  });
}

const MB = 1024 * 1024;

t.before(() => {
  file = join(t.testdir({ 'churn.mjs': CHURN }), 'churn.mjs');
});

t.test('held: a worker thread started meanwhile keeps a young generation of a few MB; released: it grows again', async (t) => {
  t.teardown(releaseYoungGeneration);
  holdYoungGeneration();
  const args = youngGenerationArgs();
  t.same(args.slice(0, 1), ['--import'], 'a thread started while held preloads the hold');
  const held = await churnInWorker(args);
  t.ok(held <= 4 * MB, `held: the young generation stayed at ${held / MB} MB`);
  releaseYoungGeneration();
  t.same(youngGenerationArgs(), [], 'released: threads start as V8 makes them');
  const grown = await churnInWorker([]);
  t.ok(grown > 4 * MB, `released: it grew to ${grown / MB} MB under the same load`);
});


t.test('compactHeap: garbage that reached the old generation goes, and its pages with it', async (t) => {
  const total = (): number => v8.getHeapStatistics().total_heap_size;
  // ~40 MB kept long enough to be promoted, then dropped.
  let kept: unknown[][] = [];
  for (let i = 0; i < 400; i++) kept.push(Array.from({ length: 10_000 }, (_, j) => ({ j })));
  await new Promise((done) => setImmediate(done));
  const before = total();
  kept = [];
  compactHeap();
  const after = total();
  t.ok(before - after > 20 * MB, `the heap went from ${Math.round(before / MB)} MB to ${Math.round(after / MB)} MB`);
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
  t.same(youngGenerationArgs(), [], 'threads start as the user set them');
});
