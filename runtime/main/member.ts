/**
 * The `member` module of the main thread (`KV_URL` set): this process as a
 * member of a cluster — Redis and the link port first (Redis unreachable: one
 * line, exit 1); it joins once its workers serve (the `join` module).
 */
import { basename } from 'node:path';
import { ClusterMember } from '../../cluster/index.ts';
import { CLUSTER, MEMBER, SECRETS } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { say, StartError, type StartOptions } from './options.ts';

/**
 * @example
 * composeRuntime([..., memberModule(options, processId), poolModule(options, processId, life), ...]);
 */
export function memberModule(options: StartOptions, processId: string): RuntimeModule {
  let member: ClusterMember | undefined;
  return {
    name: 'member',
    needs: [SECRETS],
    provides: [MEMBER, CLUSTER],
    async start(rt) {
      const { config } = options;
      const kvUrl = config['scale.database'].kv_url;
      const clusterConfig = config['scale.cluster'];
      const name = clusterConfig.name || defaultClusterName(options.projectRoot, options.entry);
      try {
        member = await ClusterMember.open({
          kvUrl,
          name,
          leaseMs: clusterConfig.lease_ms,
          host: config['scale.server'].host,
          advertiseHost: clusterConfig.advertise_host,
          processId,
          secret: rt.need(SECRETS).jwt.secret,
          version: options.version,
          log: (level, message) => (level === 'info' ? say(`svc: ${message}`) : process.stderr.write(`svc: ${message}\n`)),
        });
      } catch (error) {
        throw new StartError((error as Error).message);
      }
      rt.provide(MEMBER, member);
      rt.provide(CLUSTER, {
        name,
        kvUrl,
        processId,
        state: member.state.buffer,
        invalidation: { enabled: config['scale.database'].kv_l1_invalidation_enabled, channel: config['scale.database'].kv_l1_invalidation_channel },
      });
    },
    // After the pool's drain it has left (and closed); else (a start that failed) it closes without leaving.
    close: () => member?.close(),
  };
}

/** A cluster's default name: the project folder and the entry file (`shop-app`). */
function defaultClusterName(projectRoot: string, entry: string): string {
  return `${basename(projectRoot)}-${basename(entry).replace(/\.[mc]?[jt]s$/, '')}`.replace(/[^A-Za-z0-9._-]/g, '_');
}
