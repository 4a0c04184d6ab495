/**
 * `svc start [entry]`: serve every walker and function of an app.
 *
 * The command reads its flags and its entry; the main thread is then a list
 * of runtime modules (`runtime/start.ts`: config, app, data, hasher, stores,
 * port, starter, member, pool, report, join, reload, signals), composed and
 * checked as a worker thread's are, and started.
 */
import { createStartRuntime, holdYoungGeneration, loadStart, PORT_RANGE, StartError, startFailure } from '../../runtime/index.ts';
import { EntryError, resolveEntry } from '../entry.ts';
import { watchLauncher } from '../launcher.ts';
import type { ScaleFlags } from './scale.ts';

/** `svc start`'s flags; those of `--scale` are the deploy command's own. */
export interface StartFlags extends ScaleFlags {
  port?: number | string;
  host?: string;
  faux?: boolean;
  dev?: boolean;
  client?: boolean;
  profile?: string;
  api_port?: number | string;
  apiPort?: number | string;
  main?: boolean;
  workers?: number | string;
  scale?: boolean;
}

export async function start(entryArg: string | undefined, flags: StartFlags): Promise<void> {
  if (flags.scale) {
    const { scale } = await import('./scale.ts');
    return scale(entryArg, flags);
  }
  // Start-up's garbage does not size each thread's young generation (released once the server is ready).
  holdYoungGeneration();
  try {
    const entry = resolveEntry(entryArg, 'svc start <entry.ts>');
    const apiPort = portFlag(flags.api_port ?? flags.apiPort, '--api_port');
    const options = loadStart({
      entry,
      profile: flags.profile,
      port: apiPort !== undefined && apiPort > 0 ? apiPort : portFlag(flags.port, '--port'),
      host: typeof flags.host === 'string' ? flags.host : undefined,
      workers: int(flags.workers, '--workers'),
      dev: flags.dev === true,
      faux: flags.faux === true,
      watchLauncher: (gone, enabled) => watchLauncher(gone, { enabled }),
    });
    await createStartRuntime(options).start();
  } catch (error) {
    process.stderr.write(`svc: ${error instanceof EntryError ? error.message : startFailure(error)}\n`);
    process.exit(1);
  }
}

function int(value: unknown, flag: string): number | undefined {
  if (value === undefined || value === '' || value === true) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new StartError(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return n;
}

/** A port flag: a whole number 0–65535, or undefined when not given. */
function portFlag(value: unknown, flag: string): number | undefined {
  if (value === undefined || value === '' || value === true) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new StartError(`invalid port ${JSON.stringify(value)} for ${flag}: ${PORT_RANGE}`);
  return n;
}
