/**
 * The JWT secret: from configuration (`JWT_SECRET` or `[scale.jwt] secret`);
 * in development without one, a random secret generated once and kept in
 * `.svc/jwt_secret`; in production (`--profile prod` or
 * `NODE_ENV=production`), no secret means no start.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class SecretError extends Error {}

export function jwtSecret(options: { configured: string; production: boolean; projectRoot: string }): { secret: string; source: string } {
  if (options.configured) {
    if (options.configured.length < 32) {
      const message = 'JWT_SECRET is shorter than 32 characters';
      if (options.production) throw new SecretError(`${message}: use a long random value in production`);
      return { secret: options.configured, source: `configured (${message}: fine for development only)` };
    }
    return { secret: options.configured, source: 'configured' };
  }
  if (options.production) {
    throw new SecretError('JWT_SECRET (or [scale.jwt] secret) is required in production: the server refuses to start with a generated or default secret');
  }
  const dir = join(options.projectRoot, '.svc');
  const file = join(dir, 'jwt_secret');
  if (existsSync(file)) return { secret: readFileSync(file, 'utf8').trim(), source: `development secret from ${file}` };
  mkdirSync(dir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { secret, source: `development secret generated in ${file}` };
}
