/**
 * Document store benchmark: `findOne` by an indexed field through the docdb
 * backends of `kvstore(dbName, 'docdb')`, side by side with the raw driver's
 * ceiling on the same machine, in one run.
 *
 *   node --import tsx bench/docdb.ts [--quick]
 *
 * 1. SQLite: DOCS user documents (an email, a name, a city, tags, a
 *    ~150-byte bio) in one collection of `SqliteDocBackend`, an index on
 *    `email`, then `findOne({ email })` for random existing emails, one at a
 *    time (better-sqlite3 is synchronous: concurrency has nothing to add).
 *    The ceiling: the same documents in a plain table `(id, email, doc)`
 *    with a btree index on the `email` column, in the same file, read by a
 *    prepared `SELECT id, doc … WHERE email = ?` — alone, and with the
 *    `JSON.parse` of the row's document (what findOne hands back). The
 *    contenders take turns, ROUNDS times, so that a busy machine weighs on
 *    each alike.
 * 2. PostgreSQL (a throwaway server, test/kit/postgres.ts; skipped when
 *    none is installed): the same with `PgDocBackend` against raw `pg` on a
 *    table `(id, email, doc JSONB)` with an index on `email`, pools of the
 *    same size; one call in flight (latency), then IN_FLIGHT (throughput).
 *
 * Writes bench/results/docdb.json (with the machine, versions and the load
 * average before and after: figures from a busy machine are not comparable).
 */
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { SqliteDocBackend } from '../stores/sqlite/docdb.ts';
import { PgDocBackend } from '../stores/postgres/docdb.ts';
import { newId } from '../actors/data/query.ts';
import type { Document } from '../actors/data/kvstore-types.ts';
import { skipPostgres, startPostgres } from '../test/kit/index.ts';
import { latency, machine, now, round } from './lib.ts';

const quick = process.argv.includes('--quick');
const DOCS = 100_000;
const SQLITE_OPS = quick ? 20_000 : 200_000;
const PG_OPS = quick ? 5_000 : 20_000;
const POOL = 8;
const IN_FLIGHT = 16;
const BATCH = 5_000;
/** Turns each contender takes (see {@link interleaved}). */
const ROUNDS = 5;

interface Rate {
  per_s: number;
  p50_us: number;
  p99_us: number;
}

function user(i: number): Document {
  return {
    _id: newId(),
    email: `user${i}@example.com`,
    name: `User ${i}`,
    age: 18 + (i % 60),
    city: `city${i % 500}`,
    tags: [`t${i % 7}`, `t${i % 11}`],
    bio: `bio of user ${i} `.padEnd(150, 'lorem ipsum '),
  };
}

/** Emails to look up: the same pseudo-random sequence for every contender. */
function emails(count: number): string[] {
  let x = 12345;
  return Array.from({ length: count }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return `user${x % DOCS}@example.com`;
  });
}

/** `op(i)` for i = 0 … total-1 with `inFlight` callers; ops/s and latency. */
async function drive(total: number, inFlight: number, op: (i: number) => unknown): Promise<Rate> {
  const samples = new Float64Array(total);
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < total; i = next++) {
        const s = now();
        const r = op(i);
        if (r instanceof Promise) await r;
        samples[i] = now() - s;
      }
    }),
  );
  const perS = total / ((now() - t0) / 1e9);
  const l = latency(samples);
  return { per_s: Math.round(perS), p50_us: l.p50_us, p99_us: l.p99_us };
}

/**
 * Contenders measured in turn, ROUNDS times each (`total` ops per contender in
 * all): load that comes and goes on a shared machine then falls on all of
 * them alike. Per contender: ops/s over its rounds, latency over all samples.
 */
async function interleaved(total: number, inFlight: number, contenders: Record<string, (i: number) => unknown>): Promise<Record<string, Rate>> {
  const per = Math.ceil(total / ROUNDS);
  const samples: Record<string, Float64Array> = {};
  const seconds: Record<string, number> = {};
  for (const name of Object.keys(contenders)) {
    samples[name] = new Float64Array(per * ROUNDS);
    seconds[name] = 0;
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, op] of Object.entries(contenders)) {
      const mine = samples[name] as Float64Array;
      let next = 0;
      const t0 = now();
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          for (let i = next++; i < per; i = next++) {
            const k = round * per + i;
            const s = now();
            const r = op(k);
            if (r instanceof Promise) await r;
            mine[k] = now() - s;
          }
        }),
      );
      seconds[name] = (seconds[name] as number) + (now() - t0) / 1e9;
    }
  }
  const out: Record<string, Rate> = {};
  for (const name of Object.keys(contenders)) {
    const l = latency(samples[name] as Float64Array);
    out[name] = { per_s: Math.round((per * ROUNDS) / (seconds[name] as number)), p50_us: l.p50_us, p99_us: l.p99_us };
  }
  return out;
}

function check(found: unknown, email: string): void {
  if ((found as { email?: string } | null | undefined)?.email !== email) throw new Error(`looked up ${email}, got ${JSON.stringify(found)}`);
}

function ratio(a: Rate, b: Rate): number {
  return round(a.per_s / b.per_s, 3);
}

async function sqlite(dir: string): Promise<Record<string, unknown>> {
  const path = join(dir, 'docdb.db');
  const docs = new SqliteDocBackend(path, 'bench');
  await docs.createIndex('users', 'email');
  const raw = new Database(path);
  raw.exec(`CREATE TABLE raw_users (id TEXT PRIMARY KEY, email TEXT NOT NULL, doc TEXT NOT NULL) WITHOUT ROWID;
            CREATE INDEX raw_users_email ON raw_users (email);`);
  const insertRaw = raw.prepare('INSERT INTO raw_users (id, email, doc) VALUES (?, ?, ?)');
  for (let from = 0; from < DOCS; from += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, DOCS - from) }, (_, k) => user(from + k));
    await docs.insertMany('users', batch);
    raw.transaction(() => {
      for (const { _id, ...rest } of batch) insertRaw.run(_id, rest.email, JSON.stringify(rest));
    })();
  }
  const plan = await docs.explain('users', { email: 'user1@example.com' }, { limit: 1 });
  const keys = emails(SQLITE_OPS);
  const select = raw.prepare('SELECT id, doc FROM raw_users WHERE email = ?');
  const findOne = async (i: number) => check(await docs.findOne('users', { email: keys[i] as string }), keys[i] as string);
  const rawSelect = (i: number) => {
    if (!select.get(keys[i])) throw new Error('raw: not found');
  };
  const rawParse = (i: number) => {
    const row = select.get(keys[i]) as { id: string; doc: string };
    check({ _id: row.id, ...(JSON.parse(row.doc) as object) }, keys[i] as string);
  };
  const warm = Math.min(10_000, SQLITE_OPS);
  await drive(warm, 1, findOne);
  await drive(warm, 1, rawSelect);
  await drive(warm, 1, rawParse);
  const out = (await interleaved(SQLITE_OPS, 1, { docdb_find_one: findOne, raw_select: rawSelect, raw_select_parse: rawParse })) as Record<
    'docdb_find_one' | 'raw_select' | 'raw_select_parse',
    Rate
  >;
  const sqliteVersion = (raw.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  raw.close();
  await docs.close();
  return {
    sqlite_version: sqliteVersion,
    plan,
    ...out,
    ratio_to_raw_select: ratio(out.docdb_find_one, out.raw_select),
    ratio_to_raw_select_parse: ratio(out.docdb_find_one, out.raw_select_parse),
  };
}

async function postgres(): Promise<Record<string, unknown>> {
  if (skipPostgres) return { skipped: skipPostgres };
  const teardowns: (() => unknown)[] = [];
  const server = await startPostgres({ teardown: (fn) => teardowns.push(fn) });
  try {
    const url = await server.database();
    const docs = new PgDocBackend(url, 'bench', { maxConnections: POOL });
    await docs.createIndex('users', 'email');
    const pool = new pg.Pool({ connectionString: url, max: POOL });
    pool.on('error', () => undefined);
    await pool.query('CREATE TABLE raw_users (id TEXT COLLATE "C" PRIMARY KEY, email TEXT NOT NULL, doc JSONB NOT NULL); CREATE INDEX raw_users_email ON raw_users (email)');
    for (let from = 0; from < DOCS; from += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, DOCS - from) }, (_, k) => user(from + k));
      await docs.insertMany('users', batch);
      await pool.query('INSERT INTO raw_users (id, email, doc) SELECT u.id, u.doc->>\'email\', u.doc FROM unnest($1::text[], $2::jsonb[]) AS u(id, doc)', [
        batch.map((d) => d._id),
        batch.map(({ _id: _, ...rest }) => JSON.stringify(rest)),
      ]);
    }
    await pool.query('ANALYZE');
    const plan = await docs.explain('users', { email: 'user1@example.com' }, { limit: 1 });
    const keys = emails(PG_OPS);
    const findOne = async (i: number) => check(await docs.findOne('users', { email: keys[i] as string }), keys[i] as string);
    const rawSelect = async (i: number) => {
      const { rows } = await pool.query<{ id: string; doc: Document }>('SELECT id, doc FROM raw_users WHERE email = $1', [keys[i]]);
      check(rows[0]?.doc, keys[i] as string);
    };
    await drive(2_000, IN_FLIGHT, findOne);
    await drive(2_000, IN_FLIGHT, rawSelect);
    const one = (await interleaved(PG_OPS, 1, { docdb_find_one: findOne, raw_select: rawSelect })) as Record<'docdb_find_one' | 'raw_select', Rate>;
    const many = (await interleaved(PG_OPS, IN_FLIGHT, { docdb_find_one: findOne, raw_select: rawSelect })) as Record<'docdb_find_one' | 'raw_select', Rate>;
    const version = (await pool.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
    await pool.end();
    await docs.close();
    return {
      server_version: version,
      fsync: false,
      pool: POOL,
      plan,
      one_in_flight: { ...one, ratio: ratio(one.docdb_find_one, one.raw_select) },
      [`${IN_FLIGHT}_in_flight`]: { ...many, ratio: ratio(many.docdb_find_one, many.raw_select) },
    };
  } finally {
    for (const fn of teardowns) await fn();
  }
}

function pgVersion(): string | undefined {
  const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, { version?: string }> };
  return lock.packages['node_modules/pg']?.version;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-docdb-'));
  try {
    const info = machine();
    // The load before and after: on a shared machine, other work skews every figure.
    const loadBefore = loadavg().map((x) => round(x, 2));
    const out = {
      machine: { ...info, versions: { ...(info.versions as object), pg: pgVersion() } },
      docs: DOCS,
      quick,
      sqlite: await sqlite(dir),
      postgres: await postgres(),
      load_average: { before: loadBefore, after: loadavg().map((x) => round(x, 2)) },
    };
    const results = new URL('./results/', import.meta.url).pathname;
    mkdirSync(results, { recursive: true });
    writeFileSync(join(results, 'docdb.json'), `${JSON.stringify(out, null, 2)}\n`);
    console.log(JSON.stringify({ sqlite: out.sqlite, postgres: out.postgres }, null, 2));
    console.log(`written ${join(results, 'docdb.json')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
