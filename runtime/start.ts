/**
 * What the main thread of `svc start` runs, as runtime modules in their start
 * order (one file each under `main/`), composed and checked as a worker
 * thread's are (`serve.ts`):
 *
 * - serving: config, app, data, hasher, stores, port, starter, member (a
 *   cluster member), pool, report, join (a cluster member), reload (`--dev`),
 *   signals;
 * - `--faux`: config, app (the endpoints printed; nothing else starts);
 * - microservice mode: config, gateway, signals.
 *
 * The main thread never loads the app itself: it bundles it for the worker
 * threads, starts them, and supervises — the ready line, signals, `--dev`
 * reloads. SIGINT and SIGTERM drain the modules (the workers finish what they
 * hold) and close them in reverse.
 */
import { randomBytes } from 'node:crypto';
import { TrustedProxyError } from '../transports/http/index.ts';
import { ConfigError } from './config.ts';
import { composeRuntime, type Runtime, type RuntimeModule } from './runtime.ts';
import { appModule, buildErrors } from './main/app.ts';
import { configModule } from './main/config-check.ts';
import { dataModule } from './main/data.ts';
import { DataLockError } from './main/data-lock.ts';
import { gatewayModule } from './main/gateway.ts';
import { hasherModule } from './main/hasher.ts';
import { joinModule } from './main/join.ts';
import { memberModule } from './main/member.ts';
import { type Lifecycle, StartError, type StartOptions } from './main/options.ts';
import { poolModule } from './main/pool.ts';
import { portModule } from './main/port.ts';
import { reloadModule } from './main/reload.ts';
import { reportModule } from './main/report.ts';
import { SecretError } from './main/secrets.ts';
import { signalsModule } from './main/signals.ts';
import { starterModule } from './main/starter.ts';
import { storesModule } from './main/stores.ts';

/**
 * The runtime of the main thread of `svc start`, not started yet (its modules checked).
 *
 * @example
 * await createStartRuntime(loadStart({ entry, dev: false, faux: false })).start(); // serving once it resolves
 */
export function createStartRuntime(options: StartOptions): Runtime {
  // What failed to drain or close: the shutdown then fails (exit 1), after every module was closed.
  const failures: unknown[] = [];
  return composeRuntime(startModules(options, failures), { onError: (error) => void failures.push(error) });
}

/** The modules of the main thread of `svc start`, in start order. */
export function startModules(options: StartOptions, failures: unknown[] = []): RuntimeModule[] {
  const { config } = options;
  const life: Lifecycle = { stopping: false };
  const timeout = config['scale.server'].shutdown_timeout_ms;
  // Microservice mode: this process is the gateway; every module (the entry first) runs as its own process.
  // `--faux` starts nothing, in either mode: it prints the entry's endpoints.
  if (options.faux) return [configModule(options), appModule(options)];
  if (config['scale.microservices'].enabled && !options.parentFd) {
    return [configModule(options), gatewayModule(options), signalsModule(options, life, (signal) => `${signal}: stopping the gateway and its modules`, failures)];
  }
  const member = Boolean(config['scale.database'].kv_url);
  const processId = randomBytes(4).toString('hex');
  return [
    configModule(options),
    appModule(options),
    dataModule(options),
    hasherModule(options),
    storesModule(options),
    portModule(options),
    starterModule(options),
    ...(member ? [memberModule(options, processId)] : []),
    poolModule(options, processId, life),
    reportModule(options),
    ...(member ? [joinModule(options)] : []),
    ...(options.dev ? [reloadModule(options, life)] : []),
    signalsModule(options, life, (signal) => `${signal}: ${member ? 'leaving the cluster, ' : ''}draining (up to ${timeout} ms)`, failures),
  ];
}

/** The one line a failed start says: the message of a start error (configuration, secrets, data lock, proxies), or esbuild's errors with their locations. */
export function startFailure(error: unknown): string {
  if (error instanceof StartError || error instanceof ConfigError || error instanceof SecretError || error instanceof DataLockError || error instanceof TrustedProxyError) return error.message;
  return buildErrors(error) ?? (error as Error).message;
}
