/**
 * Process links: kernel frames between the processes of a cluster, over one
 * TCP connection per direction between two processes' main threads.
 *
 * Worker threads hand their encoded batches to their main thread (see the
 * worker pool's relay); the main thread writes them here unopened, prefixed
 * with the sending and the receiving node, and the other side's main thread
 * hands them to the receiving worker. Writes of one tick leave in one system
 * call (the socket is corked until the next tick), as the worker transport
 * batches frames per tick.
 *
 * Why TCP and not Redis: a frame through Redis pub/sub costs a round trip to
 * the Redis server on each side and puts every message of the cluster on one
 * server; a direct link is one hop and scales with the members (measured in
 * bench/cluster.ts).
 *
 * A link is authenticated: the accepting side sends a random challenge, the
 * connecting side answers with an HMAC of it under the cluster's shared
 * secret (its JWT secret, which every member must share anyway) and its
 * process id; a wrong answer closes the socket. Nothing is read before that.
 *
 * Wire: every message is `[u32 length][u8 type][payload]`. Types: 0 challenge
 * (32 random bytes), 1 hello (`u16 id length, id, 32-byte mac`), 2 data
 * (`u16 from length, from, u16 to length, to, bytes`).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

const CHALLENGE = 0;
const HELLO = 1;
const DATA = 2;
/** The largest message a link takes (a batch of frames); past it the link is closed as broken. */
const MAX_MESSAGE = 64 * 1024 * 1024;
/** Bytes queued for a peer that is not connected (yet) before sends are refused. */
const MAX_QUEUED = 64 * 1024 * 1024;

export interface ProcessLinksOptions {
  /** This process's id in the cluster. */
  processId: string;
  cluster: string;
  /** The shared secret links prove they know. */
  secret: string;
  /** Where to listen (the `--host` address). */
  host: string;
  port?: number;
  /** Bytes from node `from` (another process) for node `to` (of this process). */
  onBytes(from: string, to: string, bytes: Uint8Array): void;
  /**
   * The connection to a peer failed or closed. `refused`: nothing listens at
   * its address any more (its process is gone) — a strong hint, not proof.
   */
  onPeerTrouble?(processId: string, refused: boolean): void;
  onError?(message: string): void;
}

function frame(type: number, payload: Buffer): Buffer {
  const head = Buffer.allocUnsafe(5);
  head.writeUInt32BE(payload.length + 1, 0);
  head.writeUInt8(type, 4);
  return Buffer.concat([head, payload]);
}

function mac(secret: string, cluster: string, id: string, nonce: Buffer): Buffer {
  return createHmac('sha256', secret).update(`svc-link\n${cluster}\n${id}\n`).update(nonce).digest();
}

/** Splits a byte stream into `[type, payload]` messages. */
class Reader {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly onMessage: (type: number, payload: Buffer) => void) {}
  /** False when the stream is broken (a message too large). */
  push(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size >= 4) {
      let head = this.chunks[0] as Buffer;
      if (head.length < 4) {
        head = Buffer.concat(this.chunks);
        this.chunks = [head];
      }
      const length = head.readUInt32BE(0);
      if (length < 1 || length > MAX_MESSAGE) return false;
      if (this.size < 4 + length) return true;
      const all = this.chunks.length === 1 ? head : Buffer.concat(this.chunks);
      const type = all.readUInt8(4);
      const payload = all.subarray(5, 4 + length);
      const rest = all.subarray(4 + length);
      this.chunks = rest.length ? [rest] : [];
      this.size = rest.length;
      this.onMessage(type, payload);
    }
    return true;
  }
}

/** The outbound link to one peer: connects, proves itself, queues until then, reconnects while wanted. */
class Peer {
  private socket: Socket | undefined;
  private ready = false;
  private queue: Buffer[] = [];
  private queued = 0;
  private corked = false;
  private wanted = true;
  private backoffMs = 50;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: string,
    public address: string,
    private readonly options: ProcessLinksOptions,
  ) {
    this.dial();
  }

  private dial(): void {
    if (!this.wanted) return;
    const i = this.address.lastIndexOf(':');
    const host = this.address.slice(0, i).replace(/^\[|\]$/g, '');
    const port = Number(this.address.slice(i + 1));
    const socket = createConnection({ host, port });
    socket.setNoDelay(true);
    this.socket = socket;
    const reader = new Reader((type, payload) => {
      if (type !== CHALLENGE || this.ready) return void socket.destroy();
      const id = Buffer.from(this.options.processId);
      const idLength = Buffer.allocUnsafe(2);
      idLength.writeUInt16BE(id.length);
      socket.write(frame(HELLO, Buffer.concat([idLength, id, mac(this.options.secret, this.options.cluster, this.options.processId, payload)])));
      this.ready = true;
      this.backoffMs = 50;
      const queue = this.queue;
      this.queue = [];
      this.queued = 0;
      if (queue.length) socket.write(queue.length === 1 ? (queue[0] as Buffer) : Buffer.concat(queue));
    });
    socket.on('data', (chunk: Buffer) => {
      if (!reader.push(chunk)) socket.destroy();
    });
    let refused = false;
    socket.on('error', (error: NodeJS.ErrnoException) => {
      refused = error.code === 'ECONNREFUSED';
    });
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.ready = false;
      if (!this.wanted) return;
      this.options.onPeerTrouble?.(this.id, refused);
      this.timer = setTimeout(() => this.dial(), this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, 1000);
    });
  }

  send(message: Buffer): boolean {
    if (!this.wanted) return false;
    const socket = this.socket;
    if (!socket || !this.ready) {
      if (this.queued + message.length > MAX_QUEUED) return false;
      this.queue.push(message);
      this.queued += message.length;
      return true;
    }
    if (!this.corked) {
      // Everything written in this tick leaves in one system call.
      this.corked = true;
      socket.cork();
      process.nextTick(() => {
        this.corked = false;
        socket.uncork();
      });
    }
    socket.write(message);
    return true;
  }

  close(): void {
    this.wanted = false;
    clearTimeout(this.timer);
    this.queue = [];
    this.queued = 0;
    this.socket?.end();
    this.socket = undefined;
  }
}

/**
 * @example
 * const links = await ProcessLinks.listen({ processId, cluster, secret, host: '127.0.0.1', onBytes: (from, to, b) => pool.deliver(to, from, b) });
 * links.connect('p2', '127.0.0.1:41234');
 * links.send('p1/w1', 'p2/w2', bytes);
 */
export class ProcessLinks {
  private readonly peers = new Map<string, Peer>();
  private readonly inbound = new Set<Socket>();
  private closed = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly options: ProcessLinksOptions,
  ) {}

  /** Listen on `host:port` (port 0: any free one) and take authenticated links. */
  static async listen(options: ProcessLinksOptions): Promise<ProcessLinks> {
    const server = createServer();
    server.listen(options.port ?? 0, options.host);
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e as Error))]);
    const links = new ProcessLinks(server, (server.address() as { port: number }).port, options);
    server.on('connection', (socket) => links.accept(socket));
    return links;
  }

  private accept(socket: Socket): void {
    if (this.closed) return void socket.destroy();
    socket.setNoDelay(true);
    this.inbound.add(socket);
    const nonce = randomBytes(32);
    let peer: string | undefined;
    const reader = new Reader((type, payload) => {
      if (peer === undefined) {
        if (type !== HELLO || payload.length < 2) return void socket.destroy();
        const idLength = payload.readUInt16BE(0);
        const id = payload.subarray(2, 2 + idLength).toString();
        const given = payload.subarray(2 + idLength);
        const expected = mac(this.options.secret, this.options.cluster, id, nonce);
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          this.options.onError?.(`a process link from ${socket.remoteAddress} did not prove the cluster secret: closed`);
          return void socket.destroy();
        }
        peer = id;
        return;
      }
      if (type !== DATA) return void socket.destroy();
      const fromLength = payload.readUInt16BE(0);
      const from = payload.subarray(2, 2 + fromLength).toString();
      const toLength = payload.readUInt16BE(2 + fromLength);
      const to = payload.subarray(4 + fromLength, 4 + fromLength + toLength).toString();
      // The sender's nodes are its own: a peer cannot speak for another process.
      if (!from.startsWith(`${peer}/`)) return void socket.destroy();
      // A copy that owns its memory: it is handed on to a worker thread.
      const bytes = new Uint8Array(payload.subarray(4 + fromLength + toLength));
      this.options.onBytes(from, to, bytes);
    });
    socket.on('data', (chunk: Buffer) => {
      if (!reader.push(chunk)) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => this.inbound.delete(socket));
    socket.write(frame(CHALLENGE, nonce));
  }

  /** Keep a link to the process `id` at `address` (`host:port`); an address change reconnects. */
  connect(id: string, address: string): void {
    if (this.closed || id === this.options.processId) return;
    const peer = this.peers.get(id);
    if (peer && peer.address === address) return;
    peer?.close();
    this.peers.set(id, new Peer(id, address, this.options));
  }

  /** The process `id` left the cluster: drop its link and what was queued for it. */
  disconnect(id: string): void {
    this.peers.get(id)?.close();
    this.peers.delete(id);
  }

  /** Processes with a link. */
  connected(): string[] {
    return [...this.peers.keys()];
  }

  /** Send a batch from node `from` (of this process) to node `to` (of the process before its `/`); false when there is no link to it. */
  send(from: string, to: string, bytes: Uint8Array): boolean {
    const process = to.slice(0, to.lastIndexOf('/'));
    const peer = this.peers.get(process);
    if (!peer) return false;
    const f = Buffer.from(from);
    const t = Buffer.from(to);
    const head = Buffer.allocUnsafe(9 + f.length + t.length);
    head.writeUInt32BE(1 + 4 + f.length + t.length + bytes.length, 0);
    head.writeUInt8(DATA, 4);
    head.writeUInt16BE(f.length, 5);
    f.copy(head, 7);
    head.writeUInt16BE(t.length, 7 + f.length);
    t.copy(head, 9 + f.length);
    return peer.send(Buffer.concat([head, bytes]));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const peer of this.peers.values()) peer.close();
    this.peers.clear();
    for (const socket of this.inbound) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
