/**
 * A sandbox's project as every provider sees it: a folder `app/` (the
 * project's files) beside the dev server's log `dev.log` (outside the
 * project, so the code running in it cannot swap it for a link), and the dev
 * server: the project's `dev` script, run as `npm run dev` runs it — `sh -c`
 * in the project folder, `node_modules/.bin` first on the PATH — with the
 * port in `PORT`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sandboxError } from './errors.ts';
import type { SandboxRecord } from './types.ts';

/** What a dev server prints once it serves (its port must answer too). */
export const READY_TEXT = 'Server ready';

/** The project's folder on the host. */
export function appDir(record: Pick<SandboxRecord, 'dir'>): string {
  return join(record.dir, 'app');
}

/** The dev server's output (stdout and stderr, as written). */
export function logPath(record: Pick<SandboxRecord, 'dir'>): string {
  return join(record.dir, 'dev.log');
}

/** The project's dev command: `scripts.dev` of its package.json (then `scripts.start`). */
export async function devScript(dir: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(join(dir, 'package.json'), 'utf8');
  } catch {
    throw sandboxError('SANDBOX_INVALID', 'the project has no package.json: its dev server is the "dev" script of package.json');
  }
  let scripts: unknown;
  try {
    scripts = (JSON.parse(text) as { scripts?: unknown }).scripts;
  } catch {
    throw sandboxError('SANDBOX_INVALID', "the project's package.json is not valid JSON");
  }
  const s = (scripts ?? {}) as Record<string, unknown>;
  const script = typeof s.dev === 'string' ? s.dev : typeof s.start === 'string' ? s.start : undefined;
  if (script === undefined || script.trim() === '') throw sandboxError('SANDBOX_INVALID', 'the project\'s package.json has no "dev" script (nor "start") to run as its dev server');
  return script;
}

/**
 * The environment of the dev server and of commands: the sandbox's identity,
 * the port, polling file watchers (files change under them from outside), and
 * what npm would set for a script. `cwd`: the project folder as the process sees it.
 */
export function sandboxEnv(record: Pick<SandboxRecord, 'sandbox_id' | 'user' | 'project' | 'port'>, cwd: string, host = '0.0.0.0'): Record<string, string> {
  return {
    PATH: `${join(cwd, 'node_modules/.bin')}:/usr/local/bin:/usr/bin:/bin`,
    HOME: cwd,
    PORT: String(record.port),
    HOST: host,
    NODE_ENV: 'development',
    SVC_SANDBOX_ID: record.sandbox_id,
    SVC_SANDBOX_USER: record.user,
    SVC_SANDBOX_PROJECT: record.project,
    CHOKIDAR_USEPOLLING: '1',
    WATCHPACK_POLLING: 'true',
    npm_lifecycle_event: 'dev',
  };
}
