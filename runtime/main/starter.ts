/** The `starter` module of the main thread: the siblings of `sv` calls, started on the workers' demand and stopped with this process. */
import { basename } from 'node:path';
import { ServiceStarter } from '../../transports/sv/index.ts';
import { ADDRESS, SECRETS, STARTER } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import type { StartOptions } from './options.ts';
import { localUrl } from './port.ts';

/**
 * @example
 * composeRuntime([..., portModule(options), starterModule(options), ...]);
 */
export function starterModule(options: StartOptions): RuntimeModule {
  let starter: ServiceStarter | undefined;
  return {
    name: 'starter',
    needs: [SECRETS, ADDRESS],
    provides: [STARTER],
    start(rt) {
      const sv = options.config['scale.sv'];
      const secrets = rt.need(SECRETS);
      const { host, port } = rt.need(ADDRESS);
      starter = rt.provide(
        STARTER,
        new ServiceStarter({
          dataDir: options.paths.dataDir,
          jwtSecret: secrets.jwt.secret,
          webhookSecret: secrets.webhook.secret,
          profile: options.profile,
          workers: sv.workers,
          startTimeoutMs: sv.start_timeout * 1000,
          // A sibling that calls this app back reaches this process.
          self: { name: basename(options.entry).replace(/\.[mc]?[jt]s$/, ''), url: localUrl(host, port) },
        }),
      );
    },
    close: () => starter?.close(),
  };
}
