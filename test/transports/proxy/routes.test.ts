// The sandbox proxy's route table following the pods of the fake Kubernetes API server by a watch: a sandbox pod
// ADDED becomes a route (health counts it), a warm pod is none until a claim labels it (MODIFIED), readiness follows
// the pod's Ready condition, a DELETED pod's sandbox is unknown again; requests reach the stand-in pods at the
// addresses the fake gives the pods (127.0.0.18–19).
import t from 'tap';
import { connectCluster } from '../../../kube/index.ts';
import { RouteTable, routeOf, startSandboxProxy } from '../../../transports/proxy/index.ts';
import { startFakeKubeApi, type FakeKubeObject } from '../../kit/index.ts';
import { ask, sandboxPod, standInPods, until } from './pods.ts';

const NS = 'svc-sandboxes';
const A = 'sbx-00000000000000a1';
const B = 'sbx-00000000000000b2';
const host = (id: string) => `${id}.preview.example.test`;

function podObject(name: string, labels: Record<string, string>): FakeKubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, labels: { 'svc-sandbox': 'true', ...labels } }, spec: { containers: [{ name: 'dev', image: 'node:20', ports: [{ containerPort: 8000 }] }] } };
}

t.test('the route table reads pods: id label, Ready condition and phase', async (t) => {
  t.match(routeOf(sandboxPod('p', A, '10.0.0.1')), { sandbox_id: A, pod: `${NS}/p`, ip: '10.0.0.1', phase: 'Running', ready: true });
  t.equal(routeOf(sandboxPod('warm', undefined, '10.0.0.2')), undefined, 'a warm pod is no route');
  t.equal(routeOf(sandboxPod('p', A, '10.0.0.1', false))?.ready, false);
  t.equal(routeOf(sandboxPod('p', A, undefined))?.ready, false, 'no IP yet: not ready');
  const terminating = sandboxPod('p', A, '10.0.0.1');
  terminating.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  t.equal(routeOf(terminating)?.ready, false, 'a pod being deleted is not ready');
  const routes = new RouteTable();
  routes.update('ADDED', sandboxPod('old', A, '10.0.0.1', false));
  routes.update('ADDED', sandboxPod('new', A, '10.0.0.3', true));
  t.equal(routes.get(A)?.ip, '10.0.0.3', 'of two pods with one id, the ready one');
  t.equal(routes.size, 2);
  routes.update('MODIFIED', sandboxPod('new', undefined, '10.0.0.3'));
  t.equal(routes.get(A)?.pod, `${NS}/old`, 'a pod whose id label went away is no longer its route');
  routes.update('DELETED', sandboxPod('old', A, '10.0.0.1'));
  t.equal(routes.get(A), undefined);
  t.equal(routes.size, 0);
});

t.test('fake Kubernetes API server: the proxy follows ADDED, MODIFIED and DELETED sandbox pods', async (t) => {
  const [podA, podB] = await standInPods(['127.0.0.18', '127.0.0.19']);
  if (!podA || !podB) throw new Error('no stand-ins');
  t.teardown(() => Promise.all([podA.close(), podB.close()]));
  const ips: Record<string, string> = { 'svc-sbx-ada-shop-1': podA.ip, 'svc-sbx-warm-1': podB.ip };
  const api = await startFakeKubeApi({ podIp: (pod) => ips[pod.metadata.name] });
  t.teardown(() => api.close());
  const proxy = await startSandboxProxy({ kube: connectCluster({ KUBECONFIG: api.kubeconfig }), namespace: NS, label: 'svc-sandbox=true', internalPort: podA.port, port: 0, host: '127.0.0.1' });
  t.teardown(() => proxy.close());
  const health = async () => (await ask(proxy.port, `127.0.0.1:${proxy.port}`, { path: '/_proxy/health' })).body;
  t.equal(await health(), 'ok (0 routes)');

  // A warm pod first, then a sandbox's pod: the watch tells them in order, so once the sandbox counts the warm pod was seen.
  api.put(podObject('svc-sbx-warm-1', { 'svc-sandbox-pool': 'warm' }));
  api.put(podObject('svc-sbx-ada-shop-1', { 'svc-sandbox-id': A, 'svc-sandbox-user': 'ada', 'svc-sandbox-project': 'shop' }));
  await until(() => proxy.routes.get(A)?.ready, 'sandbox A ready');
  t.equal(await health(), 'ok (1 routes)', 'the warm pod is not counted');
  const a = await ask(proxy.port, host(A), { path: '/hello' });
  t.equal(a.status, 200);
  t.equal(JSON.parse(a.body).pod, podA.ip, "A reaches its pod at the address from the pod's status");
  const early = await ask(proxy.port, host(B), { headers: { accept: 'application/json' } });
  t.equal(early.status, 502, 'B is unknown');

  // The claim: the warm pod relabelled with B's id (MODIFIED) becomes B's route.
  api.put(podObject('svc-sbx-warm-1', { 'svc-sandbox-pool': 'active', 'svc-sandbox-id': B, 'svc-sandbox-user': 'bob', 'svc-sandbox-project': 'blog' }));
  await until(() => proxy.routes.get(B)?.ready, 'sandbox B ready');
  t.equal(await health(), 'ok (2 routes)');
  t.equal(JSON.parse((await ask(proxy.port, host(B))).body).pod, podB.ip, 'B reaches the claimed pod');

  // Not ready (its dev server restarting): a loading page, or 503.
  api.scriptPod(NS, 'svc-sbx-warm-1', { state: 'NotReady' });
  await until(() => proxy.routes.get(B)?.ready === false, 'sandbox B not ready');
  const notReady = await ask(proxy.port, host(B), { headers: { accept: 'application/json' } });
  t.equal(notReady.status, 503);
  t.equal(JSON.parse(notReady.body).error.code, 'PREVIEW_NOT_READY');
  t.match((await ask(proxy.port, host(B), { headers: { accept: 'text/html' } })).body, /http-equiv="refresh" content="2"/);

  // Deleted: unknown again.
  api.delete('v1', 'Pod', NS, 'svc-sbx-ada-shop-1');
  await until(() => proxy.routes.get(A) === undefined, 'sandbox A gone');
  t.equal(await health(), 'ok (1 routes)');
  const gone = await ask(proxy.port, host(A), { headers: { accept: 'application/json' } });
  t.equal(gone.status, 502);
  t.equal(JSON.parse(gone.body).error.code, 'PREVIEW_UNKNOWN_SANDBOX');
  const watches = api.requests.filter((r) => r.path === `/api/v1/namespaces/${NS}/pods` && r.query.watch === 'true');
  t.equal(watches.length, 1, 'one watch followed all of it (no polling)');
  t.equal(watches[0]?.query.labelSelector, 'svc-sandbox=true');
});
