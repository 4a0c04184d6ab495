/**
 * The young generation held at its smallest while a server starts. Loading
 * svc and the app makes garbage that survives long enough for V8 to grow each
 * thread's young generation to its largest (16 MB a semi-space, two of them:
 * ~20–30 MB resident a thread, measured), which then stays until V8's memory
 * reducer runs, seconds into idle. Held, it grows no more while the server
 * starts; released once it is ready, it grows again as load asks.
 *
 * V8's growth factor is a process-wide flag read at each growth, and each
 * worker thread's start resets the flags: threads started while it is held
 * preload `hold-heap.mjs`, which holds it again.
 *
 * Held, start-up's garbage is promoted instead, and each thread compacts its
 * heap once before it says it is ready (~40 ms a thread, measured; what V8's
 * memory reducer would do seconds into idle): the server is ready at its
 * smallest (the example with two worker threads: ~10 MB less).
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

let held = false;

/** A semi-space flag the process was started with (its arguments or NODE_OPTIONS) is the user's: left alone. */
const userSizesIt = (): boolean => /semi[-_]space/.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);

/**
 * Hold the young generation at its smallest (`svc start`, first thing).
 *
 * @example
 * holdYoungGeneration(); await startServer(); releaseYoungGeneration();
 */
export function holdYoungGeneration(): void {
  if (userSizesIt()) return;
  held = true;
  v8.setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Compact this thread's heap and let the young generation grow again (V8's
 * own factor): once the server is ready, before it says so. Nothing unless held.
 *
 * @example
 * releaseYoungGeneration(); say(`Server ready at ${url}`);
 */
export function releaseYoungGeneration(): void {
  if (!held) return;
  held = false;
  compactHeap();
  v8.setFlagsFromString('--semi-space-growth-factor=2');
}

/**
 * A full garbage collection that compacts: live objects moved onto as few
 * pages as hold them, the emptied pages given back. A worker thread started
 * while held runs it before it says it is ready.
 *
 * @example
 * if (boot.settle) compactHeap();
 */
export function compactHeap(): void {
  // Workers cannot take --expose-gc as an argument; a context made after the flag is set has `gc`.
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    v8.setFlagsFromString('--no-compact-on-every-full-gc');
  }
}

/**
 * The flags a worker thread starting now is given to hold it too (none once released).
 *
 * @example
 * new Worker(entry, { execArgv: [...execArgv, ...youngGenerationArgs()] });
 */
export function youngGenerationArgs(): string[] {
  return held ? ['--import', new URL('./hold-heap.mjs', import.meta.url).href] : [];
}
