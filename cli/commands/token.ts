/**
 * `svc token [user_id] [entry]`: a JWT for a user, signed with the server's
 * secret (configured, or the development one in `.svc/jwt_secret`) — for
 * scripts, service-to-service calls and trying private endpoints with curl.
 *
 * `user_id` is a user's id (a registered user's username or email is found
 * too); an id nobody has is refused, unless `--create` asks for a service
 * account with that id (made in the users store: the server refuses tokens of
 * users that do not exist). `--username <name>` names a user by username or
 * email only. A name never makes an account, even with `--create`: a token
 * for a new, empty account is never what was meant by a person's name.
 */
import { existsSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { redactUri } from '../../stores/index.ts';
import { JwtVerifier, normalize, openUsersRepository, serviceAccount, type Role, type UserRecord } from '../../actors/identity/index.ts';
import { ConfigError, dataPaths, jwtSecret, loadConfig, SecretError } from '../../runtime/index.ts';
import { resolveEntry } from '../entry.ts';

class TokenError extends Error {}

export interface TokenFlags {
  username?: string;
  /** Make a service account for an id nobody has. */
  create?: boolean;
  role?: string;
  days?: number | string;
  profile?: string;
}

export async function token(userIdArg: string | undefined, entryArg: string | undefined, flags: TokenFlags): Promise<void> {
  try {
    let userId = userIdArg;
    let entryName = entryArg;
    const username = typeof flags.username === 'string' ? flags.username : undefined;
    if (username !== undefined) {
      if (entryName !== undefined) throw new TokenError('give a user id or --username, not both (svc token --username <name> [entry])');
      // `svc token --username alice app.ts`: the one positional argument is the entry.
      entryName = userId;
      userId = undefined;
    }
    if (userId === undefined && username === undefined) throw new TokenError('a user id or --username <name> is needed (svc token <user_id> [entry])');
    // Nothing is read or written before the entry is known: no secret and no users store for a server that is not there.
    const projectRoot = dirname(resolveEntry(entryName, 'svc token <user_id> <entry.ts>'));
    const { config } = loadConfig({ dir: projectRoot, profile: flags.profile, env: process.env });
    const production = flags.profile === 'prod' || process.env.NODE_ENV === 'production';
    let days = flags.days === undefined ? config['scale.jwt'].exp_delta_days : Number(flags.days);
    const max = config['scale.jwt'].max_token_days;
    if (!Number.isFinite(days) || days <= 0) throw new TokenError(`--days must be a positive number, got ${JSON.stringify(flags.days)}`);
    if (days > max) throw new TokenError(`--days ${days} is longer than [scale.jwt] max_token_days (${max}): the server would refuse the token`);
    if (flags.role !== undefined && !['user', 'admin'].includes(flags.role)) throw new TokenError(`--role must be user or admin, got ${JSON.stringify(flags.role)}`);
    const paths = dataPaths(projectRoot, config);
    const near = relative(process.cwd(), paths.usersPath);
    const where = paths.backend !== 'sqlite' ? redactUri(paths.docdbUri) : near && !near.startsWith('..') ? near : paths.usersPath;
    // A name (or an email) only ever finds a user; only an id makes a new account.
    const name = username ?? (userId?.includes('@') ? userId : undefined);
    const create = flags.create === true && name === undefined;
    const unknown = (): TokenError =>
      name !== undefined
        ? new TokenError(
            `no user has the ${username !== undefined ? 'username or email' : 'email'} ${name} in ${where}: register them first (POST /user/register), ` +
              "or run svc token with the server's data folder (SVC_DATA_DIR, [scale.database])",
          )
        : new TokenError(
            `no user has the id, username or email ${userId} in ${where}: give a registered user's id or --username <name>, ` +
              "run svc token with the server's data folder (SVC_DATA_DIR, [scale.database]), or add --create to make a service account with that id",
          );
    // No users store yet: nobody has that id or name (and opening it would create it).
    if (!create && paths.backend === 'sqlite' && !existsSync(paths.usersPath)) throw unknown();
    const users = await openUsersRepository(paths.docdbUri, { path: paths.usersPath, baseDir: projectRoot });
    let claims: { user_id: string; role: string; sv: number; pwd_change?: boolean };
    let secret: string;
    try {
      const asked = (username ?? userId) as string;
      let user: UserRecord | undefined = username !== undefined ? await users.byIdentity(normalize(username)) : ((await users.byId(asked)) ?? (await users.byIdentity(normalize(asked))));
      if (!user && !create) throw unknown();
      // The secret before any account is made: in production without one, nothing is created.
      secret = jwtSecret({ configured: config['scale.jwt'].secret, production, projectRoot }).secret;
      if (!user) {
        let account: Awaited<ReturnType<typeof serviceAccount>>;
        try {
          account = await serviceAccount(users, asked, (flags.role ?? 'user') as Role);
        } catch (error) {
          throw new TokenError((error as Error).message);
        }
        user = account.user;
        if (account.created) {
          process.stderr.write(
            `svc: created the service account ${user.user_id} (role ${user.role}) in ${where}; it has no password and cannot log in ` +
              '(for a registered user, give their id or --username <name>)\n',
          );
        }
      }
      if (user.status !== 'active') throw new TokenError(`${asked} is disabled`);
      // The token says what the account is: a role is changed in the admin portal, not here.
      if (flags.role !== undefined && flags.role !== user.role) throw new TokenError(`${asked} has the role ${user.role}, not ${flags.role} (change it with PUT /admin/users/{username})`);
      claims = { user_id: user.user_id, role: user.role, sv: user.tokens_valid_after ?? 0 };
      if (user.must_change_password) claims.pwd_change = true;
    } finally {
      await users.close();
    }
    // An admin's token lives no longer than an admin session, however it was obtained.
    const adminDays = config['scale.admin'].session_expiry_hours / 24;
    if (claims.role === 'admin' && days > adminDays) {
      if (flags.days !== undefined) throw new TokenError(`an admin token lives at most [scale.admin] session_expiry_hours (${config['scale.admin'].session_expiry_hours} h); --days ${days} is longer`);
      days = adminDays;
    }
    const jwt = new JwtVerifier({ secret, algorithm: config['scale.jwt'].algorithm as 'HS256' });
    process.stdout.write(`${jwt.sign(claims, days)}\n`);
  } catch (error) {
    const message = error instanceof ConfigError || error instanceof SecretError || error instanceof TokenError ? error.message : (error as Error).message;
    process.stderr.write(`svc: ${message}\n`);
    process.exit(1);
  }
}
