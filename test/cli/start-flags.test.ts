// `svc start` flags as a user reads and types them: the help says the defaults without cac's
// noise, ports outside 0–65535 are one clear line, 0 workers is one per core, and the start
// line says which threads serve HTTP.
import t from 'tap';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { loadUws } from '../../transports/http/index.ts';
import { runSvc as svc, startServer } from '../kit/index.ts';
import { EVERY_KIND } from '../helpers/every-kind-app.ts';

const entry = new URL('../fixtures/http-app.ts', import.meta.url).pathname;
// Every case starts a real `svc` process: on a busy two-core machine that takes a while.
t.setTimeout(300_000);


t.test('svc start --help: the default port, 0 for any free port, 0 workers for one per core, no "(default: true)"', async (t) => {
  const r = await svc(['start', '--help']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /-p, --port <port>\s+Port, default 8000\b.*0: any free port/);
  t.match(r.stdout, /--workers <n>\s+Worker threads, default 0: one per core/);
  t.match(r.stdout, /-n, --no-client\s+Serve the API only/);
  t.match(r.stdout, /-m, --main\s+Treat the entry/);
  t.notMatch(r.stdout, /\(default: /, 'no default printed by cac');
});

t.test('a port outside 0–65535, from a flag or the configuration: one line, exit 1', async (t) => {
  const dir = t.testdir({ 'svc.toml': '[scale.server]\nport = 99999\n', 'app.ts': 'export const nothing = 1;\n' });
  const cases: [string, string[], Record<string, string>?][] = [
    ['--port 65536', [entry, '--port', '65536']],
    ['--port=-1', [entry, '--port=-1']],
    ['--port abc', [entry, '--port', 'abc']],
    ['--api_port 70000', [entry, '--api_port', '70000']],
    ['SVC_PORT=65536', [entry], { SVC_PORT: '65536' }],
    ['[scale.server] port = 99999', [join(dir, 'app.ts')]],
  ];
  const runs = await Promise.all(cases.map(([, args, env]) => svc(['start', ...args, '--workers', '1'], { env: env ?? {} })));
  for (const [i, r] of runs.entries()) {
    const name = cases[i]?.[0];
    t.equal(r.code, 1, `${name}: exit 1`);
    t.match(r.stderr, /^svc: invalid port .+: a port is 0–65535 \(0: any free port\)\n$/, `${name}: ${r.stderr.trim()}`);
    t.notMatch(r.stdout, /Server ready/);
  }
});

t.test('--port 0 serves on a free port; one worker thread serves HTTP and says so', async (t) => {
  const server = await startServer({ entry, port: 0, workers: 1 });
  t.teardown(() => server.stop());
  t.not(server.port, 0);
  t.match(server.output(), /svc: 1 worker thread, serving HTTP, transport (uWebSockets\.js|node:http)\n/);
  t.equal((await fetch(`${server.url}/healthz`)).status, 200);
});

t.test('--workers 0: one per core, as [scale.server] workers = 0', async (t) => {
  const server = await startServer({ entry, workers: 0 });
  t.teardown(() => server.stop());
  const n = Math.max(1, availableParallelism());
  t.match(server.output(), new RegExp(`svc: ${n} worker threads?[ ,]`));
});

t.test('node:http: every worker thread runs walkers, only w1 serves HTTP — and the start line says so', async (t) => {
  const server = await startServer({ entry, workers: 2, env: { SVC_TRANSPORT: 'node' } });
  t.teardown(() => server.stop());
  t.match(server.output(), /svc: 2 worker threads running walkers, one of them \(w1\) serving HTTP, transport node:http\n/);
  t.equal((await fetch(`${server.url}/healthz`)).status, 200);
});

t.test('uWebSockets.js: every worker thread serves HTTP', { skip: loadUws() instanceof Error ? 'uWebSockets.js does not load here' : false }, async (t) => {
  const server = await startServer({ entry, workers: 2, env: { SVC_TRANSPORT: 'uws' } });
  t.teardown(() => server.stop());
  t.match(server.output(), /svc: 2 worker threads, each serving HTTP, transport uWebSockets\.js\n/);
});


t.test('--faux lists hooks, subscriptions, webhooks and WebSocket walkers, each marked', async (t) => {
  const dir = t.testdir({ 'app.ts': EVERY_KIND });
  const r = await svc(['start', join(dir, 'app.ts'), '--faux']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^POST \/walker\/Hello\s+walker Hello$/m);
  t.match(r.stdout, /^HOOK _RequireKey\s+hook walker, before every route and WebSocket upgrade$/m, 'the hook');
  t.match(r.stdout, /^WS \/ws\/Announce\s+websocket walker Announce$/m, 'the WebSocket walker');
  t.match(r.stdout, /^POST \/webhook\/GithubPush\s+webhook walker GithubPush\s+\(API key \+ signature\)$/m, 'the webhook walker');
  t.match(r.stdout, /^EVENT order\.created\s+→ subscription onOrder$/m, 'the subscription');
  t.match(r.stdout, /^4 endpoints, 1 hook, 1 subscription$/m, 'hooks and subscriptions are counted apart');
  t.notMatch(r.stdout, /_RequireKey.*\/walker\//, 'a hook has no route');
});
