// podExec (kube/exec.ts) against the fake Kubernetes API server's exec subresource: the WebSocket
// channel protocol, stdout/stderr/exit codes, stdin with backpressure (a 5 MB tar into /app), timeouts and aborts
// that kill the command, the refusals (401, 404, 400), the pod's folder, and a scripted exec.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { connectCluster, KubeApiError, podExec, type Kube } from '../../kube/index.ts';
import { startFakeKubeApi, type FakeKubeApi, type FakeKubeOptions } from '../kit/index.ts';

const NS = 'svc-sandboxes';

/** A fake with a Running pod `box` in svc-sandboxes, and svc's client on it. */
async function setup(t: Test, options: FakeKubeOptions = {}, pod: Record<string, any> = {}): Promise<{ api: FakeKubeApi; kube: Kube }> {
  const api = await startFakeKubeApi(options);
  t.teardown(() => api.close());
  const kube = connectCluster({ KUBECONFIG: api.kubeconfig });
  await kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await kube.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'box', namespace: NS },
    spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'node:22', env: [{ name: 'GREETING', value: 'hello' }, { name: 'WORK', value: '/app/work' }] }] },
    ...pod,
  });
  await running(api, 'box');
  return { api, kube };
}

async function running(api: FakeKubeApi, name: string): Promise<void> {
  await api.until(() => api.get('v1', 'Pod', NS, name)?.status?.containerStatuses?.[0]?.state?.running, 5000, `${name} running`);
}

/** Run a command, collecting its output. */
async function run(kube: Kube, command: string[], options: Parameters<typeof podExec>[4] = {}, pod = 'box') {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const code = await podExec(kube, NS, pod, command, { onStdout: (c) => out.push(c), onStderr: (c) => err.push(c), ...options });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), bytes: Buffer.concat(out).length };
}

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  throw new Error('it resolved');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('exec against the fake API server: stdout, stderr and exit codes; the pod folder stands for its filesystem', async (t) => {
  const { api, kube } = await setup(t);
  const root = api.podRoot(NS, 'box');
  t.match(await run(kube, ['sh', '-c', 'echo out; echo err >&2; exit 3']), { code: 3, stdout: 'out\n', stderr: 'err\n' });
  t.match(await run(kube, ['true']), { code: 0, stdout: '', stderr: '' });
  t.match(await run(kube, ['sh', '-c', 'echo "$GREETING $WORK $HOME"; pwd']), { code: 0, stdout: `hello ${root}/app/work ${root}\n${root}\n` }, 'container env (paths rewritten), HOME and cwd are the pod folder');
  t.equal((await run(kube, ['sh', '-c', "mkdir -p /app/x && echo hi > '/app/x/f' && cat /app/x/f /usr/app 2>/dev/null; echo /apps"])).stdout, 'hi\n/apps\n', '/app at a path boundary only');
  t.equal(readFileSync(join(root, 'app', 'x', 'f'), 'utf8'), 'hi\n', 'written into the pod folder');
  t.equal((await run(kube, ['sh', '-c', 'head -c 3000000 /dev/zero'])).bytes, 3_000_000, 'large output arrives whole');
  const missing = await rejection(run(kube, ['no-such-command-here']));
  t.ok(missing instanceof KubeApiError, 'a command that cannot start: the runtime error');
  t.match(missing, { status: 500, reason: 'InternalError', message: /executable file not found in \$PATH/ });
  const recorded = api.requests.filter((r) => r.path === `/api/v1/namespaces/${NS}/pods/box/exec`);
  t.match(recorded[0], { method: 'GET', query: { stdout: 'true', stderr: 'true' }, exec: { command: ['sh', '-c', 'echo out; echo err >&2; exit 3'], container: 'main', protocol: 'v5.channel.k8s.io' } });
});

t.test('exec against the fake API server: a 5 MB tar on stdin lands in /app (from a Buffer and from a stream)', async (t) => {
  const { api, kube } = await setup(t);
  const dir = mkdtempSync(join(tmpdir(), 'svc-exec-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const src = join(dir, 'src');
  mkdirSync(join(src, 'sub'), { recursive: true });
  const big = randomBytes(5 * 1024 * 1024);
  writeFileSync(join(src, 'big.bin'), big);
  writeFileSync(join(src, 'sub', 'small.txt'), 'small\n');
  const tarFile = join(dir, 'app.tar');
  t.equal(spawnSync('tar', ['-c', '-f', tarFile, '-C', src, '.']).status, 0);
  const tar = readFileSync(tarFile);
  t.ok(tar.length > 5 * 1024 * 1024);
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const root = api.podRoot(NS, 'box');
  t.match(await run(kube, ['tar', '-x', '-C', '/app'], { stdin: tar }), { code: 0, stderr: '' });
  t.equal(sha(readFileSync(join(root, 'app', 'big.bin'))), sha(big), 'the big file arrived whole');
  t.equal(readFileSync(join(root, 'app', 'sub', 'small.txt'), 'utf8'), 'small\n');
  t.match(await run(kube, ['sh', '-c', 'mkdir -p /tmp/s && tar -x -C /tmp/s && wc -c < /tmp/s/big.bin'], { stdin: createReadStream(tarFile) }), { code: 0, stdout: `${big.length}\n` }, 'a stream');
  t.match(await run(kube, ['sh', '-c', 'head -c 10'], { stdin: tar }), { code: 0, bytes: 10 }, 'a command that stops reading early still answers');
});

t.test('exec against the fake API server: a timeout and an abort close the connection and kill the command', async (t) => {
  const { api, kube } = await setup(t);
  const root = api.podRoot(NS, 'box');
  const timedOut = await rejection(run(kube, ['sh', '-c', 'echo $$ > /tmp/pid; exec sleep 30'], { timeoutMs: 500 }));
  t.equal(timedOut.name, 'TimeoutError');
  const pid = Number(readFileSync(join(root, 'tmp', 'pid'), 'utf8'));
  await api.until(() => !alive(pid), 5000, 'the timed-out command killed');
  const abort = new AbortController();
  let aborted = 0;
  const started = run(kube, ['sh', '-c', 'echo $$; exec sleep 30'], {
    signal: abort.signal,
    onStdout: (c) => {
      aborted = Number(c.toString());
      abort.abort();
    },
  });
  t.equal((await rejection(started)).name, 'AbortError');
  t.ok(aborted > 0);
  await api.until(() => !alive(aborted), 5000, 'the aborted command killed');
  t.equal((await rejection(podExec(kube, NS, 'box', ['true'], { signal: abort.signal }))).name, 'AbortError', 'already aborted');
  // A command that does not read its stdin: the fake's socket is paused, and still sees the client leave.
  const stuck = await rejection(run(kube, ['sh', '-c', 'echo $$ > /tmp/pid2; exec sleep 30'], { stdin: Buffer.alloc(8 * 1024 * 1024), timeoutMs: 1000 }));
  t.equal(stuck.name, 'TimeoutError');
  const pid2 = Number(readFileSync(join(root, 'tmp', 'pid2'), 'utf8'));
  await api.until(() => !alive(pid2), 10_000, 'the command not reading stdin killed');
});

t.test('exec against the fake API server: refusals (401, 404, 400) and a deleted pod', async (t) => {
  const { api, kube } = await setup(t);
  const dir = mkdtempSync(join(tmpdir(), 'svc-exec-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const wrong = join(dir, 'config');
  writeFileSync(wrong, readFileSync(api.kubeconfig, 'utf8').replace('token: fake-token', 'token: wrong'));
  const unauthorized = await rejection(podExec(connectCluster({ KUBECONFIG: wrong }), NS, 'box', ['true']));
  t.ok(unauthorized instanceof KubeApiError);
  t.match(unauthorized, { status: 401, reason: 'Unauthorized' });
  t.match(await rejection(podExec(kube, NS, 'nope', ['true'])), { status: 404, reason: 'NotFound', message: /pods "nope" not found/ });
  t.match(await rejection(podExec(kube, NS, 'box', ['true'], { container: 'other' })), { status: 400, message: /container other is not valid for pod box/ });
  await kube.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pulling', namespace: NS }, spec: { containers: [{ name: 'main', image: 'nope:1' }] } });
  api.scriptPod(NS, 'pulling', { state: 'ImagePullBackOff' });
  await api.until(() => api.get('v1', 'Pod', NS, 'pulling')?.status?.containerStatuses?.[0]?.state?.waiting, 5000);
  t.match(await rejection(podExec(kube, NS, 'pulling', ['true'])), { status: 400, message: /container not found \("main"\)/ });
  const plain = await fetch(`${api.url}/api/v1/namespaces/${NS}/pods/box/exec?command=true`, { headers: { authorization: 'Bearer fake-token' } });
  t.equal(plain.status, 400, 'exec without an upgrade');

  // A deleted pod: its command killed (137), its folder gone.
  const root = api.podRoot(NS, 'box');
  writeFileSync(join(root, 'app', 'kept'), 'x');
  let said!: () => void;
  const saidSomething = new Promise<void>((r) => (said = r));
  const sleeping = podExec(kube, NS, 'box', ['sh', '-c', 'echo up; exec sleep 30'], { onStdout: () => said() });
  await saidSomething;
  await kube.delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'box', namespace: NS } });
  t.equal(await sleeping, 137, 'killed with the pod');
  await api.until(() => !existsSync(join(root, 'app', 'kept')), 5000, 'the pod folder removed');
});

t.test('exec against the fake API server: a scripted exec, and the v4 protocol', async (t) => {
  const { api, kube } = await setup(t, {
    exec: (pod, container, command, io) => {
      if (command[0] === 'echo-stdin')
        return (async () => {
          io.stderr(`${pod.metadata.name}/${container}\n`);
          for await (const chunk of io.stdin) io.stdout(chunk);
          return 7;
        })();
      if (command[0] === 'explode') return Promise.reject(new Error('the runtime broke'));
      return undefined;
    },
  });
  t.match(await run(kube, ['echo-stdin'], { stdin: Buffer.from('abc') }), { code: 7, stdout: 'abc', stderr: 'box/main\n' });
  t.match(await rejection(run(kube, ['explode'])), { status: 500, message: /the runtime broke/ });
  t.match(await run(kube, ['sh', '-c', 'echo real']), { code: 0, stdout: 'real\n' }, 'undefined: run for real');

  // v4: the same frames, no close signal.
  const ws = new WebSocket(`${api.url.replace('http', 'ws')}/api/v1/namespaces/${NS}/pods/box/exec?command=sh&command=-c&command=echo%20v4%3B%20exit%204&stdout=true&stderr=true`, ['v4.channel.k8s.io'], {
    headers: { authorization: 'Bearer fake-token' },
  });
  const frames: Buffer[] = [];
  ws.on('message', (d: Buffer) => frames.push(d));
  await new Promise((r) => ws.on('close', r));
  t.equal(ws.protocol, 'v4.channel.k8s.io');
  t.same(
    frames.map((f) => f[0]),
    [1, 3],
  );
  t.equal(frames[0]?.subarray(1).toString(), 'v4\n');
  t.match(JSON.parse(String(frames[1]?.subarray(1))), { status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '4' }] } });
  const old = new WebSocket(`${api.url.replace('http', 'ws')}/api/v1/namespaces/${NS}/pods/box/exec?command=true`, ['channel.k8s.io'], { headers: { authorization: 'Bearer fake-token' } });
  const refused = await new Promise<number>((r) => old.on('unexpected-response', (_req, res) => r(res.statusCode ?? 0)));
  t.equal(refused, 400, 'an unserved channel protocol');
});
