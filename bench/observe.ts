/**
 * What seeing the service costs (issue "Seeing the service"):
 *
 * 1. The scrape: 50 routes × 10 status codes (500 request series, 50
 *    duration histograms) recorded on each of two threads, merged and
 *    rendered as Prometheus text — svc's path (`ThreadMetrics.snapshot` on
 *    each thread, `renderMetrics` of both) side by side with prom-client
 *    alone rendering the same series from its own Counter and Histogram (one
 *    registry, no merge: the floor). Also the hot-path cost per recorded
 *    request, svc's recorder against prom-client's `inc` + `observe`.
 * 2. `GET /graph/data` of a 10,000-node graph (limit 10000) over HTTP from a
 *    real `svc start`, against the floor of reading the same graph's rows
 *    straight from its SQLite file.
 *
 * The hot-path cost with metrics on (echo walker, metrics off vs on) is
 * measured by bench/ab-http.ts: `npm run bench:ab -- . .::SVC_METRICS_ENABLED=true`.
 *
 *   npm run bench:observe
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { Counter, Histogram, Registry } from 'prom-client';
import { renderMetrics, ThreadMetrics } from '../runtime/metrics/index.ts';
import { ensureUsers, freePort, machine, round, save, serve } from './lib.ts';
import { fixture } from '../test/kit/index.ts';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0];
const ROUTES = Array.from({ length: 50 }, (_, i) => `/walker/Route${i}/{node_id}`);
const STATUSES = [200, 201, 204, 400, 401, 403, 404, 409, 500, 503];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1] as number;
};

async function timeIt(runs: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 5; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function scrape(): Promise<Record<string, unknown>> {
  const settings = { namespace: 'svc', buckets: BUCKETS, walkerMetrics: false };
  const threads = [new ThreadMetrics(settings, { thread: 'w1' }), new ThreadMetrics(settings, { thread: 'w2' })];
  const reg = new Registry();
  const total = new Counter({ name: 'svc_http_requests_total', help: 'h', labelNames: ['method', 'path', 'status_code'], registers: [reg] });
  const duration = new Histogram({ name: 'svc_http_request_duration_seconds', help: 'h', labelNames: ['method', 'path'], buckets: BUCKETS, registers: [reg] });
  for (const th of threads) {
    for (const route of ROUTES) for (const status of STATUSES) for (let k = 0; k < 3; k++) th.http.record('POST', route, status, 0.001 * (k + 1));
  }
  for (const route of ROUTES) {
    for (const status of STATUSES) {
      total.inc({ method: 'POST', path: route, status_code: String(status) }, 6);
      for (let k = 0; k < 6; k++) duration.observe({ method: 'POST', path: route }, 0.001 * ((k % 3) + 1));
    }
  }
  let bytes = 0;
  const svcMs = await timeIt(50, async () => {
    const { text } = await renderMetrics(await Promise.all(threads.map((th) => th.snapshot())));
    bytes = text.length;
  });
  const promMs = await timeIt(50, () => reg.metrics());

  // The hot path: one recorded request.
  const N = 2_000_000;
  const rec = threads[0]!.http;
  let t0 = performance.now();
  for (let i = 0; i < N; i++) rec.record('POST', ROUTES[i % 50] as string, STATUSES[i % 10] as number, 0.002);
  const svcNs = ((performance.now() - t0) * 1e6) / N;
  t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const path = ROUTES[i % 50] as string;
    total.inc({ method: 'POST', path, status_code: String(STATUSES[i % 10]) });
    duration.observe({ method: 'POST', path }, 0.002);
  }
  const promNs = ((performance.now() - t0) * 1e6) / N;
  for (const th of threads) th.close();
  return {
    series: { routes: ROUTES.length, statuses: STATUSES.length, threads: threads.length },
    scrape_ms: round(svcMs, 2),
    prom_client_alone_ms: round(promMs, 2),
    scrape_vs_prom_client: round(svcMs / promMs, 2),
    text_kib: round(bytes / 1024, 1),
    record_ns_per_request: round(svcNs, 1),
    prom_client_inc_observe_ns: round(promNs, 1),
    record_vs_prom_client: round(svcNs / promNs, 3),
  };
}

async function graphData(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-observe-'));
  const secret = 'bench-secret-bench-secret-bench-secret-0123';
  await ensureUsers(dataDir, ['graph-user']);
  const port = await freePort();
  const app = fixture('graph-app.ts');
  const p = await serve(process.execPath, [new URL('../bin/svc.mjs', import.meta.url).pathname, 'start', app, '--workers', '1', '--port', String(port), '--host', '127.0.0.1'], /Server ready/, {
    SVC_ACCESS_LOG: 'false',
    JWT_SECRET: secret,
    SVC_DATA_DIR: dataDir,
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    const token = await new SignJWT({ user_id: 'graph-user', role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(secret));
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    // 9,091 items with a tag on every tenth: 10,000 nodes with the root.
    for (const [count, prefix] of [[4545, 'a'], [4546, 'b']] as const) {
      const res = await fetch(`${url}/walker/Seed`, { method: 'POST', headers, body: JSON.stringify({ count, prefix, fanout: 4 }) });
      if (!res.ok) throw new Error(`seed: ${res.status} ${await res.text()}`);
    }
    let nodes = 0;
    let bytes = 0;
    const get = async (q: string) => {
      const res = await fetch(`${url}/graph/data?${q}`, { headers });
      const text = await res.text();
      if (!res.ok) throw new Error(`graph/data: ${res.status} ${text.slice(0, 200)}`);
      bytes = text.length;
      nodes = (JSON.parse(text) as { data: { nodes: unknown[] } }).data.nodes.length;
    };
    const fullMs = await timeIt(7, () => get('depth=100&limit=10000'));
    const fullNodes = nodes;
    const fullBytes = bytes;
    const leanMs = await timeIt(7, () => get('depth=100&limit=10000&detailed=false'));
    const pageMs = await timeIt(15, () => get('depth=3&limit=1000'));
    // The floor: the same documents read straight from the store's file (every row of the user's graph).
    const db = new Database(join(dataDir, 'anchor_store.db'), { readonly: true });
    const table = (db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name").all() as { name: string }[]).map((r) => r.name);
    const anchors = table.find((n) => /anchor/.test(n)) ?? (table[0] as string);
    const rawMs = await timeIt(7, async () => db.prepare(`select * from "${anchors}"`).all());
    const rows = (db.prepare(`select count(*) as n from "${anchors}"`).get() as { n: number }).n;
    db.close();
    return {
      nodes: fullNodes,
      graph_data_ms: round(fullMs, 1),
      graph_data_kib: round(fullBytes / 1024, 1),
      us_per_node: round((fullMs * 1000) / fullNodes, 1),
      without_fields_ms: round(leanMs, 1),
      first_page_depth3_limit1000_ms: round(pageMs, 1),
      sqlite_read_all_rows_ms: round(rawMs, 1),
      sqlite_rows: rows,
      graph_data_vs_sqlite_read: round(fullMs / rawMs, 1),
    };
  } finally {
    await p.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const result = { bench: 'observe', at: new Date().toISOString(), machine: machine(), scrape: await scrape(), graph_data: await graphData() };
console.log(JSON.stringify(result, null, 2));
console.log(`results: ${save('observe', result)}`);
