// The orchestrator provider (sandboxes as Kubernetes pods) against the test kit's FAKE Kubernetes API server (no real
// one runs here): sandboxes() creates the namespace, Role and binding, the code ConfigMap, the pod, its NetworkPolicy,
// Service and Ingress (neither in proxy mode); files, commands and logs go through the pod's exec and log
// subresources (the fake runs exec commands for real in a folder standing for the pod's filesystem; it runs no init
// container, so the test plays the unpacking one from the ConfigMap); max_per_user; a project over 1 MB refused
// without a warm pool and streamed in with one; the warm pool (claim, relabel, tar, start signal, refill, TTL from
// the claim, a conditional claim two racers cannot both win — in two processes); cleanup of expired, failed and
// vanished pods with their objects, once per window.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startFakeKubeApi, type FakeKubeApi, type FakeKubeObject } from '../../kit/index.ts';
import { orchestratorSettings } from '../../helpers/sandbox.ts';

const home = mkdtempSync(join(tmpdir(), 'svc-sbx-k8s-'));
Object.assign(process.env, { SVC_DATA_DIR: join(home, 'data'), POD_SERVICE_ACCOUNT: 'shop', POD_NAMESPACE: 'shop' });
process.chdir(home);
const svc = await import('svc');
const { SvcError } = svc;
const { ActorSystem } = await import('../../../kernel/index.ts');
const { bindSandboxes, cleanupSandboxes, defineSandboxKind, sandboxEnv, sandboxes, verifyPreviewToken } = await import('../../../actors/sandbox/index.ts');
const { OrchestratorRunner } = await import('../../../actors/sandbox/orchestrator.ts');
const { WarmPool } = await import('../../../actors/sandbox/warm-pool.ts');
const { keyOfPath } = await import('../../../actors/sandbox/kube-objects.ts');
type Settings = import('../../../actors/sandbox/types.ts').SandboxSettings;

const NS = 'svc-sandboxes';
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000a49444154789c6300010000050001', 'hex');
const PROJECT = {
  'package.json': JSON.stringify({ scripts: { dev: 'node server.js' } }),
  'server.js': 'console.log("Server ready")',
  'src/components/App.jsx': 'export const App = () => null;\n',
  'public/logo.png': PNG,
};

const settings = (over: Partial<Settings> = {}): Settings => orchestratorSettings({ readiness_timeout_seconds: 20, check_interval_ms: 100, root: join(home, 'sandboxes'), ...over });

const api: FakeKubeApi = await startFakeKubeApi({
  // Every sandbox pod serves and says so (the fake's kubelet reports it Running and Ready, its log as given).
  pods: (pod) => (pod.metadata.labels?.['svc-sandbox'] === 'true' ? { state: 'Running', logs: 'booting\nServer ready on 8000 ✓\n' } : undefined),
});
process.env.KUBECONFIG = api.kubeconfig;
t.teardown(() => api.close());

/** A binding of its own (settings, actor system) over the same store: what one svc process would have. */
function bind(s: Settings) {
  const system = new ActorSystem({ askTimeoutMs: 60_000 });
  const env = sandboxEnv(s, undefined, { dataDir: join(home, 'data'), projectRoot: home });
  defineSandboxKind(system, env);
  const binding = { system, env, root: s.root };
  const unbind = bindSandboxes(binding);
  return { binding, env, runner: env.runner as InstanceType<typeof OrchestratorRunner>, close: async () => (unbind(), await system.shutdown()) };
}

const pods = () => api.list('v1', 'Pod', NS);
const podOf = (id: string) => pods().find((p) => p.metadata.labels?.['svc-sandbox-id'] === id);

/** The fake runs no init container: play the unpacking one (the ConfigMap's items into the pod's /app), as the kubelet would. */
function playInit(pod: FakeKubeObject): void {
  const volume = pod.spec.volumes.find((v: FakeKubeObject) => v.configMap);
  if (!volume) return;
  const cm = api.get('v1', 'ConfigMap', NS, volume.configMap.name);
  const app = join(api.podRoot(NS, pod.metadata.name), 'app');
  for (const item of volume.configMap.items) {
    const file = join(app, item.path);
    mkdirSync(dirname(file), { recursive: true });
    const text = cm?.data?.[item.key];
    writeFileSync(file, text !== undefined ? text : Buffer.from(cm?.binaryData?.[item.key] ?? '', 'base64'));
  }
}

/** No warm pod left from an earlier test (each test sizes its own pool). */
async function drainPool(): Promise<void> {
  const warm = () => pods().filter((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm');
  for (const p of warm()) api.delete('v1', 'Pod', NS, p.metadata.name);
  await api.until(() => warm().length === 0, 10_000, 'no warm pod left');
}

async function running(id: string) {
  return api.until(async () => {
    const info = await sandboxes().get(id);
    if (info.state === 'error') throw new Error(`${id} failed: ${info.error}`);
    return info.state === 'running' ? info : undefined;
  }, 20_000, `${id} running`);
}

t.test('cold start: namespace, Role, ConfigMap, pod, policy, Service, Ingress; files, commands and logs through the pod', async (t) => {
  const s = settings({ ingress_class: 'traefik', tls_enabled: true, tls_issuer: 'le', ingress_annotations: { 'a.example/b': 'c' } });
  const b = bind(s);
  t.teardown(b.close);
  await b.runner.open();
  t.ok(api.get('v1', 'Namespace', undefined, NS), 'the namespace');
  const role = api.get('rbac.authorization.k8s.io/v1', 'Role', NS, 'svc-sandbox-manager');
  t.ok(role, 'the Role');
  const binding = api.list('rbac.authorization.k8s.io/v1', 'RoleBinding', NS)[0];
  t.same(binding?.subjects, [{ kind: 'ServiceAccount', name: 'shop', namespace: 'shop' }], 'bound to POD_SERVICE_ACCOUNT in POD_NAMESPACE');
  t.equal(binding?.roleRef.name, 'svc-sandbox-manager');

  const box = await sandboxes().create({ user: 'Very_Long_User_Name_1234567890', project: 'My_Project_X', files: PROJECT });
  t.equal(box.state, 'pending');
  t.equal(box.type, 'orchestrator');
  t.equal(box.url, `https://${box.sandbox_id}.preview.example.com`);
  const cm = api.get('v1', 'ConfigMap', NS, `${box.sandbox_id}-code`);
  t.ok(cm, 'the code ConfigMap');
  t.equal(cm?.data[keyOfPath('src/components/App.jsx')], PROJECT['src/components/App.jsx'], 'a nested path, encoded');
  t.same(Buffer.from(cm?.binaryData[keyOfPath('public/logo.png')], 'base64'), PNG, 'the PNG in binaryData');
  t.notOk(existsSync(join(s.root, box.sandbox_id)), 'nothing of the project stays on the svc host');
  const pod = await api.until(() => podOf(box.sandbox_id), 10_000, 'its pod');
  playInit(pod);
  t.match(pod.metadata.name, /^svc-sbx-very-long-user-name-1234567890-my-project-x-[0-9a-f]{8}$/);
  t.ok(pod.metadata.name.length <= 63);
  t.match(pod.metadata.labels, { 'svc-sandbox': 'true', 'svc-sandbox-id': box.sandbox_id, 'svc-sandbox-user': 'very-long-user-name-1234567890', 'svc-sandbox-project': 'my-project-x' });
  t.equal(pod.spec.activeDeadlineSeconds, 3600);
  t.equal(pod.spec.terminationGracePeriodSeconds, 10);
  t.equal(pod.spec.restartPolicy, 'Always');
  t.equal(pod.spec.automountServiceAccountToken, false);
  t.same(pod.spec.containers[0].resources, { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '500m', memory: '512Mi' } });
  t.equal(pod.spec.securityContext.runAsUser, 1000);
  const env = Object.fromEntries(pod.spec.containers[0].env.map((e: FakeKubeObject) => [e.name, e.value]));
  t.match(env, { SVC_SANDBOX_ID: box.sandbox_id, SVC_SANDBOX_USER: 'Very_Long_User_Name_1234567890', SVC_SANDBOX_PROJECT: 'My_Project_X', CHOKIDAR_USEPOLLING: '1', WATCHPACK_POLLING: 'true' });
  const policy = api.get('networking.k8s.io/v1', 'NetworkPolicy', NS, `${box.sandbox_id}-netpol`);
  t.same(policy?.spec.podSelector, { matchLabels: { 'svc-sandbox-id': box.sandbox_id } });
  t.same(policy?.spec.egress, [], 'no egress');
  const service = api.get('v1', 'Service', NS, `${box.sandbox_id}-svc`);
  t.equal(service?.spec.ports[0].targetPort, 8000);
  const ingress = api.get('networking.k8s.io/v1', 'Ingress', NS, `${box.sandbox_id}-ingress`);
  t.equal(ingress?.spec.rules[0].host, `${box.sandbox_id}.preview.example.com`);
  t.equal(ingress?.spec.ingressClassName, 'traefik');
  t.equal(ingress?.metadata.annotations['cert-manager.io/cluster-issuer'], 'le');
  t.equal(ingress?.metadata.annotations['a.example/b'], 'c');

  const info = await running(box.sandbox_id);
  t.equal(info.state, 'running', 'ready: the pod is Ready and its log says Server ready');
  t.same((await sandboxes().listFiles(box.sandbox_id)).files, ['package.json', 'public/logo.png', 'server.js', 'src/components/App.jsx'], 'files listed through exec');
  t.equal(await sandboxes().readFile(box.sandbox_id, 'src/components/App.jsx'), PROJECT['src/components/App.jsx']);
  await sandboxes().writeFile(box.sandbox_id, 'src/new/file.txt', 'it\'s "quoted" $HOME `x`');
  t.equal(readFileSync(join(api.podRoot(NS, pod.metadata.name), 'app/src/new/file.txt'), 'utf8'), 'it\'s "quoted" $HOME `x`', 'written in the pod, byte for byte');
  await sandboxes().deleteFile(box.sandbox_id, 'src/new/file.txt');
  await t.rejects(sandboxes().readFile(box.sandbox_id, 'src/new/file.txt'), { code: 'SANDBOX_FILE_NOT_FOUND' });
  await t.rejects(sandboxes().readFile(box.sandbox_id, '../etc/passwd'), { code: 'SANDBOX_BAD_PATH' });
  await t.rejects(sandboxes().writeFile(box.sandbox_id, 'a;b', 'x'), { code: 'SANDBOX_BAD_PATH' });
  const r = await sandboxes().execCommand(box.sandbox_id, 'cat package.json; echo oops >&2; exit 3');
  t.same(r, { stdout: PROJECT['package.json'], stderr: 'oops\n', exit_code: 3 }, 'a command in /app through the exec subresource');
  const started = Date.now();
  await t.rejects(sandboxes().execCommand(box.sandbox_id, 'sleep 30', { timeout: 0.5 }), { code: 'SANDBOX_TIMEOUT' });
  t.ok(Date.now() - started < 10_000, 'killed at its timeout');
  const chunks: string[] = [];
  for await (const c of sandboxes().streamCommand(box.sandbox_id, 'echo one; echo two')) chunks.push(c.type === 'exit' ? `exit ${c.exit_code}` : c.data);
  t.equal(chunks.join(''), 'one\ntwo\nexit 0');
  const logs = await sandboxes().logs(box.sandbox_id);
  t.equal(logs.content, 'booting\nServer ready on 8000 ✓\n', 'the log subresource');
  t.equal(logs.offset, Buffer.byteLength(logs.content));
  t.same(await sandboxes().logs(box.sandbox_id, logs.offset), { content: '', offset: logs.offset });
  t.equal((await sandboxes().logs(box.sandbox_id, 8)).content, 'Server ready on 8000 ✓\n', 'from a byte offset');

  t.same(await sandboxes().destroy(box.sandbox_id), { destroyed: true });
  await api.until(() => !podOf(box.sandbox_id), 10_000, 'the pod deleted');
  for (const [v, k, n] of [
    ['v1', 'ConfigMap', 'code'],
    ['v1', 'Service', 'svc'],
    ['networking.k8s.io/v1', 'Ingress', 'ingress'],
    ['networking.k8s.io/v1', 'NetworkPolicy', 'netpol'],
  ] as const) {
    t.notOk(api.get(v, k, NS, `${box.sandbox_id}-${n}`), `its ${k} deleted`);
  }
  await t.rejects(sandboxes().get(box.sandbox_id), { code: 'SANDBOX_NOT_FOUND' });
});

t.test('proxy mode: no Service, no Ingress; only the proxy reaches the pod; max_per_user; over 1 MB refused without a pool', async (t) => {
  const s = settings({ proxy_mode: true, max_per_user: 2 });
  const b = bind(s);
  t.teardown(b.close);
  const one = await sandboxes().create({ user: 'ada', project: 'a', files: PROJECT });
  const two = await sandboxes().create({ user: 'ada', project: 'b', files: PROJECT });
  await t.rejects(sandboxes().create({ user: 'ada', project: 'c', files: PROJECT }), { code: 'SANDBOX_LIMIT' });
  t.equal(one.url, `http://${one.sandbox_id}.preview.example.com`);
  t.notOk(api.get('v1', 'Service', NS, `${one.sandbox_id}-svc`), 'no Service in proxy mode');
  t.notOk(api.get('networking.k8s.io/v1', 'Ingress', NS, `${one.sandbox_id}-ingress`), 'no Ingress in proxy mode');
  const policy = api.get('networking.k8s.io/v1', 'NetworkPolicy', NS, `${one.sandbox_id}-netpol`);
  t.same(policy?.spec.ingress[0].from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } }, podSelector: { matchLabels: { 'app.kubernetes.io/component': 'sandbox-proxy' } } }], "only the proxy's pods, in svc's namespace");
  await t.rejects(sandboxes().previewToken(one.sandbox_id), { code: 'SANDBOX_UNAVAILABLE' }, 'no preview tokens for public previews');
  b.env.settings.preview_secret = 'a-preview-secret-of-at-least-32-bytes!';
  const preview = await sandboxes().previewToken(one.sandbox_id, { ttlSeconds: 600 });
  t.match(preview.url, `http://${one.sandbox_id}.preview.example.com/?svc_preview_token=`);
  t.match(await verifyPreviewToken('a-preview-secret-of-at-least-32-bytes!', preview.token, one.sandbox_id), { sandbox_id: one.sandbox_id, user: 'ada' }, 'a token the proxy accepts, for its owner');
  t.notOk(await verifyPreviewToken('a-preview-secret-of-at-least-32-bytes!', preview.token, two.sandbox_id), 'and for that sandbox only');
  await t.rejects(sandboxes().previewToken(one.sandbox_id, { ttlSeconds: -1 }), { code: 'SANDBOX_INVALID' });
  await sandboxes().destroy(one.sandbox_id);
  await sandboxes().destroy(two.sandbox_id);

  const writes = api.writes().length;
  const big = { ...PROJECT, 'data/blob.bin': Buffer.alloc(1100 * 1024, 7) };
  const error = await sandboxes()
    .create({ user: 'bob', project: 'big', files: big })
    .catch((e: unknown) => e);
  t.ok(error instanceof SvcError);
  t.equal((error as { code: string }).code, 'SANDBOX_TOO_LARGE');
  t.match((error as Error).message, /warm_pool_size/);
  t.equal(api.writes().filter((w, i) => i >= writes && w.method === 'POST').length, 0, 'nothing was created');
  t.same(await sandboxes().list('bob'), [], 'no record left');
});

t.test('the warm pool: claimed atomically, relabelled, code by one tar, signalled, refilled; TTL from the claim', async (t) => {
  const s = settings({ warm_pool_size: 2 });
  const b = bind(s);
  t.teardown(b.close);
  await b.runner.open();
  const warm = () => pods().filter((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm' && !p.metadata.deletionTimestamp);
  await api.until(() => warm().length === 2 && warm().every((p) => p.status?.phase === 'Running'), 10_000, 'two warm pods');
  for (const p of warm()) t.notOk(p.spec.activeDeadlineSeconds, 'an idle warm pod has no deadline');
  const before = api.writes().length;
  const execs = api.requests.length;
  const box = await sandboxes().create({ user: 'ada', project: 'warm', files: PROJECT });
  const pod = podOf(box.sandbox_id) as FakeKubeObject;
  t.ok(pod, 'a pod carries the sandbox');
  t.match(pod.metadata.name, /^svc-sbx-warm-/, 'a warm one');
  t.equal(pod.metadata.labels['svc-sandbox-pool'], 'active');
  t.match(pod.metadata.labels, { 'svc-sandbox-user': 'ada', 'svc-sandbox-project': 'warm' });
  t.notOk(api.get('v1', 'ConfigMap', NS, `${box.sandbox_id}-code`), 'no ConfigMap for a warm start');
  const app = join(api.podRoot(NS, pod.metadata.name), 'app');
  t.equal(readFileSync(join(app, 'src/components/App.jsx'), 'utf8'), PROJECT['src/components/App.jsx'], 'the tar landed, nested paths included');
  t.same(readFileSync(join(app, 'public/logo.png')), PNG);
  const execRequests = api.requests.slice(execs).filter((r) => r.path.endsWith('/exec'));
  t.ok(execRequests.length <= 3, `code by one exec, not a command per file (${execRequests.length} execs in all)`);
  await running(box.sandbox_id);
  t.ok(existsSync(join(app, '.svc-start')), '/app/.svc-start touched');
  t.match(readFileSync(join(api.podRoot(NS, pod.metadata.name), 'tmp/.svc-env'), 'utf8'), `export SVC_SANDBOX_ID='${box.sandbox_id}'`);
  t.notOk((await sandboxes().listFiles(box.sandbox_id)).files.includes('.svc-start'), 'the signal file is not a project file');
  const claimedPut = api.writes().slice(before).find((w) => w.method === 'PUT' && w.path.endsWith(`/pods/${pod.metadata.name}`));
  t.ok((claimedPut?.body as FakeKubeObject | undefined)?.metadata.resourceVersion, 'the claim is a conditional update (resourceVersion)');
  await api.until(() => warm().length === 2, 10_000, 'the pool refilled');
  // Its deadline: what it waited in the pool so far, plus the TTL (so the TTL counts from the claim).
  const waited = (Date.parse(pod.metadata.annotations['svc.dev/sandbox-claimed-at']) - Date.parse(pod.status.startTime)) / 1000;
  t.ok(Math.abs(pod.spec.activeDeadlineSeconds - (waited + 3600)) <= 2, `deadline ${pod.spec.activeDeadlineSeconds} s = ${waited.toFixed(1)} s waited + 3600`);
  const report = await cleanupSandboxes(b.binding);
  t.notOk(report.removed.includes(box.sandbox_id), 'a fresh claim is not expired');
  // Two hours on, a pod claimed 30 minutes before is within its TTL, however long it waited in the pool before.
  const twoHoursOn = Date.now() + 7200_000;
  const claimedPod = podOf(box.sandbox_id) as FakeKubeObject;
  api.put({ ...claimedPod, metadata: { ...claimedPod.metadata, annotations: { ...claimedPod.metadata.annotations, 'svc.dev/sandbox-claimed-at': new Date(twoHoursOn - 1800_000).toISOString() } } });
  const swept = await b.runner.sweep(new Set([box.sandbox_id]), twoHoursOn);
  t.notOk(swept.includes(claimedPod.metadata.name), 'the TTL counts from the claim, not from the pod');
  t.ok(podOf(box.sandbox_id), 'still there');

  // Over 1 MB with a pool: streamed in, never truncated.
  const big = { ...PROJECT, 'data/blob.bin': Buffer.alloc(1100 * 1024, 7) };
  const large = await sandboxes().create({ user: 'ada', project: 'large', files: big });
  const largePod = podOf(large.sandbox_id) as FakeKubeObject;
  t.equal(readFileSync(join(api.podRoot(NS, largePod.metadata.name), 'app/data/blob.bin')).length, 1100 * 1024, 'the whole file');
  t.notOk(api.get('v1', 'ConfigMap', NS, `${large.sandbox_id}-code`));
  await sandboxes().destroy(large.sandbox_id);

  const name = pod.metadata.name;
  await sandboxes().destroy(box.sandbox_id);
  await api.until(() => !api.get('v1', 'Pod', NS, name), 10_000, 'the claimed pod deleted, not given back');
  t.notOk(existsSync(api.podRoot(NS, name)) && existsSync(join(api.podRoot(NS, name), 'app/package.json')), 'nothing of it is left for another user');
});

t.test('two racers for the last warm pod: one wins, the other gets a conflict', async (t) => {
  await drainPool();
  const s = settings({ warm_pool_size: 1 });
  const b = bind(s);
  t.teardown(b.close);
  await b.runner.open();
  const idle = () => pods().filter((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm' && !p.metadata.deletionTimestamp && p.status?.phase === 'Running');
  await api.until(() => idle().length === 1, 10_000, 'one warm pod');
  // Two pools (two processes' worth) list the same pod and both try to claim it.
  const a = new WarmPool(s, b.runner.kube);
  const c = new WarmPool(s, b.runner.kube);
  const [x, y] = await Promise.all([a.claim({ sandbox_id: 'sbx-aaaaaaaaaaaaaaaa', user: 'u1', project: 'p' }), c.claim({ sandbox_id: 'sbx-bbbbbbbbbbbbbbbb', user: 'u2', project: 'p' })]);
  t.equal([x, y].filter(Boolean).length, 1, 'exactly one claim wins');
  const winner = api.get('v1', 'Pod', NS, (x ?? y) as string);
  t.equal(winner?.metadata.labels['svc-sandbox-pool'], 'active');
  const conflicts = api.requests.filter((r) => r.method === 'PUT' && r.path.endsWith(`/pods/${(x ?? y) as string}`));
  t.ok(conflicts.length >= 1);
  api.delete('v1', 'Pod', NS, (x ?? y) as string);
});

t.test('two svc processes racing for one warm pod: exactly one wins, the other cold-starts', async (t) => {
  await drainPool();
  const s = settings({ warm_pool_size: 1 });
  const b = bind(s);
  t.teardown(b.close);
  await b.runner.open();
  await api.until(() => pods().filter((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm' && p.status?.phase === 'Running' && !p.metadata.deletionTimestamp).length === 1, 10_000, 'one warm pod');
  // No refill during the race (the API server refuses new warm pods): the one warm pod is all there is.
  const refuseRefill = api.failWhen((r) => r.method === 'POST' && r.path.endsWith('/pods') && (r.body as FakeKubeObject | undefined)?.metadata?.labels?.['svc-sandbox-pool'] === 'warm', 403, 'no new warm pods during the race');
  t.teardown(refuseRefill);
  const script = join(home, 'racer.mts');
  writeFileSync(
    script,
    `const { sandboxes } = await import(${JSON.stringify(new URL('../../../index.ts', import.meta.url).href)});
process.stdin.once('data', async () => {
  const box = await sandboxes().create({ user: process.argv[2], project: 'race', files: { 'package.json': '{"scripts":{"dev":"node x"}}' } });
  // A cold start makes its pod when its supervisor starts it: wait for that before leaving.
  while ((await sandboxes().get(box.sandbox_id)).state === 'pending') await new Promise((r) => setTimeout(r, 20));
  process.stdout.write(JSON.stringify(box) + '\\n');
  process.exit(0);
});
process.stdout.write('ready\\n');
`,
  );
  const racer = (user: string) => {
    const data = join(home, `racer-${user}`);
    const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), script, user], {
      cwd: home,
      env: { ...process.env, SVC_DATA_DIR: data, SVC_SANDBOX_TYPE: 'orchestrator', SVC_SANDBOX_WARM_POOL_SIZE: '1', SVC_SANDBOX_DOMAIN_TEMPLATE: '{sandbox_id}.preview.example.com', SVC_SANDBOX_ROOT: join(data, 'sbx') },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    const ready = new Promise<void>((resolve) => child.stdout.on('data', (c: Buffer) => ((out += c), out.includes('ready\n') && resolve())));
    const done = new Promise<{ sandbox_id: string }>((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.split('\n')[1] as string)) : reject(new Error(`racer exited ${code}`)))));
    return { child, ready, done };
  };
  const r1 = racer('one');
  const r2 = racer('two');
  await Promise.all([r1.ready, r2.ready]);
  r1.child.stdin.write('go\n');
  r2.child.stdin.write('go\n');
  const [b1, b2] = await Promise.all([r1.done, r2.done]);
  const p1 = await api.until(() => podOf(b1.sandbox_id), 10_000, 'racer one pod');
  const p2 = await api.until(() => podOf(b2.sandbox_id), 10_000, 'racer two pod');
  const warmWins = [p1, p2].filter((p) => p.metadata.labels['svc-sandbox-pool'] === 'active');
  t.equal(warmWins.length, 1, 'exactly one got the warm pod');
  const cold = [b1, b2].filter((x) => api.get('v1', 'ConfigMap', NS, `${x.sandbox_id}-code`));
  t.equal(cold.length, 1, 'the other started cold (its ConfigMap)');
  t.not(p1.metadata.name, p2.metadata.name, 'never the same pod for two users');
  for (const p of [p1, p2]) api.delete('v1', 'Pod', NS, p.metadata.name);
});

t.test('cleanup: pods past their TTL, failed, or vanished go with their objects, once per window', async (t) => {
  await drainPool();
  // One sandbox's pod gets a 2-second deadline (made by a member whose TTL is 2 s): the kubelet fails it, DeadlineExceeded.
  const short = bind(settings({ ttl_seconds: 2 }));
  const failed = await sandboxes().create({ user: 'cy', project: 'failed', files: PROJECT });
  await api.until(async () => (await sandboxes().get(failed.sandbox_id)).state !== 'pending', 10_000, 'the short one started');
  await short.close();
  const s = settings({ ttl_seconds: 3600 });
  const b = bind(s);
  t.teardown(b.close);
  const vanished = await sandboxes().create({ user: 'cy', project: 'vanished', files: PROJECT });
  const expired = await sandboxes().create({ user: 'cy', project: 'expired', files: PROJECT });
  for (const x of [vanished, expired]) await running(x.sandbox_id);
  api.delete('v1', 'Pod', NS, (podOf(vanished.sandbox_id) as FakeKubeObject).metadata.name);
  await api.until(async () => (await sandboxes().get(failed.sandbox_id)).state === 'error', 15_000, 'the failed one is error');
  await api.until(async () => (await sandboxes().get(vanished.sandbox_id)).state === 'error', 10_000, 'the vanished one is error');
  t.match((await sandboxes().get(failed.sandbox_id)).error, /Failed.*DeadlineExceeded/);
  t.match((await sandboxes().get(vanished.sandbox_id)).error, /deleted/);
  // Two members' cleanups in the same window: one runs it.
  const window = Math.floor(Date.now() / 60_000) + 1000;
  const other = bind(s);
  t.teardown(other.close);
  const ran = await Promise.all([b, other].map(async (m) => ((await m.env.records.claimWindow(window)) ? cleanupSandboxes(m.binding) : undefined)));
  t.equal(ran.filter(Boolean).length, 1, 'one member ran the cleanup');
  const report = ran.find(Boolean) as { removed: string[] };
  t.same(new Set(report.removed), new Set([failed.sandbox_id, vanished.sandbox_id]), 'the failed and the vanished one removed');
  t.equal((await sandboxes().get(expired.sandbox_id)).state, 'running', 'the one within its TTL stays');
  const later = await cleanupSandboxes(b.binding, Date.now() + 2 * 3600_000);
  t.same(later.removed, [expired.sandbox_id], 'past its TTL: removed');
  for (const x of [failed, vanished, expired]) {
    await t.rejects(sandboxes().get(x.sandbox_id), { code: 'SANDBOX_NOT_FOUND' }, 'its record removed');
    t.notOk(api.get('v1', 'ConfigMap', NS, `${x.sandbox_id}-code`), 'its ConfigMap removed');
    t.notOk(api.get('v1', 'Service', NS, `${x.sandbox_id}-svc`), 'its Service removed');
  }
  await api.until(() => ![failed, vanished, expired].some((x) => podOf(x.sandbox_id) && !podOf(x.sandbox_id)?.metadata.deletionTimestamp), 10_000, 'pods gone');
  // A pod no record names (a member died mid-create), and a pod past its TTL the records do not know of: the provider's sweep.
  api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'svc-sbx-stray-x-00000000', namespace: NS, labels: { 'svc-sandbox': 'true', 'svc-sandbox-id': 'sbx-ffffffffffffffff' } }, spec: { containers: [{ name: 'dev', image: 'node:20-slim' }] } });
  api.put({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'sbx-ffffffffffffffff-svc', namespace: NS, labels: { 'svc-sandbox-id': 'sbx-ffffffffffffffff' } }, spec: { ports: [{ port: 80 }] } });
  t.notOk((await b.runner.sweep(new Set(), Date.now())).includes('svc-sbx-stray-x-00000000'), 'a fresh one may be a create in progress: left');
  const swept = await b.runner.sweep(new Set(), Date.now() + 10 * 60_000);
  t.ok(swept.includes('svc-sbx-stray-x-00000000'), 'an orphan pod swept once old');
  t.notOk(api.get('v1', 'Service', NS, 'sbx-ffffffffffffffff-svc'), 'with its objects');
});

t.test('failures: a create the API server breaks leaves nothing; commands on a pod that does not run; a file over 16 MiB', async (t) => {
  await drainPool();
  const s = settings({ warm_pool_size: 1 });
  const b = bind(s);
  t.teardown(b.close);
  await b.runner.open();
  await api.until(() => pods().some((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm' && p.status?.phase === 'Running'), 10_000, 'a warm pod');
  const refuse = api.failWhen((r) => r.method === 'POST' && r.path.endsWith('/networkpolicies'), 500, 'etcd is sad');
  const error = await sandboxes()
    .create({ user: 'dee', project: 'broken', files: PROJECT })
    .catch((e: unknown) => e);
  refuse();
  t.equal((error as { code?: string }).code, 'SANDBOX_UNAVAILABLE', 'a clear error, not the API server\'s');
  t.match((error as Error).message, /500/);
  await api.until(() => !pods().some((p) => p.metadata.labels?.['svc-sandbox-user'] === 'dee' && !p.metadata.deletionTimestamp), 10_000, 'the claimed pod deleted');
  t.same(await sandboxes().list('dee'), [], 'no record, no slot held');

  // A sweep that read the records before a create finished leaves the new sandbox alone.
  const known = new Set<string>();
  const box = await sandboxes().create({ user: 'dee', project: 'ok', files: PROJECT });
  await b.runner.sweep(known, Date.now());
  t.ok(podOf(box.sandbox_id), 'its pod kept');
  t.ok(api.get('networking.k8s.io/v1', 'NetworkPolicy', NS, `${box.sandbox_id}-netpol`), 'its policy kept');
  await running(box.sandbox_id);
  const big = await sandboxes().execCommand(box.sandbox_id, 'head -c 17000000 /dev/zero > big.bin && echo ok');
  t.equal(big.stdout, 'ok\n');
  await t.rejects(sandboxes().readFile(box.sandbox_id, 'big.bin'), { code: 'SANDBOX_INVALID' }, 'never a truncated file');
  await sandboxes().destroy(box.sandbox_id);

  await drainPool();
  const cold = bind(settings());
  t.teardown(cold.close);
  const pending = await sandboxes().create({ user: 'dee', project: 'pending', files: PROJECT });
  const pod = await api.until(() => podOf(pending.sandbox_id), 10_000, 'its pod');
  api.scriptPod(NS, pod.metadata.name, { state: 'Pending' });
  await api.until(() => podOf(pending.sandbox_id)?.status?.phase === 'Pending', 10_000, 'pending');
  await t.rejects(sandboxes().execCommand(pending.sandbox_id, 'true'), { code: 'SANDBOX_NOT_RUNNING' }, 'a pod that does not run yet');
  await sandboxes().destroy(pending.sandbox_id);
});
