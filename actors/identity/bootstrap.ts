/**
 * Accounts that exist from the first start: the guest (whose root is the
 * shared public graph) and the bootstrap admin. The
 * admin's password is `ADMIN_DEFAULT_PASSWORD` or, without one, a random
 * one printed once and kept in `.svc/data/admin_password` — never a fixed default;
 * with `require_password_reset` (default) the server refuses everything but
 * a password change until it is changed.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Root } from '../walker/index.ts';
import { checkPassword, type Passwords } from './passwords.ts';
import { BOOTSTRAP_ADMIN_ID, GUEST_USER_ID } from './service.ts';
import { type Identity, normalize, type Role, type UserRecord, userRecord, type UsersRepository } from './users-repository.ts';

export interface AdminConfig {
  enabled: boolean;
  username: string;
  email: string;
  default_password: string;
  require_password_reset: boolean;
}

export async function bootstrapAccounts(options: {
  users: UsersRepository;
  passwords: Passwords;
  admin: AdminConfig;
  /** Where a generated admin password is kept (`.svc/data/admin_password`, next to users.db). */
  passwordFile: string;
  say: (line: string) => void;
}): Promise<void> {
  const { users, admin } = options;
  if (!(await users.byId(GUEST_USER_ID))) {
    await users.create(
      userRecord({
        user_id: GUEST_USER_ID,
        role: 'system',
        root_id: Root.SHARED_ID,
        protected: true,
        identities: [{ type: 'username', value_raw: '__guest__', value_normalized: '__guest__', verified: true, is_recovery: false }],
      }),
    );
  }
  if (!admin.enabled || (await users.byId(BOOTSTRAP_ADMIN_ID))) return;
  const name = admin.username.trim();
  if (!name) throw new Error('[scale.admin] username must not be empty');
  const taken = await users.byIdentity(normalize(name));
  if (taken) throw new Error(`the admin username ${name} is already used by another account; set ADMIN_USERNAME`);
  let password = admin.default_password;
  const generated = !password;
  if (generated) password = randomBytes(15).toString('base64url');
  else checkPassword(password, [name, admin.email].filter(Boolean), 'ADMIN_DEFAULT_PASSWORD');
  const identities: Identity[] = [{ type: 'username', value_raw: name, value_normalized: normalize(name), verified: true, is_recovery: false }];
  if (admin.email) identities.push({ type: 'email', value_raw: admin.email, value_normalized: normalize(admin.email), verified: true, is_recovery: true });
  await users.create(
    userRecord({
      user_id: BOOTSTRAP_ADMIN_ID,
      role: 'admin',
      must_change_password: admin.require_password_reset,
      protected: true,
      password_hash: await options.passwords.hash(password),
      identities,
    }),
  );
  if (generated) {
    mkdirSync(dirname(options.passwordFile), { recursive: true });
    writeFileSync(options.passwordFile, `${password}\n`, { mode: 0o600 });
    options.say(`svc: admin account "${name}" created; its password (shown once, kept in ${options.passwordFile}): ${password}`);
  } else {
    options.say(`svc: admin account "${name}" created with ADMIN_DEFAULT_PASSWORD`);
  }
  if (admin.require_password_reset) options.say('svc: the admin must change that password at first login');
}

/**
 * The account a token from `svc token <user>` is for: the user with that id,
 * else the one with that username or email, else a new service account with
 * that id (no password, no identity: it cannot log in; an admin can disable
 * or delete it like any other).
 */
export async function serviceAccount(users: UsersRepository, idOrName: string, role: Role): Promise<{ user: UserRecord; created: boolean }> {
  const found = (await users.byId(idOrName)) ?? (await users.byIdentity(normalize(idOrName)));
  if (found) return { user: found, created: false };
  // A deleted user's id stays theirs: its old tokens must not come back to life.
  if (await users.wasDeleted(idOrName)) throw new Error(`${idOrName} belonged to a deleted user; choose another id`);
  if (idOrName.length > 128 || /[\s/]/.test(idOrName)) throw new Error('a service account id is at most 128 characters, without spaces or slashes');
  const user = userRecord({ user_id: idOrName, role });
  await users.create(user);
  return { user, created: true };
}
