// `svc start --scale`, `svc scale status|destroy|rollback` (and `svc status`, `svc destroy`) as a user runs them,
// against the FAKE Kubernetes API server of the test kit (no real API server runs here): the exit codes, the lines a
// user reads, destroy's confirmation read from stdin (y, n, end of input, --yes), status --watch seeing a
// transition, the refusals made before any request, and a manual rollback.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, runSvc, startFakeKubeApi, standInIngress, type FakeKubeApi, type StandInIngress } from '../kit/index.ts';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const BIN = new URL('../../bin/svc.mjs', import.meta.url).pathname;

interface Project {
  api: FakeKubeApi;
  ingress: StandInIngress;
  entry: string;
  env: Record<string, string>;
  configure(extra?: string, image?: string): void;
  svc(args: string[], stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

async function project(t: Test, options: Parameters<typeof startFakeKubeApi>[0] = {}): Promise<Project> {
  const api = await startFakeKubeApi(options);
  t.teardown(() => api.close());
  const ingress = await standInIngress();
  t.teardown(() => ingress.close());
  const dir = mkdtempSync(join(tmpdir(), 'svc-scale-apply-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(fixture('deploy/app.ts'), join(dir, 'app.ts'));
  const configure = (extra = '', image = 'registry.example.com/shop:v1') =>
    writeFileSync(join(dir, 'svc.toml'), `[scale.orchestrator]\napp_name = "shop"\nnamespace = "shop"\nimage = "${image}"\ningress_node_port = ${ingress.port}\nprogress_deadline_seconds = 2\n${extra}\n`);
  configure();
  const env = { KUBECONFIG: api.kubeconfig, HOME: dir };
  const svc = (args: string[], stdin?: string) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: { ...process.env, ...env, SVC_ACCESS_LOG: 'false' } });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d));
      p.stderr.on('data', (d: Buffer) => (stderr += d));
      p.on('exit', (code) => resolve({ code, stdout, stderr }));
      if (stdin === undefined) p.stdin.end();
      else p.stdin.end(stdin);
    });
  return { api, ingress, entry: join(dir, 'app.ts'), env, configure, svc };
}

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

t.test('fake Kubernetes API server: destroy asks y on stdin; n and end of input send nothing; y deletes and waits', async (t) => {
  const p = await project(t);
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  const before = p.api.writes().length;
  const no = await p.svc(['scale', 'destroy', 'app.ts'], 'n\n');
  t.equal(no.code, 1);
  t.match(no.stdout, /Namespace shop, and everything in it/);
  t.match(no.stdout, /PersistentVolumeClaim shop\/data-shop-docdb-0 .*the data in it is deleted/);
  t.match(no.stdout, /Not confirmed: nothing was deleted/);
  const eof = await p.svc(['destroy', 'app.ts'], '');
  t.equal(eof.code, 1, 'end of input is no');
  t.equal(p.api.writes().length, before, 'nothing was sent');
  const yes = await p.svc(['scale', 'destroy', 'app.ts'], 'y\n');
  t.equal(yes.code, 0, yes.stderr);
  t.match(yes.stdout, /Destroyed: shop and namespace shop/);
  t.notOk(p.api.get('v1', 'Namespace', undefined, 'shop'), 'gone when it says so');
  const again = await p.svc(['scale', 'destroy', 'app.ts', '--yes']);
  t.equal(again.code, 0);
  t.match(again.stdout, /nothing to delete/);
});

t.test('refusals before any request: --enable-tls without domain, --dry-run with --enable-tls, no cluster configured', async (t) => {
  const p = await project(t);
  const tls = await p.svc(['start', 'app.ts', '--scale', '--enable-tls']);
  t.equal(tls.code, 2, tls.stderr);
  t.match(tls.stderr, /\[scale\.orchestrator\] domain is not set/);
  t.match(tls.stderr, /cert_manager_email is not set/);
  const dry = await p.svc(['start', 'app.ts', '--scale', '--dry-run', '--enable-tls']);
  t.equal(dry.code, 0, dry.stderr);
  t.match(dry.stderr, /--dry-run ignores --enable-tls/);
  t.same(p.api.requests, [], 'the fake API server got no request');
  const none = await runSvc(['start', p.entry, '--scale'], { env: { KUBECONFIG: '', HOME: join(p.entry, '..') } });
  t.equal(none.code, 1);
  t.match(none.stderr, /no cluster configured/);
});

t.test('fake Kubernetes API server: rollback by hand, to the previous revision and --to N', async (t) => {
  const p = await project(t);
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  p.configure('', 'registry.example.com/shop:v2');
  t.equal((await p.svc(['start', 'app.ts', '--scale'])).code, 0);
  const image = () => (p.api.get('apps/v1', 'Deployment', 'shop', 'shop') as Any).spec.template.spec.containers[0].image;
  t.equal(image(), 'registry.example.com/shop:v2');
  const back = await p.svc(['scale', 'rollback', 'app.ts']);
  t.equal(back.code, 0, back.stderr);
  t.match(back.stdout, /Rolled back: shop from revision 2 to revision 1/);
  t.equal(image(), 'registry.example.com/shop:v1');
  const forward = await p.svc(['scale', 'rollback', 'app.ts', '--to', '2']);
  t.equal(forward.code, 0, forward.stderr);
  t.equal(image(), 'registry.example.com/shop:v2');
  const missing = await p.svc(['scale', 'rollback', 'app.ts', '--to', '9']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /revision 9 is not kept/);
});
