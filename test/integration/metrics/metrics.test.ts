// Prometheus metrics and GET /admin/metrics against a real `svc start` with two worker threads.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { post, runSvc, startServer, tokenFor, transport, type Server } from '../../kit/index.ts';

const entry = new URL('../../fixtures/metrics-app.ts', import.meta.url).pathname;
const SEED_BUCKETS = ['0.005', '0.01', '0.025', '0.05', '0.075', '0.1', '0.25', '0.5', '0.75', '1', '2.5', '5', '10', '+Inf'];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[4]) });
  }
  return out;
}

// Real servers (three here) on a busy two-core machine take a while to start.
t.setTimeout(300_000);

let server: Server;
let admin: string;
/** `[scale.metrics] scrape_token` of the main server: a static bearer token for the scrape endpoint alone. */
const SCRAPE_TOKEN = randomBytes(32).toString('hex');

t.before(async () => {
  server = await startServer({ entry, workers: 2, env: { SVC_METRICS_ENABLED: 'true', SVC_METRICS_WALKER_METRICS: 'true', SVC_METRICS_SCRAPE_TOKEN: SCRAPE_TOKEN } });
  admin = await tokenFor('metrics-admin', { role: 'admin', server });
});
t.teardown(() => server.stop());
t.comment(`transport: ${transport()}`);

async function scrape(path = '/metrics', token = admin): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

const total = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);

t.test('the metrics endpoint needs an admin token: 403 without, forged, expired or a user one', async (t) => {
  const user = await tokenFor('metrics-user', { server });
  const expired = await tokenFor('metrics-admin', { role: 'admin', server, expiresIn: Math.floor(Date.now() / 1000) - 60 });
  const forged = await tokenFor('metrics-admin', { role: 'admin', secret: 'another-secret-another-secret-another-0000' });
  const none = await fetch(`${server.url}/metrics`);
  t.equal(none.status, 403, 'no token');
  t.match(await none.json(), { ok: false, error: { code: 'FORBIDDEN' } });
  for (const [name, token] of [['forged', forged], ['expired', expired], ['user', user], ['malformed', 'not-a-jwt']] as const) {
    const res = await scrape('/metrics', token);
    t.equal(res.status, 403, name);
    t.match(JSON.parse(res.text), { ok: false, error: { code: 'FORBIDDEN' } }, `${name}: the error envelope`);
    t.notOk(res.text.includes('svc_http_requests_total'), `${name}: no figures`);
  }
  const ok = await scrape();
  t.equal(ok.status, 200);
  t.match(ok.type, /^text\/plain; version=0\.0\.4/);
  for (const name of ['svc_http_requests_total', 'svc_http_request_duration_seconds', 'svc_http_requests_in_progress']) t.match(ok.text, new RegExp(`# TYPE ${name} `), `${name} is there`);
  t.match(ok.text, /# TYPE svc_http_requests_total counter/);
  t.match(ok.text, /# TYPE svc_http_request_duration_seconds histogram/);
  t.match(ok.text, /# TYPE svc_http_requests_in_progress gauge/);
});

t.test('the scrape token: taken on the metrics endpoint (besides admin tokens), refused everywhere else', async (t) => {
  const ok = await scrape('/metrics', SCRAPE_TOKEN);
  t.equal(ok.status, 200, 'the scrape token');
  t.match(ok.type, /^text\/plain; version=0\.0\.4/);
  t.match(ok.text, /# TYPE svc_http_requests_total counter/, 'the figures');
  const lower = await fetch(`${server.url}/metrics`, { headers: { authorization: `bearer ${SCRAPE_TOKEN}` } });
  t.equal(lower.status, 200, 'the scheme in lower case too');
  await lower.arrayBuffer();
  t.equal((await scrape('/metrics', admin)).status, 200, 'an admin token still works');

  const last = SCRAPE_TOKEN.at(-1) === '0' ? '1' : '0';
  const expired = await tokenFor('metrics-admin', { role: 'admin', server, expiresIn: Math.floor(Date.now() / 1000) - 60 });
  const forged = await tokenFor('metrics-admin', { role: 'admin', secret: 'another-secret-another-secret-another-0000' });
  const refused = [
    ['wrong, of equal length', SCRAPE_TOKEN.slice(0, -1) + last],
    ['its prefix', SCRAPE_TOKEN.slice(0, 32)],
    ['longer', `${SCRAPE_TOKEN}0`],
    ['forged JWT', forged],
    ['expired admin token', expired],
  ] as const;
  const none = await fetch(`${server.url}/metrics`);
  t.equal(none.status, 403, 'no token');
  t.match(await none.json(), { ok: false, error: { code: 'FORBIDDEN', message: /needs an admin token or the scrape token/ } });
  for (const [name, token] of refused) {
    const res = await scrape('/metrics', token);
    t.equal(res.status, 403, name);
    t.match(JSON.parse(res.text), { ok: false, error: { code: 'FORBIDDEN' } }, `${name}: the error envelope`);
    t.notOk(res.text.includes('svc_http_requests_total'), `${name}: no figures`);
    t.notOk(res.text.includes(SCRAPE_TOKEN), `${name}: the token is not in the answer`);
  }

  // Any other route: the scrape token is no token at all there.
  for (const [method, path] of [['GET', '/admin/metrics'], ['GET', '/admin/stats'], ['GET', '/admin/users'], ['GET', '/user/me'], ['POST', '/walker/Echo']] as const) {
    const res = await fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${SCRAPE_TOKEN}`, 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{}' } : {}) });
    const text = await res.text();
    t.ok(res.status === 401 || res.status === 403, `${method} ${path}: refused (${res.status})`);
    t.match(JSON.parse(text), { ok: false }, `${method} ${path}: an error`);
    t.notOk(text.includes(SCRAPE_TOKEN), `${method} ${path}: the token is not in the answer`);
  }

  const spec = await (await fetch(`${server.url}/openapi.json`)).text();
  t.match((JSON.parse(spec) as { paths: Record<string, { get: { summary: string } }> }).paths['/metrics']?.get.summary, /scrape_token/, 'the OpenAPI summary mentions the scrape token');
  t.notOk(spec.includes(SCRAPE_TOKEN), 'and never shows it');
  t.notOk(server.output().includes(SCRAPE_TOKEN), 'nothing the server printed has it');
});

t.test('names, labels and the seed buckets; a path label is the route template, never the raw path', async (t) => {
  const before = parse((await scrape()).text);
  const ids = Array.from({ length: 1000 }, (_, i) => i.toString(16).padStart(32, '0'));
  // Distinct node ids (unknown: 404 each), distinct item ids, unknown paths: bounded labels all the same.
  for (let i = 0; i < ids.length; i += 50) {
    await Promise.all(ids.slice(i, i + 50).map((id) => post(`${server.url}/walker/Peek/${id}`, {})));
  }
  await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${server.url}/items/item-${i}`).then((r) => r.arrayBuffer())));
  await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${server.url}/no/such/${i}`).then((r) => r.arrayBuffer())));
  const res = await post(`${server.url}/walker/Echo`, { msg: 'x' });
  t.equal(res.status, 200);
  const after = parse((await scrape()).text);
  const requests = after.filter((s) => s.name === 'svc_http_requests_total');
  const paths = new Set(requests.map((s) => s.labels.path));
  t.ok(paths.has('/walker/Peek/{node_id}'), 'the node id route by its template');
  t.ok(paths.has('/items/{item_id}'), 'a restspec path by its template');
  t.ok(paths.has('unmatched'), 'unknown paths share one label');
  for (const p of paths) t.notOk(/[0-9a-f]{32}|item-\d|\/no\/such/.test(p as string), `no raw path among the labels: ${p}`);
  t.ok(paths.size < 10, `a handful of path labels (${[...paths].join(', ')})`);
  for (const s of requests) t.same(Object.keys(s.labels).sort(), ['method', 'path', 'status_code'], 'labels of requests_total');
  const peek = { method: 'POST', path: '/walker/Peek/{node_id}' };
  t.equal(total(after, 'svc_http_requests_total', peek) - total(before, 'svc_http_requests_total', peek), 1000, 'every request counted, from both threads');
  t.equal(total(after, 'svc_http_requests_total', { path: '/items/{item_id}', status_code: '200' }) - total(before, 'svc_http_requests_total', { path: '/items/{item_id}', status_code: '200' }), 20);
  t.equal(total(after, 'svc_http_requests_total', { path: 'unmatched', status_code: '404' }) - total(before, 'svc_http_requests_total', { path: 'unmatched', status_code: '404' }), 20);
  const buckets = after.filter((s) => s.name === 'svc_http_request_duration_seconds_bucket' && s.labels.path === '/walker/Echo');
  t.same(buckets.map((s) => s.labels.le), SEED_BUCKETS, 'the seed histogram buckets');
  t.same(Object.keys(buckets[0]?.labels ?? {}).sort(), ['le', 'method', 'path'], 'duration labels: method and path');
  const counts = buckets.map((s) => s.value);
  t.same(counts, [...counts].sort((a, b) => a - b), 'buckets are cumulative');
  t.equal(buckets.at(-1)?.value, total(after, 'svc_http_request_duration_seconds_count', { path: '/walker/Echo' }), '+Inf = count');
  t.ok(total(after, 'svc_http_request_duration_seconds_sum', { path: '/walker/Echo' }) > 0, 'a sum of durations');
});

t.test('the metrics endpoints are not counted in their own figures', async (t) => {
  for (let i = 0; i < 5; i++) await scrape();
  for (let i = 0; i < 3; i++) await scrape('/admin/metrics');
  const samples = parse((await scrape()).text);
  const paths = new Set(samples.filter((s) => s.name.startsWith('svc_http_request')).map((s) => s.labels.path));
  t.notOk(paths.has('/metrics'), 'no /metrics label');
  t.notOk(paths.has('/admin/metrics'), 'no /admin/metrics label');
  t.equal(total(samples, 'svc_http_requests_in_progress'), 0, 'the scrape itself is not in progress');
});

t.test('requests in progress: counted while a request runs, back to 0 after', async (t) => {
  const slow = post(`${server.url}/walker/Slow`, { ms: 1500 });
  let seen = 0;
  let done = false;
  void slow.then(() => (done = true));
  // Scrape until the slow request shows (it is in flight for 1.5 s).
  while (!done && seen === 0) seen = total(parse((await scrape()).text), 'svc_http_requests_in_progress');
  t.equal(seen, 1, 'one request in progress while it runs');
  t.equal((await slow).status, 200);
  t.equal(total(parse((await scrape()).text), 'svc_http_requests_in_progress'), 0, 'back to 0');
});

t.test('walker metrics: duration by walker name and success', async (t) => {
  await post(`${server.url}/walker/Echo`, {});
  const teapot = await post(`${server.url}/walker/Teapot`, {});
  t.equal(teapot.status, 418);
  const samples = parse((await scrape()).text);
  t.ok(total(samples, 'svc_walker_duration_seconds_count', { walker_name: 'Echo', success: 'true' }) >= 1, 'Echo succeeded');
  t.ok(total(samples, 'svc_walker_duration_seconds_count', { walker_name: 'Teapot', success: 'false' }) >= 1, 'Teapot failed');
  t.equal(total(samples, 'svc_http_requests_total', { path: '/walker/Teapot', status_code: '418' }), 1, 'the status the walker chose');
  const bucket = samples.find((s) => s.name === 'svc_walker_duration_seconds_bucket');
  t.same(Object.keys(bucket?.labels ?? {}).sort(), ['le', 'success', 'walker_name']);
});

t.test('the runtime own metrics are there', async (t) => {
  const text = (await scrape()).text;
  for (const name of [
    'svc_actors',
    'svc_partitions_active',
    'svc_actor_activations_total',
    'svc_mailbox_depth_high_water',
    'svc_websocket_connections',
    'svc_websocket_broadcasts_total',
    'svc_store_commit_duration_seconds',
    'svc_forwarded_request_duration_seconds',
    'svc_password_hash_queue',
    'svc_events_total',
    'process_resident_memory_bytes',
  ]) {
    t.match(text, new RegExp(`# TYPE ${name} `), name);
  }
  const samples = parse(text);
  t.ok(total(samples, 'svc_actors') > 0, 'actors counted');
  t.same(new Set(samples.filter((s) => s.name === 'svc_thread_heap_used_bytes').map((s) => s.labels.thread)), new Set(['w1', 'w2']), 'both worker threads answered');
});

t.test('the Grafana dashboard in examples/ asks only for metrics that exist', async (t) => {
  const dashboard = JSON.parse(readFileSync(new URL('../../../examples/grafana/svc-dashboard.json', import.meta.url), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  const exprs = dashboard.panels.flatMap((p) => p.targets.map((x) => x.expr));
  t.ok(exprs.length > 15, 'panels with queries');
  const text = (await scrape()).text;
  const types = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
  // A cluster member's own metrics: not served by this single process; their names are checked against the source.
  const mainSource = readFileSync(new URL('../../../runtime/metrics/main-metrics.ts', import.meta.url), 'utf8');
  const named = new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:svc|process|nodejs)_[a-z0-9_]+)\{/g)].map((m) => (m[1] as string).replace(/_(bucket|sum|count)$/, ''))));
  t.ok(named.size > 15, `${named.size} metrics used`);
  for (const name of named) {
    if (name.startsWith('svc_cluster_')) t.ok(mainSource.includes(`\${ns}${name.slice(3)}`), `${name}: a cluster member's metric`);
    else t.ok(types.has(name), `${name} is served`);
  }
});

t.test('GET /admin/metrics: metrics and summary (admin only)', async (t) => {
  const none = await fetch(`${server.url}/admin/metrics`);
  t.equal(none.status, 401);
  const user = await tokenFor('metrics-user-2', { server });
  t.equal((await scrape('/admin/metrics', user)).status, 403);
  const res = await scrape('/admin/metrics');
  t.equal(res.status, 200);
  const body = JSON.parse(res.text);
  t.equal(body.ok, true);
  t.equal(body.data.enabled, true);
  const { metrics, summary } = body.data;
  t.ok(Array.isArray(metrics) && metrics.length > 10);
  const misshapen = metrics.filter(
    (m: { values: { labels: unknown; value: unknown }[] }) =>
      Object.keys(m).sort().join() !== 'help,name,type,values' || !m.values.every((v) => typeof v.value === 'number' && typeof v.labels === 'object' && v.labels !== null),
  );
  t.same(misshapen, [], 'each metric: name, type, help, values [{labels, value}]');
  const requests = metrics.find((m: { name: string }) => m.name === 'svc_http_requests_total');
  t.equal(requests.type, 'counter');
  const sum = requests.values.reduce((a: number, v: { value: number }) => a + v.value, 0);
  const errors = requests.values.filter((v: { labels: { status_code: string } }) => Number(v.labels.status_code) >= 400).reduce((a: number, v: { value: number }) => a + v.value, 0);
  t.equal(summary.total_requests, sum, 'total_requests is the sum of the counter');
  t.equal(summary.error_rate_percent, Math.round((errors / sum) * 10000) / 100, 'error rate: answers ≥ 400');
  t.ok(summary.avg_latency_ms > 0, 'an average latency');
  t.equal(summary.active_requests, 0, 'nothing else in progress');
});

t.test('trace id end to end: header in, walker log line, response header', async (t) => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const res = await post(`${server.url}/walker/Chatty`, {}, { 'x-trace-id': traceId, 'x-request-id': 'req-chatty-1' });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-trace-id'), traceId, 'back in the response header');
  t.same(res.body.data.reports, [traceId], 'the walker sees it');
  const line = JSON.parse(await server.waitFor(/chatty walker says hello/));
  t.equal(line.trace_id, traceId, 'the log line has the trace id');
  t.equal(line.req_id, 'req-chatty-1', 'and the request id');
  t.equal(line.walker, 'Chatty');
});

t.test('the totals never go back: a thread that is busy, or dies and is replaced, keeps its counts in them', async (t) => {
  const requests = async () => total(parse((await scrape()).text), 'svc_http_requests_total');
  await Promise.all(Array.from({ length: 40 }, () => post(`${server.url}/walker/Echo`, {})));
  const before = await requests();
  // A walker holds its thread for 3 s (longer than a scrape waits for a thread): that thread's last answer counts.
  const blocked = post(`${server.url}/walker/Block`, { ms: 3000 });
  const during = await requests();
  t.ok(during >= before, `while a thread is busy: ${during} ≥ ${before}`);
  t.equal((await blocked).status, 200);
  const after = await requests();
  t.ok(after >= during, `after: ${after} ≥ ${during}`);
  // The thread that hosts the guest graph ends; a new one takes its name.
  await post(`${server.url}/walker/Crash`, {}).catch(() => undefined);
  const exited = await server.waitFor(/worker (w\d) exited with code 9; starting a new one/);
  await server.waitFor(new RegExp(`worker ${/worker (w\d)/.exec(exited)?.[1]} is serving again`));
  const replaced = await requests();
  t.ok(replaced >= after, `after the thread was replaced: ${replaced} ≥ ${after}`);
  await post(`${server.url}/walker/Echo`, {});
  t.ok((await requests()) > replaced, 'and counting goes on');
});

t.test('metrics off (the default): no endpoint, nothing measured; admin metrics says so', async (t) => {
  const off = await startServer({ entry, workers: 1 });
  t.teardown(() => off.stop());
  const token = await tokenFor('off-admin', { role: 'admin', server: off });
  const res = await fetch(`${off.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(res.status, 404);
  const adminRes = await fetch(`${off.url}/admin/metrics`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(adminRes.status, 200);
  t.match(await adminRes.json(), { ok: true, data: { enabled: false, metrics: [], summary: { total_requests: 0 } } });
});

t.test('endpoint, namespace and buckets from the configuration', async (t) => {
  const custom = await startServer({
    entry,
    workers: 1,
    env: { SVC_METRICS_ENABLED: 'true', SVC_METRICS_ENDPOINT: '/internal/prom', SVC_METRICS_NAMESPACE: 'shop', SVC_METRICS_HISTOGRAM_BUCKETS: '0.1,1' },
  });
  t.teardown(() => custom.stop());
  const token = await tokenFor('custom-admin', { role: 'admin', server: custom });
  await post(`${custom.url}/walker/Echo`, {});
  t.equal((await fetch(`${custom.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status, 404, 'the default path is free');
  const scraper = await fetch(`${custom.url}/internal/prom`, { headers: { authorization: `Bearer ${SCRAPE_TOKEN}` } });
  t.equal(scraper.status, 403, 'no scrape_token configured: admin tokens only');
  t.match(await scraper.json(), { ok: false, error: { code: 'FORBIDDEN', message: /needs an admin token \(/ } });
  const res = await fetch(`${custom.url}/internal/prom`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(res.status, 200);
  const samples = parse(await res.text());
  t.ok(total(samples, 'shop_http_requests_total', { path: '/walker/Echo' }) >= 1, 'the namespace');
  t.notOk(samples.some((s) => s.name.startsWith('svc_')), 'no svc_ names left');
  t.notOk(samples.some((s) => s.name === 'shop_walker_duration_seconds_count'), 'walker metrics off by default');
  t.same(
    samples.filter((s) => s.name === 'shop_http_request_duration_seconds_bucket' && s.labels.path === '/walker/Echo').map((s) => s.labels.le),
    ['0.1', '1', '+Inf'],
  );
  const spec = (await (await fetch(`${custom.url}/openapi.json`)).json()) as { paths: Record<string, { get?: unknown }> };
  t.ok(spec.paths['/internal/prom']?.get, 'the endpoint is in /openapi.json');
  t.ok(spec.paths['/admin/metrics']?.get, '/admin/metrics is in /openapi.json');
});

t.test('an app route on the metrics endpoint or a graph path is refused at start, not taken over', async (t) => {
  const dir = t.testdir({
    'main.ts': `import { entry, HTTPMethod, restspec, Root, Walker } from 'svc';
export class MyMetrics extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ method: HTTPMethod.GET, path: '/metrics' });
  @entry(Root) go() { this.report('mine'); }
}
`,
  });
  const on = await runSvc(['start', '--port', '0', '--host', '127.0.0.1', '--workers', '1'], { cwd: dir, env: { SVC_METRICS_ENABLED: 'true' }, clean: true });
  t.equal(on.code, 1, 'svc start fails');
  t.match(on.stderr + on.stdout, /GET \/metrics is a route of the app \(walker MyMetrics\).*move the metrics endpoint/s);
  const graph = t.testdir({
    'main.ts': `import { entry, HTTPMethod, restspec, Root, Walker } from 'svc';
export class Graph extends Walker {
  static access = 'pub' as const;
  static spec = restspec({ method: HTTPMethod.GET, path: '/graph' });
  @entry(Root) go() { this.report('mine'); }
}
`,
  });
  const refused = await runSvc(['start', '--port', '0', '--host', '127.0.0.1', '--workers', '1'], { cwd: graph, clean: true });
  t.equal(refused.code, 1);
  t.match(refused.stderr + refused.stdout, /GET \/graph is a route of the app \(walker Graph\).*SVC_GRAPH_ENABLED=false/s);
});

t.test('a scrape token shorter than 32 characters stops the start, naming the key and not showing the token', async (t) => {
  const short = 'scrape-me-0123456789abcdefghijk';
  const run = await runSvc(['start', entry, '--port', '0', '--host', '127.0.0.1', '--workers', '1'], { cwd: t.testdir({}), env: { SVC_METRICS_ENABLED: 'true', SVC_METRICS_SCRAPE_TOKEN: short }, clean: true });
  t.equal(run.code, 1, 'svc start fails');
  t.match(run.stderr + run.stdout, /\[scale\.metrics\] scrape_token \(SVC_METRICS_SCRAPE_TOKEN\) must be at least 32 characters/);
  t.notOk((run.stderr + run.stdout).includes(short), 'the token is not printed');
});
