/**
 * What one thread of `svc start` serves, as runtime modules in their start
 * order (one file each under `modules/`): log, bus, metrics, events, store,
 * data, sv, graph, invalidation (cluster members), users, identity, hooks,
 * consumers, fields, http, websocket, server, control. Each module declares
 * the services it needs and provides (`keys.ts`); the list is checked when it
 * is composed. {@link createRuntime} picks them from the configuration (the
 * store and the users repository by `docdb_uri`, the server by transport).
 *
 * To add a store backend: register it (`registerAnchorStore`,
 * `registerUsersRepository`) — the `store` and `users` modules choose by URI.
 * A transport: a module after `http` that needs the `front` service (the
 * `server` module listens for the built-in ones). A metric: a recorder of
 * `ThreadMetrics` (the `metrics` module). An event consumer: an exported
 * `subscribe(...)`, run by the `consumers` module.
 */
import { type ActorRef, fromReceive, MAIN_THREAD, threadOf } from '../kernel/index.ts';
import { STORE_WRITER_ACTOR, type WriterMsg } from '../actors/graph/index.ts';
import { Registry } from '../actors/walker/index.ts';
import { USERS_WRITER_ACTOR, type UsersWriterMsg } from '../actors/identity/index.ts';
import { buildRoutes } from '../transports/http/index.ts';
import { wsRoutes } from '../transports/ws/index.ts';
import { MemberState } from '../cluster/index.ts';
import { CONTROL_ACTOR, type HttpControl, type RouteSummary, type ServeOptions } from './boot.ts';
import { appFingerprint } from './fingerprint.ts';
import { composeRuntime, type Runtime, type RuntimeModule } from './runtime.ts';
import { logModule } from './modules/log.ts';
import { busModule } from './modules/bus.ts';
import { metricsModule } from './modules/metrics.ts';
import { appSubscriptions, eventsModule } from './modules/events.ts';
import { storeModule } from './modules/store.ts';
import { dataModule } from './modules/data.ts';
import { svModule } from './modules/sv.ts';
import { graphModule } from './modules/graph.ts';
import { invalidationModule } from './modules/invalidation.ts';
import { usersModule } from './modules/users.ts';
import { identityModule } from './modules/identity.ts';
import { hooksModule } from './modules/hooks.ts';
import { consumersModule } from './modules/consumers.ts';
import { fieldsModule } from './modules/fields.ts';
import { httpModule } from './modules/http.ts';
import { websocketModule } from './modules/websocket.ts';
import { serverModule } from './modules/server.ts';
import { controlModule } from './modules/control.ts';
import { sandboxModule } from './modules/sandbox.ts';

/**
 * The runtime of one serving thread, not started yet (its modules checked).
 *
 * @example
 * const rt = createRuntime({ system, boot, app });
 * await rt.start();          // listening once it resolves
 * await rt.drain(10_000);    // front unready, no new connections, in-flight work finished
 * await rt.close();          // sockets, stores, log
 */
export function createRuntime(options: ServeOptions): Runtime {
  return composeRuntime(serveModules(options));
}

/** The modules of one serving thread, in start order. */
export function serveModules(options: ServeOptions): RuntimeModule[] {
  const { system, boot, app } = options;
  const registry = Registry.fromModule(app, boot.moduleName);
  const routes = buildRoutes(registry);
  const sockets = wsRoutes(registry);
  if (routes.length === 0 && sockets.length === 0) throw new Error(`${boot.moduleName} exports no walker and no function: nothing to serve`);
  const describe = (): RouteSummary[] => [
    ...routes.map((r) => ({ method: r.method, path: r.template, kind: r.webhook ? 'webhook walker' : r.kind, name: r.name, access: r.webhook ? 'api-key' : r.access })),
    ...sockets.map((r) => ({ method: 'WS', path: `/ws/${r.name}`, kind: r.broadcast ? 'websocket walker (broadcast)' : 'websocket walker', name: r.name, access: r.access })),
  ];
  const subscriptions = appSubscriptions(app, boot.config['scale.events'].consumer_group);
  const fingerprint = appFingerprint(registry);
  if (boot.faux) return [{ name: 'control', start: () => void system.spawn(fromReceive((msg: HttpControl) => (msg.t === 'fingerprint' ? fingerprint : describe())), CONTROL_ACTOR) }];
  const thread = threadOf(system.nodeId);
  // A cluster member's lease validity and readiness, written by the main thread (one view per thread).
  const member = boot.cluster ? new MemberState(boot.cluster.state) : undefined;
  const writerOn = (path: string) => (boot.processWriters ? system.refFromAddress({ node: MAIN_THREAD, path: `/user/${path}` }) : undefined);
  return [
    logModule(thread, options.logDestination),
    busModule(system),
    metricsModule(system, boot, thread),
    eventsModule(system, boot, subscriptions, thread),
    storeModule(boot, writerOn(STORE_WRITER_ACTOR) as ActorRef<WriterMsg, unknown> | undefined),
    dataModule(boot, registry),
    svModule(system, boot),
    graphModule(system, boot, registry, fingerprint, options.relay, member),
    ...(boot.cluster ? [invalidationModule(system, boot.cluster)] : []),
    usersModule(boot, writerOn(USERS_WRITER_ACTOR) as ActorRef<UsersWriterMsg, unknown> | undefined),
    identityModule(system, boot, thread, routes),
    hooksModule(boot, registry),
    // Before the front: at a drain, fetching stops first, while requests in hand are answered.
    consumersModule(system, boot, subscriptions, thread),
    sandboxModule(system, boot, fingerprint, options.relay, member, thread),
    fieldsModule(boot),
    httpModule(system, boot, registry, routes, member),
    websocketModule(system, boot, sockets),
    serverModule(boot, thread),
    controlModule(system, describe, fingerprint),
  ];
}
