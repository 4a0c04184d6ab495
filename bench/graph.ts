/**
 * Graph benchmark: walkers over the SQLite store, side by side with raw
 * better-sqlite3 on the same machine, in one run.
 *
 *   node --expose-gc --import tsx bench/graph.ts        (npm run bench:graph)
 *
 * - node writes/s: one node per walker run (commits grouped across 100 roots)
 *   and 100 nodes per run, against raw inserts (one per transaction, and 1,000
 *   per transaction);
 * - node reads/s: a walker spawned at a node id, reporting it (memory-resident)
 *   against raw point reads with JSON.parse;
 * - traversal of a 10k-node tree, cold (loaded from SQLite) and hot;
 * - heap per 100k resident anchors.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorSystem } from 'svc/kernel';
import { Graph, Registry, SqliteStore } from 'svc';
import { newId } from '../actors/walker/index.ts';
import * as app from './fixtures/graph-app.ts';
import { machine, now, round, save } from './lib.ts';

const quick = process.argv.includes('--quick');
const WRITES = quick ? 20_000 : 100_000;
const READS = quick ? 20_000 : 200_000;
const ROOTS = 100;

const registry = Registry.fromModule(app);

function freshDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-bench-'));
}

function openGraph(path: string): { graph: Graph; system: ActorSystem; store: SqliteStore } {
  const system = new ActorSystem();
  const store = SqliteStore.open(path);
  return { graph: new Graph({ system, registry, store, mailboxCapacity: 100_000 }), system, store };
}

async function closeGraph(g: { system: ActorSystem; store: SqliteStore }): Promise<void> {
  await g.system.shutdown();
  await g.store.close();
}

// ---- raw baselines -------------------------------------------------------------

/** The same table and indexes as the SQLite store, written by hand. */
function rawDb(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE anchors (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, root TEXT NOT NULL, kind TEXT NOT NULL,
    arch_module TEXT NOT NULL, arch_type TEXT NOT NULL, fingerprint TEXT NOT NULL, format_version INTEGER NOT NULL,
    version INTEGER NOT NULL, source TEXT, target TEXT, body TEXT NOT NULL);
    CREATE INDEX anchors_source ON anchors(source) WHERE source IS NOT NULL;
    CREATE INDEX anchors_target ON anchors(target) WHERE target IS NOT NULL;`);
  return db;
}

const ROOT = 'r'.repeat(32);

/** A node and the edge from the root to it: what one new connected node costs. */
function rawNode(i: number) {
  const id = newId();
  const base = { root: ROOT, arch_module: 'app', fingerprint: '0123456789abcdef', format_version: 1, version: 1 };
  return [
    { ...base, id, kind: 'node', arch_type: 'Item', source: null, target: null, body: JSON.stringify({ access: { anyone: -1, roots: {} }, context: { name: `item ${i}`, n: i } }) },
    { ...base, id: newId(), kind: 'edge', arch_type: 'GenericEdge', source: ROOT, target: id, body: JSON.stringify({ access: { anyone: -1, roots: {} }, context: {} }) },
  ];
}

/** Raw node writes/s: `perTransaction` nodes (2 rows each) per transaction, rows built in the loop as svc builds them. */
function rawInserts(perTransaction: number): number {
  const dir = freshDir();
  const db = rawDb(join(dir, 'raw.db'));
  const insert = db.prepare(
    'INSERT INTO anchors (id, root, kind, arch_module, arch_type, fingerprint, format_version, version, source, target, body) VALUES (@id, @root, @kind, @arch_module, @arch_type, @fingerprint, @format_version, @version, @source, @target, @body)',
  );
  const batch = db.transaction((from: number, count: number) => {
    for (let i = from; i < from + count; i++) for (const row of rawNode(i)) insert.run(row);
  });
  const t0 = now();
  for (let i = 0; i < WRITES; i += perTransaction) batch(i, Math.min(perTransaction, WRITES - i));
  const ops = WRITES / ((now() - t0) / 1e9);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return ops;
}

function rawReads(): number {
  const dir = freshDir();
  const db = rawDb(join(dir, 'raw.db'));
  const insert = db.prepare(
    'INSERT INTO anchors (id, root, kind, arch_module, arch_type, fingerprint, format_version, version, source, target, body) VALUES (@id, @root, @kind, @arch_module, @arch_type, @fingerprint, @format_version, @version, @source, @target, @body)',
  );
  const ids: string[] = [];
  db.transaction(() => {
    for (let i = 0; i < 10_000; i++) {
      const [node, edge] = rawNode(i) as [{ id: string }, unknown];
      ids.push(node.id);
      insert.run(node);
      insert.run(edge);
    }
  })();
  const get = db.prepare('SELECT * FROM anchors WHERE id = ?');
  let sum = 0;
  const t0 = now();
  for (let i = 0; i < READS; i++) {
    const row = get.get(ids[i % ids.length]) as { body: string };
    sum += (JSON.parse(row.body) as { context: { n: number } }).context.n;
  }
  const ops = READS / ((now() - t0) / 1e9);
  if (sum < 0) console.log(sum);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return ops;
}

// ---- svc ---------------------------------------------------------------------------

async function svcWritesOnePerRun(): Promise<number> {
  const dir = freshDir();
  const g = openGraph(join(dir, 'anchor_store.db'));
  const roots = Array.from({ length: ROOTS }, () => ({ rootId: Graph.newRootId() }));
  for (const caller of roots) await g.graph.spawn('AddOne', { n: -1 }, { caller }); // activate partitions
  const inFlight = 512;
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < WRITES; i = next++) {
        await g.graph.spawn('AddOne', { n: i }, { caller: roots[i % ROOTS] as { rootId: string } });
      }
    }),
  );
  const ops = WRITES / ((now() - t0) / 1e9);
  await closeGraph(g);
  rmSync(dir, { recursive: true, force: true });
  return ops;
}

async function svcWritesManyPerRun(perRun: number): Promise<number> {
  const dir = freshDir();
  const g = openGraph(join(dir, 'anchor_store.db'));
  const caller = { rootId: Graph.newRootId() };
  const t0 = now();
  for (let i = 0; i < WRITES; i += perRun) await g.graph.spawn('AddMany', { from: i, count: perRun }, { caller });
  const ops = WRITES / ((now() - t0) / 1e9);
  await closeGraph(g);
  rmSync(dir, { recursive: true, force: true });
  return ops;
}

async function svcReads(): Promise<number> {
  const dir = freshDir();
  const g = openGraph(join(dir, 'anchor_store.db'));
  const caller = { rootId: Graph.newRootId() };
  await g.graph.spawn('AddMany', { from: 0, count: 1000 }, { caller });
  const ids = await idsOf(g.graph, caller);
  const inFlight = 64;
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < READS; i = next++) await g.graph.spawn('ReadOne', {}, { caller, at: ids[i % ids.length] });
    }),
  );
  const ops = READS / ((now() - t0) / 1e9);
  await closeGraph(g);
  rmSync(dir, { recursive: true, force: true });
  return ops;
}

async function idsOf(graph: Graph, caller: { rootId: string }): Promise<string[]> {
  return (await graph.spawn('ListIds', {}, { caller })).reports[0] as string[];
}

async function traversal(): Promise<Record<string, number>> {
  const dir = freshDir();
  const path = join(dir, 'anchor_store.db');
  let g = openGraph(path);
  const caller = { rootId: Graph.newRootId() };
  const t0 = now();
  const built = (await g.graph.spawn('BuildTree', { fanout: 10, depth: 4 }, { caller })).reports[0] as number;
  const buildMs = (now() - t0) / 1e6;
  await closeGraph(g);
  g = openGraph(path);
  const t1 = now();
  const cold = (await g.graph.spawn('CountVisit', {}, { caller })).reports[0] as number;
  const coldMs = (now() - t1) / 1e6;
  const t2 = now();
  await g.graph.spawn('CountVisit', {}, { caller });
  const hotMs = (now() - t2) / 1e6;
  if (cold !== built) throw new Error(`visited ${cold} of ${built}`);
  await closeGraph(g);
  rmSync(dir, { recursive: true, force: true });
  return { nodes: built, build_ms: round(buildMs, 1), cold_traversal_ms: round(coldMs, 1), hot_traversal_ms: round(hotMs, 1), hot_nodes_per_s: Math.round(built / (hotMs / 1000)) };
}

async function residentMemory(): Promise<Record<string, number>> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return { skipped: 1 };
  const dir = freshDir();
  const g = openGraph(join(dir, 'anchor_store.db'));
  const caller = { rootId: Graph.newRootId() };
  const count = quick ? 20_000 : 100_000;
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < count; i += 5000) await g.graph.spawn('AddMany', { from: i, count: 5000 }, { caller });
  gc();
  const after = process.memoryUsage().heapUsed;
  // Each Item brings a node anchor and an edge anchor.
  const anchors = count * 2;
  await closeGraph(g);
  rmSync(dir, { recursive: true, force: true });
  return { anchors, heap_mb: round((after - before) / 2 ** 20, 1), bytes_per_anchor: Math.round((after - before) / anchors), mb_per_100k_anchors: round(((after - before) / anchors) * 100_000 / 2 ** 20, 1) };
}

async function main(): Promise<void> {
  const results: Record<string, Record<string, number | string>> = {};
  const raw1 = rawInserts(1);
  const raw100 = rawInserts(100);
  const one = await svcWritesOnePerRun();
  const many = await svcWritesManyPerRun(100);
  results.writes = {
    raw_one_node_per_txn_per_s: Math.round(raw1),
    raw_100_nodes_per_txn_per_s: Math.round(raw100),
    svc_one_node_per_run_per_s: Math.round(one),
    svc_100_nodes_per_run_per_s: Math.round(many),
    one_per_run_vs_raw_one_per_txn: round(one / raw1, 2),
    hundred_per_run_vs_raw_100_per_txn: round(many / raw100, 2),
    note: 'a node write = the node row + the edge row that connects it (same table and indexes for raw)',
    goal: '>= 0.5x raw inserts; >= 100k node writes/s grouped',
  };
  const rr = rawReads();
  const sr = await svcReads();
  results.reads = { raw_point_reads_per_s: Math.round(rr), svc_walker_reads_per_s: Math.round(sr), svc_vs_raw: round(sr / rr, 2), goal: '>= 0.7x raw point reads' };
  results.traversal = await traversal();
  results.memory = await residentMemory();
  const out = { bench: 'graph', at: new Date().toISOString(), quick, machine: machine(), results };
  const file = save('graph', out);
  for (const [name, row] of Object.entries(results)) {
    console.log(`\n${name}`);
    console.table(row);
  }
  console.log(`written ${file}`);
}

await main();
