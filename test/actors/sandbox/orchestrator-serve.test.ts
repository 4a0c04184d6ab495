// Sandboxes on Kubernetes behind a real `svc start`, against the test kit's FAKE Kubernetes API server (no real one
// runs here), with the preview proxy in front: at start svc makes the namespace, the Role bound to its service account
// and the warm pool; a create claims the warm pod and streams the project in; the sandbox runs, its files, commands
// and logs go through the pod; a private preview reaches the pod's dev server (a real server on a loopback address
// standing for the pod's IP) through `svc sandbox proxy`'s route table, only with the owner's token.
import t from 'tap';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixture, post, startFakeKubeApi, startServer, type Server } from '../../kit/index.ts';
import { connectCluster } from '../../../kube/index.ts';
import { startSandboxProxy } from '../../../transports/proxy/index.ts';

t.setTimeout(200_000);
const NS = 'svc-sandboxes';
const SECRET = 'a-private-preview-secret-of-32-bytes-or-more';
// The warm pod's address: a loopback address of its own, where the test runs its "dev server".
const POD_IP = '127.0.0.141';
const api = await startFakeKubeApi({
  pods: (pod) => (pod.metadata.labels?.['svc-sandbox'] === 'true' ? { state: 'Running', logs: 'vite v5\nServer ready on 8000\n' } : undefined),
  podIp: (pod) => (pod.metadata.labels?.['svc-sandbox-pool'] === 'warm' ? POD_IP : undefined),
});
t.teardown(() => api.close());
const dev = createServer((req, res) => res.end(`dev server: ${req.method} ${req.url} host=${req.headers.host} token=${req.headers['x-svc-preview-token'] ?? ''}`));
dev.listen(8000, POD_IP);
await once(dev, 'listening');
t.teardown(() => dev.close());

const dataDir = mkdtempSync(join(tmpdir(), 'svc-sbx-k8s-serve-'));
const server: Server = await startServer({
  entry: fixture('sandbox-app.ts'),
  env: {
    SVC_DATA_DIR: dataDir,
    KUBECONFIG: api.kubeconfig,
    POD_SERVICE_ACCOUNT: 'shop',
    POD_NAMESPACE: 'shop',
    SVC_SANDBOX_TYPE: 'orchestrator',
    SVC_SANDBOX_WARM_POOL_SIZE: '1',
    SVC_SANDBOX_PROXY_MODE: 'true',
    SVC_SANDBOX_DOMAIN_TEMPLATE: '{sandbox_id}.preview.example.com',
    SVC_SANDBOX_PREVIEW_SECRET: SECRET,
    SVC_SANDBOX_CHECK_INTERVAL_MS: '200',
  },
});
t.teardown(() => server.stop('SIGKILL'));
const proxy = await startSandboxProxy({ kube: connectCluster({ KUBECONFIG: api.kubeconfig }), port: 0, host: '127.0.0.1', previewSecret: SECRET });
t.teardown(() => proxy.close());

/** A GET through the proxy with a Host of our choosing (fetch may not set Host). */
function viaProxy(path: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: proxy.port, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const call = async (name: string, body: unknown): Promise<any> => {
  const res = await post(`${server.url}/function/${name}`, body);
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.result;
};

t.test('svc start made the namespace, the Role and its binding, and the warm pool', async (t) => {
  t.ok(api.get('v1', 'Namespace', undefined, NS));
  t.ok(api.get('rbac.authorization.k8s.io/v1', 'Role', NS, 'svc-sandbox-manager'));
  t.same(api.list('rbac.authorization.k8s.io/v1', 'RoleBinding', NS)[0]?.subjects, [{ kind: 'ServiceAccount', name: 'shop', namespace: 'shop' }]);
  await api.until(() => api.list('v1', 'Pod', NS).some((p) => p.metadata.labels?.['svc-sandbox-pool'] === 'warm' && p.status?.phase === 'Running'), 20_000, 'a warm pod');
});

t.test('a create claims the warm pod; files, commands, logs; the private preview through the proxy', async (t) => {
  const files = { 'package.json': JSON.stringify({ scripts: { dev: 'vite --port 8000' } }), 'index.html': '<h1>hi</h1>', 'src/main.js': 'console.log(1)' };
  const made = await call('sbCreate', { user: 'ada', project: 'site', files });
  t.equal(made.type, 'orchestrator');
  const id = made.sandbox_id as string;
  t.equal(made.url, `http://${id}.preview.example.com`);
  const pod = api.list('v1', 'Pod', NS).find((p) => p.metadata.labels?.['svc-sandbox-id'] === id);
  t.equal(pod?.metadata.labels['svc-sandbox-pool'], 'active', 'the warm pod was claimed');
  t.equal(readFileSync(join(api.podRoot(NS, pod?.metadata.name), 'app/src/main.js'), 'utf8'), 'console.log(1)', 'the project streamed in');
  await api.until(async () => {
    const s = await call('sbGet', { id });
    if (s.state === 'error') throw new Error(s.error);
    return s.state === 'running';
  }, 20_000, 'running');
  t.same((await call('sbFiles', { id })).files, ['index.html', 'package.json', 'src/main.js']);
  t.same(await call('sbExec', { id, command: 'cat index.html; exit 2' }), { stdout: '<h1>hi</h1>', stderr: '', exit_code: 2 });
  t.match((await call('sbLogs', { id })).content, 'Server ready on 8000');

  await api.until(() => proxy.routes.get(id)?.ready, 10_000, 'the proxy routes the sandbox');
  const health = await fetch(`http://127.0.0.1:${proxy.port}/_proxy/health`);
  t.match(await health.text(), /^ok \(\d+ routes?\)$/);
 const refused = await viaProxy('/hello?x=1', { host: `${id}.preview.example.com` });
  t.equal(refused.status, 401, 'private: no token, no preview');
  const { token } = await call('sbPreview', { id });
  const res = await viaProxy('/hello?x=1', { host: `${id}.preview.example.com`, 'x-svc-preview-token': token });
  t.equal(res.status, 200);
  t.match(res.text, /^dev server: GET \/hello\?x=1 host=127\.0\.0\.141:8000 token=$/, "the pod's dev server answered; the token did not reach it");

  t.same(await call('sbDestroy', { id }), { destroyed: true });
  await api.until(() => !api.list('v1', 'Pod', NS).some((p) => p.metadata.labels?.['svc-sandbox-id'] === id && !p.metadata.deletionTimestamp), 10_000, 'its pod deleted');
  await api.until(() => !proxy.routes.get(id), 10_000, 'the proxy forgot it');
});
