/** The `hasher` module of the main thread: password hashing for the whole process, a few low-priority threads served to the workers. */
import { ThreadHasher } from '../../actors/identity/index.ts';
import { HASHER } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import type { StartOptions } from './options.ts';

/**
 * @example
 * composeRuntime([..., hasherModule(options), storesModule(options), ...]);
 */
export function hasherModule(options: StartOptions): RuntimeModule {
  let hasher: ThreadHasher | undefined;
  return {
    name: 'hasher',
    provides: [HASHER],
    start(rt) {
      const auth = options.config['scale.auth'];
      // Its threads start with the first sign-in (or the admin's first password), not with the process.
      hasher = rt.provide(HASHER, new ThreadHasher({ threads: auth.hash_concurrency, nice: auth.hash_nice, onDemand: true }));
    },
    close: () => hasher?.close(),
  };
}
