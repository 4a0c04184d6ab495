/**
 * svc — the public API an app codes against.
 *
 * @example
 * import { Node, Walker, Root, entry, fn, T } from 'svc';
 */
import Type from 'typebox';
import { setDataFallback, type StorageConfig as DataStorageConfig } from './actors/data/index.ts';
import { setSandboxFallback, type SandboxSettings } from './actors/sandbox/index.ts';
import { dataPaths, loadConfig } from './runtime/index.ts';

// Outside `svc start` (a script, a test), `store()` and `kvstore()` read the current folder's svc.toml and the environment.
setDataFallback(() => {
  const projectRoot = process.cwd();
  const { config } = loadConfig({ dir: projectRoot, env: process.env });
  return {
    projectRoot,
    dataDir: dataPaths(projectRoot, config).dataDir,
    storage: config.storage as DataStorageConfig,
    docdbUri: config['scale.database'].docdb_uri,
    kvUrl: config['scale.database'].kv_url,
  };
});

// Outside `svc start`, `sandboxes()` reads the current folder's svc.toml and the environment too.
setSandboxFallback(() => {
  const projectRoot = process.cwd();
  const { config } = loadConfig({ dir: projectRoot, env: process.env });
  return { settings: config['scale.sandbox'] as SandboxSettings, dataDir: dataPaths(projectRoot, config).dataDir, projectRoot };
});

export {
  Node,
  Edge,
  GenericEdge,
  Root,
  Walker,
  entry,
  exit,
  fn,
  restspec,
  HTTPMethod,
  APIProtocol,
  AccessLevel,
  permGrant,
  permRevoke,
  allowRoot,
  disallowRoot,
  rooms,
  sendTo,
  presence,
} from './actors/walker/index.ts';
export type { RoomsOptions, RoomPresence, SendTarget } from './actors/walker/index.ts';
export type { NodeFilter, FnContext, Caller, RestSpec, ArchetypeClass, WalkerClass } from './actors/walker/index.ts';
export { Graph, openAnchorStore, registerAnchorStore } from './actors/graph/index.ts';
// The built-in backends register themselves with their seams here, once, for every user of the package.
export { MemoryStore, SqliteStore, defaultStorePath } from './stores/index.ts';
export type { AnchorStore, WalkerResult, FunctionResult } from './actors/graph/index.ts';
export { Registry, afterCommit } from './actors/walker/index.ts';
export { webhookSignature } from './transports/http/index.ts';
export { WorkerPool } from './transports/worker/index.ts';
export type { WorkerPoolOptions, WorkerSetup } from './transports/worker/index.ts';
export { SvcError } from './kernel/index.ts';
export { publish, subscribe, broker, spawn, broadcast, dedupe, Event } from './actors/events/index.ts';
export type { Subscription, SubscribeOptions, EventHandler, HandlerContext, SpawnAsOptions, EventInit, Broker, RetrySettings } from './actors/events/index.ts';
export { registerEmailer, openUsersRepository, registerUsersRepository } from './actors/identity/index.ts';
export { store, StorageFactory, kvstore, DocDbStore, KvStore, mutex, debounce } from './actors/data/index.ts';
export type { DbType, KvstoreOptions, FindNodesOptions, Lock, MutexOptions, RetryOptions } from './actors/data/index.ts';
export type { Storage, StorageConfig, StorageType, FileMetadata, UploadedFile, UploadSource, Document, Filter, FindOptions, Update } from './actors/data/index.ts';

export { sandboxes, Sandboxes, SANDBOX_ERRORS } from './actors/sandbox/index.ts';
export type { SandboxInfo, SandboxState, CreateSandbox, ExecCommandOptions, ExecResult, CommandChunk } from './actors/sandbox/index.ts';

export type { Emailer, EmailerConfig } from './actors/identity/index.ts';
export { sv, RemoteWalker, SvCallError } from './transports/sv/index.ts';
export type { SvModule, SvImportOptions, SvCallOptions, SvHooks, SvTestClient } from './transports/sv/index.ts';

/** An uploaded file held in memory (within `max_body_bytes`). */
export interface UploadInMemory {
  filename: string;
  mimetype: string;
  size: number;
  data: Uint8Array;
}

/** An uploaded file of a `T.Upload({ maxBytes })` field: in memory (`data`), or, past `max_body_bytes`, on disk (`path`, removed once the request is answered). */
export interface UploadStreamed {
  filename: string;
  mimetype: string;
  size: number;
  data?: Uint8Array;
  path?: string;
}

/**
 * A multipart file field (`UploadFile`). `maxBytes`: this field's own limit;
 * above `max_body_bytes` its files stream to disk as they arrive (hand the
 * value to `store().upload` as it is). Over the limit: 413.
 */
function Upload(options?: Record<string, unknown> & { maxBytes?: undefined }): ReturnType<typeof Type.Unsafe<UploadInMemory>>;
function Upload(options: Record<string, unknown> & { maxBytes: number }): ReturnType<typeof Type.Unsafe<UploadStreamed>>;
function Upload(options: Record<string, unknown> = {}) {
  const maxBytes = options.maxBytes;
  if (maxBytes !== undefined && (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < 1)) {
    throw new TypeError(`T.Upload({ maxBytes }): a whole number of bytes ≥ 1, got ${JSON.stringify(maxBytes)}`);
  }
  return Type.Unsafe<UploadStreamed>({
    ...options,
    type: 'object',
    'x-svc-upload': true,
    properties: {
      filename: { type: 'string' },
      mimetype: { type: 'string' },
      size: { type: 'number' },
    },
  });
}

/**
 * TypeBox's `Type`, plus `T.Upload()` for file fields.
 *
 * @example
 * static has = T.Object({ title: T.String(), done: T.Boolean({ default: false }) });
 */
export const T = Object.assign(Object.create(Type) as typeof Type, { Upload });
