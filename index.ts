/**
 * svc — the public API an app codes against.
 *
 * @example
 * import { Node, Walker, Root, entry, fn, T } from 'svc';
 */
import Type from 'typebox';

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
} from './actors/walker/index.ts';
export type { NodeFilter, FnContext, Caller, RestSpec, ArchetypeClass, WalkerClass } from './actors/walker/index.ts';
export { Graph, MemoryStore, SqliteStore, defaultStorePath, openAnchorStore, registerAnchorStore } from './actors/anchor/index.ts';
export type { AnchorStore, WalkerResult, FunctionResult } from './actors/anchor/index.ts';
export { Registry } from './actors/walker/index.ts';
export { SvcError } from './kernel/index.ts';
export { publish, subscribe, broker, spawn, broadcast, dedupe } from './actors/consumer/index.ts';
export type { Subscription, SubscribeOptions, EventHandler, HandlerContext, SpawnAsOptions } from './actors/consumer/index.ts';
export { Event } from './cluster/index.ts';
export type { EventInit, Broker, RetrySettings } from './cluster/index.ts';
export { registerEmailer, openUsersRepository, registerUsersRepository } from './actors/identity/index.ts';
export type { Emailer, EmailerConfig } from './actors/identity/index.ts';

/** A multipart file field (`UploadFile`): `{ filename, mimetype, size, data }` once uploaded. */
function Upload(options: Record<string, unknown> = {}) {
  return Type.Unsafe<{ filename: string; mimetype: string; size: number; data: Uint8Array }>({
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
