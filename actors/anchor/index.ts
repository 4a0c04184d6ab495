/**
 * Graph state: partition actors (one per root), the anchor store interface
 * and its backends, the codec between anchors and stored documents.
 */
export { Graph, spreadOverWorkers } from './graph.ts';
export type { GraphOptions, SpawnOptions } from './graph.ts';
export { Partition, reportJson } from './partition.ts';
export type { PartitionMsg, WalkerResult, FunctionResult, RunReply, PartitionContext } from './partition.ts';
export type { AnchorStore, StoredDoc, CommitBatch, QuarantineEntry } from './store.ts';
export { CommitChain } from './store.ts';
export { MemoryStore } from './memory-store.ts';
export { SqliteStore, defaultStorePath } from './sqlite-store.ts';
export type { SqliteStoreOptions } from './sqlite-store.ts';
export { encode, decode } from './codec.ts';
