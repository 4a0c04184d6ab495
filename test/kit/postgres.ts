/**
 * A real PostgreSQL (Debian's `postgresql`) on a free loopback port, for one
 * test file: a throwaway cluster made by `initdb` in a temporary folder,
 * stopped and removed when the test ends. `initdb` refuses to run as root, so
 * as root the server runs as the `postgres` user. Tests that need it and find
 * no binary are skipped with a visible reason (`.ci/run` installs it).
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { freePort } from './ports.ts';

function findBin(name: string): string | undefined {
  const which = spawnSync('sh', ['-c', `command -v ${name} || ls /usr/lib/postgresql/*/bin/${name} 2>/dev/null | sort -V | tail -n 1`], { encoding: 'utf8' });
  const found = which.stdout.trim().split('\n').filter(Boolean).pop();
  return found || undefined;
}

const INITDB = findBin('initdb');
const PG_CTL = findBin('pg_ctl');

/** Why a PostgreSQL test is skipped, or false when it can run. */
export const skipPostgres: string | false = INITDB && PG_CTL ? false : 'no PostgreSQL on this machine (apt-get install postgresql; .ci/run installs it)';

/** The user the server runs as: `postgres` when we are root (initdb refuses root), else us. */
function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('running as root, and there is no postgres user to run PostgreSQL as');
  return { uid, gid };
}

function run(cmd: string, args: string[], as: { uid?: number; gid?: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...as, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}: ${out}`))));
  });
}

export interface PostgresServer {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication on loopback). */
  url: string;
  /** A fresh, empty database on this server; its URL. */
  database(name?: string): Promise<string>;
  /** Stop it (fast shutdown: clients are disconnected, committed data stays). */
  stop(): Promise<void>;
  /** Stop it at once (immediate shutdown: like a crash; committed data stays). */
  kill(): Promise<void>;
  /** Start it again on the same port and data. */
  start(): Promise<void>;
  /** With `tls`: the certificate to trust (`sslrootcert`). */
  caFile?: string;
  /** Run SQL as the superuser on a database of this server (default `postgres`). */
  query(sql: string, values?: unknown[], url?: string): Promise<pg.QueryResult>;
}

let made = 0;

/**
 * @example
 * const pgs = await startPostgres(t);        // stopped and removed when t ends
 * const uri = await pgs.database();           // DOCDB_URI for a store under test
 * const durable = await startPostgres(undefined, { fsync: true }); // a bench of durable commits
 * const tls = await startPostgres(t, { tls: true });  // TLS with a self-signed certificate for 127.0.0.1: tls.caFile
 */
export async function startPostgres(t?: { teardown(fn: () => unknown): void }, options: { fsync?: boolean; tls?: boolean } = {}): Promise<PostgresServer> {
  if (!INITDB || !PG_CTL) throw new Error(skipPostgres as string);
  const as = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  if (as.uid !== undefined) chownSync(dir, as.uid, as.gid as number);
  const data = join(dir, 'data');
  const port = await freePort();
  await run(INITDB, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], as);
  // Loopback only; the socket in our folder; fsync off: the tests kill svc, never the machine
  // (`fsync: true`, for benchmarks of durable commits: fsync, full-page writes, synchronous_commit on).
  const durability = options.fsync ? '-c fsync=on -c full_page_writes=on -c synchronous_commit=on' : '-c fsync=off -c full_page_writes=off';
  // TLS: a self-signed certificate for 127.0.0.1 (its own CA), the key readable by the server's user only.
  let tls = '';
  let caFile: string | undefined;
  if (options.tls) {
    caFile = join(dir, 'server.crt');
    const key = join(dir, 'server.key');
    await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', caFile], {});
    chmodSync(key, 0o600);
    if (as.uid !== undefined) {
      chownSync(key, as.uid, as.gid as number);
      chownSync(caFile, as.uid, as.gid as number);
    }
    tls = `-c ssl=on -c ssl_cert_file=${caFile} -c ssl_key_file=${key}`;
  }
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 ${durability} ${tls} -c max_connections=200 -c log_min_messages=fatal`;
  let running = false;
  const start = async (): Promise<void> => {
    await run(PG_CTL, ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'], as);
    running = true;
  };
  const stopMode = async (mode: 'fast' | 'immediate'): Promise<void> => {
    if (!running) return;
    running = false;
    await run(PG_CTL, ['-D', data, '-m', mode, '-w', '-t', '60', 'stop'], as);
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const query = async (sql: string, values?: unknown[], at = url): Promise<pg.QueryResult> => {
    const { default: driver } = await import('pg'); // loaded here: importing the kit does not load pg
    const client = new driver.Client({ connectionString: at });
    await client.connect();
    try {
      return await client.query(sql, values);
    } finally {
      await client.end();
    }
  };
  const server: PostgresServer = {
    ...(caFile ? { caFile } : {}),
    port,
    url,
    query,
    database: async (name = `t${process.pid}_${++made}`) => {
      await query(`CREATE DATABASE ${name}`);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop: () => stopMode('fast'),
    kill: () => stopMode('immediate'),
    start,
  };
  t?.teardown(async () => {
    await stopMode('immediate').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return server;
}
