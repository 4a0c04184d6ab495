/** The `graph` module: walker runs on partitions of the graph, placed on this process's workers (or a cluster's members), their events sent once they commit. */
import { type ActorSystem, isWorkerNode, MAIN_THREAD, processOf, remoteLeases, RendezvousPlacement, workerPlacement } from '../../kernel/index.ts';
import { Graph } from '../../actors/graph/index.ts';
import type { Registry } from '../../actors/walker/index.ts';
import { EVENT_OUTBOX_KIND, type OutboxEvent } from '../../actors/events/index.ts';
import type { MemberState } from '../../cluster/index.ts';
import type { RelayTransport } from '../../transports/worker/index.ts';
import { askTimeoutMs, type ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { BROKER, GRAPH, INVALIDATION, LOG, STORE } from '../keys.ts';

/**
 * Partitions of a cluster member: on worker threads of members with the same
 * app fingerprint that are not leaving.
 */
export function clusterPlacement(system: ActorSystem, fingerprint: string, relay: RelayTransport | undefined): RendezvousPlacement {
  const own = processOf(system.nodeId);
  return new RendezvousPlacement({
    accepts: (node) => {
      if (!isWorkerNode(node)) return false;
      if (processOf(node) === own) return true;
      const remote = relay?.remote(node);
      return remote !== undefined && remote.app === fingerprint && remote.leaving !== true;
    },
  });
}

export function graphModule(system: ActorSystem, boot: ServeBoot, registry: Registry, fingerprint: string, relay: RelayTransport | undefined, member: MemberState | undefined): RuntimeModule {
  const server = boot.config['scale.server'];
  return {
    name: 'graph',
    needs: [LOG, BROKER, STORE],
    uses: [INVALIDATION],
    provides: [GRAPH],
    async start(rt) {
      const log = rt.need(LOG);
      const broker = rt.need(BROKER);
      rt.provide(
        GRAPH,
        await Graph.open({
          system,
          registry,
          store: rt.need(STORE),
          placement: member ? clusterPlacement(system, fingerprint, relay) : workerPlacement(),
          ...(boot.activationLeases ? { lease: remoteLeases(system, MAIN_THREAD) } : {}),
          // A cluster member: each activation claims its root in the store (a late write of a former owner is refused),
          // and nothing is served once this member's lease may have lapsed.
          // Its batches carry the lease's end: one that waited (a pause) until after it is refused by the store.
          ...(member ? { fenced: true, guard: () => member.guard(), fenceUntil: () => member.validUntil, onClaim: (rootId: string) => void rt.find(INVALIDATION)?.publish({ t: 'claim', root: rootId }) } : {}),
          // The run deadline is the request timeout: a run the client stopped waiting for is dropped, not committed.
          runTimeoutMs: server.request_timeout_ms,
          timeoutMs: askTimeoutMs(boot),
          onQuarantine: (id, reason) => log.warn({ anchor: id, reason }, 'anchor moved to quarantine'),
          // `this.log` in walkers and functions: lines with the walker, the trace id and the root.
          logger: (bindings) => log.child(bindings),
          // Events published in a run leave once it commits (only with events on: tracking runs costs every promise).
          ...(broker.kind === 'disabled'
            ? {}
            : {
                outbox: (entries) => {
                  for (const e of entries) {
                    if (e.kind !== EVENT_OUTBOX_KIND) continue;
                    const { topic, event } = e.data as OutboxEvent;
                    try {
                      broker.publish(topic, event, e.traceId);
                    } catch (error) {
                      // One event that cannot leave does not hold back the others of the run.
                      log.error({ err: error, topic, trace_id: e.traceId }, 'an event published by a committed run could not be sent');
                    }
                  }
                },
              }),
        }),
      );
    },
  };
}
