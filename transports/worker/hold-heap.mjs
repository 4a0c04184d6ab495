// Preloaded (`--import`) into a worker thread started while `svc start` holds the young generation at its smallest
// (heap.ts): a thread's start sets V8's growth factor back to its default, so the thread holds it again, first thing
// — if the shared cell in its workerData still says held. A thread the app starts, or a process it forks, inherits
// this preload but not the cell: nothing is held for them.
import v8 from 'node:v8';
import { workerData } from 'node:worker_threads';

const cell = workerData?.hold;
if (cell instanceof Int32Array && Atomics.load(cell, 0) === 1) v8.setFlagsFromString('--semi-space-growth-factor=1');
