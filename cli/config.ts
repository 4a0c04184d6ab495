/**
 * `svc/cli/config`: the settings loader, kept at this path for code that
 * imports it from here. The settings belong to the runtime (`runtime/config.ts`).
 */
export { SCHEMA, ConfigError, loadConfig } from '../runtime/index.ts';
export type { SvcConfig, LoadedConfig } from '../runtime/index.ts';
