// `svc sandbox` against the sandboxes of a running `svc start` (same project, same data folder): list, exec, logs,
// stop, destroy, cleanup; usage errors; and the settings svc start refuses.
import t from 'tap';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, post, runSvc, startServer, type SvcRun } from '../kit/index.ts';
import { killSandboxesOf } from '../helpers/sandbox.ts';

const APP = fixture('sandbox-app.ts');
// The two cases share nothing (a data folder each): side by side.
t.jobs = 2;
const SERVER = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), process.env.HOST, () => console.log('Server ready ✓'));`;
const files = { 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs' } }), 'server.cjs': SERVER };

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('svc sandbox list | exec | logs | stop | destroy | cleanup', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-sbx-cli-'));
  const env = { SVC_DATA_DIR: dataDir, SVC_SANDBOX_PORT_BASE: String(46000 + 2 * Math.floor(Math.random() * 1000)), SVC_SANDBOX_CHECK_INTERVAL_MS: '200' };
  const server = await startServer({ entry: APP, env });
  t.teardown(async () => {
    await server.stop('SIGKILL');
    killSandboxesOf(dataDir);
  });
  const made = (await post(`${server.url}/function/sbCreate`, { user: 'ada', project: 'cli', files })).body.data.result;
  const id = made.sandbox_id as string;
  await until('running', async () => (await post(`${server.url}/function/sbGet`, { id })).body.data.result.state === 'running');
  const svc = (...args: string[]) => runSvc(['sandbox', ...args], { env });

  // Commands that change nothing the others look at (exec's output is not the sandbox's log), side by side:
  // each `svc` run is seconds of start-up on a busy machine.
  const [list, ada, bob, exec, logs] = await Promise.all([
    svc('list'),
    svc('list', '--json', '--user', 'ada'),
    svc('list', '--json', '--user', 'bob'),
    svc('exec', id, '--', 'echo', 'hi;', 'echo', 'err', '>&2;', 'exit', '3'),
    svc('logs', id),
  ]);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, new RegExp(`${id}\\s+running\\s+ada/cli\\s+http://localhost:\\d+`));
  const json = JSON.parse(ada.stdout);
  t.equal(json[0].sandbox_id, id);
  t.same(JSON.parse(bob.stdout), []);

  t.equal(exec.code, 3, 'the command\'s exit code');
  t.equal(exec.stdout, 'hi\n');
  t.equal(exec.stderr, 'err\n');

  t.equal(logs.code, 0);
  t.equal(logs.stdout, 'Server ready ✓\n');

  const stop = await svc('stop', id);
  t.equal(stop.code, 0, stop.stderr);
  t.match(stop.stdout, `${id} stopped`);
  t.equal((await post(`${server.url}/function/sbGet`, { id })).body.data.result.state, 'stopped', 'the server sees the stop');
  const follow = await svc('logs', id, '--follow');
  t.equal(follow.code, 0, 'logs --follow ends when the sandbox is stopped');

  const destroy = await svc('destroy', id);
  t.equal(destroy.code, 0, destroy.stderr);
  t.notOk(existsSync(join(dataDir, 'sandboxes', id)), 'its folder is gone');
  const gone = await svc('exec', id, '--', 'true');
  t.equal(gone.code, 1);
  t.match(gone.stderr, 'SANDBOX_NOT_FOUND');

  const cleanup = await svc('cleanup', '--json');
  t.equal(cleanup.code, 0, cleanup.stderr);
  t.same(JSON.parse(cleanup.stdout), { removed: [], orphans: [], folders: [] });

  const [unknown, noId, noCommand] = await Promise.all([svc('frobnicate'), svc('logs'), svc('exec', 'sbx-x')]);
  t.equal(unknown.code, 2, 'an unknown action is a usage error');
  t.equal(noId.code, 2, 'an id is needed');
  t.equal(noCommand.code, 2, 'a command is needed');
});

t.test('svc start refuses [scale.sandbox] settings it cannot use, naming the key', async (t) => {
  const cases = [
    [{ SVC_SANDBOX_MEMORY_LIMIT: 'lots' }, /memory_limit/],
    [{ SVC_SANDBOX_TYPE: 'orchestrator', SVC_SANDBOX_PROXY_MODE: 'true' }, /proxy_mode needs domain_template/],
    [{ SVC_SANDBOX_TYPE: 'orchestrator', SVC_SANDBOX_NAMESPACE: 'Not A Namespace' }, /namespace must be a DNS label/],
    [{ SVC_SANDBOX_PORT_BASE: '65530' }, /port pool/],
    [{ SVC_SANDBOX_TYPE: 'container', SVC_SANDBOX_CONTAINER_CLI: '/nonexistent/docker' }, /container_cli/],
  ] as const;
  // Side by side, a data folder each (two first starts in one folder would both make its admin account):
  // each refusal comes only after most of a start's work, and they are independent.
  const runs = await Promise.all(cases.map(([env]) => runSvc(['start', APP], { env: { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-sbx-cfg-')), ...env, SVC_PORT: '0' } })));
  cases.forEach(([env, says], i) => {
    const run = runs[i] as SvcRun;
    t.not(run.code, 0, `${JSON.stringify(env)} refused`);
    t.match(run.stdout + run.stderr, says);
  });
});
