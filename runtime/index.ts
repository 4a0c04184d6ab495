/**
 * The composition root: `createRuntime(options)` builds what one thread of
 * `svc start` serves from modules `{ start, drain, close }` in a declared
 * order; `composeRuntime(modules)` runs any list of modules, checked when it
 * is composed against the typed keys each declares (`keys.ts`).
 */
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
export { testApp, injectInto } from './testing.ts';
export type { TestApp, TestAppOptions, InjectRequest, InjectResponse } from './testing.ts';
