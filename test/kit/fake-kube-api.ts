/**
 * A fake Kubernetes API server (no real one can run on these machines): an HTTP server on a free loopback port
 * that records every request it gets and answers 404 `Status` objects, plus a kubeconfig pointing at it. Tests of
 * what must NOT contact a cluster (a dry run) assert it recorded nothing; the apply tests grow it further.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakeKubeApi {
  url: string;
  /** The kubeconfig file naming it (for `KUBECONFIG`). */
  kubeconfig: string;
  /** Every request received: method and path. */
  requests: { method: string; path: string }[];
  close(): Promise<void>;
}

/**
 * @example
 * const api = await startFakeKubeApi();
 * t.teardown(() => api.close());
 * await runSvc(['start', entry, '--scale', '--dry-run'], { env: { KUBECONFIG: api.kubeconfig } });
 * t.same(api.requests, []);
 */
export async function startFakeKubeApi(): Promise<FakeKubeApi> {
  const requests: { method: string; path: string }[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', path: req.url ?? '' });
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'svc-kubeconfig-'));
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: fake\n  cluster:\n    server: ${url}`,
      'users:',
      '- name: fake\n  user:\n    token: fake-token',
      'contexts:',
      '- name: fake\n  context:\n    cluster: fake\n    user: fake',
      'current-context: fake',
      '',
    ].join('\n'),
  );
  return {
    url,
    kubeconfig,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
