/** What the main thread and its workers say to each other besides frames. */
import type { MessagePort } from 'node:worker_threads';
import type { ActorSystem, SystemOptions, WireError } from '../../kernel/index.ts';
import type { RelayTransport, RemoteNode } from './relay.ts';

/** Sent as `workerData` to each worker. */
export interface WorkerBoot {
  nodeId: string;
  /** The main thread's node id. */
  main: string;
  /** This thread replaces one that died (it is counted in once it is ready: `up` for itself). */
  replacement: boolean;
  nodes: string[];
  /** Path or file URL of the module whose `setup` (or default export) runs in the worker. */
  module: string;
  data: unknown;
  /** Ports to the other workers, by node id. */
  peers: Record<string, MessagePort>;
  system: Pick<SystemOptions, 'askTimeoutMs' | 'stopTimeoutMs'>;
  /** Nodes of other processes are reached through the main thread (a cluster): the ones known at start. */
  remote?: RemoteNode[];
  /** Started while `svc start` holds the young generation (heap.ts): 1 while it is held (its preload reads it). */
  hold?: Int32Array;
  /** Started while held, to serve: compact the heap once before saying it is ready. */
  settle?: boolean;
}

export type Control =
  | { ctl: 'ready' }
  | { ctl: 'failed'; error: WireError }
  | { ctl: 'down'; node: string }
  /** A replacement thread: here is a port to it (it is not up before `up`). */
  | { ctl: 'peer'; node: string; port: MessagePort }
  /** The replacement thread is ready: it takes its share of actors again. */
  | { ctl: 'up'; node: string }
  | { ctl: 'shutdown'; deadlineMs: number }
  | { ctl: 'stopped' }
  /** Take the app's code from this bundle (a file URL), in place: `swapped` answers (`restart`: it cannot be taken in place, and why). */
  | { ctl: 'swap'; id: number; app: string }
  | { ctl: 'swapped'; id: number; error?: WireError; restart?: string };

/**
 * Takes a new version of the app's module in place (`svc start --dev`);
 * resolves to undefined once it serves, or to why it cannot (the worker keeps
 * the old version then). A throw: the new version is broken (kept old too).
 */
export type AppSwap = (app: Record<string, unknown>) => Promise<string | undefined> | string | undefined;

/**
 * The function a worker module exports to define its actors. It may return
 * a cleanup function, run after the worker's actor system has shut down.
 *
 * @example
 * export function setup(system: ActorSystem) { system.spawn(echoProps, 'echo') }
 */
export type WorkerSetup = (
  system: ActorSystem,
  context: {
    nodeId: string;
    nodes: readonly string[];
    data: unknown;
    app: Record<string, unknown> | undefined;
    replacement?: boolean;
    /** Other processes' nodes, when the pool relays to them (a cluster). */
    relay?: RelayTransport;
    /** How this worker takes a new version of the app in place ({@link WorkerPool.swap}); none: it cannot. */
    onSwap?: (swap: AppSwap) => void;
  },
) => void | (() => Promise<void> | void) | Promise<void | (() => Promise<void> | void)>;
