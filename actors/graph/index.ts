/**
 * Graph state: partition actors (one per root) with their commit chain, the
 * anchor store seam (`AnchorStore`: backends register by URI scheme from
 * `stores/`, this room imports none), the codec between anchors and stored
 * documents, and the one way a backend is chosen by URI (`BackendRegistry`).
 */
export { Graph, FORWARD_CHANNEL } from './graph.ts';
export type { GraphOptions, SpawnOptions, ForwardEvent } from './graph.ts';
export { Partition, PARTITION_PROTOCOL, RUN_CHANNEL } from './partition.ts';
export { reportJson } from './run-reply.ts';
export type { RunEvent, PartitionMsg, WalkerResult, FunctionResult, RunReply, PartitionContext } from './partition.ts';
/** The graph's own errors, for a store that refuses a value (e.g. a string its database cannot hold). */
export { graphError } from '../walker/index.ts';
export type { AnchorStore, StoredDoc, CommitBatch, Fence, QuarantineEntry, BodyForm, StoreStats } from './store.ts';
export { CommitChain, fenceLapsed } from './store.ts';
export { STORE_ERRORS, storeError } from './errors.ts';
export type { StoreErrorCode } from './errors.ts';
export { openAnchorStore, registerAnchorStore } from './open-store.ts';
export type { OpenAnchorStoreOptions, AnchorStoreFactory } from './open-store.ts';
export { parseStoreUri, unavailableBackend, schemeWritten, BackendRegistry } from './store-uri.ts';
export type { StoreUri } from './store-uri.ts';
export { ForwardingStore, serveStoreWriter, STORE_WRITER_ACTOR } from './store-writer.ts';
export type { WriterMsg } from './store-writer.ts';
export { encode, decode } from './codec.ts';
export { InstrumentedStore, STORE_COMMIT_CHANNEL, STORE_READ_CHANNEL } from './instrumented-store.ts';
export type { StoreObserver, StoreCommitEvent, StoreReadEvent } from './instrumented-store.ts';
