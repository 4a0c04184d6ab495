/**
 * `svc db <command>`: the operator's commands over the stores — the graph
 * store and the users repository — on any backend (SQLite, PostgreSQL,
 * MongoDB), through their interfaces only:
 *
 * - `inspect`: documents per type, and with `--app` which would go to quarantine and why;
 * - `stats`: counts of everything stored;
 * - `alias add <old> <new>` / `alias list`: class renames;
 * - `recover-all`: move back quarantined documents that decode against `--app` now;
 * - `quarantine list | show <id> | drop <id>`;
 * - `copy --from <uri|path> --to <uri|path>`: everything, verified, resumable.
 *
 * The store is the project's configured one (found as `svc start` finds it:
 * the project is the folder of `--app`, else the working directory), or
 * `--db <uri|path>`. `--json` answers with one JSON document on stdout. A
 * failure is one line on stderr and exit code 1.
 */
import { dirname, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import type { AnchorStore } from '../../actors/graph/index.ts';
import type { UsersRepository } from '../../actors/identity/index.ts';
import type { Registry } from '../../actors/walker/index.ts';
import { ConfigError, DataLockError, lockDataFolder, loadConfig, type DataLock } from '../../runtime/index.ts';
import { Progress } from '../progress.ts';
import { checkpointPath, copyStores, type CopyReport } from '../db/copy.ts';
import { inspectStore, loadApp, recoverAll, withAliases } from '../db/inspect.ts';
import { atStore, configuredLocation, DbError, namedLocation, openAnchors, openUsers, sameStore, scrub, type StoreLocation } from '../db/stores.ts';
import { printCopy, printInspect, printQuarantine, printRecover, printStats, type StatsReport } from '../db/print.ts';

export interface DbFlags {
  app?: string;
  db?: string;
  from?: string;
  to?: string;
  json?: boolean;
  restart?: boolean;
  profile?: string;
}

const COMMANDS = 'inspect, stats, alias add <old> <new>, alias list, recover-all, quarantine list|show <id>|drop <id>, copy --from <uri|path> --to <uri|path>';

/** A class name as stored (`Todo`, or qualified `app.Todo`). */
const TYPE_NAME = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/;

/** The command's context: project, configuration, output. */
interface Context {
  projectRoot: string;
  flags: DbFlags;
  /** The configured store, or `--db`. */
  location: () => StoreLocation;
  progress: (label: string, total: number | undefined) => Progress;
  out: (report: unknown, text: () => string) => void;
  /** Closed when the command ends, whatever happens. */
  closers: (() => Promise<void>)[];
}

export async function db(action: string | undefined, args: string[], flags: DbFlags): Promise<void> {
  const closers: (() => Promise<void>)[] = [];
  const locations: StoreLocation[] = [];
  let code = 0;
  try {
    const projectRoot = flags.app ? dirname(resolve(flags.app)) : process.cwd();
    const config = () => loadConfig({ dir: projectRoot, profile: flags.profile, env: process.env }).config;
    const ctx: Context = {
      projectRoot,
      flags,
      location: () => {
        const location = flags.db ? namedLocation(String(flags.db)) : configuredLocation(projectRoot, config());
        locations.push(location);
        return location;
      },
      progress: (label, total) => new Progress(label, total),
      out: (report, text) => process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${text()}\n`),
      closers,
    };
    code = await run(action, args, ctx, locations);
  } catch (error) {
    const message = error instanceof DbError || error instanceof ConfigError || error instanceof DataLockError ? error.message : ((error as Error).message ?? String(error));
    process.stderr.write(`svc: ${scrub(message, ...locations)}\n`);
    code = 1;
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
  // Exit now — a backend's client (a connection pool) must not keep the command alive — once
  // stdout has taken the answer (a pipe may be asynchronous).
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(code);
}

async function anchorsAt(ctx: Context, location: StoreLocation, create = false): Promise<AnchorStore> {
  const store = await openAnchors(location, { create });
  ctx.closers.push(() => store.close());
  return store;
}

async function usersAt(ctx: Context, location: StoreLocation, create = false): Promise<UsersRepository> {
  const users = await openUsers(location, { create });
  ctx.closers.push(() => users.close());
  return users;
}

/** The app given with `--app`, else `main.ts` of the working directory when there is one (as `svc start`). */
function appEntry(ctx: Context): string | undefined {
  if (ctx.flags.app) return String(ctx.flags.app);
  return existsSync(resolve('main.ts')) ? 'main.ts' : undefined;
}

function arg(args: string[], i: number, usage: string): string {
  const value = args[i];
  if (value === undefined || value === '') throw new DbError(`usage: svc db ${usage}`);
  return String(value);
}

async function run(action: string | undefined, args: string[], ctx: Context, locations: StoreLocation[]): Promise<number> {
  switch (action) {
    case 'inspect':
      return inspect(ctx);
    case 'stats':
      return stats(ctx);
    case 'alias':
      return alias(ctx, args);
    case 'recover-all':
      return recover(ctx);
    case 'quarantine':
      return quarantine(ctx, args);
    case 'copy':
      return copy(ctx, locations);
    case undefined:
      throw new DbError(`svc db needs a command: ${COMMANDS} (svc db --help)`);
    default:
      throw new DbError(`unknown svc db command ${JSON.stringify(action)}; the commands are ${COMMANDS}`);
  }
}

async function inspect(ctx: Context): Promise<number> {
  const location = ctx.location();
  const entry = appEntry(ctx);
  const registry: Registry | undefined = entry ? await loadApp(entry) : undefined;
  const store = await anchorsAt(ctx, location);
  const report = await atStore(location, 'inspect', async () => {
    const aliases = registry ? await withAliases(registry, store) : await store.aliases();
    return inspectStore(store, { label: location.label, aliases, progress: ctx.progress, ...(registry ? { registry, app: entry } : {}) });
  });
  ctx.out(report, () => printInspect(report));
  return 0;
}

async function stats(ctx: Context): Promise<number> {
  const location = ctx.location();
  const store = await anchorsAt(ctx, location);
  const users = await usersAt(ctx, location);
  const report: StatsReport = await atStore(location, 'stats', async () => {
    const graph = store.stats
      ? await store.stats()
      : { kind: store.kind, documents: await store.count(), nodes: null, edges: null, roots: null, byType: null, quarantined: (await store.quarantined()).length, aliases: (await store.aliases()).length };
    const length = async (list: (() => Promise<unknown[]>) | undefined) => (list ? (await list()).length : null);
    return {
      store: location.label,
      graph,
      users: {
        kind: users.kind,
        users: await users.count(),
        deleted_users: await length(users.deletedUsers?.bind(users)),
        one_time_tokens: await length(users.oneTimeTokens?.bind(users)),
        pending_graph_drops: await length(users.graphDrops?.bind(users)),
      },
    };
  });
  ctx.out(report, () => printStats(report));
  return 0;
}

async function alias(ctx: Context, args: string[]): Promise<number> {
  const sub = args[0];
  if (sub === 'list') {
    const location = ctx.location();
    const store = await anchorsAt(ctx, location);
    const aliases = await atStore(location, 'listing aliases', () => store.aliases());
    ctx.out({ store: location.label, aliases }, () => (aliases.length ? aliases.map(([a, b]) => `${a} -> ${b}`).join('\n') : 'no aliases'));
    return 0;
  }
  if (sub !== 'add') throw new DbError('usage: svc db alias add <old> <new> | svc db alias list');
  const from = arg(args, 1, 'alias add <old> <new>');
  const to = arg(args, 2, 'alias add <old> <new>');
  for (const name of [from, to]) if (!TYPE_NAME.test(name)) throw new DbError(`${JSON.stringify(name)} is not a class name`);
  if (from === to) throw new DbError(`an alias of ${from} to itself would change nothing`);
  // With the app at hand, an alias to a class it does not have is a typo.
  if (ctx.flags.app) {
    const registry = await loadApp(String(ctx.flags.app));
    if (!registry.resolve(to)) throw new DbError(`${ctx.flags.app} has no node or edge class ${to}`);
  }
  const location = ctx.location();
  const store = await anchorsAt(ctx, location);
  await atStore(location, 'adding the alias', () => store.addAlias(from, to));
  ctx.out({ store: location.label, alias: [from, to] }, () => `alias added: documents stored as ${from} load as ${to} (a running service reads aliases when it starts; then svc db recover-all)`);
  return 0;
}

async function recover(ctx: Context): Promise<number> {
  const entry = appEntry(ctx);
  if (!entry) throw new DbError('recover-all decodes documents against the app: give its entry file with --app <entry> (or run where main.ts is)');
  const registry = await loadApp(entry);
  const location = ctx.location();
  const store = await anchorsAt(ctx, location);
  const report = await atStore(location, 'recover-all', async () => {
    await withAliases(registry, store);
    return recoverAll(store, registry, { label: location.label, app: entry, progress: ctx.progress });
  });
  ctx.out(report, () => printRecover(report));
  return 0;
}

async function quarantine(ctx: Context, args: string[]): Promise<number> {
  const sub = args[0] ?? 'list';
  const location = ctx.location();
  const store = await anchorsAt(ctx, location);
  const entries = await atStore(location, 'reading the quarantine', () => store.quarantined());
  if (sub === 'list') {
    const list = entries.map((q) => ({ id: q.id, type: q.arch_type, kind: q.kind, root: q.root, reason: q.reason, at: q.at }));
    ctx.out({ store: location.label, quarantined: list }, () => printQuarantine(list));
    return 0;
  }
  if (sub !== 'show' && sub !== 'drop') throw new DbError('usage: svc db quarantine list | show <id> | drop <id>');
  const id = arg(args, 1, `quarantine ${sub} <id>`);
  const entry = entries.find((q) => q.id === id);
  if (!entry) throw new DbError(`no quarantined document ${JSON.stringify(id)} in ${location.label} (svc db quarantine list)`);
  if (sub === 'show') {
    const whole = { ...entry, body: typeof entry.body === 'string' ? parseOr(entry.body) : entry.body };
    ctx.out(whole, () => JSON.stringify(whole, null, 2));
    return 0;
  }
  if (typeof store.dropQuarantined !== 'function') throw new DbError(`the ${store.kind} store at ${location.label} cannot drop quarantined documents (this backend lacks dropQuarantined)`);
  const dropped = await atStore(location, 'dropping', () => (store.dropQuarantined as (id: string) => Promise<boolean>).call(store, id));
  if (!dropped) throw new DbError(`no quarantined document ${JSON.stringify(id)} in ${location.label} (dropped meanwhile?)`);
  ctx.out({ store: location.label, dropped: id }, () => `dropped ${id} (${entry.arch_type}) from the quarantine, for good`);
  return 0;
}

function parseOr(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

async function copy(ctx: Context, locations: StoreLocation[]): Promise<number> {
  const { flags } = ctx;
  if (!flags.from && !flags.to) throw new DbError('usage: svc db copy --from <uri|path> --to <uri|path> (either defaults to the configured store)');
  const from = flags.from ? namedLocation(String(flags.from)) : ctx.location();
  const to = flags.to ? namedLocation(String(flags.to)) : ctx.location();
  locations.push(from, to);
  if (sameStore(from, to)) throw new DbError(`--from and --to are the same store (${from.label}): nothing to copy`);
  // A SQLite side served by a running svc would change under the copy: stop it first.
  const locks: DataLock[] = [];
  ctx.closers.push(async () => locks.forEach((l) => l.release()));
  for (const file of new Set([...from.sqliteFiles, ...to.sqliteFiles])) {
    if (!existsSync(file) && !to.sqliteFiles.includes(file)) continue;
    try {
      locks.push(lockDataFolder(file));
    } catch (error) {
      if (!(error instanceof DataLockError)) throw error;
      throw new DbError(`${error.message.split(';')[0]}: stop it during the copy`);
    }
  }
  const side = async (location: StoreLocation, create: boolean) => ({ location, anchors: await anchorsAt(ctx, location, create), users: await usersAt(ctx, location, create) });
  const source = await side(from, false);
  const destination = await side(to, true);
  const stop = process.env.SVC_DB_COPY_STOP_AFTER;
  const report: CopyReport = await copyStores({
    from: source,
    to: destination,
    checkpoint: checkpointPath(ctx.projectRoot, from, to),
    restart: flags.restart === true,
    progress: ctx.progress,
    note: (line) => process.stderr.write(`${line}\n`),
    ...(stop ? { stopAfter: Number(stop) } : {}),
  });
  ctx.out(report, () => printCopy(report));
  if (!report.ok) {
    const what = report.differs.map((k) => `${k} (source ${report.verified[k].source.count}, destination ${report.verified[k].destination.count}${report.verified[k].source.count === report.verified[k].destination.count ? ', checksums differ' : ''})`);
    throw new DbError(`the copy is not equal to its source: ${what.join('; ')}. Was the service running, or did ${to.label} hold other records? A new run copies everything again`);
  }
  return 0;
}
