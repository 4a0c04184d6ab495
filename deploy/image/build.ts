/**
 * Building and pushing the app's image through a `docker`-compatible command
 * (docker, podman, or a wrapper script taking the same arguments):
 * `login` (the password written to its stdin, `--password-stdin`), `build`,
 * `push`. The password is never in an argument, a child's environment or a
 * line logged (a line that would hold it is written with `***` instead).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { type RegistryCredentials, REGISTRY_PASSWORD_VARIABLES, REGISTRY_USERNAME_VARIABLES } from './credentials.ts';
import { ImageError } from './errors.ts';

/** What a command ended with: its exit code (-1: it could not start) and its last lines of output. */
export interface RunResult {
  code: number;
  tail: string[];
}

/** Runs one command (argv[0] found on the PATH), with `stdin` written to it, each output line passed to `onLine`. */
export type Runner = (argv: readonly string[], options: { stdin?: string; onLine?: (line: string) => void; timeoutMs?: number }) => Promise<RunResult>;

/**
 * The default {@link Runner}: `child_process.spawn`, no shell, the environment inherited, stdout and stderr read line
 * by line (the last 40 kept for errors).
 *
 * @example
 * const { code } = await runCommand(['docker', 'info'], { timeoutMs: 10_000 });
 */
export const runCommand: Runner = (argv, options) =>
  new Promise((resolvePromise) => {
    const [command, ...args] = argv as [string, ...string[]];
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const partial = { out: '', err: '' };
    const take = (stream: 'out' | 'err', chunk: Buffer): void => {
      const text = partial[stream] + chunk.toString('utf8');
      const lines = text.split(/\r?\n|\r/);
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) emit(line);
    };
    const emit = (line: string): void => {
      if (line === '') return;
      tail.push(line);
      if (tail.length > 40) tail.shift();
      options.onLine?.(line);
    };
    child.stdout.on('data', (c: Buffer) => take('out', c));
    child.stderr.on('data', (c: Buffer) => take('err', c));
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    let done = false;
    const finish = (code: number): void => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      emit(partial.out);
      emit(partial.err);
      resolvePromise({ code, tail });
    };
    child.on('error', (error) => {
      tail.push(error.message);
      finish(-1);
    });
    child.on('close', (code, signal) => finish(code ?? (signal ? 128 : -1)));
  });

/**
 * The container command to use: the configured one (`[scale.orchestrator] container_cli`, split on spaces — a wrapper
 * script with its arguments), else `docker` when `docker info` answers (a client with no engine does not), else
 * `podman` when it is on the PATH.
 *
 * @example
 * await chooseContainerCli('')                    // ['docker'] where an engine answers, else ['podman']
 * await chooseContainerCli('sudo -n podman')      // ['sudo', '-n', 'podman']
 */
export async function chooseContainerCli(configured: string, run: Runner = runCommand): Promise<string[]> {
  const words = configured.trim().split(/\s+/).filter(Boolean);
  if (words.length > 0) return words;
  if ((await run(['docker', 'info'], { timeoutMs: 15_000 })).code === 0) return ['docker'];
  if ((await run(['podman', '--version'], { timeoutMs: 15_000 })).code === 0) return ['podman'];
  throw new ImageError('SVC_ERR_CONTAINER_CLI');
}

export interface BuildAndPushOptions {
  /** The docker-compatible command, e.g. `['docker']`, `['podman']` or a wrapper (see {@link chooseContainerCli}). */
  cli: readonly string[];
  /** The staged build context ({@link imageContext}). */
  context: { dir: string };
  /** The image's reference, `{registry}/{app}:{tag}`. */
  ref: string;
  /** The registry logged in to (its host, e.g. `registry.example.com`). */
  registry: string;
  /** The registry's credentials ({@link registryCredentials}); needed to push. */
  credentials: RegistryCredentials | undefined;
  /** Push after building (false: build only, nothing leaves the machine and no credentials are needed). */
  push: boolean;
  /** Runs each command (tests pass a recording fake). */
  run?: Runner;
  /** Each command (`$ docker build …`) and each line it prints. */
  log?: (line: string) => void;
}

/** An image reference or registry host safe as one argument (it cannot read as an option). */
const REFERENCE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/;

/**
 * Build the image from a staged context and push it: `login` (only to push; the password on stdin), `build -t <ref>`,
 * `push <ref>`. Without credentials a push fails before anything runs, naming the variables to set.
 *
 * @example
 * const context = imageContext({ … });
 * await buildAndPush({ cli: ['docker'], context, ref: `ghcr.io/me/app:${context.tag}`, registry: 'ghcr.io', credentials: registryCredentials(root), push: true, log: console.log });
 */
/**
 * Pushing needs the registry's login: throws `SVC_ERR_IMAGE_CREDENTIALS` naming the variables to set when there is
 * none (called before anything is staged or run).
 *
 * @example
 * requireCredentials('registry.example.com/team/shop:3f9a01c2e4b7', registryCredentials(projectRoot));
 */
export function requireCredentials(ref: string, credentials: RegistryCredentials | undefined): asserts credentials is RegistryCredentials {
  if (credentials !== undefined && credentials.username !== '' && credentials.password !== '') return;
  const [user, otherUser] = REGISTRY_USERNAME_VARIABLES;
  const [password, otherPassword] = REGISTRY_PASSWORD_VARIABLES;
  const names = `${user} and ${password} (or ${otherUser} and ${otherPassword})`;
  throw new ImageError('SVC_ERR_IMAGE_CREDENTIALS', `pushing ${ref} needs container registry credentials: set ${names} in the environment or in the project's .env; nothing was run`);
}

export async function buildAndPush(options: BuildAndPushOptions): Promise<{ ref: string }> {
  const { cli, ref, registry, credentials, push } = options;
  const run = options.run ?? runCommand;
  const secret = credentials?.password;
  const redact = (line: string): string => (secret ? line.split(secret).join('***') : line);
  const log = (line: string): void => options.log?.(redact(line));
  if (cli.length === 0) throw new ImageError('SVC_ERR_CONTAINER_CLI', 'no container command given');
  if (!REFERENCE.test(ref)) throw new ImageError('SVC_ERR_IMAGE_BUILD', `"${ref}" is not an image reference`);
  if (push) {
    requireCredentials(ref, credentials);
    if (!REFERENCE.test(registry)) throw new ImageError('SVC_ERR_IMAGE_LOGIN', `"${registry}" is not a registry host`);
    if (credentials.username.startsWith('-') || /\s/.test(credentials.username)) throw new ImageError('SVC_ERR_IMAGE_CREDENTIALS', 'the registry username may not start with "-" or hold spaces');
  }
  const step = async (code: 'SVC_ERR_IMAGE_LOGIN' | 'SVC_ERR_IMAGE_BUILD' | 'SVC_ERR_IMAGE_PUSH', args: string[], stdin?: string): Promise<void> => {
    const argv = [...cli, ...args];
    log(`$ ${argv.join(' ')}`);
    const result = await run(argv, { ...(stdin === undefined ? {} : { stdin }), onLine: log });
    if (result.code !== 0) {
      const tail = result.tail.slice(-8).map(redact).join('\n  ');
      throw new ImageError(code, `${argv.slice(0, cli.length + 1).join(' ')} failed (exit ${result.code})${tail ? `:\n  ${tail}` : ''}`, { details: { exitCode: result.code } });
    }
  };
  if (push && credentials !== undefined) await step('SVC_ERR_IMAGE_LOGIN', ['login', registry, '--username', credentials.username, '--password-stdin'], credentials.password);
  await step('SVC_ERR_IMAGE_BUILD', ['build', '-t', ref, '-f', join(options.context.dir, 'Dockerfile'), options.context.dir]);
  if (push) await step('SVC_ERR_IMAGE_PUSH', ['push', ref]);
  return { ref };
}
