/**
 * The `http` module: the HTTP front (the app's routes, the built-in ones —
 * identity, API keys, sign-in, admin, metrics, graph — OpenAPI, docs, static
 * files), whatever the server; and how its failures are logged.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type ActorSystem, MAIN_THREAD } from '../../kernel/index.ts';
import type { AnchorStore } from '../../actors/graph/index.ts';
import type { Registry } from '../../actors/walker/index.ts';
import type { UsersRepository } from '../../actors/identity/index.ts';
import {
  apiKeyRoutes,
  type BuiltinRoute,
  ClientAddresses,
  clusterRoute,
  Docs,
  type EndpointRoute,
  eventsRoute,
  type ForwardingHeader,
  Front,
  graphRoutes,
  identityRoutes,
  metricsRoutes,
  openApiDocument,
  type ResponseInfo,
  Router,
  ssoRoutes,
  StaticFiles,
  statsRoute,
} from '../../transports/http/index.ts';
import { wsRoutes } from '../../transports/ws/index.ts';
import { importsServices } from '../../transports/sv/index.ts';
import { CLUSTER_ACTOR, type ClusterAsk, type MemberState, type MemberSummary } from '../../cluster/index.ts';
import { askTimeoutMs, type ServeBoot } from '../boot.ts';
import type { SvcConfig } from '../config.ts';
import type { RuntimeModule } from '../runtime.ts';
import { adminMetrics, renderMetrics, type ThreadMetrics } from '../metrics/index.ts';
import { type Log, logFailure } from './shared.ts';
import { lateWebhookSecret } from '../main/secrets.ts';
import { API_KEYS, AUTH, BROKER, BUS, FRONT, GRAPH, HOOKS, IDENTITY, LOG, METRICS, SCRAPE, SSO, STORE, SUBSCRIPTIONS, UNKNOWN_FIELDS, USERS } from '../keys.ts';

export function httpModule(system: ActorSystem, boot: ServeBoot, registry: Registry, routes: EndpointRoute[], member: MemberState | undefined): RuntimeModule {
  const { config } = boot;
  let front: Front | undefined;
  return {
    name: 'http',
    needs: [LOG, BUS, AUTH, SSO, IDENTITY, API_KEYS, BROKER, SUBSCRIPTIONS, GRAPH, HOOKS, UNKNOWN_FIELDS, STORE, USERS],
    uses: [SCRAPE, METRICS],
    provides: [FRONT],
    start(rt) {
      const log = rt.need(LOG);
      const bus = rt.need(BUS);
      const auth = rt.need(AUTH);
      const sso = rt.need(SSO);
      const scrape = rt.find(SCRAPE);
      const cluster = boot.cluster;
      const builtinRoutes: BuiltinRoute[] = [
        ...identityRoutes(rt.need(IDENTITY), auth),
        ...apiKeyRoutes(rt.need(API_KEYS)),
        ...ssoRoutes(sso),
        statsRoute(bus),
        ...(cluster ? [clusterRoute(system, bus, { name: cluster.name, processId: cluster.processId, members: () => askMembers(system) })] : []),
        eventsRoute(system, bus, rt.need(BROKER), rt.need(SUBSCRIPTIONS)),
        ...metricsRoutes(
          config['scale.metrics'].endpoint,
          scrape && { json: async () => adminMetrics(await scrape(), config['scale.metrics'].namespace), text: async () => renderMetrics(await scrape()) },
          config['scale.metrics'].scrape_token,
        ),
        ...(config['scale.graph'].enabled ? graphRoutes({ graph: rt.need(GRAPH), auth, timeoutMs: askTimeoutMs(boot), publicGraph: config['scale.graph'].public }) : []),
      ];
      refuseShadowedRoutes(routes, builtinRoutes, new Set([config['scale.metrics'].endpoint, '/graph', '/graph/data', '/traverse']));
      const publicDir = join(boot.projectRoot, 'public');
      front = rt.provide(
        FRONT,
        new Front({
          graph: rt.need(GRAPH),
          registry,
          routes,
          auth,
          hooks: rt.need(HOOKS),
          unknownFields: rt.need(UNKNOWN_FIELDS),
          builtinRoutes,
          openapi: openApiDocument(routes, { title: boot.title, version: boot.version }, builtinRoutes, { webhook: openApiWebhook(config), websockets: wsRoutes(registry) }),
          docs: config['scale.server'].docs_enabled ? new Docs(boot.title) : undefined,
          statics: existsSync(publicDir) ? new StaticFiles(publicDir) : undefined,
          requestTimeoutMs: askTimeoutMs(boot),
          dev: boot.dev,
          accessLog: config['scale.server'].access_log ? (entry) => log.info(entry, 'request') : undefined,
          suppressHealthLogs: config['scale.server'].suppress_health_check_logs,
          ...metricsHooks(rt.find(METRICS), config['scale.metrics'].endpoint),
          projectRoot: resolve(boot.projectRoot),
          onError: (error, requestId, route, traceId, endpoint) => {
            const { code } = error as { code?: unknown };
            // An outage answers requests 503 while it lasts (the member says so when it starts and ends): counted, and a
            // warning without the stack when they start — not an error with a stack for each.
            if (typeof code === 'string' && OUTAGE_CODES.has(code)) {
              rt.find(METRICS)?.refused(code);
              if (code === 'SVC_ERR_STORE_UNAVAILABLE') storeWarnings.note(log, requestId);
              else outageWarnings.note(log, code, error, requestId, route);
            } else logFailure(log, error, boot.projectRoot, { req_id: requestId, trace_id: traceId, route, ...(endpoint ? { [endpoint.kind]: endpoint.name } : {}) }, 'request failed');
          },
          clientAddresses: new ClientAddresses(config['scale.server'].trusted_proxies, config['scale.server'].trusted_proxy_header as ForwardingHeader),
          readiness: () => member?.readiness() ?? storeReadiness(rt.need(STORE), rt.need(USERS)),
          // Sign-in routes read the Host (the redirect URI in development) and the browser binding cookie: copied only when a provider can be used.
          ...(sso.providers().some((p) => p.enabled) ? { extraHeaders: ['host', 'cookie'] } : {}),
          forwardAuthorization: importsServices,
          cors: config['scale.server.cors'],
          ...(routes.some((r) => r.webhook) ? { webhook: { ...openApiWebhook(config), apiKeys: rt.need(API_KEYS), secret: webhookKey(boot, log) } } : {}),
        }),
      );
    },
    // Readiness turns false first: load balancers stop sending while the rest drains.
    drain: () => front?.startDraining(),
  };
}

/** The members of this process's cluster, as its main thread knows them (for `GET /admin/cluster`). */
function askMembers(system: ActorSystem): Promise<MemberSummary[]> {
  return system.refFromAddress({ node: MAIN_THREAD, path: `/user/${CLUSTER_ACTOR}` }).ask({ t: 'members' } satisfies ClusterAsk, 5000) as Promise<MemberSummary[]>;
}

/**
 * The webhook signature secret: the one the start handed over, else the configured one — or, when a
 * `--dev` reload brought the app's first webhook walker, `.svc/webhook_secret` (made now if missing).
 */
function webhookKey(boot: ServeBoot, log: Log): string {
  const w = boot.config['scale.webhook'];
  const late = lateWebhookSecret({ dev: boot.dev, handed: boot.webhookSecret, configured: w.secret, verify: w.verify_signature, projectRoot: boot.projectRoot });
  if (late?.generated) log.warn(`webhooks: signatures verified (${w.signature_header}) with the ${late.source}`);
  return late?.secret ?? (boot.webhookSecret || w.secret);
}

/** `[scale.webhook]` as the front and the OpenAPI document read it (the secret apart). */
function openApiWebhook(config: SvcConfig): { signatureHeader: string; timestampHeader: string; verifySignature: boolean; requireTimestamp: boolean; toleranceSeconds: number } {
  const w = config['scale.webhook'];
  return { signatureHeader: w.signature_header, timestampHeader: w.timestamp_header, verifySignature: w.verify_signature, requireTimestamp: w.require_timestamp, toleranceSeconds: w.timestamp_tolerance_seconds };
}

/**
 * The runtime's newer routes (the metrics endpoint, the graph's) answer
 * before the app's: one the app also serves would be taken from it without a
 * word, so the start is refused instead.
 */
function refuseShadowedRoutes(routes: EndpointRoute[], builtins: BuiltinRoute[], paths: ReadonlySet<string>): void {
  const router = new Router(routes);
  for (const b of builtins) {
    if (!paths.has(b.path)) continue;
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      const hit = router.match(method, b.path);
      if (hit && 'route' in hit) {
        throw new Error(
          `${method} ${b.path} is a route of the app (${hit.route.kind} ${hit.route.name}) and of svc (${b.doc?.summary?.split(' (')[0] ?? b.path}): ` +
            (b.path === '/graph' || b.path === '/graph/data' || b.path === '/traverse'
              ? 'give the app\'s another path, or turn the graph routes off ([scale.graph] enabled = false, SVC_GRAPH_ENABLED=false)'
              : 'give the app\'s another path, or move the metrics endpoint ([scale.metrics] endpoint, SVC_METRICS_ENDPOINT)'),
        );
      }
    }
  }
}

/** The front's share of the metrics: each answer recorded by route template; the metrics endpoints (scrape and admin) left out of their own figures. */
function metricsHooks(metrics: ThreadMetrics | undefined, endpoint: string): { onResponse?: (info: ResponseInfo) => void; untrackedPaths?: ReadonlySet<string> } {
  if (!metrics) return {};
  const http = metrics.http;
  return { onResponse: (info) => http.record(info.method, info.route, info.status, info.durationMs / 1000), untrackedPaths: new Set([endpoint, '/admin/metrics']) };
}

/**
 * The 503s of an outage, expected while it lasts and answered with
 * `Retry-After`: this member is not serving (it joins again, its lease
 * lapsed, Redis is unreachable), the member that held a graph went down, a
 * graph's lease or ownership moved, the database is unreachable. The member
 * logs the state change itself; these are counted, not logged per request.
 */
const OUTAGE_CODES = new Set(['SVC_ERR_NOT_MEMBER', 'SVC_ERR_NODE_DOWN', 'SVC_ERR_REDIS_UNREACHABLE', 'SVC_ERR_LEASE_TIMEOUT', 'SVC_ERR_FENCED', 'SVC_ERR_STORE_UNAVAILABLE']);

/** How long a code of {@link OUTAGE_CODES} must not be seen before its next refusal is said again. */
const OUTAGE_QUIET_MS = 10_000;

/** One warning (no stack) when refusals of a code start — after {@link OUTAGE_QUIET_MS} without one — and silence while they go on. */
const outageWarnings = {
  last: new Map<string, number>(),
  note(log: Log, code: string, error: unknown, requestId: string, route: string): void {
    const now = Date.now();
    const last = this.last.get(code);
    this.last.set(code, now);
    if (last !== undefined && now - last < OUTAGE_QUIET_MS) return;
    const why = error instanceof Error ? error.message : String(error);
    log.warn({ code, req_id: requestId, route }, `requests answered 503 ${code} (${why}); while this lasts they are counted (requests_refused_total), not logged`);
  },
};

/** Warnings of an unreachable database: one line a second at most, with how many requests it refused meanwhile. */
const storeWarnings = {
  last: 0,
  refused: 0,
  note(log: Log, requestId: string): void {
    this.refused++;
    const now = Date.now();
    if (now - this.last < 1_000) return;
    log.warn({ req_id: requestId, refused: this.refused }, 'the database cannot be reached: requests answer 503 STORE_UNAVAILABLE');
    this.last = now;
    this.refused = 0;
  },
};

/** Why the shared database makes this thread unready (it cannot be reached), or undefined. */
function storeReadiness(store: AnchorStore, users: UsersRepository): string | undefined {
  const healthy = (x: unknown) => (x as { healthy?: boolean }).healthy !== false;
  return healthy(store) && healthy(users) ? undefined : 'the database cannot be reached';
}
