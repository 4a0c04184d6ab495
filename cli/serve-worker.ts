/**
 * What each worker thread of `svc start` runs: the runtime of a serving
 * thread (`runtime/serve.ts`), started from the boot data the main thread
 * sends. Its `/user/http` actor takes the main thread's orders (drain,
 * describe, listen, stats).
 */
import type { ActorSystem } from '../kernel/index.ts';
import type { RelayTransport } from '../transports/worker/index.ts';
import { createRuntime, type ServeBoot } from '../runtime/index.ts';

export type { HttpControl, RouteSummary, ServeBoot, WorkerStats } from '../runtime/index.ts';

export async function setup(
  system: ActorSystem,
  ctx: { nodeId: string; data: unknown; app: Record<string, unknown> | undefined; replacement?: boolean; relay?: RelayTransport },
): Promise<() => Promise<void>> {
  if (!ctx.app) throw new Error('no app module was bundled');
  const rt = createRuntime({ system, boot: { ...(ctx.data as ServeBoot), replacement: ctx.replacement === true }, app: ctx.app, relay: ctx.relay });
  await rt.start();
  return () => rt.close();
}
