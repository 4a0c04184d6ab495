// Browsers ask for /favicon.ico on every page (/docs, /redoc, the app's own): with none in
// public/ the answer is 204 and no body, not a 404, never an error in the log, and no access-log
// line when health checks are kept quiet; with public/favicon.ico that file is served.
import t from 'tap';
import { startServer } from '../../kit/index.ts';

const APP = `import { entry, Root, Walker } from 'svc';
export class Hello extends Walker {
  static access = 'pub' as const;
  @entry(Root) hi() { this.report('hello'); }
}
`;
// An icon's first bytes (ICONDIR: reserved 0, type 1, one image) and a few more: served byte for byte.
const ICON = Buffer.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 0xde, 0xad, 0xbe, 0xef]);
// Three servers, one after the other: on a busy two-core machine that takes a while.
t.setTimeout(300_000);

t.test('no public/favicon.ico: 204, no body, nothing in the log with quiet health checks', async (t) => {
  const dir = t.testdir({ 'main.ts': APP, public: { 'hello.txt': 'hi\n' } });
  const server = await startServer({ entry: '', noEntry: true, cwd: dir, env: { SVC_ACCESS_LOG: 'true', SVC_SUPPRESS_HEALTH_CHECK_LOGS: 'true' } });
  t.teardown(() => server.stop());
  const res = await fetch(`${server.url}/favicon.ico`);
  t.equal(res.status, 204);
  t.equal(await res.text(), '', 'no body');
  const head = await fetch(`${server.url}/favicon.ico`, { method: 'HEAD' });
  t.equal(head.status, 204, 'HEAD too');
  // A request that is logged, after them: once its line is out, theirs would be too.
  t.equal((await fetch(`${server.url}/hello.txt`)).status, 200);
  await server.waitFor(/"path":"\/hello\.txt"/);
  t.notMatch(server.output(), /favicon/, 'no access-log line, no error for /favicon.ico');
  t.notMatch(server.output(), /"level":(50|60)/, 'nothing logged as an error');
});

t.test('the access log, when it logs everything, says 204 at info level', async (t) => {
  const dir = t.testdir({ 'main.ts': APP });
  const server = await startServer({ entry: '', noEntry: true, cwd: dir, env: { SVC_ACCESS_LOG: 'true' } });
  t.teardown(() => server.stop());
  t.equal((await fetch(`${server.url}/favicon.ico`)).status, 204, 'no public/ at all: 204 as well');
  const line = await server.waitFor(/"path":"\/favicon\.ico"/);
  t.match(JSON.parse(line.slice(line.indexOf('{'))), { level: 30, status: 204, route: '/favicon.ico' });
});

t.test('public/favicon.ico is served as a file', async (t) => {
  const dir = t.testdir({ 'main.ts': APP, public: { 'favicon.ico': ICON } });
  const server = await startServer({ entry: '', noEntry: true, cwd: dir });
  t.teardown(() => server.stop());
  const res = await fetch(`${server.url}/favicon.ico`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'image/x-icon');
  t.same(Buffer.from(await res.arrayBuffer()), ICON, 'byte for byte');
});
