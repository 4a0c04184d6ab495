/**
 * The gateway's CORS policy (`[scale.microservices.cors]`, README
 * *Microservice mode*): the headers of its answers and preflights, in place
 * of the modules' own, and the origins a WebSocket upgrade is refused from.
 * One implementation with the single-process server's `[scale.server.cors]`:
 * `CorsPolicy` of the HTTP front (transports/http/cors.ts).
 */
import type { CorsSettings } from '../http/index.ts';

export { CorsPolicy } from '../http/index.ts';

/** `[scale.microservices.cors]`: the keys of every CORS section. */
export type GatewayCors = CorsSettings;
