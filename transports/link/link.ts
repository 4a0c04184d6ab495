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
 * A link is authenticated both ways under the cluster's shared secret (its
 * JWT secret, which every member must share anyway): the accepting side sends
 * a random challenge, the dialling side answers with its own nonce and an
 * HMAC binding both nonces, its process id and the process it meant to dial;
 * the accepting side answers with an HMAC proving it is that process. Every
 * data message then carries an HMAC (a session key from both nonces, and a
 * sequence number), so a relay in between can neither inject nor replay.
 * Before the handshake a connection may send at most a few hundred bytes and
 * must finish within 5 s. The link is not encrypted: run members on a private
 * network (as their Redis).
 *
 * Replies travel on the link of the side that answers: a process can answer
 * only the processes it links to (the members it counts in). What arrives
 * from another one may be refused (`onBytes` answers false): the connection
 * is closed, so the sender learns at once. Whenever a connection with a
 * process drops — its inbound one, or an outbound one that was up — the
 * owner hears `onLinkDown`: what was in flight on it may be lost, and the
 * replies a process waits for from that one cannot come back that way.
 *
 * Wire: every message is `[u32 length][u8 type][payload]`. Types: 0 challenge
 * (32 random bytes), 1 hello (`u16 id length, id, 32-byte nonce, 32-byte mac`),
 * 3 welcome (32-byte mac), 2 data (`16-byte mac, u16 from length, from, u16 to
 * length, to, bytes`).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

const CHALLENGE = 0;
const HELLO = 1;
const DATA = 2;
const WELCOME = 3;
/** The most a connection may send before it has proved itself. */
const MAX_HANDSHAKE = 512;
const HANDSHAKE_TIMEOUT_MS = 5000;
/** Connections still proving themselves at once, past which new ones are closed. */
const MAX_PENDING = 64;
const MAC_BYTES = 16;
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
  /**
   * Bytes from node `from` (another process) for node `to` (of this process).
   * `false`: refused (what it asked cannot be answered): the connection is
   * closed after them, and the sender hears that its link dropped.
   */
  onBytes(from: string, to: string, bytes: Uint8Array): boolean | void;
  /**
   * A connection with `process` dropped (its link to this one, or this one's
   * to it after it was up): frames in flight on it may be lost. Not called
   * for links this side closes itself (`disconnect`, `close`).
   */
  onLinkDown?(process: string, why: string): void;
  onError?(message: string): void;
}

function frame(type: number, payload: Buffer): Buffer {
  const head = Buffer.allocUnsafe(5);
  head.writeUInt32BE(payload.length + 1, 0);
  head.writeUInt8(type, 4);
  return Buffer.concat([head, payload]);
}

function mac(secret: string, role: 'dial' | 'accept', cluster: string, from: string, to: string, challenge: Buffer, nonce: Buffer): Buffer {
  return createHmac('sha256', secret).update(`svc-link\n${role}\n${cluster}\n${from}\n${to}\n`).update(challenge).update(nonce).digest();
}

function sessionKey(secret: string, challenge: Buffer, nonce: Buffer): Buffer {
  return createHmac('sha256', secret).update('svc-link-session\n').update(challenge).update(nonce).digest();
}

/** The MAC of one data message: its sequence number on the connection and its body. */
function dataMac(key: Buffer, seq: number, body: Buffer): Buffer {
  const n = Buffer.allocUnsafe(8);
  n.writeBigUInt64BE(BigInt(seq));
  return createHmac('sha256', key).update(n).update(body).digest().subarray(0, MAC_BYTES);
}

function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `host:port` (IPv6 hosts in brackets), or undefined when it is not one. */
export function parseAddress(address: string): { host: string; port: number } | undefined {
  const i = address.lastIndexOf(':');
  if (i <= 0) return undefined;
  const host = address.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(i + 1));
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

/** Splits a byte stream into `[type, payload]` messages. */
class Reader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** The largest message taken now (small until the other side proved itself). */
  max = MAX_HANDSHAKE;
  constructor(private readonly onMessage: (type: number, payload: Buffer) => void) {}
  /** False when the stream is broken (a message too large, or one that does not parse). */
  push(chunk: Buffer): boolean {
    if (this.size + chunk.length > this.max + 5 && this.max === MAX_HANDSHAKE) return false;
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size >= 4) {
      let head = this.chunks[0] as Buffer;
      if (head.length < 4) {
        head = Buffer.concat(this.chunks);
        this.chunks = [head];
      }
      const length = head.readUInt32BE(0);
      if (length < 1 || length > this.max) return false;
      if (this.size < 4 + length) return true;
      const all = this.chunks.length === 1 ? head : Buffer.concat(this.chunks);
      const type = all.readUInt8(4);
      const payload = all.subarray(5, 4 + length);
      const rest = all.subarray(4 + length);
      this.chunks = rest.length ? [rest] : [];
      this.size = rest.length;
      try {
        this.onMessage(type, payload);
      } catch {
        return false;
      }
    }
    return true;
  }
}

/** The outbound link to one peer: connects, proves itself (and checks the peer), queues until then, reconnects while wanted. */
class Peer {
  private socket: Socket | undefined;
  private ready = false;
  private queue: Buffer[] = [];
  private queued = 0;
  private corked = false;
  private wanted = true;
  private backoffMs = 50;
  private timer: NodeJS.Timeout | undefined;
  private key: Buffer | undefined;
  private seq = 0;

  constructor(
    readonly id: string,
    public address: string,
    private readonly options: ProcessLinksOptions,
    private readonly counters: LinkCounters,
  ) {
    this.dial();
  }

  private dial(): void {
    if (!this.wanted) return;
    const target = parseAddress(this.address) as { host: string; port: number };
    const socket = createConnection(target);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 5000);
    this.socket = socket;
    const o = this.options;
    let challenge: Buffer | undefined;
    const nonce = randomBytes(32);
    const handshake = setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS);
    const reader = new Reader((type, payload) => {
      if (type === CHALLENGE && challenge === undefined && payload.length === 32) {
        challenge = Buffer.from(payload);
        const id = Buffer.from(o.processId);
        const idLength = Buffer.allocUnsafe(2);
        idLength.writeUInt16BE(id.length);
        socket.write(frame(HELLO, Buffer.concat([idLength, id, nonce, mac(o.secret, 'dial', o.cluster, o.processId, this.id, challenge, nonce)])));
        return;
      }
      if (type === WELCOME && challenge !== undefined && !this.ready) {
        // The other side proves it is the process this link meant to reach.
        if (!equal(payload, mac(o.secret, 'accept', o.cluster, this.id, o.processId, challenge, nonce))) {
          o.onError?.(`the process at ${this.address} did not prove it is member ${this.id} of this cluster (another JWT secret?): link closed`);
          return void socket.destroy();
        }
        clearTimeout(handshake);
        this.key = sessionKey(o.secret, challenge, nonce);
        this.seq = 0;
        this.ready = true;
        this.backoffMs = 50;
        const queue = this.queue;
        this.queue = [];
        this.queued = 0;
        for (const body of queue) this.write(socket, body);
        return;
      }
      socket.destroy();
    });
    socket.on('data', (chunk: Buffer) => {
      if (!reader.push(chunk)) socket.destroy();
    });
    // A failed dial is retried below (with backoff) while the member is wanted; membership decides when it is gone.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(handshake);
      if (this.socket !== socket) return;
      this.socket = undefined;
      const wasReady = this.ready;
      this.ready = false;
      if (!this.wanted) return;
      // What was written to it may never have arrived: the asks waiting on those frames must not wait out their deadline.
      if (wasReady) o.onLinkDown?.(this.id, `the link to ${this.id} at ${this.address} closed`);
      this.counters.reconnects++;
      this.timer = setTimeout(() => this.dial(), this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, 1000);
    });
  }

  /** One data message: its MAC, then the body. */
  private write(socket: Socket, body: Buffer): void {
    const tag = dataMac(this.key as Buffer, this.seq++, body);
    const head = Buffer.allocUnsafe(5);
    head.writeUInt32BE(1 + MAC_BYTES + body.length, 0);
    head.writeUInt8(DATA, 4);
    if (!this.corked) {
      // Everything written in this tick leaves in one system call.
      this.corked = true;
      socket.cork();
      process.nextTick(() => {
        this.corked = false;
        socket.uncork();
      });
    }
    socket.write(head);
    socket.write(tag);
    socket.write(body);
  }

  /** Queue or write one message body; false when the peer is too far behind (its memory would grow without bound). */
  send(body: Buffer): boolean {
    if (!this.wanted) return false;
    const socket = this.socket;
    if (!socket || !this.ready) {
      if (this.queued + body.length > MAX_QUEUED) return false;
      this.queue.push(body);
      this.queued += body.length;
      return true;
    }
    if (socket.writableLength > MAX_QUEUED) return false;
    this.write(socket, body);
    return true;
  }

  close(): void {
    this.wanted = false;
    clearTimeout(this.timer);
    this.queue = [];
    this.queued = 0;
    this.socket?.destroy();
    this.socket = undefined;
  }
}

/**
 * @example
 * const links = await ProcessLinks.listen({ processId, cluster, secret, host: '127.0.0.1', onBytes: (from, to, b) => pool.deliver(to, from, b) });
 * links.connect('p2', '127.0.0.1:41234');
 * links.send('p1/w1', 'p2/w2', bytes);
 */
/** What the links did, for metrics. */
export interface LinkCounters {
  /** Outbound links dialled again after they closed. */
  reconnects: number;
  /** Batches sent to other processes, and received from them. */
  sent: number;
  received: number;
}

export class ProcessLinks {
  readonly counters: LinkCounters = { reconnects: 0, sent: 0, received: 0 };
  private readonly peers = new Map<string, Peer>();
  /** Inbound connections, with the process each proved it is (undefined while it proves itself). */
  private readonly inbound = new Map<Socket, string | undefined>();
  private closed = false;
  /** Inbound connections still proving themselves. */
  private pending = 0;

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
    // Accept errors (out of file descriptors, say) are reported, never thrown.
    server.on('error', (error) => options.onError?.(`process link server: ${error.message}`));
    return links;
  }

  private accept(socket: Socket): void {
    if (this.closed || this.pending >= MAX_PENDING) return void socket.destroy();
    socket.setNoDelay(true);
    this.inbound.set(socket, undefined);
    this.pending++;
    let proving = true;
    const proved = (): void => {
      if (!proving) return;
      proving = false;
      this.pending--;
      clearTimeout(handshake);
    };
    const handshake = setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS);
    const o = this.options;
    const challenge = randomBytes(32);
    let peer: string | undefined;
    let key: Buffer | undefined;
    let seq = 0;
    const reader = new Reader((type, payload) => {
      if (peer === undefined) {
        if (type !== HELLO || payload.length < 2) throw new Error('expected hello');
        const idLength = payload.readUInt16BE(0);
        if (payload.length !== 2 + idLength + 64) throw new Error('bad hello');
        const id = payload.subarray(2, 2 + idLength).toString();
        const nonce = Buffer.from(payload.subarray(2 + idLength, 2 + idLength + 32));
        const given = payload.subarray(2 + idLength + 32);
        if (!equal(given, mac(o.secret, 'dial', o.cluster, id, o.processId, challenge, nonce))) {
          o.onError?.(`a process link from ${socket.remoteAddress} did not prove the cluster secret: closed`);
          throw new Error('bad proof');
        }
        peer = id;
        this.inbound.set(socket, id);
        key = sessionKey(o.secret, challenge, nonce);
        socket.write(frame(WELCOME, mac(o.secret, 'accept', o.cluster, o.processId, id, challenge, nonce)));
        reader.max = MAX_MESSAGE;
        proved();
        return;
      }
      if (type !== DATA || payload.length < MAC_BYTES + 4) throw new Error('bad data message');
      const body = payload.subarray(MAC_BYTES);
      if (!equal(payload.subarray(0, MAC_BYTES), dataMac(key as Buffer, seq++, body))) throw new Error('bad data mac');
      const fromLength = body.readUInt16BE(0);
      const from = body.subarray(2, 2 + fromLength).toString();
      const toLength = body.readUInt16BE(2 + fromLength);
      if (4 + fromLength + toLength > body.length) throw new Error('bad data lengths');
      const to = body.subarray(4 + fromLength, 4 + fromLength + toLength).toString();
      // The sender's nodes are its own: a peer cannot speak for another process.
      if (!from.startsWith(`${peer}/`)) throw new Error('a peer spoke for another process');
      // A copy that owns its memory: it is handed on to a worker thread.
      this.counters.received++;
      // Refused: nothing more is read from this connection; closing it tells the sender at once.
      if (o.onBytes(from, to, new Uint8Array(body.subarray(4 + fromLength + toLength))) === false) throw new Error('refused');
    });
    socket.on('data', (chunk: Buffer) => {
      if (!reader.push(chunk)) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      proved();
      // Closed here (disconnect, close) when no longer listed: nobody to tell.
      const listed = this.inbound.delete(socket);
      if (peer !== undefined && listed && !this.closed) o.onLinkDown?.(peer, `the link from ${peer} closed`);
    });
    socket.write(frame(CHALLENGE, challenge));
  }

  /** Keep a link to the process `id` at `address` (`host:port`); an address change reconnects. */
  connect(id: string, address: string): void {
    if (this.closed || id === this.options.processId) return;
    if (!parseAddress(address)) {
      this.options.onError?.(`member ${id} advertises an unusable link address ${JSON.stringify(address)}: not linked`);
      return;
    }
    const peer = this.peers.get(id);
    if (peer && peer.address === address) return;
    peer?.close();
    this.peers.set(id, new Peer(id, address, this.options, this.counters));
  }

  /**
   * The process `id` left the cluster: drop its link both ways (what was
   * queued for it too). It hears its link dropped, if it is still there.
   */
  disconnect(id: string): void {
    this.peers.get(id)?.close();
    this.peers.delete(id);
    for (const [socket, peer] of this.inbound) {
      if (peer !== id) continue;
      this.inbound.delete(socket);
      socket.destroy();
    }
  }

  /** Processes with a link. */
  connected(): string[] {
    return [...this.peers.keys()];
  }

  /** Whether this side links to the process `id` (so it could answer it). */
  linked(id: string): boolean {
    return this.peers.has(id);
  }

  /** Send a batch from node `from` (of this process) to node `to` (of the process before its `/`); false when there is no link to it. */
  send(from: string, to: string, bytes: Uint8Array): boolean {
    const process = to.slice(0, to.lastIndexOf('/'));
    const peer = this.peers.get(process);
    if (!peer) return false;
    const f = Buffer.from(from);
    const t = Buffer.from(to);
    const head = Buffer.allocUnsafe(4 + f.length + t.length);
    head.writeUInt16BE(f.length, 0);
    f.copy(head, 2);
    head.writeUInt16BE(t.length, 2 + f.length);
    t.copy(head, 4 + f.length);
    this.counters.sent++;
    return peer.send(Buffer.concat([head, bytes]));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const peer of this.peers.values()) peer.close();
    this.peers.clear();
    for (const socket of this.inbound.keys()) socket.destroy();
    this.inbound.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
