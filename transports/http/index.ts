/**
 * The HTTP front: generated endpoints, the envelope, the identity routes, the
 * runtime's admin routes and the admin portal, OpenAPI and docs, static
 * files, over uWebSockets.js or node:http.
 */
export { Front } from './front.ts';
export { HTTP_RESPONSE_CHANNEL, PERMISSIVE_CORS, UNMATCHED_ROUTE, SV_HEADER } from './front.ts';
export type { FrontOptions, AccessEntry, ResponseInfo } from './front.ts';
export { CorsPolicy } from './cors.ts';
export type { CorsSettings, HeaderBag, RequestHeaders } from './cors.ts';
export { traceIdOf, newTraceId, isTraceId } from './trace.ts';
export { readPartsAhead } from './multipart.ts';
export { buildRoutes, Router } from './router.ts';
export type { EndpointRoute } from './router.ts';
export { identityRoutes } from './identity-routes.ts';
export { ssoRoutes } from './sso-routes.ts';
export { apiKeyRoutes } from './api-key-routes.ts';
export { graphRoutes } from './graph-routes.ts';
export { clusterRoute, eventsRoute, EVENTS_TOPIC, metricsRoutes, staticTokenCheck, statsRoute, STATS_TOPIC } from './admin-routes.ts';
export type { BrokerView, ClusterView, MetricsSource, WorkerStats } from './admin-routes.ts';
export type { GraphRoutesOptions } from './graph-routes.ts';
export { appFrames, failureStack, HTTP_ERRORS, httpError, HttpError, toHttpError } from './errors.ts';
export type { ErrorBody, HttpErrorCode } from './errors.ts';
export { openApiDocument } from './openapi.ts';
export type { OpenApiOptions } from './openapi.ts';
export { webhookSignature, parseSignature, WebhookGate } from './webhook-auth.ts';
export type { WebhookOptions, WebhookKeys } from './webhook-auth.ts';
export { failure, newRequestId } from './envelope.ts';
export { Docs } from './docs.ts';
export { StaticFiles } from './static.ts';
export { listenUws, loadUws } from './uws-server.ts';
export { listenNode } from './node-server.ts';
export { AcceptGuard, openFileLimit, openDescriptors } from './accept-guard.ts';
export { ClientAddresses, TrustedProxyError, plainAddress } from './client-address.ts';
export type { ForwardingHeader } from './client-address.ts';
export type { HttpServer, ListenOptions } from './server.ts';
export type { HttpRequest, HttpResponse, BuiltinRoute, BuiltinContext, BuiltinResult } from './types.ts';
