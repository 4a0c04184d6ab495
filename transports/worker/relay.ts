/**
 * Nodes of other processes, reached through this process's main thread.
 *
 * A worker thread cannot hold a socket to another process's thread, so its
 * frames for a remote node leave, batched and encoded once, in a `relay`
 * message to the main thread, which passes the bytes on unopened (over its
 * process link) and hands what arrives for this thread back in a `relayed`
 * message. The main thread decides which remote nodes exist (it follows the
 * cluster's membership) and tells each worker with a `remote` message; the
 * kernel hears `up` and `down` for them like for threads of its own process.
 * A `link-lost` message says the connection to or from another process
 * dropped: the asks waiting on its nodes fail at once (their replies cannot
 * come back that way), while its nodes stay up.
 */
import { decodeError, processOf, type Frame, type Transport, type TransportHandler, type WireError } from '../../kernel/index.ts';
import { decodeFrames, encodeFrames } from '../codec/index.ts';
import type { PortLike } from './port-link.ts';

/** A node of another process, as the main thread describes it. */
export interface RemoteNode {
  node: string;
  /** The app fingerprint of its process (members of another app version do not share partitions). */
  app: string;
  /** Its process is leaving (a graceful stop): it takes no new actors, but answers what it has. */
  leaving?: boolean;
}

/** What the main thread and a worker say about remote nodes (besides the pool's own control messages). */
export type RelayControl =
  | { ctl: 'relay'; to: string; bytes: Uint8Array }
  | { ctl: 'relayed'; from: string; bytes: Uint8Array }
  /** The remote nodes now; asks pending on nodes gone from the list fail with `error` when given (why they are gone). */
  | { ctl: 'remote'; nodes: RemoteNode[]; error?: WireError }
  /** The link with `process` dropped: asks pending on its nodes fail (with `error` when given). */
  | { ctl: 'link-lost'; process: string; error?: WireError };

const resolved = Promise.resolve();
const MAX_BATCH = 2048;

/**
 * @example
 * const relay = new RelayTransport('p1/w1', parentPort);
 * const system = new ActorSystem({ transport: new CompositeTransport('p1/w1', [threads, relay]) });
 * relay.setRemote([{ node: 'p2/w1', app: 'a1' }]);  // from the main thread's `remote` message
 */
export class RelayTransport implements Transport {
  private handler: TransportHandler | undefined;
  private live: string[] = [];
  private readonly info = new Map<string, RemoteNode>();
  private readonly out = new Map<string, Frame[]>();
  private scheduled = false;
  private closed = false;

  constructor(
    readonly nodeId: string,
    private readonly main: PortLike,
  ) {}

  nodes(): readonly string[] {
    return this.live;
  }

  /** What the main thread said of a remote node. */
  remote(node: string): RemoteNode | undefined {
    return this.info.get(node);
  }

  attach(handler: TransportHandler): void {
    this.handler = handler;
  }

  /**
   * The main thread's view of remote nodes: the kernel hears `down` for the
   * gone (their pending asks fail with `error` when given), `up` for the new.
   */
  setRemote(nodes: readonly RemoteNode[], error?: WireError): void {
    const next = new Map(nodes.map((n) => [n.node, n]));
    const gone = this.live.filter((n) => !next.has(n));
    const added = [...next.keys()].filter((n) => !this.info.has(n));
    const leaving = [...next.values()].filter((n) => n.leaving && this.info.get(n.node)?.leaving !== true).map((n) => n.node);
    // Filters (placement by app) see the new view before the kernel places anything on it.
    this.info.clear();
    for (const [node, n] of next) this.info.set(node, n);
    this.live = [...next.keys()].sort();
    const why = error ? decodeError(error) : undefined;
    for (const node of gone) {
      this.out.delete(node);
      this.handler?.onNodeDown(node, why);
    }
    for (const node of added) this.handler?.onNodeUp(node);
    for (const node of leaving) this.handler?.onNodeLeaving?.(node);
  }

  send(node: string, frame: Frame): boolean {
    if (this.closed || !this.info.has(node)) return false;
    let queue = this.out.get(node);
    if (!queue) this.out.set(node, (queue = []));
    queue.push(frame);
    if (queue.length >= MAX_BATCH) this.flushNode(node, queue);
    else if (!this.scheduled) {
      this.scheduled = true;
      void resolved.then(this.flush);
    }
    return true;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    for (const [node, frames] of this.out) this.flushNode(node, frames);
  };

  private flushNode(node: string, frames: Frame[]): void {
    this.out.delete(node);
    if (this.closed || frames.length === 0) return;
    let bytes: Uint8Array;
    try {
      bytes = encodeFrames(frames);
    } catch {
      // One frame that will not encode must not cost the others: send them one by one.
      for (const frame of frames) {
        try {
          this.post(node, encodeFrames([frame]));
        } catch (error) {
          if (frame.t === 3) {
            this.post(node, encodeFrames([{ t: 3, id: frame.id, ok: false, error: { code: 'SVC_ERR_TRANSPORT', message: `the reply could not be encoded: ${(error as Error).message}`, status: 500 } }]));
          } else this.handler?.onUndeliverable(node, frame, error);
        }
      }
      return;
    }
    this.post(node, bytes);
  }

  private post(to: string, bytes: Uint8Array): void {
    this.main.postMessage({ ctl: 'relay', to, bytes } satisfies RelayControl, [bytes.buffer as ArrayBuffer]);
  }

  /** Bytes from a remote node, handed over by the main thread. */
  receive(from: string, bytes: Uint8Array): void {
    const handler = this.handler;
    if (!handler || this.closed) return;
    let frames: Frame[];
    try {
      frames = decodeFrames(bytes, handler.refFromAddress);
    } catch (error) {
      console.error(`[svc relay] undecodable batch from ${from}:`, error);
      return;
    }
    for (const frame of frames) {
      try {
        handler.onFrame(from, frame);
      } catch (error) {
        console.error(`[svc relay] frame from ${from} failed:`, error);
      }
    }
  }

  /** The link with `process` dropped: asks waiting on its nodes fail now (with `error` when given); its nodes stay up. */
  linkLost(process: string, error?: WireError): void {
    const why = error ? decodeError(error) : undefined;
    for (const node of this.live) if (processOf(node) === process) this.handler?.onLinkLost?.(node, why);
  }

  /** Handle a control message of the main thread; false when it is not one of the relay's. */
  control(msg: unknown): boolean {
    const c = msg as RelayControl;
    if (c?.ctl === 'relayed') this.receive(c.from, c.bytes);
    else if (c?.ctl === 'remote') this.setRemote(c.nodes, c.error);
    else if (c?.ctl === 'link-lost') this.linkLost(c.process, c.error);
    else return false;
    return true;
  }

  async close(): Promise<void> {
    this.flush();
    this.closed = true;
  }
}
