/**
 * The {@link Transport} of one thread: a batching {@link PortLink} to every
 * other thread of the process (the main thread and each worker).
 */
import type { Frame, Transport, TransportHandler } from '../../kernel/index.ts';
import { PortLink, type PortLike } from './port-link.ts';

/**
 * @example
 * const transport = new ThreadTransport('w1', ['main', 'w1', 'w2'])
 * transport.addPeer('main', parentPort)
 * const system = new ActorSystem({ transport })
 */
export class ThreadTransport implements Transport {
  private readonly links = new Map<string, PortLink>();
  private readonly down = new Set<string>();
  private handler: TransportHandler | undefined;
  private live: readonly string[];

  constructor(
    readonly nodeId: string,
    private readonly all: readonly string[],
  ) {
    this.live = all;
  }

  /** Connect a peer thread; `onControl` receives the non-frame messages of that port. */
  addPeer(node: string, port: PortLike, onControl?: (msg: unknown) => void): PortLink {
    const link = new PortLink(node, port, () => this.handler, (peer) => this.markDown(peer), onControl);
    this.links.set(node, link);
    return link;
  }

  link(node: string): PortLink | undefined {
    return this.links.get(node);
  }

  nodes(): readonly string[] {
    return this.live;
  }

  send(node: string, frame: Frame): boolean {
    const link = this.links.get(node);
    return link ? link.send(frame) : false;
  }

  attach(handler: TransportHandler): void {
    this.handler = handler;
  }

  /** A peer is gone: its link closes and the kernel fails asks pending on it. */
  markDown(node: string): void {
    if (this.down.has(node) || node === this.nodeId) return;
    this.down.add(node);
    this.live = this.all.filter((n) => !this.down.has(n));
    this.links.get(node)?.down();
    this.handler?.onNodeDown(node);
  }

  /** Flush what is queued and close every link. */
  async close(): Promise<void> {
    for (const link of this.links.values()) link.close();
  }
}
