/** The `port` module of the main thread: the port to serve on (the one configured, or the next free one) and the worker threads that open it. */
import { ADDRESS, SERVING } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { say, type StartOptions } from './options.ts';
import { freePort } from './ports.ts';

/** Where this process serves: the host, the port chosen, and the threads that open it (`w1`…). */
export interface Address {
  host: string;
  port: number;
  listeners: string[];
}

/**
 * @example
 * composeRuntime([..., portModule(options), starterModule(options), ...]);
 */
export function portModule(options: StartOptions): RuntimeModule {
  return {
    name: 'port',
    needs: [SERVING],
    provides: [ADDRESS],
    async start(rt) {
      const server = options.config['scale.server'];
      const { transport, workers } = rt.need(SERVING);
      const port = await freePort(server.host, server.port);
      if (server.port !== 0 && port !== server.port) say(`svc: port ${server.port} is in use; using ${port}`);
      // On uWebSockets.js every worker opens the port; node:http cannot share one, so w1 alone serves it.
      rt.provide(ADDRESS, { host: server.host, port, listeners: transport === 'uws' ? workerIds(workers) : ['w1'] });
    },
  };
}

function workerIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `w${i + 1}`);
}

/** The address a process on this host reaches a server on `host:port` at (`0.0.0.0` and `::` are 127.0.0.1). */
export function localUrl(host: string, port: number): string {
  return `http://${/^(0\.0\.0\.0|::|)$/.test(host) ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${port}`;
}
