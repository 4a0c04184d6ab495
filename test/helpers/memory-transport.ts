// Transports between actor systems of one thread, for kernel tests: frames are handed over in a microtask, unencoded.
import type { Frame, Transport, TransportHandler } from 'svc/kernel';

export class MemoryNet {
  readonly transports = new Map<string, MemoryTransport>();
  private readonly down = new Set<string>();

  transport(nodeId: string): MemoryTransport {
    const t = new MemoryTransport(nodeId, this);
    this.transports.set(nodeId, t);
    return t;
  }

  live(): string[] {
    return [...this.transports.keys()].filter((n) => !this.down.has(n)).sort();
  }

  isDown(node: string): boolean {
    return this.down.has(node);
  }

  /** Every other node hears that `node` went down. */
  markDown(node: string): void {
    this.down.add(node);
    for (const [id, t] of this.transports) if (id !== node) t.handler?.onNodeDown(node);
  }

  /** Every other node hears that `node` is up again. */
  markUp(node: string): void {
    this.down.delete(node);
    for (const [id, t] of this.transports) if (id !== node) t.handler?.onNodeUp(node);
  }
}

export class MemoryTransport implements Transport {
  handler: TransportHandler | undefined;
  sent = 0;
  constructor(
    readonly nodeId: string,
    private readonly net: MemoryNet,
  ) {}
  nodes(): readonly string[] {
    return this.net.live();
  }
  send(node: string, frame: Frame): boolean {
    const to = this.net.transports.get(node);
    if (!to || this.net.isDown(node) || this.net.isDown(this.nodeId)) return false;
    this.sent++;
    queueMicrotask(() => to.handler?.onFrame(this.nodeId, frame));
    return true;
  }
  attach(handler: TransportHandler): void {
    this.handler = handler;
  }
  async close(): Promise<void> {}
}
