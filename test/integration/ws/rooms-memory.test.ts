// 10,000 connections in 1,000 rooms on one member: the server's memory grows by at most a stated bound per connection,
// a message to a room reaches its ten members, and the rooms are gone once their connections are.
import { readFileSync } from 'node:fs';
import t from 'tap';
import WebSocket from 'ws';
import { startServer, transport } from '../../kit/index.ts';

const entry = new URL('../../fixtures/rooms-app.ts', import.meta.url).pathname;

/** Bytes of server memory (RSS) one idle connection in a room may add (the bench measures the figure; this is a ceiling). */
const BOUND_BYTES = 12 * 1024;

function openFiles(): number {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s+/)[3] ?? 1024);
}

function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

// Both ends of every connection are on this machine: the test process holds N sockets, the server N more.
const N = Math.min(10_000, Math.floor((openFiles() - 500) / 1000) * 1000);
const ROOMS = N / 10;
t.setTimeout(300_000);

t.test(`${N} connections in ${ROOMS} rooms on one member (${transport()} transport)`, async (t) => {
  const token = 'rooms-memory-scrape-token-0123456789abcdef';
  const server = await startServer({ entry, env: { SVC_MAX_CONNECTIONS: String(N + 500), SVC_METRICS_ENABLED: 'true', SVC_METRICS_SCRAPE_TOKEN: token, SVC_WS_IDLE_TIMEOUT_SECONDS: '600' } });
  t.teardown(() => server.stop());
  const url = `${server.url.replace('http', 'ws')}/ws/Lobby`;
  const open = async (): Promise<WebSocket> => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return ws;
  };
  /** Send a frame and wait for the frame answering its id. */
  const ask = (ws: WebSocket, frame: Record<string, unknown>): Promise<Record<string, unknown>> =>
    new Promise((resolve) => {
      const on = (raw: WebSocket.RawData) => {
        const f = JSON.parse(raw.toString()) as Record<string, unknown>;
        if (f.id !== frame.id) return;
        ws.off('message', on);
        resolve(f);
      };
      ws.on('message', on);
      ws.send(JSON.stringify(frame));
    });
  // Warm: the walker path, a join, a leave, so the baseline holds what any connection needs loaded.
  const warm = await open();
  await ask(warm, { id: 'w', type: 'join', room: 'lobby:warm' });
  warm.close();
  if (global.gc) global.gc();
  const before = rss(server.proc.pid as number);
  const sockets: WebSocket[] = [];
  const refused: unknown[] = [];
  const started = Date.now();
  for (let i = 0; i < N; i += 250) {
    const batch = await Promise.all(Array.from({ length: Math.min(250, N - i) }, () => open()));
    await Promise.all(batch.map((ws, j) => ask(ws, { id: 'j', type: 'join', room: `lobby:${(i + j) % ROOMS}` }).then((f) => f.type === 'joined' || refused.push(f))));
    sockets.push(...batch);
  }
  t.same(refused, [], `all ${N} joined (${Date.now() - started} ms)`);
  const after = rss(server.proc.pid as number);
  const per = (after - before) / N;
  t.comment(`server RSS ${Math.round(before / 2 ** 20)} → ${Math.round(after / 2 ** 20)} MiB: ${Math.round(per)} bytes per connection in a room`);
  t.ok(per <= BOUND_BYTES, `at most ${BOUND_BYTES} bytes per connection (${Math.round(per)})`);

  // A message to one room reaches its members, and only them.
  const room = 7;
  const members = sockets.filter((_, i) => i % ROOMS === room);
  const others = [sockets[(room + 1) % ROOMS], sockets[(room + 2) % ROOMS]] as WebSocket[];
  const heard: string[] = [];
  for (const ws of [...members, ...others]) ws.on('message', (raw) => heard.push(raw.toString()));
  const got = Promise.all(members.map((ws) => new Promise((resolve) => ws.once('message', resolve))));
  const r = await fetch(`${server.url}/function/announce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ room: `lobby:${room}`, text: 'to room 7' }) });
  t.equal(r.status, 200);
  await got;
  t.equal(heard.length, members.length, `each of the ${members.length} members got it once, no one else`);

  // Everyone leaves: no room is left.
  await Promise.all(sockets.map((ws) => new Promise((resolve) => (ws.once('close', resolve), ws.close()))));
  const scrape = async () =>
    (await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text())
      .split('\n')
      .filter((l) => l.startsWith('svc_websocket_room'))
      .join('\n');
  let metrics = await scrape();
  while (!/svc_websocket_rooms(\{[^}]*\})? 0\b/.test(metrics)) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    metrics = await scrape();
  }
  t.match(metrics, /svc_websocket_room_members(\{[^}]*\})? 0\b/, 'no connection left in a room');
});
