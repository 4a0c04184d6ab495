/**
 * A stand-in for a cluster's ingress node port, for deploys against the fake Kubernetes API server: an HTTP server
 * on 127.0.0.1 at a free port of the node-port range (30000–32767), which the deploy's probe reaches as
 * `http://<node address>:<ingress_node_port><health path>`. It answers `status` (200 by default) and records what
 * it was asked.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';

export interface StandInIngress {
  port: number;
  /** Every request: path and Host header. */
  requests: { path: string; host: string }[];
  /** The status answered from now on. */
  answer(status: number): void;
  close(): Promise<void>;
}

/**
 * @example
 * const ingress = await standInIngress();
 * t.teardown(() => ingress.close());
 * // [scale.orchestrator] ingress_node_port = ingress.port
 */
export async function standInIngress(): Promise<StandInIngress> {
  const requests: { path: string; host: string }[] = [];
  let status = 200;
  const server: Server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', host: req.headers.host ?? '' });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: status < 300 ? 'ok' : 'failing' }));
  });
  for (let attempt = 0; ; attempt++) {
    const port = 30000 + Math.floor(Math.random() * 2768);
    server.listen(port, '127.0.0.1');
    const outcome = await Promise.race([once(server, 'listening').then(() => 'ok'), once(server, 'error').then(([e]) => e as Error)]);
    if (outcome === 'ok') break;
    if (attempt > 50) throw outcome;
  }
  const port = (server.address() as { port: number }).port;
  return {
    port,
    requests,
    answer: (s) => (status = s),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
