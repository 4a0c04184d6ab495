/** The `websocket` module: the WebSocket hub (sessions, broadcasts), whatever the server. */
import { createHmac } from 'node:crypto';
import { resolve } from 'node:path';
import type { ActorSystem } from '../../kernel/index.ts';
import { bindRooms, type Registry, Root } from '../../actors/walker/index.ts';
import type { MemberState } from '../../cluster/index.ts';
import type { RelayTransport } from '../../transports/worker/index.ts';
import { clusterPlacement } from './graph.ts';
import { newTraceId, toHttpError } from '../../transports/http/index.ts';
import { WsHub, type WsRoute } from '../../transports/ws/index.ts';
import { importsServices } from '../../transports/sv/index.ts';
import { askTimeoutMs, type ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { logFailure } from './shared.ts';
import { AUTH, BUS, GRAPH, HOOKS, HUB, LOG, UNKNOWN_FIELDS } from '../keys.ts';

export function websocketModule(system: ActorSystem, boot: ServeBoot, sockets: WsRoute[], registry: Registry, fingerprint: string, relay: RelayTransport | undefined, member: MemberState | undefined): RuntimeModule {
  const { config } = boot;
  let hub: WsHub | undefined;
  let unbind: (() => void) | undefined;
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
          run: (walker, fields, caller, token, conn) =>
            graph.spawnJson(walker, fields, {
              caller,
              timeoutMs: askTimeoutMs(boot),
              traceId: newTraceId(),
              ...(token !== undefined && importsServices() ? { authorization: `Bearer ${token}` } : {}),
              ...(conn === undefined ? {} : { conn }),
            }),
          errorOf: (error) => {
            const e = toHttpError(error, boot.dev, resolve(boot.projectRoot));
            if (e.status >= 500) logFailure(log, error, boot.projectRoot, {}, 'websocket frame failed');
            return { code: e.body.code, message: e.body.message, status: e.status };
          },
          rooms: {
            specs: () => registry.rooms,
            // The same on every member (the JWT secret is): a client rejoins with its ticket wherever it reconnects.
            ticketKey: createHmac('sha256', boot.jwtSecret).update('svc websocket room tickets').digest(),
            maxRooms: ws.max_rooms_per_connection,
            askTimeoutMs: askTimeoutMs(boot),
            // Room actors (rooms with history) are placed like partitions: one per room in the cluster.
            ...(member ? { placement: clusterPlacement(system, fingerprint, relay) } : {}),
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
      const rooms = hub.rooms;
      // `this.sendTo` of runs no frame started, once they commit; `sendTo()` and `presence()` anywhere in this thread.
      graph.sendOut = (sends) => {
        for (const s of sends) rooms.send(s.to, s.data);
      };
      unbind = bindRooms({ send: (to, data) => rooms.send(to, data), presence: (room) => rooms.presence(room) });
    },
    close: () => {
      unbind?.();
      hub?.stop();
    },
  };
}
