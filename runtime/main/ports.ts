/** Finding the port to serve on: the one asked for, or the next free one. */
import { createServer } from 'node:net';

function tryListen(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      server.close(() => resolve(bound));
    });
  });
}

/** The first free port from `port` up (port 0: any free one). */
export async function freePort(host: string, port: number, tries = 100): Promise<number> {
  for (let p = port, i = 0; i < tries; i++, p = port === 0 ? 0 : p + 1) {
    if (p > 65535) break;
    const bound = await tryListen(host, p);
    if (bound !== undefined) return bound;
  }
  throw new Error(`no free port from ${port} (tried ${tries})`);
}
