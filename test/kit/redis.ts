/**
 * A real `redis-server` (Debian's) on a free loopback port, for one test file.
 * No persistence, no default port; stopped when the test ends. Tests that need
 * Redis and find no binary are skipped with a visible reason (`.ci/run`
 * installs it, so CI always runs them).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { freePort } from './ports.ts';

/** Whether a `redis-server` binary is on the PATH. */
export const haveRedis: boolean = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Why a Redis test is skipped, or false when it can run. */
export const skipRedis: string | false = haveRedis ? false : 'no redis-server on this machine (apt-get install redis-server; .ci/run installs it)';

export interface RedisServer {
  port: number;
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** Stop it (SIGTERM, waits for the exit). */
  stop(): Promise<void>;
  /** Kill it at once (SIGKILL). */
  kill(): Promise<void>;
  /** Start it again on the same port (after `stop` or `kill`): an empty Redis, as after a crash without persistence. */
  restart(): Promise<void>;
  /** A client for the test itself (closed with the server). */
  client(): Redis;
}

/**
 * @example
 * const redis = await startRedis(t);           // stopped when t ends
 * const r = redis.client(); await r.set('a', '1');
 */
export async function startRedis(t?: { teardown(fn: () => unknown): void }, options: { password?: string } = {}): Promise<RedisServer> {
  const { Redis } = await import('ioredis'); // loaded here: importing the kit does not load ioredis
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const clients: Redis[] = [];
  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning'];
    if (options.password) args.push('--requirepass', options.password);
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = child;
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    // Ready once it answers PING (a connection attempt per retry, no sleep on a guess).
    const probe = new Redis({ port, host: '127.0.0.1', password: options.password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    probe.on('error', () => undefined);
    const exited = once(child, 'exit').then(([code]) => {
      throw new Error(`redis-server exited with ${code} before it was ready: ${out}`);
    });
    const ready = (async () => {
      for (;;) {
        try {
          await probe.connect();
          await probe.ping();
          return;
        } catch {
          probe.disconnect();
          await new Promise((r) => setImmediate(r));
        }
      }
    })();
    try {
      await Promise.race([ready, exited]);
    } finally {
      probe.disconnect();
    }
  };
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = once(p, 'exit');
    p.kill(signal);
    await gone;
  };
  await launch();
  const server: RedisServer = {
    port,
    url: options.password ? `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    stop: () => stop('SIGTERM'),
    kill: () => stop('SIGKILL'),
    restart: async () => {
      await stop('SIGTERM');
      await launch();
    },
    client: () => {
      const c = new Redis({ port, host: '127.0.0.1', password: options.password });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
  };
  t?.teardown(async () => {
    for (const c of clients) c.disconnect();
    await stop('SIGTERM');
  });
  return server;
}
