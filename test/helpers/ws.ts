// A WebSocket client at the byte level: it does the handshake, then reads
// frames but never answers pings (or, paused, never reads at all) — what a
// dead or slow peer looks like to the server.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { WalkerSocket } from 'svc/client';

export interface RawSocket {
  socket: Socket;
  /** Pings received so far. */
  pings: number;
  /** Text frames received so far. */
  texts: string[];
  /** Bytes received after the handshake. */
  bytes: number;
  /** The server's close frame (code and reason), or code -1 if the TCP connection ended without one. */
  closeFrame: Promise<{ code: number; reason: string }>;
  /** Send a text frame (masked, as a client must). */
  send(text: string): void;
}

export function rawSocket(port: number, path: string, options: { paused?: boolean } = {}): Promise<RawSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let upgraded = false;
    let resolveClose!: (c: { code: number; reason: string }) => void;
    const closeFrame = new Promise<{ code: number; reason: string }>((r) => (resolveClose = r));
    const out: RawSocket = {
      socket,
      pings: 0,
      texts: [],
      bytes: 0,
      closeFrame,
      send(text: string) {
        const payload = Buffer.from(text);
        const mask = randomBytes(4);
        const head = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 255]);
        const masked = Buffer.from(payload.map((b, i) => b ^ (mask[i % 4] as number)));
        socket.write(Buffer.concat([head, mask, masked]));
      },
    };
    socket.on('error', () => resolveClose({ code: -1, reason: 'socket error' }));
    socket.on('close', () => resolveClose({ code: -1, reason: 'closed without a close frame' }));
    socket.on('connect', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString();
        if (!/^HTTP\/1\.1 101/.test(head)) {
          reject(new Error(`no upgrade: ${head.split('\r\n')[0]}`));
          socket.destroy();
          return;
        }
        upgraded = true;
        buf = buf.subarray(end + 4);
        if (options.paused) socket.pause();
        resolve(out);
      }
      out.bytes += chunk.length;
      // Server frames are unmasked.
      for (;;) {
        if (buf.length < 2) return;
        const opcode = (buf[0] as number) & 0x0f;
        let len = (buf[1] as number) & 0x7f;
        let off = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          off = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          off = 10;
        }
        if (buf.length < off + len) return;
        const payload = buf.subarray(off, off + len);
        buf = buf.subarray(off + len);
        if (opcode === 0x9) out.pings++;
        else if (opcode === 0x1) out.texts.push(payload.toString());
        else if (opcode === 0x8) resolveClose({ code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString() });
      }
    });
  });
}

type Frame = Record<string, unknown>;

/**
 * A WalkerSocket that keeps the frames the server sends on its own (room and user messages, presence, joined/left),
 * and `until(pred, count)` waiting for that many of them.
 */
export function typedFrames(ws: WalkerSocket): { ws: WalkerSocket; frames: Frame[]; until: (pred: (f: Frame) => boolean, count?: number) => Promise<Frame[]> } {
  const frames: Frame[] = [];
  const waiters: (() => void)[] = [];
  ws.onTyped((f) => {
    frames.push(f);
    for (const w of waiters.splice(0)) w();
  });
  const until = async (pred: (f: Frame) => boolean, count = 1): Promise<Frame[]> => {
    for (;;) {
      const got = frames.filter(pred);
      if (got.length >= count) return got;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { ws, frames, until };
}
