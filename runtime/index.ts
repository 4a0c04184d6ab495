/**
 * The composition root: `createRuntime(options)` builds what one thread of
 * `svc start` serves from modules `{ start, drain, close }` in a declared
 * order; `composeRuntime(modules)` runs any list of modules.
 */
// The built-in backends register themselves with their seams: once, here, for every thread the runtime builds.
import '../stores/index.ts';

export { Runtime, RuntimeError, composeRuntime } from './runtime.ts';
export type { RuntimeContext, RuntimeModule } from './runtime.ts';
export { RUNTIME_ERRORS } from './errors.ts';
export { SCHEMA, ConfigError, loadConfig } from './config.ts';
export type { SvcConfig, LoadedConfig } from './config.ts';
export { dataPaths } from './paths.ts';
export type { DataPaths } from './paths.ts';
export { createRuntime, serveModules, CONTROL_ACTOR, MAIN_METRICS_ACTOR } from './serve.ts';
export { MainMetrics, serveMainMetrics } from './metrics/index.ts';
export type { ServeBoot, ServeOptions, HttpControl, WorkerStats, RouteSummary } from './serve.ts';
export { testApp, injectInto } from './testing.ts';
export type { TestApp, TestAppOptions, InjectRequest, InjectResponse } from './testing.ts';
