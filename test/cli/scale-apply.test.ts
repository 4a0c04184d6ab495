// `svc start --scale` and `svc scale status` (and the older `svc status`) as a user runs them, against the FAKE
// Kubernetes API server of the test kit (no real API server runs here): the lines a user reads, the exit codes,
// status --json, and status --watch seeing a transition.
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BIN, project } from './scale-project.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any

t.test('fake Kubernetes API server: deploy, status, status --json, and the older svc status', async (t) => {
  const p = await project(t);
  const deployed = await p.svc(['start', 'app.ts', '--scale']);
  t.equal(deployed.code, 0, deployed.stderr);
  t.match(deployed.stdout, `Deployment complete: http://127.0.0.1:${p.ingress.port}/\n`);
  t.match(deployed.stderr, /app: 1\/1 pods of revision 1 updated, 1 ready/, 'a progress line');
  t.notMatch(deployed.stderr, /password|JWT_SECRET=/i, 'no credential in the output');
  const status = await p.svc(['scale', 'status', 'app.ts']);
  t.equal(status.code, 0, status.stderr);
  t.match(status.stdout, /app\s+Running\s+1\/1/);
  t.match(status.stdout, /Redis\s+Running/);
  const json = await p.svc(['status', 'app.ts', '--json']);
  t.equal(json.code, 0, json.stderr);
  const report = JSON.parse(json.stdout) as Any;
  t.ok(JSON.stringify(report).includes('"Running"'), 'the older form, as JSON');
});

t.test('fake Kubernetes API server: status --watch sees a pod start crash-looping', async (t) => {
  const p = await project(t);
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  const child = spawn(process.execPath, [BIN, 'scale', 'status', 'app.ts', '--watch', '--interval', '100'], { cwd: join(p.entry, '..'), env: { ...process.env, ...p.env } });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  const seen = (re: RegExp) =>
    new Promise<void>((resolve) => {
      const check = () => (re.test(out) ? resolve() : undefined);
      child.stdout.on('data', (d: Buffer) => ((out += d), check()));
      check();
    });
  await seen(/app\s+Running/);
  const pod = p.api.list('v1', 'Pod', 'shop').find((x: Any) => x.metadata.labels['app.kubernetes.io/component'] === 'app') as Any;
  p.api.scriptPod('shop', pod.metadata.name, { state: 'CrashLoopBackOff', exitCode: 2 });
  await seen(/app\s+Restarting/);
  t.pass('the transition to Restarting was printed');
});

