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
 *
 * `svc start --dev` takes a save's new code in place (the last module,
 * `swap`): the registry's walkers, functions and classes are replaced at
 * once, the subscriptions' handlers too, and the nodes resident in memory
 * take the new classes; refused (new workers then) when the routes,
 * WebSocket walkers, hooks, subscriptions or class schemas differ — the
 * routers and consumers are built from those at start.
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
import { appListing } from './listing.ts';
import { composeRuntime, type Runtime, type RuntimeModule } from './runtime.ts';
import { GRAPH } from './keys.ts';
import type { AppSwap } from '../transports/worker/index.ts';
import { logModule } from './modules/log.ts';
import { busModule } from './modules/bus.ts';
import { metricsModule } from './modules/metrics.ts';
import { appSubscriptions, type AppSubscription, eventsModule } from './modules/events.ts';
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
export function createRuntime(options: ServeOptions): Runtime & { swap: AppSwap } {
  const swapping: { swap?: AppSwap } = {};
  const runtime = composeRuntime(serveModules(options, swapping));
  return Object.assign(runtime, { swap: (app: Record<string, unknown>) => (swapping.swap ? swapping.swap(app) : 'the worker is not serving yet') });
}

/**
 * What must stay the same for new code to be taken in place: the routes and
 * their schemas, the WebSocket walkers, the hooks, the classes and their
 * schemas (the fingerprint), the subscriptions. Anything else (a walker's or
 * a function's body, a node's methods) may change.
 */
function shapeOf(registry: Registry, routes: unknown, sockets: unknown, subscriptions: AppSubscription[]): string {
  return JSON.stringify([appFingerprint(registry), routes, sockets, registry.hooks().map(([name]) => name), subscriptions.map((s) => [s.name, s.topic, s.group, s.startFrom, s.sub.options])]);
}

/** The modules of one serving thread, in start order; `swapping.swap` is set once it serves (`svc start --dev`). */
export function serveModules(options: ServeOptions, swapping: { swap?: AppSwap } = {}): RuntimeModule[] {
  const { system, boot, app } = options;
  const registry = Registry.fromModule(app, boot.moduleName);
  const routes = buildRoutes(registry);
  const sockets = wsRoutes(registry);
  if (routes.length === 0 && sockets.length === 0) throw new Error(`${boot.moduleName} exports no walker and no function: nothing to serve`);
  // What `--faux` and the `--dev` table list: routes, WebSocket walkers, hooks, subscriptions (listing.ts).
  const describe = (): RouteSummary[] => appListing(routes, sockets, registry.hooks().map(([name]) => name), declared);
  const declared = appSubscriptions(app, boot.config['scale.events'].consumer_group);
  // The consumers keep these: each handler is looked up at each event, so a swap's new handler takes the next one.
  const handlers = new Map(declared.map((s) => [s.name, s.sub.handler]));
  const subscriptions = declared.map((s) => ({ ...s, sub: { ...s.sub, get handler() { return handlers.get(s.name) ?? s.sub.handler; } } }));
  const fingerprint = appFingerprint(registry);
  const shape = shapeOf(registry, routes, sockets, declared);
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
    websocketModule(system, boot, sockets, registry, fingerprint, options.relay, member),
    serverModule(boot, thread),
    controlModule(system, describe, fingerprint),
    {
      name: 'swap',
      needs: [GRAPH],
      start(rt) {
        const graph = rt.need(GRAPH);
        swapping.swap = (next) => {
          // Everything that can fail is done before anything changes: a class declared wrongly throws here.
          const nextRegistry = Registry.fromModule(next, boot.moduleName);
          const nextDeclared = appSubscriptions(next, boot.config['scale.events'].consumer_group);
          if (shapeOf(nextRegistry, buildRoutes(nextRegistry), wsRoutes(nextRegistry), nextDeclared) !== shape) return 'the endpoints, hooks, subscriptions or class schemas changed';
          // At once (one synchronous step): the next request, hook, event or load uses the new code.
          registry.replaceWith(nextRegistry);
          for (const s of nextDeclared) handlers.set(s.name, s.sub.handler);
          graph.reclassResident();
          return undefined;
        };
      },
    },
  ];
}
