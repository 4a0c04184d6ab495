/**
 * The composition root: `createRuntime(options)` builds what a worker thread
 * of `svc start` serves, `createStartRuntime(options)` its main thread, each
 * from modules `{ start, drain, close }` in a declared order;
 * `composeRuntime(modules)` runs any list of modules, checked when it is
 * composed against the typed keys each declares (`keys.ts`).
 */
// The built-in backends register themselves with their seams: once, here, for every thread the runtime builds.
import '../stores/index.ts';

export { Runtime, RuntimeError, RUNTIME, composeRuntime, key } from './runtime.ts';
export type { Key, RuntimeContext, RuntimeModule } from './runtime.ts';
export { RUNTIME_ERRORS } from './errors.ts';
export { SCHEMA, ConfigError, loadConfig } from './config.ts';
export type { SvcConfig, LoadedConfig } from './config.ts';
export { dataPaths } from './paths.ts';
export type { DataPaths } from './paths.ts';
export { createRuntime, serveModules } from './serve.ts';
export { CONTROL_ACTOR, MAIN_METRICS_ACTOR } from './boot.ts';
export { appFingerprint } from './fingerprint.ts';
export { MainMetrics, serveMainMetrics } from './metrics/index.ts';
export type { ServeBoot, ServeOptions, HttpControl, RouteSummary } from './boot.ts';
export type { WorkerStats } from '../transports/http/index.ts';
export { createStartRuntime, startFailure, startModules } from './start.ts';
export { holdYoungGeneration } from '../transports/worker/index.ts';
export { loadStart, PORT_RANGE, StartError } from './main/options.ts';
export type { StartOptions, StartRequest } from './main/options.ts';
export { jwtSecret, webhookSecret, SecretError } from './main/secrets.ts';
export type { ResolvedSecret } from './main/secrets.ts';
export { lockDataFolder, DataLockError } from './main/data-lock.ts';
export type { DataLock } from './main/data-lock.ts';
export { freePort } from './main/ports.ts';
export { testApp, injectInto } from './testing.ts';
export type { TestApp, TestAppOptions, InjectRequest, InjectResponse } from './testing.ts';
