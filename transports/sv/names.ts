/**
 * Module names, their environment variables and their files: `billing`
 * resolves to `SVC_SV_BILLING_URL`, and to `billing.ts` (then `.mts`, `.js`,
 * `.mjs`) in the folder of the consumer's entry file.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const EXTENSIONS = ['.ts', '.mts', '.js', '.mjs'];

/** Throws a TypeError unless `module` is a module name (letters, digits, `_`, `-`; no path). */
export function checkModuleName(module: unknown): asserts module is string {
  if (typeof module !== 'string' || !NAME.test(module)) {
    throw new TypeError(`a service module name is a file name without extension or folder (letters, digits, _ and -, at most 64), got ${JSON.stringify(module)}`);
  }
}

/**
 * The environment variable naming a provider's URL.
 *
 * @example
 * urlVariable('billing')     // 'SVC_SV_BILLING_URL'
 * urlVariable('user-search') // 'SVC_SV_USER_SEARCH_URL'
 */
export function urlVariable(module: string): string {
  return `SVC_SV_${module.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL`;
}

/** The environment variable of a provider's own rpc_timeout (seconds). */
export function timeoutVariable(module: string): string {
  return `SVC_SV_${module.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_RPC_TIMEOUT`;
}

/** The provider's file in `baseDir`: `<module>.ts`, `.mts`, `.js`, `.mjs`, the first that exists; undefined if none. */
export function moduleFile(module: string, baseDir: string): string | undefined {
  for (const ext of EXTENSIONS) {
    const path = join(baseDir, `${module}${ext}`);
    if (existsSync(path) && statSync(path).isFile()) return path;
  }
  return undefined;
}

/** The files tried for `module`, for messages. */
export function candidates(module: string): string {
  return EXTENSIONS.map((e) => `${module}${e}`).join(', ');
}

/** A provider URL: http(s), no credentials, query or fragment; returned without its trailing slashes. */
export function checkUrl(url: unknown, where: string): string {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw new TypeError(`${where}: not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`${where}: an http:// or https:// URL, got ${parsed.protocol}`);
  if (parsed.username || parsed.password || parsed.search || parsed.hash) throw new TypeError(`${where}: a base URL without credentials, query or fragment`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}
