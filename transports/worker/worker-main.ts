/**
 * The runtime of a worker thread: an actor system on a {@link ThreadTransport},
 * the user's setup module, and the control messages of the pool.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { ActorSystem, CompositeTransport, encodeError, type Transport } from '../../kernel/index.ts';
import { ThreadTransport } from './thread-transport.ts';
import { RelayTransport } from './relay.ts';
import { compactHeap } from './heap.ts';
import type { AppSwap, Control, WorkerBoot, WorkerSetup } from './protocol.ts';

/**
 * Start the worker: called by the bundled entry with the user's module, or
 * a function importing it (the app bundled apart from the runtime: its
 * failure to load is reported as the setup's).
 */
export async function runWorker(mod: { setup?: WorkerSetup; default?: WorkerSetup }, app?: Record<string, unknown> | (() => Promise<Record<string, unknown>>)): Promise<void> {
  const boot = workerData as WorkerBoot;
  if (!parentPort) throw new Error('runWorker must run in a worker thread');
  const port = parentPort;
  const transport = new ThreadTransport(boot.nodeId, boot.nodes);
  let system: ActorSystem | undefined;
  let cleanup: (() => Promise<void> | void) | undefined;
  let swap: AppSwap | undefined;
  // One swap at a time, in the order asked.
  let swapping: Promise<void> = Promise.resolve();

  // In a cluster, other processes' nodes are reached through the main thread.
  const relay = boot.remote ? new RelayTransport(boot.nodeId, port) : undefined;
  relay?.setRemote(boot.remote ?? []);
  const onControl = (msg: unknown): void => {
    if (relay?.control(msg)) return;
    const ctl = msg as Control;
    if (ctl.ctl === 'down') transport.markDown(ctl.node);
    else if (ctl.ctl === 'peer') transport.addPeer(ctl.node, ctl.port, onControl);
    else if (ctl.ctl === 'up') transport.markUp(ctl.node);
    else if (ctl.ctl === 'swap') {
      const { id, app: url } = ctl;
      swapping = swapping.then(async () => {
        try {
          if (!swap) return port.postMessage({ ctl: 'swapped', id, restart: 'this worker cannot take new code in place' } satisfies Control);
          const restart = await swap((await import(url)) as Record<string, unknown>);
          port.postMessage({ ctl: 'swapped', id, ...(restart === undefined ? {} : { restart }) } satisfies Control);
        } catch (error) {
          port.postMessage({ ctl: 'swapped', id, error: withStack(error) } satisfies Control);
        }
      });
    }
    else if (ctl.ctl === 'shutdown') {
      void (system?.shutdown({ deadlineMs: ctl.deadlineMs }) ?? Promise.resolve())
        .then(() => cleanup?.())
        .catch((error: unknown) => console.error('[svc worker] cleanup failed:', error))
        .then(() => {
          port.postMessage({ ctl: 'stopped' } satisfies Control);
          process.exit(0);
        });
    }
  };
  transport.addPeer(boot.main, port, onControl);
  for (const [node, peerPort] of Object.entries(boot.peers)) transport.addPeer(node, peerPort as MessagePort, onControl);

  try {
    const composite: Transport = relay ? new CompositeTransport(boot.nodeId, [transport, relay]) : transport;
    system = new ActorSystem({ transport: composite, ...boot.system });
    const setup = mod.setup ?? mod.default;
    if (typeof setup !== 'function') throw new Error(`${boot.module} exports no setup function (export "setup" or a default function)`);
    const appModule = typeof app === 'function' ? await app() : app;
    const onSwap = (fn: AppSwap): void => void (swap = fn);
    const done = await setup(system, { nodeId: boot.nodeId, nodes: boot.nodes, data: boot.data, app: appModule, replacement: boot.replacement, relay, onSwap });
    if (typeof done === 'function') cleanup = done;
    if (boot.settle) compactHeap();
    port.postMessage({ ctl: 'ready' } satisfies Control);
  } catch (error) {
    port.postMessage({ ctl: 'failed', error: withStack(error) } satisfies Control);
    process.exit(1);
  }
}

/** An error for the main thread, with its stack (source-mapped): a failure of the app's module at load names its file and line. */
function withStack(error: unknown): ReturnType<typeof encodeError> {
  const wire = encodeError(error);
  if (error instanceof Error && typeof error.stack === 'string') wire.appStack = error.stack;
  return wire;
}
