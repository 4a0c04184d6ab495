/** The `bus` module: one message to every worker thread (revocations, WebSocket broadcasts, statistics). */
import { ActorBroadcast, type ActorSystem, isWorkerNode } from '../../kernel/index.ts';
import type { RuntimeModule } from '../runtime.ts';
import { BUS } from '../keys.ts';

/** One message to every worker thread: revocations, WebSocket broadcasts, statistics. */
export function busModule(system: ActorSystem): RuntimeModule {
  return {
    name: 'bus',
    provides: [BUS],
    start: (rt) => void rt.provide(BUS, new ActorBroadcast(system, { accepts: isWorkerNode })),
  };
}
