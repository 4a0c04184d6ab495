/**
 * The entry module a command acts on: the one named, else `main.ts` in the
 * current folder, else its `app.ts` — the same rule and the same messages
 * for every command.
 */
import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';

/** A missing or unusable entry: one line for the user. */
export class EntryError extends Error {}

/**
 * The absolute path of the entry file; throws {@link EntryError}.
 *
 * @example
 * resolveEntry(undefined, 'svc start <entry.ts>') // '/srv/app/main.ts', or throws when there is none
 */
export function resolveEntry(entry: string | undefined, usage: string): string {
  // `main.ts` by default; else the `app.ts` that `svc init` writes.
  const path = resolve(entry ?? (!existsSync('main.ts') && existsSync('app.ts') ? 'app.ts' : 'main.ts'));
  if (!existsSync(path)) {
    throw new EntryError(entry ? `entry file not found: ${entry}` : `no entry file given and no main.ts in the current folder (nor an app.ts; ${usage})`);
  }
  if (!['.ts', '.mts', '.js', '.mjs'].includes(extname(path))) throw new EntryError(`the entry file must be a .ts, .mts, .js or .mjs module: ${entry}`);
  return path;
}
