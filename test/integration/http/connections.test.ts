// Out of file descriptors, or past max_connections (issue 9, item 9): the server backs
// off instead of spinning, serves the connections it has, and accepts again once there
// is room. On both transports.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { startServer, transport, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/todo-app.ts', import.meta.url).pathname;
const onNode = transport() === 'node';

/** CPU time (ms) the process has used so far. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
}

/** A kept-alive connection that asks for /health and resolves with the status of each answer. */
function keepAlive(port: number): Promise<{ socket: Socket; health(): Promise<number> }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      let buffered = '';
      let waiting: ((status: number) => void) | undefined;
      socket.on('data', (d) => {
        buffered += d.toString();
        const end = buffered.indexOf('\r\n\r\n');
        const length = Number(/content-length: *(\d+)/i.exec(buffered)?.[1] ?? 0);
        if (end >= 0 && buffered.length >= end + 4 + length) {
          const status = Number(/^HTTP\/1\.1 (\d+)/.exec(buffered)?.[1]);
          buffered = buffered.slice(end + 4 + length);
          waiting?.(status);
        }
      });
      resolve({
        socket,
        health: () =>
          new Promise((r) => {
            waiting = r;
            socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
          }),
      });
    });
  });
}

/** Start `n` idle connections (not awaited: past a full backlog, a connect can take a long while). */
function flood(port: number, n: number): Socket[] {
  return Array.from({ length: n }, () => connect(port, '127.0.0.1').on('error', () => undefined));
}

/**
 * The status a new connection gets for /health once the server has seen the flood close:
 * node:http counts a connection until it has, and each round trip on the kept connection
 * is a turn of the server's loop in which it may.
 */
async function servedAgain(server: Server, kept: { health(): Promise<number> }): Promise<number> {
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = await fetch(`${server.url}/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (status !== 200) await kept.health();
  }
  return status;
}

t.test('a low open-file limit is warned about at start', async (t) => {
  const server = await startServer({ entry, ulimitFiles: 512 });
  t.teardown(() => server.stop());
  t.match(server.output(), /warning: the open-file limit \(ulimit -n\) is 512, below max_connections \(10000\) \+ 256/);
});

t.test('file descriptors exhausted: no spinning, open connections served, accepting again once they are back', async (t) => {
  const server: Server = await startServer({ entry, ulimitFiles: 400 });
  t.teardown(() => server.stop('SIGKILL'));
  const kept = await keepAlive(server.port);
  t.equal(await kept.health(), 200);
  const sockets = flood(server.port, 700);
  if (!onNode) await server.waitFor(/file descriptors exhausted.*not accepting connections for now/);
  if (onNode) await Promise.all(sockets.slice(0, 300).map((s) => new Promise((resolve) => (s.connecting ? s.once('connect', resolve).once('error', resolve) : resolve(s)))));
  const before = cpuMs(server.proc.pid as number);
  const window = Date.now();
  // The connection it already had is still served while it cannot accept (a fixed measuring window follows).
  t.equal(await kept.health(), 200, 'an open connection is served while descriptors are exhausted');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const used = cpuMs(server.proc.pid as number) - before;
  const elapsed = Date.now() - window;
  t.ok(used < elapsed * 0.5, `CPU while exhausted: ${used} ms in ${elapsed} ms (a spinning accept loop takes it all)`);
  for (const s of sockets) s.destroy();
  if (!onNode) await server.waitFor(/accepting connections again/);
  t.equal(await servedAgain(server, kept), 200, 'a new connection is served once descriptors are back');
  kept.socket.destroy();
});

t.test('past max_connections new connections wait; open ones are served', async (t) => {
  const server = await startServer({ entry, env: { SVC_MAX_CONNECTIONS: '20' } });
  t.teardown(() => server.stop('SIGKILL'));
  const kept = await keepAlive(server.port);
  const sockets = flood(server.port, 60);
  if (onNode) {
    // node:http closes connections past maxConnections as they come.
    const closed = await Promise.all(sockets.map((s) => new Promise<boolean>((resolve) => (s.destroyed ? resolve(true) : s.once('close', () => resolve(true))))).slice(40));
    t.ok(closed.every(Boolean), 'connections past the limit are closed by the server');
  } else {
    await server.waitFor(/max_connections 20.*not accepting connections for now/);
  }
  t.equal(await kept.health(), 200, 'an open connection is served');
  for (const s of sockets) s.destroy();
  if (!onNode) await server.waitFor(/accepting connections again/);
  t.equal(await servedAgain(server, kept), 200, 'room again: served');
  kept.socket.destroy();
});
