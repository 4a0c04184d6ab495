/**
 * The sandbox proxy (`svc sandbox proxy`): previews of sandboxes served at `{sandbox_id}.preview.<domain>`, routed
 * to their pods by a watch of the sandbox pods, HTTP and WebSocket relayed both ways, with an optional private mode
 * (signed, expiring preview tokens). Its door: the server, the route table, the settings from the environment,
 * preview tokens for the app that issues them, and the catalogue of errors.
 */
export { startSandboxProxy } from './server.ts';
export type { SandboxProxy, SandboxProxyOptions } from './server.ts';
export { followSandboxPods, RouteTable, routeOf, SANDBOX_ID_LABEL, SANDBOX_ID_PATTERN, sandboxIdOf } from './routes.ts';
export type { PodLike, Route } from './routes.ts';
export { checkPreviewSecret, MIN_PREVIEW_SECRET_BYTES, proxySettings } from './settings.ts';
export type { ProxySettings } from './settings.ts';
export { PREVIEW_AUDIENCE, PreviewVerifier, signPreviewToken, verifyPreviewToken } from '../../actors/sandbox/index.ts';
export type { PreviewClaims } from '../../actors/sandbox/index.ts';
export { TOKEN_COOKIE, TOKEN_HEADER, TOKEN_PARAM, TOKEN_PROTOCOL_PREFIX } from './private-mode.ts';
export { LOADING_REFRESH_SECONDS, loadingPage } from './loading-page.ts';
export { PROXY_CONFIG_CODE, PROXY_ERRORS, ProxyConfigError } from './errors.ts';
export type { ProxyErrorCode } from './errors.ts';
