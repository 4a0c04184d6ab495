/**
 * Actors across worker threads: a batching MessagePort transport with
 * msgpackr frames, and a pool that starts, meshes and watches workers.
 */
export { WorkerPool } from './pool.ts';
export type { WorkerPoolOptions } from './pool.ts';
export { ThreadTransport } from './thread-transport.ts';
export { PortLink } from './port-link.ts';
export type { PortLike } from './port-link.ts';
export { encodeFrames, decodeFrames } from '../codec/index.ts';
export type { WorkerSetup, AppSwap } from './protocol.ts';
export type { WorkerFiles } from './compile.ts';
export { compileWorker, compileWorkerFiles, compileModule, compileScript, forgetBuilds, cheapNames, plainClassNames, restoreBundle, keepBuildService, buildCount, KEPT_BUNDLES, BUNDLE_IDLE_MS } from './compile.ts';
export { RelayTransport } from './relay.ts';
export { compactHeap, holdAgain, holdYoungGeneration, releaseYoungGeneration, youngGenerationHold } from './heap.ts';
export type { RemoteNode, RelayControl } from './relay.ts';
