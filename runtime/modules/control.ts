/** The `control` module: the main thread's orders (describe, listen, drain, forget, revocations, leaving), and this thread's statistics for `/admin/stats`. */
import { type ActorSystem, fromReceive, threadOf } from '../../kernel/index.ts';
import { clusterError } from '../../cluster/index.ts';
import { STATS_TOPIC, type WorkerStats } from '../../transports/http/index.ts';
import { CONTROL_ACTOR, type HttpControl, type RouteSummary } from '../boot.ts';
import { collectGarbage } from '../gc.ts';
import type { RuntimeModule } from '../runtime.ts';
import { BUS, GRAPH, HUB, LISTEN, RELOAD_REVOCATIONS, RUNTIME } from '../keys.ts';

/** The main thread's orders to {@link CONTROL_ACTOR}: describe, listen, drain…; and this thread's statistics for `/admin/stats`. */
export function controlModule(system: ActorSystem, describe: () => RouteSummary[], fingerprint: string): RuntimeModule {
  return {
    name: 'control',
    needs: [HUB, LISTEN, RUNTIME, BUS, GRAPH, RELOAD_REVOCATIONS],
    start(rt) {
      const hub = rt.need(HUB);
      const listen = rt.need(LISTEN);
      const runtime = rt.need(RUNTIME);
      const stats = (gc = false): WorkerStats => {
        if (gc) collectGarbage();
        const heap = process.memoryUsage();
        return {
          worker: threadOf(system.nodeId),
          websockets: hub.conns.size,
          session_actors: hub.sessionActors,
          actors: system.actorCount,
          heap_used_bytes: heap.heapUsed,
          heap_total_bytes: heap.heapTotal,
          handles: process.getActiveResourcesInfo().length,
        };
      };
      rt.need(BUS).subscribe(STATS_TOPIC, (msg) => stats((msg as { gc?: boolean }).gc === true));
      system.spawn(
        fromReceive(async (msg: HttpControl) => {
          if (msg.t === 'describe') return describe();
          if (msg.t === 'fingerprint') return fingerprint;
          if (msg.t === 'listen') return listen();
          if (msg.t === 'forget') {
            // At once: what its partitions had (queued, waiting for a lease, in a run) fails, and nothing of it is stored.
            const lost = clusterError('SVC_ERR_NOT_MEMBER', 'this member lost its cluster lease before the request was run (it was paused or cut off); nothing was stored — retry');
            return rt.need(GRAPH).dropActivations(lost).then(() => true);
          }
          if (msg.t === 'revocations') return rt.need(RELOAD_REVOCATIONS)().then(() => true);
          if (msg.t === 'leaving') {
            for (const node of msg.nodes) system.nodeLeaving(node);
            // Each partition here finishes what it has queued, then stops (its lease goes to the new owner).
            const until = Date.now() + msg.deadlineMs;
            while (system.activationCount('partition') > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
            return true;
          }
          await runtime.drain(msg.deadlineMs);
          return true;
        }),
        CONTROL_ACTOR,
      );
    },
  };
}
