/**
 * `svc token <user_id> [entry]`: a JWT for a user, signed with the server's
 * secret (configured, or the development one in `.svc/jwt_secret`) — for
 * trying private endpoints with curl before users register.
 */
import { dirname, resolve } from 'node:path';
import { JwtVerifier } from '../../transports/http/index.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { jwtSecret, SecretError } from '../secrets.ts';

export function token(userId: string, entry: string | undefined, flags: { role?: string; days?: number | string; profile?: string }): void {
  try {
    const projectRoot = dirname(resolve(entry ?? 'main.ts'));
    const { config } = loadConfig({ dir: projectRoot, profile: flags.profile, env: process.env });
    const production = flags.profile === 'prod' || process.env.NODE_ENV === 'production';
    const { secret } = jwtSecret({ configured: config['scale.jwt'].secret, production, projectRoot });
    const jwt = new JwtVerifier({ secret, algorithm: config['scale.jwt'].algorithm as 'HS256' });
    const days = flags.days === undefined ? config['scale.jwt'].exp_delta_days : Number(flags.days);
    process.stdout.write(`${jwt.sign({ user_id: userId, role: flags.role ?? 'user' }, days)}\n`);
  } catch (error) {
    const message = error instanceof ConfigError || error instanceof SecretError ? error.message : (error as Error).message;
    process.stderr.write(`svc: ${message}\n`);
    process.exit(1);
  }
}
