/**
 * Process links: kernel frames between the main threads of a cluster's
 * processes, over authenticated TCP — the other half of the worker relay
 * (`transports/worker`), which hands a worker's batches to its main thread.
 */
export { ProcessLinks, parseAddress } from './link.ts';
export type { ProcessLinksOptions, LinkCounters } from './link.ts';
