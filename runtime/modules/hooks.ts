/** The `hooks` module: the app's hook walkers, before every generated route and WebSocket upgrade. */
import { HookDispatcher, type Registry } from '../../actors/walker/index.ts';
import { askTimeoutMs, type ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { GRAPH, HOOKS } from '../keys.ts';

/** Hook walkers: before every generated route and every WebSocket upgrade, whatever the transport. */
export function hooksModule(boot: ServeBoot, registry: Registry): RuntimeModule {
  return {
    name: 'hooks',
    needs: [GRAPH],
    provides: [HOOKS],
    start(rt) {
      const graph = rt.need(GRAPH);
      rt.provide(HOOKS, new HookDispatcher(registry, (walker, fields, options) => graph.spawn(walker, fields, options), { timeoutMs: askTimeoutMs(boot) }));
    },
  };
}
