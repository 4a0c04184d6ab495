/** A full garbage collection on demand (`/admin/stats?gc=1`, for leak checks). */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

let gcFn: (() => void) | undefined;

/** A full GC, when the process was started with --expose-gc (leak checks); otherwise nothing. */
export function collectGarbage(): void {
  if (process.env.SVC_EXPOSE_GC !== '1' && typeof (globalThis as { gc?: unknown }).gc !== 'function') return;
  if (!gcFn) {
    const own = (globalThis as { gc?: () => void }).gc;
    if (own) gcFn = own;
    else {
      // Workers cannot take --expose-gc as an argument; the flag is set here instead.
      v8.setFlagsFromString('--expose-gc');
      gcFn = runInNewContext('gc') as () => void;
    }
  }
  gcFn();
}
