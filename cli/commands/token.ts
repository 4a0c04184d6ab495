/**
 * `svc token <user> [entry]`: a JWT for a user, signed with the server's
 * secret (configured, or the development one in `.svc/jwt_secret`) — for
 * scripts, service-to-service calls and trying private endpoints with curl.
 * `<user>` is a user id, or a username or email; when nobody has it, a
 * service account with that id is created in the users store (the server
 * refuses tokens of users that do not exist).
 */
import { dirname, resolve } from 'node:path';
import { JwtVerifier, openUsersRepository, serviceAccount, type Role } from '../../actors/identity/index.ts';
import { ConfigError, loadConfig } from '../../runtime/index.ts';
import { dataPaths } from '../../runtime/index.ts';
import { jwtSecret, SecretError } from '../secrets.ts';

class TokenError extends Error {}

export async function token(idOrName: string, entry: string | undefined, flags: { role?: string; days?: number | string; profile?: string }): Promise<void> {
  try {
    const projectRoot = dirname(resolve(entry ?? 'main.ts'));
    const { config } = loadConfig({ dir: projectRoot, profile: flags.profile, env: process.env });
    const production = flags.profile === 'prod' || process.env.NODE_ENV === 'production';
    let days = flags.days === undefined ? config['scale.jwt'].exp_delta_days : Number(flags.days);
    const max = config['scale.jwt'].max_token_days;
    if (!Number.isFinite(days) || days <= 0) throw new TokenError(`--days must be a positive number, got ${JSON.stringify(flags.days)}`);
    if (days > max) throw new TokenError(`--days ${days} is longer than [scale.jwt] max_token_days (${max}): the server would refuse the token`);
    if (flags.role !== undefined && !['user', 'admin'].includes(flags.role)) throw new TokenError(`--role must be user or admin, got ${JSON.stringify(flags.role)}`);
    const { secret } = jwtSecret({ configured: config['scale.jwt'].secret, production, projectRoot });
    const paths = dataPaths(projectRoot, config);
    const users = await openUsersRepository(paths.docdbUri, { path: paths.usersPath, baseDir: projectRoot });
    let claims: { user_id: string; role: string; sv: number; pwd_change?: boolean };
    try {
      let account: Awaited<ReturnType<typeof serviceAccount>>;
      try {
        account = await serviceAccount(users, idOrName, (flags.role ?? 'user') as Role);
      } catch (error) {
        throw new TokenError((error as Error).message);
      }
      const { user, created } = account;
      if (created) process.stderr.write(`svc: created the service account ${user.user_id} (role ${user.role}); it has no password and cannot log in\n`);
      if (user.status !== 'active') throw new TokenError(`${idOrName} is disabled`);
      // The token says what the account is: a role is changed in the admin portal, not here.
      if (flags.role !== undefined && flags.role !== user.role) throw new TokenError(`${idOrName} has the role ${user.role}, not ${flags.role} (change it with PUT /admin/users/{username})`);
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
