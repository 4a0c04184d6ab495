/**
 * WebSocket walkers at `/ws/<Name>`: the hub (sessions, timeouts, broadcast
 * across threads) and its two socket layers, uWebSockets.js and `ws`.
 */
export { WsHub, wsRoutes, DEFAULT_WS_LIMITS, WS_RELAY_TOPIC } from './hub.ts';
export type { WsRoute, WsLimits, WsHubOptions, SocketHandle, Conn, Upgrade } from './hub.ts';
export { attachUws } from './uws.ts';
export { attachNode } from './node.ts';
