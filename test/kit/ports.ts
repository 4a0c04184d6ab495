// Free loopback ports for servers a test or benchmark starts (Redis, PostgreSQL, an `svc start` on a chosen port).
import { once } from 'node:events';
import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the OS picks it, the probe closes it again. Another process may
 * take it before the caller listens; callers that cannot tolerate that listen on port 0 instead.
 *
 * @example
 * const port = await freePort();
 * await startServer({ entry, port });
 */
export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}
