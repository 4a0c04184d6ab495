/**
 * What the main thread of `svc start` starts from: the entry and the command's
 * flags ({@link StartRequest}), the configuration they select
 * ({@link StartOptions}, by {@link loadStart}); how it speaks (`say`, one
 * line on stdout; a {@link StartError} ends the start with one line); the boot
 * data it hands its worker threads and the orders it gives them.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerPool } from '../../transports/worker/index.ts';
import { PARENT_FD_VARIABLE } from '../../transports/sv/index.ts';
import { CONTROL_ACTOR, type HttpControl, type ServeBoot } from '../boot.ts';
import { loadConfig, type SvcConfig } from '../config.ts';
import { dataPaths, type DataPaths } from '../paths.ts';

/** The module every worker thread runs: the runtime of a serving thread. */
export const SERVE_WORKER = fileURLToPath(new URL('../worker.ts', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string };

/** What a port is, for the messages about one. */
export const PORT_RANGE = 'a port is 0–65535 (0: any free port)';

/** A start that cannot go on: its message is the one line the user reads (exit 1). */
export class StartError extends Error {}

/** Whether the process is stopping (a signal, or its launcher gone): set once, read by the modules that must not act then. */
export interface Lifecycle {
  stopping: boolean;
}

/** One line on stdout. */
export function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** What the command line asks of `svc start`. */
export interface StartRequest {
  /** The entry module (absolute). */
  entry: string;
  profile?: string;
  /** `--port` / `--api_port`, `--host`, `--workers`: over svc.toml and the environment. */
  port?: number;
  host?: string;
  workers?: number;
  /** `--dev`: reload on changes. */
  dev: boolean;
  /** `--faux`: print the endpoints, start nothing. */
  faux: boolean;
  /** Drain when the process that launched this one (npm) is gone; answers what is watched, or undefined (the command line's watch). */
  watchLauncher?: (gone: (why: string) => void, enabled: boolean) => { watching: string; stop(): void } | undefined;
}

/** A start request with the configuration it selects. */
export interface StartOptions extends StartRequest {
  projectRoot: string;
  production: boolean;
  /** Set in a sibling started for `sv` calls: the pipe its parent holds (gone: the parent is gone). */
  parentFd: string | undefined;
  config: SvcConfig;
  /** The entry as the worker threads name it (relative to the current folder, no extension). */
  moduleName: string;
  paths: DataPaths;
  version: string;
}

/**
 * The configuration of a start (svc.toml, profile, environment, flags); its warnings said on stderr.
 *
 * @example
 * const options = loadStart({ entry: '/srv/app/main.ts', dev: false, faux: false });
 */
export function loadStart(request: StartRequest): StartOptions {
  const { entry } = request;
  // `--profile`, else SVC_PROFILE (how a deployment's pods get the profile it was planned with).
  const profile = request.profile ?? (process.env.SVC_PROFILE || undefined);
  const projectRoot = dirname(entry);
  const production = profile === 'prod' || profile === 'production' || process.env.NODE_ENV === 'production';
  const flagValues: Record<string, unknown> = {};
  if (request.port !== undefined) flagValues['scale.server.port'] = request.port;
  if (request.host !== undefined) flagValues['scale.server.host'] = request.host;
  if (request.workers !== undefined) flagValues['scale.server.workers'] = request.workers;
  // A sibling started for `sv` calls: its data is its own (embedded SQLite in SVC_DATA_DIR), whatever the shared
  // svc.toml says of databases, Redis and microservice mode; it stops when the process that started it is gone.
  const parentFd = process.env[PARENT_FD_VARIABLE];
  if (parentFd) {
    for (const key of ['docdb_uri', 'kv_url', 'shelf_db_path', 'users_db_path']) flagValues[`scale.database.${key}`] = '';
    flagValues['scale.microservices.enabled'] = false;
    // No admin account of its own (nobody could reach it), unless it is the main module of microservice mode.
    if (process.env.SVC_SV_ADMIN !== '1') flagValues['scale.admin.enabled'] = false;
  }
  const { config, warnings } = loadConfig({ dir: projectRoot, profile, env: process.env, flags: flagValues });
  for (const w of warnings) process.stderr.write(`svc: warning: ${w}\n`);
  const moduleName = relative(process.cwd(), entry).replace(/\.[mc]?[jt]s$/, '') || basename(entry);
  return { ...request, profile, projectRoot, production, parentFd, config, moduleName, paths: dataPaths(projectRoot, config), version: PACKAGE.version };
}

/** The boot data of a worker thread of this start (`extra` over the defaults). */
export function workerBoot(options: StartOptions, transport: 'uws' | 'node', extra: Partial<ServeBoot>): ServeBoot {
  return {
    faux: false,
    moduleName: options.moduleName,
    title: basename(options.projectRoot),
    projectRoot: options.projectRoot,
    config: options.config,
    jwtSecret: '',
    dev: options.dev,
    transport,
    port: options.config['scale.server'].port,
    listeners: [],
    listenNow: true,
    storePath: options.paths.storePath,
    usersPath: options.paths.usersPath,
    version: options.version,
    ...extra,
  };
}

/**
 * An order to a worker thread's control actor; its answer.
 *
 * @example
 * const routes = await order<RouteSummary[]>(pool, 'w1', { t: 'describe' });
 */
export function order<T = unknown>(pool: WorkerPool, node: string, msg: HttpControl, timeoutMs?: number): Promise<T> {
  return pool.system.refFromAddress({ node, path: `/user/${CONTROL_ACTOR}` }).ask(msg, timeoutMs) as Promise<T>;
}
