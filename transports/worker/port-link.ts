/**
 * One direction-pair between two threads over a MessagePort, with batching:
 * frames sent in the same turn of the loop leave in one message, so many small messages
 * do not each pay a thread wake-up.
 */
import type { Frame, TransportHandler } from '../../kernel/index.ts';
import { decodeFrames, encodeFrames } from '../codec/index.ts';

/** The part of a MessagePort (or `parentPort`, or a `Worker`) a link uses. */
export interface PortLike {
  postMessage(value: unknown, transfer?: readonly ArrayBuffer[]): void;
  on(event: 'message', fn: (value: unknown) => void): unknown;
  on(event: 'close', fn: () => void): unknown;
  off(event: 'message', fn: (value: unknown) => void): unknown;
  close?(): void;
  unref?(): void;
  ref?(): void;
}


/** Batches of this many bytes or more are transferred to the other thread, smaller ones copied. */
const TRANSFER_FROM = 16 * 1024;

/** Most frames in one batch before it is flushed regardless of the tick. */
const MAX_BATCH = 2048;

export class PortLink {
  private out: Frame[] = [];
  private scheduled = false;
  private closed = false;
  /** Batches and frames sent, for the curious (benchmarks, tests). */
  batches = 0;
  frames = 0;

  constructor(
    readonly peer: string,
    private readonly port: PortLike,
    private handler: () => TransportHandler | undefined,
    private readonly onDown: (peer: string) => void,
    /** Non-frame messages on the same port (control messages). */
    private readonly onControl: (msg: unknown) => void = () => undefined,
  ) {
    port.on('message', this.receive);
    port.on('close', () => this.down());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  send(frame: Frame): boolean {
    if (this.closed) return false;
    this.out.push(frame);
    if (this.out.length >= MAX_BATCH) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      // At the end of this turn of the loop (its check phase), not the next microtask: a thread
      // answering many sockets in one turn (uWS calls back once per request, microtasks drain
      // after each) sends them all in one message instead of one message and one wake-up each.
      setImmediate(this.flush);
    }
    return true;
  }

  readonly flush = (): void => {
    this.scheduled = false;
    if (this.closed || this.out.length === 0) return;
    const frames = this.out;
    this.out = [];
    let bytes: Uint8Array;
    try {
      bytes = encodeFrames(frames);
    } catch {
      this.flushOneByOne(frames);
      return;
    }
    this.post(bytes, frames.length);
  };

  /** A batch would not encode: find the frames that do not, and answer them with errors. */
  private flushOneByOne(frames: Frame[]): void {
    const good: Frame[] = [];
    for (const frame of frames) {
      try {
        encodeFrames([frame]);
        good.push(frame);
      } catch (error) {
        if (frame.t === 3) {
          const message = `the reply could not be encoded: ${(error as Error).message}`;
          good.push({ t: 3, id: frame.id, ok: false, error: { code: 'SVC_ERR_TRANSPORT', message, status: 500 } });
        } else {
          this.handler()?.onUndeliverable(this.peer, frame, error);
        }
      }
    }
    if (good.length) this.post(encodeFrames(good), good.length);
  }

  private post(bytes: Uint8Array, count: number): void {
    try {
      // A small batch is copied (cheaper than handing its buffer over: a microsecond a round trip); a large one moves.
      if (bytes.byteLength < TRANSFER_FROM) this.port.postMessage(bytes);
      else this.port.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
      this.batches++;
      this.frames += count;
    } catch {
      this.down();
    }
  }

  private readonly receive = (value: unknown): void => {
    if (!(value instanceof Uint8Array)) {
      this.onControl(value);
      return;
    }
    const handler = this.handler();
    if (!handler) return;
    let frames: Frame[];
    try {
      frames = decodeFrames(value, handler.refFromAddress);
    } catch (error) {
      console.error(`[svc worker transport] undecodable batch from ${this.peer}:`, error);
      return;
    }
    for (let i = 0; i < frames.length; i++) {
      try {
        handler.onFrame(this.peer, frames[i] as Frame);
      } catch (error) {
        // One bad frame must not cost the rest of the batch.
        console.error(`[svc worker transport] frame from ${this.peer} failed:`, error);
      }
    }
  };

  /** The peer is gone (its thread exited, or the port closed). */
  down(): void {
    if (this.closed) return;
    this.closed = true;
    this.out = [];
    this.port.off('message', this.receive);
    this.onDown(this.peer);
  }

  /** Replaced by a new link to the same node (a replacement thread): stop listening, say nothing. */
  detach(): void {
    this.closed = true;
    this.out = [];
    this.port.off('message', this.receive);
  }

  close(): void {
    this.flush();
    this.closed = true;
    this.port.off('message', this.receive);
    this.port.close?.();
  }
}
