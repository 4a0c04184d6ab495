/**
 * `svc start [entry]`: serve every walker and function of an app.
 *
 * The main thread never loads the app itself: it bundles it for the worker
 * threads (a syntax error is reported here, with its location), starts them,
 * and supervises — ready line, signals, `--dev` reloads.
 */
import { readdirSync, readFileSync, statSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkerPool, forgetBuilds, compileWorker } from '../../transports/worker/index.ts';
import { ClientAddresses, loadUws, openFileLimit, TrustedProxyError } from '../../transports/http/index.ts';
import { ConfigError, dataPaths, loadConfig, MainMetrics, MAIN_METRICS_ACTOR, serveMainMetrics } from '../../runtime/index.ts';
import { freePort } from '../ports.ts';
import { EntryError, resolveEntry } from '../entry.ts';
import { jwtSecret, SecretError, webhookSecret } from '../secrets.ts';
import { DataLockError, lockDataFolder } from '../data-lock.ts';
import { bootstrapAccounts, openUsersRepository, Passwords, serveUsersWriter, ThreadHasher } from '../../actors/identity/index.ts';
import { openAnchorStore, serveStoreWriter } from '../../actors/graph/index.ts';
import { serveActivationLeases, threadOf } from '../../kernel/index.ts';
import { ClusterMember } from '../../cluster/index.ts';
import { sharedBudgetMemory } from '../../actors/events/index.ts';
import { MemoryStreams, redactUri, redactUrl, serveMemoryStreams, takeServingLock } from '../../stores/index.ts';
import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { checkModuleName, GatewayError, PARENT_FD_VARIABLE, ServiceStarter, serveServiceStarter, startGateway, urlVariable } from '../../transports/sv/index.ts';
import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import type { HttpControl, RouteSummary, ServeBoot, SvcConfig } from '../../runtime/index.ts';
import { watchLauncher } from '../launcher.ts';

export interface StartFlags {
  port?: number | string;
  host?: string;
  faux?: boolean;
  dev?: boolean;
  client?: boolean;
  profile?: string;
  api_port?: number | string;
  apiPort?: number | string;
  main?: boolean;
  workers?: number | string;
}

const SERVE_WORKER = fileURLToPath(new URL('../serve-worker.ts', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string };

class StartError extends Error {}

/** A database that cannot be reached (or a backend this build lacks) at start: one line, exit 1. */
async function unlessUnreachable<T>(opening: Promise<T>, cleanup?: () => Promise<unknown>): Promise<T> {
  try {
    return await opening;
  } catch (error) {
    await cleanup?.().catch(() => undefined);
    const code = (error as { code?: unknown }).code;
    if (code === 'SVC_ERR_STORE_UNAVAILABLE' || code === 'SVC_ERR_STORE_BACKEND') throw new StartError((error as Error).message);
    throw error;
  }
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Exit once `stopping` settles: 0 and `svc: stopped`, or 1 with why the shutdown failed. */
function exitAfter(stopping: Promise<unknown>): void {
  void stopping.then(
    () => {
      say('svc: stopped');
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`svc: shutdown failed: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}

function int(value: unknown, flag: string): number | undefined {
  if (value === undefined || value === '' || value === true) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new StartError(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return n;
}

const PORT_RANGE = 'a port is 0–65535 (0: any free port)';

/** A port flag: a whole number 0–65535, or undefined when not given. */
function portFlag(value: unknown, flag: string): number | undefined {
  if (value === undefined || value === '' || value === true) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new StartError(`invalid port ${JSON.stringify(value)} for ${flag}: ${PORT_RANGE}`);
  return n;
}


/** esbuild's errors as `file:line:col: message` lines. */
function buildErrors(error: unknown): string | undefined {
  const errors = (error as { errors?: { text: string; location?: { file: string; line: number; column: number } | null }[] }).errors;
  if (!Array.isArray(errors)) return undefined;
  return errors.map((e) => (e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ${e.text}` : e.text)).join('\n');
}

interface Running {
  pool: WorkerPool;
  port: number;
}

export async function start(entryArg: string | undefined, flags: StartFlags): Promise<void> {
  try {
    await run(entryArg, flags);
  } catch (error) {
    const message =
      error instanceof StartError || error instanceof EntryError || error instanceof ConfigError || error instanceof SecretError || error instanceof DataLockError || error instanceof TrustedProxyError
        ? error.message : (buildErrors(error) ?? (error as Error).message);
    process.stderr.write(`svc: ${message}\n`);
    process.exit(1);
  }
}

async function run(entryArg: string | undefined, flags: StartFlags): Promise<void> {
  const entry = resolveEntry(entryArg, 'svc start <entry.ts>');
  const projectRoot = dirname(entry);
  const profile = flags.profile;
  const production = profile === 'prod' || profile === 'production' || process.env.NODE_ENV === 'production';
  const flagValues: Record<string, unknown> = {};
  const apiPort = portFlag(flags.api_port ?? flags.apiPort, '--api_port');
  const port = apiPort !== undefined && apiPort > 0 ? apiPort : portFlag(flags.port, '--port');
  if (port !== undefined) flagValues['scale.server.port'] = port;
  if (typeof flags.host === 'string') flagValues['scale.server.host'] = flags.host;
  const workersFlag = int(flags.workers, '--workers');
  if (workersFlag !== undefined) flagValues['scale.server.workers'] = workersFlag;
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

  const server = config['scale.server'];
  // The configuration checks the lower bound (svc.toml, SVC_PORT, PORT); flags were checked above.
  if (server.port > 65535) throw new StartError(`invalid port ${server.port} in [scale.server] port (or SVC_PORT / PORT): ${PORT_RANGE}`);
  let transport: 'uws' | 'node' = server.transport === 'node' ? 'node' : 'uws';
  if (transport === 'uws') {
    const uws = loadUws();
    if (uws instanceof Error) {
      if (server.transport === 'uws') throw new StartError(`uWebSockets.js cannot load here: ${uws.message}`);
      say(`svc: uWebSockets.js cannot load on this platform (${uws.message.split('\n')[0]}); serving with node:http`);
      transport = 'node';
    }
  }
  const workers = server.workers || Math.max(1, availableParallelism());
  // Checked here, where a mistake stops the start with one line (the workers build their own).
  new ClientAddresses(server.trusted_proxies);
  const files = openFileLimit();
  if (files < server.max_connections + 256) {
    process.stderr.write(
      `svc: warning: the open-file limit (ulimit -n) is ${files}, below max_connections (${server.max_connections}) + 256: ` +
        `raise it (ulimit -n ${server.max_connections + 256}, or LimitNOFILE= under systemd) or lower [scale.server] max_connections (SVC_MAX_CONNECTIONS)\n`,
    );
  }
  const moduleName = relative(process.cwd(), entry).replace(/\.[mc]?[jt]s$/, '') || basename(entry);
  // Microservice mode: this process is the gateway; every module (the entry first) runs as its own process.
  // `--faux` starts nothing, in either mode: it prints the entry's endpoints below.
  if (config['scale.microservices'].enabled && !parentFd && !flags.faux) return runGateway({ entry, projectRoot, config, profile, production, workers });

  // Syntax errors surface here, with file and line.
  await compileWorker(SERVE_WORKER, entry);

  const { dataDir, storePath, usersPath, docdbUri, backend, sqliteFiles } = dataPaths(projectRoot, config);
  const boot = (extra: Partial<ServeBoot>): ServeBoot => ({
    faux: false,
    moduleName,
    title: basename(projectRoot),
    projectRoot,
    config,
    jwtSecret: '',
    dev: flags.dev === true,
    transport,
    port: server.port,
    listeners: [],
    listenNow: true,
    storePath,
    usersPath,
    version: PACKAGE.version,
    ...extra,
  });

  // The app is loaded once in a probe thread before anything is created on disk: a throw at module level, a
  // misspelled name or a class declared wrongly stops the start here, with the file, line and column.
  // A sibling of `sv` calls skips it (its parent shows why it failed, and waits for it): it is started on a call.
  const endpoints = parentFd && !flags.faux ? undefined : await describeApp(entry, boot({ faux: true }), projectRoot);
  if (flags.faux && endpoints) {
    printRoutes(endpoints);
    return;
  }

  // Each worker thread opens the stores itself: a store inside one thread would split the data between them.
  if (backend === 'memory' || storePath === ':memory:') throw new StartError('[scale.database] docdb_uri: memory stores live inside one thread (for tests); svc start needs a shared store (leave docdb_uri empty for SQLite in the data folder)');
  const kvUrl = config['scale.database'].kv_url;
  if (kvUrl && flags.dev) throw new StartError('--dev reloads one process; it cannot be combined with KV_URL (a cluster member)');
  if (kvUrl && !/^rediss?:\/\//.test(kvUrl)) throw new StartError(`[scale.database] kv_url (KV_URL) must be a redis:// or rediss:// URL, got ${redactUrl(kvUrl)}`);
  // One serving process per data folder (the graph store and the users store), for the life of this process;
  // the members of a cluster share theirs (SQLite in WAL mode across processes; the cluster keeps one owner per graph).
  for (const file of sqliteFiles) lockDataFolder(file, { shared: Boolean(kvUrl) });
  const secret = jwtSecret({ configured: config['scale.jwt'].secret, production, projectRoot });
  // Webhook signatures need a secret only with webhook walkers (served at /webhook/<Name>) and verify_signature on.
  // --dev resolves one anyway: a reload may add the first webhook walker, and workers cannot make one up then.
  const webhookConfig = config['scale.webhook'];
  const webhooks = endpoints?.some((e) => e.path.startsWith('/webhook/')) ?? false;
  const hookSecret = webhookSecret({ configured: webhookConfig.secret, production, projectRoot, needed: webhookConfig.verify_signature && (webhooks || (flags.dev === true && !production)) });
  if (hookSecret.warning) process.stderr.write(`svc: warning: ${hookSecret.warning}\n`);
  // Password hashing for the whole process: a few low-priority threads, served to the workers.
  const hasher = new ThreadHasher({ threads: config['scale.auth'].hash_concurrency, nice: config['scale.auth'].hash_nice });
  // SQLite with several worker threads: this thread holds the one writing connection of each file for the whole
  // process (workers read on their own and hand writes here), so no worker waits on another's write lock. With one
  // worker, that worker is the process's only writer and writes in its own thread (measured: handing writes to this
  // thread halved the write throughput of a single worker pinned to one core).
  // A shared database: reached once here (unreachable: one line, exit 1), its tables made (and legacy users migrated)
  // before any worker connects.
  const shared = backend !== 'sqlite';
  const users = await unlessUnreachable(openUsersRepository(docdbUri, { path: usersPath, baseDir: projectRoot }));
  if (shared) await unlessUnreachable(openAnchorStore(docdbUri, { baseDir: projectRoot }).then((store) => store.close()), () => users.close());
  // As for a SQLite data folder: one process serves a PostgreSQL database outside a cluster (revocations and the
  // ownership of graphs travel between processes through Redis), any number of members inside one.
  if (backend === 'postgres' || backend === 'postgresql') {
    const lock = await unlessUnreachable(
      takeServingLock(docdbUri, { shared: Boolean(kvUrl), onLost: (why) => process.stderr.write(`svc: warning: ${why}\n`) }),
      () => users.close(),
    );
    if (!lock) {
      await users.close();
      throw new StartError(
        kvUrl
          ? 'another svc process is serving this database outside a cluster; stop it, or give it the same KV_URL'
          : 'another svc process is serving this database; set KV_URL (the same Redis) on every process to run several',
      );
    }
  }
  const migrated = (users as { migrated?: number }).migrated ?? 0;
  if (migrated > 0) say(`svc: migrated ${migrated} user${migrated === 1 ? '' : 's'} of the Python original (their old password hashes are replaced at their next login)`);
  const writers = backend === 'sqlite' && workers > 1 && config['scale.database'].sqlite_writer === 'process' ? await openAnchorStore(docdbUri, { path: storePath, baseDir: projectRoot, synchronous: config['scale.database'].synchronous as 'NORMAL' | 'FULL' }) : undefined;
  const closeWriters = async (): Promise<void> => {
    await users.close();
    await writers?.close();
  };
  // The guest and the bootstrap admin, once, before any worker serves.
  try {
    await bootstrapAccounts({
      users,
      passwords: new Passwords(hasher),
      admin: config['scale.admin'],
      passwordFile: join(dataDir, 'admin_password'),
      say,
    });
  } catch (error) {
    await closeWriters();
    throw error;
  }
  if (!writers) await users.close();
  const host = server.host;
  const chosen = await freePort(host, server.port);
  if (server.port !== 0 && chosen !== server.port) say(`svc: port ${server.port} is in use; using ${chosen}`);
  const listeners = transport === 'uws' ? workerIds(workers) : ['w1'];
  const processId = randomBytes(4).toString('hex');
  // Siblings of `sv` calls, started on the workers' demand (and stopped with this process).
  const svConfig = config['scale.sv'];
  const starter = new ServiceStarter({
    dataDir,
    jwtSecret: secret.secret,
    webhookSecret: hookSecret.secret,
    profile,
    workers: svConfig.workers,
    startTimeoutMs: svConfig.start_timeout * 1000,
    // A sibling that calls this app back reaches this process.
    self: { name: basename(entry).replace(/\.[mc]?[jt]s$/, ''), url: `http://${/^(0\.0\.0\.0|::|)$/.test(host) ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${chosen}` },
  });

  // A cluster member: Redis and the link port first (Redis unreachable: one line, exit 1).
  const clusterConfig = config['scale.cluster'];
  const clusterName = clusterConfig.name || defaultClusterName(projectRoot, entry);
  let member: ClusterMember | undefined;
  if (kvUrl) {
    try {
      member = await ClusterMember.open({
        kvUrl,
        name: clusterName,
        leaseMs: clusterConfig.lease_ms,
        host,
        advertiseHost: clusterConfig.advertise_host,
        processId,
        secret: secret.secret,
        version: PACKAGE.version,
        log: (level, message) => (level === 'info' ? say(`svc: ${message}`) : process.stderr.write(`svc: ${message}\n`)),
      });
    } catch (error) {
      await closeWriters();
      throw new StartError((error as Error).message);
    }
  }
  const cluster = member
    ? {
        name: clusterName,
        kvUrl,
        processId,
        state: member.state.buffer,
        invalidation: { enabled: config['scale.database'].kv_l1_invalidation_enabled, channel: config['scale.database'].kv_l1_invalidation_channel },
      }
    : undefined;
  // Events on memory streams (no url, no kv_url): this thread keeps them for every worker, across --dev reloads.
  const events = config['scale.events'];
  const memoryEvents = events.enabled && !events.url && !kvUrl ? new MemoryStreams() : undefined;
  // Metrics of this thread (the process, password hashing, the cluster member), asked by the workers at each scrape.
  const mainMetrics = config['scale.metrics'].enabled
    ? new MainMetrics(config['scale.metrics'].namespace, {
        hasher,
        ...(member ? { member: () => member && { members: member.members().length, counters: member.counters, links: member.links.counters } } : {}),
      })
    : undefined;
  const bootData = boot({
    jwtSecret: secret.secret,
    webhookSecret: hookSecret.secret,
    port: chosen,
    listeners,
    processWriters: writers !== undefined,
    activationLeases: true,
    schemaReady: shared,
    memoryEventsOnMain: memoryEvents !== undefined,
    // One byte budget of buffered events for every worker thread (and for the workers of a --dev reload).
    eventsBuffer: sharedBudgetMemory(),
    mainMetrics: mainMetrics !== undefined,
    svStarterOnMain: true,
    ...(cluster ? { cluster } : {}),
  });

  const launch = async (listenNow = true): Promise<Running> => {
    let pool: WorkerPool | undefined;
    pool = await WorkerPool.start({
      size: workers,
      module: SERVE_WORKER,
      app: entry,
      processId,
      // A member opens its port once it has joined (before, it knows no other member's partitions).
      data: { ...bootData, listenNow: listenNow && !member },
      ...(member ? { remote: [], onRelay: (from: string, to: string, bytes: Uint8Array) => member?.send(from, to, bytes) } : {}),
      onSystem: (system) => {
        hasher.serve(system);
        serveServiceStarter(system, starter);
        if (mainMetrics) serveMainMetrics(system, mainMetrics, MAIN_METRICS_ACTOR);
        if (memoryEvents) serveMemoryStreams(system, memoryEvents);
        // In a cluster a root's partition is live on one thread of one member: the process's leases are taken from Redis.
        serveActivationLeases(system, member ? { backing: member.backing, onError: (error, id) => process.stderr.write(`svc: the cluster lease of ${id} could not be taken: ${(error as Error).message}\n`) } : {});
        if (writers) {
          serveStoreWriter(system, writers);
          serveUsersWriter(system, users);
        }
      },
      // A thread that dies is replaced under the same name; its roots come back to it once it serves.
      replace: true,
      onExit: (node, code) => {
        if (!stopping) process.stderr.write(`svc: worker ${threadOf(node)} exited with code ${code}; starting a new one\n`);
      },
      onReplaced: (node, error) => {
        if (error) process.stderr.write(`svc: worker ${threadOf(node)} could not be replaced: ${(error as Error).message ?? error}\n`);
        else {
          // It opens its port only now that every thread counts it in (before, it would serve roots others still hold).
          void pool?.system
            .refFromAddress({ node, path: '/user/http' })
            .ask({ t: 'listen' } satisfies HttpControl)
            .then(() => process.stderr.write(`svc: worker ${threadOf(node)} is serving again\n`))
            .catch((error: unknown) => process.stderr.write(`svc: worker ${threadOf(node)} could not listen: ${(error as Error).message}\n`));
        }
      },
    });
    return { pool, port: chosen };
  };

  let stopping = false;
  let current: Running;
  try {
    current = await launch();
  } catch (error) {
    await member?.close();
    throw error;
  }
  let routes = endpoints ?? ((await current.pool.system.refFromAddress({ node: 'w1', path: '/user/http' }).ask({ t: 'describe' } satisfies HttpControl)) as RouteSummary[]);
  say(`svc: ${routes.length} endpoint${routes.length === 1 ? '' : 's'} from ${relative(process.cwd(), entry) || entry}`);
  // In --dev the table is printed, and printed again whenever a reload changes it.
  if (flags.dev) printRoutes(routes);
  say(`svc: store ${backend === 'sqlite' ? `sqlite at ${relative(process.cwd(), storePath) || storePath}` : `${backend} at ${redactUri(docdbUri)}`}; jwt: ${secret.source}`);
  // Also when --dev made a secret for webhooks still to come: a new file under .svc/ is always said.
  if (webhooks || hookSecret.generated) {
    const from = hookSecret.source === 'configured' ? (process.env.WEBHOOK_SECRET ? 'from WEBHOOK_SECRET' : 'from [scale.webhook] secret') : hookSecret.source;
    say(`svc: webhooks: ${webhookConfig.verify_signature ? `signatures verified (${webhookConfig.signature_header}) with ${from.startsWith('development') ? `the ${from}` : `the secret ${from}`}` : 'signatures NOT verified ([scale.webhook] verify_signature / SVC_WEBHOOK_VERIFY_SIGNATURE is false): the API key alone admits'}`);
  }
  const sso = ssoSummary(config);
  if (sso) say(`svc: ${sso}`);
  say(`svc: ${threadsLine(workers, transport)}${production ? ', production' : ''}${flags.dev ? ', dev (reloading on change)' : ''}`);
  if (member) {
    const pool = current.pool;
    const fingerprint = (await pool.system.refFromAddress({ node: 'w1', path: '/user/http' }).ask({ t: 'fingerprint' } satisfies HttpControl)) as string;
    try {
      await member.join(pool, fingerprint);
    } catch (error) {
      await pool.close({ deadlineMs: 0 });
      await member.close();
      await closeWriters();
      throw new StartError(`joining cluster ${clusterName} failed: ${(error as Error).message}`);
    }
    // Revocations published before the others counted this member in never reached it: read them again, then serve,
    // and once more after two heartbeats (by then every member has seen this one join).
    const reread = () => Promise.all(pool.workers.map((node) => pool.system.refFromAddress({ node, path: '/user/http' }).ask({ t: 'revocations' } satisfies HttpControl)));
    await reread();
    setTimeout(() => void reread().catch(() => undefined), Math.ceil((2 * clusterConfig.lease_ms) / 5)).unref();
    await Promise.all(listeners.map((thread) => pool.system.refFromAddress({ node: thread, path: '/user/http' }).ask({ t: 'listen' } satisfies HttpControl)));
    const others = member.members().length - 1;
    say(`svc: cluster ${clusterName}: joined as ${processId} (${others} other member${others === 1 ? '' : 's'}; link ${member.address}; Redis ${redactUrl(kvUrl)}; lease ${clusterConfig.lease_ms} ms)`);
  }

  const drain = async (running: Running, deadlineMs: number): Promise<void> => {
    await Promise.allSettled(
      running.pool.workers.map((node) =>
        running.pool.system.refFromAddress({ node, path: '/user/http' }).ask({ t: 'drain', deadlineMs } satisfies HttpControl, deadlineMs + 1000),
      ),
    );
    await running.pool.close({ deadlineMs });
  };
  /**
   * A member leaves gracefully: readiness turns false and the others stop placing partitions here, this
   * process's threads hand theirs over (each activation finishes what it has queued, then gives its lease
   * back, and the new owner takes it), requests in hand are answered, then the membership hears it left.
   */
  const leave = async (running: Running, deadlineMs: number): Promise<void> => {
    if (!member) return drain(running, deadlineMs);
    const pool = running.pool;
    await member.startLeaving();
    // The others hear of it on the membership channel within milliseconds (by the next heartbeat at worst): give them
    // that long before this process's own threads stop hosting, so no ask bounces between two views of the members.
    await new Promise((resolve) => setTimeout(resolve, Math.min(500, Math.ceil(clusterConfig.lease_ms / 10))));
    await Promise.allSettled(
      pool.workers.map((node) => pool.system.refFromAddress({ node, path: '/user/http' }).ask({ t: 'leaving', nodes: [...pool.workers], deadlineMs } satisfies HttpControl, deadlineMs + 1000)),
    );
    await Promise.allSettled(pool.workers.map((node) => pool.system.refFromAddress({ node, path: '/user/http' }).ask({ t: 'drain', deadlineMs } satisfies HttpControl, deadlineMs + 1000)));
    await member.leave();
    await pool.close({ deadlineMs });
  };
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    say(`svc: ${signal}: ${member ? 'leaving the cluster, ' : ''}draining (up to ${server.shutdown_timeout_ms} ms)`);
    exitAfter(
      leave(current, server.shutdown_timeout_ms)
        .then(closeWriters)
        .then(() => starter.close()),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  if (flags.dev) watchAndReload(projectRoot, async () => {
    forgetBuilds();
    await compileWorker(SERVE_WORKER, entry);
    // Loaded once on its own first: an app that fails to load, or declares a class wrongly, starts no new workers.
    const next = await describeApp(entry, boot({ faux: true }), projectRoot);
    if (transport === 'node') {
      // node:http cannot share the port: start the new workers, let the old ones go, then open the port again.
      const next = await launch(false);
      await drain(current, 2000);
      current = next;
      await next.pool.system.refFromAddress({ node: 'w1', path: '/user/http' }).ask({ t: 'listen' } satisfies HttpControl);
    } else {
      const next = await launch();
      const old = current;
      current = next;
      await drain(old, 2000);
    }
    say(`svc: reloaded ${relative(process.cwd(), entry) || entry}`);
    if (JSON.stringify(next) !== JSON.stringify(routes)) {
      routes = next;
      say(`svc: the endpoints changed (${routes.length}):`);
      printRoutes(routes);
    }
  }, () => stopping);
  if (parentFd) watchParent(Number(parentFd), () => shutdown('the process that started this one is gone'));
  // Under npx / npm exec / npm start: drained when npm is gone (SIGKILL reaches no handler; cli/launcher.ts).
  else sayWatching(watchLauncher((why) => shutdown(why), { enabled: server.watch_launcher }));
  // Last: signals are handled and, with --dev, changes watched from the moment a user or a test reads this line.
  say(`Server ready at http://${host}:${chosen}`);
}

/** The start log's line on a launcher watch (cli/launcher.ts). */
function sayWatching(watch: { watching: string } | undefined): void {
  if (watch) say(`svc: started by npm: drains when ${watch.watching} is gone (watch_launcher = false: never)`);
}

/**
 * A sibling's watch on its parent: the parent holds the other end of this
 * pipe and never writes; its end of file means the parent is gone (also when
 * it was killed with SIGKILL, which no handler sees).
 */
function watchParent(fd: number, gone: () => void): void {
  let pipe: Socket;
  try {
    pipe = new Socket({ fd, readable: true, writable: false });
  } catch (error) {
    process.stderr.write(`svc: ${PARENT_FD_VARIABLE}=${fd} is not a pipe (${(error as Error).message}); not watching the parent\n`);
    return;
  }
  let once = false;
  const end = (): void => {
    if (once) return;
    once = true;
    gone();
  };
  pipe.on('end', end).on('close', end).on('error', end);
  pipe.resume();
}

/** Load the app in a thread of its own (it serves nothing, opens nothing) and list its endpoints. */
async function describeApp(entry: string, data: ServeBoot, projectRoot: string): Promise<RouteSummary[]> {
  let pool: WorkerPool;
  try {
    pool = await WorkerPool.start({ size: 1, module: SERVE_WORKER, app: entry, data });
  } catch (error) {
    throw new StartError(loadError(error, projectRoot));
  }
  try {
    return (await pool.system.refFromAddress({ node: 'w1', path: '/user/http' }).ask({ t: 'describe' } satisfies HttpControl)) as RouteSummary[];
  } finally {
    await pool.close({ deadlineMs: 1000 });
  }
}

/** An error of the app's module as it loads: `file:line:col: message`, at the first frame in the project's own files. */
function loadError(error: unknown, projectRoot: string): string {
  const name = error instanceof Error && !['Error', 'SvcError'].includes(error.name) ? `${error.name}: ` : '';
  const message = `${name}${error instanceof Error ? error.message : String(error)}`;
  const stack = (error as { appStack?: unknown }).appStack ?? (error as { stack?: unknown }).stack;
  if (typeof stack !== 'string') return message;
  for (const line of stack.split('\n')) {
    const frame = /^\s+at (?:.*\()?(.+?):(\d+):(\d+)\)?$/.exec(line);
    if (!frame) continue;
    const file = (frame[1] as string).startsWith('file:') ? fileURLToPath(frame[1] as string) : (frame[1] as string);
    // The worker's generated entry (it imports the app) is no file of the app's.
    if (file.startsWith(`${projectRoot}${sep}`) && !file.includes(`${sep}node_modules${sep}`) && basename(file) !== 'svc-worker-entry.ts') return `${relative(process.cwd(), file) || file}:${frame[2]}:${frame[3]}: ${message}`;
  }
  return message;
}

/** A cluster's default name: the project folder and the entry file (`shop-app`). */
function defaultClusterName(projectRoot: string, entry: string): string {
  return `${basename(projectRoot)}-${basename(entry).replace(/\.[mc]?[jt]s$/, '')}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** What the threads do: on uWebSockets.js each serves the port; node:http cannot share one, so w1 alone serves it. */
function threadsLine(workers: number, transport: 'uws' | 'node'): string {
  const threads = `${workers} worker thread${workers === 1 ? '' : 's'}`;
  if (workers === 1) return `${threads}, serving HTTP, transport ${transport === 'uws' ? 'uWebSockets.js' : 'node:http'}`;
  if (transport === 'uws') return `${threads}, each serving HTTP, transport uWebSockets.js`;
  return `${threads} running walkers, one of them (w1) serving HTTP, transport node:http`;
}

function workerIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `w${i + 1}`);
}

/** The sign-in providers that are on, with the redirect URI to register at each; and those half set (one of the two values). */
function ssoSummary(config: SvcConfig): string | undefined {
  const host = config['scale.sso'].host.replace(/\/+$/, '');
  const on: string[] = [];
  const half: string[] = [];
  for (const platform of ['google', 'github', 'microsoft', 'oidc'] as const) {
    const { client_id, client_secret } = config[`scale.sso.${platform}`];
    if (client_id && client_secret) on.push(`${platform} (redirect URI ${host ? `${host}/sso/${platform}/callback` : `<this server's address>/sso/${platform}/callback: set [scale.sso] host`})`);
    else if (client_id || client_secret) half.push(`${platform} has ${client_id ? 'client_id but no client_secret' : 'client_secret but no client_id'}: it answers 501`);
  }
  if (on.length === 0 && half.length === 0) return undefined;
  return `sign-in: ${on.length ? on.join(', ') : 'no provider on'}${half.length ? `; ${half.join('; ')}` : ''}`;
}

function printRoutes(routes: RouteSummary[]): void {
  const width = Math.max(...routes.map((r) => r.method.length + 1 + r.path.length));
  for (const r of routes) say(`${`${r.method} ${r.path}`.padEnd(width)}  ${r.kind} ${r.name}${r.access === 'pub' ? '' : r.access === 'api-key' ? '  (API key + signature)' : '  (token)'}`);
  say(`${routes.length} endpoints`);
}

/** Reload on changes under the project folder (not .svc, node_modules, dot folders); one reload at a time. */
function watchAndReload(root: string, reload: () => Promise<void>, stopped: () => boolean): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  let again = false;
  const go = async (): Promise<void> => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      await reload();
    } catch (error) {
      process.stderr.write(`svc: reload failed, still serving the previous version:\n${buildErrors(error) ?? (error as Error).message}\n`);
    }
    busy = false;
    if (again && !stopped()) {
      again = false;
      void go();
    }
  };
  // One watcher per folder, not `recursive: true`: on Linux Node 20 follows each file's inode then, and an editor
  // that saves by writing a new file and renaming it over the old one (vim, sed -i, many IDEs) ends the watching
  // of that file for good. A folder's watcher sees every name in it change, however it changed.
  const ignored = (rel: string): boolean => /(^|[\\/])(\.svc|node_modules|\.git|\.tap)([\\/]|$)/.test(rel) || /(^|[\\/])\./.test(rel);
  const watchers = new Map<string, FSWatcher>();
  const watchTree = (dir: string): void => {
    const rel = relative(root, dir);
    if (watchers.has(dir) || (rel !== '' && ignored(rel))) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
      watchers.set(
        dir,
        watch(dir, (_event, name) => {
          if (!name || stopped()) return;
          const path = join(dir, name.toString());
          const changed = relative(root, path);
          if (ignored(changed)) return;
          // A folder made (or moved in) after the start is watched from now on.
          if (!watchers.has(path) && isDirectory(path)) watchTree(path);
          if (!/\.(m?[jt]s|json|toml)$/.test(changed)) return;
          clearTimeout(timer);
          timer = setTimeout(() => void go(), 100);
        }).on('error', () => {
          watchers.get(dir)?.close();
          watchers.delete(dir);
        }),
      );
    } catch {
      return; // gone already
    }
    for (const entry of entries) if (entry.isDirectory()) watchTree(join(dir, entry.name));
  };
  watchTree(root);
  return { close: () => watchers.forEach((w) => w.close()) };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Microservice mode (`[scale.microservices] enabled = true`): the entry and
 * each module of `[scale.microservices] modules` run as processes of their
 * own (siblings on 127.0.0.1, or a running one at a configured URL), and this
 * process is the gateway on the public port: one OpenAPI document, each
 * module's routes relayed to it, the built-in routes to the entry's process,
 * CORS from `[scale.microservices.cors]`.
 */
async function runGateway(o: { entry: string; projectRoot: string; config: SvcConfig; profile: string | undefined; production: boolean; workers: number }): Promise<void> {
  const { config, projectRoot } = o;
  const server = config['scale.server'];
  const main = basename(o.entry).replace(/\.[mc]?[jt]s$/, '');
  try {
    checkModuleName(main);
  } catch {
    throw new StartError(`microservice mode: the entry's name ${JSON.stringify(main)} must be a module name (letters, digits, _ and -)`);
  }
  const targets = new Map<string, { file?: string; url?: string }>([[main, { file: o.entry }]]);
  for (const [name, value] of Object.entries(config['scale.microservices'].modules)) {
    try {
      checkModuleName(name);
    } catch (error) {
      throw new StartError(`[scale.microservices] modules: ${(error as Error).message}`);
    }
    if (typeof value !== 'string' || value === '') throw new StartError(`[scale.microservices] modules: ${name} must be a module file ("${name}.ts") or a URL, got ${JSON.stringify(value)}`);
    if (/^https?:\/\//i.test(value)) {
      targets.set(name, { url: value.replace(/\/+$/, '') });
      continue;
    }
    const file = resolvePath(projectRoot, value);
    if (!existsSync(file)) throw new StartError(`[scale.microservices] modules: ${name} = ${JSON.stringify(value)}: no such file in ${projectRoot}`);
    if (name === main && file !== o.entry) throw new StartError(`[scale.microservices] modules: ${name} is the entry's own name; give the module another name`);
    targets.set(name, { file });
  }
  // SVC_SV_<MODULE>_URL: that module runs elsewhere already.
  for (const name of targets.keys()) {
    const url = process.env[urlVariable(name)];
    if (url) targets.set(name, { url: url.replace(/\/+$/, '') });
  }
  const { dataDir } = dataPaths(projectRoot, config);
  const secret = jwtSecret({ configured: config['scale.jwt'].secret, production: o.production, projectRoot });
  // The modules see the gateway (127.0.0.1) as every client's peer: they believe its X-Forwarded-For.
  const trusted = [...new Set([...server.trusted_proxies, '127.0.0.1'])].join(',');
  // The gateway's port is chosen first: the modules call each other through it (`sv.import` of a module).
  const port = await freePort(server.host, server.port);
  if (server.port !== 0 && port !== server.port) say(`svc: port ${server.port} is in use; using ${port}`);
  const local = `http://${/^(0\.0\.0\.0|::|)$/.test(server.host) ? '127.0.0.1' : server.host.includes(':') ? `[${server.host}]` : server.host}:${port}`;
  const through = Object.fromEntries([...targets.keys()].map((name) => [urlVariable(name), local]));
  const starter = new ServiceStarter({
    dataDir,
    jwtSecret: secret.secret,
    profile: o.profile,
    workers: o.workers,
    startTimeoutMs: config['scale.sv'].start_timeout * 1000,
    env: { ...process.env, ...through, SVC_TRUSTED_PROXIES: trusted },
  });
  const urls: Record<string, string> = {};
  try {
    await Promise.all(
      [...targets].map(async ([name, target]) => {
        // The entry keeps the project's data folder (and the admin); the other modules get theirs beside it.
        urls[name] = target.url ?? (await starter.ensure(name, projectRoot, { file: target.file as string, ...(name === main ? { dataDir, main: true } : {}) }));
      }),
    );
  } catch (error) {
    await starter.close();
    throw new StartError(`microservice mode: ${(error as Error).message}`);
  }
  const cors = config['scale.microservices.cors'];
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  try {
    gateway = await startGateway({
      host: server.host,
      port,
      modules: urls,
      main,
      cors,
      title: basename(projectRoot),
      docs: server.docs_enabled,
      log: (line) => process.stderr.write(`svc: ${line}\n`),
    });
  } catch (error) {
    await starter.close();
    throw new StartError(error instanceof GatewayError ? error.message : `the gateway could not start: ${(error as Error).message}`);
  }
  const generated = gateway.routes.filter((r) => r.module !== main || !/^\/(user|admin|sso|api-key|healthz?|ready|metrics|docs|redoc|openapi\.json|graph|traverse)(\/|$)/.test(r.path));
  say(`svc: microservice mode: ${targets.size} module${targets.size === 1 ? '' : 's'} (${[...targets.keys()].map((n) => `${n} at ${urls[n]}`).join(', ')}), ${generated.length} routes`);
  say(`svc: CORS: ${cors.allow_origins.length === 0 ? 'off' : `origins ${cors.allow_origins.join(', ')}`}`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    say(`svc: ${signal}: stopping the gateway and its modules`);
    exitAfter(gateway.close().then(() => starter.close(server.shutdown_timeout_ms)));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  sayWatching(watchLauncher((why) => stop(why), { enabled: server.watch_launcher }));
  say(`Server ready at http://${server.host}:${gateway.port}`);
}
