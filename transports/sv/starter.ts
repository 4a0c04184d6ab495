/**
 * Auto-start: a provider with no URL is started as a
 * sibling process — `svc start <module>.ts` bound to 127.0.0.1 on a free
 * port in 18000–18999 — at most 8 starting at once; its URL counts once an
 * HTTP readiness probe answers.
 *
 * - Its output goes to this process's, each line prefixed `[<module>] `.
 * - Its data folder is its own, beside this process's (`.svc/data-sv-<module>`),
 *   on embedded SQLite: never this process's store, whatever the shared
 *   `svc.toml` or the environment say of databases and Redis.
 * - It takes the tokens this process's JWT secret signed (its users live here:
 *   `[scale.jwt] accept_unknown_users`).
 * - It stops with this process: on close, and — when this process is killed,
 *   even with SIGKILL — because it watches a pipe whose other end only this
 *   process holds (end of file: it shuts down).
 * - A sibling that dies is started again (on the same port if it is free),
 *   after 1, 2, 4… s (at most 30 s).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createServer } from 'node:net';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcError } from '../../kernel/index.ts';
import { candidates, checkModuleName, moduleFile, urlVariable } from './names.ts';

export const PORT_RANGE = { from: 18000, to: 18999 } as const;
/** At most this many siblings start at once (more wait their turn). */
export const MAX_STARTING = 8;

/** The environment variable a sibling reads its parent pipe's file descriptor from. */
export const PARENT_FD_VARIABLE = 'SVC_SV_PARENT_FD';

export interface StarterOptions {
  /** This process's data folder: siblings get theirs beside it. */
  dataDir: string;
  /** The JWT secret siblings verify tokens with (this process's). */
  jwtSecret: string;
  /** This process's webhook secret, if it has one: siblings' webhook walkers use it. */
  webhookSecret?: string | undefined;
  /** `--profile` of this process, passed on. */
  profile?: string | undefined;
  /** Worker threads of each sibling (default 1). */
  workers?: number;
  /** How long a sibling may take to answer its readiness probe (default 60 s). */
  startTimeoutMs?: number;
  /** Where siblings' output lines go (prefixed); default this process's stdout/stderr. */
  output?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Environment for siblings (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** This process as a provider of its siblings (`SVC_SV_<NAME>_URL`): a sibling calling back reaches it, not a copy. */
  self?: { name: string; url: string };
}

interface Sibling {
  module: string;
  file: string;
  /** The main module of microservice mode: the users (and the admin account) live there; the others take its tokens. */
  main: boolean;
  dataDir: string;
  port: number;
  url: string | undefined;
  child: ChildProcess | undefined;
  ready: Promise<string>;
  restarts: number;
  /** When it last became ready. */
  upSince: number;
  timer: NodeJS.Timeout | undefined;
}

const BIN = fileURLToPath(new URL('../../bin/svc.mjs', import.meta.url));

/** The environment a sibling must not inherit: its store, cluster, port and listeners are its own. */
const NOT_INHERITED = /^(DOCDB_URI|KV_URL|SVC_DATA_DIR|SVC_PORT|PORT|SVC_HOST|SVC_WORKERS|SVC_SHELF_DB_PATH|SVC_USERS_DB_PATH|SVC_MICROSERVICES_ENABLED|SVC_CLUSTER_[A-Z_]+|JWT_SECRET|SVC_JWT_ACCEPT_UNKNOWN_USERS|SVC_SV_PARENT_FD|SVC_SV_ADMIN)$/;

/**
 * @example
 * const starter = new ServiceStarter({ dataDir, jwtSecret });
 * const url = await starter.ensure('billing', projectRoot); // 'http://127.0.0.1:18342'
 * await starter.close();
 */
export class ServiceStarter {
  private readonly siblings = new Map<string, Sibling>();
  private starting = 0;
  private readonly queue: (() => void)[] = [];
  private closed = false;
  private readonly onExit = (): void => {
    for (const s of this.siblings.values()) s.child?.kill('SIGTERM');
  };

  constructor(private readonly o: StarterOptions) {
    process.once('exit', this.onExit);
  }

  /** The URL of `module`'s sibling, started if it is not yet; idempotent, concurrent calls share one start. */
  ensure(module: string, baseDir: string, options: { file?: string; dataDir?: string; main?: boolean } = {}): Promise<string> {
    checkModuleName(module);
    if (this.closed) return Promise.reject(new Error('the service starter is closed'));
    const known = this.siblings.get(module);
    if (known) return known.ready;
    const file = options.file ?? moduleFile(module, baseDir);
    if (!file) return Promise.reject(new SvcError('SV_UNKNOWN_SERVICE', `no URL for service ${module} and no module file to start in ${baseDir} (tried ${candidates(module)}): call sv.register('${module}', url) or set ${urlVariable(module)}`, { status: 500 }));
    const sibling: Sibling = { module, file, main: options.main === true, dataDir: options.dataDir ?? `${this.o.dataDir.replace(/[\\/]+$/, '')}-sv-${module}`, port: 0, url: undefined, child: undefined, ready: Promise.resolve(''), restarts: 0, upSince: 0, timer: undefined };
    sibling.ready = this.turn(() => this.launch(sibling));
    this.siblings.set(module, sibling);
    // A start that failed is forgotten: the next call tries again.
    sibling.ready.catch(() => {
      if (this.siblings.get(module) === sibling) this.siblings.delete(module);
    });
    return sibling.ready;
  }

  /** The siblings started, with their URLs and process ids. */
  list(): { module: string; file: string; url: string | undefined; pid: number | undefined }[] {
    return [...this.siblings.values()].map((s) => ({ module: s.module, file: s.file, url: s.url, pid: s.child?.pid }));
  }

  /** Stop every sibling: SIGTERM, then SIGKILL after `graceMs`. */
  async close(graceMs = 5_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    process.removeListener('exit', this.onExit);
    await Promise.all(
      [...this.siblings.values()].map(async (s) => {
        clearTimeout(s.timer);
        const child = s.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
    this.siblings.clear();
  }

  /** Run `work` when fewer than {@link MAX_STARTING} starts are under way. */
  private async turn<T>(work: () => Promise<T>): Promise<T> {
    if (this.starting >= MAX_STARTING) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.starting++;
    try {
      return await work();
    } finally {
      this.starting--;
      this.queue.shift()?.();
    }
  }

  private async launch(sibling: Sibling): Promise<string> {
    const taken = new Set([...this.siblings.values()].filter((s) => s !== sibling).map((s) => s.port));
    const port = await freePortInRange(sibling.port || undefined, taken);
    sibling.port = port;
    const dataDir = sibling.dataDir;
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(this.o.env ?? process.env)) if (!NOT_INHERITED.test(k)) env[k] = v;
    Object.assign(env, {
      SVC_DATA_DIR: dataDir,
      JWT_SECRET: this.o.jwtSecret,
      SVC_JWT_ACCEPT_UNKNOWN_USERS: sibling.main ? 'false' : 'true',
      [PARENT_FD_VARIABLE]: '3',
    });
    if (this.o.webhookSecret) env.WEBHOOK_SECRET = this.o.webhookSecret;
    if (sibling.main) env.SVC_SV_ADMIN = '1';
    if (this.o.self && !env[urlVariable(this.o.self.name)]) env[urlVariable(this.o.self.name)] = this.o.self.url;
    // The others started here so far: a sibling calling a sibling reaches that one, not a copy of its own.
    for (const other of this.siblings.values()) if (other !== sibling && other.url && !env[urlVariable(other.module)]) env[urlVariable(other.module)] = other.url;
    const args = [BIN, 'start', sibling.file, '--host', '127.0.0.1', '--port', String(port), '--workers', String(this.o.workers ?? 1)];
    if (this.o.profile) args.push('--profile', this.o.profile);
    const child = spawn(process.execPath, args, { cwd: dirname(sibling.file), env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    sibling.child = child;
    const prefix = `[${sibling.module}] `;
    const write = this.o.output ?? ((line: string, stream: 'stdout' | 'stderr') => process[stream].write(`${line}\n`));
    let announced: ((url: string) => void) | undefined;
    const announcedUrl = new Promise<string>((resolve) => (announced = resolve));
    const tail: string[] = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      const lines = createInterface({ input: child[stream] as NodeJS.ReadableStream });
      lines.on('line', (line) => {
        write(`${prefix}${line}`, stream);
        tail.push(line);
        if (tail.length > 20) tail.shift();
        const ready = /^Server ready at (http:\/\/\S+)$/.exec(line);
        if (ready) announced?.(ready[1] as string);
      });
    }
    // The pipe the sibling watches: nothing is written; it ends when this process does.
    (child.stdio[3] as NodeJS.WritableStream | null)?.on('error', () => undefined);
    const exited = new Promise<never>((_resolve, reject) =>
      child.once('exit', (code, signal) => {
        reject(new Error(`${sibling.module} exited (${signal ?? `code ${code}`}) before it was ready${tail.length ? `:\n${tail.slice(-8).join('\n')}` : ''}`));
      }),
    );
    exited.catch(() => undefined);
    const timeoutMs = this.o.startTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${sibling.module} did not answer its readiness probe within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const url = await Promise.race([announcedUrl.then((u) => probe(u, child)), exited, late]);
      sibling.url = url;
      sibling.upSince = Date.now();
      write(`svc: service ${sibling.module} (${relative(process.cwd(), sibling.file) || sibling.file}) ready at ${url}, pid ${child.pid}`, 'stdout');
      child.once('exit', (code, signal) => this.died(sibling, code, signal));
      return url;
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A ready sibling exited: start it again (same port when free) unless this starter is closing. */
  private died(sibling: Sibling, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.closed || this.siblings.get(sibling.module) !== sibling) return;
    // One that had served a while starts again at once-ish; one that keeps dying waits longer each time.
    if (Date.now() - sibling.upSince > 60_000) sibling.restarts = 0;
    const delay = Math.min(30_000, 1000 * 2 ** sibling.restarts);
    sibling.restarts++;
    const write = this.o.output ?? ((line: string, stream: 'stdout' | 'stderr') => process[stream].write(`${line}\n`));
    write(`svc: service ${sibling.module} exited (${signal ?? `code ${code}`}); starting it again in ${delay} ms`, 'stderr');
    sibling.timer = setTimeout(() => {
      if (this.closed) return;
      sibling.ready = this.turn(() => this.launch(sibling));
      sibling.ready.catch((error: unknown) => {
        write(`svc: service ${sibling.module} could not be started again: ${(error as Error).message}`, 'stderr');
        if (this.siblings.get(sibling.module) === sibling) this.siblings.delete(sibling.module);
      });
    }, delay);
    sibling.timer.unref();
  }
}

/** GET /healthz/ready until it answers 200 (every 50 ms); the child exiting stops it. */
async function probe(url: string, child: ChildProcess): Promise<string> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('exited during its readiness probe');
    try {
      // undici is loaded with the first sibling started (an app that makes no `sv` call never loads it).
      const { request } = await import('undici');
      const res = await request(`${url}/healthz/ready`, { method: 'GET', headersTimeout: 2_000, bodyTimeout: 2_000 });
      await res.body.dump();
      if (res.statusCode === 200) return url;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A free port on 127.0.0.1 in {@link PORT_RANGE}: `preferred` if free, else one picked at random. */
export async function freePortInRange(preferred?: number, taken: ReadonlySet<number> = new Set()): Promise<number> {
  if (preferred !== undefined && (await isFree(preferred))) return preferred;
  const size = PORT_RANGE.to - PORT_RANGE.from + 1;
  const start = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = PORT_RANGE.from + ((start + i) % size);
    if (!taken.has(port) && (await isFree(port))) return port;
  }
  throw new Error(`no free port in ${PORT_RANGE.from}–${PORT_RANGE.to}`);
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
