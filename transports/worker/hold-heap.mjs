// Preloaded (`--import`) into a worker thread started while `svc start` holds the young generation at its smallest
// (heap.ts): a thread's start resets V8's flags to the process's own, so each thread holds it again, first thing.
import v8 from 'node:v8';

v8.setFlagsFromString('--semi-space-growth-factor=1');
