/** The `invalidation` module (cluster members): the L1 invalidation channel. */
import type { ActorSystem } from '../../kernel/index.ts';
import { Invalidation } from '../../cluster/index.ts';
import { openRedis } from '../../stores/index.ts';
import type { ServeCluster } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { INVALIDATION, LOG } from '../keys.ts';

/**
 * The L1 invalidation channel: a member that takes a root over (or deletes a
 * graph) says so, and every other member drops its activation of that root
 * at once (it would otherwise serve reads from memory another member has
 * since changed).
 */
export function invalidationModule(system: ActorSystem, cluster: ServeCluster): RuntimeModule {
  let channel: Invalidation | undefined;
  const connections: { disconnect(): void }[] = [];
  return {
    name: 'invalidation',
    needs: [LOG],
    provides: [INVALIDATION],
    async start(rt) {
      if (!cluster.invalidation.enabled) return;
      const log = rt.need(LOG);
      const redis = openRedis(cluster.kvUrl, { name: `svc-${system.nodeId}-l1`, onError: () => undefined });
      const subscriber = openRedis(cluster.kvUrl, { name: `svc-${system.nodeId}-l1-sub`, onError: () => undefined });
      connections.push(redis, subscriber);
      channel = new Invalidation({
        redis,
        subscriber,
        channel: cluster.invalidation.channel,
        processId: cluster.processId,
        onError: (error: unknown) => log.warn({ err: error }, 'L1 invalidation channel'),
      });
      await channel
        .subscribe((event) => {
          const held = system.activation('partition', event.root);
          if (held) void system.stop(held).catch(() => undefined);
        })
        .catch((error: unknown) => log.warn({ err: error }, 'the L1 invalidation channel could not be subscribed; this thread serves on and takes what it missed from the store'));
      rt.provide(INVALIDATION, channel);
    },
    async close() {
      await channel?.close();
      for (const c of connections) c.disconnect();
    },
  };
}
