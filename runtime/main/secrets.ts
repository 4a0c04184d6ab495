/**
 * The server's secrets: the JWT secret (`JWT_SECRET` or `[scale.jwt] secret`)
 * and the webhook signature secret (`WEBHOOK_SECRET` or `[scale.webhook]
 * secret`). Each is taken from configuration; in development without one, a
 * random secret is generated once and kept in `.svc/<name>` (mode 0600: its
 * path is logged, never its value); in production (`--profile prod` or
 * `NODE_ENV=production`), no secret — or one shorter than 32 characters —
 * means no start. The Python original booted production on a default secret.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class SecretError extends Error {}

/** A secret and where it came from (for the start line: a path, never the value). */
export interface ResolvedSecret {
  secret: string;
  source: string;
  /** Set when the configured secret is short (development only: production refuses it). */
  warning?: string;
  /** Made just now (its file is new). */
  generated?: boolean;
}

interface SecretSpec {
  /** `JWT_SECRET`: how the user sets it. */
  envName: string;
  /** `[scale.jwt] secret`. */
  configName: string;
  /** The file under `.svc/`. */
  file: string;
  /** Why production needs it (appended to the refusal). */
  why: string;
}

function resolveSecret(spec: SecretSpec, options: { configured: string; production: boolean; projectRoot: string }): ResolvedSecret {
  if (options.configured) {
    if (options.configured.length < 32) {
      const message = `${spec.envName} is shorter than 32 characters`;
      if (options.production) throw new SecretError(`${message}: use a long random value in production`);
      return { secret: options.configured, source: `configured (${message}: fine for development only)`, warning: `${message}: fine for development only` };
    }
    return { secret: options.configured, source: 'configured' };
  }
  if (options.production) {
    throw new SecretError(`${spec.envName} (or ${spec.configName}) is required in production${spec.why}: the server refuses to start with a generated or default secret`);
  }
  const dir = join(options.projectRoot, '.svc');
  const file = join(dir, spec.file);
  if (existsSync(file)) {
    const secret = readFileSync(file, 'utf8').trim();
    if (secret === '') throw new SecretError(`${file} is empty: delete it (a new secret is generated) or set ${spec.envName}`);
    // Readable by others: narrowed to the owner (a secret file anyone on the machine reads is no secret).
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    if (secret.length < 32) return { secret, source: `development secret from ${file} (shorter than 32 characters: fine for development only)`, warning: `${file} holds a secret shorter than 32 characters` };
    return { secret, source: `development secret from ${file}` };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  try {
    // Made only if still missing: worker threads of a --dev reload may make it at the same moment, and must agree on one.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return resolveSecret(spec, options);
    throw error;
  }
  chmodSync(file, 0o600);
  return { secret, source: `development secret generated in ${file}`, generated: true };
}

/**
 * @example
 * const { secret, source } = jwtSecret({ configured: config['scale.jwt'].secret, production, projectRoot });
 * say(`jwt: ${source}`); // "development secret generated in /app/.svc/jwt_secret"
 */
export function jwtSecret(options: { configured: string; production: boolean; projectRoot: string }): ResolvedSecret {
  return resolveSecret({ envName: 'JWT_SECRET', configName: '[scale.jwt] secret', file: 'jwt_secret', why: '' }, options);
}

/**
 * The HMAC key of webhook signatures. Needed only when the app has webhook
 * walkers and `[scale.webhook] verify_signature` is on (`needed`); otherwise
 * the configured value, possibly empty, is passed on as it is and nothing is
 * generated or refused — an app without webhook walkers gets no
 * `.svc/webhook_secret`, in `--dev` neither (a reload that adds the first
 * one makes it then: {@link lateWebhookSecret}).
 *
 * @example
 * const hooks = webhookSecret({ configured: config['scale.webhook'].secret, production, projectRoot, needed: true });
 * // production without WEBHOOK_SECRET: throws SecretError; development: .svc/webhook_secret
 */
export function webhookSecret(options: { configured: string; production: boolean; projectRoot: string; needed: boolean }): ResolvedSecret {
  if (!options.needed) return { secret: options.configured, source: options.configured ? 'configured' : 'none' };
  return resolveSecret(
    { envName: 'WEBHOOK_SECRET', configName: '[scale.webhook] secret', file: 'webhook_secret', why: ' for the app\'s webhook walkers (signatures are verified: [scale.webhook] verify_signature)' },
    options,
  );
}

/**
 * The webhook secret a worker thread of `svc start --dev` needs when a reload
 * brought the app's first webhook walker (the start made none: the app had
 * none): `.svc/webhook_secret`, read, or made by whichever thread comes first.
 * Undefined when it is not for a worker to decide: a secret was handed over or
 * configured, signatures are not verified, or this is no development server.
 *
 * @example
 * const late = lateWebhookSecret({ dev: boot.dev, handed: boot.webhookSecret, configured: config['scale.webhook'].secret, verify: true, projectRoot });
 * // { secret: '…', source: 'development secret generated in /app/.svc/webhook_secret', generated: true }
 */
export function lateWebhookSecret(options: { dev: boolean; handed: string | undefined; configured: string; verify: boolean; projectRoot: string }): ResolvedSecret | undefined {
  if (!options.dev || options.handed || options.configured || !options.verify || process.env.NODE_ENV === 'production') return undefined;
  return webhookSecret({ configured: '', production: false, projectRoot: options.projectRoot, needed: true });
}
