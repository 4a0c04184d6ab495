// `svc sandbox proxy` as a process against the fake Kubernetes API server: it lists and watches the sandbox pods,
// answers its health path, and on SIGTERM closes gracefully and exits 0; a preview secret under 32 bytes is refused.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { freePort, runSvc, startFakeKubeApi } from '../kit/index.ts';

const BIN = new URL('../../bin/svc.mjs', import.meta.url).pathname;

t.test('fake Kubernetes API server: svc sandbox proxy serves, counts routes, and stops on SIGTERM', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'svc-sbx-ada-shop-1', namespace: 'svc-sandboxes', labels: { 'svc-sandbox': 'true', 'svc-sandbox-id': 'sbx-00000000000000a1' } }, spec: { containers: [{ name: 'dev', image: 'node:20' }] } });
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'sandbox', 'proxy'], { env: { ...process.env, KUBECONFIG: api.kubeconfig, PROXY_PORT: String(port), PROXY_HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  const lines = createInterface({ input: child.stdout });
  const [first] = (await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => [`exited: ${stderr}`])])) as [string];
  t.match(first, /^svc sandbox proxy: listening on 127\.0\.0\.1:\d+, pods of svc-sandboxes labelled svc-sandbox=true on port 8000; 1 routes$/);
  const health = await fetch(`http://127.0.0.1:${port}/_proxy/health`);
  t.equal(await health.text(), 'ok (1 routes)');
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = (await exited) as [number];
  t.equal(code, 0, 'a graceful exit');
  t.ok(api.requests.some((r) => r.path === '/api/v1/namespaces/svc-sandboxes/pods' && r.query.watch === 'true'), 'it watched the sandbox pods');
});

t.test('svc sandbox proxy refuses a short preview secret', async (t) => {
  const api = await startFakeKubeApi();
  t.teardown(() => api.close());
  const run = await runSvc(['sandbox', 'proxy'], { env: { KUBECONFIG: api.kubeconfig, PROXY_PORT: String(await freePort()), PROXY_HOST: '127.0.0.1', PREVIEW_SECRET: 'too-short' } });
  t.equal(run.code, 1);
  t.match(run.stderr, /SVC_ERR_PROXY_CONFIG: PREVIEW_SECRET must be at least 32 bytes/);
});
