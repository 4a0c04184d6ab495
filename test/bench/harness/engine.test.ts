// The load engine against real sockets: in-process node:http servers on free
// ports of 127.0.0.1, each run a second or three on generator threads.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ResponseParser, type ResponseSink } from '../../../bench/harness/response-parser.ts';
import { defaultTimeoutMs, runLoad, threadsFor, type LoadOutcome, type LoadProgress } from '../../../bench/harness/engine.ts';
import { createHistogram, decodeHistogram, encodeHistogram, MAX_US, percentileSeries, recordUs, summarize } from '../../../bench/harness/histogram.ts';
import { BenchError } from '../../../bench/harness/scenario.ts';
import type { EnginePlan, PreparedRequest } from '../../../bench/harness/types.ts';

interface TestServer {
  origin: string;
  /** Connections accepted so far, and open now. */
  accepted: number;
  open: Set<Socket>;
  /** The most connections open at once. */
  peak: number;
  /** Resolves once no connection is open. */
  drained(): Promise<void>;
  close(): Promise<void>;
}

async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<TestServer> {
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => handler(req, body, res));
  });
  let waiting: (() => void)[] = [];
  const s: TestServer = {
    origin: '',
    accepted: 0,
    open: new Set(),
    peak: 0,
    drained: () => (s.open.size === 0 ? Promise.resolve() : new Promise((resolve) => waiting.push(resolve))),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', (socket: Socket) => {
    s.accepted++;
    s.open.add(socket);
    s.peak = Math.max(s.peak, s.open.size);
    socket.on('close', () => {
      s.open.delete(socket);
      if (s.open.size > 0) return;
      for (const w of waiting) w();
      waiting = [];
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return s;
}

const json = (res: ServerResponse, status: number, value: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
};

function request(name: string, path: string, extra: Partial<PreparedRequest> & { body?: string } = {}): PreparedRequest {
  const { body, ...rest } = extra;
  return { name, method: body === undefined ? 'GET' : 'POST', variants: [{ path, headers: {}, ...(body === undefined ? {} : { body }), user: -1 }], weight: 1, ...rest };
}

function plan(origin: string, requests: PreparedRequest[], p: Partial<EnginePlan> = {}): EnginePlan {
  return { origin, requests, mode: 'closed', connections: 4, duration_s: 1, warmup_s: 0, threads: 1, ...p };
}

const answered = (out: LoadOutcome): number => Object.values(out.errors.by_status).reduce((a, b) => a + b, 0);

// A scenario module as a user writes one: TypeScript, a body function per request. Outside the
// package (no package.json "type"), so the thread must load it as TypeScript in a CommonJS scope.
const scenarioDir = mkdtempSync(join(tmpdir(), 'svc-bench-engine-'));
const scenarioFile = join(scenarioDir, 'scenario.ts');
writeFileSync(
  scenarioFile,
  `interface Ctx { i: number; user: number; thread: number; random(): number }
const tag: string = 'généré';
export default {
  requests: [
    { walker: 'Static', body: { a: 1 } },
    { walker: 'Echo', body: (ctx: Ctx) => ({ tag, i: ctx.i, user: ctx.user, thread: ctx.thread, r: ctx.random() }) },
    { walker: 'Bad', body: (): unknown => { throw new Error('no body today'); } },
  ],
};
`,
);
const generated = (): PreparedRequest => ({
  name: 'gen',
  method: 'POST',
  variants: [0, 1].map((user) => ({ path: `/u${user}`, headers: { 'x-user': String(user) }, user })),
  weight: 1,
  generator: { module: scenarioFile, index: 1 },
});

t.test('closed loop: counts add up, latencies ordered, a point a second, weights honoured', async (t) => {
  const seen: { host?: string; type?: string; body: string }[] = [];
  const server = await serve((req, body, res) => {
    if (seen.length < 50) seen.push({ host: req.headers.host, type: req.headers['content-type'], body });
    json(res, 200, { ok: true });
  });
  t.teardown(() => server.close());
  const progress: LoadProgress[] = [];
  const out = await runLoad(plan(server.origin, [request('a', '/a', { body: '{"x":1}', weight: 3 }), request('b', '/b')], { connections: 8, duration_s: 2, warmup_s: 0.5 }), {
    onProgress: (p) => progress.push(p),
  });

  t.ok(out.throughput.requests > 200, `${out.throughput.requests} requests`);
  t.equal((out.errors.by_status['200'] ?? 0) + out.errors.total, out.throughput.requests, 'requests = 2xx + errors');
  t.equal(out.errors.total, 0);
  const near = (a: number, b: number, tolerance: number): boolean => Math.abs(a - b) <= tolerance * b;
  t.ok(near(out.throughput.rps, out.throughput.requests / 2, 0.02), 'rps over the 2 s measured');
  const l = out.latency_ms;
  t.ok(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max, JSON.stringify(l));
  t.ok(l.min > 0 && l.mean > 0);

  t.same(
    out.timeline.map((p) => p.t),
    [1, 2],
    'a point per measured second',
  );
  t.ok(
    near(
      out.timeline.reduce((n, p) => n + p.rps, 0),
      out.throughput.requests,
      0.03,
    ),
    'the points add up to the total',
  );
  t.notOk('backlog' in (out.timeline[0] as object), 'no backlog in the closed loop');
  t.same(
    progress.map((p) => p.t),
    [0, 1, 2],
    'progress each second, warm-up at t ≤ 0',
  );

  t.same(Object.keys(out.per_request).sort(), ['a', 'b']);
  const share = (out.per_request.a?.requests ?? 0) / out.throughput.requests;
  t.ok(Math.abs(share - 0.75) <= 0.1, `weights 3:1 → a's share ${share.toFixed(3)}`);
  t.equal((out.per_request.a?.requests ?? 0) + (out.per_request.b?.requests ?? 0), out.throughput.requests);

  t.equal(decodeHistogram(out.histogram).totalCount, answered(out), 'the histogram holds every answer');
  t.equal(out.percentiles[0]?.[0], 0);
  t.same(out.percentiles.at(-1), [100, l.max]);
  t.ok(
    out.percentiles.every(([, ms], i) => i === 0 || ms >= (out.percentiles[i - 1] as [number, number])[1]),
    'percentiles non-decreasing',
  );

  const post = seen.find((s) => s.body !== '');
  t.same(post, { host: new URL(server.origin).host, type: 'application/json', body: '{"x":1}' }, 'the pre-encoded request as sent');
});

t.test('error classes: envelope codes, statuses, connection: close', async (t) => {
  const server = await serve((req, _body, res) => {
    if (req.url === '/full') {
      // Chunked, the envelope split over two chunks.
      res.writeHead(503, { 'content-type': 'application/json' });
      res.write('{"ok":false,"error":{"code":"SVC_ERR_');
      res.end('MAILBOX_FULL","message":"mailbox full"},"meta":{}}');
    } else if (req.url === '/missing') {
      res.writeHead(404, { 'content-type': 'text/plain', 'content-length': '4' });
      res.end('nope');
    } else {
      res.setHeader('connection', 'close');
      json(res, 200, { ok: true });
    }
  });
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('full', '/full'), request('missing', '/missing'), request('close', '/close')]));

  const s = out.errors.by_status;
  t.ok((s['503'] ?? 0) > 0 && (s['404'] ?? 0) > 0 && (s['200'] ?? 0) > 0, JSON.stringify(s));
  t.same(out.errors.by_code, { SVC_ERR_MAILBOX_FULL: s['503'] }, 'the envelope code counted; non-JSON under its status only');
  t.equal(out.errors.total, (s['503'] ?? 0) + (s['404'] ?? 0));
  t.equal(out.throughput.requests, answered(out));
  t.same(out.per_request.full?.errors.by_code, { SVC_ERR_MAILBOX_FULL: out.per_request.full?.requests });
  t.equal(out.per_request.close?.errors.total, 0, 'connection: close → reconnected, no error');
  t.ok(server.accepted > (s['200'] ?? 0), `a connection per closing answer (${server.accepted} connections)`);
});

t.test('a server destroying sockets: counted as socket errors, the load goes on', async (t) => {
  const server = await serve((req, _body, res) => (req.url === '/boom' ? req.socket.destroy() : json(res, 200, { ok: true })));
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('boom', '/boom'), request('ok', '/ok', { weight: 3 })], { duration_s: 1.5 }));

  const socket = out.errors.by_code.socket ?? 0;
  t.ok(socket > 0, `${socket} socket errors`);
  t.same(Object.keys(out.errors.by_status), ['200'], 'not a status');
  t.equal(out.errors.total, socket);
  t.equal(out.throughput.requests, (out.errors.by_status['200'] ?? 0) + socket);
  t.same(out.per_request.boom?.errors, { total: out.per_request.boom?.requests, by_status: {}, by_code: { socket: out.per_request.boom?.requests } });
  t.ok(
    out.timeline.every((p) => p.rps > 0),
    'every second served',
  );
});

t.test('open loop: holds its rate within 2% when the server keeps up', async (t) => {
  const server = await serve((_req, _body, res) => json(res, 200, { ok: true }));
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('a', '/a')], { mode: 'open', rate: 2000, connections: 64, duration_s: 3, warmup_s: 1 }));

  const o = out.open_loop!;
  t.ok(Math.abs(o.achieved_rps - 2000) <= 40, `achieved ${o.achieved_rps} req/s of 2000`);
  t.equal(o.target_rps, 2000);
  t.ok(o.kept_up, JSON.stringify(o));
  t.ok(o.backlog_end <= 20);
  t.equal(out.errors.total, 0);
  t.same(
    out.timeline.map((p) => typeof p.backlog),
    ['number', 'number', 'number'],
  );
});

t.test('open loop: reports the backlog and measures from the due time when the server falls behind', async (t) => {
  const server = await serve((_req, _body, res) => setTimeout(() => json(res, 200, { ok: true }), 50));
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('slow', '/slow')], { mode: 'open', rate: 500, connections: 4, duration_s: 2 }));

  const o = out.open_loop!;
  t.notOk(o.kept_up);
  t.ok(o.achieved_rps < 150, `4 connections × 20/s: achieved ${o.achieved_rps}`);
  t.ok(o.backlog_max > 0 && o.backlog_end > 0, JSON.stringify(o));
  t.ok(server.peak <= 4, `at most 4 connections (${server.peak})`);
  // Each answer takes 50 ms once sent; measured from when it was due, the wait in the backlog counts.
  t.ok(out.latency_ms.p99 > 500, `p99 ${out.latency_ms.p99} ms ≫ 50 ms`);
  t.ok(out.latency_ms.p50 > 100, `p50 ${out.latency_ms.p50} ms`);
  const [first, last] = [out.timeline[0]!, out.timeline.at(-1)!];
  t.ok(last.backlog! > first.backlog!, `the backlog grows: ${first.backlog} → ${last.backlog}`);
});

t.test('generator bodies: made per request by the scenario module', async (t) => {
  const bodies: { path?: string; user?: string; type?: string; body: string }[] = [];
  const server = await serve((req, body, res) => {
    bodies.push({ path: req.url, user: req.headers['x-user'] as string, type: req.headers['content-type'], body });
    json(res, 200, { ok: true });
  });
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [generated()], { connections: 2 }));

  t.equal(out.errors.total, 0, 'content-length right (multi-byte characters included)');
  const parsed = bodies.map((b) => ({ ...b, json: JSON.parse(b.body) as { tag: string; i: number; user: number; r: number } }));
  t.ok(parsed.every((b) => b.json.tag === 'généré' && b.type === 'application/json'));
  t.ok(new Set(parsed.map((b) => b.json.i)).size === parsed.length, 'a different body each time (ctx.i)');
  t.ok(
    parsed.every((b) => b.path === `/u${b.json.user}` && b.user === String(b.json.user)),
    'ctx.user is the variant’s user',
  );
  t.same(new Set(parsed.map((b) => b.json.user)), new Set([0, 1]), 'variants round robin');
});

t.test('generator bodies when the parent process registered tsx with tsx/esm/api (as bin/svc.mjs does)', async (t) => {
  let count = 0;
  const server = await serve((_req, body, res) => {
    if ((JSON.parse(body) as { tag?: string }).tag === 'généré') count++;
    json(res, 200, { ok: true });
  });
  t.teardown(() => server.close());
  const child = join(scenarioDir, 'child.mjs');
  writeFileSync(
    child,
    `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};
register();
const { runLoad } = await import(${JSON.stringify(new URL('../../../bench/harness/engine.ts', import.meta.url).href)});
const out = await runLoad(JSON.parse(process.argv[2]));
console.log(JSON.stringify({ requests: out.throughput.requests, errors: out.errors.total }));
`,
  );
  // No loader flags at all: plain node, tsx registered in-process only.
  const proc = spawn(process.execPath, [child, JSON.stringify(plan(server.origin, [generated()], { connections: 2, duration_s: 0.5 }))], {
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d));
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
  t.equal(code, 0, 'ran and exited by itself: no socket, thread or timer left');
  const result = JSON.parse(stdout) as { requests: number; errors: number };
  t.ok(result.requests > 0 && result.errors === 0, stdout);
  t.ok(count >= result.requests, 'the server saw generated bodies');
});

t.test('threads: 2 threads both send; their results merge', async (t) => {
  const byThread = new Map<number, number>();
  const server = await serve((_req, body, res) => {
    const { thread } = JSON.parse(body) as { thread: number };
    byThread.set(thread, (byThread.get(thread) ?? 0) + 1);
    json(res, 200, { ok: true });
  });
  t.teardown(() => server.close());
  const progress: LoadProgress[] = [];
  const out = await runLoad(plan(server.origin, [generated()], { threads: 2, connections: 4 }), { onProgress: (p) => progress.push(p) });

  t.same([...byThread.keys()].sort(), [0, 1], 'both threads sent');
  t.ok([...byThread.values()].every((n) => n > 10), JSON.stringify([...byThread]));
  t.equal(server.accepted, 4, '2 connections each');
  t.equal(out.per_request.gen?.requests, out.throughput.requests);
  t.equal(decodeHistogram(out.histogram).totalCount, out.throughput.requests);
  t.equal(out.timeline.length, 1);
  t.ok(Math.abs((out.timeline[0]?.rps ?? 0) - out.throughput.requests) <= 0.03 * out.throughput.requests, 'the second merges both threads');
  t.equal(progress.length, 1);
  const sent = [...byThread.values()].reduce((a, b) => a + b, 0);
  t.ok(sent >= out.throughput.requests, `${sent} sent ≥ ${out.throughput.requests} measured`);
});

t.test('timeouts: counted, the connection replaced', async (t) => {
  const server = await serve((req, _body, res) => req.url !== '/hang' && json(res, 200, { ok: true }));
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('hang', '/hang'), request('ok', '/ok', { weight: 9 })], { timeout_ms: 200, duration_s: 1.5 }));

  const hang = out.per_request.hang!;
  t.ok(hang.requests > 0, `${hang.requests} timed out`);
  t.same(hang.errors.by_code, { timeout: hang.requests });
  t.equal(hang.latency_ms.max, 0, 'no latency recorded for a request without an answer');
  t.ok((out.per_request.ok?.requests ?? 0) > hang.requests, 'answers go on meanwhile');
  // A new connection per timed-out one, but for those (at most 4) counted as the run ended.
  t.ok(server.accepted >= 4 + hang.requests - 4, `${server.accepted} connections for ${hang.requests} timeouts`);
});

t.test('open loop over the backlog cap: dropped requests are neither throughput nor errors.total', async (t) => {
  const server = await serve((_req, _body, res) => setTimeout(() => json(res, 200, { ok: true }), 20));
  t.teardown(() => server.close());
  // 5M req/s on 4 connections answering in 20 ms: the 1M backlog cap is passed within the second.
  const out = await runLoad(plan(server.origin, [request('a', '/a')], { mode: 'open', rate: 5_000_000, connections: 4, duration_s: 1 }));

  const o = out.open_loop!;
  const dropped = out.errors.by_code.dropped ?? 0;
  t.ok(dropped > 1_000_000, `${dropped} dropped`);
  t.equal(o.dropped, dropped, 'open_loop.dropped says how many');
  t.notOk(o.kept_up);
  const socket = out.errors.by_code.socket ?? 0;
  t.equal(out.throughput.requests, answered(out) + socket, 'requests: answers (and wire failures) only');
  t.ok(out.throughput.requests < 1000 && out.throughput.rps < 1000, `rps ${out.throughput.rps}`);
  t.equal(out.errors.total, socket, 'dropped not in errors.total');
  t.equal(out.per_request.a?.requests, out.throughput.requests);
  t.ok(
    out.timeline.every((p) => p.rps < 1000 && p.errors === socket),
    `the timeline without dropped: ${JSON.stringify(out.timeline)}`,
  );
});

t.test('a server that never answers: in-flight requests at the end are timeouts, not a clean run', async (t) => {
  t.equal(defaultTimeoutMs(1), 1000);
  t.equal(defaultTimeoutMs(0.2), 1000, 'at least 1 s');
  t.equal(defaultTimeoutMs(10), 10_000, 'the run’s duration');
  t.equal(defaultTimeoutMs(600), 30_000, 'at most 30 s');

  const server = await serve(() => undefined);
  t.teardown(() => server.close());
  // No timeout_ms: the default is the duration, so a request sent at the start and unanswered at
  // the end is a timeout.
  const out = await runLoad(plan(server.origin, [request('a', '/a'), request('b', '/b')], { duration_s: 1 }));
  t.equal(out.throughput.requests, 4, `one timeout per connection: ${JSON.stringify(out.throughput)}`);
  t.same(out.errors, { total: 4, by_status: {}, by_code: { timeout: 4 } });
  t.equal((out.per_request.a?.requests ?? 0) + (out.per_request.b?.requests ?? 0), 4, 'under their request names');
  t.ok((out.throughput.in_flight_at_end ?? -1) >= 0 && (out.throughput.in_flight_at_end ?? 5) <= 4, 'any resent since: in flight');
  t.equal(out.latency_ms.max, 0, 'no answer, no latency');
  t.same(out.timeline.map((p) => p.errors), [4], 'in the last second too');
});

t.test('a server slower than the run: requests younger than the timeout are in_flight_at_end', async (t) => {
  const server = await serve((_req, _body, res) => setTimeout(() => json(res, 200, { ok: true }), 5000).unref());
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('a', '/a')], { duration_s: 0.5, timeout_ms: 10_000 }));
  t.equal(out.throughput.requests, 0);
  t.equal(out.errors.total, 0);
  t.equal(out.throughput.in_flight_at_end, 4, 'the 4 requests waiting are visible');
});

t.test('refused connections: counted under the request meant for the connection', async (t) => {
  // Answers with `connection: close`, and stops listening once the first 4 connections are in:
  // every reconnection is refused.
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    if (++accepted === 4) server.close();
    socket.on('error', () => undefined);
    socket.on('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const out = await runLoad(plan(origin, [request('a', '/a', { weight: 3 }), request('b', '/b')], { duration_s: 1 }));

  const socket = out.errors.by_code.socket ?? 0;
  t.ok(socket >= 4, `${socket} refused attempts`);
  t.equal(out.errors.by_status['200'], 4);
  t.equal(out.throughput.requests, 4 + socket);
  const named = Object.values(out.per_request);
  t.equal(
    named.reduce((n, r) => n + r.requests, 0),
    out.throughput.requests,
    'per_request adds up to the total',
  );
  t.equal(
    named.reduce((n, r) => n + (r.errors.by_code.socket ?? 0), 0),
    socket,
    'every refused attempt under a request name',
  );
});

t.test('threads: the count really used is returned, capped at the connections and 2 × the cores', async (t) => {
  const cores = availableParallelism();
  t.equal(threadsFor(3, 2), 2, 'one connection each');
  t.equal(threadsFor(undefined, 8), 1, 'default 1');
  t.equal(threadsFor(0, 8), 1);
  t.equal(threadsFor(10_000, 100_000), 2 * cores, 'at most 2 per core');
  t.equal(threadsFor(2.7, 8), 2);

  const server = await serve((_req, _body, res) => json(res, 200, { ok: true }));
  t.teardown(() => server.close());
  const out = await runLoad(plan(server.origin, [request('a', '/a')], { threads: 3, connections: 2, duration_s: 0.5 }));
  t.equal(out.threads, Math.min(2, 2 * cores));
  t.equal(server.accepted, 2);
});

t.test('refused: https, and a target that does not listen', async (t) => {
  await t.rejects(runLoad(plan('https://127.0.0.1:1', [request('a', '/')])), { name: 'BenchError', exitCode: 2, message: /speaks http only; point it at the server itself/ });
  const server = await serve(() => undefined);
  const origin = server.origin;
  await server.close();
  const error = await runLoad(plan(origin, [request('a', '/')])).catch((e: unknown) => e);
  t.ok(error instanceof BenchError && error.exitCode === 1, String(error));
  t.match((error as Error).message, /cannot connect to 127\.0\.0\.1:\d+: ECONNREFUSED/);
});

t.test('a scenario module without that body function, or one that throws: a clear failure', async (t) => {
  const server = await serve((_req, _body, res) => json(res, 200, { ok: true }));
  t.teardown(() => server.close());
  const at = (index: number): PreparedRequest => ({ ...generated(), name: `gen-${index}`, generator: { module: scenarioFile, index } });
  await t.rejects(runLoad(plan(server.origin, [at(0)])), { name: 'BenchError', message: /requests\[0\]\.body is not a function/ });
  await t.rejects(runLoad(plan(server.origin, [at(2)])), { name: 'BenchError', message: /gen-2: the body function threw: no body today/ });
});

t.test('abort: rejects with the reason and closes every connection', async (t) => {
  const server = await serve((_req, _body, res) => json(res, 200, { ok: true }));
  t.teardown(() => server.close());
  const aborted = new AbortController();
  const reason = new Error('stop');
  const run = runLoad(plan(server.origin, [request('a', '/a')], { duration_s: 60 }), { signal: aborted.signal, onProgress: () => aborted.abort(reason) });
  await t.rejects(run, reason);
  await server.drained();
  t.equal(server.open.size, 0, 'no connection left open');
  await t.rejects(runLoad(plan(server.origin, [request('a', '/a')]), { signal: aborted.signal }), reason, 'an aborted signal: nothing starts');
});

// ---------------------------------------------------------------------------
// The response parser alone.

function parse(chunks: (string | Buffer)[], noBody = false): { responses: [number, string | null, boolean][]; errors: string[] } {
  const responses: [number, string | null, boolean][] = [];
  const errors: string[] = [];
  const sink: ResponseSink = {
    onResponse: (status, body, close) => responses.push([status, body === null ? null : body.toString(), close]),
    onProtocolError: (reason) => errors.push(reason),
  };
  const parser = new ResponseParser(sink);
  parser.noBody = noBody;
  for (const c of chunks) parser.execute(Buffer.from(c));
  parser.end();
  return { responses, errors };
}

const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello';
const envelope = '{"ok":false,"error":{"code":"SVC_ERR_X","message":"x"}}';

t.test('parser: several responses in one chunk, one split byte by byte', async (t) => {
  const bad = `HTTP/1.1 503 Service Unavailable\r\ncontent-length: ${envelope.length}\r\n\r\n${envelope}`;
  const expected = [
    [200, null, false],
    [503, envelope, false],
    [200, null, false],
  ];
  t.same(parse([ok + bad + ok]).responses, expected);
  t.same(parse([...(ok + bad + ok)]).responses, expected, 'byte by byte');
});

t.test('parser: chunked bodies (extensions, trailers, split anywhere)', async (t) => {
  const chunked = 'HTTP/1.1 500 Internal\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-trailer: 1\r\n\r\n';
  const expected = [[500, 'helloabcdefghijklmnopqrstuvwxyz', false]];
  t.same(parse([chunked]).responses, expected);
  for (let cut = 1; cut < chunked.length; cut++) t.same(parse([chunked.slice(0, cut), chunked.slice(cut)]).responses, expected, `cut at ${cut}`);
  t.same(parse([chunked + ok]).responses, [...expected, [200, null, false]], 'followed by another');
});

t.test('parser: connection: close, HTTP/1.0, a body up to the close, bodiless answers, 100 Continue', async (t) => {
  t.same(parse(['HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi']).responses, [[200, null, true]]);
  t.same(parse(['HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi']).responses, [[200, null, true]], 'HTTP/1.0 closes by default');
  t.same(parse(['HTTP/1.0 200 OK\r\nconnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi']).responses, [[200, null, false]]);
  t.same(parse(['HTTP/1.1 404 Not Found\r\n\r\nno ', 'length']).responses, [[404, 'no length', true]], 'until the close');
  t.same(parse(['HTTP/1.1 204 No Content\r\n\r\n' + ok]).responses, [
    [204, null, false],
    [200, null, false],
  ]);
  t.same(parse(['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n' + ok], true).responses, [
    [200, null, false],
    [200, null, false],
  ], 'the answer to HEAD has no body');
  t.same(parse(['HTTP/1.1 100 Continue\r\n\r\n' + ok]).responses, [[200, null, false]]);
});

t.test('parser: garbage is a protocol error', async (t) => {
  t.same(parse(['SSH-2.0-OpenSSH\r\n\r\n']).errors, ['not an HTTP response']);
  t.same(parse(['HTTP/1.1 2x0 OK\r\n\r\n']).errors, ['bad status line']);
  t.same(parse(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n']).errors, ['bad chunk size']);
  t.same(parse(['HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n']).errors, ['bad content-length']);
});

t.test('histogram: µs in, ms out, clamped, across threads as base64', async (t) => {
  const h = createHistogram();
  t.same(summarize(h), { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, min: 0, mean: 0, stdev: 0 }, 'empty');
  t.same(percentileSeries(h), []);
  for (let us = 1; us <= 1000; us++) recordUs(h, us);
  recordUs(h, 0.2);
  recordUs(h, 3600e6);
  const s = summarize(h);
  t.equal(s.min, 0.001, 'below 1 µs counts as 1 µs');
  t.equal(s.max, MAX_US / 1000, 'beyond 60 s counts as 60 s');
  t.ok(Math.abs(s.p50 - 0.5) <= 0.002 && Math.abs(s.p90 - 0.9) <= 0.002, JSON.stringify(s));
  const copy = decodeHistogram(encodeHistogram(h));
  t.equal(copy.totalCount, 1002);
  t.same(summarize(copy).p99, s.p99);
  const merged = createHistogram();
  merged.add(copy);
  merged.add(copy);
  t.equal(merged.totalCount, 2004, 'merges');
  t.same(
    percentileSeries(h).map(([p]) => p),
    [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.9, 99.99, 99.999, 100],
  );
});
