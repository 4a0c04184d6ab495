// The apps and helpers under test/fixtures, by path, for launchers that start them (`svc start <entry>`).
import { fileURLToPath } from 'node:url';

/**
 * The absolute path of `test/fixtures/<path>`.
 *
 * @example
 * const server = await startServer({ entry: fixture('events-app.ts') });
 */
export function fixture(path: string): string {
  return fileURLToPath(new URL(`../fixtures/${path}`, import.meta.url));
}
