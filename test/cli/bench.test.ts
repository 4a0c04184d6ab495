// `svc bench` run for real, as a child process: against an entry file it
// starts itself (examples/todo/app.ts) and against the URL of a server this
// test started (test/fixtures/bench/app.ts: the todo app, a walker whose
// fields all have defaults, a public broadcast WebSocket walker), with TS,
// JSON and TOML scenarios and without one; open loop; the admin's figures;
// usage and scenario errors; compare.
//
// Runs are short (2 s, no warm-up but one, few connections); the one entry-file run
// starts at once, beside the fixture server: each `svc start` costs seconds.
// What needs no server or no child process runs in process.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchError, defaultScenario, loadScenario, parseMetrics, prepare, runBench, validateScenario, type ApiIndex, type BenchResult } from '../../bench/harness/index.ts';
import { runSvc, startServer, TEST_SECRET, tokenFor, type Server, type SvcRun } from '../kit/index.ts';

const root = new URL('../..', import.meta.url).pathname;
const fixtures = join(root, 'test/fixtures/bench');
const tmp = mkdtempSync(join(tmpdir(), 'svc-bench-test-'));
const SHORT = ['--duration', '2', '--warmup', '0'];
const QUICK = { duration: 2, warmup: 0, stdout: { write: () => true }, stderr: { write: () => true } };

/** `svc bench …` from the repository root; an entry file's server gets a data folder of its own. */
function bench(args: string[], env: Record<string, string> = {}): Promise<SvcRun> {
  return runSvc(['bench', ...args], { cwd: root, env: { SVC_DATA_DIR: join(tmp, `data-${++runs}`), JWT_SECRET: TEST_SECRET, ...env } });
}
let runs = 0;
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));

function resultOf(dir: string): BenchResult {
  return JSON.parse(readFileSync(join(tmp, dir, 'result.json'), 'utf8')) as BenchResult;
}

/** Exit 0, the documented fields of result.json, report.html beside it, both paths printed. */
function checkRun(t: Test, run: SvcRun, dir: string): BenchResult {
  t.equal(run.code, 0, `exit 0 (${run.stderr.trim().split('\n').at(-1)})`);
  const r = resultOf(dir);
  t.equal(r.format, 'svc-bench/1');
  t.ok(r.throughput.rps > 0 && r.throughput.requests > 0, `throughput ${r.throughput.rps} rps`);
  for (const k of ['p50', 'p90', 'p99', 'p999', 'max'] as const) t.type(r.latency_ms[k], 'number', `latency_ms.${k}`);
  t.ok(r.latency_ms.p50 <= r.latency_ms.p99 && r.latency_ms.p99 <= r.latency_ms.max, 'p50 ≤ p99 ≤ max');
  t.type(r.errors.by_status, 'object');
  t.type(r.errors.by_code, 'object');
  t.ok(r.timeline.length >= 1 && r.timeline.every((p) => p.t > 0), `timeline of ${r.timeline.length} measured seconds`);
  t.ok(r.percentiles.length > 0 && typeof r.histogram === 'string' && r.histogram.length > 0, 'percentiles and histogram');
  t.match(r.machine, { node: process.version, cores: Number });
  t.ok(existsSync(join(tmp, dir, 'report.html')), 'report.html written');
  t.match(run.stdout, /result: .*result\.json\nreport: .*report\.html/);
  return r;
}

/** Output of an in-process run, thrown away. */
const quiet = { write: () => true };

/** The BenchError an in-process run ends with: its exit code and message. */
async function failure(run: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await run;
  } catch (error) {
    if (error instanceof BenchError) return { code: error.exitCode, message: error.message };
    throw error;
  }
  return { code: 0, message: '' };
}

// The servers start now, side by side, while the tests that need none run: the fixture app's for the
// URL runs, and the one the entry-file run starts itself (checked last).
const serverReady = startServer({ entry: join(fixtures, 'app.ts'), env: { SVC_METRICS_ENABLED: 'true' } });
serverReady.catch(() => undefined); // awaited (and reported) by the setup test
// No SVC_DATA_DIR: the bench gives the app a throwaway data folder.
const fromTs = bench(['examples/todo/app.ts', '--scenario', 'test/fixtures/bench/todo-scenario.ts', '--duration', '2', '--warmup', '1', '--out', join(tmp, 'ts')], { SVC_WORKERS: '1', SVC_DATA_DIR: '' });

t.test('usage errors exit 2 before anything starts', async (t) => {
  const both = await bench(['http://127.0.0.1:9', '--connections', '8', '--rate', '100']);
  t.equal(both.code, 2);
  t.equal(both.stderr, 'svc bench: --connections (closed loop) and --rate (open loop) are exclusive: give one\n');
  t.same(await failure(runBench('', { stderr: quiet })), { code: 2, message: 'a target is needed: svc bench <url|entry>' });
  t.same(await failure(runBench('http://127.0.0.1:9', { duration: 0, stderr: quiet })), { code: 2, message: '--duration must be a number > 0, got 0' });
  t.same(await failure(runBench('http://127.0.0.1:9', { threads: 1.5, stderr: quiet })), { code: 2, message: '--threads must be an integer ≥ 1, got 1.5' });
});

t.test('a bad scenario: exit 1 with one line naming the file and the field, before anything starts', async (t) => {
  t.same(await failure(runBench('examples/todo/app.ts', { scenario: 'test/fixtures/bench/bad-scenario.json', cwd: root, stderr: quiet })), {
    code: 1,
    message: 'test/fixtures/bench/bad-scenario.json: requests[0].weight must be a number > 0, got 0',
  });
  const typo = join(tmp, 'typo.toml');
  writeFileSync(typo, '[[requests]]\nwalkr = "Ping"\n');
  t.match(await failure(loadScenario(typo)), { code: 1, message: /typo\.toml: requests\[0\]\.walkr is not a scenario field \(known: name, walker, function, path/ });
  writeFileSync(typo, '[[requests]]\nwalker = "Ping"\nweight = "heavy"\n');
  t.match(await failure(loadScenario(typo)), { message: /requests\[0\]\.weight must be a number > 0, got "heavy"/ });
  t.match(await failure(loadScenario(join(tmp, 'none.json'))), { code: 1, message: /none\.json: no such scenario file/ });
  const named = join(tmp, 'named.mjs');
  writeFileSync(named, 'export const requests = [];\n');
  t.match(await failure(loadScenario(named)), { message: /named\.mjs: the scenario module has no default export/ });
  t.match(await failure(runBench('no-such-app.ts', { stderr: quiet })), { code: 1, message: 'no-such-app.ts: no such file (the target is a URL http://… or an app entry file)' });
});

t.test('scenario rules, in process', async (t) => {
  const refused = (x: unknown) => {
    try {
      validateScenario(x, 's.json');
    } catch (error) {
      t.ok(error instanceof BenchError);
      return (error as Error).message;
    }
    return 'accepted';
  };
  t.equal(refused({ requests: [{ walker: 'A', function: 'b' }] }), 's.json: requests[0] needs exactly one of walker, function or path (has walker and function)');
  t.equal(refused({ requests: [{}] }), 's.json: requests[0] needs exactly one of walker, function or path');
  t.equal(refused({ requests: [{ function: 'f', at: { setup: 'Make' } }] }), 's.json: requests[0].at is for walkers (spawned at the node a setup walker reported)');
  t.equal(refused({ requests: [{ walker: 'A' }, { walker: 'A' }] }), 's.json: requests[1].name "A" is also the name of requests[0]: give one of them another name');
  t.equal(refused({ requests: [{ walker: 'A' }], connections: 4, rate: 10 }), 's.json: connections and rate are exclusive: connections is a closed loop, rate an open loop');
  t.equal(refused({ ws: { walker: 'Room', clients: 1, rate: 5 } }), 's.json: ws.clients must be an integer ≥ 2, got 1');
  t.equal(refused({ requests: [] }), 's.json: requests is empty: a scenario needs requests, a ws part, or both');
  t.equal(refused({ requests: [{ path: '/x', method: 'GET' }], users: 2, duration: 5 }), 'accepted');

  // Users are counted once the flags are in: prepare says when a request or the ws part needs them (before any request).
  const settings = { duration: 1, warmup: 0, threads: 1 };
  t.match(await failure(prepare({ requests: [{ walker: 'A', auth: true }] }, 'http://h', settings, { api: null })), { code: 1, message: 'requests[0].auth needs users: set users > 0 in the scenario, or --users n' });
  t.match(await failure(prepare({ ws: { walker: 'Room', clients: 2, rate: 1, auth: true } }, 'http://h', settings, { api: null })), { message: 'ws.auth needs users: set users > 0 in the scenario, or --users n' });

  // The default scenario: public endpoints that take no required field (a defaulted field is fine).
  const route = (secured: boolean, required: string[], props: Record<string, object> = {}) => ({
    method: 'POST',
    template: '/x',
    secured,
    op: { requestBody: { content: { 'application/json': { schema: { properties: props, required } } } } },
  });
  const api: ApiIndex = new Map([
    ['walker_Add', route(false, ['title'])],
    ['walker_List', route(true, [])],
    ['walker_Ping', route(false, ['msg'], { msg: { default: 'ping' } })],
    ['function_stats', route(true, [])],
  ]);
  t.same(defaultScenario('http://h', api).scenario.requests, [{ walker: 'Ping', weight: 1, auth: false }]);
  t.same(defaultScenario('http://h', api, 2).scenario.requests?.map((r) => r.walker ?? r.function), ['List', 'Ping', 'stats'], 'with users, the private ones too');
  api.delete('walker_Ping');
  t.throws(() => defaultScenario('http://h', api), /http:\/\/h has no public walker or function that takes no required field.*--scenario file.*--users n to load its 2 private ones/);

  const metrics = parseMetrics('# HELP x\nsvc_http_requests_total{method="POST",path="/walker/Ping",status_code="200"} 7\nsvc_http_requests_total{method="POST",path="/x",status_code="503"} 2\nprocess_cpu_seconds_total 1.5\n');
  t.same(metrics, { svc_http_requests_total: 9, 'svc_http_requests_total:2xx': 7, 'svc_http_requests_total:5xx': 2, process_cpu_seconds_total: 1.5 });
});

let server: Server;
let admin = '';
t.test('setup: a server of the fixture app, metrics on', async () => {
  server = await serverReady;
  admin = await tokenFor('bench-admin', { server, role: 'admin' });
});
t.teardown(() => server?.stop());

t.test('against a URL without a scenario: the default one; --users adds private endpoints; the admin token adds the server figures', async (t) => {
  const run = await bench([server.url, '--users', '2', ...SHORT, '--connections', '4', '--out', join(tmp, 'default')], { SVC_BENCH_ADMIN_TOKEN: admin });
  const r = checkRun(t, run, 'default');
  t.same(Object.keys(r.per_request).sort(), ['ListTodos', 'Ping', 'stats'], 'endpoints that take no required field (Ping: a defaulted one); AddTodo needs a title');
  t.match(r.scenario, { name: 'default', mode: 'closed', connections: 4, duration_s: 2, warmup_s: 0, users: 2 });
  t.match(r.scenario.requests, [{ name: 'stats', method: 'POST', path: '/function/stats', weight: 1 }, { name: 'ListTodos' }, { name: 'Ping', path: '/walker/Ping' }]);
  t.equal(r.errors.total, 0, JSON.stringify(r.errors));
  t.ok((r.errors.by_status['200'] ?? 0) > 0, 'answers counted by status');
  t.notOk('entry' in r.target, 'a URL target');
  t.match(r.server, { stats_before: { workers: Array }, stats_after: { workers: Array } });
  t.ok((r.server?.metrics?.svc_http_requests_total ?? 0) >= r.throughput.requests, `the server counted ${r.server?.metrics?.svc_http_requests_total} requests`);
  t.match(run.stdout, /^server: [\d,]+ requests counted/m);
  const wrong = await failure(runBench(server.url, { ...QUICK, adminToken: 'not-a-token', out: join(tmp, 'x') }));
  t.match(wrong, { code: 1, message: /^--admin-token: .*\/admin\/stats answered 401/ });
});

t.test('a JSON scenario in open loop (--rate wins over the file)', async (t) => {
  const run = await bench([server.url, '--scenario', 'test/fixtures/bench/scenario.json', '--rate', '150', ...SHORT, '--out', join(tmp, 'open')]);
  const r = checkRun(t, run, 'open');
  t.match(r.scenario, { name: 'json-mix', mode: 'open', rate: 150, users: 1 });
  t.same(Object.keys(r.per_request).sort(), ['AddTodo', 'GetTodo', 'health']);
  t.match(r.scenario.requests, [{ name: 'AddTodo' }, { name: 'GetTodo', method: 'GET', path: '/todos/{id}' }, { name: 'health', method: 'GET', path: '/healthz' }]);
  t.match(r.open_loop, { target_rps: 150, achieved_rps: Number, kept_up: Boolean });
  t.ok(r.timeline.every((p) => typeof p.backlog === 'number'), 'backlog per second');
  t.equal(r.errors.total, 0, JSON.stringify(r.errors));
  t.match(run.stdout, /open loop: asked 150 req\/s/);
});

t.test('a TOML scenario with a WebSocket part, twice at once: sent, expected, delivered; compare finds no regression', async (t) => {
  // Both runs use the same WebSocket walker at once: each counts only its own frames.
  const [run, again] = await Promise.all(['toml', 'toml2'].map((dir) => bench([server.url, '--scenario', 'test/fixtures/bench/scenario.toml', ...SHORT, '--out', join(tmp, dir)])));
  const r = checkRun(t, run as SvcRun, 'toml');
  checkRun(t, again as SvcRun, 'toml2');
  t.match(r.scenario, { name: 'toml-mix', connections: 4 });
  t.same(Object.keys(r.per_request), ['Ping', 'AddTodo']);
  const ws = r.ws;
  t.ok(ws, 'a ws section');
  if (ws) {
    t.match(ws, { walker: 'Room', clients: 5, rate: 40 });
    t.ok(ws.sent >= 70 && ws.sent <= 80, `40 frames a second for 2 s: ${ws.sent}`);
    t.equal(ws.expected, ws.sent * 4, 'every frame to the 4 other clients');
    t.ok(ws.delivered > 0 && ws.delivered <= ws.expected, `${ws.delivered} of ${ws.expected} delivered`);
    t.equal(ws.delivery_ratio, Math.round((ws.delivered / ws.expected) * 10_000) / 10_000);
    t.ok(ws.latency_ms.p50 > 0, 'delivery latency measured');
    t.match(run?.stdout, /ws Room: \d+ frames to 5 clients, [\d,]+ of [\d,]+ deliveries/);
  }
  const cmp = await runSvc(['bench', 'compare', join(tmp, 'toml/result.json'), join(tmp, 'toml2/result.json'), '--fail-on-regression'], { cwd: root });
  t.equal(cmp.code, 0, cmp.stderr);
  t.match(cmp.stdout, /^regressions: none$/m);
  t.match(cmp.stdout, /throughput rps/);
});

t.test('a target that is down: exit 1, one line', async (t) => {
  // A port that was free a moment ago: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
  t.same(await failure(runBench(`http://127.0.0.1:${port}`, { stderr: quiet, stdout: quiet })), { code: 1, message: `cannot reach http://127.0.0.1:${port}: ECONNREFUSED` });
});

t.test('against an entry file: a TypeScript scenario with users, a body function, an at target and a private WebSocket walker', async (t) => {
  const run = await fromTs;
  const r = checkRun(t, run, 'ts');
  t.match(r.target, { entry: 'examples/todo/app.ts', url: /^http:\/\/127\.0\.0\.1:\d+$/ });
  t.match(r.scenario, { name: 'todo-mix', users: 3, connections: 8, warmup_s: 1 });
  t.same(Object.keys(r.per_request), ['AddTodo', 'ListTodos', 'stats', 'ListAtTodo']);
  t.match(r.scenario.requests, [{ name: 'AddTodo' }, { name: 'ListTodos', weight: 2 }, { name: 'stats', path: '/function/stats' }, { name: 'ListAtTodo', path: '/walker/ListTodos/{node_id}' }]);
  t.equal(r.errors.total, 0, JSON.stringify(r.errors));
  t.ok((r.per_request.AddTodo?.requests ?? 0) > 0, 'bodies made per request were accepted');
  t.match(r.ws, { walker: 'Announce', clients: 3 });
  t.ok(r.ws && r.ws.expected === r.ws.sent * 2 && r.ws.delivered > 0, `signed-in listeners heard: ${r.ws?.delivered} of ${r.ws?.expected}`);
  t.match(run.stderr, /registering and logging in 3 users/);
  const scratch = /the target keeps its data in (\S+), removed at the end/.exec(run.stderr)?.[1];
  t.ok(scratch && !existsSync(scratch), `a throwaway data folder, gone: ${scratch}`);
});

t.test('checked before the load: --out, the URL, an array scenario, a .ts scenario outside a module package', async (t) => {
  const file = join(tmp, 'a-file');
  writeFileSync(file, 'x');
  t.match(await failure(runBench('http://127.0.0.1:9', { ...QUICK, out: file })), { code: 2, message: /--out .*a-file: a file is there, not a folder/ });
  t.match(await failure(runBench('http://127.0.0.1:9', { ...QUICK, out: '/proc/nope/x' })), { code: 2, message: /under \/proc or \/sys/ });
  t.match(await failure(runBench('http://', { ...QUICK })), { code: 2, message: 'http://: not a valid URL (http://host:port)' });
  t.match(await failure(runBench('ftp://h/x', { ...QUICK })), { code: 2, message: /svc bench speaks http only/ });
  t.match(await failure(runBench('http://127.0.0.1:9', { ...QUICK, timeout: -1 })), { code: 2, message: '--timeout must be a number > 0, got -1' });
  t.match(validateArray(), /got an array$/);
  // tsx would make this file CommonJS (no package.json with "type": "module"): it still loads.
  const folder = mkdtempSync(join(tmpdir(), 'svc-bench-cjs-'));
  writeFileSync(join(folder, 's.ts'), "const w: string = 'AddTodo';\nexport default { name: 'cjs', requests: [{ walker: w, body: { title: 'x' } }] };\n");
  t.match((await loadScenario(join(folder, 's.ts'))).scenario, { name: 'cjs', requests: [{ walker: 'AddTodo' }] });
  rmSync(folder, { recursive: true, force: true });
  const { negativeFlag } = await import('../../cli/commands/bench.ts');
  t.equal(negativeFlag(['node', 'svc', 'bench', 'app.ts', '--duration', '-3']), '--duration must be a number > 0, got -3');
  t.equal(negativeFlag(['node', 'svc', 'bench', 'app.ts', '--rate=-5']), '--rate must be a number > 0, got -5');
  t.equal(negativeFlag(['node', 'svc', 'bench', 'app.ts', '--duration', '3']), undefined);
});

function validateArray(): string {
  try {
    validateScenario([], 'a.json');
  } catch (error) {
    return (error as Error).message;
  }
  return 'accepted';
}

/** A server answering every request with `status(n)` (n counts requests from 0). */
async function answering(status: (n: number) => number): Promise<{ url: string; close(): Promise<void> }> {
  const { createServer: http } = await import('node:http');
  let n = 0;
  const s = http((req, res) => {
    req.resume();
    res.writeHead(req.url === '/openapi.json' ? 404 : status(n++), { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((done) => s.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(s.address() as { port: number }).port}`, close: () => new Promise((done) => s.close(() => done())) };
}

t.test('a run where nothing succeeded: exit 1, files written; some failures: a warning', async (t) => {
  const scenario = join(tmp, 'path.json');
  writeFileSync(scenario, JSON.stringify({ requests: [{ path: '/x' }], connections: 2 }));
  const down = await answering(() => 503);
  const lines: string[] = [];
  const out = join(tmp, 'all-503');
  const failed = await failure(runBench(down.url, { ...QUICK, duration: 1, scenario, out, stdout: { write: (s: string) => lines.push(s) } }));
  t.match(failed, { code: 1, message: /^no request got a 2xx or 3xx answer \(.* 503 [\d,]+\).*the result is in / });
  t.ok(existsSync(join(out, 'result.json')), 'result.json still written');
  await down.close();
  const flaky = await answering((n) => (n % 2 ? 503 : 200));
  const err: string[] = [];
  await runBench(flaky.url, { ...QUICK, duration: 1, scenario, out: join(tmp, 'half'), stderr: { write: (s: string) => err.push(s) } });
  t.match(err.join(''), /svc bench: warning: [\d.]+% of requests failed \(503 [\d,]+\)/);
  await flaky.close();
});

t.test('a walker that is not there, and a ws walker that is not there: refused before the load, naming the file', async (t) => {
  const bad = join(tmp, 'bad-ws.json');
  writeFileSync(bad, JSON.stringify({ requests: [{ walker: 'Ping' }], ws: { walker: 'Nope', clients: 2, rate: 1 } }));
  const err: string[] = [];
  const f = await failure(runBench(server.url, { ...QUICK, scenario: bad, out: join(tmp, 'bad-ws'), stderr: { write: (s: string) => err.push(s) } }));
  t.match(f, { code: 1, message: /bad-ws\.json: ws\.walker: the target has no WebSocket walker Nope/ });
  t.notMatch(err.join(''), /connections for/, 'no load ran');
  t.notOk(existsSync(join(tmp, 'bad-ws')), 'the --out folder made for the run is gone again');
});
