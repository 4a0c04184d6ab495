// Sandboxes served by real `svc start` processes (local provider): a restart adopts what runs; two members on one
// Redis answer for each other's sandboxes, the TTL cleanup runs once, and kill -9 of the member supervising a
// sandbox hands it to the other (still reachable, then stopped through it) — never orphaned.
import t from 'tap';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { fixture, post, skipRedis, startCluster, startRedis, startServer, type Server } from '../../kit/index.ts';
import { killSandboxesOf } from '../../helpers/sandbox.ts';

const APP = fixture('sandbox-app.ts');
const SERVER = `require('node:http').createServer((q, s) => s.end('hi ' + process.env.SVC_SANDBOX_ID)).listen(Number(process.env.PORT), process.env.HOST, () => console.log('Server ready'));`;
const files = { 'package.json': JSON.stringify({ scripts: { dev: 'node server.cjs' } }), 'server.cjs': SERVER };

async function call(server: Server, name: string, body: unknown): Promise<any> {
  const res = await post(`${server.url}/function/${name}`, body);
  if (res.status !== 200) throw Object.assign(new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`), { status: res.status, body: res.body });
  return res.body.data.result;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => (c.destroy(), resolve(true)));
    c.once('error', () => resolve(false));
  });

/** The dev server of sandbox `id`: its pid and its parent's (the svc process that started it). */
function devServer(id: string): { pid: number; ppid: number } | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`SVC_SANDBOX_ID=${id}`)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== Number(name)) continue; // not the group leader: a child of the dev server
      return { pid: Number(name), ppid: Number(fields[1]) };
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return undefined;
}

const base = () => 45000 + 2 * Math.floor(Math.random() * 2000);

// The cases share nothing (a data folder, a Redis and a port range each): side by side, as most of their time is
// waiting on `svc start` processes and sandbox dev servers.
t.jobs = 3;

t.test('a restarted svc adopts the sandbox that kept running, and stops it', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-sbx-restart-'));
  const env = { SVC_DATA_DIR: dataDir, SVC_SANDBOX_PORT_BASE: String(base()), SVC_SANDBOX_CHECK_INTERVAL_MS: '200' };
  let server = await startServer({ entry: APP, env });
  t.teardown(async () => {
    await server.stop('SIGKILL');
    killSandboxesOf(dataDir);
  });
  const made = await call(server, 'sbCreate', { user: 'ada', project: 'p', files });
  await until('running', async () => (await call(server, 'sbGet', { id: made.sandbox_id })).state === 'running');
  const before = devServer(made.sandbox_id);
  t.ok(before, 'its dev server runs');
  await server.stop('SIGKILL');
  const url = made.url.replace('localhost', '127.0.0.1');
  t.equal(await (await fetch(url)).text(), `hi ${made.sandbox_id}`, 'the preview outlives svc');
  server = await startServer({ entry: APP, env });
  const after = await call(server, 'sbGet', { id: made.sandbox_id });
  t.equal(after.state, 'running', 'adopted, not restarted');
  t.equal(after.restarts, 0);
  t.equal(devServer(made.sandbox_id)?.pid, before?.pid, 'the same dev server');
  t.same(await call(server, 'sbExec', { id: made.sandbox_id, command: 'echo adopted' }), { stdout: 'adopted\n', stderr: '', exit_code: 0 });
  t.equal((await call(server, 'sbStop', { id: made.sandbox_id })).state, 'stopped');
  t.notOk(await listening(Number(new URL(url).port)), 'nothing listens after the stop');
  t.notOk(devServer(made.sandbox_id), 'no process of it is left');
  await call(server, 'sbDestroy', { id: made.sandbox_id });
});

t.test('two members: any answers for any sandbox; kill -9 of the supervising member hands it over', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 2, {
    redis,
    entry: APP,
    env: { SVC_SANDBOX_PORT_BASE: String(base()), SVC_SANDBOX_CHECK_INTERVAL_MS: '200', SVC_SANDBOX_CLEANUP_INTERVAL_SECONDS: '1' },
  });
  t.teardown(() => killSandboxesOf(cluster.dataDir));
  const [a, b] = cluster.members as [Server, Server];
  const made = await call(a, 'sbCreate', { user: 'ada', project: 'shared', files });
  const id = made.sandbox_id;
  await until('running through b', async () => (await call(b, 'sbGet', { id })).state === 'running');
  t.same((await call(b, 'sbList', { user: 'ada' })).map((s: { sandbox_id: string }) => s.sandbox_id), [id], 'b lists what a made');
  t.same(await call(b, 'sbExec', { id, command: 'echo from b' }), { stdout: 'from b\n', stderr: '', exit_code: 0 });
  t.same((await call(b, 'sbFiles', { id })).files, ['package.json', 'server.cjs']);

  // Racing creates through both members: max_per_user (3) holds across them.
  const racing = await Promise.allSettled([a, b, a, b].map((m, i) => call(m, 'sbCreate', { user: 'ada', project: `r${i}`, files })));
  t.equal(racing.filter((r) => r.status === 'fulfilled').length, 2, 'two more, not four');
  for (const r of racing) if (r.status === 'rejected') t.equal((r.reason as { body: any }).body.error.code, 'SANDBOX_LIMIT');
  for (const r of racing) if (r.status === 'fulfilled') await call(b, 'sbDestroy', { id: r.value.sandbox_id });

  // kill -9 of the member whose process started the dev server.
  const dev = devServer(id);
  t.ok(dev, 'its dev server runs');
  const owner = [a, b].find((m) => m.proc.pid === dev?.ppid);
  t.ok(owner, 'started by one of the members');
  const survivor = owner === a ? b : a;
  await owner!.stop('SIGKILL');
  const url = made.url.replace('localhost', '127.0.0.1');
  const taken = await until('answered by the survivor', async () => {
    const s = await call(survivor, 'sbGet', { id });
    return ['running', 'error', 'stopped'].includes(s.state) && s;
  });
  if (taken.state === 'running') {
    t.equal(await (await fetch(url)).text(), `hi ${id}`, 'still reachable');
    t.same(await call(survivor, 'sbExec', { id, command: 'echo survived' }), { stdout: 'survived\n', stderr: '', exit_code: 0 });
  } else t.comment(`the survivor cleaned it: ${taken.state} (${taken.error})`);
  t.equal((await call(survivor, 'sbStop', { id })).state === 'stopped' || taken.state !== 'running', true);
  t.notOk(await listening(Number(new URL(url).port)), 'nothing of it is left listening');
  t.notOk(devServer(id), 'no process of it is left');
  await call(survivor, 'sbDestroy', { id });
});

t.test('the TTL cleanup runs once across the members', { skip: skipRedis }, async (t) => {
  const redis = await startRedis(t);
  const cluster = await startCluster(t, 2, {
    redis,
    entry: APP,
    env: { SVC_SANDBOX_PORT_BASE: String(base()), SVC_SANDBOX_CHECK_INTERVAL_MS: '200', SVC_SANDBOX_CLEANUP_INTERVAL_SECONDS: '0.5', SVC_SANDBOX_TTL_SECONDS: '2' },
  });
  t.teardown(() => killSandboxesOf(cluster.dataDir));
  const [a, b] = cluster.members as [Server, Server];
  const made = await call(a, 'sbCreate', { user: 'ada', project: 'ttl', files });
  const lines = (id: string) => [a, b].map((m) => m.output().split('\n').filter((line) => line.includes('"sandbox cleanup"') && line.includes(id)).length);
  await until('removed by the cleanup', async () => lines(made.sandbox_id).some((n) => n > 0));
  const res = await post(`${b.url}/function/sbGet`, { id: made.sandbox_id });
  t.equal(res.body.error.code, 'SANDBOX_NOT_FOUND', 'gone for every member');
  // Later windows pass (a second sandbox expires and is removed): the first is still removed once, not once per member.
  const later = await call(b, 'sbCreate', { user: 'ada', project: 'later', files });
  await until('the later one removed', async () => lines(later.sandbox_id).some((n) => n > 0));
  const counts = lines(made.sandbox_id);
  t.equal(counts[0]! + counts[1]!, 1, `removed once (by member ${counts[0] ? 'a' : 'b'}), not by both`);
  t.notOk(devServer(made.sandbox_id), 'no process of it is left');
});
