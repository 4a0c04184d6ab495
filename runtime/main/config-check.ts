/**
 * The `config` module of the main thread: what the configuration asks checked
 * before anything is made — the port's range, the transport
 * (uWebSockets.js, or node:http where it cannot load), the trusted proxies,
 * the open-file limit against `max_connections` — and how many worker
 * threads serve.
 */
import { availableParallelism } from 'node:os';
import { ClientAddresses, loadUws, openFileLimit } from '../../transports/http/index.ts';
import { SERVING } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { PORT_RANGE, say, StartError, type StartOptions } from './options.ts';

/** The transport and the worker threads of this start. */
export interface Serving {
  transport: 'uws' | 'node';
  workers: number;
}

/**
 * @example
 * composeRuntime([configModule(options), ...]);
 */
export function configModule(options: StartOptions): RuntimeModule {
  return {
    name: 'config',
    provides: [SERVING],
    start(rt) {
      const server = options.config['scale.server'];
      // The configuration checks the lower bound (svc.toml, SVC_PORT, PORT); flags were checked by the command line.
      if (server.port > 65535) throw new StartError(`invalid port ${server.port} in [scale.server] port (or SVC_PORT / PORT): ${PORT_RANGE}`);
      let transport: 'uws' | 'node' = server.transport === 'node' ? 'node' : 'uws';
      if (transport === 'uws') {
        const uws = loadUws();
        if (uws instanceof Error) {
          if (server.transport === 'uws') throw new StartError(`uWebSockets.js cannot load here: ${uws.message}`);
          say(`svc: uWebSockets.js cannot load on this platform (${uws.message.split('\n')[0]}); serving with node:http`);
          transport = 'node';
        }
      }
      const workers = server.workers || Math.max(1, availableParallelism());
      // Checked here, where a mistake stops the start with one line (the workers build their own).
      new ClientAddresses(server.trusted_proxies);
      const files = openFileLimit();
      if (files < server.max_connections + 256) {
        process.stderr.write(
          `svc: warning: the open-file limit (ulimit -n) is ${files}, below max_connections (${server.max_connections}) + 256: ` +
            `raise it (ulimit -n ${server.max_connections + 256}, or LimitNOFILE= under systemd) or lower [scale.server] max_connections (SVC_MAX_CONNECTIONS)\n`,
        );
      }
      rt.provide(SERVING, { transport, workers });
    },
  };
}
