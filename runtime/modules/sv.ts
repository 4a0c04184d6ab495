/** The `sv` module: service-to-service calls of this thread (`sv.import`), and who starts their siblings. */
import { dirname, join, resolve } from 'node:path';
import { type ActorSystem, MAIN_THREAD } from '../../kernel/index.ts';
import { bindSv, ServiceStarter, SV_ACTOR } from '../../transports/sv/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';

/** Service-to-service calls of this thread: the entry's folder, `[scale.sv]`, and who starts siblings. */
export function svModule(system: ActorSystem, boot: ServeBoot): RuntimeModule {
  let unbind: (() => void) | undefined;
  let starter: ServiceStarter | undefined;
  return {
    name: 'sv',
    start() {
      const c = boot.config['scale.sv'];
      const rpcTimeoutsMs = Object.fromEntries(Object.entries(c.rpc_timeouts).map(([module, seconds]) => [module, Number(seconds) * 1000]));
      let ensure: (module: string, baseDir: string) => Promise<string>;
      if (boot.svStarterOnMain) {
        ensure = (module, baseDir) => system.refFromAddress({ node: MAIN_THREAD, path: `/user/${SV_ACTOR}` }).ask({ module, baseDir }, c.start_timeout * 1000 + 10_000) as Promise<string>;
      } else {
        // One thread (testApp): its siblings are its own, stopped with it.
        ensure = (module, baseDir) => {
          starter ??= new ServiceStarter({ dataDir: boot.storePath && boot.storePath !== ':memory:' ? dirname(boot.storePath) : join(resolve(boot.projectRoot), '.svc', 'data'), jwtSecret: boot.jwtSecret, workers: c.workers, startTimeoutMs: c.start_timeout * 1000 });
          return starter.ensure(module, baseDir);
        };
      }
      unbind = bindSv({
        baseDir: resolve(boot.projectRoot),
        settings: {
          rpcTimeoutMs: c.rpc_timeout * 1000,
          rpcTimeoutsMs,
          retries: c.retries,
          retryBackoffMs: c.retry_backoff_ms,
          breakerFailures: c.breaker_failures,
          breakerHalfOpenMs: c.breaker_half_open_seconds * 1000,
          autoStart: c.auto_start,
        },
        ensure,
      });
    },
    async close() {
      unbind?.();
      await starter?.close();
    },
  };
}
