/**
 * The seam between the kernel and whatever carries messages to other threads
 * or processes. The kernel speaks in {@link Frame}s; a transport moves them
 * (batching, encoding) and reports nodes that go down. The kernel never
 * imports a concrete transport.
 */
import type { ActorRef, RefAddress } from './refs.ts';

/** An actor path on the receiving node, or a virtual actor `[kind, key]`. */
export type FrameTarget = string | [kind: string, key: string];

/** An error as it crosses a thread: plain data, rebuilt as an `SvcError`. */
export interface WireError {
  code: string;
  message: string;
  status: number;
  name?: string;
  details?: unknown;
  /** The stack of app code that failed (see `SvcError.appStack`). */
  appStack?: string;
}

export type Frame =
  /** A tell; `fw` marks one forwarded by a node that does not host its virtual actor (delivered where it lands, never forwarded twice). */
  | { t: 1; to: FrameTarget; msg: unknown; fw?: 1 }
  | { t: 2; id: number; to: FrameTarget; msg: unknown }
  | { t: 3; id: number; ok: true; value: unknown }
  | { t: 3; id: number; ok: false; error: WireError };

/** What the kernel gives a transport when it attaches. */
export interface TransportHandler {
  /** A frame arrived from `from`. */
  onFrame(from: string, frame: Frame): void;
  /** `node` is gone: asks pending on it must fail now (with `error` when the transport knows why, else `SVC_ERR_NODE_DOWN`). */
  onNodeDown(node: string, error?: unknown): void;
  /**
   * The way to or from `node` broke (a connection between processes dropped):
   * what was in flight may be lost, so asks pending on it fail now (with
   * `error`, else `SVC_ERR_NODE_DOWN`) instead of waiting out their deadline.
   * The node stays up: placement is unchanged, later frames go over a new
   * connection.
   */
  onLinkLost?(node: string, error?: unknown): void;
  /** `node` is reachable (again, or for the first time): placement may give it actors. */
  onNodeUp(node: string): void;
  /** `node` is leaving (a graceful stop): placement gives it no actors, but it still answers what it was sent. */
  onNodeLeaving?(node: string): void;
  /** A tell or ask the transport could not send (it would not encode): a dead letter, or a failed ask. */
  onUndeliverable(node: string, frame: Frame, error: unknown): void;
  /** Rebuild a ref that travelled inside a message. */
  refFromAddress(address: RefAddress): ActorRef;
}

/**
 * @example
 * const system = new ActorSystem({ transport: await workerTransport() })
 */
export interface Transport {
  /** This node's id (unique among connected nodes). */
  readonly nodeId: string;
  /** Nodes reachable now, this one included, in a stable order. */
  nodes(): readonly string[];
  /** The full id for a short one (`w1` → `<process>/w1`), when the transport knows it. */
  resolve?(node: string): string;
  /** Queue a frame for `node`; `false` when the node is unknown or down. */
  send(node: string, frame: Frame): boolean;
  attach(handler: TransportHandler): void;
  close(): Promise<void>;
}
