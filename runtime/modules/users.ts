/** The `users` module: the users repository chosen by `docdb_uri`, its writes handed to the main thread when it serves the writer. */
import type { ActorRef } from '../../kernel/index.ts';
import { openUsersRepository, type UsersRepository, type UsersWriterMsg } from '../../actors/identity/index.ts';
import type { ServeBoot } from '../boot.ts';
import type { RuntimeModule } from '../runtime.ts';
import { USERS } from '../keys.ts';

export function usersModule(boot: ServeBoot, processWriter: ActorRef<UsersWriterMsg, unknown> | undefined): RuntimeModule {
  let users: UsersRepository | undefined;
  return {
    name: 'users',
    provides: [USERS],
    async start(rt) {
      users = rt.provide(
        USERS,
        await openUsersRepository(boot.config['scale.database'].docdb_uri, { path: boot.usersPath, baseDir: boot.projectRoot, processWriter, createSchema: boot.schemaReady !== true }),
      );
    },
    close: () => users?.close(),
  };
}
