/**
 * The WebSocket part of `svc bench`: K clients connect to one broadcast
 * walker (`ws://…/ws/<walker>`, `?token=` as pool users when `auth`), then
 * frames go out at `rate` per second in total, in turn from the senders (one
 * by default), spread evenly over the run. Every other client should hear
 * each frame's reply: expected = sent × (clients − 1).
 *
 * A delivery is matched to its frame by content: the first string field of
 * the frame's body gets a marker (` #<run>.<n>`) that the walker's reports
 * echo back, and its latency is the time from sending the frame to the
 * broadcast arriving (one clock, this process). When the body has no string
 * field, deliveries are matched in order instead (the n-th broadcast a client
 * hears is taken to be the n-th frame sent — right for one sender whose frames
 * all succeed, approximate otherwise).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { createHistogram, recordUs, summarize } from './histogram.ts';
import { BenchError, type PoolUser } from './scenario.ts';
import type { BenchResult, WsScenario } from './types.ts';

export type WsResult = NonNullable<BenchResult['ws']>;

export interface WsRunOptions {
  /** http://host:port of the target. */
  origin: string;
  ws: WsScenario;
  /** Seconds of sending. */
  duration: number;
  /** The pool (needed when `ws.auth`). */
  users?: PoolUser[];
  /** How long to wait for the last deliveries after the last frame (ms, default 3,000). */
  drainMs?: number;
  /** Connect and handshake time limit per client (ms, default 10,000). */
  connectTimeoutMs?: number;
  signal?: AbortSignal;
  log?(line: string): void;
}

interface Client {
  socket: WebSocket;
  /** In-order matching: broadcasts heard so far. */
  heard: number;
  closed: boolean;
}

function connect(url: string, timeoutMs: number, walker: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { perMessageDeflate: false });
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new BenchError(`ws: no answer from ${url.replace(/token=[^&]+/, 'token=…')} within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    socket.once('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      socket.terminate();
      const why = res.statusCode === 404 ? `the target has no WebSocket walker ${walker}` : `the upgrade was refused with ${res.statusCode}`;
      reject(new BenchError(`ws.walker: ${why}${res.statusCode === 401 || res.statusCode === 403 ? ' (a private walker needs ws.auth = true and users)' : ''}`));
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(new BenchError(`ws: cannot connect to ${walker}: ${error.message}`, 1, { cause: error }));
    });
    // A pong proves the session is up (and subscribed to the broadcasts) before frames are sent.
    socket.once('open', () => socket.send('{"type":"ping"}'));
    const onMessage = (data: WebSocket.RawData) => {
      if (!String(data).includes('"pong"')) return;
      clearTimeout(timer);
      socket.off('message', onMessage);
      socket.removeAllListeners('error');
      resolve(socket);
    };
    socket.on('message', onMessage);
    socket.once('close', (code, reason) => {
      clearTimeout(timer);
      const auth = code === 4401 || code === 4403 ? ' (a private walker needs ws.auth = true and users)' : '';
      reject(new BenchError(`ws: the target closed the connection to ${walker} with ${code} ${String(reason)}${auth}`));
    });
  });
}

/**
 * Before the load: one client connects to the walker (as the first pool user with `auth`) and
 * leaves, so an unknown walker, one that is not a WebSocket walker, or a private one without
 * users is refused before the HTTP load rather than after it.
 *
 * @example await probeWs({ origin: 'http://127.0.0.1:8000', ws: { walker: 'Room', clients: 2, rate: 1 } });
 */
export async function probeWs(o: { origin: string; ws: WsScenario; users?: PoolUser[]; connectTimeoutMs?: number }): Promise<void> {
  if (o.ws.auth && !o.users?.length) throw new BenchError('ws.auth needs users: set users > 0 (or --users n)');
  const base = `${o.origin.replace(/^http/, 'ws')}/ws/${encodeURIComponent(o.ws.walker)}`;
  const url = o.ws.auth ? `${base}?token=${encodeURIComponent((o.users?.[0] as PoolUser).token)}` : base;
  const socket = await connect(url, o.connectTimeoutMs ?? 10_000, o.ws.walker);
  socket.removeAllListeners('close');
  socket.on('error', () => undefined);
  await new Promise<void>((done) => {
    socket.once('close', () => done());
    socket.close();
    setTimeout(() => {
      socket.terminate();
      done();
    }, 2000).unref();
  });
}

/** Run `work` over 0…n−1, `lanes` at a time. */
async function each(n: number, lanes: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, lanes) }, async () => {
    while (next < n) await work(next++);
  }));
}

/**
 * Connect the clients, send the frames, count and time the deliveries.
 *
 * @example
 * const ws = await runWs({ origin: 'http://127.0.0.1:8000', ws: { walker: 'Room', clients: 20, rate: 50, body: { text: 'hi' } }, duration: 10 });
 * ws.delivery_ratio; // 1 when every listener heard every frame
 */
export async function runWs(o: WsRunOptions): Promise<WsResult> {
  const { ws } = o;
  const senders = ws.senders ?? 1;
  if (ws.auth && !o.users?.length) throw new BenchError('ws.auth needs users: set users > 0 (or --users n)');
  const base = `${o.origin.replace(/^http/, 'ws')}/ws/${encodeURIComponent(ws.walker)}`;
  const urlOf = (k: number) => (ws.auth ? `${base}?token=${encodeURIComponent((o.users?.[k % (o.users?.length ?? 1)] as PoolUser).token)}` : base);
  o.log?.(`ws: connecting ${ws.clients} clients to /ws/${ws.walker}`);
  const clients: Client[] = [];
  try {
    await each(ws.clients, 64, async (k) => {
      clients[k] = { socket: await connect(urlOf(k), o.connectTimeoutMs ?? 10_000, ws.walker), heard: 0, closed: false };
    });
  } catch (error) {
    for (const c of clients) c?.socket.terminate();
    throw error;
  }

  const body = { ...(ws.body ?? {}) };
  const markField = Object.keys(body).find((k) => typeof body[k] === 'string');
  const run = randomBytes(3).toString('hex');
  const markRe = new RegExp(`#${run}\\.(\\d+)`);
  const sentAt: number[] = [];
  const hist = createHistogram();
  const errors: Record<string, number> = {};
  const bump = (code: string) => (errors[code] = (errors[code] ?? 0) + 1);
  let delivered = 0;
  let expected = 0;
  let settle: (() => void) | undefined;

  let open = clients.length;
  clients.forEach((client, k) => {
    client.socket.on('close', () => {
      client.closed = true;
      open--;
      bump('disconnected');
    });
    client.socket.on('error', () => undefined);
    client.socket.on('message', (data) => {
      const text = String(data);
      const isSender = k < senders;
      if (text.startsWith('{"ok":false')) {
        // An error frame answers the client that sent the frame.
        if (isSender) {
          let code = 'error';
          try {
            code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? 'error';
          } catch {
            // not JSON: counted as `error`
          }
          bump(code);
        }
        return;
      }
      let seq: number;
      if (markField !== undefined) {
        const m = markRe.exec(text);
        if (!m) return;
        seq = Number(m[1]);
        if (seq % senders === k) return; // the sender's own reply
      } else {
        if (!text.startsWith('{"ok":true') || /"id":\s*\d/.test(text)) return;
        seq = client.heard++;
      }
      const at = sentAt[seq];
      if (at === undefined) return;
      delivered++;
      recordUs(hist, (performance.now() - at) * 1000);
      if (delivered >= expected && settle) settle();
    });
  });

  const total = Math.max(1, Math.round(ws.rate * o.duration));
  o.log?.(`ws: sending ${total} frames at ${ws.rate}/s from ${senders} sender${senders > 1 ? 's' : ''} to ${ws.clients - 1} listeners each`);
  const start = performance.now();
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      if (o.signal?.aborted) return resolve();
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * ws.rate) + 1);
      while (sent < due) {
        const seq = sent++;
        const client = clients[seq % senders] as Client;
        if (client.closed || client.socket.readyState !== WebSocket.OPEN) {
          bump('closed');
          continue;
        }
        const frame: Record<string, unknown> = { ...body, id: seq };
        if (markField !== undefined) frame[markField] = `${body[markField] as string} #${run}.${seq}`;
        sentAt[seq] = performance.now();
        // Listeners still connected when it was sent are the ones expected to hear it.
        expected += open - 1;
        client.socket.send(JSON.stringify(frame));
      }
      if (sent >= total) return resolve();
      setTimeout(tick, Math.max(1, Math.min(50, (sent / ws.rate) * 1000 - (performance.now() - start))));
    };
    tick();
  });
  const frames = sentAt.filter((x) => x !== undefined).length;

  // The last deliveries: until every expected one is in, or the drain time is up.
  if (delivered < expected) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, o.drainMs ?? 3000);
      settle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  settle = undefined;
  const disconnected = errors.disconnected;
  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.closed || c.socket.readyState === WebSocket.CLOSED) return resolve();
          c.socket.once('close', () => resolve());
          c.socket.close(1000);
          setTimeout(() => {
            c.socket.terminate();
            resolve();
          }, 2000).unref();
        }),
    ),
  );
  // Closing at the end is not a disconnection.
  if (disconnected === undefined) delete errors.disconnected;
  else errors.disconnected = disconnected;
  return {
    walker: ws.walker,
    clients: ws.clients,
    rate: ws.rate,
    sent: frames,
    expected,
    delivered,
    delivery_ratio: expected > 0 ? Math.round((delivered / expected) * 10_000) / 10_000 : 0,
    latency_ms: summarize(hist),
    ...(Object.keys(errors).length ? { errors } : {}),
  };
}
