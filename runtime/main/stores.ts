/**
 * The `stores` module of the main thread: the stores reached once before any
 * worker connects, and the SQLite writers this thread serves.
 *
 * - A shared database is reached here (unreachable: one line, exit 1), its
 *   tables made (and legacy users migrated) before any worker connects; one
 *   process serves a PostgreSQL database outside a cluster.
 * - SQLite with several worker threads: this thread holds the one writing
 *   connection of each file for the whole process (workers read on their own
 *   and hand writes here), so no worker waits on another's write lock. With
 *   one worker, that worker is the process's only writer and writes in its
 *   own thread (measured: handing writes to this thread halved the write
 *   throughput of a single worker pinned to one core).
 * - The guest and the bootstrap admin are made once, before any worker serves.
 */
import { join } from 'node:path';
import { type AnchorStore, openAnchorStore } from '../../actors/graph/index.ts';
import { takeServingLock } from '../../stores/index.ts';
import { bootstrapAccounts, openUsersRepository, Passwords, type UsersRepository } from '../../actors/identity/index.ts';
import { HASHER, SERVING, STORES } from '../keys.ts';
import type { RuntimeModule } from '../runtime.ts';
import { say, StartError, type StartOptions } from './options.ts';

/** What the stores module leaves for the workers: whether the database is shared, and the writers this thread serves. */
export interface MainStores {
  /** Not SQLite: the tables exist (made here), the workers only connect. */
  shared: boolean;
  /** SQLite written by this thread for every worker (`sqlite_writer = "process"`, more than one worker). */
  writers: { store: AnchorStore; users: UsersRepository } | undefined;
}

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

/**
 * @example
 * composeRuntime([..., hasherModule(options), storesModule(options), ...]);
 */
export function storesModule(options: StartOptions): RuntimeModule {
  let users: UsersRepository | undefined;
  let writers: AnchorStore | undefined;
  const closeWriters = async (): Promise<void> => {
    await users?.close();
    await writers?.close();
  };
  return {
    name: 'stores',
    needs: [SERVING, HASHER],
    provides: [STORES],
    async start(rt) {
      const { config, projectRoot } = options;
      const { dataDir, storePath, usersPath, docdbUri, backend } = options.paths;
      const kvUrl = config['scale.database'].kv_url;
      const shared = backend !== 'sqlite';
      const opened = await unlessUnreachable(openUsersRepository(docdbUri, { path: usersPath, baseDir: projectRoot }));
      if (shared) await unlessUnreachable(openAnchorStore(docdbUri, { baseDir: projectRoot }).then((store) => store.close()), () => opened.close());
      // As for a SQLite data folder: one process serves a PostgreSQL database outside a cluster (revocations and the
      // ownership of graphs travel between processes through Redis), any number of members inside one.
      if (backend === 'postgres' || backend === 'postgresql') {
        const lock = await unlessUnreachable(
          takeServingLock(docdbUri, { shared: Boolean(kvUrl), onLost: (why) => process.stderr.write(`svc: warning: ${why}\n`) }),
          () => opened.close(),
        );
        if (!lock) {
          await opened.close();
          throw new StartError(
            kvUrl
              ? 'another svc process is serving this database outside a cluster; stop it, or give it the same KV_URL'
              : 'another svc process is serving this database; set KV_URL (the same Redis) on every process to run several',
          );
        }
      }
      users = opened;
      const migrated = (opened as { migrated?: number }).migrated ?? 0;
      if (migrated > 0) say(`svc: migrated ${migrated} user${migrated === 1 ? '' : 's'} of the Python original (their old password hashes are replaced at their next login)`);
      const { workers } = rt.need(SERVING);
      writers =
        backend === 'sqlite' && workers > 1 && config['scale.database'].sqlite_writer === 'process'
          ? await openAnchorStore(docdbUri, { path: storePath, baseDir: projectRoot, synchronous: config['scale.database'].synchronous as 'NORMAL' | 'FULL' })
          : undefined;
      // The guest and the bootstrap admin, once, before any worker serves.
      try {
        await bootstrapAccounts({ users: opened, passwords: new Passwords(rt.need(HASHER)), admin: config['scale.admin'], passwordFile: join(dataDir, 'admin_password'), say });
      } catch (error) {
        await closeWriters();
        throw error;
      }
      if (!writers) await opened.close();
      rt.provide(STORES, { shared, writers: writers ? { store: writers, users: opened } : undefined });
    },
    close: closeWriters,
  };
}
