/**
 * Container registry credentials for `--build`: from the environment, or from
 * the project's `.env` (which never goes into the image: the build context
 * leaves it out).
 *
 * Names, first found wins, the environment before `.env`:
 * - `SVC_REGISTRY_USERNAME`, `SVC_REGISTRY_PASSWORD` (a password or an access token);
 * - `DOCKER_USERNAME`, `DOCKER_PASSWORD` — the original product's names, still read.
 * A username and a password may come from different places (the username in
 * `.env`, the token in the environment of a CI job).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The variables that name the registry's user, in the order they are read. */
export const REGISTRY_USERNAME_VARIABLES = ['SVC_REGISTRY_USERNAME', 'DOCKER_USERNAME'] as const;
/** The variables that hold the registry's password or token, in the order they are read. */
export const REGISTRY_PASSWORD_VARIABLES = ['SVC_REGISTRY_PASSWORD', 'DOCKER_PASSWORD'] as const;

export interface RegistryCredentials {
  username: string;
  password: string;
}

/**
 * The `KEY=VALUE` lines of a `.env` file: `#` starts a comment (outside quotes), `export ` before a key is allowed,
 * a value may be wrapped in single quotes (taken as written) or double quotes (`\n`, `\"` and `\\` read as escapes);
 * an unquoted value ends at ` #`, and is trimmed. Lines that are not assignments are ignored.
 *
 * @example
 * parseDotEnv('# registry\nSVC_REGISTRY_USERNAME=alice\nSVC_REGISTRY_PASSWORD="s3cr#t"\n') // { SVC_REGISTRY_USERNAME: 'alice', SVC_REGISTRY_PASSWORD: 's3cr#t' }
 */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(raw);
    if (!m) continue;
    const key = m[1] as string;
    let value = m[2] as string;
    if (value.startsWith('"')) {
      const end = closingQuote(value);
      value = value.slice(1, end === -1 ? undefined : end).replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    } else if (value.startsWith("'")) {
      const end = value.indexOf("'", 1);
      value = value.slice(1, end === -1 ? undefined : end);
    } else {
      const hash = value.search(/(^|\s)#/);
      value = (hash === -1 ? value : value.slice(0, hash)).trim();
    }
    out[key] = value;
  }
  return out;
}

/** Where the double-quoted value starting at 0 ends (its unescaped closing quote), or -1. */
function closingQuote(value: string): number {
  for (let i = 1; i < value.length; i++) {
    if (value[i] === '\\') i++;
    else if (value[i] === '"') return i;
  }
  return -1;
}

/**
 * The registry credentials of a project: each of the username and the password from the environment when set there
 * (non-empty), else from `<projectRoot>/.env`; undefined when either is missing.
 *
 * @example
 * const credentials = registryCredentials('/srv/myapp', process.env); // { username: 'alice', password: '…' } | undefined
 */
export function registryCredentials(projectRoot: string, env: NodeJS.ProcessEnv = process.env): RegistryCredentials | undefined {
  const file = join(projectRoot, '.env');
  const dotEnv = existsSync(file) ? parseDotEnv(readFileSync(file, 'utf8')) : {};
  const pick = (names: readonly string[]): string | undefined => {
    for (const source of [env, dotEnv]) {
      for (const name of names) {
        const value = source[name];
        if (value !== undefined && value !== '') return value;
      }
    }
    return undefined;
  };
  const username = pick(REGISTRY_USERNAME_VARIABLES);
  const password = pick(REGISTRY_PASSWORD_VARIABLES);
  return username !== undefined && password !== undefined ? { username, password } : undefined;
}
