// The container provider behind a real `svc start` (podman through its docker-compatible wrapper): create → running,
// the preview answers on loopback, exec and logs, a container killed from outside → error within the check
// interval (and removed), stop and destroy leave no container and no network. Skipped — loudly — where podman cannot run.
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, Podman, podmanAvailable, post, startServer, type Server } from '../../kit/index.ts';
import { ContainerRunner } from '../../../actors/sandbox/container.ts';
import type { SandboxSettings } from '../../../actors/sandbox/index.ts';

t.setTimeout(230_000);
const why = await podmanAvailable();
if (why) {
  t.comment(`SKIPPED: container sandboxes are not run for real on this machine: ${why}`);
  t.pass('skipped: podman cannot run here');
} else {
  const podman = await Podman.open();
  const image = await podman.ensureNodeShellImage(['cat', 'id']);
  const SERVER = `require('node:http').createServer((q, s) => s.end('hi ' + process.env.SVC_SANDBOX_ID)).listen(Number(process.env.PORT), process.env.HOST, () => console.log('Server ready'));`;
  const files = { 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs' } }), 'server.cjs': SERVER };
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-sbx-ctr-'));
  const server: Server = await startServer({
    entry: fixture('sandbox-app.ts'),
    env: {
      SVC_DATA_DIR: dataDir,
      SVC_SANDBOX_TYPE: 'container',
      SVC_SANDBOX_CONTAINER_CLI: podman.wrapper(),
      SVC_SANDBOX_BASE_IMAGE: image,
      SVC_SANDBOX_MEMORY_LIMIT: '256Mi',
      SVC_SANDBOX_CHECK_INTERVAL_MS: '250',
    },
  });
  t.teardown(async () => {
    await server.stop('SIGKILL');
    // A test that failed midway leaves its sandboxes: their containers, networks and firewall rules go here.
    const runner = new ContainerRunner({ network_isolation: true } as SandboxSettings, { cli: [podman.wrapper()] });
    for (const id of existsSync(join(dataDir, 'sandboxes')) ? readdirSync(join(dataDir, 'sandboxes')) : []) await runner.removeOrphan(id).catch(() => undefined);
    await runner.close();
  });

  const call = async (name: string, body: unknown): Promise<any> => {
    const res = await post(`${server.url}/function/${name}`, body);
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data.result;
  };
  const until = async <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await probe();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const containers = async (id: string) => (await podman.ok(['ps', '-a', '-q', '--filter', `label=svc-sandbox-id=${id}`])).trim();
  const networks = async (id: string) => (await podman.ok(['network', 'ls', '-q', '--filter', `name=${id}`])).trim();

  t.test('a container sandbox runs, answers, runs commands, keeps its log; stop and destroy leave nothing', async (t) => {
    const made = await call('sbCreate', { user: 'ada', project: 'ctr', files });
    t.equal(made.type, 'container');
    const id = made.sandbox_id as string;
    const running = await until('running', async () => {
      const s = await call('sbGet', { id });
      if (s.state === 'error') throw new Error(s.error);
      return s.state === 'running' && s;
    });
    t.match(running.url, /^http:\/\/(127\.0\.0\.1|localhost):\d+$/, 'a loopback preview');
    t.equal(await (await fetch(running.url)).text(), `hi ${id}`);
    t.same(await call('sbExec', { id, command: 'echo hi; echo err >&2; exit 3' }), { stdout: 'hi\n', stderr: 'err\n', exit_code: 3 });
    t.same(await call('sbExec', { id, command: 'id -u; pwd' }), { stdout: '1000\n/app\n', stderr: '', exit_code: 0 });
    t.equal((await call('sbLogs', { id })).content, 'Server ready\n');
    await call('sbWrite', { id, path: 'note.txt', content: 'from the host' });
    t.same(await call('sbExec', { id, command: 'cat note.txt' }), { stdout: 'from the host', stderr: '', exit_code: 0 }, 'files written reach the container');
    const labels = JSON.parse(await podman.ok(['inspect', '--format', '{{json .Config.Labels}}', `svc-sbx-${id}`])) as Record<string, string>;
    t.match(labels, { 'svc-sandbox': 'true', 'svc-sandbox-id': id, 'svc-sandbox-user': 'ada', 'svc-sandbox-project': 'ctr' });
    t.equal((await call('sbStop', { id })).state, 'stopped');
    t.equal(await containers(id), '', 'no container after stop');
    t.equal(await networks(id), '', 'no network after stop');
    await call('sbDestroy', { id });
    await t.rejects(call('sbGet', { id }), /SANDBOX_NOT_FOUND/);
  });

  t.test('a container killed from outside is error within the check interval, and cleaned', async (t) => {
    const made = await call('sbCreate', { user: 'ada', project: 'kill', files });
    const id = made.sandbox_id as string;
    await until('running', async () => (await call('sbGet', { id })).state === 'running');
    await podman.ok(['kill', `svc-sbx-${id}`]);
    const killed = Date.now();
    const failed = await until('error', async () => {
      const s = await call('sbList', { user: 'ada' });
      const mine = (s as { sandbox_id: string; state: string; error?: string }[]).find((x) => x.sandbox_id === id);
      return mine?.state === 'error' && mine;
    });
    t.ok(Date.now() - killed < 5000, `error after ${Date.now() - killed} ms`);
    t.match(failed.error, /killed|exited/);
    t.equal(await containers(id), '', 'its container is removed');
    t.equal(await networks(id), '', 'its network is removed');
    await call('sbDestroy', { id });
  });
}
