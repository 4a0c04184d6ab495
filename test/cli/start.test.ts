// `svc start` as a user runs it: clear errors, --faux, port fallback, main.ts default, production secrets.
import t from 'tap';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { runSvc as svc, startServer } from '../kit/index.ts';

// Each case starts a real svc process: on a busy two-core machine the file takes longer than tap's default 120 s.
t.setTimeout(300_000);

const entry = new URL('../fixtures/http-app.ts', import.meta.url).pathname;


const APP = `import { entry, Root, T, Walker } from 'svc';
export class Hello extends Walker {
  static access = 'pub' as const;
  @entry(Root) hi() { this.report('hello'); }
}
export class Me extends Walker {
  @entry(Root) me() { this.report({ user: this.caller.userId, role: this.caller.role }); }
}
`;

t.test('a missing entry file is one clear line and exit code 1', async (t) => {
  const r = await svc(['start', 'does-not-exist.ts']);
  t.equal(r.code, 1);
  t.match(r.stderr, /^svc: entry file not found: does-not-exist\.ts\n$/);
  const dir = t.testdir({});
  const none = await svc(['start'], { cwd: dir });
  t.equal(none.code, 1);
  t.match(none.stderr, /no main\.ts in the current folder/);
});

t.test('a syntax error names the file and line, without a stack trace', async (t) => {
  const dir = t.testdir({ 'app.ts': `${APP}\nexport const broken = (;\n` });
  const r = await svc(['start', join(dir, 'app.ts'), '--workers', '1']);
  t.equal(r.code, 1);
  t.match(r.stderr, /app\.ts:\d+:\d+: /);
  t.notMatch(r.stderr, /\n\s+at /);
});

t.test('a bad export is one clear message', async (t) => {
  const dir = t.testdir({
    'reserved.ts': `import { Node, T } from 'svc';\nexport class Bad extends Node { static has = T.Object({ connect: T.String() }); }\n${APP}`,
    'empty.ts': 'export const nothing = 1;\n',
    'throws.ts': `${APP}\nthrow new Error('top-level failure in the app');\n`,
  });
  const reserved = await svc(['start', join(dir, 'reserved.ts'), '--workers', '1', '--port', '0']);
  t.equal(reserved.code, 1);
  t.match(reserved.stderr, /svc: Bad\.has declares "connect", a name reserved by svc/);
  const empty = await svc(['start', join(dir, 'empty.ts'), '--workers', '1', '--port', '0']);
  t.equal(empty.code, 1);
  t.match(empty.stderr, /exports no walker and no function/);
  const throws = await svc(['start', join(dir, 'throws.ts'), '--workers', '1', '--port', '0']);
  t.equal(throws.code, 1);
  t.match(throws.stderr, /top-level failure in the app/);
  for (const r of [reserved, empty, throws]) t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
});

t.test('--faux prints the generated endpoints and exits', async (t) => {
  const r = await svc(['start', entry, '--faux']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /POST \/walker\/Echo\s+walker Echo/);
  t.match(r.stdout, /GET \/items\/\{item_id\}\s+walker Item/);
  t.match(r.stdout, /POST \/walker\/Whoami\s+walker Whoami\s+\(token\)/);
  t.match(r.stdout, /POST \/function\/add\s+function add/);
  t.notMatch(r.stdout, /Server ready/);
  // Microservice mode changes nothing: no gateway and no module process is started, the entry's endpoints are printed.
  const micro = await svc(['start', entry, '--faux'], { env: { SVC_MICROSERVICES_ENABLED: 'true' } });
  t.equal(micro.code, 0, micro.stderr);
  t.match(micro.stdout, /POST \/walker\/Echo\s+walker Echo/);
  t.notMatch(micro.stdout + micro.stderr, /gateway|Server ready/i);
});

t.test('main.ts in the current folder is the default entry; --host is the bind address', async (t) => {
  const dir = t.testdir({ 'main.ts': APP });
  const server = await startServer({ entry: '', noEntry: true, cwd: dir });
  t.teardown(() => server.stop());
  t.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await fetch(`${server.url}/walker/Hello`, { method: 'POST' });
  t.match(await res.json(), { ok: true, data: { reports: ['hello'] } });
});

t.test('a port in use: the next free one, and it says so', async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => blocker.close());
  const taken = (blocker.address() as { port: number }).port;
  const server = await startServer({ entry, port: taken });
  t.teardown(() => server.stop());
  t.not(server.port, taken);
  t.match(server.output(), new RegExp(`port ${taken} is in use; using ${server.port}`));
  t.equal((await fetch(`${server.url}/healthz`)).status, 200);
});

t.test('production refuses to start without a JWT secret, and with a short one', async (t) => {
  const noSecret = await svc(['start', entry, '--profile', 'prod', '--port', '0', '--workers', '1'], { env: { JWT_SECRET: '' } });
  t.equal(noSecret.code, 1);
  t.match(noSecret.stderr, /JWT_SECRET .* is required in production/);
  const envProd = await svc(['start', entry, '--port', '0', '--workers', '1'], { env: { JWT_SECRET: '', NODE_ENV: 'production' } });
  t.equal(envProd.code, 1);
  const short = await svc(['start', entry, '--profile', 'prod', '--port', '0', '--workers', '1'], { env: { JWT_SECRET: 'short' } });
  t.equal(short.code, 1);
  t.match(short.stderr, /shorter than 32/);
});

t.test('in development without a secret, one is generated once and kept under .svc/', async (t) => {
  const dir = t.testdir({ 'main.ts': APP });
  const first = await startServer({ entry: '', noEntry: true, cwd: dir, env: { JWT_SECRET: '' } });
  await first.stop();
  t.match(first.output(), /development secret generated in .*\.svc\/jwt_secret/);
  const second = await startServer({ entry: '', noEntry: true, cwd: dir, env: { JWT_SECRET: '' } });
  t.teardown(() => second.stop());
  t.match(second.output(), /development secret from .*\.svc\/jwt_secret/);
  const printed = await svc(['token', 'carol', 'main.ts', '--create', '--role', 'admin'], { cwd: dir, env: { JWT_SECRET: '', SVC_DATA_DIR: second.dataDir } });
  t.equal(printed.code, 0, printed.stderr);
  const token = printed.stdout.trim();
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  const res = await fetch(`${second.url}/walker/Me`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  t.match(await res.json(), { ok: true, data: { reports: [{ user: 'carol', role: 'admin' }] } }, 'svc token signs with the server secret');
});

t.test('SIGTERM on an idle server: exit 0', async (t) => {
  const server = await startServer({ entry });
  t.equal(await server.stop('SIGTERM'), 0);
  t.match(server.output(), /svc: stopped/);
});

t.test('a second process on a data folder already served refuses to start; the lock goes with the process, kill -9 included', async (t) => {
  const first = await startServer({ entry });
  t.teardown(() => first.stop('SIGKILL'));
  const env = { SVC_DATA_DIR: first.dataDir, JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789' };
  const second = await svc(['start', entry, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], { env });
  t.equal(second.code, 1, 'exit code 1');
  t.match(second.stderr, new RegExp(`svc: another svc process \\(pid ${first.proc.pid}\\) is serving the data in ${first.dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'one clear line naming the holder');
  t.notMatch(second.stdout, /Server ready/);
  t.equal((await fetch(`${first.url}/health`)).status, 200, 'the first one serves on');
  await first.stop('SIGKILL');
  const third = await startServer({ entry, env });
  t.teardown(() => third.stop());
  t.equal((await fetch(`${third.url}/health`)).status, 200, 'after kill -9 of the holder, a new process starts at once');
});
