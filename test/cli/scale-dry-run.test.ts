// `svc start --scale --dry-run` as a user runs it: the plan and the manifests (golden files, byte-stable), redaction,
// refusals with exit 2, and a dry run that sends no request (a fake Kubernetes API server — no real one runs here —
// records zero), writes no file and starts no process (a recording fake container CLI on PATH is never run).
// Regenerate the golden files after a deliberate change: SVC_UPDATE_GOLDEN=1 npx tap test/cli/scale-dry-run.test.ts
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, runSvc, startFakeKubeApi } from '../kit/index.ts';

const golden = (name: string): string => new URL(`./golden/${name}`, import.meta.url).pathname;
const APP = fixture('deploy/app.ts');
/** The environment of a user with nothing of svc's set (no DOCDB_URI or KV_URL of a local run leaking in). */
const ENV = { STRIPE_KEY: 'sk_test_not_a_real_key_4242', SVC_SCALE_REGISTRY: 'registry.example.com/team' };

// The cases share nothing they write (a dry run writes no file; the others copy the app to a folder of their own):
// side by side, as each waits on `svc` runs.
t.jobs = 3;

/** The image tag is a hash of the app and of svc's own files: any commit changes it, so the golden files name it TAG. */
const untag = (s: string): string => s.replace(/:[0-9a-f]{12}\b/g, ':TAG');

function checkGolden(t: Test, name: string, actual: string): void {
  if (process.env.SVC_UPDATE_GOLDEN === '1') writeFileSync(golden(name), actual);
  t.equal(actual, readFileSync(golden(name), 'utf8'), `${name} as recorded (SVC_UPDATE_GOLDEN=1 rewrites it after a deliberate change)`);
}

function treeHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const s = statSync(p);
      h.update(`${p}\0${s.mtimeMs}\0`);
      if (s.isDirectory()) walk(p);
      else h.update(readFileSync(p));
    }
  };
  walk(dir);
  return h.digest('hex');
}

t.test('defaults: the plan, and the YAML byte-stable between two runs', async (t) => {
  const plan = await runSvc(['start', APP, '--scale', '--dry-run'], { clean: true, env: ENV });
  t.equal(plan.code, 0, plan.stderr);
  checkGolden(t, 'plan-defaults.txt', untag(plan.stdout));
  t.match(plan.stdout, /url: +http:\/\/<node address>:30080\//);
  t.match(plan.stderr, /planned in \d+ ms/);
  const a = await runSvc(['start', APP, '--scale', '--dry-run', '--show-yaml'], { clean: true, env: ENV });
  const b = await runSvc(['start', APP, '--scale', '--dry-run', '--show-yaml'], { clean: true, env: ENV });
  t.equal(a.code, 0, a.stderr);
  t.equal(a.stdout, b.stdout, 'the same input gives the same bytes (generated credentials are redacted)');
  checkGolden(t, 'manifests-defaults.yaml', untag(a.stdout));
  t.match(a.stderr, /Plan for svc in namespace default/, 'the plan goes to stderr beside the YAML');
  t.notMatch(a.stdout, /Plan for/, 'stdout is the YAML alone (pipe it to kubectl)');
});

t.test('every optional part on (--profile full)', async (t) => {
  const r = await runSvc(['start', APP, '--scale', '--dry-run', '--show-yaml', '--profile', 'full'], { clean: true, env: ENV });
  t.equal(r.code, 0, r.stderr);
  checkGolden(t, 'manifests-full.yaml', r.stdout);
  for (const kind of ['StatefulSet', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy', 'Middleware', 'IngressRoute']) t.match(r.stdout, new RegExp(`kind: ${kind}\\n`), `a ${kind}`);
  t.match(r.stdout, /image: mongo:/, 'docdb_engine = "mongo"');
  t.match(r.stdout, /registry\.example\.com\/team\/shop:1\.4\.2/, 'the configured image');
  t.notMatch(r.stdout, /sk_test_not_a_real_key_4242/, 'a configured secret is redacted');
});

t.test('--show-secrets shows Secret values, and only in Secrets', async (t) => {
  const r = await runSvc(['start', APP, '--scale', '--dry-run', '--show-yaml', '--show-secrets', '--profile', 'full'], { clean: true, env: ENV });
  t.equal(r.code, 0, r.stderr);
  const docs = r.stdout.split(/^---\n/m).filter(Boolean);
  const secrets = docs.filter((d) => /^kind: Secret$/m.test(d));
  t.ok(secrets.some((d) => d.includes('sk_test_not_a_real_key_4242')), 'the resolved ${STRIPE_KEY} is in the app\'s Secret');
  t.notOk(docs.filter((d) => !/^kind: Secret$/m.test(d)).some((d) => d.includes('sk_test_not_a_real_key_4242')), 'and in no other object');
  t.notMatch(r.stderr, /sk_test_not_a_real_key_4242/, 'nor in the plan');
});

t.test('a configuration the deploy refuses: exit 2, every problem named, nothing planned', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-scale-bad-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(APP, join(dir, 'app.ts'));
  writeFileSync(join(dir, 'svc.toml'), '[scale.orchestrator]\ncpu_request = "2"\ncpu_limit = "1"\nmin_replicas = 3\nmax_replicas = 2\nreplicas = 4\n[scale.secrets]\nAPI = "${NOT_SET_ANYWHERE}"\n');
  const r = await runSvc(['start', join(dir, 'app.ts'), '--scale', '--dry-run'], { clean: true, env: ENV });
  t.equal(r.code, 2, 'exit 2');
  t.match(r.stderr, /cpu_limit 1 is below cpu_request 2/);
  t.match(r.stderr, /min_replicas 3 is above max_replicas 2/);
  t.match(r.stderr, /\[scale\.orchestrator\] replicas: unknown key/);
  t.match(r.stderr, /\$\{NOT_SET_ANYWHERE\} is not set/);
  t.equal(r.stdout, '', 'no plan');
  const usage = await runSvc(['start', APP, '--scale', '--dry-run', '--target', 'cloud_a'], { clean: true, env: ENV });
  t.equal(usage.code, 2, 'an unknown --target: exit 2');
});

t.test('a dry run sends no request, writes no file and starts no process', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  const dir = mkdtempSync(join(tmpdir(), 'svc-scale-quiet-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const project = join(dir, 'project');
  cpSync(join(APP, '..'), project, { recursive: true });
  writeFileSync(join(project, '.env'), 'SVC_REGISTRY_USERNAME=someone\nSVC_REGISTRY_PASSWORD=not-a-real-password\n');
  // A recording fake of every container CLI svc could choose (and kubectl): a run leaves a line in `calls`.
  const bin = join(dir, 'bin');
  const calls = join(dir, 'calls');
  mkdirSync(bin);
  for (const name of ['docker', 'podman', 'kubectl']) {
    writeFileSync(join(bin, name), `#!/bin/sh\necho "${name} $*" >> ${calls}\nexit 0\n`);
    chmodSync(join(bin, name), 0o755);
  }
  const before = treeHash(project);
  for (const args of [['--dry-run'], ['--dry-run', '--show-yaml'], ['--dry-run', '--build', '--show-yaml', '--show-secrets']]) {
    const r = await runSvc(['start', join(project, 'app.ts'), '--scale', ...args], { clean: true, cwd: project, env: { ...ENV, KUBECONFIG: api.kubeconfig, PATH: `${bin}:${process.env.PATH}` } });
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  }
  t.same(api.requests, [], 'the fake API server recorded no request');
  t.notOk(existsSync(calls), 'no container CLI (nor kubectl) was run');
  t.equal(treeHash(project), before, 'the project folder is unchanged');
});

t.test('--build through a recording fake docker (no engine or registry here): the password only on stdin', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-scale-build-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const project = join(dir, 'project');
  cpSync(join(APP, '..'), project, { recursive: true });
  const bin = join(dir, 'bin');
  const calls = join(dir, 'calls');
  mkdirSync(bin);
  // Each call: its argv on one line, then what it read on stdin (login only).
  writeFileSync(join(bin, 'docker'), `#!/bin/sh\necho "argv: $*" >> ${calls}\nif [ "$1" = login ]; then echo "stdin: $(cat)" >> ${calls}; fi\nexit 0\n`);
  chmodSync(join(bin, 'docker'), 0o755);
  const env = { ...ENV, PATH: `${bin}:${process.env.PATH}` };

  const none = await runSvc(['start', join(project, 'app.ts'), '--scale', '--build'], { clean: true, cwd: project, env });
  t.equal(none.code, 1, 'no credentials: a failure');
  t.match(none.stderr, /SVC_REGISTRY_USERNAME/, 'naming the variables to set');
  t.notOk(existsSync(calls), 'before anything ran');

  const password = 'pw-not-in-argv-7781';
  writeFileSync(join(project, '.env'), `SVC_REGISTRY_USERNAME=deployer\nSVC_REGISTRY_PASSWORD=${password}\n`);
  // A kubeconfig naming a fake API server that is gone: the image is pushed, then the deploy cannot reach the cluster.
  const gone = await startFakeKubeApi();
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, readFileSync(gone.kubeconfig));
  await gone.close();
  const r = await runSvc(['start', join(project, 'app.ts'), '--scale', '--build'], { clean: true, cwd: project, env: { ...env, KUBECONFIG: kubeconfig } });
  t.match(r.stdout, /Image pushed: registry\.example\.com\/team\/svc:[0-9a-f]{12}\n/, r.stderr);
  t.equal(r.code, 1, 'then: the deploy cannot reach the cluster (exit 1, said)');
  t.match(r.stderr, /cannot reach the API server at http:\/\/127\.0\.0\.1:\d+/);
  const lines = readFileSync(calls, 'utf8').trim().split('\n');
  const argv = lines.filter((l) => l.startsWith('argv: ')).map((l) => l.slice(6));
  t.match(argv[0], /^info/, 'docker info: is there an engine');
  t.match(argv[1], /^login registry\.example\.com --username deployer --password-stdin$/);
  t.match(argv[2], /^build -t registry\.example\.com\/team\/svc:[0-9a-f]{12} -f \S+\/Dockerfile \S+$/);
  t.match(argv[3], /^push registry\.example\.com\/team\/svc:[0-9a-f]{12}$/);
  t.same(lines.filter((l) => l.startsWith('stdin: ')), [`stdin: ${password}`], 'the password went to login on stdin');
  t.notOk(argv.some((a) => a.includes(password)), 'and never into an argument');
  t.notMatch(r.stdout + r.stderr, password, 'nor into the output');
});
