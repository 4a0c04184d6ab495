/**
 * Service-to-service calls (README *Calls between svc apps*) and microservice mode:
 * `sv` (the public client), the sibling starter served from the main thread,
 * the gateway.
 */
import { join } from 'node:path';
import { fromReceive, replyLater, type ActorSystem } from '../../kernel/index.ts';
import { SvClient } from './client.ts';
import { importModule, type SvImportOptions, type SvModule } from './module.ts';
import { ServiceStarter } from './starter.ts';

export { SvClient, SV_DEFAULTS } from './client.ts';
export type { SvBinding, SvCallOptions, SvHooks, SvSettings, SvTestClient } from './client.ts';
export type { SvModule, SvImportOptions } from './module.ts';
export { RemoteWalker, BoundaryError, encodeBoundary, rehydrate } from './boundary.ts';
export { SV_ERRORS, SvCallError } from './errors.ts';
export type { SvErrorCode } from './errors.ts';
export { ServiceStarter, freePortInRange, PORT_RANGE, MAX_STARTING, PARENT_FD_VARIABLE } from './starter.ts';
export type { StarterOptions } from './starter.ts';
export { checkModuleName, moduleFile, urlVariable } from './names.ts';
export { startGateway } from './gateway.ts';
export type { GatewayOptions, Gateway } from './gateway.ts';
export { GatewayError, GATEWAY_ERRORS } from './gateway-errors.ts';
export type { GatewayErrorCode } from './gateway-errors.ts';
export type { GatewayCors } from './gateway-cors.ts';
export type { GatewayRoute } from './gateway-routes.ts';

let imported = 0;

/** This thread's client: outside a runtime it starts siblings itself (data beside `./.svc/data`). */
const client = new SvClient(() => {
  const starter = new ServiceStarter({ dataDir: join(process.cwd(), '.svc', 'data'), jwtSecret: process.env.JWT_SECRET ?? '' });
  return (module, baseDir) => starter.ensure(module, baseDir);
});

/** The main thread's actor that starts siblings for every worker thread. */
export const SV_ACTOR = 'sv';

/** Serve `starter` to the worker threads as `/user/sv` (the main thread of `svc start`). */
export function serveServiceStarter(system: ActorSystem, starter: ServiceStarter): void {
  system.spawn(
    fromReceive((msg: { module: string; baseDir: string }) => replyLater(starter.ensure(msg.module, msg.baseDir))),
    SV_ACTOR,
  );
}

/**
 * Another svc app's public functions and walkers, as a typed module.
 *
 * @example
 * import { sv } from 'svc';
 * const billing = sv.import<typeof import('./billing.ts')>('billing');
 * await billing.charge({ amount: 5 });             // its return value
 * const invoice = await billing.Invoice({ amount: 5 });
 * invoice.reports;                                 // what the walker reported
 */
export const sv = {
  import<M = Record<string, unknown>>(module: string, options?: SvImportOptions): SvModule<M> {
    const remote = importModule<M>(client, module, options);
    imported++;
    return remote;
  },
  /** Serve `module` from `url` (over `SVC_SV_<MODULE>_URL` and auto-start); `rpcTimeout`: its own, in seconds. */
  register: (module: string, url: string, options?: { rpcTimeout?: number }): void => client.register(module, url, options),
  unregister: (module: string): boolean => client.unregister(module),
  registerTestClient: (module: string, testClient: Parameters<SvClient['registerTestClient']>[1]): void => client.registerTestClient(module, testClient),
  unregisterTestClient: (module: string): boolean => client.unregisterTestClient(module),
  clearTestClients: (): void => client.clearTestClients(),
  resolveUrl: (module: string): string => client.resolveUrl(module),
  /** Replace some of the plugin hooks (`ensureSvService`, `svServiceCall`, `svWalkerCall`); returns the undoing. */
  plugin: (hooks: Parameters<SvClient['plugin']>[0]): (() => void) => client.plugin(hooks),
  /** The hooks in use; `sv.defaults` are the built-in ones (a plugin may call them). */
  get hooks() {
    return client.hooks;
  },
  get defaults() {
    return client.defaults;
  },
  /** The state of a provider's circuit in this thread. */
  circuit: (module: string) => client.circuit(module),
  /** Close this thread's connection pools and forget auto-started URLs. */
  close: (): Promise<void> => client.close(),
};

/** The runtime binds its threads here (base folder, settings, the main thread's starter). */
export function bindSv(binding: Parameters<SvClient['bind']>[0]): () => void {
  return client.bind(binding);
}

/** Whether this thread's code imported any service (the front then keeps `Authorization` for forwarding). */
export function importsServices(): boolean {
  return imported > 0;
}
