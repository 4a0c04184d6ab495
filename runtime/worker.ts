/**
 * What each worker thread of `svc start` runs (bundled with the app by the
 * main thread's `app` module): the runtime of a serving thread (`serve.ts`),
 * started from the boot data the main thread sends. Its control actor
 * (`CONTROL_ACTOR`, the `control` module) takes the main thread's orders
 * (drain, describe, listen, fingerprint, forget, revocations, leaving).
 */
import type { ActorSystem } from '../kernel/index.ts';
import type { RelayTransport } from '../transports/worker/index.ts';
import type { ServeBoot } from './boot.ts';
import { createRuntime } from './serve.ts';

export async function setup(
  system: ActorSystem,
  ctx: { nodeId: string; data: unknown; app: Record<string, unknown> | undefined; replacement?: boolean; relay?: RelayTransport },
): Promise<() => Promise<void>> {
  if (!ctx.app) throw new Error('no app module was bundled');
  const rt = createRuntime({ system, boot: { ...(ctx.data as ServeBoot), replacement: ctx.replacement === true }, app: ctx.app, relay: ctx.relay });
  await rt.start();
  return () => rt.close();
}
