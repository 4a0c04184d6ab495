/** The `server` module: the listening socket (uWebSockets.js or node:http) with the WebSocket hub on it. */
import { attachNode, attachUws, type WsHub } from '../../transports/ws/index.ts';
import { type HttpServer, listenNode, listenUws, loadUws } from '../../transports/http/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { FRONT, HUB, LISTEN, LOG } from '../keys.ts';

/** The listening socket (uWebSockets.js or node:http) with the WebSocket hub on it. */
export function serverModule(boot: ServeBoot, thread: string): RuntimeModule {
  const { config } = boot;
  let server: HttpServer | undefined;
  let hub: WsHub | undefined;
  return {
    name: 'server',
    needs: [LOG, FRONT, HUB],
    provides: [LISTEN],
    async start(rt) {
      const log = rt.need(LOG);
      const front = rt.need(FRONT);
      hub = rt.need(HUB);
      const wsHub = hub;
      const listen = async (): Promise<void> => {
        if (server || !boot.listeners.includes(thread)) return;
        const options = {
          host: config['scale.server'].host,
          port: boot.port,
          maxBodyBytes: config['scale.server'].max_body_bytes,
          bodyTimeoutMs: config['scale.server'].body_timeout_ms,
          maxConnections: config['scale.server'].max_connections,
          onError: (error: unknown) => log.error({ err: error }, 'writing an answer failed'),
          onAcceptChange: (paused: boolean, reason: string) =>
            paused ? log.warn({ reason }, 'not accepting connections for now') : log.info({ reason }, 'accepting connections again'),
          onUwsApp: (app: import('uWebSockets.js').TemplatedApp) => attachUws(app, wsHub),
          onNodeServer: (s: import('node:http').Server) => attachNode(s, wsHub),
        };
        if (boot.transport === 'uws') {
          const uws = loadUws();
          if (uws instanceof Error) throw new Error(`uWebSockets.js cannot load in this worker: ${uws.message}`);
          server = await listenUws(uws, front, options);
        } else {
          server = await listenNode(front, options);
        }
      };
      rt.provide(LISTEN, listen);
      if (boot.listenNow && !boot.replacement) await listen();
      front.markReady();
    },
    // No new connections; requests and WebSocket frames in hand are answered within the deadline.
    async drain(deadlineMs) {
      server?.stopAccepting();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([server?.whenIdle(), hub?.drain(deadlineMs)]), new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs)))]);
      clearTimeout(timer);
    },
    close: () => server?.close(),
  };
}
