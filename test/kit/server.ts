// Start `svc start` as a child process on a free port, the way a user would.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Role } from '../../actors/identity/index.ts';

export const TEST_SECRET = 'test-secret-test-secret-test-secret-0123456789';
const BIN = new URL('../../bin/svc.mjs', import.meta.url).pathname;

export interface Server {
  url: string;
  port: number;
  proc: ChildProcess;
  dataDir: string;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves once the output has `count` lines matching `re` (already printed or still to come). */
  waitFor(re: RegExp, count?: number): Promise<string>;
  /** Resolves with the exit code (or signal) once the process ends. */
  exited: Promise<number | NodeJS.Signals | null>;
  stop(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals | null>;
}

/** The transport under test: `SVC_TRANSPORT` (CI runs the HTTP tests once per transport). */
export function transport(): string {
  return process.env.SVC_TRANSPORT ?? 'auto';
}

export async function startServer(options: {
  entry: string;
  args?: string[];
  env?: Record<string, string>;
  workers?: number;
  port?: number;
  /** Leave out the entry argument (svc start falls back to main.ts). */
  noEntry?: boolean;
  cwd?: string;
  /** Wait for this line instead of the ready line (for commands that exit). */
  until?: RegExp;
  /** Start it with this open-file limit (`ulimit -n`). */
  ulimitFiles?: number;
}): Promise<Server> {
  const dataDir = options.env?.SVC_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  const args = [BIN, 'start', ...(options.noEntry ? [] : [options.entry]), '--host', '127.0.0.1', '--port', String(options.port ?? 0), '--workers', String(options.workers ?? 1), ...(options.args ?? [])];
  // With a file limit, a shell sets it and becomes the process (exec): the pid stays svc's.
  const [cmd, argv] = options.ulimitFiles
    ? ['/bin/sh', ['-c', `ulimit -n ${options.ulimitFiles} && exec "$0" "$@"`, process.execPath, ...args]]
    : [process.execPath, args];
  const proc = spawn(cmd, argv, {
    cwd: options.cwd,
    env: { ...process.env, SVC_DATA_DIR: dataDir, JWT_SECRET: TEST_SECRET, SVC_TRANSPORT: transport(), SVC_ACCESS_LOG: 'false', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters: { re: RegExp; left: number; resolve: (line: string) => void }[] = [];
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal)));
  const ready = new Promise<string>((resolve, reject) => {
    const onLine = (line: string) => {
      out += `${line}\n`;
      for (const w of [...waiters]) {
        if (w.re.test(line) && --w.left === 0) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
      // At the start of a line: a sibling's own ready line comes prefixed (`[billing] Server ready at …`).
      const m = /^Server ready at (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1] as string);
      if (options.until?.test(line)) resolve('');
    };
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', onLine);
    createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on('line', onLine);
    void exited.then((code) => reject(new Error(`svc start exited (${code}) before it was ready:\n${out}`)));
  });
  const url = await ready;
  return {
    url,
    port: url ? Number(new URL(url).port) : 0,
    proc,
    dataDir,
    output: () => out,
    waitFor(re: RegExp, count = 1) {
      const seen = out.split('\n').filter((l) => re.test(l));
      if (seen.length >= count) return Promise.resolve(seen[count - 1] as string);
      return new Promise((resolve) => waiters.push({ re, left: count - seen.length, resolve }));
    },
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/**
 * A token for `userId` signed with the test secret (by jose, as another
 * service would). With `server`, the user is made to exist in its users store
 * first, as `svc token` does (the server refuses tokens of users that do not exist).
 */
export async function tokenFor(
  userId: string,
  options: { role?: string; expiresIn?: string | number; secret?: string; alg?: string; server?: { dataDir: string } } = {},
): Promise<string> {
  if (options.server) {
    // Loaded here: importing the kit does not load the identity room (a test of the kernel would pay for it).
    const { serviceAccount } = await import('../../actors/identity/index.ts');
    const { SqliteUsersRepository } = await import('../../stores/sqlite/index.ts');
    const users = SqliteUsersRepository.open(join(options.server.dataDir, 'users.db'));
    try {
      userId = (await serviceAccount(users, userId, (options.role ?? 'user') as Role)).user.user_id;
    } finally {
      await users.close();
    }
  }
  const { SignJWT } = await import('jose');
  return new SignJWT({ user_id: userId, role: options.role ?? 'user' })
    .setProtectedHeader({ alg: options.alg ?? 'HS256' })
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '1h')
    .sign(new TextEncoder().encode(options.secret ?? TEST_SECRET));
}

/** POST (or another method) JSON and parse the envelope. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}, method = 'POST'): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** What a finished `svc` command left: its exit code and output. */
export interface SvcRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run an `svc` command to completion (no access log). `clean` leaves out of
 * its environment what would point it at a server set up by the test run
 * itself (secret, data folder, shared stores, NODE_ENV).
 *
 * @example
 * const r = await runSvc(['start', 'missing.ts']); r.code // 1
 */
export function runSvc(args: string[], options: { cwd?: string; env?: Record<string, string>; clean?: boolean } = {}): Promise<SvcRun> {
  const base: NodeJS.ProcessEnv = { ...process.env, SVC_ACCESS_LOG: 'false' };
  if (options.clean) for (const name of ['JWT_SECRET', 'SVC_DATA_DIR', 'DOCDB_URI', 'KV_URL', 'NODE_ENV']) delete base[name];
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: { ...base, ...options.env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d));
    p.stderr.on('data', (d: Buffer) => (stderr += d));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
