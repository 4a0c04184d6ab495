/** The `websocket` module: the WebSocket hub (sessions, broadcasts), whatever the server. */
import { resolve } from 'node:path';
import type { ActorSystem } from '../../kernel/index.ts';
import { Root } from '../../actors/walker/index.ts';
import { newTraceId, toHttpError } from '../../transports/http/index.ts';
import { WsHub, type WsRoute } from '../../transports/ws/index.ts';
import { importsServices } from '../../transports/sv/index.ts';
import { askTimeoutMs, type ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { logFailure } from './shared.ts';
import { AUTH, BUS, GRAPH, HOOKS, HUB, LOG, UNKNOWN_FIELDS } from '../keys.ts';

export function websocketModule(system: ActorSystem, boot: ServeBoot, sockets: WsRoute[]): RuntimeModule {
  const { config } = boot;
  let hub: WsHub | undefined;
  return {
    name: 'websocket',
    needs: [LOG, GRAPH, AUTH, BUS, HOOKS, UNKNOWN_FIELDS],
    provides: [HUB],
    start(rt) {
      const log = rt.need(LOG);
      const graph = rt.need(GRAPH);
      const auth = rt.need(AUTH);
      const ws = config['scale.websocket'];
      hub = rt.provide(
        HUB,
        new WsHub({
          system,
          bus: rt.need(BUS),
          routes: sockets,
          guest: { rootId: Root.SHARED_ID },
          auth: { verify: (token) => auth.authenticate(token), prepare: (token) => auth.prepare(token), asynchronous: auth.learnsUsers },
          hooks: rt.need(HOOKS),
          unknownFields: rt.need(UNKNOWN_FIELDS),
          // Each frame is a request of its own: a trace id of its own.
          run: async (walker, fields, caller, token) =>
            (await graph.spawnJson(walker, fields, { caller, timeoutMs: askTimeoutMs(boot), traceId: newTraceId(), ...(token !== undefined && importsServices() ? { authorization: `Bearer ${token}` } : {}) })).json,
          errorOf: (error) => {
            const e = toHttpError(error, boot.dev, resolve(boot.projectRoot));
            if (e.status >= 500) logFailure(log, error, boot.projectRoot, {}, 'websocket frame failed');
            return { code: e.body.code, message: e.body.message, status: e.status };
          },
          limits: {
            maxFrameBytes: ws.max_frame_bytes,
            maxBufferedBytes: ws.max_buffered_bytes,
            idleTimeoutMs: ws.idle_timeout_seconds * 1000,
            authTimeoutMs: ws.auth_timeout_seconds * 1000,
            pingIntervalMs: ws.ping_interval_seconds * 1000,
          },
          onEvent: config['scale.server'].access_log ? (e) => log.info(e, 'websocket') : undefined,
        }),
      );
    },
    close: () => hub?.stop(),
  };
}
