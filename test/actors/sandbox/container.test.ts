// The container provider for real, through podman (test/kit/podman.ts): a sandbox runs a real dev server in a container
// of a locally made Node image with a shell, is reached at its preview URL from the host, runs commands, keeps its log;
// its limits hold (memory, user), its network reaches nothing (the host's services on IPv4 and IPv6 link-local, another
// sandbox), and stop/release leave no container, network or firewall rule behind. Skipped — loudly — where podman
// cannot run.
import t from 'tap';
import { ORCHESTRATOR_DEFAULTS } from '../../helpers/sandbox.ts';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerRunner, dockerBytes, dockerCpus, findContainerCli, wholeUtf8 } from '../../../actors/sandbox/container.ts';
import { logPath } from '../../../actors/sandbox/project.ts';
import type { SandboxRecord, SandboxSettings } from '../../../actors/sandbox/types.ts';
import { Podman, podmanAvailable } from '../../kit/index.ts';

t.setTimeout(230_000);

t.test('quantities, UTF-8 boundaries, finding the CLI (no engine needed)', async (t) => {
  t.equal(dockerBytes('512Mi'), '512m');
  t.equal(dockerBytes('2Gi'), '2g');
  t.equal(dockerBytes('1000'), '1000');
  t.equal(dockerCpus('500m'), '0.5');
  t.equal(dockerCpus('2'), '2');
  t.throws(() => dockerBytes('lots'), { code: 'SANDBOX_FAILED' });
  const text = Buffer.from('a✓é😀');
  // Every cut of the text ends on a whole character.
  for (let n = 0; n <= text.length; n++) {
    const whole = wholeUtf8(text.subarray(0, n));
    t.ok(Buffer.from(text.subarray(0, whole).toString('utf8')).equals(text.subarray(0, whole)), `cut at ${n} → ${whole}`);
    t.ok(n - whole < 4);
  }
  t.equal(wholeUtf8(text), text.length);
  // A docker client with no engine behind it (its `info` fails) is passed over for a podman that answers.
  const bin = mkdtempSync(join(tmpdir(), 'svc-container-cli-'));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  writeFileSync(join(bin, 'docker'), '#!/bin/sh\necho "Cannot connect to the Docker daemon" >&2; exit 1\n', { mode: 0o755 });
  writeFileSync(join(bin, 'podman'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  t.same(await findContainerCli(join(bin, 'podman')), [join(bin, 'podman')], 'a configured wrapper that answers');
  t.same(await findContainerCli(`sh ${join(bin, 'podman')}`), ['sh', join(bin, 'podman')], 'a configured command line');
  t.equal(await findContainerCli(join(bin, 'docker')), undefined, 'a configured command whose engine does not answer');
  const path = process.env.PATH;
  process.env.PATH = bin;
  try {
    t.same(await findContainerCli(''), [join(bin, 'podman')]);
    rmSync(join(bin, 'podman'));
    t.equal(await findContainerCli(''), undefined, 'none answers');
  } finally {
    process.env.PATH = path;
  }
});

const why = await podmanAvailable();
if (why) t.comment(`SKIPPED: the container sandbox runner is not run for real on this machine: ${why}`);

const SERVER = `const http = require('http');
http.createServer((req, res) => res.end('hello from ' + process.env.SVC_SANDBOX_ID)).listen(Number(process.env.PORT), process.env.HOST, () => console.log('Server ready — héllo ✓'));
`;

/** Prints `connected`, `timeout` or the error code of a TCP connect from inside a sandbox (2 s at most). */
const PROBE = `const [host, port] = process.argv.slice(2);
const s = require('net').connect({ host, port: Number(port) });
s.setTimeout(2000, () => { console.log('timeout'); process.exit(2); });
s.on('connect', () => { console.log('connected'); process.exit(0); });
s.on('error', (e) => { console.log(e.code); process.exit(1); });
`;

/** The processes of a sandbox, one a line: pid, state, command line. */
const PS = `const fs = require('fs');
for (const p of fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) {
  try {
    const stat = fs.readFileSync('/proc/' + p + '/stat', 'utf8');
    console.log(p, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0], fs.readFileSync('/proc/' + p + '/cmdline', 'utf8').split('\\0').join(' '));
  } catch {}
}
`;

t.test('container sandboxes through podman', { skip: why ?? false }, async (t) => {
  const podman = await Podman.open();
  const image = await podman.ensureNodeShellImage(['id']);
  const cli = [podman.wrapper()];
  const root = mkdtempSync(join(tmpdir(), 'svc-sbx-container-'));
  const settings = (over: Partial<SandboxSettings> = {}): SandboxSettings => ({
    enabled: true,
    type: 'container',
    base_image: image,
    memory_limit: '128Mi',
    cpu_limit: '500m',
    network_isolation: true,
    ttl_seconds: 3600,
    max_per_user: 3,
    security_context: true,
    storage_limit: '64Mi',
    container_cli: '',
    readiness_timeout_seconds: 30,
    port_base: 5180,
    port_count: 10,
    port_stride: 2,
    check_interval_ms: 2000,
    cleanup_interval_seconds: 300,
    max_restarts: 3,
    pids_limit: 128,
    root,
    ...ORCHESTRATOR_DEFAULTS,
    ...over,
  });
  const isolated = new ContainerRunner(settings(), { cli });
  const open = new ContainerRunner(settings({ network_isolation: false, security_context: false }), { cli });

  const made: SandboxRecord[] = [];
  const record = (): SandboxRecord => {
    const id = `sbx-${randomBytes(6).toString('hex')}`;
    const dir = join(root, id);
    mkdirSync(join(dir, 'app'), { recursive: true });
    writeFileSync(join(dir, 'app', 'package.json'), JSON.stringify({ name: 'preview', private: true, scripts: { dev: 'node server.js' } }));
    writeFileSync(join(dir, 'app', 'server.js'), SERVER);
    writeFileSync(join(dir, 'app', 'probe.js'), PROBE);
    writeFileSync(join(dir, 'app', 'ps.js'), PS);
    const at = new Date().toISOString();
    const r: SandboxRecord = { sandbox_id: id, user: 'ada', project: 'preview', state: 'pending', url: '', type: 'container', created_at: at, updated_at: at, restarts: 0, host: 'here', dir, port: 0 };
    made.push(r);
    return r;
  };
  const mangle = (cmd: 'iptables' | 'ip6tables'): string => execFileSync(cmd, ['-w', '5', '-t', 'mangle', '-S'], { encoding: 'utf8' });
  const rules = (): string => `${mangle('iptables')}\n${existsSync('/proc/sys/net/ipv6') ? mangle('ip6tables') : ''}`;
  t.teardown(async () => {
    try {
      await isolated.close();
      for (const r of made) await isolated.removeOrphan(r.sandbox_id).catch((e: Error) => t.comment(`cleanup of ${r.sandbox_id}: ${e.message}`));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  /** prepare + start + ready, polled with a deadline: the record as the supervisor would hold it, and the time it took. */
  const launch = async (runner: ContainerRunner, r: SandboxRecord): Promise<{ r: SandboxRecord; ms: number }> => {
    const began = Date.now();
    Object.assign(r, await runner.prepare(r));
    Object.assign(r, await runner.start(r));
    const deadline = Date.now() + 30_000;
    while (!(await runner.ready(r))) {
      if (Date.now() > deadline) throw new Error(`${r.sandbox_id} not ready within 30 s; log: ${(await runner.logs(r, 0)).content}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return { r, ms: Date.now() - began };
  };
  const fetchText = (url: string): Promise<string> =>
    new Promise((resolve, reject) => {
      get(url, { agent: false, timeout: 5000 }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body));
      }).on('error', reject);
    });
  const run = async (runner: ContainerRunner, r: SandboxRecord, command: string, timeoutMs = 20_000, signal?: AbortSignal) => {
    let stdout = '';
    let stderr = '';
    const code = await runner.exec(r, command, { timeoutMs, ...(signal ? { signal } : {}), onStdout: (d) => (stdout += d.toString()), onStderr: (d) => (stderr += d.toString()) });
    return { code, stdout, stderr };
  };
  const probe = async (runner: ContainerRunner, r: SandboxRecord, host: string, port: number): Promise<string> => (await run(runner, r, `node probe.js '${host}' ${port}`)).stdout.trim();
  const listen = async (host: string, options: { ipv6Only?: boolean } = {}): Promise<{ server: Server; port: number }> => {
    const server = createServer((s) => s.on('error', () => undefined).end('host service\n'));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen({ port: 0, host, ...options }, () => resolve()));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return { server, port: (server.address() as { port: number }).port };
  };

  const a = (await launch(isolated, record())).r;
  const b = (await launch(isolated, record())).r;
  const c = (await launch(open, record())).r;

  t.test('the dev server answers at its preview URL on the host', async (t) => {
    t.match(a.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    t.equal(a.port, 8000, 'the port inside the container');
    t.equal(a.network, `svc-sbx-${a.sandbox_id}`);
    t.match(a.address, /^\d+\.\d+\.\d+\.\d+$/);
    t.equal(await fetchText(a.url), `hello from ${a.sandbox_id}`);
    t.equal(await fetchText(c.url), `hello from ${c.sandbox_id}`, 'without isolation: a port published on 127.0.0.1');
    t.ok(await isolated.alive(a));
  });

  t.test('exec streams output and answers the exit code; commands run as the sandbox user', async (t) => {
    t.same(await run(isolated, a, 'echo hi; echo err >&2; exit 3'), { code: 3, stdout: 'hi\n', stderr: 'err\n' });
    t.equal((await run(isolated, a, 'id -u')).stdout, '1000\n', 'security_context: user 1000');
    t.equal((await run(open, c, 'id -u')).stdout, '0\n', 'without it: the image user');
    t.equal((await run(isolated, a, 'pwd; echo $SVC_SANDBOX_ID')).stdout, `/app\n${a.sandbox_id}\n`);
  });

  t.test('a command past its timeout is killed with everything it started; an abort too', async (t) => {
    const began = Date.now();
    await t.rejects(run(isolated, a, 'node -e "setInterval(() => {}, 1000)" & sleep 300', 1500), { code: 'SANDBOX_TIMEOUT' });
    t.ok(Date.now() - began < 10_000, `killed in ${Date.now() - began} ms`);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    await t.rejects(run(isolated, a, 'sleep 301', 20_000, controller.signal), { name: 'AbortError' });
    const left = await run(isolated, a, 'node ps.js');
    t.notMatch(left.stdout, /setInterval|sleep 30/, 'no process of those commands is left in the container');
    // Their orphans are reaped by the container's first process: no zombie stays (polled: reaping follows the kill).
    const zombies = async (): Promise<string[]> => (await run(isolated, a, 'node ps.js')).stdout.split('\n').filter((line) => / Z /.test(line));
    const deadline = Date.now() + 5000;
    let count = await zombies();
    while (count.length > 0 && Date.now() < deadline) count = await zombies();
    t.same(count, [], 'no zombie');
  });

  t.test('logs: byte offsets, whole characters only', async (t) => {
    const first = await isolated.logs(a, 0);
    t.match(first.content, 'Server ready — héllo ✓');
    t.equal(first.offset, Buffer.byteLength(first.content));
    // A character written in two halves is answered once whole.
    const check = Buffer.from('✓\n');
    appendFileSync(logPath(a), check.subarray(0, 1));
    const half = await isolated.logs(a, first.offset);
    t.same(half, { content: '', offset: first.offset });
    appendFileSync(logPath(a), check.subarray(1));
    t.same(await isolated.logs(a, first.offset), { content: '✓\n', offset: first.offset + check.length });
    t.same(await isolated.logs(a, 1e9), { content: '', offset: 1e9 });
  });

  t.test('labels and limits reach the container', async (t) => {
    const labels = JSON.parse(await podman.ok(['inspect', '-f', '{{json .Config.Labels}}', `svc-sbx-${a.sandbox_id}`])) as Record<string, string>;
    t.match(labels, { 'svc-sandbox': 'true', 'svc-sandbox-id': a.sandbox_id, 'svc-sandbox-user': 'ada', 'svc-sandbox-project': 'preview' });
    const host = JSON.parse(await podman.ok(['inspect', '-f', '{{json .HostConfig}}', `svc-sbx-${a.sandbox_id}`])) as Record<string, unknown>;
    t.match(host, { Memory: 128 * 1024 * 1024, NanoCpus: 500_000_000, PidsLimit: 128 });
    t.ok(Array.isArray(host.CapDrop) && (host.CapDrop as string[]).length > 0, 'capabilities dropped');
  });

  t.test('the memory limit stops a memory hog', async (t) => {
    const hog = await run(isolated, a, `node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))"`);
    t.not(hog.code, 0, `the hog ended with ${hog.code}`);
    t.ok(hog.code === 137 || /memory/i.test(hog.stderr), 'killed (137) or out of memory');
  });

  t.test('an isolated sandbox reaches no host service and no other sandbox', async (t) => {
    const v4 = await listen('0.0.0.0');
    const v6 = await listen('::', { ipv6Only: true });
    const nets = JSON.parse(await podman.ok(['inspect', '-f', '{{json .NetworkSettings.Networks}}', `svc-sbx-${a.sandbox_id}`])) as Record<string, { Gateway: string }>;
    const gateway = nets[a.network as string]?.Gateway as string;
    t.match(gateway, /^\d+\.\d+\.\d+\.\d+$/);
    const [net] = JSON.parse(await podman.ok(['network', 'inspect', a.network as string])) as Array<{ network_interface: string }>;
    const linkLocal = networkInterfaces()[net?.network_interface as string]?.find((i) => i.family === 'IPv6' && i.address.startsWith('fe80'))?.address;
    const hostInterfaces = Object.entries(networkInterfaces()).flatMap(([name, list]) => (name.startsWith('cni-') || name.startsWith('podman') ? [] : (list ?? [])));
    const hostAddress = hostInterfaces.find((i) => i.family === 'IPv4' && !i.internal)?.address;

    // The control: a sandbox without isolation reaches the same service through its gateway, so the refusals below are the fence's.
    const cNets = JSON.parse(await podman.ok(['inspect', '-f', '{{json .NetworkSettings.Networks}}', `svc-sbx-${c.sandbox_id}`])) as Record<string, { Gateway: string }>;
    const cGateway = Object.values(cNets)[0]?.Gateway as string;
    t.equal(await probe(open, c, cGateway, v4.port), 'connected', 'control: the default network reaches the host service');

    t.equal(await probe(isolated, a, gateway, v4.port), 'timeout', 'not the host through the gateway');
    if (hostAddress) t.equal(await probe(isolated, a, hostAddress, v4.port), 'timeout', `not the host at ${hostAddress}`);
    if (linkLocal) t.equal(await probe(isolated, a, `${linkLocal}%eth0`, v6.port), 'timeout', 'not the host through IPv6 link-local');
    else t.comment('the bridge has no IPv6 link-local address here: that path is not tried');
    t.equal(await probe(isolated, a, b.address as string, 8000), 'timeout', 'not another isolated sandbox');
    t.equal(await probe(open, c, b.address as string, 8000), 'timeout', 'nor is an isolated sandbox reached from a sandbox without isolation');
    t.equal(await fetchText(b.url), `hello from ${b.sandbox_id}`, 'while the host reaches it at its preview URL');
  });

  t.test('the relay is rebuilt by a later process; the firewall rules by alive', async (t) => {
    await isolated.close();
    await t.rejects(fetchText(a.url), 'the relay died with "its process"');
    const later = new ContainerRunner(settings(), { cli });
    await later.adopt(a);
    t.equal(await fetchText(a.url), `hello from ${a.sandbox_id}`, 'same URL again');
    t.ok(await later.ready(a), 'ready in the later process (its log says so)');
    const tag = `"svc-sandbox ${a.sandbox_id}"`;
    const expected = existsSync('/proc/sys/net/ipv6') ? 4 : 2;
    t.equal(rules().split(tag).length - 1, expected, 'two rules for IPv4, two for IPv6');
    // As a firewall reload would: the rules are gone.
    for (const cmd of ['iptables', 'ip6tables'] as const) {
      for (const line of mangle(cmd).split('\n').filter((l) => l.includes(tag))) {
        const argv = (line.replace(/^-A /, '-D ').match(/"[^"]*"|\S+/g) ?? []).map((x) => x.replace(/^"|"$/g, ''));
        execFileSync(cmd, ['-w', '5', '-t', 'mangle', ...argv]);
      }
    }
    t.equal(rules().split(tag).length - 1, 0);
    t.ok(await later.alive(a));
    t.equal(rules().split(tag).length - 1, expected, 'put back');
    await later.close();
  });

  t.test('a container killed from outside is not alive and says how it ended', async (t) => {
    await podman.ok(['kill', `svc-sbx-${b.sandbox_id}`]);
    t.notOk(await isolated.alive(b));
    t.same(await isolated.exitOf(b), { signal: 'SIGKILL' });
    await t.rejects(run(isolated, b, 'true'), { code: 'SANDBOX_NOT_RUNNING' });
  });

  t.test('orphans: what no record names, removed with its network and rules', async (t) => {
    const found = await isolated.orphans(new Set(made.filter((r) => r !== b).map((r) => r.sandbox_id)));
    t.ok(found.includes(b.sandbox_id));
    t.notOk(found.includes(a.sandbox_id));
    await isolated.removeOrphan(b.sandbox_id);
    t.equal((await podman.ok(['ps', '-a', '--filter', `name=svc-sbx-${b.sandbox_id}`, '--format', '{{.Names}}'])).trim(), '');
    t.notMatch(await podman.ok(['network', 'ls', '--format', '{{.Name}}']), `svc-sbx-${b.sandbox_id}`);
    t.notMatch(rules(), `svc-sandbox ${b.sandbox_id}`);
  });

  t.test('stop and release leave nothing behind; both are idempotent', async (t) => {
    for (const [runner, r] of [[isolated, a], [open, c]] as const) {
      const began = Date.now();
      await runner.stop(r);
      t.ok(Date.now() - began < 2000, `stopped in ${Date.now() - began} ms: the dev server heard SIGTERM`);
      t.notOk(await runner.alive(r));
      t.equal((await podman.ok(['ps', '-a', '--filter', `name=svc-sbx-${r.sandbox_id}`, '--format', '{{.Names}}'])).trim(), '', 'no container');
      await runner.release(r);
      await runner.stop(r);
      await runner.release(r);
      t.notMatch(await podman.ok(['network', 'ls', '--format', '{{.Name}}']), `svc-sbx-${r.sandbox_id}`, 'no network');
      t.notMatch(rules(), `svc-sandbox ${r.sandbox_id}`, 'no firewall rule');
      await t.rejects(fetchText(r.url), 'the preview is gone');
    }
  });

  t.test('figures: create → ready, exec round trip', async (t) => {
    const p50 = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
    const ready: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { r, ms } = await launch(isolated, record());
      ready.push(ms);
      if (i === 4) {
        const trips: number[] = [];
        for (let j = 0; j < 10; j++) {
          const began = performance.now();
          await run(isolated, r, 'true');
          trips.push(performance.now() - began);
        }
        t.comment(`exec round trip: p50 ${p50(trips).toFixed(0)} ms (${trips.map((x) => x.toFixed(0)).join(', ')})`);
      }
      await isolated.stop(r);
      await isolated.release(r);
    }
    t.comment(`create → ready (isolated, security context): p50 ${p50(ready)} ms (${ready.join(', ')})`);
    t.pass();
  });
});
