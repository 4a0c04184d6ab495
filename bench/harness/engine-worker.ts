/**
 * The entry of a generator thread of the load engine (engine.ts starts it by
 * this file's URL): loaded as a worker (`workerData.svcBench`), it drives one
 * `Generator` (generator.ts, which runs anywhere) through `parentPort`.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { MainMessage, ThreadMessage, ThreadPlan } from './engine-messages.ts';
import { Generator } from './generator.ts';

if (!isMainThread && parentPort && (workerData as { svcBench?: ThreadPlan } | null)?.svcBench) {
  // The main thread terminates this thread once it has the final tally (or on abort, or failure).
  const port = parentPort;
  const gen = new Generator((workerData as { svcBench: ThreadPlan }).svcBench, (msg) => port.postMessage(msg));
  port.once('message', (msg: MainMessage) => msg.type === 'start' && gen.start());
  gen.prepare().then(
    () => port.postMessage({ type: 'ready' } satisfies ThreadMessage),
    (error: unknown) => port.postMessage({ type: 'failed', message: error instanceof Error ? error.message : String(error) } satisfies ThreadMessage),
  );
}
