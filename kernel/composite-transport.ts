/**
 * Several transports as one: frames go to the transport that reaches their
 * node (the threads of this process over MessagePorts, other processes over
 * a socket or Redis). The kernel sees one {@link Transport}.
 */
import type { Frame, Transport, TransportHandler } from './transport.ts';

/**
 * @example
 * const transport = new CompositeTransport(threads.nodeId, [threads, processes]);
 * const system = new ActorSystem({ transport });
 */
export class CompositeTransport implements Transport {
  private readonly route = new Map<string, Transport>();

  constructor(
    readonly nodeId: string,
    private readonly parts: readonly Transport[],
  ) {
    for (const part of parts) if (part.nodeId !== nodeId) throw new Error(`transport node ${part.nodeId} is not ${nodeId}`);
  }

  /** The parts' lists the last answer was made of, and that answer: the same list while no part's changed. */
  private lists: (readonly string[])[] = [];
  private merged: readonly string[] = [];

  nodes(): readonly string[] {
    let same = this.lists.length === this.parts.length;
    for (let i = 0; same && i < this.parts.length; i++) same = (this.parts[i] as Transport).nodes() === this.lists[i];
    if (same) return this.merged;
    const lists = this.parts.map((part) => part.nodes());
    const seen = new Set<string>();
    for (const list of lists) for (const node of list) seen.add(node);
    this.lists = lists;
    this.merged = [...seen];
    return this.merged;
  }

  resolve(node: string): string {
    for (const part of this.parts) {
      const full = part.resolve?.(node);
      if (full !== undefined && full !== node) return full;
    }
    return node;
  }

  /** The first part that lists `node` among its nodes (cached until it stops listing it). */
  private partOf(node: string): Transport | undefined {
    const cached = this.route.get(node);
    if (cached && cached.nodes().includes(node)) return cached;
    for (const part of this.parts) {
      if (part.nodes().includes(node)) {
        this.route.set(node, part);
        return part;
      }
    }
    this.route.delete(node);
    return undefined;
  }

  send(node: string, frame: Frame): boolean {
    return this.partOf(node)?.send(node, frame) ?? false;
  }

  attach(handler: TransportHandler): void {
    for (const part of this.parts) part.attach(handler);
  }

  async close(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.close()));
  }
}
