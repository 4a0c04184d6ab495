/**
 * What each worker thread of `svc start` runs (bundled with the app by the
 * main thread's `app` module): the runtime of a serving thread (`serve.ts`),
 * started from the boot data the main thread sends. Its control actor
 * (`CONTROL_ACTOR`, the `control` module) takes the main thread's orders
 * (drain, describe, listen, fingerprint, forget, revocations, leaving), and
 * the pool's `swap` (a `--dev` save's code, taken in place).
 */
import type { ActorSystem } from '../kernel/index.ts';
import type { AppSwap, RelayTransport } from '../transports/worker/index.ts';
import type { ServeBoot } from './boot.ts';
import { createRuntime } from './serve.ts';

export async function setup(
  system: ActorSystem,
  ctx: { nodeId: string; data: unknown; app: Record<string, unknown> | undefined; replacement?: boolean; relay?: RelayTransport; onSwap?: (swap: AppSwap) => void },
): Promise<() => Promise<void>> {
  if (!ctx.app) throw new Error('no app module was bundled');
  const rt = createRuntime({ system, boot: { ...(ctx.data as ServeBoot), replacement: ctx.replacement === true }, app: ctx.app, relay: ctx.relay });
  await rt.start();
  // `svc start --dev`: a save's new code is taken in place (serve.ts, the `swap` module).
  ctx.onSwap?.((app) => rt.swap(app));
  return () => rt.close();
}
