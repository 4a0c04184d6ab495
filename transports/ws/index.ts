/**
 * WebSocket walkers at `/ws/<Name>`: the hub (sessions, timeouts, broadcast
 * across threads) and its two socket layers, uWebSockets.js and `ws`.
 */
export { WsHub, wsRoutes, DEFAULT_WS_LIMITS, WS_RELAY_TOPIC } from './hub.ts';
export { RoomHub, ROOMS_TOPIC, PRESENCE_TOPIC, ROOM_KIND, roomTopic, userTopic } from './rooms.ts';
export type { RoomConn, RoomHubOptions } from './rooms.ts';
export type { WsRoute, WsLimits, WsHubOptions, SocketHandle, Conn, Upgrade } from './hub.ts';
export { attachUws } from './uws.ts';
export { attachNode } from './node.ts';
