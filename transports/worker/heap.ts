/**
 * The young generation held at its smallest while a server starts. Loading
 * svc and the app makes garbage that survives long enough for V8 to grow each
 * thread's young generation to its largest (16 MB a semi-space, two of them:
 * ~20–30 MB resident a thread, measured), which then stays until V8's memory
 * reducer runs, seconds into idle. Held, it grows no more while the server
 * starts; released once it is ready, it grows again as load asks.
 *
 * V8's growth factor is a process-wide flag read at each growth, but a new
 * thread's start sets it back to V8's default (measured: a factor set before
 * or just after `new Worker()` is lost; other flags stay). So a worker thread
 * started while it is held preloads `hold-heap.mjs`, which holds it again if
 * the shared cell its `workerData` carries still says so (a thread the app
 * starts in a worker, or a process it forks, inherits the preload but not the
 * cell), and the pool holds it again when the thread is online.
 *
 * Held, start-up's garbage is promoted instead, and each serving thread
 * compacts its heap once before it says it is ready (~40 ms a thread,
 * measured; what V8's memory reducer would do seconds into idle): the server
 * is ready at its smallest.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

let held = false;
/** 1 while held: shared with the worker threads started meanwhile (their preload reads it). */
const cell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Whether the process was started with a semi-space flag (its arguments or NODE_OPTIONS): the user's, left alone.
 *
 * @example
 * if (!userSizesYoungGeneration()) resourceLimits.maxYoungGenerationSizeMb = 24;
 */
export const userSizesYoungGeneration = (): boolean => /semi[-_]space/.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);

/**
 * Hold the young generation at its smallest (`svc start`, first thing).
 *
 * @example
 * holdYoungGeneration(); await startServer(); releaseYoungGeneration();
 */
export function holdYoungGeneration(): void {
  if (userSizesYoungGeneration()) return;
  held = true;
  Atomics.store(cell, 0, 1);
  v8.setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Hold it again after a thread's start reset the flag, if it is still held.
 *
 * @example
 * worker.once('online', holdAgain);
 */
export function holdAgain(): void {
  if (held) v8.setFlagsFromString('--semi-space-growth-factor=1');
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
  Atomics.store(cell, 0, 0);
  compactHeap();
  v8.setFlagsFromString('--semi-space-growth-factor=2');
}

/**
 * What a worker thread starting now is given to hold it too: the preload and
 * the shared cell for its `workerData` (nothing once released).
 *
 * @example
 * const hold = youngGenerationHold();
 * new Worker(entry, { execArgv: [...execArgv, ...(hold?.execArgv ?? [])], workerData: { ...boot, hold: hold?.cell } });
 */
export function youngGenerationHold(): { execArgv: string[]; cell: Int32Array } | undefined {
  return held ? { execArgv: ['--import', new URL('./hold-heap.mjs', import.meta.url).href], cell } : undefined;
}

let gc: (() => void) | undefined;

/** The `gc` of this thread: its own (the process started with --expose-gc), or one of a context made while the flag is set. */
function exposedGc(): (() => void) | undefined {
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return own as () => void;
  // Workers cannot take --expose-gc as an argument; a context made while the flag is set has `gc`. The flag is
  // process-wide and another thread's start may reset it between the two lines: tried again, then done without.
  for (let attempt = 0; attempt < 3; attempt++) {
    v8.setFlagsFromString('--expose-gc');
    const found = runInNewContext('typeof gc === "function" ? gc : undefined') as (() => void) | undefined;
    if (found) return found;
  }
  return undefined;
}

/**
 * A full garbage collection that compacts: live objects moved onto as few
 * pages as hold them, the emptied pages given back (a plain one leaves pages
 * sparsely used). A worker thread started while held runs it before it says
 * it is ready. An optimisation: it never throws (without a `gc` to call, it
 * does nothing).
 *
 * @example
 * if (boot.settle) compactHeap();
 */
export function compactHeap(): void {
  try {
    gc ??= exposedGc();
    if (!gc) return;
    v8.setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      v8.setFlagsFromString('--no-compact-on-every-full-gc');
    }
  } catch {
    // Never a reason for a start to fail.
  }
}
