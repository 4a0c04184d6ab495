/**
 * The {@link Transport} of one thread: a batching {@link PortLink} to every
 * other thread of the process (the main thread and each worker). Node ids
 * carry their process (`<process>/<thread>`); the thread part alone (`w1`,
 * `main`) is accepted as a short name for a node of this process.
 */
import { processOf, type Frame, type Transport, type TransportHandler } from '../../kernel/index.ts';
import { PortLink, type PortLike } from './port-link.ts';

/**
 * @example
 * const transport = new ThreadTransport('p1/w1', ['p1/main', 'p1/w1', 'p1/w2'])
 * transport.addPeer('p1/main', parentPort)
 * const system = new ActorSystem({ transport })
 */
export class ThreadTransport implements Transport {
  private readonly links = new Map<string, PortLink>();
  private readonly down = new Set<string>();
  private handler: TransportHandler | undefined;
  private all: string[];
  private live: readonly string[];
  private readonly process: string;

  constructor(
    readonly nodeId: string,
    nodes: readonly string[],
  ) {
    this.all = [...nodes];
    this.live = [...this.all];
    this.process = processOf(nodeId);
  }

  /**
   * Connect a peer thread; `onControl` receives the non-frame messages of that
   * port. A peer that was down (a replaced thread) stays down until {@link markUp}.
   */
  addPeer(node: string, port: PortLike, onControl?: (msg: unknown) => void): PortLink {
    const full = this.resolve(node);
    const link = new PortLink(full, port, () => this.handler, (peer) => this.markDown(peer), onControl);
    this.links.get(full)?.detach();
    this.links.set(full, link);
    if (!this.all.includes(full)) {
      // New arrays, never changed in place: callers keep the list they were given (and caches key on it).
      this.all = [...this.all, full];
      this.down.add(full);
      this.live = this.all.filter((n) => !this.down.has(n));
    }
    return link;
  }

  link(node: string): PortLink | undefined {
    return this.links.get(this.resolve(node));
  }

  resolve(node: string): string {
    return node.includes('/') || !this.process ? node : `${this.process}/${node}`;
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
    const full = this.resolve(node);
    if (this.down.has(full) || full === this.nodeId) return;
    this.down.add(full);
    this.live = this.all.filter((n) => !this.down.has(n));
    this.links.get(full)?.down();
    this.handler?.onNodeDown(full);
  }

  /** A peer (a replacement thread, with a link from {@link addPeer}) is ready: it takes its share of actors again. */
  markUp(node: string): void {
    const full = this.resolve(node);
    // This thread itself: the others count it in now.
    if (full === this.nodeId) return void this.handler?.onNodeUp(full);
    if (!this.down.has(full)) return;
    this.down.delete(full);
    this.live = this.all.filter((n) => !this.down.has(n));
    this.handler?.onNodeUp(full);
  }

  /** Flush what is queued and close every link. */
  async close(): Promise<void> {
    for (const link of this.links.values()) link.close();
  }
}
