/**
 * What an app serves and runs, as `svc start --faux`, the `--dev` table and
 * a reload's "the endpoints changed" list it: its HTTP routes (webhook
 * walkers among them), its WebSocket walkers, its hook walkers (`_Name`: run
 * before every generated route and WebSocket upgrade) and its event
 * subscriptions — so a user sees that a hook or a subscription was picked up.
 * Each is one {@link RouteSummary}: one array, compared whole by a reload.
 */
import type { EndpointRoute } from '../transports/http/index.ts';
import type { WsRoute } from '../transports/ws/index.ts';
import type { RouteSummary } from './boot.ts';

/**
 * The `method` of a hook walker's line (its `path` says where it runs).
 *
 * @example
 * const hooks = routes.filter((r) => r.method === HOOK_METHOD).map((r) => r.name); // ['_RequireKey']
 */
export const HOOK_METHOD = 'HOOK';
/**
 * The `method` of an event subscription's line (its `path` is the topic, its `name` the export's).
 *
 * @example
 * const topics = routes.filter((r) => r.method === EVENT_METHOD).map((r) => r.path); // ['order.created']
 */
export const EVENT_METHOD = 'EVENT';
/** Where a hook walker's line says it runs. */
const HOOK_PATH = '(before every route and WebSocket upgrade)';

/**
 * The app's listing: routes, WebSocket walkers, hooks (declaration order), subscriptions.
 *
 * @example
 * appListing(buildRoutes(registry), wsRoutes(registry), registry.hooks().map(([name]) => name), [{ name: 'onOrder', topic: 'order.created' }]);
 * // [..., { method: 'HOOK', path: '(before every route and WebSocket upgrade)', kind: 'hook walker', name: '_RequireKey', access: 'pub' },
 * //       { method: 'EVENT', path: 'order.created', kind: 'subscription', name: 'onOrder', access: 'pub' }]
 */
export function appListing(routes: readonly EndpointRoute[], sockets: readonly WsRoute[], hooks: readonly string[], subscriptions: readonly { name: string; topic: string }[]): RouteSummary[] {
  return [
    ...routes.map((r) => ({ method: r.method, path: r.template, kind: r.webhook ? 'webhook walker' : r.kind, name: r.name, access: r.webhook ? 'api-key' : r.access })),
    ...sockets.map((r) => ({ method: 'WS', path: `/ws/${r.name}`, kind: r.broadcast ? 'websocket walker (broadcast)' : 'websocket walker', name: r.name, access: r.access })),
    // A hook runs whatever the caller (the guest's graph without a token): no access of its own.
    ...hooks.map((name) => ({ method: HOOK_METHOD, path: HOOK_PATH, kind: 'hook walker', name, access: 'pub' })),
    ...subscriptions.map((s) => ({ method: EVENT_METHOD, path: s.topic, kind: 'subscription', name: s.name, access: 'pub' })),
  ];
}

/**
 * How many endpoints (HTTP routes and WebSocket walkers) a listing holds: hooks and subscriptions are no endpoints.
 *
 * @example
 * say(`svc: ${endpointCount(routes)} endpoints from app.ts`);
 */
export function endpointCount(routes: readonly RouteSummary[]): number {
  return routes.filter((r) => r.method !== HOOK_METHOD && r.method !== EVENT_METHOD).length;
}

/**
 * Whether a listing has webhook walkers (they need the webhook signature secret).
 *
 * @example
 * const needed = config['scale.webhook'].verify_signature && hasWebhooks(endpoints);
 */
export function hasWebhooks(routes: readonly RouteSummary[]): boolean {
  return routes.some((r) => r.kind === 'webhook walker');
}
