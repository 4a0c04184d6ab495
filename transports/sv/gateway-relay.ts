/**
 * The gateway's WebSocket relay: an upgrade relayed as raw TCP to its module
 * (its head written again with `X-Forwarded-*`), then bytes both ways once the
 * module switched; an upgrade refused by the gateway itself answers a raw
 * HTTP/1.1 envelope.
 */
import type { IncomingMessage } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { failure, newRequestId } from '../http/index.ts';
import { reason } from './gateway-errors.ts';
import { forwarded, JSON_TYPE, targetOf } from './gateway-proxy.ts';
import type { Upstream } from './gateway-upstream.ts';

/** What relays share: the open sockets (closed with the gateway) and the reachability log. */
interface RelayContext {
  relayed: Set<Socket>;
  reachable: (name: string, ok: boolean, why?: string) => void;
}

/**
 * Relay an upgrade as raw TCP to module `u`: the request head is written
 * again with `X-Forwarded-*` added, the module's answer goes back as it is;
 * once it switched (101), bytes flow both ways until either side closes.
 */
export function relay(ctx: RelayContext, u: Upstream, req: IncomingMessage, client: Socket, head: Buffer): void {
  const tls = u.url.protocol === 'https:';
  const host = u.url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.url.port || (tls ? 443 : 80));
  const upstream = tls ? tlsConnect({ host, port, servername: host }) : netConnect({ host, port });
  ctx.relayed.add(upstream);
  // connecting → answering → (piped | done)
  let state: 'connecting' | 'answering' | 'piped' | 'done' = 'connecting';
  let answer = Buffer.alloc(0);
  upstream.once(tls ? 'secureConnect' : 'connect', () => {
    state = 'answering';
    const fwd = forwarded(req);
    const lines = [`${req.method} ${u.prefix}${targetOf(req.url ?? '/')} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] as string;
      if (!(name.toLowerCase() in fwd)) lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
    }
    for (const [k, v] of Object.entries(fwd)) lines.push(`${k}: ${v}`);
    // Only the upgrade's head: bytes the client sent after it (`head`) follow once the module switched. Sent now,
    // a request pipelined behind a refused upgrade reached the module, and its answer went back to the client.
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
  const onData = (chunk: Buffer) => {
    answer = Buffer.concat([answer, chunk]);
    if (answer.indexOf('\r\n\r\n') < 0 && answer.length < 64 * 1024) return;
    upstream.off('data', onData);
    ctx.reachable(u.name, true);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer.subarray(0, 32).toString('latin1'))?.[1] ?? 0);
    if (status !== 101) {
      // Not switched: that one answer goes back and both connections close. Piping on would turn the client's
      // socket into a raw tunnel to the module (its built-in routes, past the gateway's routing and checks).
      state = 'done';
      ctx.relayed.delete(upstream);
      upstream.destroy();
      client.end(answer);
      return;
    }
    state = 'piped';
    client.write(answer);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  };
  upstream.on('data', onData);
  upstream.once('error', (error) => {
    if (state === 'done') return;
    if (state === 'piped' || client.destroyed) return void client.destroy();
    state = 'done';
    const why = reason(error);
    ctx.reachable(u.name, false, why);
    ctx.relayed.delete(upstream);
    upstream.destroy();
    client.end(rawEnvelope(502, 'Bad Gateway', 'MODULE_UNREACHABLE', `module ${u.name} is unreachable: ${why}`, req));
  });
  // A close on either side ends the other once what it was sent is written.
  upstream.once('close', () => {
    ctx.relayed.delete(upstream);
    if (state !== 'done') endSoon(client);
  });
  client.once('close', () => endSoon(upstream));
}

/** End a socket and destroy it once its last bytes are written. */
function endSoon(socket: Socket): void {
  if (socket.destroyed) return;
  socket.end(() => socket.destroy());
}

/** A whole HTTP/1.1 error response with an envelope, closing the connection (upgrades have no ServerResponse). */
export function rawEnvelope(status: number, text: string, code: string, message: string, req: IncomingMessage): string {
  const body = failure({ code, message }, newRequestId(req.headers['x-request-id'] as string | undefined));
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: ${JSON_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}
