/**
 * The proxy's settings from its environment (`svc sandbox proxy` in a pod): names and defaults as the proxy's
 * Deployment sets them. Private mode is on when `PREVIEW_SECRET` is set.
 */
import { ProxyConfigError } from './errors.ts';

/** What the proxy needs to start, read from the environment. */
export interface ProxySettings {
  /** `SANDBOX_NAMESPACE`: where the sandbox pods are ('svc-sandboxes'). */
  namespace: string;
  /** `SANDBOX_LABEL`: the label selector of sandbox pods ('svc-sandbox=true'). */
  label: string;
  /** `INTERNAL_PORT`: the dev server's port in each pod (8000). */
  internalPort: number;
  /** `PROXY_PORT`: the port the proxy listens on (8080). */
  port: number;
  /** `PROXY_HOST`: the address it listens on ('0.0.0.0'). */
  host: string;
  /** `PREVIEW_SECRET`: the key preview tokens are signed with (private mode); at least 32 bytes. */
  previewSecret?: string;
  /** `PREVIEW_DOMAIN`: only `{sandbox_id}.<this>` hosts name a sandbox (`preview.example.com`); any domain when unset. */
  previewDomain?: string;
}

/** The shortest preview secret accepted, in bytes (HS256 wants a key as long as its hash). */
export const MIN_PREVIEW_SECRET_BYTES = 32;

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new ProxyConfigError(`${name} must be a port number (1-65535), not ${JSON.stringify(text)}`);
  return n;
}

/**
 * The settings of `env`, or a {@link ProxyConfigError} naming the variable that is wrong.
 *
 * @example
 * const settings = proxySettings(process.env); // { namespace: 'svc-sandboxes', label: 'svc-sandbox=true', internalPort: 8000, port: 8080, host: '0.0.0.0' }
 */
export function proxySettings(env: NodeJS.ProcessEnv): ProxySettings {
  const secret = env.PREVIEW_SECRET;
  if (secret !== undefined && secret !== '') checkPreviewSecret(secret);
  const domain = (env.PREVIEW_DOMAIN ?? '').toLowerCase().replace(/\.$/, '');
  if (domain && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(domain)) throw new ProxyConfigError(`PREVIEW_DOMAIN must be a domain name (like preview.example.com), not ${JSON.stringify(env.PREVIEW_DOMAIN)}`);
  return {
    namespace: env.SANDBOX_NAMESPACE || 'svc-sandboxes',
    label: env.SANDBOX_LABEL || 'svc-sandbox=true',
    internalPort: port(env, 'INTERNAL_PORT', 8000),
    port: port(env, 'PROXY_PORT', 8080),
    host: env.PROXY_HOST || '0.0.0.0',
    ...(secret ? { previewSecret: secret } : {}),
    ...(domain ? { previewDomain: domain } : {}),
  };
}

/**
 * Refuse a preview secret shorter than {@link MIN_PREVIEW_SECRET_BYTES}.
 *
 * @example
 * checkPreviewSecret(process.env.PREVIEW_SECRET ?? ''); // throws ProxyConfigError when too short
 */
export function checkPreviewSecret(secret: string): void {
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < MIN_PREVIEW_SECRET_BYTES) throw new ProxyConfigError(`PREVIEW_SECRET must be at least ${MIN_PREVIEW_SECRET_BYTES} bytes (it has ${bytes}): generate one with \`openssl rand -base64 48\``);
}
