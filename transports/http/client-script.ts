/**
 * The reconnecting WebSocket client (`svc/client/live`) for browsers, served
 * at `/svc/live.js` as an ES module: `import { LiveSocket } from '/svc/live.js'`.
 * Transpiled once, on first request, from the package's own TypeScript.
 */
import { readFileSync } from 'node:fs';
import { transformSync } from 'esbuild';

/** Where it is served. */
export const LIVE_CLIENT_PATH = '/svc/live.js';

let script: string | undefined;

/** The module's JavaScript (made once). */
export function liveClientScript(): string {
  if (script === undefined) {
    const source = readFileSync(new URL('../../client/live.ts', import.meta.url), 'utf8');
    script = transformSync(source, { loader: 'ts', format: 'esm', target: 'es2020', sourcefile: 'live.ts' }).code;
  }
  return script;
}
