/**
 * Store benchmark: walkers over the PostgreSQL anchor store side by side with
 * the SQLite store and with the raw drivers (`pg`, better-sqlite3) on the same
 * machine, in one run (issue 12, section Benchmarks).
 *
 *   node --import tsx bench/store.ts [--quick]        (npm run bench:store)
 *
 * 1. Walker writes/s and reads/s through the Graph, in-process on one thread:
 *    ROOTS roots, each with one Counter node, IN_FLIGHT callers at once
 *    (several per root). A write is a walker run that bumps the counter (one
 *    document updated, committed before the caller hears back); a read is a
 *    walker run that reports it. Warm reads are served from the partition's
 *    memory (L1) and can beat a raw point read; cold reads activate a fresh
 *    partition per read (each of COLD roots read once, over a new Graph: the
 *    root and the counter are loaded from the store), which is the honest
 *    comparison with a raw point read. Baselines: raw `pg` one-row INSERT per
 *    transaction, UPDATE by primary key and point SELECT (same table and
 *    indexes as the store, same callers over a pool of the same size; and, as
 *    the driver's own best, one caller per pooled connection), and raw
 *    better-sqlite3 on the same schema. PostgreSQL runs with fsync off here (as
 *    the tests run it): these figures are CPU and round trips; the durable
 *    figures are in 2.
 * 2. Group commit on a PostgreSQL with fsync and synchronous_commit on:
 *    concurrent single-document `PgStore.commit`s (grouped per tick, one
 *    `svc_commit` call per lane) against the same commits awaited one by one,
 *    and against raw one-row INSERTs each in its own transaction at the same
 *    concurrency (where only PostgreSQL's own WAL flush groups them); and the
 *    walker writes of 1 with their raw baseline on that durable server.
 * 3. Activation of a 10k-node graph: a root with 10,000 Items connected to it
 *    (built by walkers, 10 runs of 1,000), then a new store connection, a new
 *    ActorSystem and Graph (nothing resident) and a walker that visits every
 *    Item — cold, then again hot — and a cold walker that also asks every Item
 *    for its own edges (`out()` at each node: one edge lookup per node); each
 *    walk three times (once with --quick), the median reported.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ActorSystem } from 'svc/kernel';
import { type AnchorStore, entry, Graph, Node, Registry, Root, SqliteStore, T, Walker } from 'svc';
import { CommitChain, type StoredDoc } from '../actors/graph/index.ts';
import { PgStore } from '../stores/postgres/index.ts';
import { newId } from '../actors/walker/index.ts';
import { startPostgres, type PostgresServer } from '../test/kit/index.ts';
import * as graphApp from './fixtures/graph-app.ts';
import { latency, machine, now, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
/** Roots written and read in 1, and callers in flight at once (IN_FLIGHT / ROOTS per root). */
const ROOTS = 64;
const IN_FLIGHT = 256;
/** Connections of a PostgreSQL pool: the store's default, and the raw baseline's. */
const POOL = 8;
const WRITES = quick ? 4_000 : 20_000;
const READS = quick ? 10_000 : 50_000;
const COLD = quick ? 1_000 : 5_000;
const RAW_PG = quick ? 4_000 : 20_000;
const RAW_SQLITE = quick ? 10_000 : 50_000;
const GROUPED = quick ? 4_000 : 20_000;
const ALONE = quick ? 300 : 1_000;
const STAR = 10_000;
/** Cold walks of the 10k-node graph per store (the median is reported). */
const REPEAT = quick ? 1 : 3;

// ---- the app -----------------------------------------------------------------------

/** One counter per root: the document every write updates. */
class Counter extends Node {
  static has = T.Object({ n: T.Integer() });
  declare n: number;
}

/** Connect a counter to the caller's root; report its id. */
class MakeCounter extends Walker {
  @entry(Root) async make(here: Root) {
    this.report((await here.connect(new Counter({ n: 0 }))).id);
  }
}

/** A write: spawned at the counter, bump it (the run commits the new version). */
class Bump extends Walker {
  @entry(Counter) bump(here: Counter) {
    here.n += 1;
    this.report(here.n);
  }
}

/** A read: spawned at the counter, report it. */
class ReadCounter extends Walker {
  @entry(Counter) read(here: Counter) {
    this.report(here.n);
  }
}

/** Visit every Item connected to the root (no edge lookups past the root), counting them. */
class CountStar extends Walker {
  private counter = { seen: 0 };
  @entry(Root) async start(here: Root) {
    this.report(this.counter);
    this.visit(await here.out(graphApp.Item));
  }
  @entry(graphApp.Item) step() {
    this.counter.seen++;
  }
}

const registry = Registry.fromModule({ ...graphApp, Counter, MakeCounter, Bump, ReadCounter, CountStar });

// ---- harness --------------------------------------------------------------------------

/** A store to measure: `open()` connects to the same data every time (a file, a database). */
interface Target {
  name: 'sqlite' | 'postgres';
  open(): Promise<AnchorStore>;
  /** Where the raw baseline runs: the same kind of server or file, same schema, other data. */
  raw(): Promise<string>;
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-bench-store-'));
}

/** A fresh SQLite file per target; removed at exit. */
function sqliteTarget(dirs: string[]): () => Target {
  return () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'anchor_store.db');
    return { name: 'sqlite', open: async () => SqliteStore.open(path), raw: async () => join(dir, 'raw.db') };
  };
}

/** A fresh PostgreSQL database per target, on `server`. */
function postgresTarget(server: PostgresServer): () => Promise<Target> {
  return async () => {
    const url = await server.database();
    return { name: 'postgres', open: () => PgStore.connect(url, { maxConnections: POOL }), raw: () => server.database() };
  };
}

interface Graphed {
  graph: Graph;
  system: ActorSystem;
}

/** A Graph over `store` in a new ActorSystem: no partition is resident. */
function graphOver(store: AnchorStore): Graphed {
  const system = new ActorSystem();
  return { graph: new Graph({ system, registry, store, mailboxCapacity: 100_000 }), system };
}

interface Rate {
  per_s: number;
  p50_us: number;
  p99_us: number;
}

/**
 * Run `op(i, caller)` for i = 0 … total-1 with `inFlight` callers at once,
 * each taking the next i when its previous op finished; ops/s and latency.
 */
async function drive(total: number, inFlight: number, op: (i: number, caller: number) => Promise<unknown>): Promise<Rate> {
  const samples = new Float64Array(total);
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, caller) => {
      for (let i = next++; i < total; i = next++) {
        const s = now();
        await op(i, caller);
        samples[i] = now() - s;
      }
    }),
  );
  const perS = total / ((now() - t0) / 1e9);
  const l = latency(samples);
  return { per_s: Math.round(perS), p50_us: l.p50_us, p99_us: l.p99_us };
}

/** The same, for synchronous ops (better-sqlite3 has no concurrency to offer: one call at a time). */
function driveSync(total: number, op: (i: number) => unknown): Rate {
  const samples = new Float64Array(total);
  const t0 = now();
  for (let i = 0; i < total; i++) {
    const s = now();
    op(i);
    samples[i] = now() - s;
  }
  const perS = total / ((now() - t0) / 1e9);
  const l = latency(samples);
  return { per_s: Math.round(perS), p50_us: l.p50_us, p99_us: l.p99_us };
}

/** A document as svc stores a Counter at version 1 (what raw rows and direct commits carry). */
function counterDoc(root: string, n: number): StoredDoc {
  return {
    id: newId(),
    root,
    kind: 'node',
    arch_module: 'app',
    arch_type: 'Counter',
    fingerprint: '0123456789abcdef',
    format_version: 1,
    version: 1,
    body: JSON.stringify({ access: { anyone: -1, roots: {} }, context: { n } }),
  };
}

const COLUMNS = 'id, root, kind, arch_module, arch_type, fingerprint, format_version, version, source, target, body';

// ---- 1. walker writes and reads, and the raw baselines ---------------------------------------

/** Walker writes (bumps) over ROOTS roots; with `reads`, warm and cold walker reads too. */
async function walkers(target: Target, reads: boolean): Promise<Record<string, Rate | number>> {
  const store = await target.open();
  let g = graphOver(store);
  const roots = Array.from({ length: ROOTS }, () => Graph.newRootId());
  const counters = await Promise.all(roots.map(async (rootId) => (await g.graph.spawn('MakeCounter', {}, { caller: { rootId } })).reports[0] as string));
  const bump = (i: number) => g.graph.spawn('Bump', {}, { caller: { rootId: roots[i % ROOTS] as string }, at: counters[i % ROOTS] });
  // Warm-up: partitions active, statements prepared, code compiled.
  await drive(IN_FLIGHT * 8, IN_FLIGHT, bump);
  const writes = await drive(WRITES, IN_FLIGHT, bump);
  // Every acknowledged bump is there: the counters add up.
  let total = 0;
  for (let r = 0; r < ROOTS; r++) total += (await g.graph.spawn('ReadCounter', {}, { caller: { rootId: roots[r] as string }, at: counters[r] })).reports[0] as number;
  if (total !== IN_FLIGHT * 8 + WRITES) throw new Error(`${target.name}: counters add up to ${total}, expected ${IN_FLIGHT * 8 + WRITES}`);
  const out: Record<string, Rate | number> = { writes };
  if (reads) {
    const read = (i: number) => g.graph.spawn('ReadCounter', {}, { caller: { rootId: roots[i % ROOTS] as string }, at: counters[i % ROOTS] });
    await drive(IN_FLIGHT * 8, IN_FLIGHT, read); // warm-up
    out.warm_reads = await drive(READS, IN_FLIGHT, read);
    // Cold: COLD more roots with a counter each, then a new Graph (nothing resident) reads each once.
    const coldRoots = Array.from({ length: COLD }, () => Graph.newRootId());
    const coldCounters: string[] = new Array(COLD);
    await drive(COLD, IN_FLIGHT, async (i) => {
      coldCounters[i] = (await g.graph.spawn('MakeCounter', {}, { caller: { rootId: coldRoots[i] as string } })).reports[0] as string;
    });
    await g.system.shutdown();
    g = graphOver(store);
    out.cold_reads = await drive(COLD, IN_FLIGHT, (i) => g.graph.spawn('ReadCounter', {}, { caller: { rootId: coldRoots[i] as string }, at: coldCounters[i] }));
  }
  await g.system.shutdown();
  await store.close();
  return out;
}

/** Raw `pg` on the store's own table and indexes: one-row INSERT per transaction, UPDATE by key, point SELECT. */
async function rawPg(url: string, reads: boolean): Promise<Record<string, Rate>> {
  await (await PgStore.connect(url)).close(); // the schema
  const pool = new pg.Pool({ connectionString: url, max: POOL });
  pool.on('error', () => undefined);
  const root = Graph.newRootId();
  const insertDoc = (d: StoredDoc) =>
    pool.query({
      name: 'raw_insert',
      text: `INSERT INTO anchors (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb)`,
      values: [d.id, d.root, d.kind, d.arch_module, d.arch_type, d.fingerprint, d.format_version, d.version, null, null, d.body],
    });
  const ids: string[] = new Array(RAW_PG);
  const insert = (i: number) => {
    const d = counterDoc(root, i);
    ids[i] = d.id;
    return insertDoc(d);
  };
  await drive(IN_FLIGHT * 4, IN_FLIGHT, (i) => insertDoc(counterDoc(root, -i))); // warm-up: connections open, statement prepared
  const out: Record<string, Rate> = { inserts: await drive(RAW_PG, IN_FLIGHT, insert) };
  // An update of one of ROOTS rows, by key, in its own transaction: what a bump is, minus the version check.
  out.updates = await drive(RAW_PG, IN_FLIGHT, (i) =>
    pool.query({ name: 'raw_update', text: 'UPDATE anchors SET version = version + 1, body = $2::jsonb WHERE id = $1', values: [ids[i % ROOTS], JSON.stringify({ access: { anyone: -1, roots: {} }, context: { n: i } })] }),
  );
  if (reads) {
    const pointRead = async (i: number) => {
      const { rows } = await pool.query<{ body: string }>({ name: 'raw_get', text: `SELECT ${COLUMNS.replace('body', 'body::text AS body')} FROM anchors WHERE id = $1`, values: [ids[i]] });
      return (JSON.parse((rows[0] as { body: string }).body) as { context: { n: number } }).context.n;
    };
    out.point_reads = await drive(RAW_PG, IN_FLIGHT, pointRead);
    // The driver at its own best: as many callers as connections (no queue in the pool).
    out.inserts_pool_in_flight = await drive(RAW_PG / 2, POOL, (i) => insertDoc(counterDoc(root, RAW_PG + i)));
    out.point_reads_pool_in_flight = await drive(RAW_PG / 2, POOL, pointRead);
  }
  await pool.end();
  return out;
}

/** Raw better-sqlite3 on the store's own schema and settings (WAL, synchronous NORMAL): one row per transaction, point reads. */
async function rawSqlite(path: string): Promise<Record<string, Rate>> {
  await SqliteStore.open(path).close(); // the schema
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const insert = db.prepare(`INSERT INTO anchors (${COLUMNS}) VALUES (@id, @root, @kind, @arch_module, @arch_type, @fingerprint, @format_version, @version, @source, @target, @body)`);
  const update = db.prepare('UPDATE anchors SET version = version + 1, body = ? WHERE id = ?');
  const get = db.prepare(`SELECT ${COLUMNS} FROM anchors WHERE id = ?`);
  const root = Graph.newRootId();
  const ids: string[] = new Array(RAW_SQLITE);
  const out: Record<string, Rate> = {
    inserts: driveSync(RAW_SQLITE, (i) => {
      const d = counterDoc(root, i);
      ids[i] = d.id;
      insert.run({ ...d, source: null, target: null });
    }),
    updates: driveSync(RAW_SQLITE, (i) => update.run(JSON.stringify({ access: { anyone: -1, roots: {} }, context: { n: i } }), ids[i % ROOTS])),
    point_reads: driveSync(RAW_SQLITE, (i) => (JSON.parse((get.get(ids[i]) as { body: string }).body) as { context: { n: number } }).context.n),
  };
  db.close();
  return out;
}

// ---- 2. group commit on a durable PostgreSQL ---------------------------------------------------

async function groupCommit(server: PostgresServer): Promise<Record<string, Rate | number | string>> {
  const store = await PgStore.connect(await server.database(), { maxConnections: POOL });
  const root = Graph.newRootId();
  // One chain per caller, as each partition has its own: the chains spread over the store's lanes.
  const chains = Array.from({ length: IN_FLIGHT }, () => new CommitChain());
  const commit = (i: number, caller: number) => store.commit({ upserts: [counterDoc(root, i)], deletes: [], chain: chains[caller] as CommitChain });
  await drive(IN_FLIGHT * 4, IN_FLIGHT, commit); // warm-up
  const grouped = await drive(GROUPED, IN_FLIGHT, commit);
  // The same commits, each alone: the next one is handed over only once the previous one is durable.
  const alone = await drive(ALONE, 1, (i) => store.commit({ upserts: [counterDoc(root, i)], deletes: [], chain: chains[0] as CommitChain }));
  await store.close();
  // Raw: the same rows, one INSERT per transaction, same callers over a pool of the same size.
  const raw = await rawPg(await server.database(), false);
  const settings = await server.query("SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc");
  const s = settings.rows[0] as { fsync: string; sc: string };
  return {
    server: `fsync=${s.fsync} synchronous_commit=${s.sc}`,
    grouped_commits: grouped,
    alone_commits: alone,
    raw_one_per_txn_inserts: raw.inserts as Rate,
    grouped_vs_alone: round(grouped.per_s / alone.per_s, 1),
    grouped_vs_raw_one_per_txn: round(grouped.per_s / (raw.inserts as Rate).per_s, 1),
  };
}

// ---- 3. activation of a 10k-node graph -----------------------------------------------------------

async function activation(target: Target): Promise<Record<string, number>> {
  const store = await target.open();
  const g = graphOver(store);
  const caller = { rootId: Graph.newRootId() };
  const t0 = now();
  for (let i = 0; i < STAR; i += 1_000) await g.graph.spawn('AddMany', { from: i, count: 1_000 }, { caller });
  const buildMs = (now() - t0) / 1e6;
  await g.system.shutdown();
  await store.close();

  // Cold: a new connection, a new system, nothing resident; then the same walk again (hot).
  const visit = async (walker: 'CountStar' | 'CountVisit'): Promise<{ cold: number; hot: number }> => {
    const s = await target.open();
    const fresh = graphOver(s);
    const t1 = now();
    const seen = (await fresh.graph.spawn(walker, {}, { caller })).reports[0] as { seen: number } | number;
    const cold = (now() - t1) / 1e6;
    const t2 = now();
    await fresh.graph.spawn(walker, {}, { caller });
    const hot = (now() - t2) / 1e6;
    const count = typeof seen === 'number' ? seen : seen.seen;
    if (count !== STAR) throw new Error(`${target.name}: ${walker} visited ${count} of ${STAR}`);
    await fresh.system.shutdown();
    await s.close();
    return { cold, hot };
  };
  // Each walk REPEAT times (a new connection and system every time); the median, the machine is shared.
  const median = async (walker: 'CountStar' | 'CountVisit'): Promise<{ cold: number; hot: number }> => {
    const runs: { cold: number; hot: number }[] = [];
    for (let r = 0; r < REPEAT; r++) runs.push(await visit(walker));
    const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    return { cold: mid(runs.map((x) => x.cold)), hot: mid(runs.map((x) => x.hot)) };
  };
  const star = await median('CountStar');
  const withEdges = await median('CountVisit');
  return {
    nodes: STAR,
    build_ms: round(buildMs, 1),
    cold_visit_ms: round(star.cold, 1),
    hot_visit_ms: round(star.hot, 1),
    cold_visit_with_edge_lookups_ms: round(withEdges.cold, 1),
    hot_visit_with_edge_lookups_ms: round(withEdges.hot, 1),
  };
}

// ---- the run ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dirs: string[] = [];
  const sqlite = sqliteTarget(dirs);
  const results: Record<string, unknown> = {};
  const rates = (o: Record<string, unknown>, k: string) => (o[k] as Rate).per_s;

  // Servers are stopped and their folders removed by the teardowns (as a test's would be).
  const teardowns: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
  const stop = async () => {
    for (const fn of teardowns.splice(0)) await fn();
  };

  // 1 and 3 on a PostgreSQL as the tests run it (fsync off).
  const fast = await startPostgres(owner);
  let serverVersion = '';
  try {
    serverVersion = ((await fast.query("SELECT current_setting('server_version') AS v")).rows[0] as { v: string }).v;
    const postgres = postgresTarget(fast);
    process.stderr.write('bench: walkers on SQLite\n');
    const sqliteTarget1 = sqlite();
    const svcSqlite = await walkers(sqliteTarget1, true);
    const rawSq = await rawSqlite(await sqliteTarget1.raw());
    process.stderr.write('bench: walkers on PostgreSQL (fsync off)\n');
    const pgTarget1 = await postgres();
    const svcPg = await walkers(pgTarget1, true);
    const rawP = await rawPg(await pgTarget1.raw(), true);
    results.walkers = {
      postgres: { svc: svcPg, raw: rawP },
      sqlite: { svc: svcSqlite, raw: rawSq },
      // Against raw at the same concurrency; `_best` against the better of that and raw with one caller per connection.
      ratios: {
        pg_writes_vs_raw_inserts: round(rates(svcPg, 'writes') / rates(rawP, 'inserts'), 2),
        pg_writes_vs_raw_inserts_best: round(rates(svcPg, 'writes') / Math.max(rates(rawP, 'inserts'), rates(rawP, 'inserts_pool_in_flight')), 2),
        pg_writes_vs_raw_updates: round(rates(svcPg, 'writes') / rates(rawP, 'updates'), 2),
        pg_warm_reads_vs_raw_point_reads: round(rates(svcPg, 'warm_reads') / rates(rawP, 'point_reads'), 2),
        pg_cold_reads_vs_raw_point_reads: round(rates(svcPg, 'cold_reads') / rates(rawP, 'point_reads'), 2),
        pg_cold_reads_vs_raw_point_reads_best: round(rates(svcPg, 'cold_reads') / Math.max(rates(rawP, 'point_reads'), rates(rawP, 'point_reads_pool_in_flight')), 2),
        sqlite_writes_vs_raw_inserts: round(rates(svcSqlite, 'writes') / rates(rawSq, 'inserts'), 2),
        sqlite_warm_reads_vs_raw_point_reads: round(rates(svcSqlite, 'warm_reads') / rates(rawSq, 'point_reads'), 2),
        sqlite_cold_reads_vs_raw_point_reads: round(rates(svcSqlite, 'cold_reads') / rates(rawSq, 'point_reads'), 2),
      },
      goal: 'svc-on-PG writes >= 0.5x raw PG inserts; reads >= 0.7x raw PG point reads',
    };
    process.stderr.write('bench: activation of a 10k-node graph\n');
    results.activation = { sqlite: await activation(sqlite()), postgres: await activation(await postgres()) };
  } finally {
    await stop();
  }

  // 2 on a durable PostgreSQL (fsync, synchronous_commit on), and the walker writes of 1 there.
  const durable = await startPostgres(owner, { fsync: true });
  try {
    process.stderr.write('bench: group commit on PostgreSQL (fsync on)\n');
    results.group_commit = { ...(await groupCommit(durable)), goal: 'grouped >= 5x one per transaction' };
    const t = await postgresTarget(durable)();
    const svc = await walkers(t, false);
    const raw = await rawPg(await t.raw(), false);
    results.durable_walker_writes = { svc_writes: svc.writes, raw_inserts: raw.inserts, raw_updates: raw.updates, writes_vs_raw_inserts: round(rates(svc, 'writes') / rates(raw, 'inserts'), 2) };
  } finally {
    await stop();
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });

  const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, { version?: string }> };
  const settings = { roots: ROOTS, in_flight: IN_FLIGHT, pg_pool: POOL, writes: WRITES, reads: READS, cold_reads: COLD, raw_pg_ops: RAW_PG, raw_sqlite_ops: RAW_SQLITE, grouped: GROUPED, alone: ALONE, star_nodes: STAR, star_repeats: REPEAT };
  const out = { bench: 'store', at: new Date().toISOString(), quick, machine: { ...machine(), postgres_server: serverVersion, pg_driver: lock.packages['node_modules/pg']?.version }, settings, results };
  const file = save('store', out);
  print(results);
  console.log(`written ${file}`);
}

/** One table per section: ops/s and latency side by side. */
function print(results: Record<string, unknown>): void {
  const w = results.walkers as { postgres: { svc: Record<string, Rate>; raw: Record<string, Rate> }; sqlite: { svc: Record<string, Rate>; raw: Record<string, Rate> }; ratios: Record<string, number> };
  const rows: Record<string, Rate> = {};
  for (const store of ['postgres', 'sqlite'] as const) {
    for (const [k, v] of Object.entries(w[store].svc)) rows[`${store} svc ${k}`] = v;
    for (const [k, v] of Object.entries(w[store].raw)) rows[`${store} raw ${k}`] = v;
  }
  console.log('\n1. walker writes and reads (PostgreSQL fsync off)');
  console.table(rows);
  console.table(w.ratios);
  console.log('\n2. group commit (PostgreSQL fsync on)');
  console.table(results.group_commit);
  console.table(results.durable_walker_writes);
  console.log('\n3. activation of a 10k-node graph (ms)');
  console.table(results.activation);
}

await main();
